"""The responder's NATS wiring: a durable consumer of the health subjects, a decision on every state
(responder/decide.py), the action through the scheduler adapter, the ledger written, every decision
published on gpuhealth.v1.decision.<node> (the sink stores it), and only then the ack. The state that
makes a burst a fleet incident also releases gpuhealth's drains of the burst's earlier nodes: each is
resumed (if Slurm still shows gpuhealth's reason) and gets a `held` decision of its own.

A crash anywhere redelivers the states: a decision's id derives from its health state's, so a repeat
is stored once, and a drain done before the crash is recognised by its reason (decide.py)."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

import msgspec
import nats.js.errors
from nats.js import JetStreamContext
from nats.js.kv import KeyValue

from gpuhealth import bus, sd, subjects
from gpuhealth.backoff import Backoff
from gpuhealth.consumer import Consumer, is_outage
from gpuhealth.errors import SchedulerError
from gpuhealth.events import (
    HEALTH_DECODER,
    INVENTORY_DECODER,
    Decision,
    HealthState,
    Incident,
    derived_id,
    encode,
    new_id,
    now_ns,
)
from responder.adapters import NodeState, Scheduler, node_name
from responder.correlate import FleetIncident, inventory_groups
from responder.decide import (
    COMPONENT,
    Ledger,
    Policy,
    Verdict,
    asks_scheduler,
    decide,
    record,
    release,
    wants_drain,
)

log = logging.getLogger("gpuhealth.responder")
FLEET_TTL_S = 60.0  # how long the scheduler's list of nodes is trusted before it is asked again
ACT_TRIES = 5  # about 7 s of back-off before a drain or resume the scheduler refuses is called failed
LABELS_TTL_S = 300.0  # a node's driver and GPU model change with a reboot, not within a burst
FLEET_COMPONENT = "gpuhealth-fleet"  # fleet incidents: one fault with a shared cause across nodes


@dataclass(frozen=True)
class Identity:
    cluster: str
    node: str  # where the responder runs: its own health (the breaker) is published under it


class ResponderService:
    def __init__(self, js: JetStreamContext, scheduler: Scheduler, policy: Policy, data_dir: Path, me: Identity,
                 *, durable: str = "responder") -> None:  # fmt: skip
        self.js, self.scheduler, self.policy, self.me, self.durable = js, scheduler, policy, me, durable
        # Dry-run keeps its own ledger: what it would have drained must never count as gpuhealth's drain.
        self.ledger_path = data_dir / "responder" / ("ledger.json" if policy.act else "ledger-dry-run.json")
        self.ledger = self._load()
        self._fleet: tuple[float, int] = (0.0, 0)
        self._labels: dict[str, tuple[float, list[tuple[str, str]]]] = {}
        self._inventory: KeyValue | None = None
        # Decisions made on states whose batch is not acknowledged yet: a batch retried after a failed
        # publish is answered with them, not decided again (which would find its own drains done).
        self._made: dict[str, tuple[list[Decision], bus.Item | None]] = {}

    def _load(self) -> Ledger:
        try:
            return msgspec.json.decode(self.ledger_path.read_bytes(), type=Ledger)
        except FileNotFoundError:
            return Ledger()

    def _save(self) -> None:
        self.ledger_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.ledger_path.with_suffix(".tmp")
        with tmp.open("wb") as f:
            f.write(msgspec.json.encode(self.ledger))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.ledger_path)

    async def fleet_size(self) -> int:
        at, size = self._fleet
        if time.monotonic() - at > FLEET_TTL_S or not size:
            try:
                size = len(await self.scheduler.fleet())
            except SchedulerError as e:
                log.warning("responder: the scheduler cannot list its nodes (%s); the fleet is the nodes seen", e)
                size = 0
            self._fleet = (time.monotonic(), size)
        return size

    async def labels(self, nodes: set[str]) -> dict[str, list[tuple[str, str]]]:
        """The groups the nodes' inventories (the rules' KV bucket) put them in, when asked for."""
        if not self.policy.inventory_groups:
            return {}
        out = {}
        for node in nodes:
            at, groups = self._labels.get(node, (0.0, []))
            if time.monotonic() - at > LABELS_TTL_S or not at:
                groups = await self._inventory_groups(node)
                self._labels[node] = (time.monotonic(), groups)
            out[node] = groups
        return out

    async def _inventory_groups(self, node: str) -> list[tuple[str, str]]:
        if self._inventory is None:
            self._inventory = await self.js.key_value(subjects.KV_INVENTORY)
        try:
            entry = await self._inventory.get(subjects.kv_escape(node))
            inv = INVENTORY_DECODER.decode(entry.value or b"")
        except (nats.js.errors.KeyNotFoundError, msgspec.DecodeError, msgspec.ValidationError):
            return []  # no inventory (yet): in no inventory group
        return inventory_groups(inv, self.policy.inventory_groups)

    async def handle(self, states: list[HealthState]) -> None:
        tripped = self.ledger.tripped
        out: list[bus.Item] = []
        for h in states:
            if h.component == COMPONENT:
                continue  # its own breaker's state
            made, incident = self._made.get(h.id) or await self.respond(h)
            self._made[h.id] = made, incident
            out += [(subjects.decision_subject(d.node), d.id, encode(d)) for d in made]
            if incident is not None:
                out.append(incident)
        self._save()
        messages = [bus.with_id(*item) for item in out]
        if self.ledger.tripped != tripped:
            messages += self._breaker_state()
        await bus.publish_messages(self.js, messages)
        self._made.clear()

    async def respond(self, h: HealthState) -> tuple[list[Decision], bus.Item | None]:
        """The decision on one state. A scheduler that cannot say what a node is now raises: the consumer
        holds the batch and retries (never a drain or resume decided blind, never ownership lost)."""
        now = time.time()
        earlier: list[tuple[str, NodeState]] = []  # the burst's earlier nodes to release, and their state now
        try:
            node_name(h.node)
        except SchedulerError as e:
            v = Verdict("none", "skipped", str(e))
        else:
            asks = asks_scheduler(self.ledger, h)
            current = await self.scheduler.state(h.node) if asks else NodeState(exists=True, drained=False)
            near = {h.node, *(n for _, n, _ in self.ledger.recent)} if wants_drain(h) else set()
            v = decide(self.ledger, h, current, self.policy, await self.fleet_size(), now, await self.labels(near))
            # Asked before anything is recorded: a scheduler away here retries the state, which decides the
            # burst again (a node recorded held first would be decided held alone, its release lost).
            earlier = [(n, await self.scheduler.state(n)) for n in v.release]
            v = await self._act(h.node, v)
        record(self.ledger, h.node, v, now, self.policy)
        log.info("responder: %s %s: %s (%s)", v.action, h.node, v.outcome, v.why)
        made = [self._decision(h, v, derived_id(h.time, "responder", h.id))]
        if v.incident is not None:
            made += [await self._release(h, node, shown, v.incident, now) for node, shown in earlier]
        return made, self._fleet_incident(v.incident) if v.incident else None

    async def _release(self, h: HealthState, node: str, current: NodeState, incident: FleetIncident,
                       now: float) -> Decision:  # fmt: skip
        """gpuhealth's drain of an earlier node of the burst ``h`` completed, released: resumed, held."""
        faults = self.ledger.faults.get(node, {})
        entity, health_id = next(((k.split("/", 1)[1], i) for k, i in sorted(faults.items())), (h.entity, h.id))
        v = await self._act(node, release(self.ledger, node, current, incident, self.policy))
        record(self.ledger, node, v, now, self.policy)
        log.info("responder: %s %s: %s (%s)", v.action, node, v.outcome, v.why)
        d = self._decision(h, v, derived_id(h.time, "responder", h.id, node))
        return msgspec.structs.replace(d, node=node, entity=entity, health_id=health_id)

    def _decision(self, h: HealthState, v: Verdict, id: str) -> Decision:
        return Decision(
            id=id, time=now_ns(), cluster=h.cluster, node=h.node, source="responder", component=h.component,
            entity=h.entity, health=h.health, repair_actions=h.repair_actions, action=v.action, outcome=v.outcome,
            why=v.why, adapter=self.scheduler.name, health_id=h.id,
        )  # fmt: skip

    def _fleet_incident(self, inc: FleetIncident) -> bus.Item:
        """One incident for the burst, under the responder's node, updated (seq) as nodes join it."""
        first, last = int(inc.first * 1e9), int(inc.last * 1e9)
        incident = Incident(
            id=derived_id(first, "fleet", inc.key()), time=last, cluster=self.me.cluster, node=self.me.node,
            source="responder", component=FLEET_COMPONENT, entity=f"{inc.kind}:{inc.group}", code=inc.fault,
            severity="Critical", reason=inc.describe(self.policy.burst_window_s), count=len(inc.nodes),
            first=first, last=last, seq=len(inc.nodes),
        )  # fmt: skip
        subject = subjects.incident_subject(self.me.node, FLEET_COMPONENT)
        return subject, f"{incident.id}:{incident.seq}", encode(incident)

    async def _act(self, node: str, v: Verdict) -> Verdict:
        """The verdict done on the scheduler, tried a few times (a controller just restarted refuses a
        resume until the node registers again); still refused, it is a failed decision, not a stalled stream."""
        released = v.action == "resume" and v.outcome == "held"  # a burst's drain given back
        if not (v.outcome == "acted" or released) or not self.policy.act or v.in_effect:
            return v
        delays = Backoff(first=0.5, cap=4.0)
        for attempt in range(1, ACT_TRIES + 1):
            try:
                if v.action == "drain":
                    await self.scheduler.drain(node, v.reason)
                elif v.action == "resume":
                    await self.scheduler.resume(node)
                return v
            except SchedulerError as e:
                if attempt == ACT_TRIES:
                    return v._replace(outcome="failed", why=f"{v.why}; the scheduler said: {e}")
                log.warning("responder: %s %s refused (%s); trying again in %.1fs", v.action, node, e, delays.delay)
                await delays.wait()
        return v

    def _breaker_state(self) -> list[bus.Message]:
        """The breaker's own health, on its subject and in the health bucket (gpuctl status shows it)."""
        at = now_ns()
        tripped = self.ledger.tripped
        why = (
            f"circuit breaker tripped: more than {self.policy.breaker_fraction:.0%} of the fleet in "
            f"{self.policy.breaker_window_s:g}s; drains are refused until the window allows"
            if tripped
            else "circuit breaker closed: drains are let through again"
        )
        state = HealthState(
            id=new_id(at), time=at, cluster=self.me.cluster, node=self.me.node, source="responder",
            component=COMPONENT, entity="circuit-breaker", health="Unhealthy" if tripped else "Healthy",
            reason=why, since=at,
        )  # fmt: skip
        (log.error if tripped else log.info)("responder: %s", why)
        key = subjects.health_key(self.me.node, COMPONENT, state.entity)
        return [bus.with_id(subjects.health_subject(self.me.node, COMPONENT), state.id, encode(state)),
                bus.kv_put(subjects.KV_HEALTH, key, encode(state))]  # fmt: skip

    async def run(self, stop: asyncio.Event) -> None:
        consumer = Consumer(
            self.js,
            stream=subjects.HEALTH.name,
            durable=self.durable,
            filter_subject=subjects.HEALTH.subjects[0],
            decoder=HEALTH_DECODER,
            stage="responder",
            handle=self.handle,
            batch=100,
            ack_wait_s=90.0,  # a batch may wait on scontrol (its MessageTimeout) and on _act's back-off
            start_seq=await self._now_seq(),
            outage=lambda e: is_outage(e) or isinstance(e, SchedulerError),  # Slurm away: hold, retry
        )
        await consumer.run(stop)

    async def _now_seq(self) -> int:
        """Where a responder made now starts: after the states already stored. Acting on a week of
        history at its first start would drain nodes for faults long repaired."""
        info = await self.js.stream_info(subjects.HEALTH.name)
        return int(info.state.last_seq) + 1


async def serve(nats_url: str, scheduler: Scheduler, policy: Policy, data_dir: Path, me: Identity) -> int:
    stop = bus.stop_on_signals()
    nc = await bus.connect(nats_url, "gpuhealth-responder", credentials=bus.auth_options())
    js = nc.jetstream()
    await bus.provision(js, missing_only=True)
    service = ResponderService(js, scheduler, policy, data_dir, me)
    mode = "acting" if policy.act else "dry-run (--act to act)"
    log.info("responder: %s through %s, breaker %.0f%% in %gs", mode, scheduler.name,
             policy.breaker_fraction * 100, policy.breaker_window_s)  # fmt: skip
    sd.ready(f"responder, {mode}")
    try:
        await asyncio.gather(service.run(stop), sd.watchdog(stop))
    finally:
        sd.stopping()
        await bus.shutdown(nc)
    return 0
