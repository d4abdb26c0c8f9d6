"""gpuctl through typer's CliRunner, in process: every command's help, and the commands that need no stack."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer
import typer.core
from rich.console import Console
from typer.testing import CliRunner

from gpuctl.main import app
from gpuctl.options import rich_table

runner = CliRunner()


def commands(group: typer.core.TyperGroup, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    out: list[tuple[tuple[str, ...], Any]] = []
    for name, cmd in group.commands.items():
        out.append(((*prefix, name), cmd))
        if isinstance(cmd, typer.core.TyperGroup):
            out += commands(cmd, (*prefix, name))
    return out


ALL = commands(typer.main.get_command(app))  # type: ignore[arg-type]


def test_every_command_is_reachable_and_documented() -> None:
    names = {" ".join(path) for path, _ in ALL}
    assert names >= {"up", "status", "fleet", "watch", "events", "incidents", "sql", "replay", "simulate",
                     "inject-fault", "set-healthy", "parse", "scan", "schema", "version", "rules check",
                     "report weekly", "inventory multi-host", "serve agent", "serve rules", "serve sink",
                     "serve responder", "responder status"}  # fmt: skip


@pytest.mark.parametrize(("path", "cmd"), ALL, ids=[" ".join(p) for p, _ in ALL])
def test_help(path: tuple[str, ...], cmd: Any) -> None:
    r = runner.invoke(app, [*path, "--help"])
    assert r.exit_code == 0, r.output
    first_line = (cmd.help or "").strip().splitlines()[0]
    assert first_line, f"gpuctl {' '.join(path)} has no help text"
    assert " ".join(first_line.split()[:4]) in " ".join(r.output.split())
    assert "<bool>" not in r.output, "a flag is shown as if it took a value"


def test_the_top_level_help_lists_debug() -> None:
    r = runner.invoke(app, ["--help"])
    assert r.exit_code == 0 and "--debug" in r.output


def test_version_and_schemas() -> None:
    r = runner.invoke(app, ["version", "--json"])
    assert r.exit_code == 0 and json.loads(r.output)["wire_schema"] == 1
    assert json.loads(runner.invoke(app, ["schema", "health"]).output)["title"] == "gpuhealth health message"
    assert "no message family 'healthz'" in str(runner.invoke(app, ["schema", "healthz"]).exception)
    assert "status" in json.loads(runner.invoke(app, ["schema", "--outputs"]).output)["properties"]


def test_parse_and_scan_need_no_stack(tmp_path: Path) -> None:
    line = "NVRM: Xid (PCI:0000:04:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
    r = runner.invoke(app, ["parse"], input=line + "\n")
    assert r.exit_code == 0 and json.loads(r.output)["xid"] == 79
    dmesg = tmp_path / "dmesg"
    dmesg.write_text(f"[  12.5] {line}\n")
    r = runner.invoke(app, ["scan", "--dmesg", str(dmesg), "--json"])
    assert r.exit_code == 2, r.output  # Unhealthy, as status would say


def test_inject_fault_appends_the_drivers_xid_line_to_the_named_kernel_log(tmp_path: Path) -> None:
    kmsg = tmp_path / "kmsg"
    kmsg.touch()
    where = ["--kmsg-path", str(kmsg), "--data-dir", str(tmp_path)]
    r = runner.invoke(app, ["inject-fault", "--xid", "79", "--pci", "0000:3b:00.0", *where])
    assert r.exit_code == 0, r.output
    (record,) = kmsg.read_text().splitlines()
    head, message = record.split(";", 1)
    assert head.split(",")[0] == "3"  # KERN_ERR, as the driver logs an Xid
    assert message == "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus"


def test_rules_check_in_process(tmp_path: Path) -> None:
    f = tmp_path / "r.toml"
    f.write_text("[edac]\ncorrectable = { threshold = 5, window_s = 600 }\n")
    r = runner.invoke(app, ["rules", "check", str(f), "--json"])
    assert r.exit_code == 0
    assert {c["key"] for c in json.loads(r.output)} == {"edac.correctable.threshold", "edac.correctable.window_s"}


def test_tables_are_coloured_on_a_terminal_only() -> None:
    console = Console(force_terminal=True, color_system="standard", width=120, record=True)
    console.print(rich_table([("NODE", "HEALTH"), ("gpu-1", "Unhealthy"), ("gpu-2", "Healthy")]))
    ansi = console.export_text(styles=True)
    assert "\x1b[1;31mUnhealthy" in ansi and "\x1b[32mHealthy" in ansi
    r = runner.invoke(app, ["rules", "check", "--help"])  # CliRunner is not a terminal: no escapes
    assert "\x1b[" not in r.output


def test_ctrl_c_while_python_still_loads_gpuctl_is_exit_130_not_a_traceback() -> None:
    """On a busy node loading gpuctl's commands takes long enough for a Ctrl-C to land inside an import."""
    import subprocess
    import sys

    early_interrupt = (
        "import signal, gpuctl\n"
        # Python leaves SIGINT ignored when it starts so (a suite run in the background by a shell): a terminal's
        # Ctrl-C is what this child must see, whatever its parent ignores.
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "signal.signal(signal.SIGALRM, lambda *_: signal.raise_signal(signal.SIGINT))\n"
        "signal.setitimer(signal.ITIMER_REAL, 0.002)\n"
        "gpuctl.main()\n"
    )
    r = subprocess.run([sys.executable, "-c", early_interrupt, "status"], capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stderr) == (130, "")
