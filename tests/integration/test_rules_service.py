"""The rules service on a real nats-server: states on subjects and in KV, restarts that don't re-alert."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import msgspec
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from prometheus_client import CollectorRegistry

from gpuhealth import bus, client, subjects
from gpuhealth.events import (
    HEALTH_DECODER,
    INCIDENT_DECODER,
    Event,
    GpuInfo,
    Incident,
    Inventory,
    KernelEvent,
    SourceStatus,
    encode,
)
from gpuhealth.telemetry import Metrics
from rules.catalog import load
from rules.engine import apply
from rules.limits import IncidentLimits
from rules.limits import parse as parse_limits
from rules.service import RulesService
from rules.state import NodeState

LIMITS = parse_limits()


def xid(i: int, code: int, boot: str = "b1", node: str = "gpu-1") -> KernelEvent:
    return KernelEvent(
        id=f"x{i}",
        time=i * 10**9,
        cluster="c",
        node=node,
        boot_id=boot,
        source="kmsg",
        component="accelerator-nvidia-error-xid",
        kind="xid",
        xid=code,
        pci_bus_id="0000:04:00.0",
        message="m",
    )


async def publish(js: JetStreamContext, events: list[Event]) -> None:
    await bus.publish_batch(js, [(subjects.event_subject(e.node, "kmsg"), e.id, encode(e)) for e in events])


async def run_until(service: RulesService, predicate: Callable[[], bool], timeout: float = 10) -> None:
    stop = asyncio.Event()
    task = asyncio.create_task(service.run(stop))
    try:
        async with asyncio.timeout(timeout):
            while not predicate():
                await asyncio.sleep(0.05)
    finally:
        stop.set()
        await task


async def test_states_reach_the_subject_and_the_bucket(nc: NATS) -> None:
    js = nc.jetstream()
    seen: list[Msg] = []

    async def collect(m: Msg) -> None:
        seen.append(m)

    sub = await nc.subscribe("gpuhealth.v1.health.>", cb=collect)
    await publish(js, [xid(1, 79), xid(2, 79), xid(3, 13, node="gpu-2")])
    service = RulesService(js)
    await run_until(service, lambda: service.states_published >= 2)
    await nc.flush()
    states = await client.health_states(nc)
    assert [(s.node, s.health, s.repair_actions) for s in states] == [
        ("gpu-1", "Unhealthy", ["REBOOT_SYSTEM"]),
        ("gpu-2", "Degraded", ["CHECK_USER_APP_AND_GPU"]),
    ]
    decoded = [HEALTH_DECODER.decode(m.data) for m in seen]
    assert sorted(m.subject for m in seen) == [
        "gpuhealth.v1.health.gpu-1.accelerator-nvidia-error-xid",
        "gpuhealth.v1.health.gpu-2.accelerator-nvidia-error-xid",
    ]
    assert {d.node for d in decoded} == {"gpu-1", "gpu-2"}
    await sub.unsubscribe()


async def test_a_restarted_service_resumes_without_realerting(nc: NATS) -> None:
    js = nc.jetstream()
    await publish(js, [xid(1, 79)])
    first = RulesService(js)
    await run_until(first, lambda: first.states_published == 1)

    # A new process: engine state comes back from KV, the same fault again is no news,
    # and the reboot still clears what the first instance set.
    await publish(js, [xid(2, 79)])
    second = RulesService(js)
    stream_before = (await js.stream_info(subjects.HEALTH.name)).state.messages
    await publish(
        js,
        [
            SourceStatus(
                id="s",
                time=3 * 10**9,
                cluster="c",
                node="gpu-1",
                boot_id="b2",
                source="kmsg",
                component="kernel-log",
                available=True,
            )
        ],
    )
    await run_until(second, lambda: second.states_published >= 2)
    states = {(s.component, s.entity): s for s in await client.health_states(nc)}
    assert states[("accelerator-nvidia-error-xid", "0000:04:00.0")].health == "Healthy"
    assert states[("kernel-log", "gpu-1")].health == "Healthy"
    assert (await js.stream_info(subjects.HEALTH.name)).state.messages == stream_before + 2


def history(nodes: int, per_node: int) -> list[Event]:
    """Each node: Xids on one GPU over two boots, so states open, clear on the reboot and reopen."""
    out: list[Event] = []
    for n in range(nodes):
        for i in range(per_node):
            boot = "b1" if i < per_node // 2 else "b2"
            out.append(xid(n * 1000 + i, (79, 13, 48, 31)[i % 4], boot=boot, node=f"node-{n:03d}"))
    return out


def expected_states(events: list[Event]) -> dict[tuple[str, str, str], tuple[str, list[str]]]:
    states: dict[str, NodeState] = {}
    for ev in events:
        states[ev.node], _ = apply(states.get(ev.node), ev, load())
    return {(node, cs.component, cs.entity): (cs.health, list(cs.actions))
            for node, st in states.items() for cs in st.states.values()}  # fmt: skip


async def published_states(nc: NATS) -> dict[tuple[str, str, str], tuple[str, list[str]]]:
    return {(h.node, h.component, h.entity): (h.health, list(h.repair_actions)) for h in await client.health_states(nc)}


async def test_two_instances_share_the_nodes_and_agree_with_one_engine(nc: NATS) -> None:
    js = nc.jetstream()
    events = history(nodes=40, per_node=6)
    a, b = RulesService(js, instance=0, instances=2), RulesService(js, instance=1, instances=2)
    await a.start()
    await publish(js, events)
    want = expected_states(events)
    stop = asyncio.Event()
    seen: dict[str, set[str]] = {"a": set(), "b": set()}
    for name, svc in (("a", a), ("b", b)):
        handle = svc.handle_events

        async def spy(evs: list[Event], seqs: list[int], handle: Callable[..., Any] = handle, name: str = name) -> None:
            seen[name].update(e.node for e in evs)
            await handle(evs, seqs)

        svc.handle_events = spy  # type: ignore[method-assign]
    tasks = [asyncio.create_task(s.run(stop)) for s in (a, b)]
    try:
        async with asyncio.timeout(20):
            while await published_states(nc) != want:
                await asyncio.sleep(0.1)
    finally:
        stop.set()
        await asyncio.gather(*tasks)
    assert seen["a"] and seen["b"] and not seen["a"] & seen["b"]  # every node on exactly one instance
    assert len(seen["a"] | seen["b"]) == 40


async def test_a_service_restarted_mid_stream_ends_where_an_uninterrupted_run_does(nc: NATS) -> None:
    js = nc.jetstream()
    events = history(nodes=5, per_node=40)
    first = RulesService(js, batch=10)
    await first.start()
    await publish(js, events)
    # Stop the first process part-way (its handler stops it after 60 events), then let a second
    # one, with the engine state from KV, finish the stream.
    stop_first = asyncio.Event()
    handled = 0
    handle = first.handle_events

    async def counting(evs: list[Event], seqs: list[int]) -> None:
        nonlocal handled
        await handle(evs, seqs)
        handled += len(evs)
        if handled >= 60:
            stop_first.set()

    first.handle_events = counting  # type: ignore[method-assign]
    async with asyncio.timeout(10):
        await first.run(stop_first)
    assert 60 <= handled < len(events)
    second = RulesService(js)
    want = expected_states(events)

    async def done() -> bool:
        return await published_states(nc) == want

    stop = asyncio.Event()
    task = asyncio.create_task(second.run(stop))
    try:
        async with asyncio.timeout(20):
            while not await done():
                await asyncio.sleep(0.1)
    finally:
        stop.set()
        await task
    assert second.states_published > 0  # the second instance did its part


async def test_going_from_one_instance_to_two_continues_where_the_one_stopped(nc: NATS) -> None:
    js = nc.jetstream()
    events = history(nodes=10, per_node=10)
    early, late = events[::2], events[1::2]  # every node has events in both halves
    one = RulesService(js)
    await one.start()
    await publish(js, early)
    await run_until(one, lambda: one.states_published >= len(expected_states(early)))
    info = await js.consumer_info(subjects.EVENTS.name, "rules")
    assert info.num_pending == 0 and info.num_ack_pending == 0

    await publish(js, late)
    handled: list[str] = []
    pair = [RulesService(js, instance=i, instances=2) for i in range(2)]
    for svc in pair:
        handle = svc.handle_events

        async def spy(evs: list[Event], seqs: list[int], handle: Callable[..., Any] = handle) -> None:
            handled.extend(e.id for e in evs)
            await handle(evs, seqs)

        svc.handle_events = spy  # type: ignore[method-assign]
    stop = asyncio.Event()
    tasks = [asyncio.create_task(s.run(stop)) for s in pair]
    try:
        async with asyncio.timeout(20):
            while sorted(handled) != sorted(e.id for e in late):
                await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)  # nothing from the first half comes back late
    finally:
        stop.set()
        await asyncio.gather(*tasks)
    assert sorted(handled) == sorted(e.id for e in late)
    assert await published_states(nc) == expected_states(events)


async def test_a_batch_whose_output_failed_is_published_when_retried(nc: NATS, monkeypatch: Any) -> None:
    """A failure after the engine ran (here the health bucket's write, as when a stream's leader moves,
    while the rest of the batch's writes got through) must not leave the service believing the events
    applied: the retry publishes the same state."""
    js = nc.jetstream()
    real = bus.publish_messages
    failures = []

    async def flaky(js: JetStreamContext, messages: Any, **kw: Any) -> None:
        messages = list(messages)
        if any(m[0].startswith(f"$KV.{subjects.KV_HEALTH}.") for m in messages) and not failures:
            failures.append(subjects.KV_HEALTH)
            await real(js, [m for m in messages if not m[0].startswith(f"$KV.{subjects.KV_HEALTH}.")], **kw)
            raise TimeoutError("no response from stream")
        await real(js, messages, **kw)

    monkeypatch.setattr(bus, "publish_messages", flaky)
    await publish(js, [xid(1, 79)])
    service = RulesService(js)
    await run_until(service, lambda: service.states_published >= 1)
    assert failures == [subjects.KV_HEALTH]
    states = await client.health_states(nc)
    assert [(s.node, s.health) for s in states] == [("gpu-1", "Unhealthy")]


async def incident_updates(nc: NATS) -> list[Incident]:
    """Every incident message stored so far, in order."""
    info = await nc.jetstream().stream_info(subjects.INCIDENTS.name)
    out = []
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        raw = await nc.jetstream().get_msg(subjects.INCIDENTS.name, seq)
        assert raw.data is not None
        out.append(INCIDENT_DECODER.decode(raw.data))
    return out


def storm(n: int, node: str = "gpu-1") -> list[Event]:
    return [xid(i, 13, node=node) for i in range(1, n + 1)]


async def test_a_storm_is_its_opening_and_then_its_latest_count_not_a_message_per_line(nc: NATS) -> None:
    js = nc.jetstream()
    await publish(js, storm(500))
    service = RulesService(js, limits=msgspec.structs.replace(LIMITS, incident=IncidentLimits(3600, 0.2)))
    await run_until(service, lambda: service.incidents_published >= 2)
    updates = await incident_updates(nc)
    assert len(updates) <= 5  # at most one a flush, whatever the storm's rate
    assert (updates[0].seq, updates[0].count) == (1, 1)
    assert (updates[-1].seq, updates[-1].count, updates[-1].last) == (500, 500, 500 * 10**9)
    assert len({u.id for u in updates}) == 1


async def test_growth_a_crash_left_unpublished_goes_out_at_the_next_start(nc: NATS) -> None:
    js = nc.jetstream()
    await publish(js, storm(50, node="gpu-7"))
    slow = RulesService(js, limits=msgspec.structs.replace(LIMITS, incident=IncidentLimits(3600, 3600.0)))
    task = asyncio.create_task(slow.run(asyncio.Event()))
    async with asyncio.timeout(10):
        while slow.nodes.get("gpu-7") is None or not slow.nodes["gpu-7"].faults:
            await asyncio.sleep(0.05)
        while (await js.consumer_info(subjects.EVENTS.name, "rules")).ack_floor.stream_seq < 50:
            await asyncio.sleep(0.05)
    task.cancel()  # killed: no last flush
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert [u.count for u in await incident_updates(nc)] == [1]
    # A restarted service (another instance count, even) finds the growth in the saved state.
    for instance in range(2):
        again = RulesService(js, instance=instance, instances=2,
                             limits=msgspec.structs.replace(LIMITS, incident=IncidentLimits(3600, 0.1)))  # fmt: skip
        mine = subjects.partition_of("gpu-7") in again.partitions
        await run_until(again, lambda a=again, m=mine: a.incidents_published >= 1 or not m, timeout=10)
        assert again.incidents_published == (1 if mine else 0)
    assert [u.count for u in await incident_updates(nc)] == [1, 50]


async def test_an_inventory_names_the_gpus_and_keeps_what_the_rules_knew_of_the_node(nc: NATS) -> None:
    js = nc.jetstream()
    await publish(js, [xid(1, 79)])
    first = RulesService(js)
    await run_until(first, lambda: first.states_published == 1)

    inv = Inventory(id="inv-1", time=2 * 10**9, cluster="c", node="gpu-1", boot_id="b1", source="nvml",
                    component="inventory", gpus=[GpuInfo(index=0, pci_bus_id="0000:04:00.0", uuid="GPU-aaaa"),
                                                 GpuInfo(index=1, pci_bus_id="0000:05:00.0", uuid="GPU-bbbb")])  # fmt: skip
    await bus.publish_batch(js, [(subjects.inventory_subject("gpu-1"), inv.id, encode(inv))])
    second, stop = RulesService(js), asyncio.Event()
    task = asyncio.create_task(second.run(stop))
    try:
        async with asyncio.timeout(10):
            while not await client.inventories(nc):
                await asyncio.sleep(0.05)
    finally:
        stop.set()
        await task
    assert [(i.node, i.id) for i in await client.inventories(nc)] == [("gpu-1", "inv-1")]

    # A restarted service: the same fault again is still no news, and a new one names its GPU's uuid.
    await publish(js, [xid(3, 79), msgspec.structs.replace(xid(4, 48), pci_bus_id="0000:05:00.0")])
    third = RulesService(js)
    await run_until(third, lambda: third.states_published >= 1)
    states = {s.pci_bus_id: s for s in await client.health_states(nc)}
    assert third.states_published == 1
    assert (states["0000:04:00.0"].health, states["0000:04:00.0"].since) == ("Unhealthy", 1 * 10**9)
    assert (states["0000:05:00.0"].health, states["0000:05:00.0"].gpu_uuid) == ("Unhealthy", "GPU-bbbb")


async def test_updates_stamped_alike_are_each_published_and_the_service_counts_what_it_handled(nc: NATS) -> None:
    # A log of whole seconds: two GPUs' Xid 79 and 30 more lines of the first, all in one second.
    js, t = nc.jetstream(), 5 * 10**9
    first = [msgspec.structs.replace(xid(i, 79), time=t) for i in range(1, 32)]
    other = msgspec.structs.replace(xid(99, 79), time=t, pci_bus_id="0000:05:00.0")
    await publish(js, [first[0], other, *first[1:]])
    metrics = Metrics(CollectorRegistry())
    service = RulesService(
        js, metrics=metrics, limits=msgspec.structs.replace(LIMITS, incident=IncidentLimits(3600, 0.1))
    )
    await run_until(service, lambda: service.incidents_published >= 3)
    assert sorted((u.entity, u.seq, u.count) for u in await incident_updates(nc)) == [
        ("0000:04:00.0", 1, 1), ("0000:04:00.0", 31, 31), ("0000:05:00.0", 1, 1)
    ]  # fmt: skip
    labels = {"stage": "rules", "stream": subjects.EVENTS.name}
    assert metrics.registry.get_sample_value("gpuhealth_consumer_messages_total", labels) == 32


async def test_each_batch_times_both_its_publishes_and_adds_to_the_counts(nc: NATS) -> None:
    service = RulesService(nc.jetstream(), metrics=Metrics(CollectorRegistry()))
    await service.start()
    await service.handle_events([xid(1, 79)], [1])  # a state and an incident out, then the node's state saved
    await service.handle_events([xid(2, 13, node="gpu-2")], [2])
    assert (service.states_published, service.incidents_published) == (2, 2)
    assert service.metrics is not None
    assert service.metrics.registry.get_sample_value("gpuhealth_publish_seconds_count") == 4
