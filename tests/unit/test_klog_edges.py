"""The kernel log pipeline at its edges, on a real nats-server: which lines make one storm, the numbers
a record may carry, when the producer wakes, and a stop while the bus is gone."""

from __future__ import annotations

import asyncio
from pathlib import Path

from nats.aio.client import Client as NATS

from gpuhealth import bus, subjects
from gpuhealth.config import NodeIdentity
from gpuhealth.events import EVENT_DECODER, KernelEvent, now_ns
from producers.klog import Cursor, KernelLogProducer, LogRecord, Unusable, load_cursor
from producers.kmsg import KmsgSource
from tests.unit.test_klog import fetch_all, producer, run_until

MAX_I64 = 2**63 - 1


async def kernel_events(nc: NATS) -> list[KernelEvent]:
    events = [EVENT_DECODER.decode(d) for _, d in await fetch_all(nc, subjects.EVENTS)]
    assert all(isinstance(e, KernelEvent) for e in events)
    return sorted((e for e in events if isinstance(e, KernelEvent)), key=lambda e: e.seq)


async def test_a_fault_repeated_in_other_words_is_one_storm_and_faults_of_no_kind_differ_by_their_text(
    nc: NATS, tmp_path: Path, identity: NodeIdentity
) -> None:
    """The same Xid from the same GPU is one storm whatever process it names; a line of no known kind has
    only its text to say what it is, so two such texts are two faults."""
    kmsg, state = tmp_path / "kmsg", tmp_path / "state"
    state.mkdir()
    train = "NVRM: Xid (PCI:0000:04:00): 13, pid=1234, name=train.py, Graphics Exception"
    other = "NVRM: Xid (PCI:0000:04:00): 13, pid=99, name=eval.py, Graphics Exception"
    first = "NVRM: Xid (PCI:0000:05:00): 4294967296, first"  # a code out of range: a fault of no known kind
    second = "NVRM: Xid (PCI:0000:05:00): 4294967296, second"
    lines = [train, other, train, first, second, first]
    kmsg.write_text("".join(f"3,{seq},{seq},-;{line}\n" for seq, line in enumerate(lines, 1)))
    p = producer(nc.jetstream(), kmsg, state, identity, storm_window_s=3600)  # only the stop closes a window
    await run_until(p, lambda: p.records_read == 6)
    events = await kernel_events(nc)
    assert [(e.seq, e.count, e.kind) for e in events] == [
        (1, 1, "xid"), (3, 2, "xid"), (4, 1, "other_fault"), (5, 1, "other_fault"), (6, 1, "other_fault"),
    ]  # fmt: skip
    assert (p.events_published, p.lines_published) == (5, 6)


async def test_numbers_the_wire_cannot_hold_are_replaced_and_those_it_can_are_kept_to_the_last(
    nc: NATS, tmp_path: Path, identity: NodeIdentity
) -> None:
    """The wire's numbers are Int64: a record's seq, time or monotonic time past that is unknown (-1, when
    read, 0), one at the edges (0, 2**63-1) is the record's own."""
    kmsg, state = tmp_path / "kmsg", tmp_path / "state"
    state.mkdir()
    boot_ns = MAX_I64 - 1_000_000  # record times are boot + usec: usec 1000 is the last time the wire holds
    late = NodeIdentity(identity.cluster, identity.node, identity.machine_id, identity.boot_id, boot_ns)
    xid = "NVRM: Xid (PCI:0000:{bus}:00): 79, pid=1, name=a, GPU has fallen off the bus."
    records = [(0, 0, "01"), (MAX_I64, 1000, "02"), (MAX_I64 + 1, MAX_I64, "03"), (MAX_I64 + 2, MAX_I64 + 1, "04")]
    kmsg.write_text("".join(f"3,{seq},{usec},-;{xid.format(bus=bus)}\n" for seq, usec, bus in records))
    before = now_ns()
    p = producer(nc.jetstream(), kmsg, state, late)
    await run_until(p, lambda: p.records_read == 4 and p.events_published == 4)
    events = sorted(await kernel_events(nc), key=lambda e: e.pci_bus_id or "")
    assert [(e.seq, e.monotonic_us) for e in events] == [(0, 0), (MAX_I64, 1000), (-1, MAX_I64), (-1, 0)]
    assert [e.time for e in events[:2]] == [boot_ns, MAX_I64]
    assert all(before <= e.time <= now_ns() for e in events[2:]), "past the wire's range: the time it was read"


class Recording:
    """A kmsg source that notes how long the producer let each read wait, and the cursor it had saved."""

    def __init__(self, source: KmsgSource, cursor_path: Path) -> None:
        self.source, self.name, self.cursor_path = source, source.name, cursor_path
        self.timeouts: list[float | None] = []
        self.cursors: list[Cursor | None] = []

    def open(self, resume: Cursor | None) -> tuple[str, int | str | None]:
        return self.source.open(resume)

    async def read(self, stop: asyncio.Event, timeout: float | None) -> list[LogRecord | Unusable]:
        self.timeouts.append(timeout)
        self.cursors.append(load_cursor(self.cursor_path))
        return await self.source.read(stop, timeout)

    def close(self) -> None:
        self.source.close()


