"""How one (component, entity) state moves: faults recorded with their ladder, windows and incidents,
states raised (never to something milder: they are sticky), conditions restored, and the HealthState
each change publishes. The engine's rules (engine.py, checks.py) decide; these functions do."""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter

from gpuhealth.events import HEALTH_ORDER, Event, Health, HealthState, HostEvent, NvmlEvent, RepairAction, derived_id
from rules.catalog import ACTION_RANK, REBOOT_CLEARS
from rules.limits import Limits, Window
from rules.state import MAX_BOOTS, ComponentState, Fault, NodeState
from rules.state import key as _key


def health_of(action: str) -> Health:
    if action == "IGNORE_NO_ACTION_REQUIRED":
        return "Healthy"
    return "Degraded" if action == "CHECK_USER_APP_AND_GPU" else "Unhealthy"


def restore(
    state: NodeState, ev: HostEvent | NvmlEvent, component: str, entity: str, cause: str, message: str
) -> list[HealthState]:
    """A condition seen fine: clear the state it set, or show the entity once as Healthy."""
    key = _key(component, entity)
    cs = state.states.get(key)
    if cs is None:
        cs = state.states[key] = ComponentState(
            component=component,
            entity=entity,
            health="Healthy",
            reason="",
            since=ev.time,
            pci_bus_id=ev.pci_bus_id,
            gpu_uuid=state.gpu_uuid_by_pci.get(ev.pci_bus_id or ""),
        )
        return [set_state(state, ev, cs, "Healthy", message, [])]
    if cs.health != "Healthy" and cs.cause == cause:
        return [set_state(state, ev, cs, "Healthy", f"restored: {message}", [])]
    return []


@dataclass(frozen=True, slots=True)
class FaultRule:
    """What one kind of fault does to its (component, entity): the incident it counts in (``code``),
    the ladder of repair actions it climbs as it recurs on later boots, and for a fault judged by its
    rate, the window in the limits (``rate``, e.g. "kernel.oom") it must fill to become a state."""

    code: str
    ladder: tuple[RepairAction, ...]
    reason: str
    component: str = ""  # "": the event's own
    health: Health | None = None  # the health it sets, instead of the one its action implies; None: no state
    rate: str = ""  # a Window of rules/limits.py, by its path: a state only once it is filled
    per_minute: bool = False  # the rate counts the minutes it was seen in, not its reports
    app: bool = False  # an application's fault: it never climbs to HARDWARE_INSPECTION
    severity: str | None = None  # the incident's; None: the health the first rung implies


