"""The agent's flags are one set on every surface: the lean agent's own parser, `gpuctl serve agent`,
`gpuctl up`, and the argv up hands the agent."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer

from gpuctl.main import app
from tests.conftest import REPO

AGENT_FLAGS = {
    "--nats", "--data-dir", "--kmsg-path", "--kmsg-lookback", "--journal", "--journal-dir", "--sysfs-root",
    "--proc-root", "--node", "--cluster", "--allow-inject", "--simulate-gpus", "--nvml-poll-interval",
    "--sysfs-interval", "--host-interval", "--disk", "--pstore-dir", "--api-listen", "--api-tls", "--api-tls-cert",
    "--api-tls-key", "--checks", "--plugins", "--spool-max-bytes", "--log-level",
}  # fmt: skip
# up starts its own server (or is given one with a --nats of its own), always accepts inject-fault, and says the
# rest of the stack's options.
UP_OWN = {"--nats", "--nats-port", "--clickhouse", "--clickhouse-password-file", "--metrics-ttl-days", "--rules",
          "--service-user", "--metrics-listen"}  # fmt: skip


def click_command(*path: str) -> Any:
    cmd: Any = typer.main.get_command(app)
    for name in path:
        cmd = cmd.commands[name]
    return cmd


def visible_flags(*path: str) -> set[str]:
    return {o for p in click_command(*path).params if not p.hidden for o in (*p.opts, *p.secondary_opts)} - {
        "-h",
        "--help",
    }


def agent_help_flags() -> set[str]:
    """What the agent process itself takes, as a user would find it: its --help, without importing gpuctl."""
    r = subprocess.run([sys.executable, "-m", "producers.agent", "--help"], cwd=REPO, capture_output=True, text=True,
                       timeout=60)  # fmt: skip
    assert r.returncode == 0, r.stderr
    return set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", r.stdout)) - {"--help"}


def test_every_agent_flag_exists_on_every_surface() -> None:
    assert agent_help_flags() == AGENT_FLAGS
    assert visible_flags("serve", "agent") == AGENT_FLAGS
    assert visible_flags("up") == AGENT_FLAGS - {"--allow-inject"} | UP_OWN


def test_the_surfaces_agree_on_defaults_and_environment() -> None:
    from producers import agent

    serve_agent = {p.opts[0]: p for p in click_command("serve", "agent").params}
    up = {p.opts[0]: p for p in click_command("up").params}
    parsed = vars(agent.parse_args(["--nats", "nats://x"]))
    assert parsed["nvml_poll_interval"] == serve_agent["--nvml-poll-interval"].default == 10.0
    assert parsed["api_listen"] == up["--api-listen"].default == "127.0.0.1:15132"
    assert parsed["spool_max_bytes"] == serve_agent["--spool-max-bytes"].default == 64 * 2**20
    assert parsed["api_tls"] == serve_agent["--api-tls"].default == "on"
    assert serve_agent["--node"].envvar == up["--node"].envvar == "GPUHEALTH_NODE"
    assert serve_agent["--nats"].required and not up["--nats"].required


def test_the_agent_reads_the_environment_gpuctl_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    from producers import agent

    monkeypatch.setenv("GPUHEALTH_NATS_URL", "nats://from-env:4222")
    monkeypatch.setenv("GPUHEALTH_CLUSTER", "c9")
    o = agent.parse_args([])
    assert (o.nats, o.cluster) == ("nats://from-env:4222", "c9")
    assert agent.parse_args(["--cluster", "c1"]).cluster == "c1"


def test_the_argv_up_hands_the_agent_gives_it_what_up_was_given(tmp_path: Path) -> None:
    from gpuctl.up import agent_argv
    from producers import agent
    from producers.options import AgentOptions

    given = AgentOptions(nats="nats://127.0.0.1:4222", data_dir=tmp_path, kmsg_path=tmp_path / "kmsg",
                         journal=True, node="n1", simulate_gpus=8, nvml_poll_interval=1.5, disk=["/", "/data"],
                         checks=[tmp_path / "a.yaml", tmp_path / "b.yaml"], api_tls="off", allow_inject=True)  # fmt: skip
    argv = agent_argv(given)
    assert argv[:3] == [sys.executable, "-m", "producers.agent"]
    assert argv.count("--checks") == 2 and "--allow-inject" in argv
    assert agent.parse_args(argv[3:]) == given


def described(param: Any) -> tuple[Any, ...]:
    return (tuple(param.opts), param.help, param.envvar, param.default, param.required)


@pytest.mark.parametrize(
    ("flag", "commands"),
    [
        ("--fleet-gpus", [("serve", "rules"), ("serve", "sink"), ("nats-config",)]),
        ("--fleet-poll-interval", [("serve", "rules"), ("serve", "sink"), ("nats-config",)]),
        ("--metrics-buffer-hours", [("serve", "rules"), ("serve", "sink"), ("nats-config",)]),
        ("--rules", [("serve", "rules"), ("up",), ("replay",)]),
    ],
)
def test_a_flag_several_commands_take_is_the_same_flag_in_each(flag: str, commands: list[tuple[str, ...]]) -> None:
    """nats-config writes the fleet's size for the rules and the sink to read back, and a rules file is one
    file for the service, up and a replay: the same names, help, environment and default everywhere."""
    seen = {described(next(p for p in click_command(*c).params if flag in p.opts)) for c in commands}
    assert len(seen) == 1, seen
