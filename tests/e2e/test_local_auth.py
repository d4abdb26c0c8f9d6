"""gpuctl up is trusted by construction (DESIGN.md, principle 6): every identity on its NATS is
authenticated, its secrets are for root (or a gpuhealth group) alone, and an unprivileged local user
can read nothing, connect to nothing and gets "permission denied" from every gpuctl command.

"As nobody" is a process that imports what it needs as root, then drops to uid 65534 with no
supplementary groups: the interpreter may live where nobody may not read (pyenv under /root), and
from the drop on the kernel checks every open, connect and exec against nobody."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import nats
import psutil
import pytest

from gpuhealth import localauth, natsconf, subjects
from gpuhealth.config import RunInfo, read_run_info, write_run_info
from gpuhealth.errors import ConfigError
from tests.e2e.conftest import Up, gpuctl, running, start_up, wait_for

NOBODY = 65534  # nobody, and nogroup: here it stands in for a gpuhealth group

# Before the drop: what gpuctl imports lazily on these commands' paths (a module missing here fails the test
# loudly, as "unexpected error: ModuleNotFoundError", never passes it).
PRELUDE = """
import asyncio, json, os, sys
import nats
import gpuctl.main, typer._adapters, tomllib, importlib.readers, getpass
os.setgroups([])
os.setgid({gid})
os.setuid({uid})
"""

GPUCTL = "sys.argv[0] = 'gpuctl'\ngpuctl.main.main()"

# What a local user with a NATS client tries: read the stack's files, then connect with no or a guessed password.
INTRUDER = """
url, d = sys.argv[1], sys.argv[2]
out = {}
for name, read in (("data dir", lambda: os.listdir(d)), ("run.json", lambda: open(d + "/run.json").read()),
                   ("operator secret", lambda: open(d + "/secrets/operator.password").read())):
    try:
        read()
        out[name] = "read"
    except OSError as e:
        out[name] = type(e).__name__

async def quiet(e):
    pass

async def attempt(**kw):
    try:
        nc = await nats.connect(url, connect_timeout=2, allow_reconnect=False, error_cb=quiet, **kw)
    except Exception as e:
        return str(e)
    await nc.close()
    return "connected"

out["no credentials"] = asyncio.run(attempt())
out["guessed password"] = asyncio.run(attempt(user="operator", password="guess"))
print(json.dumps(out))
"""


def as_nobody(code: str, *argv: str, gid: int = NOBODY) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PRELUDE.format(uid=NOBODY, gid=gid) + code, *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )


@pytest.fixture
def stack(reachable: Path) -> Iterator[Up]:
    with running(reachable) as up:
        yield up


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_local_user_reads_nothing_and_nats_refuses_them(stack: Up) -> None:
    d = stack.data_dir
    r = as_nobody(INTRUDER, stack.info.nats_url, str(d))
    assert r.returncode == 0, r.stderr
    # Refused at connect: no forged event, SetHealthy, command or query can follow.
    refused = "nats: 'Authorization Violation'"
    assert json.loads(r.stdout) == {
        "data dir": "PermissionError",
        "run.json": "PermissionError",
        "operator secret": "PermissionError",
        "no credentials": refused,
        "guessed password": refused,
    }
    secrets = sorted((d / "secrets").iterdir())
    assert [p.name for p in secrets] == [
        f"{u}.password" for u in ("agent-e2e-node", "operator", "reader", "responder", "rules", "simulator", "sink")
    ]
    private = (mode(d), mode(d / "secrets"), mode(d / "run.json"), mode(d / "nats" / "auth.conf"))
    assert private == (0o700, 0o700, 0o600, 0o600)
    assert {mode(p) for p in secrets} == {0o600}
    values = [p.read_text().strip() for p in secrets]
    # The server has hashes; run.json names the port; the agent's argv and environment name only a file.
    agent = next(p for p in psutil.Process(stack.proc.pid).children() if "producers.agent" in p.cmdline())
    shown = [
        (d / "nats" / "auth.conf").read_text(),
        (d / "nats" / "nats-server.conf").read_text(),
        (d / "run.json").read_text(),
        " ".join(agent.cmdline()),
        json.dumps(agent.environ()),
    ]
    assert not [v for v in values for text in shown if v in text]
    assert agent.environ()["GPUHEALTH_NATS_PASSWORD_FILE"] == str(d / "secrets" / "agent-e2e-node.password")


COMMANDS = [
    ["status"],
    ["events"],
    ["sql", "SELECT 1"],
    ["inject-fault", "--xid", "79", "--pci", "0000:04:00.0"],
    ["inject-fault", "--nvml-xid", "48", "--gpu", "0"],
    ["set-healthy", "--component", "accelerator-nvidia-error-xid", "--reason", "forged"],
    ["fleet"],
    ["watch"],
]


def test_every_gpuctl_command_tells_a_local_user_permission_denied(stack: Up) -> None:
    for command in COMMANDS:
        r = as_nobody(GPUCTL, *command, "--data-dir", str(stack.data_dir))
        assert r.returncode != 0 and r.stdout == "", command
        assert len(r.stderr.strip().splitlines()) == 1 and "permission denied" in r.stderr, (command, r.stderr)
        assert "no running gpuhealth" not in r.stderr and "unexpected" not in r.stderr, (command, r.stderr)
    # Knowing the port does not help.
    r = as_nobody(GPUCTL, "status", "--nats", stack.info.nats_url)
    assert r.returncode == 77 and "refused the credentials" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


async def raw(up: Up, user: str, errors: list[str]) -> nats.NATS:
    async def on_error(e: Exception) -> None:
        errors.append(str(e))

    inbox = {"inbox_prefix": natsconf.agent_inbox(up.info.node)} if user.startswith("agent-") else {}
    return await nats.connect(
        up.info.nats_url, error_cb=on_error, connect_timeout=5, **localauth.credentials(up.data_dir, user), **inbox
    )


async def refused(up: Up, user: str, subjects_: list[str]) -> list[str]:
    """Publish on each subject as ``user``; the server's refusals, sorted."""
    errors: list[str] = []
    nc = await raw(up, user, errors)
    try:
        for s in subjects_:
            await nc.publish(s, b"forged")
        await nc.flush()
        async with asyncio.timeout(10):  # the refusals arrive on this loop
            while len(errors) < len(subjects_):
                await asyncio.sleep(0.05)
    finally:
        await nc.close()
    return sorted(errors)


