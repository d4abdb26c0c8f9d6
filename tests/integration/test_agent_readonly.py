"""The agent on a data dir it cannot write: it keeps publishing what it sees, says it cannot persist, and
persists again by itself once it can. A read-only bind mount of the data dir in the agent's own mount
namespace: the real EROFS, which root's privileges do not get around, and the rest of the host untouched."""

from __future__ import annotations

import asyncio
import functools
import os
import shutil
import subprocess
from pathlib import Path

from nats.aio.client import Client as NATS

from gpuhealth.events import KernelEvent, SetHealthy
from producers.kmsg import append_record
from tests.conftest import need
from tests.integration.test_agent_outbox import Agent, stored_events, until

XID = "NVRM: Xid (PCI:0000:04:00): 79, pid=1234, name=train.py, GPU has fallen off the bus."


@functools.cache
def can_unshare_mounts() -> bool:
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("nsenter"):
        return False
    return subprocess.run(["unshare", "--mount", "true"], capture_output=True, timeout=30).returncode == 0


def private_mount(data: Path, *, read_only: bool) -> tuple[str, ...]:
    """A command prefix: the agent in a mount namespace of its own, its data dir bind-mounted onto itself."""
    need(can_unshare_mounts(), "root, unshare and nsenter, and a kernel that lets it make a mount namespace")
    ro = ' && mount -o remount,bind,ro "$0"' if read_only else ""
    return ("unshare", "--mount", "--propagation", "private", "sh", "-c", f'mount --bind "$0" "$0"{ro} && exec "$@"',
            str(data))  # fmt: skip


def remount(agent: Agent, data: Path, mode: str) -> None:
    assert agent.proc is not None
    subprocess.run(["nsenter", "-t", str(agent.proc.pid), "-m", "mount", "-o", f"remount,bind,{mode}", str(data)],
                   check=True)  # fmt: skip


async def xids_stored(nc: NATS, message: str) -> int:
    return sum(isinstance(e, KernelEvent) and e.message == message for e in await stored_events(nc.jetstream()))


async def stored_once(nc: NATS, message: str) -> None:
    async with asyncio.timeout(60):
        while (n := await xids_stored(nc, message)) != 1:
            assert n == 0, f"{message!r} stored {n} times"
            await asyncio.sleep(0.2)


async def test_an_agent_started_on_a_read_only_data_dir_publishes_and_says_it_cannot_persist(
    tmp_path: Path, nats_url: str, nc: NATS
) -> None:
    # The finding: with the data dir read-only the agent published nothing, and said the kernel log was Healthy.
    data = tmp_path / "data"
    data.mkdir()
    agent = Agent(tmp_path, nats_url, wrap=private_mount(data, read_only=True))
    try:
        await agent.start(timeout=60)
        assert agent.sources["kmsg"].startswith("ok")
        append_record(tmp_path / "kmsg", XID, 3)
        await stored_once(nc, XID)
        await until(lambda: agent.own_states()["spool"][0] == "Degraded")
        states = agent.own_states()
        assert states["spool"][1].startswith("cannot persist: Read-only file system"), states
        assert states["kmsg cursor"][0] == "Degraded", states
        assert "Read-only file system" in states["kmsg cursor"][1], states
        assert not any(data.iterdir())  # seen from outside its namespace: nothing was written
    finally:
        agent.stop()


async def test_an_agent_whose_data_dir_turns_read_only_keeps_publishing_and_recovers_by_itself(
    tmp_path: Path, nats_url: str, nc: NATS
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    agent = Agent(tmp_path, nats_url, wrap=private_mount(data, read_only=False))
    try:
        await agent.start(timeout=60)
        await until(lambda: agent.own_states()["bus"][0] == "Healthy")
        remount(agent, data, "ro")  # as ext4 does on errors=remount-ro
        append_record(tmp_path / "kmsg", XID + " (read-only)", 3)
        code, _ = agent.post("/v1/health-states/set-healthy?components=memory", {"reason": "while read-only"})
        assert code == 200
        await stored_once(nc, XID + " (read-only)")
        async with asyncio.timeout(60):
            while not [e for e in await stored_events(nc.jetstream())
                       if isinstance(e, SetHealthy) and e.reason == "while read-only"]:  # fmt: skip
                await asyncio.sleep(0.2)
        states = agent.own_states()
        assert states["spool"][0] == "Degraded" and "Read-only file system" in states["spool"][1], states
        assert states["kmsg cursor"][0] == "Degraded", states
        remount(agent, data, "rw")
        append_record(tmp_path / "kmsg", XID + " (writable again)", 3)
        await stored_once(nc, XID + " (writable again)")
        await until(lambda: agent.own_states()["spool"] == ("Healthy", "spool has room"))
        await until(lambda: agent.own_states()["kmsg cursor"][0] == "Healthy")
        assert await xids_stored(nc, XID + " (read-only)") == 1  # nothing of it sent twice
    finally:
        agent.stop()