async def test_the_producer_sleeps_on_the_source_unless_a_storm_window_or_a_cursor_to_save_needs_it(
    nc: NATS, tmp_path: Path, identity: NodeIdentity
) -> None:
    """No storm, cursor saved: wait for the source however long. A storm window: wake at half of it to
    close it on time. A cursor that could not be saved: try again every 5 s (RETRY_SAVE_S), records or not."""
    js = nc.jetstream()

    async def publish(items: list[tuple[str, str, bytes]]) -> None:
        await bus.publish_batch(js, items)

    line = "NVRM: Xid (PCI:0000:04:00): 79, pid=1, name=a, GPU has fallen off the bus."
    for case, writable in (("saved", True), ("unsaved", False)):
        kmsg, state = tmp_path / f"{case}.kmsg", tmp_path / f"{case}.state"
        kmsg.write_text("")
        if writable:
            state.mkdir()
        else:
            state.write_text("")  # a file where the data dir should be: no cursor can be saved there
        source = Recording(KmsgSource(kmsg, identity, poll_interval=0.01), state / "kmsg.cursor")
        p = KernelLogProducer(source, identity, state, publish, storm_window_s=60)
        assert p.open().available and bool(p.cannot_persist) is not writable
        with kmsg.open("a") as f:  # read at the producer's first wake-up: a storm opens
            f.write(f"3,1,1,-;{line}\n")
        await run_until(p, lambda: p.records_read == 1 and len(source.timeouts) >= 2)  # noqa: B023
        first, then = source.timeouts[:2]
        assert (first, then) == ((None, 30.0) if writable else (5.0, 5.0)), case


async def test_a_stop_when_the_bus_went_away_returns_within_its_bound_and_keeps_the_storms_count(
    nc: NATS, tmp_path: Path, identity: NodeIdentity
) -> None:
    kmsg, state = tmp_path / "kmsg", tmp_path / "state"
    state.mkdir()
    line = "NVRM: Xid (PCI:0000:0b:00): 79, pid=1, name=a, GPU has fallen off the bus."
    kmsg.write_text("".join(f"3,{seq},{seq},-;{line}\n" for seq in range(1, 51)))
    js = nc.jetstream()
    p = producer(js, kmsg, state, identity, storm_window_s=3600)
    stop = asyncio.Event()
    task = asyncio.create_task(p.run(stop))
    try:
        async with asyncio.timeout(10):  # the storm's first line is acknowledged, the other 49 are held
            while (c := load_cursor(p.cursor_path)) is None or c.position != 50 or c.unacked:
                await asyncio.sleep(0.02)
        await js.delete_stream(subjects.EVENTS.name)  # the summary the stop owes has nowhere to go
        stop.set()
        async with asyncio.timeout(10):  # the stop's publish gives up after 5 s
            await task
    finally:
        task.cancel()
        p.source.close()
    await bus.provision(js)
    again = producer(js, kmsg, state, identity)
    await run_until(again, lambda: (c := load_cursor(again.cursor_path)) is not None and c.unacked == [])
    assert [(e.seq, e.count) for e in await kernel_events(nc)] == [(50, 49)]


async def test_a_replayed_batch_once_acknowledged_moves_the_cursor_before_the_source_is_read_again(
    nats_url: str, tmp_path: Path, identity: NodeIdentity
) -> None:
    """A kmsg read may sleep for hours: the cursor must already say where to resume, not the batch again."""
    kmsg, state = tmp_path / "kmsg", tmp_path / "state"
    state.mkdir()
    line = "NVRM: Xid (PCI:0000:{bus}:00): 79, pid=1, name=a, GPU has fallen off the bus."
    kmsg.write_text("".join(f"3,{seq},{seq},-;{line.format(bus=f'{seq:02x}')}\n" for seq in range(1, 4)))
    nc = await bus.connect(nats_url, "test")
    try:
        js = nc.jetstream()  # no stream yet: the batch stays in the cursor, unacknowledged
        first = producer(js, kmsg, state, identity)
        await run_until(first, lambda: first.records_read == 3)
        assert (c := load_cursor(first.cursor_path)) is not None and len(c.unacked) == 3
        await bus.provision(js)

        async def publish(items: list[tuple[str, str, bytes]]) -> None:
            await bus.publish_batch(js, items)

        source = Recording(KmsgSource(kmsg, identity, poll_interval=0.01), first.cursor_path)
        again = KernelLogProducer(source, identity, state, publish)
        assert again.open().available
        await run_until(again, lambda: bool(source.cursors))
        assert source.cursors[0] == Cursor(identity.boot_id, 3, [])
    finally:
        await nc.close()


def test_the_cursors_data_dir_is_made_parents_and_all_and_a_change_in_whether_it_can_be_saved_is_said_once(
    tmp_path: Path, identity: NodeIdentity
) -> None:
    async def publish(items: list[tuple[str, str, bytes]]) -> None:
        raise AssertionError("nothing to publish")

    kmsg, state = tmp_path / "kmsg", tmp_path / "var" / "lib" / "gpuhealth"  # not there yet
    kmsg.write_text("")
    p = KernelLogProducer(KmsgSource(kmsg, identity), identity, state, publish)
    said: list[str] = []
    p.on_change = lambda: said.append(p.cannot_persist)
    try:
        assert p.open().available and p.cannot_persist == ""
        assert list(state.iterdir()) == [], "the probe of the data dir is not left behind"
        state.rmdir()
        state.write_text("")  # a file where the data dir should be
        p.open()
        state.unlink()
        p.open()
        p.open()
    finally:
        p.source.close()
    assert said == [f"cannot persist the cursor: File exists ({state})", ""]
