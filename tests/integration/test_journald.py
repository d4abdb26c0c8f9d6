"""The journald reader on real journal files, written at test time by systemd-journal-remote.

Under CI a missing tool or systemd-python is a failure, not a skip.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

import pytest
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

from gpuhealth import bus
from gpuhealth.config import NodeIdentity
from producers import journald
from producers.klog import KernelLogProducer, Unusable
from tests.conftest import need
from tests.integration.test_kmsg_producer import stream_events

BOOT = "0f6b4cbb-1c4d-4a55-9b0e-6e3c1d2d1b2a"
T0_US = 1_763_700_000_000_000


@pytest.fixture
def journal_remote() -> str:
    tool = shutil.which("systemd-journal-remote") or "/lib/systemd/systemd-journal-remote"
    need(Path(tool).exists(), "systemd-journal-remote (Debian package systemd-journal-remote)")
    need(journald.available(), "systemd-python (pip install 'gpuhealth[journald]')")
    return tool


def write_journal(tool: str, path: Path, entries: list[dict[str, str]]) -> None:
    """Append entries (journal export format on stdin) to the journal file at ``path``."""
    export = "".join("".join(f"{k}={v}\n" for k, v in e.items()) + "\n" for e in entries)
    subprocess.run([tool, f"--output={path}", "-"], input=export.encode(), check=True, capture_output=True)


def kernel(i: int, message: str, transport: str = "kernel") -> dict[str, str]:
    return {"__REALTIME_TIMESTAMP": str(T0_US + i * 1000), "__MONOTONIC_TIMESTAMP": str(5_000_000 + i),
            "_BOOT_ID": BOOT.replace("-", ""), "_TRANSPORT": transport, "PRIORITY": "3", "MESSAGE": message}  # fmt: skip


def xid_line(i: int) -> str:
    return f"NVRM: Xid (PCI:0000:{i % 256:02x}:{i // 256:02x}): 79, pid='<unknown>', name=<unknown>, GPU has fallen off"


async def test_reads_only_kernel_entries_with_their_fields(journal_remote: str, tmp_path: Path,
                                                          identity: NodeIdentity) -> None:  # fmt: skip
    jdir = tmp_path / "journal"
    jdir.mkdir()
    write_journal(journal_remote, jdir / "k.journal", [
        kernel(1, xid_line(1)), kernel(2, "a service said something", transport="stdout"), kernel(3, "eth0: up"),
    ])  # fmt: skip
    src = journald.JournalSource(identity, jdir)
    description, resumed = src.open(None)
    assert "kernel entries" in description and resumed is None
    records = await src.read(asyncio.Event(), timeout=1)
    assert [r.message for r in records if not isinstance(r, Unusable)] == [xid_line(1), "eth0: up"]
    first = records[0]
    assert not isinstance(first, Unusable)
    assert (first.boot_id, first.time_ns, first.priority, first.monotonic_us) == (BOOT, (T0_US + 1000) * 1000, 3,
                                                                                  5_000_001)  # fmt: skip
    assert isinstance(first.position, str) and first.position.startswith("s=")
    src.close()


async def _run(js: JetStreamContext, src: journald.JournalSource, identity: NodeIdentity, state: Path,
               until_read: int) -> KernelLogProducer:  # fmt: skip
    async def publish(items: list[tuple[str, str, bytes]]) -> None:
        await bus.publish_batch(js, items)

    producer = KernelLogProducer(src, identity, state, publish, storm_window_s=0.05)
    assert producer.open().available
    stop = asyncio.Event()
    task = asyncio.create_task(producer.run(stop))
    async with asyncio.timeout(15):
        while producer.records_read < until_read:
            await asyncio.sleep(0.02)
    stop.set()
    await task
    src.close()
    return producer


async def test_restart_and_rotation_read_every_kernel_line_exactly_once(
    journal_remote: str, nc: NATS, tmp_path: Path, identity: NodeIdentity
) -> None:
    js = nc.jetstream()
    jdir, state = tmp_path / "journal", tmp_path / "state"
    jdir.mkdir()
    state.mkdir()
    write_journal(journal_remote, jdir / "a.journal", [kernel(i, xid_line(i)) for i in range(1, 41)])
    first = await _run(js, journald.JournalSource(identity, jdir), identity, state, until_read=40)
    assert first.records_read == 40

    # While the reader is stopped: more lines in the same file, and a rotated-in new file.
    write_journal(journal_remote, jdir / "a.journal", [kernel(i, xid_line(i)) for i in range(41, 61)])
    write_journal(journal_remote, jdir / "b.journal", [kernel(i, xid_line(i)) for i in range(61, 81)])
    second = await _run(js, journald.JournalSource(identity, jdir), identity, state, until_read=40)
    assert second.records_read == 40, "resumed after its cursor"

    events = await stream_events(js)
    assert sorted(e.message for e in events) == sorted(xid_line(i) for i in range(1, 81))
    assert len({e.id for e in events}) == 80 and {e.source for e in events} == {"journald"}
    assert {e.boot_id for e in events} == {BOOT} and {e.boot_time for e in events} == {0}, "not this boot's: unknown"


async def test_follows_a_journal_as_it_grows(journal_remote: str, tmp_path: Path, identity: NodeIdentity) -> None:
    jdir = tmp_path / "journal"
    jdir.mkdir()
    write_journal(journal_remote, jdir / "k.journal", [kernel(1, "boot line")])
    src = journald.JournalSource(identity, jdir)
    src.open(None)
    assert len(await src.read(asyncio.Event(), timeout=1)) == 1
    reader = asyncio.create_task(src.read(asyncio.Event(), timeout=10))
    await asyncio.sleep(0.2)
    await asyncio.to_thread(write_journal, journal_remote, jdir / "k.journal", [kernel(2, xid_line(2))])
    got = await asyncio.wait_for(reader, 10)
    assert [r.message for r in got if not isinstance(r, Unusable)] == [xid_line(2)]
    src.close()


def test_a_missing_directory_is_reported(journal_remote: str, tmp_path: Path, identity: NodeIdentity) -> None:
    with pytest.raises(OSError, match="no journal directory"):
        journald.JournalSource(identity, tmp_path / "nope").open(None)


def test_without_systemd_python_the_agent_reads_kmsg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                     identity: NodeIdentity) -> None:  # fmt: skip
    from producers import agent

    monkeypatch.setattr(journald, "available", lambda: False)
    args = agent.parse_args(["--nats", "nats://x", "--journal", "--kmsg-path", str(tmp_path / "k")])
    assert agent.kernel_log_source(args, identity).name == "kmsg"
    with pytest.raises(OSError, match="systemd-python is not installed"):
        journald.JournalSource(identity, tmp_path).open(None)