def violation(subject: str) -> str:
    return f'nats: permissions violation for publish to "{subject}"'


async def test_each_identity_speaks_only_for_itself_and_secrets_survive_a_restart(reachable: Path) -> None:
    kmsg = reachable / "kmsg"
    kmsg.touch()
    up = start_up(reachable / "data", kmsg)
    try:
        # The operator (what gpuctl uses) may not speak as this node's agent.
        own_kmsg = subjects.event_subject("e2e-node", "kmsg")
        assert await refused(up, "operator", [own_kmsg]) == [violation(own_kmsg)]
        # The agent may not publish health states, nor a SetHealthy for another node.
        forged = [
            "gpuhealth.v1.health.e2e-node.accelerator-nvidia-error-xid.0000:04:00.0",
            "gpuhealth.v1.health.other-node.accelerator-nvidia-error-xid.0000:04:00.0",
            subjects.event_subject("other-node", "operator"),
        ]
        assert await refused(up, "agent-e2e-node", forged) == sorted(map(violation, forged))
        # gpuctl simulate's identity may publish as any node but the real one.
        assert await refused(up, "simulator", [own_kmsg]) == [violation(own_kmsg)]
        before = localauth.credentials(up.data_dir)
    finally:
        assert up.stop() == 0
    up = start_up(reachable / "data", kmsg)
    try:
        assert localauth.credentials(up.data_dir) == before  # kept: a client that outlives a restart reconnects
        wait_for(lambda: gpuctl("status", "--data-dir", str(up.data_dir)).returncode == 0, timeout=20)
    finally:
        up.stop()


def test_with_a_gpuhealth_group_its_members_read_the_operators_secret_and_nothing_else(reachable: Path) -> None:
    d = reachable / "data"
    localauth.prepare_data_dir(d, NOBODY)
    localauth.identities(d, "n1", NOBODY)
    write_run_info(
        d,
        RunInfo(
            pid=1,
            nats_url="nats://127.0.0.1:1",
            node="n1",
            cluster="c",
            kmsg_path="/dev/kmsg",
            allow_inject=True,
            started_ns=0,
            clickhouse="chdb://",
        ),
        NOBODY,
    )
    for path, want in (
        (d, 0o750),
        (d / "secrets", 0o750),
        (d / "run.json", 0o640),
        (d / "secrets" / "operator.password", 0o640),
        (d / "secrets" / "agent-n1.password", 0o600),
        (d / "secrets" / "sink.password", 0o600),
    ):
        assert (mode(path), path.stat().st_gid) == (want, NOBODY if want != 0o600 else os.getgid()), path
    reads = "for p in sys.argv[1:]:\n    try:\n        open(p).read(); print('read')\n    except OSError:\n        print('denied')"
    files = [str(d / "run.json"), str(d / "secrets" / "operator.password"), str(d / "secrets" / "rules.password")]
    member = as_nobody(reads, *files)
    assert member.stdout.split() == ["read", "read", "denied"], member.stderr
    outsider = as_nobody(reads, *files, gid=NOBODY - 1)
    assert outsider.stdout.split() == ["denied"] * 3, outsider.stderr
    assert read_run_info(d) is not None


def test_where_files_cannot_be_given_to_the_group_root_alone_operates(reachable: Path) -> None:
    """As under the systemd unit, whose capabilities leave out CAP_CHOWN."""
    d = reachable / "data"
    code = f"from gpuhealth import localauth; print(localauth.prepare_data_dir(__import__('pathlib').Path({str(d)!r}), {NOBODY}))"
    r = subprocess.run(
        ["setpriv", "--bounding-set", "-chown", "--inh-caps", "-chown", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (r.returncode, r.stdout.strip(), mode(d)) == (0, "None", 0o700), r.stderr
    assert "only root may operate gpuhealth" in r.stderr


def test_a_data_dir_every_user_shares_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    with pytest.raises(ConfigError, match="shared by every user"):
        localauth.prepare_data_dir(shared, None)
    assert mode(shared) == 0o1777
