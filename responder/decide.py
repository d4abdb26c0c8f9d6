"""The responder's decisions, as plain functions over values: a health state, what the responder holds
(its ledger), what the scheduler says of the node now, and the policy in, a verdict out.

Rules, in order:
- A repair action of the drain class (REBOOT_SYSTEM, RESET_GPU, HARDWARE_INSPECTION) drains the node with
  a reason naming gpuhealth, the component, the GPU and the health state.
- A node is resumed only when every fault that drained it is Healthy again, and only if gpuhealth drained
  it: the ledger says so and the scheduler still shows gpuhealth's own reason. A node a person drained,
  or drained again since, is left as it is (NHC's ownership rule).
- One fault type on ``burst_nodes`` nodes of one switch or rack within ``burst_window_s`` is a fleet
  incident (responder/correlate.py): from then on the drains in that group are held for a person, and
  the drains gpuhealth made for that fault on the burst's earlier nodes (before it was known as one)
  are released (``release``), each node resumed only if it still shows gpuhealth's own reason. A held
  node is neither drained nor resumed automatically until it is Healthy again (a reboot, or a person's
  set-healthy).
- The circuit breaker refuses a drain that would take more than ``breaker_fraction`` of the fleet out
  within ``breaker_window_s``; the rate limit refuses more than ``max_drains_per_minute``.
- Dry-run (the default) decides the same and does nothing: its outcome says what --act would have done.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

import msgspec

from gpuhealth.events import HealthState, ResponderAction, ResponderOutcome
from responder.adapters import NodeState, slurm_reason
from responder.correlate import FleetIncident, Topology, burst

DRAIN_ACTIONS = ("REBOOT_SYSTEM", "RESET_GPU", "HARDWARE_INSPECTION")
REASON_PREFIX = "gpuhealth:"
COMPONENT = "gpuhealth-responder"  # the responder's own health (its breaker), which it does not act on


@dataclass(frozen=True)
class Policy:
    act: bool = False
    breaker_fraction: float = 0.5
    breaker_window_s: float = 300.0
    max_drains_per_minute: int = 10
    fleet_size: int = 0  # 0: the scheduler's fleet (or, failing that, the nodes seen)
    burst_nodes: int = 3  # 0: no fleet correlation
    burst_window_s: float = 60.0
    topology: Topology = field(default_factory=Topology)
    inventory_groups: tuple[str, ...] = ()  # also group by these of the nodes' inventories (driver, gpu-model)


class Ledger(msgspec.Struct, kw_only=True):
    """What the responder holds, kept in its data dir: the faults that keep each node drained, the
    reason it drained each node with, and when it drained (the breaker's and the rate limit's window)."""

    faults: dict[str, dict[str, str]] = {}  # node -> {component/entity: health state id}
    owned: dict[str, str] = {}  # node -> the reason gpuhealth drained it with
    drains: list[tuple[float, str]] = []  # (seconds, node)
    seen: list[str] = []  # nodes health states came from: the fleet when the scheduler cannot say
    tripped: bool = False  # the breaker refused a drain, and has not let one through since
    recent: list[tuple[float, str, str]] = []  # (seconds, node, component) of drain-class faults: bursts
    incidents: dict[str, FleetIncident] = {}  # open fleet incidents by kind:group:component
    held: dict[str, str] = {}  # node -> the fleet incident (key) it is held for, until a person acts


class Verdict(NamedTuple):
    action: ResponderAction
    outcome: ResponderOutcome
    why: str
    reason: str = ""  # the scheduler reason of a drain
    in_effect: bool = False  # the scheduler shows it done already (by gpuhealth before a restart)
    incident: FleetIncident | None = None  # the fleet incident a held drain belongs to
    release: tuple[str, ...] = ()  # earlier nodes of a burst whose drain for its fault is to be released


def drain_reason(h: HealthState) -> str:
    actions = [a for a in h.repair_actions if a in DRAIN_ACTIONS]
    gpu = h.gpu_uuid or h.entity
    where = f"{gpu} ({h.pci_bus_id})" if h.pci_bus_id and h.pci_bus_id not in gpu else gpu
    return slurm_reason(f"{REASON_PREFIX} {','.join(actions)} {h.component} {where}: {h.reason} (health {h.id})")


def wants_drain(h: HealthState) -> bool:
    return h.health != "Healthy" and any(a in DRAIN_ACTIONS for a in h.repair_actions)


def asks_scheduler(ledger: Ledger, h: HealthState) -> bool:
    """Whether deciding on the state needs the node's state from the scheduler (most states do not)."""
    return wants_drain(h) or (h.health == "Healthy" and h.node in ledger.owned)