def record_fault(
    state: NodeState,
    ev: Event,
    rule: FaultRule,
    entity: str,
    limits: Limits,
    *,
    late: bool,
    pci: str | None = None,
    count: int = 1,
    reason: str | None = None,
) -> list[HealthState]:
    """Record ``count`` occurrences of a fault on ``entity`` and raise its state: the ladder's rung for
    the boots it was seen on, the health the action implies (or the rule's); with a rate, only once the
    occurrences inside the window reach the threshold. ``reason`` says this occurrence's (default: the rule's)."""
    component, code_key, ladder = rule.component or ev.component, rule.code, rule.ladder
    reason = rule.reason if reason is None else reason
    key = _key(component, entity, code_key)
    fault = state.faults.setdefault(key, Fault(first=ev.time, last=ev.time))
    if ev.time - fault.last > state.incident_window_ns:  # quiet for a window: a new incident
        fault.first, fault.count, fault.updates, fault.published, fault.event_ids = ev.time, 0, 0, 0, []
    fault.count += count
    fault.last = max(fault.last, ev.time)
    fault.event_ids = [*fault.event_ids[-7:], ev.id]
    fault.reason, fault.pci_bus_id = reason, pci
    severity = rule.severity or rule.health or (health_of(ladder[0]) if ladder else "Info")
    fault.severity = "Info" if severity == "Healthy" else severity
    # The ladder counts boots the node really went through: not one only a late or odd event names.
    if ev.boot_id and ev.boot_id not in fault.boots and (not late or ev.boot_id in state.past_boots):
        fault.boots.append(ev.boot_id)
        del fault.boots[:-MAX_BOOTS]
    filled = True
    if rule.rate:
        rate: Window = attrgetter(rule.rate)(limits)
        seen = _in_window(fault, rule, rate, ev.time, count)
        filled = seen >= rate.threshold
        reason = f"{reason}: {seen}{' minutes' if rule.per_minute else ''} in {span(rate.window_s)}"
    # An incident says what the state says: a rate's occurrences count from the first, but they are an incident
    # only once they fill its window (one OOM is no Degraded incident, one port down no "flapping").
    if filled or fault.updates:
        fault.updates += 1
        if key not in state.touched:
            state.touched.append(key)
    if not filled:
        return []
    if not ladder:  # a state to watch, with no repair action
        if rule.health is None:
            return []
        return raise_state(state, ev, component, entity, rule.health, [], reason, code_key, pci)
    step = min((len(fault.boots) - 1) // 2, len(ladder) - 1) if fault.boots else 0
    while step > 0 and (
        ACTION_RANK[ladder[step]] <= ACTION_RANK[ladder[0]] or (rule.app and ladder[step] == "HARDWARE_INSPECTION")
    ):
        step -= 1
    action = ladder[step]
    if step > 0:
        reason += f" (seen on {len(fault.boots)} boots: escalated)"
    if late and action in REBOOT_CLEARS:
        return []  # a stale fault from a boot already left
    return raise_state(state, ev, component, entity, rule.health or health_of(action), [action], reason, code_key, pci)


def _in_window(fault: Fault, rule: FaultRule, rate: Window, time: int, count: int) -> int:
    """Add an occurrence to the fault's rate window; how many the window holds now."""
    if rule.per_minute:  # count the minutes it was seen in, not how often it was reported
        minute = time // 60_000_000_000
        if not fault.window or fault.window[-1][0] // 60_000_000_000 != minute:
            fault.window.append((time, 1))
    else:
        fault.window.append((time, count))
    horizon = time - rate.window_s * 1_000_000_000
    fault.window = [w for w in fault.window if w[0] > horizon]
    return sum(n for _, n in fault.window)


def raise_state(
    state: NodeState,
    ev: Event,
    component: str,
    entity: str,
    health: Health,
    actions: list[RepairAction],
    reason: str,
    cause: str,
    pci: str | None,
) -> list[HealthState]:
    """Move (component, entity) to ``health`` unless it is already as bad or worse (states are sticky)."""
    if health == "Healthy":
        return []  # an incident without a state change
    key = _key(component, entity)
    current = state.states.get(key)
    if current is not None and worse_or_equal(current, health, actions[0] if actions else None):
        return []
    cs = current or ComponentState(component=component, entity=entity, health="Healthy", reason="", since=ev.time)
    cs.pci_bus_id = pci
    cs.gpu_uuid = state.gpu_uuid_by_pci.get(pci or "")
    cs.cause = cause
    state.states[key] = cs
    return [set_state(state, ev, cs, health, reason, actions)]


def span(seconds: int) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"


def worse_or_equal(cs: ComponentState, health: Health, action: str | None) -> bool:
    cur_action = ACTION_RANK[cs.actions[0]] if cs.actions else -1
    new_action = ACTION_RANK[action] if action else -1
    return (HEALTH_ORDER[cs.health], cur_action) >= (HEALTH_ORDER[health], new_action)


def set_state(
    state: NodeState, ev: Event, cs: ComponentState, health: Health, reason: str, actions: list[RepairAction]
) -> HealthState:
    cs.health, cs.reason, cs.actions, cs.since = health, reason, actions, ev.time
    cs.event_ids = [ev.id]
    return HealthState(
        id=derived_id(ev.time, state.node, cs.component, cs.entity, ev.id),
        time=ev.time,
        cluster=state.cluster,
        node=state.node,
        machine_id=state.machine_id,
        boot_id=state.boot_id,
        source="rules",
        component=cs.component,
        entity=cs.entity,
        health=health,
        reason=reason,
        repair_actions=list(actions),
        since=ev.time,
        event_ids=list(cs.event_ids),
        gpu_uuid=cs.gpu_uuid,
        pci_bus_id=cs.pci_bus_id,
    )
