"""The kmsg producer on a real nats-server: restarts neither repeat nor skip a record."""

from __future__ import annotations

import asyncio
import collections
import contextlib
from pathlib import Path
from types import SimpleNamespace

import pytest
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

from gpuhealth import bus, subjects
from gpuhealth.config import NodeIdentity
from gpuhealth.events import EVENT_DECODER, KernelEvent
from producers import klog
from producers.klog import KernelLogProducer, load_cursor
from producers.kmsg import KmsgSource


def write_records(path: Path, first_seq: int, n: int) -> None:
    with path.open("a") as f:
        for seq in range(first_seq, first_seq + n):
            if seq % 2:
                f.write(
                    f"3,{seq},{seq * 1000},-;NVRM: Xid (PCI:0000:{seq % 200:02x}:00): 79, GPU has fallen off the bus.\n"
                )
            else:
                f.write(f"6,{seq},{seq * 1000},-;eth0: link becomes ready\n SUBSYSTEM=net\n")


async def run_producer(
    js: JetStreamContext, path: Path, identity: NodeIdentity, state: Path, last_seq: int, window_s: float = 1.0
) -> KernelLogProducer:
    """Run until the cursor says the record ``last_seq`` was read and everything before it acknowledged."""

    async def publish(items: list[tuple[str, str, bytes]]) -> None:
        await bus.publish_batch(js, items)

    producer = KernelLogProducer(KmsgSource(path, identity, poll_interval=0.01), identity, state, publish,
                                 storm_window_s=window_s)  # fmt: skip
    status = producer.open()
    assert status.available, status.reason
    stop = asyncio.Event()
    task = asyncio.create_task(producer.run(stop))
    async with asyncio.timeout(10):
        while (
            (c := load_cursor(producer.cursor_path)) is None or c.boot_id != identity.boot_id or c.position != last_seq
        ):
            await asyncio.sleep(0.02)
    stop.set()
    await task
    producer.source.close()
    return producer


async def stream_events(js: JetStreamContext) -> list[KernelEvent]:
    sub = await js.pull_subscribe("gpuhealth.v1.event.>", durable="check", stream=subjects.EVENTS.name)
    out: list[KernelEvent] = []
    while True:
        try:
            msgs = await sub.fetch(500, timeout=0.5)
        except TimeoutError:
            return out
        for m in msgs:
            ev = EVENT_DECODER.decode(m.data)
            assert isinstance(ev, KernelEvent)
            out.append(ev)
            await m.ack()


async def test_restart_reads_every_record_exactly_once(nc: NATS, tmp_path: Path, identity: NodeIdentity) -> None:
    js = nc.jetstream()
    kmsg, state = tmp_path / "kmsg", tmp_path / "state"
    state.mkdir()
    write_records(kmsg, 1, 100)  # 50 faults
    first = await run_producer(js, kmsg, identity, state, last_seq=100)
    assert (first.records_read, first.events_published) == (100, 50)

    write_records(kmsg, 101, 60)  # 30 more faults while stopped
    second = await run_producer(js, kmsg, identity, state, last_seq=160)
    assert (second.records_read, second.events_published) == (60, 30), "resumed after the saved cursor"

    events = await stream_events(js)
    assert sorted(e.seq for e in events) == list(range(1, 161, 2))
    assert len({e.id for e in events}) == 80
    e = events[0]
    assert (e.kind, e.xid, e.pci_bus_id, e.node, e.boot_id) == ("xid", 79, "0000:01:00.0", "node-1", "boot-a")
    assert e.time == identity.boot_time_ns + 1000 * 1000


async def test_a_crash_before_the_cursor_was_saved_repeats_nothing(
    nc: NATS, tmp_path: Path, identity: NodeIdentity
) -> None:
    js = nc.jetstream()
    kmsg, state = tmp_path / "kmsg", tmp_path / "state"
    state.mkdir()
    write_records(kmsg, 1, 40)
    await run_producer(js, kmsg, identity, state, last_seq=40)
    (state / "kmsg.cursor").unlink()  # as if SIGKILLed between the ack and the cursor write
    again = await run_producer(js, kmsg, identity, state, last_seq=40)
    assert again.events_published == 20  # re-read and re-published …
    assert (await js.stream_info(subjects.EVENTS.name)).state.messages == 20  # … and recognised by id


