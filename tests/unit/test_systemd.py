"""The systemd units: valid to systemd-analyze, every flag they pass exists, and readiness and the watchdog
reach systemd's notify socket."""

from __future__ import annotations

import asyncio
import itertools
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuctl.main import app
from gpuhealth import sd
from tests.conftest import REPO

UNITS = sorted((REPO / "deploy" / "systemd").glob("*.service"))
GPUCTL = str(Path(sys.executable).parent / "gpuctl")


def exec_start(unit: Path) -> list[str]:
    """The command line, without the `/usr/bin/env VAR=value` a unit may put before it."""
    [line] = [ln for ln in unit.read_text().splitlines() if ln.startswith("ExecStart=")]
    argv = line.removeprefix("ExecStart=").split()
    if argv[0] == "/usr/bin/env":
        argv = list(itertools.dropwhile(lambda a: "=" in a, argv[1:]))
    return argv


@pytest.mark.parametrize("unit", UNITS, ids=[u.name for u in UNITS])
def test_every_flag_a_unit_passes_exists(unit: Path) -> None:
    argv = exec_start(unit)
    assert argv[0] == "/opt/gpuhealth/venv/bin/gpuctl"
    command = [a for a in argv[1:3] if not a.startswith("-")]
    flags = [a for a in argv if a.startswith("--")]
    help_text = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "200"}).output
    for flag in flags:
        assert re.search(rf"{re.escape(flag)}\b", help_text), f"{unit.name}: gpuctl {' '.join(command)} has no {flag}"
    for var in re.findall(r"\$\{(\w+)\}", " ".join(argv)):
        assert re.search(rf"^#? ?{var}=", (REPO / "deploy" / "systemd" / "gpuhealth.default").read_text(), re.M), var


@pytest.mark.skipif(shutil.which("systemd-analyze") is None and not os.environ.get("CI"), reason="no systemd-analyze")
@pytest.mark.parametrize("unit", UNITS, ids=[u.name for u in UNITS])
def test_systemd_analyze_verify_has_nothing_to_say(unit: Path, tmp_path: Path) -> None:
    local = tmp_path / unit.name  # the same unit, pointing at this checkout's gpuctl
    local.write_text(unit.read_text().replace("/opt/gpuhealth/venv/bin/gpuctl", GPUCTL))
    r = subprocess.run(["systemd-analyze", "verify", "--man=no", str(local)], capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr.strip() == "", r.stderr


def listen(tmp_path: Path) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(str(tmp_path / "notify"))
    s.settimeout(30)
    return s


def test_notify_reaches_the_socket_and_is_a_no_op_without_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    assert sd.notify("READY=1") is False
    with listen(tmp_path) as s:
        monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "notify"))
        assert sd.notify("READY=1") is True
        assert s.recv(4096) == b"READY=1"
    monkeypatch.setenv("WATCHDOG_USEC", "30000000")
    assert sd.watchdog_interval() == 15.0
    monkeypatch.setenv("WATCHDOG_PID", "1")  # the watchdog is another process's
    assert sd.watchdog_interval() is None


async def test_the_agent_says_ready_and_pings_the_watchdog(tmp_path: Path, nats_url: str) -> None:
    kmsg = tmp_path / "kmsg"
    kmsg.touch()
    with listen(tmp_path) as s:
        env = os.environ | {"NOTIFY_SOCKET": str(tmp_path / "notify"), "WATCHDOG_USEC": "400000"}
        agent = subprocess.Popen([GPUCTL, "serve", "agent", "--nats", nats_url, "--data-dir", str(tmp_path / "a"),  # noqa: ASYNC220
                                  "--kmsg-path", str(kmsg), "--node", "sd-test"], env=env,
                                 stderr=subprocess.DEVNULL)  # fmt: skip
        try:  # (its children, systemctl among them, must not speak on the socket: nothing else arrives)
            got = [(await asyncio.to_thread(s.recv, 4096)).decode() for _ in range(3)]
            assert got[0].startswith("READY=1\nSTATUS=node sd-test") and got[1:] == ["WATCHDOG=1", "WATCHDOG=1"]
        finally:
            agent.terminate()
            await asyncio.to_thread(agent.wait, 30)
