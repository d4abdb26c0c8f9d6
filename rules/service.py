"""The rules service: the engine wired to JetStream and the KV buckets.

For each batch of events: apply the engine per node, publish the state
changes on ``gpuhealth.v1.health.<node>.<component>`` (ids derived from the
causing event, so a reprocessed batch publishes nothing new), write them to the
health KV bucket, save the touched nodes' engine state, and only then
acknowledge. A crash anywhere in between redelivers the batch, which the
engine recognises as already applied or recomputes identically.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging

import nats.js.errors
from nats.js import JetStreamContext
from nats.js.kv import KeyValue

from gpuhealth import bus, subjects
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
from rules import catalog as catalog_mod
from rules.engine import NodeState, apply_all, apply_inventory, decode_state, encode_state
from rules.limits import Limits

log = logging.getLogger("gpuhealth.rules")


class RulesService:
    """One rules instance. With ``instances`` > 1, instance ``instance`` takes the nodes whose
    partition (a hash of the node name, in the stored subject) is ``instance`` modulo ``instances``:
    each node's events in order on one instance, its state written by that instance alone."""

    def __init__(
        self,
        js: JetStreamContext,
        *,
        durable: str = "rules",
        instance: int = 0,
        instances: int = 1,
        limits: Limits | None = None,
        batch: int = 1000,
    ) -> None:
        self.js = js
        self.batch = batch
        self.instance, self.instances = instance, instances
        subjects.partition_filters(subjects.EVENTS, instance, instances)  # validates the pair
        self.durable = durable if instances == 1 else f"{durable}-{instance}of{instances}"
        self.catalog = catalog_mod.load()
        if limits is not None:
            self.catalog = dataclasses.replace(self.catalog, limits=limits)
        self.nodes: dict[str, NodeState] = {}
        self.kv_rules: KeyValue | None = None
        self.kv_health: KeyValue | None = None
        self.kv_inventory: KeyValue | None = None
        self.states_published = 0
        self.incidents_published = 0
        # The event and inventory consumers both load, change and save node states: one at a
        # time, or two loads of the same node race and the last save drops the other's change.
        self._lock = asyncio.Lock()

    async def start(self) -> None:
        await bus.provision(self.js)  # retries until NATS answers; binds below then succeed
        self.kv_rules = await self.js.key_value(subjects.KV_RULES)
        self.kv_health = await self.js.key_value(subjects.KV_HEALTH)
        self.kv_inventory = await self.js.key_value(subjects.KV_INVENTORY)

    async def _node(self, node: str) -> NodeState | None:
        if node in self.nodes:
            return self.nodes[node]
        assert self.kv_rules is not None
        try:
            entry = await self.kv_rules.get(subjects.kv_escape(node))
        except nats.js.errors.KeyNotFoundError:
            return None
        return decode_state(entry.value) if entry.value else None

    async def handle_events(self, events: list[Event]) -> None:
        async with self._lock:
            await self._handle_events(events)

    async def _handle_events(self, events: list[Event]) -> None:
        assert self.kv_rules is not None and self.kv_health is not None
        touched: dict[str, NodeState] = {}
        outputs: list[HealthState] = []
        incidents: dict[str, Incident] = {}
        for ev in events:
            state, out, inc = apply_all(await self._node(ev.node), ev, self.catalog)
            self.nodes[ev.node] = touched[ev.node] = state
            outputs.extend(out)
            incidents.update((i.id, i) for i in inc)  # a batch publishes each incident's latest update
        items = [(subjects.health_subject(h.node, h.component), h.id, encode(h)) for h in outputs]
        items += [
            (subjects.incident_subject(i.node, i.component), derived_id(i.time, i.id, i.seq), encode(i))
            for i in incidents.values()
        ]
        if items:
            await bus.publish_batch(self.js, items)
            self.incidents_published += len(incidents)
        if outputs:
            latest = {subjects.health_key(h.node, h.component, h.entity): h for h in outputs}
            for key, h in latest.items():
                await self.kv_health.put(key, encode(h))
            self.states_published += len(outputs)
        for node, state in touched.items():
            await self.kv_rules.put(subjects.kv_escape(node), encode_state(state))

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

    async def run(self, stop: asyncio.Event) -> None:
        await self.start()
        events = bus.Consumer(
            self.js,
            stream=subjects.EVENTS.name,
            durable=self.durable,
            filter_subject=subjects.EVENTS.subjects[0],
            filter_subjects=subjects.partition_filters(subjects.EVENTS, self.instance, self.instances),
            decoder=EVENT_DECODER,
            stage="rules",
            handle=self.handle_events,
            batch=self.batch,
        )
        inventory = bus.Consumer(
            self.js,
            stream=subjects.INVENTORY.name,
            durable=f"{self.durable}-inventory",
            filter_subject=subjects.INVENTORY.subjects[0],
            filter_subjects=subjects.partition_filters(subjects.INVENTORY, self.instance, self.instances),
            decoder=INVENTORY_DECODER,
            stage="rules",
            handle=self.handle_inventory,
        )
        await asyncio.gather(events.run(stop), inventory.run(stop))
