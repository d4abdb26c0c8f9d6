"""One stage per process, as a fleet runs them: agent, rules and sink against one nats-server."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from producers.kmsg import append_record
from tests.e2e.conftest import GPUCTL, Nats, gpuctl, gpuctl_json, wait_for


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[tuple[Nats, Path, list[subprocess.Popen[bytes]]]]:
    nats = Nats(tmp_path / "nats")
    nats.start()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        yield nats, tmp_path, procs
    finally:
        for p in procs:
            p.terminate()
        slow = []
        for p in procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                slow.append(p.args)
        nats.stop()
        assert slow == [], "every stage stops within 15 s of SIGTERM"
        assert [p.returncode for p in procs] == [0] * len(procs)


def serve(procs: list[subprocess.Popen[bytes]], log: Path, *args: str) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        p = subprocess.Popen([GPUCTL, "serve", *args], stdout=out, stderr=subprocess.STDOUT)
    procs.append(p)
    return p


def test_stages_in_their_own_processes_with_remote_injection(
    fleet: tuple[Nats, Path, list[subprocess.Popen[bytes]]],
) -> None:
    nats, tmp, procs = fleet
    url = nats.url
    kmsg_a, kmsg_b = tmp / "kmsg-a", tmp / "kmsg-b"
    kmsg_a.touch()
    kmsg_b.touch()
    serve(procs, tmp / "rules.log", "rules", "--nats", url)
    serve(procs, tmp / "sink.log", "sink", "--nats", url, "--data-dir", str(tmp / "sink"))
    agent_a = serve(
        procs,
        tmp / "a.log",
        "agent",
        "--nats",
        url,
        "--node",
        "node-a",
        "--kmsg-path",
        str(kmsg_a),
        "--data-dir",
        str(tmp / "a"),
        "--allow-inject",
    )
    serve(
        procs,
        tmp / "b.log",
        "agent",
        "--nats",
        url,
        "--node",
        "node-b",
        "--kmsg-path",
        str(kmsg_b),
        "--data-dir",
        str(tmp / "b"),
    )

    def injected(node: str) -> subprocess.CompletedProcess[str]:
        return gpuctl("inject-fault", "--xid", "48", "--pci", "0000:07:00.0", "--node", node, "--nats", url)

    wait_for(lambda: injected("node-a").returncode == 0, timeout=30)
    assert "NVRM: Xid (PCI:0000:07:00): 48" in kmsg_a.read_text()
    wait_for(lambda: injected("node-b").returncode != 69, timeout=30)  # its agent answering (69: none yet)
    refused = injected("node-b")
    assert refused.returncode == 77 and "not allowed" in refused.stderr
    assert kmsg_b.read_text() == ""

    wait_for(lambda: gpuctl("status", "--nats", url).returncode == 2, timeout=30)
    _, status = gpuctl_json("status", "--nats", url)
    assert isinstance(status, dict)
    unhealthy = [(s["node"], s["entity"]) for s in status["states"] if s["health"] == "Unhealthy"]
    assert unhealthy == [("node-a", "0000:07:00.0")]

    # `gpuctl serve agent` handed its process over to the lean entry point (same pid, exec'd).
    cmdline = Path(f"/proc/{agent_a.pid}/cmdline").read_bytes().split(b"\0")
    assert cmdline[1:3] == [b"-m", b"producers.agent"]


def start_stages(procs: list[subprocess.Popen[bytes]], tmp: Path, url: str, kmsg: Path) -> None:
    serve(procs, tmp / "rules.log", "rules", "--nats", url)
    serve(procs, tmp / "sink.log", "sink", "--nats", url, "--data-dir", str(tmp / "sink"))
    serve(procs, tmp / "agent.log", "agent", "--nats", url, "--node", "n1", "--kmsg-path", str(kmsg),
          "--data-dir", str(tmp / "agent"))  # fmt: skip


def agent_reported(url: str) -> bool:
    code, status = gpuctl_json("status", "--nats", url)
    return code == 0 and isinstance(status, dict) and any(s["component"] == "kernel-log" for s in status["states"])


def fault_stored(url: str) -> bool:
    code, rows = gpuctl_json("events", "--nats", url)
    return code == 0 and isinstance(rows, list) and any(r["xid"] == 79 for r in rows)


def test_the_pipeline_survives_nats_going_away_and_coming_back(
    fleet: tuple[Nats, Path, list[subprocess.Popen[bytes]]],
) -> None:
    nats, tmp, procs = fleet
    kmsg = tmp / "kmsg"
    kmsg.touch()
    start_stages(procs, tmp, nats.url, kmsg)
    wait_for(lambda: agent_reported(nats.url), timeout=30)

    nats.stop()
    # While NATS is down the fault is written; the agent holds it until it can publish.
    assert gpuctl("inject-fault", "--xid", "79", "--pci", "0000:0a:00.0", "--kmsg-path", str(kmsg)).returncode == 0
    time.sleep(2)
    nats.start()
    wait_for(lambda: gpuctl("status", "--nats", nats.url).returncode == 2, timeout=60)
    wait_for(lambda: fault_stored(nats.url), timeout=60)
    assert all(p.poll() is None for p in procs), "no stage died while NATS was away"


def test_stages_started_before_nats_wait_for_it(fleet: tuple[Nats, Path, list[subprocess.Popen[bytes]]]) -> None:
    nats, tmp, procs = fleet
    nats.stop()
    kmsg = tmp / "kmsg"
    kmsg.touch()
    append_record(
        kmsg, "NVRM: Xid (PCI:0000:0c:00): 79, GPU has fallen off the bus."
    )  # stamped now, as the kernel does
    start_stages(procs, tmp, nats.url, kmsg)
    time.sleep(3)
    assert all(p.poll() is None for p in procs), "no stage gave up while NATS was not there yet"
    nats.start()
    wait_for(lambda: gpuctl("status", "--nats", nats.url).returncode == 2, timeout=60)
    wait_for(lambda: fault_stored(nats.url), timeout=60)
