"""One poison message never stalls a stage: a real nats-server, the real ClickHouse engine, the real classifier.

A message a consumer cannot hold is dead-lettered with its reason and the messages after it are handled;
a stage whose store or bus is away holds every message instead."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

from gpuhealth import bus, subjects
from gpuhealth.config import NodeIdentity
from gpuhealth.consumer import Consumer
from gpuhealth.events import (
    DLQ_DECODER,
    EVENT_DECODER,
    DeadLetter,
    Event,
    GpuInfo,
    GpuProcess,
    Incident,
    Inventory,
    KernelEvent,
    MetricBatch,
    encode,
)
from rules.service import RulesService
from sinks.clickhouse import Store
from sinks.service import SinkService
from tests.integration.test_kmsg_producer import run_producer

T0 = 1_763_700_000_000_000_000
NOW = time.time_ns() // 10**9 * 10**9  # metrics older than their TTL (180 days) are dropped as they are inserted
POISON = (2**40, 2**63, 2**64 - 1)


def kernel_event(i: int, node: str = "node-1", pci: str = "0000:04:00.0") -> KernelEvent:
    return KernelEvent(
        id=f"ev-{i:04d}",
        time=T0 + i * 1000,
        cluster="c",
        node=node,
        boot_id="b",
        source="kmsg",
        component="accelerator-nvidia-error-xid",
        kind="xid",
        xid=79,
        pci_bus_id=pci,
        message=f"NVRM: Xid (PCI:0000:04:00): 79 #{i}",
        seq=i,
    )


def metric_batch(i: int) -> MetricBatch:
    return MetricBatch(
        id=f"mb-{i:04d}",
        time=NOW + i,
        cluster="c",
        node="node-1",
        source="nvml",
        component="gpu",
        entity="0000:04:00.0",
        values={"temperature_gpu_c": 40.0},
        processes=[GpuProcess(pid=10, name="python", used_memory_bytes=1 << 30)],
    )


def incident(i: int) -> Incident:
    return Incident(
        id=f"inc-{i:04d}",
        time=T0 + i,
        cluster="c",
        node="node-1",
        source="rules",
        component="xid",
        entity="0000:04:00.0",
        code="79",
        severity="Fatal",
        reason="r",
        count=1,
        first=T0,
        last=T0 + i,
    )


def inventory(i: int) -> Inventory:
    return Inventory(
        id=f"inv-{i:04d}",
        time=T0 + i,
        cluster="c",
        node="node-1",
        source="nvml",
        component="inventory",
        gpus=[GpuInfo(index=0, pci_bus_id="0000:04:00.0", uuid="GPU-1")],
    )


def tampered(msg: msgspec.Struct, change: Callable[[dict[str, Any]], None]) -> bytes:
    """The message as it travels, with one value changed: what a buggy or hostile producer could send."""
    wire = msgspec.msgpack.decode(encode(msg))
    change(wire)
    return msgspec.msgpack.encode(wire)


def setter(path: str, value: object) -> Callable[[dict[str, Any]], None]:
    def change(wire: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = wire
        for p in parents:
            node = node[int(p)] if p.isdigit() else node[p]
        node[last] = value

    return change


def count(store: Store, table: str, where: str = "1") -> int:
    return int(store.client.query(f"SELECT count() FROM {store.database}.{table} WHERE {where}").result_rows[0][0])


async def until(predicate: Callable[[], bool], timeout: float) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.1)


async def letters(js: JetStreamContext, n: int) -> list[DeadLetter]:
    sub = await js.pull_subscribe("gpuhealth.v1.dlq.>", durable="poison-reader", stream=subjects.DLQ.name)
    out: list[DeadLetter] = []
    async with asyncio.timeout(10):
        while len(out) < n:
            out += [DLQ_DECODER.decode(m.data) for m in await sub.fetch(n - len(out), timeout=5)]
    return out


async def test_values_the_store_cannot_hold_are_dead_lettered_and_the_sink_keeps_going(nc: NATS, store: Store) -> None:
    js = nc.jetstream()
    # (subject, message id, payload, refused): every integer the store holds, at 2^40, 2^63 and 2^64-1. Sequence
    # numbers and times of 2^40 are valid (Int64, DateTime64(9) in 1970) and stored; 2^64-1 bytes of GPU memory
    # fit UInt64; the rest is out of the column's range.
    cases: list[tuple[str, str, bytes, bool]] = []
    n = 0
    for field in ("xid", "sxid", "count", "pid", "seq", "time", "monotonic_us"):
        for v in POISON:
            n += 1
            refused = field not in ("seq", "time", "monotonic_us") or v >= 2**63
            cases.append(
                (
                    subjects.event_subject("node-1", "kmsg"),
                    f"ev-{n:04d}",
                    tampered(kernel_event(n), setter(field, v)),
                    refused,
                )
            )
    for path in ("processes.0.pid", "processes.0.used_memory_bytes"):
        for v in (*POISON, -1):
            n += 1
            refused = path.endswith("pid") or v < 0
            cases.append(
                (
                    subjects.metric_subject("node-1", "nvml"),
                    f"mb-{n:04d}",
                    tampered(metric_batch(n), setter(path, v)),
                    refused,
                )
            )
    for field in ("seq", "count"):
        for v in (*POISON, -1):
            n += 1
            refused = field == "seq" or v < 0
            cases.append(
                (
                    subjects.incident_subject("node-1", "xid"),
                    f"inc-{n:04d}",
                    tampered(incident(n), setter(field, v)),
                    refused,
                )
            )
    for v in POISON:
        n += 1
        cases.append(
            (
                subjects.inventory_subject("node-1"),
                f"inv-{n:04d}",
                tampered(inventory(n), setter("gpus.0.index", v)),
                True,
            )
        )
    n += 1  # a control character where a PCI id belongs
    cases.append(
        (
            subjects.event_subject("node-1", "kmsg"),
            f"ev-{n:04d}",
            tampered(kernel_event(n), setter("pci_bus_id", "0000:04:00.0\x1f")),
            True,
        )
    )
    good = [kernel_event(i) for i in range(500, 500 + len(cases))]
    items = []
    for (subject, mid, data, _), ev in zip(cases, good, strict=True):  # each poison one followed by a good one
        items += [(subject, mid, data), (subjects.event_subject(ev.node, "kmsg"), ev.id, encode(ev))]
    await bus.publish_batch(js, items)

    refused = sum(c[3] for c in cases)
    stored_events = len(good) + sum(1 for c in cases if c[1].startswith("ev-") and not c[3])
    sink = SinkService(nc, js, store, linger_s=0.2, metrics_linger_s=0.2)
    stop = asyncio.Event()
    task = asyncio.create_task(sink.run(stop))
    try:
        await until(lambda: count(store, "events") == stored_events and count(store, "dead_letters") == refused, 30)
        # The stage keeps going: what is published after the poison is stored within seconds.
        later = [kernel_event(i) for i in range(900, 910)]
        await bus.publish_batch(js, [(subjects.event_subject(e.node, "kmsg"), e.id, encode(e)) for e in later])
        await until(lambda: count(store, "events", "id >= 'ev-0900'") == 10, 5)
        stored = {
            t: sum(1 for c in cases if c[1].startswith(p) and not c[3])
            for t, p in (("metrics", "mb-"), ("gpu_processes", "mb-"), ("incidents", "inc-"))
        }
        await until(lambda: {t: count(store, t) for t in stored} == stored, 5)
    finally:
        stop.set()
        await task
    reasons = store.client.query(f"SELECT reason FROM {store.database}.dead_letters").result_rows
    assert all(r.startswith("undecodable: Expected") for (r,) in reasons), reasons
    assert any("`$.pci_bus_id`" in r for (r,) in reasons) and any("`$.xid`" in r for (r,) in reasons)


async def test_a_control_character_in_a_pci_id_is_dead_lettered_by_the_rules_which_keep_going(nc: NATS) -> None:
    js = nc.jetstream()
    bad = kernel_event(1, node="gpu-1", pci="0000:04:00.0")
    await bus.publish_batch(
        js,
        [
            (subjects.event_subject("gpu-1", "kmsg"), bad.id, tampered(bad, setter("pci_bus_id", "0000:04:00.0\x1f"))),
            (subjects.event_subject("gpu-2", "kmsg"), "ev-0002", encode(kernel_event(2, node="gpu-2"))),
        ],
    )
    service = RulesService(js)
    stop = asyncio.Event()
    task = asyncio.create_task(service.run(stop))
    try:
        await until(lambda: service.states_published >= 1, 10)
        later = kernel_event(3, node="gpu-3")
        await bus.publish_batch(js, [(subjects.event_subject("gpu-3", "kmsg"), later.id, encode(later))])
        await until(lambda: service.states_published >= 2, 5)
    finally:
        stop.set()
        await task
    [letter] = await letters(js, 1)
    assert letter.stage == "rules" and "`$.pci_bus_id`" in letter.reason
    assert EVENT_DECODER.decode(tampered(bad, setter("pci_bus_id", "0000:04:00.0"))) == bad  # the letter is whole
    assert b"\x1f" in letter.data


async def test_an_xid_line_with_a_code_out_of_range_is_stored_as_a_fault_without_a_code(
    nc: NATS, store: Store, tmp_path: Path, identity: NodeIdentity
) -> None:
    js = nc.jetstream()
    kmsg = tmp_path / "kmsg"
    kmsg.write_text(
        "3,1,1000,-;NVRM: Xid (PCI:0000:3b:00): 1099511627776, pid=1234, name=python, Ch 00000008\n"
        "3,2,2000,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"
    )
    (tmp_path / "state").mkdir()
    await run_producer(js, kmsg, identity, tmp_path / "state", last_seq=2)
    sink = SinkService(nc, js, store, linger_s=0.2, metrics_linger_s=0.2)
    stop = asyncio.Event()
    task = asyncio.create_task(sink.run(stop))
    try:
        await until(lambda: count(store, "events") == 2, 10)
    finally:
        stop.set()
        await task
    rows = store.client.query(f"SELECT kind, xid, pci_bus_id, message FROM {store.database}.events ORDER BY seq")
    assert [r[:3] for r in rows.result_rows] == [("other_fault", None, "0000:3b:00.0"), ("xid", 79, "0000:3b:00.0")]
    assert "1099511627776" in rows.result_rows[0][3]
    assert count(store, "dead_letters") == 0


def status_consumer(js: JetStreamContext, handle: Callable[[list[Event]], Any], **kw: Any) -> Consumer[Event]:
    return Consumer(
        js,
        stream=subjects.EVENTS.name,
        durable="poison",
        filter_subject="gpuhealth.v1.event.>",
        decoder=EVENT_DECODER,
        stage="test",
        handle=handle,
        **kw,
    )


async def test_a_message_the_stage_fails_on_is_isolated_and_dead_lettered_the_rest_handled_in_order(nc: NATS) -> None:
    js = nc.jetstream()
    events = [kernel_event(i) for i in range(40)]
    await bus.publish_batch(js, [(subjects.event_subject(e.node, "kmsg"), e.id, encode(e)) for e in events])
    handled: list[str] = []
    stop = asyncio.Event()

    async def handle(batch: list[Event]) -> None:
        if any(e.id == "ev-0017" for e in batch):  # decodes, but this stage cannot use it
            raise ValueError("too many values to unpack")
        handled.extend(e.id for e in batch)
        if len(handled) == 39:
            stop.set()

    consumer = status_consumer(js, handle, batch=40)
    async with asyncio.timeout(10):
        await consumer.run(stop)
    assert handled == [e.id for e in events if e.id != "ev-0017"]  # each once, in order
    [letter] = await letters(js, 1)
    assert letter.stage == "test" and "ValueError: too many values to unpack" in letter.reason
    assert EVENT_DECODER.decode(letter.data) == events[17]


@pytest.mark.parametrize("away", [ConnectionRefusedError(111, "Connection refused"), TimeoutError("timed out")])
async def test_a_store_that_is_away_holds_every_message_and_dead_letters_none(nc: NATS, away: Exception) -> None:
    js = nc.jetstream()
    events = [kernel_event(i) for i in range(5)]
    await bus.publish_batch(js, [(subjects.event_subject(e.node, "kmsg"), e.id, encode(e)) for e in events])
    handled: list[str] = []
    failures = 0
    stop = asyncio.Event()

    async def handle(batch: list[Event]) -> None:
        nonlocal failures
        if failures < 4:  # away for longer than the poison rule's tries, with every message
            failures += 1
            raise RuntimeError("insert failed") from away
        handled.extend(e.id for e in batch)
        stop.set()

    consumer = status_consumer(js, handle)
    async with asyncio.timeout(30):
        await consumer.run(stop)
    assert handled == [e.id for e in events] and consumer.dead_lettered == 0
    assert (await js.stream_info(subjects.DLQ.name)).state.messages == 0


async def test_a_stream_without_a_leader_or_without_room_is_an_outage_not_poison(nc: NATS) -> None:
    """Found on a 3-server cluster with the stream's leader killed: the rules' outputs were refused with 503
    (no stream answered) and the rules dead-lettered real Xid events as poison. Refusals for want of a
    stream or of room are the bus's state, never a message's fault: held, then handled."""
    js = nc.jetstream()
    events = [kernel_event(i) for i in range(5)]
    await bus.publish_batch(js, [(subjects.event_subject(e.node, "kmsg"), e.id, encode(e)) for e in events])
    handled: list[str] = []
    stop = asyncio.Event()
    tries = 0

    async def handle(batch: list[Event]) -> None:
        nonlocal tries
        tries += 1
        # The stage's own output goes to a subject no stream takes until the 8th try (by the 7th, the poison
        # search had dead-lettered the first message): the server answers 503, as while a stream elects its leader.
        if tries == 8:
            await js.add_stream(name="LATE", subjects=["late.>"])
        await bus.publish_batch(js, [("late.out", f"out-{e.id}", b"x") for e in batch])
        handled.extend(e.id for e in batch)
        stop.set()

    consumer = status_consumer(js, handle)
    async with asyncio.timeout(60):
        await consumer.run(stop)
    assert handled == [e.id for e in events] and consumer.dead_lettered == 0
    assert (await js.stream_info(subjects.DLQ.name)).state.messages == 0


def test_a_full_stream_is_an_outage() -> None:
    from gpuhealth.consumer import is_outage
    from gpuhealth.jetstream import StoreFullError

    assert is_outage(RuntimeError("publishing the outputs failed")) is False
    assert is_outage(StoreFullError("JetStream refused 3 of 3 messages: maximum bytes exceeded", ["GPUHEALTH_HEALTH"]))