def intent(ledger: Ledger, h: HealthState) -> tuple[ResponderAction, str]:
    """What the state asks of its node, given the faults the ledger holds (which it updates)."""
    key = f"{h.component}/{h.entity}"
    faults = ledger.faults.setdefault(h.node, {})
    if h.node not in ledger.seen:
        ledger.seen.append(h.node)
    if wants_drain(h):
        faults[key] = h.id
        if h.node in ledger.owned:
            return "none", f"already drained by gpuhealth: {ledger.owned[h.node]}"
        return "drain", drain_reason(h)
    if h.health != "Healthy":  # Unknown or Degraded is no repair: what drained the node still holds
        if not faults:
            ledger.faults.pop(h.node, None)
        return "none", f"{h.health} with no drain-class repair action: nothing to do"
    faults.pop(key, None)
    if not faults:
        ledger.faults.pop(h.node, None)
        if ledger.held.pop(h.node, None):
            return "none", f"every fault of {h.node} is cleared: the fleet incident hold ends, nothing to resume"
    if h.node not in ledger.owned:
        return "none", f"Healthy, and gpuhealth holds no drain of {h.node}"
    if faults:
        return "none", f"{h.node} stays drained: {len(faults)} fault(s) remain ({', '.join(sorted(faults))})"
    return "resume", f"every fault that drained {h.node} is cleared ({h.health}: {h.reason})"


def gate(ledger: Ledger, policy: Policy, fleet: int, now: float, node: str = "") -> str | None:
    """Why a drain of ``node`` now is refused (the circuit breaker, over the fleet and over each switch
    or rack of the site's topology it is in, then the rate limit), or None."""
    window = [(t, n) for t, n in ledger.drains if t > now - policy.breaker_window_s]
    last_minute = sum(1 for t, _ in ledger.drains if t > now - 60)
    size = policy.fleet_size or fleet or len(ledger.seen)
    allowed = int(policy.breaker_fraction * size)
    drained = len({n for _, n in window})
    if drained + 1 > allowed:
        return (
            f"circuit breaker: {drained} of {size} nodes drained in the last {policy.breaker_window_s:g}s, "
            f"the limit is {policy.breaker_fraction:.0%} ({allowed})"
        )
    for kind, name in policy.topology.groups_of(node):
        members = set(policy.topology.groups[kind][name])
        allowed = int(policy.breaker_fraction * len(members))
        drained = len({n for _, n in window if n in members})
        if drained + 1 > allowed:
            return (
                f"circuit breaker: {drained} of {len(members)} nodes of {kind} {name} drained in the last "
                f"{policy.breaker_window_s:g}s, the limit is {policy.breaker_fraction:.0%} ({allowed})"
            )
    if last_minute >= policy.max_drains_per_minute:
        return f"rate limit: {last_minute} drains in the last 60s (at most {policy.max_drains_per_minute})"
    return None