async def test_a_new_boot_starts_from_the_first_record(nc: NATS, tmp_path: Path, identity: NodeIdentity) -> None:
    js = nc.jetstream()
    kmsg, state = tmp_path / "kmsg", tmp_path / "state"
    state.mkdir()
    write_records(kmsg, 1, 10)
    await run_producer(js, kmsg, identity, state, last_seq=10)
    rebooted = NodeIdentity(
        identity.cluster, identity.node, identity.machine_id, "boot-b", identity.boot_time_ns + 10**12
    )
    after = await run_producer(js, kmsg, rebooted, state, last_seq=10)
    assert after.events_published == 5
    # Each boot's events say when it began: the rules tell a reboot from a late word by it.
    boots = {(e.boot_id, e.boot_time) for e in await stream_events(js)}
    assert boots == {(identity.boot_id, identity.boot_time_ns), ("boot-b", identity.boot_time_ns + 10**12)}


async def test_an_unreadable_source_is_reported_not_fatal(tmp_path: Path, identity: NodeIdentity) -> None:
    async def publish(items: list[tuple[str, str, bytes]]) -> None:
        raise AssertionError("nothing to publish")

    producer = KernelLogProducer(KmsgSource(tmp_path / "missing", identity), identity, tmp_path, publish)
    status = producer.open()
    assert not status.available and "cannot read" in status.reason


def write_storm(path: Path, first_seq: int, n: int) -> None:
    line = "NVRM: Xid (PCI:0000:0b:00): 95, pid=777, name=train.py, Uncontained: FBHUB. RST: Yes, D-RST: No"
    with path.open("a") as f:
        f.writelines(f"3,{seq},{seq},-;{line}\n" for seq in range(first_seq, first_seq + n))


async def test_a_storm_becomes_a_few_events_whose_counts_add_up(
    nc: NATS, tmp_path: Path, identity: NodeIdentity
) -> None:
    js = nc.jetstream()
    kmsg, state = tmp_path / "kmsg", tmp_path / "state"
    state.mkdir()
    write_storm(kmsg, 1, 100_000)

    async def publish(items: list[tuple[str, str, bytes]]) -> None:
        await bus.publish_batch(js, items)

    # First run: killed (cancelled) mid-storm, without its clean-stop flush.
    first = KernelLogProducer(KmsgSource(kmsg, identity, poll_interval=0.01), identity, state, publish,
                              storm_window_s=0.05)  # fmt: skip
    assert first.open().available
    task = asyncio.create_task(first.run(asyncio.Event()))
    async with asyncio.timeout(20):
        while first.records_read < 30_000:
            await asyncio.sleep(0.005)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    first.source.close()

    second = await run_producer(js, kmsg, identity, state, last_seq=100_000, window_s=0.05)
    assert second.records_read < 100_000, "resumed, not restarted"
    events = await stream_events(js)
    assert sum(e.count for e in events) == 100_000
    assert len(events) < 500
    assert {(e.kind, e.xid, e.pci_bus_id) for e in events} == {("xid", 95, "0000:0b:00.0")}


class Clock:
    """The storm windows' clock, set by the test (``step``: how far it moves at each reading)."""

    def __init__(self) -> None:
        self.now, self.step = 0.0, 0.0

    def monotonic(self) -> float:
        self.now += self.step
        return self.now - self.step


