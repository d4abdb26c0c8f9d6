"""The rules service killed mid-backlog ends where an uninterrupted run does: states, bucket, incidents.

A backlog of one node larger than the engine's id memory (RECENT_IDS), fetched in one batch, is the
case that exposed the old redelivery check: the killed batch comes back and must be recognised as
applied (or applied once, in order, if its state was not saved), whatever its size."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import pytest
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from nats.js.kv import KeyValue
from prometheus_client import CollectorRegistry

from gpuhealth import bus, client, subjects
from gpuhealth.events import HEALTH_DECODER, INCIDENT_DECODER, Event, KernelEvent, SetHealthy, derived_id
from gpuhealth.telemetry import Metrics
from rules.catalog import load
from rules.engine import apply_all
from rules.limits import IncidentLimits
from rules.limits import parse as parse_limits
from rules.service import RulesService
from rules.state import RECENT_IDS, NodeState, encode_state
from tests.integration.test_rules_service import incident_updates, publish, run_until, xid

LIMITS = msgspec.structs.replace(parse_limits(), incident=IncidentLimits(3600, 0.1))
NODE = "gpu-1"
GPUS = [f"0000:{b:02x}:00.0" for b in (0x04, 0x05, 0x06, 0x07)]


def backlog(n: int) -> list[Event]:
    """Xid 13 (Degraded, one incident a GPU) spread over four GPUs of one node."""
    return [
        KernelEvent(id=f"x{i:05d}", time=i * 10**9, cluster="c", node=NODE, boot_id="b1", source="kmsg",
                    component="accelerator-nvidia-error-xid", kind="xid", xid=13, pci_bus_id=GPUS[i % 4], message="m")
        for i in range(1, n + 1)
    ]  # fmt: skip


def set_healthy(i: int) -> SetHealthy:
    return SetHealthy(id=f"op{i}", time=i * 10**9, cluster="c", node=NODE, boot_id="b1", source="gpuctl",
                      component="operator", target_component="accelerator-nvidia-error-xid", user="alice")  # fmt: skip


Outcome = tuple[dict[tuple[str, str], tuple[str, list[str]]], dict[str, tuple[int, int, int]], set[str]]


def clean_run(events: list[Event]) -> Outcome:
    """What one uninterrupted engine makes of the events: states, incidents (count, first, last), health ids."""
    state: NodeState | None = None
    ids: set[str] = set()
    for ev in events:
        state, out, _ = apply_all(state, ev, load())
        ids.update(h.id for h in out)
    assert state is not None
    states = {(cs.component, cs.entity): (cs.health, list(cs.actions)) for cs in state.states.values()}
    incidents = {derived_id(f.first, NODE, k): (f.count, f.first, f.last) for k, f in state.faults.items()}
    return states, incidents, ids


async def stored(nc: NATS) -> Outcome:
    """The same, as the bus holds it: the health bucket, each incident's latest update, the health stream."""
    states = {(h.component, h.entity): (h.health, list(h.repair_actions)) for h in await client.health_states(nc)}
    latest: dict[str, tuple[int, int, int, int]] = {}
    for raw in await stream(nc, subjects.INCIDENTS.name):
        i = INCIDENT_DECODER.decode(raw)
        if i.seq > latest.get(i.id, (0,))[0]:
            latest[i.id] = (i.seq, i.count, i.first, i.last)
    health = {HEALTH_DECODER.decode(raw).id for raw in await stream(nc, subjects.HEALTH.name)}
    return states, {k: v[1:] for k, v in latest.items()}, health


async def stream(nc: NATS, name: str) -> list[bytes]:
    js = nc.jetstream()
    info = await js.stream_info(name)
    out = []
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        raw = await js.get_msg(name, seq)
        assert raw.data is not None
        out.append(raw.data)
    return out