def decide(ledger: Ledger, h: HealthState, current: NodeState, policy: Policy, fleet: int, now: float,
           labels: Mapping[str, list[tuple[str, str]]] | None = None) -> Verdict:  # fmt: skip
    """The verdict on one health state; ``record`` then keeps its effect in the ledger. ``labels``: the
    groups the nodes' inventories put them in (``policy.inventory_groups``), beside the site's topology."""
    action, why = intent(ledger, h)
    done: ResponderOutcome = "acted" if policy.act else "dry_run"
    if action == "none":
        return Verdict("none", "skipped", why)
    if not current.exists:
        return Verdict(action, "skipped", f"the scheduler has no node {h.node}")
    if action == "drain":
        if current.drained and current.reason.startswith(REASON_PREFIX):
            return Verdict("drain", "acted", f"already drained by gpuhealth: {current.reason}", current.reason, True)
        if current.drained:
            return Verdict("drain", "skipped", f"already drained by someone else: {current.reason}")
        if h.node in ledger.held:
            return Verdict("drain", "held", f"{h.node} is held for the fleet incident {ledger.held[h.node]}: a "
                           "person decides (set-healthy ends it)")  # fmt: skip

        def groups_of(node: str) -> list[tuple[str, str]]:
            return policy.topology.groups_of(node) + list((labels or {}).get(node, []))

        incident = burst(ledger.recent, ledger.incidents, groups_of, h.node, h.component, now,
                         nodes=policy.burst_nodes, window_s=policy.burst_window_s)  # fmt: skip
        if incident is not None:
            return Verdict("drain", "held", incident.describe(policy.burst_window_s), incident=incident,
                           release=releasable(ledger, incident))  # fmt: skip
        refused = gate(ledger, policy, fleet, now, h.node)
        if refused:
            return Verdict("drain", "refused", refused)
        return Verdict("drain", done, why, why)
    owned = ledger.owned[h.node]
    if policy.act and not (current.drained and current.reason == owned):
        said = f"drained with {current.reason!r}" if current.drained else "not drained"
        return Verdict("resume", "skipped", f"{h.node} is {said} now, not by gpuhealth: left as it is")
    if not policy.act and current.drained:  # dry-run drained nothing: a drain seen now is someone else's
        return Verdict("resume", "skipped", f"{h.node} is drained by someone else: {current.reason}")
    return Verdict("resume", done, why)


def releasable(ledger: Ledger, incident: FleetIncident) -> tuple[str, ...]:
    """The burst's nodes gpuhealth drained for its fault alone: a node another fault keeps drained stays."""
    return tuple(n for n in incident.nodes if n in ledger.owned and ledger.faults.get(n)
                 and all(k.split("/", 1)[0] == incident.fault for k in ledger.faults[n]))  # fmt: skip


def release(ledger: Ledger, node: str, current: NodeState, incident: FleetIncident, policy: Policy) -> Verdict:
    """The verdict on gpuhealth's drain of an earlier node of a burst: resumed and held for a person, if
    the node still shows gpuhealth's own reason (a person's drain, or a person's resume, is left as it is)."""
    owned = ledger.owned[node]
    if policy.act and not (current.drained and current.reason == owned):
        said = f"drained with {current.reason!r}" if current.drained else "not drained"
        return Verdict("resume", "skipped", f"{node} is {said} now, not by gpuhealth: left as it is")
    if not policy.act and current.drained:  # dry-run drained nothing: a drain seen now is someone else's
        return Verdict("resume", "skipped", f"{node} is drained by someone else: {current.reason}")
    why = f"gpuhealth's drain released: {incident.describe(policy.burst_window_s)}"
    return Verdict("resume", "held", why, incident=incident)


def record(ledger: Ledger, node: str, verdict: Verdict, now: float, policy: Policy) -> None:
    """Keep what a verdict did: a drain owned (and counted by the breaker), a node held for a fleet
    incident (its drain, if any, released), a resume given up, a resume skipped because the node is not
    gpuhealth's any more given up too."""
    kept = max(policy.breaker_window_s, 60.0)  # the breaker's window, and the rate limit's minute
    ledger.drains = [(t, n) for t, n in ledger.drains if t > now - kept]
    if verdict.outcome == "held" and verdict.incident is not None:
        ledger.owned.pop(node, None)  # a released drain: no longer gpuhealth's to resume
        ledger.held[node] = verdict.incident.key()
    elif verdict.action == "drain" and verdict.outcome in ("acted", "dry_run"):
        if node not in ledger.owned:
            ledger.drains.append((now, node))
        ledger.owned[node] = verdict.reason
        ledger.tripped = False
    elif verdict.action == "drain" and verdict.outcome == "refused" and verdict.why.startswith("circuit breaker"):
        ledger.tripped = True
    elif verdict.action == "resume" and verdict.outcome in ("acted", "dry_run", "skipped"):
        ledger.owned.pop(node, None)
