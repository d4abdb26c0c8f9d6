"""The rules service: the engine wired to JetStream and the KV buckets.

For each batch of events: apply the engine per node, publish the state
changes on ``gpuhealth.v1.health.<node>.<component>`` (ids derived from the
causing event, so a reprocessed batch publishes nothing new) and the incidents
they opened, and write the states to the health KV bucket, in one round trip;
then save the touched nodes' engine state, and only then acknowledge. A crash
anywhere in between redelivers the batch, which the engine recognises as
already applied or recomputes identically: the events consumer delivers in
stream order, even after a crash (what a dead process left unacknowledged comes
again before anything newer), and each node's state keeps the stream sequence
of its last event applied, so an event at or below it is a redelivery however
large the batch.

Incidents that grew are published by a flush every ``incident.update_s``
(limits.toml): their latest update, whatever the rate of the storm. What was
published is part of the saved node state, so growth a crash left unpublished
goes out from the saved states when the service starts again.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from typing import Any

import nats.js.errors
from nats.js import JetStreamContext
from nats.js.kv import KeyValue

from gpuhealth import bus, subjects
from gpuhealth.consumer import Consumer
from gpuhealth.events import (
    EVENT_DECODER,
    INVENTORY_DECODER,
    Event,
    HealthState,
    Incident,
    Inventory,
    derived_id,
    encode,
)
from gpuhealth.telemetry import Metrics
from rules import catalog as catalog_mod
from rules.engine import apply_all, apply_inventory, has_pending, pending_incidents
from rules.limits import Limits
from rules.state import NodeState, decode_state, encode_state

log = logging.getLogger("gpuhealth.rules")


def _incident_message(i: Incident) -> bus.Message:
    """One update of an incident: its id and seq make the message id, so a repeat is stored once."""
    return bus.with_id(subjects.incident_subject(i.node, i.component), derived_id(i.time, i.id, i.seq), encode(i))


class RulesService:
    """One rules instance. Alone, it reads every event through one durable consumer. With
    ``instances`` > 1, instance ``instance`` owns the partitions p (a hash of the node name, the
    stored subject's last token) with p mod instances = instance, through one durable consumer per
    partition (``rules-p07``): each node's events in order on one instance, its state written by
    that instance alone, and a partition keeps its position when the instance count changes."""

    def __init__(
        self,
        js: JetStreamContext,
        *,
        durable: str = "rules",
        instance: int = 0,
        instances: int = 1,
        limits: Limits | None = None,
        batch: int = 1000,
        metrics: Metrics | None = None,
    ) -> None:
        self.js = js
        self.metrics = metrics  # its process's instruments (gpuhealth/telemetry.py)
        self.batch = batch
        self.instance, self.instances = instance, instances
        self.partitions = subjects.partitions_of(instance, instances)  # validates the pair
        self.durable = durable
        self.catalog = catalog_mod.load()
        if limits is not None:
            self.catalog = dataclasses.replace(self.catalog, limits=limits)
        self.nodes: dict[str, NodeState] = {}
        self.kv_rules: KeyValue | None = None
        self.kv_health: KeyValue | None = None
        self.kv_inventory: KeyValue | None = None
        self.states_published = 0
        self.incidents_published = 0
        self.events_stream = ""
        self._growing: set[str] = set()  # nodes with incidents grown since their last publish
        # The event and inventory consumers both load, change and save node states: one at a
        # time, or two loads of the same node race and the last save drops the other's change.
        self._lock = asyncio.Lock()

    async def start(self) -> None:
        await bus.provision(self.js, missing_only=True)  # retries until NATS answers; binds below then succeed
        self.kv_rules = await self.js.key_value(subjects.KV_RULES)
        self.kv_health = await self.js.key_value(subjects.KV_HEALTH)
        self.kv_inventory = await self.js.key_value(subjects.KV_INVENTORY)
        # The event stream's making: a node's applied_seq counts in it, and means nothing in another.
        self.events_stream = str((await self.js.stream_info(subjects.EVENTS.name)).created)
        await self._load_growing()

    async def _load_growing(self) -> None:
        """The saved states of this instance's nodes whose incident growth was not published yet."""
        assert self.kv_rules is not None
        try:
            keys = await self.kv_rules.keys()
        except nats.js.errors.NoKeysError:
            return
        owned = set(self.partitions)
        for i in range(0, len(keys), 256):
            entries = await asyncio.gather(*(self.kv_rules.get(k) for k in keys[i : i + 256]), return_exceptions=True)
            for entry in entries:
                if isinstance(entry, BaseException) or not entry.value:
                    continue  # deleted since listed
                state = decode_state(entry.value)
                mine = subjects.partition_of(state.node) in owned and state.node not in self.nodes
                if mine and has_pending(state, all_faults=True):
                    self.nodes[state.node] = state
                    self._growing.add(state.node)

    async def _node(self, node: str) -> NodeState | None:
        if node in self.nodes:
            return self.nodes[node]
        assert self.kv_rules is not None
        try:
            entry = await self.kv_rules.get(subjects.kv_escape(node))
        except nats.js.errors.KeyNotFoundError:
            return None
        return decode_state(entry.value) if entry.value else None

    async def handle_events(self, events: list[Event], seqs: list[int] | None = None) -> None:
        """Apply a batch; ``seqs`` are the events' stream sequences (the consumer delivers a node's
        events in stream order), by which a redelivered event is recognised as applied."""
        async with self._lock:
            try:
                await self._handle_events(events, seqs or [0] * len(events))
            except BaseException:
                # The engine changed these nodes' states in memory, but what they produced may not be out:
                # forget them, so the retry starts from the state saved after the last batch that was, and
                # publishes the same changes (same ids) again instead of skipping events it thinks applied.
                for ev in events:
                    self.nodes.pop(ev.node, None)
                raise

    async def _handle_events(self, events: list[Event], seqs: list[int]) -> None:
        assert self.kv_rules is not None and self.kv_health is not None
        touched: dict[str, NodeState] = {}
        outputs: list[HealthState] = []
        incidents: dict[str, Incident] = {}
        for ev, seq in zip(events, seqs, strict=True):
            state = await self._node(ev.node)
            if state is not None and state.events_stream != self.events_stream:
                state.applied_seq = 0  # the stream was made again since: its sequences start over
            state, out, inc = apply_all(state, ev, self.catalog, seq)
            state.events_stream = self.events_stream
            self.nodes[ev.node] = touched[ev.node] = state
            outputs.extend(out)
            incidents.update((i.id, i) for i in inc)
            if has_pending(state):
                self._growing.add(ev.node)
        messages = [bus.with_id(subjects.health_subject(h.node, h.component), h.id, encode(h)) for h in outputs]
        messages += [_incident_message(i) for i in incidents.values()]
        latest = {subjects.health_key(h.node, h.component, h.entity): h for h in outputs}
        messages += [bus.kv_put(subjects.KV_HEALTH, k, encode(h)) for k, h in latest.items()]
        if messages:
            await bus.publish_messages(self.js, messages, metrics=self.metrics)
        # Only once every output is stored: the states that say these events were applied. Saved with
        # the outputs, a partial failure could store the state and lose the outputs (the retry would
        # find the events applied); and a large node state is encoded after its change went out.
        await bus.publish_messages(
            self.js,
            [bus.kv_put(subjects.KV_RULES, subjects.kv_escape(n), encode_state(s)) for n, s in touched.items()],
            metrics=self.metrics,
        )
        self.incidents_published += len(incidents)
        self.states_published += len(outputs)

    async def flush_incidents(self) -> None:
        """Publish the latest update of every incident that grew. The states are saved with the next
        batch, not here: after a crash the sweep at start publishes an update again, harmlessly: the
        same (incident, seq) is the same message id, and the sink's table keeps one row per pair."""
        async with self._lock:
            growing, self._growing = self._growing, set()
            states = {n: s for n in growing if (s := await self._node(n)) is not None}
            try:
                incidents = [i for s in states.values() for i in pending_incidents(s)]
                await bus.publish_messages(self.js, [_incident_message(i) for i in incidents], metrics=self.metrics)
                self.incidents_published += len(incidents)
            except BaseException:
                for n in states:  # marked published in memory only: reload, and try again next time
                    self.nodes.pop(n, None)
                self._growing |= set(states)
                raise

    async def _flusher(self, stop: asyncio.Event | None) -> None:
        """Every update_s until stopped; with no ``stop``, once."""
        while True:
            if stop is not None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.catalog.limits.incident.update_s)
                if stop.is_set():
                    return
            try:
                await self.flush_incidents()
            except Exception as e:  # kept in the saved states: the next round, or the next start, publishes them
                log.warning("rules: publishing the growth of %d nodes' incidents failed (%s)", len(self._growing), e)
            if stop is None:
                return

    async def handle_inventory(self, items: list[Inventory]) -> None:
        assert self.kv_rules is not None and self.kv_inventory is not None
        async with self._lock:
            await self._handle_inventory(items)

    async def _handle_inventory(self, items: list[Inventory]) -> None:
        assert self.kv_rules is not None and self.kv_inventory is not None
        for inv in items:
            state = apply_inventory(await self._node(inv.node), inv)
            self.nodes[inv.node] = state
            await self.kv_rules.put(subjects.kv_escape(inv.node), encode_state(state))
            await self.kv_inventory.put(subjects.kv_escape(inv.node), encode(inv))

    async def _consumers(self) -> list[Consumer[Any]]:
        def consumer(
            spec: subjects.StreamSpec,
            durable: str,
            filter_subject: str,
            decoder: Any,
            handle: Any,
            start_seq: int | None,
        ) -> Consumer[Any]:
            # Events in stream order, with their sequences: the engine's redelivery check needs both.
            in_order = handle if spec is subjects.EVENTS else None
            return Consumer(
                self.js,
                stream=spec.name,
                durable=durable,
                filter_subject=filter_subject,
                decoder=decoder,
                stage="rules",
                handle=handle,
                batch=self.batch,
                start_seq=start_seq,
                in_order=in_order,
                metrics=self.metrics,
            )

        if self.instances == 1:
            return [
                consumer(
                    subjects.EVENTS, self.durable, subjects.EVENTS.subjects[0], EVENT_DECODER, self.handle_events, None
                ),
                consumer(
                    subjects.INVENTORY,
                    f"{self.durable}-inventory",
                    subjects.INVENTORY.subjects[0],
                    INVENTORY_DECODER,
                    self.handle_inventory,
                    None,
                ),
            ]
        out = []
        for spec, name, decoder, handle in (
            (subjects.EVENTS, self.durable, EVENT_DECODER, self.handle_events),
            (subjects.INVENTORY, f"{self.durable}-inventory", INVENTORY_DECODER, self.handle_inventory),
        ):
            # Partition consumers created when a single instance ran before start where it stopped.
            start = await self._ack_floor(spec.name, name)
            for p in self.partitions:
                out.append(
                    consumer(spec, f"{name}-p{p:02d}", subjects.partition_filter(spec, p), decoder, handle, start)
                )
        return out

    async def _ack_floor(self, stream: str, durable: str) -> int | None:
        try:
            info = await self.js.consumer_info(stream, durable)
        except nats.js.errors.NotFoundError:
            return None
        return info.ack_floor.stream_seq + 1 if info.ack_floor and info.ack_floor.stream_seq else None

    async def run(self, stop: asyncio.Event) -> None:
        await self.start()
        await asyncio.gather(*(c.run(stop) for c in await self._consumers()), self._flusher(stop))
        await self._flusher(None)  # what grew in the last batches