async def test_a_kill_while_one_storm_holds_lines_counts_another_storms_lines_once(
    nc: NATS, tmp_path: Path, identity: NodeIdentity, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Storm B's summary goes out while storm A still holds a line read before B's; killed then, the agent
    resumes before A's held line and reads B's summarised lines again: they must not count twice."""
    js = nc.jetstream()
    kmsg, state = tmp_path / "kmsg", tmp_path / "state"
    state.mkdir()
    kmsg.touch()
    clock = Clock()
    monkeypatch.setattr(klog, "time", SimpleNamespace(monotonic=clock.monotonic))

    async def publish(items: list[tuple[str, str, bytes]]) -> None:
        await bus.publish_batch(js, items)

    def xid79(seq: int, bus_id: str) -> str:
        return f"3,{seq},{seq * 1000},-;NVRM: Xid (PCI:{bus_id}): 79, GPU has fallen off the bus.\n"

    first = KernelLogProducer(KmsgSource(kmsg, identity, poll_interval=0.01), identity, state, publish)
    assert first.open().available
    task = asyncio.create_task(first.run(asyncio.Event()))
    b, a = "0000:04:00", "0000:05:00"
    async with asyncio.timeout(20):
        for at, lines in ((0.0, [xid79(1, b)]), (0.3, [xid79(2, a)]), (0.4, [xid79(3, a), xid79(4, b), xid79(5, b)])):
            clock.now = at  # B's window opens at 0.0, A's at 0.3; A holds line 3, B lines 4 and 5
            with kmsg.open("a") as f:
                f.writelines(lines)
            while first.records_read < int(lines[-1].split(",")[1]):
                await asyncio.sleep(0.01)
        clock.now = 1.05  # B's window is over (its summary, lines 4-5, goes out), A's is not
        while (await js.stream_info(subjects.EVENTS.name)).state.messages < 3:
            await asyncio.sleep(0.01)
    task.cancel()  # SIGKILLed: no clean-stop flush
    with contextlib.suppress(asyncio.CancelledError):
        await task
    first.source.close()

    clock.now, clock.step = 10.0, 0.6  # a new process: its windows close as time goes on
    second = KernelLogProducer(KmsgSource(kmsg, identity, poll_interval=0.01), identity, state, publish)
    assert second.open().available
    stop = asyncio.Event()
    task = asyncio.create_task(second.run(stop))
    async with asyncio.timeout(20):  # until every line is accounted for, then a clean stop (which flushes)
        while sum((lines := await stored_lines(js)).values()) < 5:
            await asyncio.sleep(0.05)
    stop.set()
    await task
    assert await stored_lines(js) == {f"{b}.0": 3, f"{a}.0": 2}


async def stored_lines(js: JetStreamContext) -> collections.Counter[str]:
    """Lines per GPU, as the stream's kernel events count them."""
    lines = collections.Counter[str]()
    info = await js.stream_info(subjects.EVENTS.name)
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        raw = await js.get_msg(subjects.EVENTS.name, seq)
        assert raw.data is not None
        e = EVENT_DECODER.decode(raw.data)
        assert isinstance(e, KernelEvent)
        lines[str(e.pci_bus_id)] += e.count
    return lines


async def test_reopened_after_a_read_error_mid_storm_counts_each_line_once(
    nc: NATS, tmp_path: Path, identity: NodeIdentity, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent's recovery from a read error (close, open, run again: producers/agent.py) in the same process,
    while a storm holds lines: what the cursor owes is published once, and the windows start afresh."""
    js = nc.jetstream()
    kmsg, state = tmp_path / "kmsg", tmp_path / "state"
    state.mkdir()
    kmsg.touch()
    clock = Clock()
    monkeypatch.setattr(klog, "time", SimpleNamespace(monotonic=clock.monotonic))

    async def publish(items: list[tuple[str, str, bytes]]) -> None:
        await bus.publish_batch(js, items)

    producer = KernelLogProducer(KmsgSource(kmsg, identity, poll_interval=0.01), identity, state, publish)
    assert producer.open().available
    line = "NVRM: Xid (PCI:0000:04:00): 79, GPU has fallen off the bus."
    stop = asyncio.Event()
    task = asyncio.create_task(producer.run(stop))
    async with asyncio.timeout(20):
        for at, seqs in ((0.0, [1]), (0.2, [2, 3])):  # line 1 published, 2 and 3 held
            clock.now = at
            with kmsg.open("a") as f:
                f.writelines(f"3,{seq},{seq * 1000},-;{line}\n" for seq in seqs)
            while (c := load_cursor(producer.cursor_path)) is None or c.position != seqs[-1]:
                await asyncio.sleep(0.01)
        task.cancel()  # the read failed
        with contextlib.suppress(asyncio.CancelledError):
            await task
        producer.source.close()
        assert producer.open().available
        task = asyncio.create_task(producer.run(stop))
        clock.now = 0.4
        with kmsg.open("a") as f:
            f.write(f"3,4,4000,-;{line}\n")
        while producer.records_read < 4:
            await asyncio.sleep(0.01)
        clock.step = 0.6  # the windows close
        while sum((await stored_lines(js)).values()) < 4:
            await asyncio.sleep(0.05)
    stop.set()
    await task
    assert await stored_lines(js) == {"0000:04:00.0": 4}
