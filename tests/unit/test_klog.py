"""The kernel log pipeline's promises on a real nats-server: the cursor passes a record only once
JetStream acknowledged its event, and a record that is no record is dead-lettered, never dropped."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path

from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

from gpuhealth import bus, subjects
from gpuhealth.config import NodeIdentity
from gpuhealth.events import DLQ_DECODER, EVENT_DECODER, DeadLetter, KernelEvent
from producers.klog import Cursor, KernelLogProducer, LogRecord, load_cursor
from producers.kmsg import KmsgSource, append_record

XID = "NVRM: Xid (PCI:0000:{bus}:00): 79, pid=1, name=a, GPU has fallen off the bus."


def write_faults(path: Path, n: int) -> None:
    """Records 1..n: an Xid 79 on GPU bus n each (no storm: every one is its own event)."""
    with path.open("a") as f:
        f.writelines(f"3,{seq},{seq * 1000},-;{XID.format(bus=f'{seq:02x}')}\n" for seq in range(1, n + 1))


def producer(
    js: JetStreamContext, kmsg: Path, state: Path, identity: NodeIdentity, storm_window_s: float = 1.0
) -> KernelLogProducer:
    async def publish(items: list[tuple[str, str, bytes]]) -> None:
        await bus.publish_batch(js, items, timeout=2.0)

    p = KernelLogProducer(KmsgSource(kmsg, identity, poll_interval=0.01), identity, state, publish,
                          storm_window_s=storm_window_s)  # fmt: skip
    assert p.open().available
    return p


async def run_until(p: KernelLogProducer, done: Callable[[], bool]) -> None:
    """Run the producer until ``done`` (10 s at most), then stop it as SIGTERM does."""
    stop = asyncio.Event()
    task = asyncio.create_task(p.run(stop))
    try:
        async with asyncio.timeout(10):
            while not done():
                await asyncio.sleep(0.02)
    finally:
        stop.set()
        async with asyncio.timeout(10):  # a stop is honoured promptly, whatever the bus does
            await task
        p.source.close()


async def fetch_all(nc: NATS, stream: subjects.StreamSpec) -> list[tuple[str, bytes]]:
    sub = await nc.jetstream().pull_subscribe(stream.subjects[0], stream=stream.name)
    out: list[tuple[str, bytes]] = []
    while True:
        try:
            msgs = await sub.fetch(100, timeout=0.5)
        except TimeoutError:
            return out
        out += [(m.subject, m.data) for m in msgs]


async def test_a_batch_jetstream_never_acknowledged_is_delivered_after_a_restart_once(
    nats_url: str, tmp_path: Path, identity: NodeIdentity
) -> None:
    kmsg, state = tmp_path / "kmsg", tmp_path / "state"
    state.mkdir()
    write_faults(kmsg, 4)
    nc = await bus.connect(nats_url, "test")
    try:
        js = nc.jetstream()  # no stream yet: every publish is refused, nothing is acknowledged
        first = producer(js, kmsg, state, identity)
        await run_until(first, lambda: first.records_read == 4)
        cursor = load_cursor(first.cursor_path)
        assert cursor is not None and len(cursor.unacked) == 4, "the batch in flight is kept for the restart"

        # Restarted with the bus still refusing: the replay waits for it, yet a SIGTERM stops it.
        waiting = producer(js, kmsg, state, identity)
        await run_until(waiting, lambda: True)
        assert load_cursor(waiting.cursor_path) == cursor

        await bus.provision(js)
        second = producer(js, kmsg, state, identity)
        await run_until(second, lambda: (c := load_cursor(second.cursor_path)) is not None and c.unacked == [])
        assert second.records_read == 0, "every record was read before: the restart replays, it does not re-read"
        events = [EVENT_DECODER.decode(d) for _, d in await fetch_all(nc, subjects.EVENTS)]
        assert sorted((e.seq, e.pci_bus_id) for e in events if isinstance(e, KernelEvent)) == [
            (1, "0000:01:00.0"), (2, "0000:02:00.0"), (3, "0000:03:00.0"), (4, "0000:04:00.0"),
        ]  # fmt: skip
        assert load_cursor(second.cursor_path) == Cursor(identity.boot_id, 4, [])
    finally:
        await nc.close()


async def test_a_malformed_record_is_dead_lettered_with_its_bytes_and_why(
    nc: NATS, tmp_path: Path, identity: NodeIdentity
) -> None:
    kmsg, state = tmp_path / "kmsg", tmp_path / "state"
    state.mkdir()
    kmsg.write_bytes(b"hello world\n" + f"3,2,2000,-;{XID.format(bus='05')}\nhello again\n".encode())
    p = producer(nc.jetstream(), kmsg, state, identity)
    await run_until(p, lambda: (c := load_cursor(p.cursor_path)) is not None and c.position == 2 and not c.unacked)
    assert (p.unusable, p.records_read) == (2, 1)
    dead = await fetch_all(nc, subjects.DLQ)
    assert {subject for subject, _ in dead} == {"gpuhealth.v1.dlq.node-1.agent_kmsg"}
    letters = [DLQ_DECODER.decode(data) for _, data in dead]
    assert all(isinstance(letter, DeadLetter) for letter in letters)
    assert sorted((d.stage, d.subject, d.data) for d in letters if isinstance(d, DeadLetter)) == [
        ("agent.kmsg", "kmsg", b"hello again"), ("agent.kmsg", "kmsg", b"hello world"),
    ]  # fmt: skip
    assert all("not a kmsg record" in d.reason for d in letters if isinstance(d, DeadLetter))
    events = [EVENT_DECODER.decode(d) for _, d in await fetch_all(nc, subjects.EVENTS)]
    assert [(e.seq, e.pci_bus_id) for e in events if isinstance(e, KernelEvent)] == [(2, "0000:05:00.0")]


async def test_a_reader_waiting_on_a_fifo_wakes_for_a_record_and_gives_up_at_its_timeout(
    tmp_path: Path, identity: NodeIdentity
) -> None:
    path = tmp_path / "kmsg.fifo"
    os.mkfifo(path)
    src = KmsgSource(path, identity)
    src.open(None)
    try:
        async with asyncio.timeout(5):
            assert await src.read(asyncio.Event(), timeout=0.1) == [], "nothing came: back at the timeout"
            waiting = asyncio.create_task(src.read(asyncio.Event(), timeout=None))
            await asyncio.sleep(0.1)  # the reader is asleep on the FIFO, with no timeout
            seq = append_record(path, "NVRM: Xid (PCI:0000:04:00): 79", 3)
            records = await waiting
        assert [(r.seq, r.message) for r in records if isinstance(r, LogRecord)] == [
            (seq, "NVRM: Xid (PCI:0000:04:00): 79")
        ]
    finally:
        src.close()


async def test_a_clean_stop_publishes_the_count_a_storm_holds_before_the_cursor_passes_it(
    nc: NATS, tmp_path: Path, identity: NodeIdentity
) -> None:
    kmsg, state = tmp_path / "kmsg", tmp_path / "state"
    state.mkdir()
    line = XID.format(bus="0b")
    kmsg.write_text("".join(f"3,{seq},{seq},-;{line}\n" for seq in range(1, 51)))
    js = nc.jetstream()

    async def publish(items: list[tuple[str, str, bytes]]) -> None:
        await bus.publish_batch(js, items)

    # A window far longer than the test: only the stop can close it.
    p = KernelLogProducer(KmsgSource(kmsg, identity, poll_interval=0.01), identity, state, publish,
                          storm_window_s=3600)  # fmt: skip
    assert p.open().available
    await run_until(p, lambda: p.records_read == 50)
    events = [EVENT_DECODER.decode(d) for _, d in await fetch_all(nc, subjects.EVENTS)]
    assert sum(e.count for e in events if isinstance(e, KernelEvent)) == 50
    assert load_cursor(p.cursor_path) == Cursor(identity.boot_id, 50, [])


async def test_benign_records_move_the_cursor_too(nc: NATS, tmp_path: Path, identity: NodeIdentity) -> None:
    kmsg, state = tmp_path / "kmsg", tmp_path / "state"
    state.mkdir()
    kmsg.write_text("".join(f"6,{seq},{seq},-;eth0: link becomes ready\n" for seq in range(1, 4)))
    p = producer(nc.jetstream(), kmsg, state, identity)
    await run_until(p, lambda: p.records_read == 3 and load_cursor(p.cursor_path) is not None)
    assert load_cursor(p.cursor_path) == Cursor(identity.boot_id, 3, []), "a restart does not read them again"


async def test_a_stop_with_the_bus_down_keeps_a_storms_count_for_the_restart(
    nats_url: str, tmp_path: Path, identity: NodeIdentity
) -> None:
    kmsg, state = tmp_path / "kmsg", tmp_path / "state"
    state.mkdir()
    kmsg.write_text("".join(f"3,{seq},{seq},-;{XID.format(bus='0b')}\n" for seq in range(1, 51)))
    nc = await bus.connect(nats_url, "test")
    try:
        js = nc.jetstream()  # no stream: nothing is acknowledged, before the stop or at it
        first = producer(js, kmsg, state, identity, storm_window_s=3600)
        await run_until(first, lambda: first.records_read == 50)  # the stop's flush gives up after 5 s
        await bus.provision(js)
        second = producer(js, kmsg, state, identity)
        await run_until(second, lambda: (c := load_cursor(second.cursor_path)) is not None and c.unacked == [])
        events = [EVENT_DECODER.decode(d) for _, d in await fetch_all(nc, subjects.EVENTS)]
        assert sum(e.count for e in events if isinstance(e, KernelEvent)) == 50
    finally:
        await nc.close()


async def test_the_same_record_on_two_nodes_or_two_boots_is_three_events(
    nc: NATS, tmp_path: Path, identity: NodeIdentity
) -> None:
    """Nodes powered on in the same second, or a node whose clock starts at the same time every boot,
    print the same record at the same moment: the event ids tell them apart, or JetStream keeps one."""
    kmsg = tmp_path / "kmsg"
    write_faults(kmsg, 2)
    other_node = NodeIdentity(identity.cluster, "node-2", "n" * 32, identity.boot_id, identity.boot_time_ns)
    next_boot = NodeIdentity(identity.cluster, identity.node, identity.machine_id, "boot-b", identity.boot_time_ns)
    for n, who in enumerate((identity, other_node, next_boot)):
        state = tmp_path / f"state{n}"
        state.mkdir()
        p = producer(nc.jetstream(), kmsg, state, who)
        await run_until(p, lambda p=p: (c := load_cursor(p.cursor_path)) is not None and c.position == 2)  # type: ignore[misc]
    events = [EVENT_DECODER.decode(d) for _, d in await fetch_all(nc, subjects.EVENTS)]
    assert sorted((e.node, e.boot_id, e.seq) for e in events) == [
        ("node-1", "boot-a", 1), ("node-1", "boot-a", 2), ("node-1", "boot-b", 1), ("node-1", "boot-b", 2),
        ("node-2", "boot-a", 1), ("node-2", "boot-a", 2),
    ]  # fmt: skip


async def test_an_nvlink_xid_event_carries_the_unit_and_fatality_the_driver_printed(
    nc: NATS, tmp_path: Path, identity: NodeIdentity
) -> None:
    kmsg, state = tmp_path / "kmsg", tmp_path / "state"
    state.mkdir()
    line = "NVRM: Xid (PCI:0009:01:00): 149, NETIR_LINK_EVT  Fatal   XC0 i0 Link 15 (0x0215e5c6 0x0)"
    no_unit = "NVRM: Xid (PCI:0009:02:00): 149, Fatal XC0 i0 Link 15 (0x0215e5c6 0x0)"
    kmsg.write_text(f"3,1,1,-;{line}\n3,2,2,-;{no_unit}\n")
    p = producer(nc.jetstream(), kmsg, state, identity)
    await run_until(p, lambda: (c := load_cursor(p.cursor_path)) is not None and c.position == 2 and not c.unacked)
    events = [EVENT_DECODER.decode(d) for _, d in await fetch_all(nc, subjects.EVENTS)]
    assert sorted((e.seq, e.xid, e.nvlink.subcode, e.nvlink.unit, e.nvlink.fatal)
                  for e in events if isinstance(e, KernelEvent) and e.nvlink is not None) == [
        (1, 149, 33, "NETIR_LINK_EVT", True), (2, 149, 33, "", True),  # no unit printed: none said
    ]  # fmt: skip


async def test_an_event_says_everything_its_record_and_line_said(
    nc: NATS, tmp_path: Path, identity: NodeIdentity
) -> None:
    kmsg, state = tmp_path / "kmsg", tmp_path / "state"
    state.mkdir()
    xid_line = "NVRM: Xid (PCI:0000:04:00): 13, pid=1234, name=train.py, Graphics Exception"
    sxid_line = "nvidia-nvswitch3: SXid (PCI:0000:c8:00.0): 12028, Non-fatal, Link 53 egress non-posted PRIV error"
    kmsg.write_text(f"3,1,5000,-;{xid_line}\n12,2,6000,-;{sxid_line}\n")  # 12: facility 1, level 4
    p = producer(nc.jetstream(), kmsg, state, identity)
    await run_until(p, lambda: (c := load_cursor(p.cursor_path)) is not None and c.position == 2 and not c.unacked)
    events = sorted((EVENT_DECODER.decode(d) for _, d in await fetch_all(nc, subjects.EVENTS)), key=lambda e: e.time)
    t0 = identity.boot_time_ns
    common = {"cluster": "test", "node": "node-1", "machine_id": "m" * 32, "boot_id": "boot-a", "boot_time": t0,
              "source": "kmsg"}  # fmt: skip
    assert events == [
        KernelEvent(id=events[0].id, time=t0 + 5_000_000, component="accelerator-nvidia-error-xid", kind="xid",
                    message=xid_line, seq=1, priority=3, monotonic_us=5000, xid=13, pci_bus_id="0000:04:00.0",
                    pid=1234, process="train.py", **common),  # type: ignore[arg-type]
        KernelEvent(id=events[1].id, time=t0 + 6_000_000, component="accelerator-nvidia-error-sxid", kind="sxid",
                    message=sxid_line, seq=2, priority=4, monotonic_us=6000, sxid=12028, pci_bus_id="0000:c8:00.0",
                    **common),  # type: ignore[arg-type]
    ]  # fmt: skip


def test_opening_says_whether_the_kernel_log_can_be_read_as_this_node_and_boot(
    tmp_path: Path, identity: NodeIdentity
) -> None:
    async def publish(items: list[tuple[str, str, bytes]]) -> None:
        raise AssertionError("nothing to publish")

    (tmp_path / "kmsg").write_text("")
    for path, available in ((tmp_path / "kmsg", True), (tmp_path / "missing", False)):
        status = KernelLogProducer(KmsgSource(path, identity), identity, tmp_path, publish).open()
        assert (status.available, status.component, status.source, status.cluster, status.node, status.machine_id,
                status.boot_id, status.boot_time) == (available, "kernel-log", "kmsg", "test", "node-1", "m" * 32,
                                                      "boot-a", identity.boot_time_ns)  # fmt: skip
        assert str(path) in status.reason and status.id and status.time > identity.boot_time_ns