async def killed_at(js: JetStreamContext, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    """Run a service with batches of 1000 and kill it (no ack, no flush, nothing more) in its first batch:
    after the batch's outputs went out and before its state is saved, or after the save, before the ack."""
    service = RulesService(js, batch=1000, limits=LIMITS)
    killed = asyncio.Event()
    real_publish = bus.publish_messages

    async def hang() -> None:
        killed.set()
        await asyncio.Future()  # the process is gone: it does nothing more

    async def publish_then_die(js: JetStreamContext, messages: Any, **kw: Any) -> None:
        messages = list(messages)
        if where == "before save" and any(m[0].startswith(f"$KV.{subjects.KV_RULES}.") for m in messages):
            await hang()
        await real_publish(js, messages, **kw)

    monkeypatch.setattr(bus, "publish_messages", publish_then_die)
    handle: Callable[..., Awaitable[None]] = service.handle_events

    async def handle_then_die(*args: Any) -> None:
        await handle(*args)
        await hang()  # only reached "after save"

    service.handle_events = handle_then_die  # type: ignore[method-assign]
    task = asyncio.create_task(service.run(asyncio.Event()))
    async with asyncio.timeout(20):
        await killed.wait()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    monkeypatch.setattr(bus, "publish_messages", real_publish)


async def finish(js: JetStreamContext, last_seq: int) -> None:
    """A new process, until every event is acknowledged (the killed batch comes again at some point), then
    its last flush."""
    service = RulesService(js, limits=LIMITS)
    stop = asyncio.Event()
    task = asyncio.create_task(service.run(stop))
    try:
        async with asyncio.timeout(40):
            while True:
                await asyncio.sleep(0.2)
                info = await js.consumer_info(subjects.EVENTS.name, "rules")
                if info.ack_floor.stream_seq == last_seq and not info.num_ack_pending:
                    break
    finally:
        stop.set()
        await task


@pytest.mark.parametrize("where", ["before save", "after save"])
async def test_a_backlog_killed_mid_batch_ends_as_an_uninterrupted_run(
    nc: NATS, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    js = nc.jetstream()
    events = backlog(1200)
    assert RECENT_IDS < 1000  # the killed batch is longer than the engine's memory of ids
    await publish(js, events)
    await killed_at(js, monkeypatch, where)
    await finish(js, len(events))
    states, incidents, health_ids = await stored(nc)
    want_states, want_incidents, want_ids = clean_run(events)
    assert sum(c for c, _, _ in incidents.values()) == len(events)
    assert incidents == want_incidents
    assert states == want_states
    assert health_ids == want_ids


@pytest.mark.parametrize("where", ["before save", "after save"])
async def test_a_set_healthy_that_came_last_is_the_last_word_after_a_kill(
    nc: NATS, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    js = nc.jetstream()
    events: list[Event] = [*backlog(1100), set_healthy(1101)]
    await publish(js, events)
    await killed_at(js, monkeypatch, where)
    await finish(js, len(events))
    states, incidents, _ = await stored(nc)
    assert list(states.values()) == [("Healthy", [])] * len(GPUS)
    assert (states, incidents) == clean_run(events)[:2]


async def test_events_of_a_stream_made_again_are_applied_though_their_sequences_start_over(nc: NATS) -> None:
    js = nc.jetstream()
    events = backlog(8)
    await publish(js, events)
    await finish(js, len(events))
    await js.delete_stream(subjects.EVENTS.name)  # an operator starts the events over; the rules' states stay
    await bus.provision(js)
    await publish(js, [set_healthy(9)])  # sequence 1, below the node's last applied (8)
    await finish(js, 1)
    states, _, _ = await stored(nc)
    assert list(states.values()) == [("Healthy", [])] * len(GPUS)


async def test_a_service_starting_leaves_the_streams_as_the_fleet_sized_them(nc: NATS) -> None:
    # gpuctl nats-config / up size the streams for the fleet; a rules (re)start only creates what is missing.
    js = nc.jetstream()
    await bus.provision(js)
    config = (await js.stream_info(subjects.EVENTS.name)).config
    config.max_age = 12_345.0
    await js.update_stream(config)
    await RulesService(js).start()
    assert (await js.stream_info(subjects.EVENTS.name)).config.max_age == 12_345.0


async def test_the_limits_a_service_is_given_are_the_ones_it_judges_by(nc: NATS) -> None:
    # An incident window of 5 s (limits.toml says an hour): Xid 13 ten seconds apart is two incidents, not one.
    js = nc.jetstream()
    await publish(js, [backlog(1)[0], msgspec.structs.replace(backlog(1)[0], id="x-later", time=11 * 10**9)])
    limits = msgspec.structs.replace(LIMITS, incident=IncidentLimits(5, 0.1))
    service = RulesService(js, limits=limits)
    await run_until(service, lambda: service.incidents_published >= 2)
    assert sorted((u.seq, u.count, u.first) for u in await incident_updates(nc)) == [(1, 1, 10**9), (1, 1, 11 * 10**9)]


async def test_a_start_publishes_the_growth_a_crash_left_on_every_saved_node_however_many(nc: NATS) -> None:
    # 601 nodes' saved states, each with an incident grown since it was published (as a kill before the flush
    # leaves them) and another opened after it, behind an entry holding nothing: the start reads them all, in
    # chunks; the empty entry is a node with no state yet.
    js = nc.jetstream()
    await bus.provision(js)
    kv = await js.key_value(subjects.KV_RULES)
    await kv.put(subjects.kv_escape("gpu-empty"), b"")
    nodes = [f"gpu-{n:03d}" for n in range(601)]
    for node in nodes:
        state: NodeState | None = None
        for ev in backlog(6)[::4] + backlog(2)[1:]:  # Xid 13 opened and grown on GPUS[1], then opened on GPUS[2]
            state, _, _ = apply_all(state, msgspec.structs.replace(ev, node=node), load())
        assert state is not None
        await kv.put(subjects.kv_escape(node), encode_state(state))
    await publish(js, [msgspec.structs.replace(backlog(1)[0], node="gpu-empty")])
    service = RulesService(js, limits=LIMITS)
    await run_until(service, lambda: service.incidents_published >= len(nodes) + 1 and service.states_published >= 1)
    updates = await incident_updates(nc)
    assert sorted(u.node for u in updates if u.seq == 2) == nodes
    assert {(u.entity, u.count) for u in updates if u.seq == 2} == {(GPUS[1], 2)}
    assert [(u.node, u.entity, u.count) for u in updates if u.seq == 1] == [("gpu-empty", GPUS[1], 1)]


async def test_a_saved_state_deleted_while_a_start_reads_them_is_passed_over(
    nc: NATS, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An operator (or another instance) deletes a node's state between the start's listing of the keys and
    its reading of them: that node is passed over and every other node's growth still goes out."""
    js = nc.jetstream()
    await bus.provision(js)
    kv = await js.key_value(subjects.KV_RULES)
    for node in ("gpu-kept", "gpu-gone"):
        state: NodeState | None = None
        for ev in backlog(6)[::4]:  # Xid 13 opened and grown on GPUS[1], the growth not published
            state, _, _ = apply_all(state, msgspec.structs.replace(ev, node=node), load())
        assert state is not None
        await kv.put(subjects.kv_escape(node), encode_state(state))
    real_keys = KeyValue.keys

    async def listing_then_deleting(self: KeyValue, **kw: Any) -> list[str]:
        keys: list[str] = await real_keys(self, **kw)
        if subjects.kv_escape("gpu-gone") in keys:
            await self.purge(subjects.kv_escape("gpu-gone"))
        return keys

    monkeypatch.setattr(KeyValue, "keys", listing_then_deleting)
    service = RulesService(js, limits=LIMITS)
    await run_until(service, lambda: service.incidents_published >= 1)
    assert [(u.node, u.seq, u.count) for u in await incident_updates(nc)] == [("gpu-kept", 2, 2)]


async def test_growth_held_by_failed_flushes_goes_out_at_the_next_one_and_each_flush_is_timed(
    nc: NATS, monkeypatch: pytest.MonkeyPatch
) -> None:
    js = nc.jetstream()
    service = RulesService(js, metrics=Metrics(CollectorRegistry()))
    await service.start()
    await service.handle_events([xid(1, 13), xid(2, 13)], [1, 2])  # opened (published), then grown
    real, refusals = bus.publish_messages, []

    async def refusing_twice(js: JetStreamContext, messages: Any, **kw: Any) -> None:
        if len(refusals) < 2:  # the incidents stream's leader moving, twice
            refusals.append(1)
            raise TimeoutError("no response from stream")
        await real(js, messages, **kw)

    monkeypatch.setattr(bus, "publish_messages", refusing_twice)
    for _ in range(2):
        with pytest.raises(TimeoutError):
            await service.flush_incidents()
    await service.flush_incidents()
    assert [(u.seq, u.count) for u in await incident_updates(nc)] == [(1, 1), (2, 2)]
    assert service.metrics is not None  # the batch's two publishes, and the flush that went through
    assert service.metrics.registry.get_sample_value("gpuhealth_publish_seconds_count") == 3
