"""The rules engine: (node state, event) → (node state, health state changes).

Pure and deterministic: no I/O, no clock but the event's time, no randomness.
The same event history gives the same states, so a restart that resumes from
the saved state, a replay over last month, and a live run all agree. The state
is per node, so the service can spread nodes over instances.

Semantics (../DESIGN.md "Health semantics"):
- a fault sets its (component, entity) to the catalog's first repair action;
  the health follows from the action (IGNORE → no change, CHECK_USER_APP →
  Degraded, anything stronger → Unhealthy);
- the catalog's action list is an escalation ladder: the next rung once the
  same fault has been seen on ≥ 3 boots (it recurred after ≥ 2 reboots);
  application Xids never climb to hardware;
- states are sticky at their worst; a new boot clears reboot-class states,
  HARDWARE_INSPECTION only clears by an explicit set-healthy; a boot is new when it began after
  the current one (boots.py): a late word of an older boot is history;
- an event already applied changes nothing: a redelivery is recognised by its stream sequence
  (``seq``, at or below the node's ``applied_seq``), a re-published copy by its id;
- an observed condition (a link's width, a port's state, a service, a
  temperature) clears when the producer sees it restored; a fault (an error
  that happened) is sticky.
"""

from __future__ import annotations

from gpuhealth.events import (
    CheckResult,
    Event,
    Health,
    HealthState,
    HostEvent,
    Incident,
    Inventory,
    KernelEvent,
    NvlinkDetail,
    NvmlEvent,
    SetHealthy,
    SourceStatus,
    Verification,
    derived_id,
)
from gpuhealth.text import clip
from rules import checks
from rules.boots import boot_change
from rules.catalog import APPLICATION_XIDS, Catalog
from rules.faults import (
    HOST_FAULTS,
    KERNEL_FAULTS,
    NODE_WIDE,
    NVML_FAULTS,
    SERVICE_HEALTH,
    UNRECOGNISED,
    XID154,
    XID154_ACTIONS,
    XID_COMPONENT,
)
from rules.state import (
    ComponentState,
    NodeState,
    Sighting,
    first_time,
)
from rules.state import (
    key as _key,
)
from rules.transitions import FaultRule, raise_state, record_fault, restore, set_state, span

# The driver reports an Xid twice, as a kernel-log line and as an NVML event (0.02 s apart on a real H100):
# within this window a report pairs with an unpaired one of the other witness, and they are one fault.
# Generous, as the line's time comes from the boot clock and NVML's from the wall clock.
PAIR_WINDOW_NS = 30 * 10**9
MAX_SIGHTINGS = 32  # per GPU and code: a storm unpaired is counted, not remembered
WITNESS = {"kmsg": "kernel", "journald": "kernel", "nvml": "nvml"}

# ---------------------------------------------------------------- the entry point


def apply(state: NodeState | None, event: Event, catalog: Catalog) -> tuple[NodeState, list[HealthState]]:
    """Apply one event. The engine owns ``state``: it returns it updated, with the state changes."""
    state, changes, _ = apply_all(state, event, catalog)
    return state, changes


def apply_all(
    state: NodeState | None, event: Event, catalog: Catalog, seq: int = 0
) -> tuple[NodeState, list[HealthState], list[Incident]]:
    """Apply one event: the updated state, the health state changes and the incidents it opened.

    ``seq`` is the event's stream sequence (0: not from a stream, as in a replay); a node's events
    must come in stream order, so one at or below the last applied is a redelivery, whatever the
    batch size or how many events came since.

    An incident that grew (one more occurrence) is not an output here: ``pending_incidents`` gives
    its latest update when the service flushes (a storm of 100,000 lines is a handful of updates,
    not 100,000 messages), and the count in the state is exact meanwhile."""
    if state is None:
        state = NodeState(node=event.node)
    state.touched = []
    if seq:
        if seq <= state.applied_seq:
            return state, [], []
        state.applied_seq = seq
    if not first_time(state, event.id):
        return state, [], []
    state.incident_window_ns = catalog.limits.incident.window_s * 1_000_000_000
    outputs, late = boot_change(state, event)
    if not late:  # an operator's event may not know the cluster or machine: keep what the node said
        state.cluster, state.machine_id = event.cluster or state.cluster, event.machine_id or state.machine_id
    if isinstance(event, KernelEvent):
        outputs += _kernel(state, event, catalog, late)
    elif isinstance(event, NvmlEvent):
        outputs += _nvml(state, event, catalog, late)
    elif isinstance(event, SourceStatus):
        outputs += _source_status(state, event)
    elif isinstance(event, HostEvent):
        outputs += _host(state, event, catalog, late)
    elif isinstance(event, SetHealthy):
        outputs += _set_healthy(state, event)
    elif isinstance(event, CheckResult):
        outputs += _decide(state, event, checks.check(event))
    elif isinstance(event, Verification):
        outputs += _decide(state, event, checks.verification(event))
    opened = []
    for key in state.touched:
        if (fault := state.faults[key]).updates == 1:
            opened.append(_incident(state, key, event.time))
            fault.published = 1
    return state, outputs, opened


def has_pending(state: NodeState, *, all_faults: bool = False) -> bool:
    """Whether an incident the last event touched (or, with ``all_faults``, any incident) grew and
    is not published yet."""
    keys = state.faults.keys() if all_faults else state.touched
    return any(state.faults[k].updates > state.faults[k].published for k in keys)


def pending_incidents(state: NodeState) -> list[Incident]:
    """The latest update of every incident that grew since it was last published, marked published."""
    out = []
    for key, fault in state.faults.items():
        if fault.updates > fault.published:
            out.append(_incident(state, key, fault.last))
            fault.published = fault.updates
    return out


def _incident(state: NodeState, key: str, time: int) -> Incident:
    f = state.faults[key]
    component, entity, code = key.split("\x1f")
    return Incident(
        id=derived_id(f.first, state.node, key),
        time=time,
        cluster=state.cluster,
        node=state.node,
        machine_id=state.machine_id,
        boot_id=state.boot_id,
        source="rules",
        component=component,
        entity=entity,
        code=code,
        severity=f.severity,
        reason=f.reason,
        count=f.count,
        first=f.first,
        last=f.last,
        seq=f.updates,
        event_ids=list(f.event_ids),
        pci_bus_id=f.pci_bus_id,
        gpu_uuid=state.gpu_uuid_by_pci.get(f.pci_bus_id or ""),
    )


def apply_inventory(state: NodeState | None, inventory: Inventory) -> NodeState:
    if state is None:
        state = NodeState(node=inventory.node)
    state.gpu_uuid_by_pci = {g.pci_bus_id: g.uuid for g in inventory.gpus if g.uuid}
    return state


# ---------------------------------------------------------------- rules (their tables: rules/faults.py)


def _xid(
    state: NodeState,
    ev: Event,
    code: int,
    pci: str | None,
    message: str,
    catalog: Catalog,
    *,
    late: bool,
    count: int = 1,
    nvlink: NvlinkDetail | None = None,
) -> list[HealthState]:
    """An Xid from the kernel log or from NVML's event: one state per GPU either way."""
    entry = catalog.xid.get(code)
    if entry is None:
        ladder, reason = UNRECOGNISED, f"unrecognised Xid {code}"
    else:
        ladder, reason = entry.ladder, f"Xid {code}: {entry.name}"
        if code == 154 and (m := XID154.search(message)):
            ladder = (XID154_ACTIONS.get(m.group(1).strip().lower(), "RESET_GPU"),)
            reason = f"Xid 154: GPU recovery action changed to {m.group(1)}"
        elif 144 <= code <= 150 and nvlink is not None and nvlink.fatal is not None:
            # The unit and Fatal/Nonfatal the driver printed pick the decode rule's action.
            action = catalog.nvlink.get((code, nvlink.unit, nvlink.fatal))
            action = action or ("RESET_GPU" if nvlink.fatal else "IGNORE_NO_ACTION_REQUIRED")
            ladder = (action, "HARDWARE_INSPECTION") if action != "IGNORE_NO_ACTION_REQUIRED" else (action,)
            reason += f" ({nvlink.unit or 'unit not printed'}, {'fatal' if nvlink.fatal else 'non-fatal'})"
    if pci is not None and not (count := _new_occurrences(state, ev, code, pci, count)):
        return []  # the other witness's report of the same fault: counted and stated already
    severity = entry.severity if entry else "Unknown"
    rule = FaultRule(f"xid:{code}", ladder, reason, XID_COMPONENT, app=code in APPLICATION_XIDS, severity=severity)
    return record_fault(state, ev, rule, pci or "unknown", catalog.limits, late=late, pci=pci, count=count)


def _new_occurrences(state: NodeState, ev: Event, code: int, pci: str, count: int) -> int:
    """How many of ``count`` reports of Xid ``code`` are faults not yet counted: those the other witness
    did not report already. Each source alone still counts every occurrence."""
    witness = WITNESS.get(ev.source)
    if witness is None:
        return count
    # Stale: older than the window. Not "far from this event" either way: a late line replayed from the kernel
    # log at an agent's start must not forget the reports of the present it cannot pair with.
    for stale in [k for k, seen in state.sightings.items() if ev.time - seen[-1].time > PAIR_WINDOW_NS]:
        del state.sightings[stale]
    key = f"{pci}\x1f{code}"
    kept = [s for s in state.sightings.get(key, []) if abs(ev.time - s.time) <= PAIR_WINDOW_NS]
    new = count
    for s in kept:
        if new and s.witness != witness:
            paired = min(s.left, new)
            s.left, new = s.left - paired, new - paired
    kept = [s for s in kept if s.left]
    if new:
        kept.append(Sighting(witness, ev.time, new))
    if kept:
        state.sightings[key] = kept[-MAX_SIGHTINGS:]
    else:
        state.sightings.pop(key, None)
    return new


def _kernel(state: NodeState, ev: KernelEvent, catalog: Catalog, late: bool) -> list[HealthState]:
    pci, lim = ev.pci_bus_id, catalog.limits
    if ev.kind == "xid" and ev.xid is not None:
        return _xid(state, ev, ev.xid, pci, ev.message, catalog, late=late, count=ev.count, nvlink=ev.nvlink)
    if ev.kind == "sxid" and ev.sxid is not None:
        entry = catalog.sxid.get(ev.sxid)
        sxid = FaultRule(
            f"sxid:{ev.sxid}",
            entry.ladder if entry else UNRECOGNISED,
            f"SXid {ev.sxid}: {entry.name}" if entry else f"unrecognised SXid {ev.sxid}",
            severity=entry.severity if entry else "Unknown",
        )
        return record_fault(state, ev, sxid, pci or "unknown", lim, late=late, pci=pci, count=ev.count)
    rule = KERNEL_FAULTS.get(ev.kind or "")
    if rule is None:
        # AER, link, IB and EDAC lines are stored; their states come from the sysfs counters, which
        # count every error once (the log may rate-limit or repeat them).
        return []
    reason = f"{rule.reason}: {clip(ev.message, 160)}" if ev.kind in ("gsp", "fs_readonly") else None
    if ev.kind in NODE_WIDE:
        return record_fault(state, ev, rule, ev.node, lim, late=late, count=ev.count, reason=reason)
    return record_fault(state, ev, rule, pci or "unknown", lim, late=late, pci=pci, count=ev.count, reason=reason)


def _nvml(state: NodeState, ev: NvmlEvent, catalog: Catalog, late: bool) -> list[HealthState]:
    if ev.kind == "xid" and ev.xid is not None:
        return _xid(state, ev, ev.xid, ev.pci_bus_id, ev.message, catalog, late=late)
    entity, pci = ev.pci_bus_id or ev.node, ev.pci_bus_id
    rule = NVML_FAULTS.get(ev.kind)
    if rule is None or (ev.kind == "slowdown" and not ev.data):
        return []  # power-source events (and an older agent's clock events) are stored, not states
    if ev.kind == "temperature" and not ev.data:
        return restore(state, ev, rule.component, entity, "temperature", ev.message)
    reason: str | None = None  # None: the rule's own
    if ev.kind == "temperature":
        reason = ev.message
    elif ev.kind == "slowdown":
        reason = f"hardware slowdown ({ev.message})" if ev.message else None
    elif ev.kind == "hung":
        reason = f"NVML {ev.message or 'call'} hung"
    elif ev.kind != "ecc_sbe" and ev.message:  # the producer's words, once: not "pending: row remapping pending"
        said = ev.message.lower().startswith(rule.reason.lower())
        reason = ev.message if said else f"{rule.reason}: {ev.message}"
    return record_fault(state, ev, rule, entity, catalog.limits, late=late, pci=pci, reason=reason)


def _host(state: NodeState, ev: HostEvent, catalog: Catalog, late: bool) -> list[HealthState]:
    """sysfs and host facts: counters become rate or any-occurrence faults, conditions states."""
    lim, c, e, pci = catalog.limits, ev.component, ev.entity, ev.pci_bus_id
    out: list[HealthState] = []

    def fault(code: str, n: int = 1, reason: str | None = None, on_pci: bool = True) -> None:
        nonlocal out
        rule = HOST_FAULTS[code]
        out += record_fault(state, ev, rule, e, lim, late=late, pci=pci if on_pci else None, count=n, reason=reason)

    if ev.kind == "aer":
        if n := ev.counts.get("fatal", 0):
            fault("aer_fatal", n, f"PCIe AER fatal errors (+{n})")
        for sev in ("nonfatal", "correctable"):
            if n := ev.counts.get(sev, 0):
                fault(f"aer_{sev}", n)
    elif ev.kind == "edac":
        if n := ev.counts.get("ue", 0):
            fault("edac_ue", n, f"uncorrectable memory errors (+{n})", on_pci=False)
        if n := ev.counts.get("ce", 0):
            fault("edac_ce", n, on_pci=False)
    elif ev.kind == "ib_errors":
        if n := sum(ev.counts.values()):
            fault("ib_errors", n, on_pci=False)
    elif ev.kind == "ib_port":
        if n := ev.counts.get("downs", 0):
            fault("ib_flapping", n, on_pci=False)
        if ev.ok:
            out += restore(state, ev, c, e, "ib_port", ev.message)
        elif ev.time - ev.since >= lim.infiniband.down_s * 1_000_000_000:
            down = span((ev.time - ev.since) // 1_000_000_000)
            fault("ib_port", reason=f"{ev.message}, down for {down}", on_pci=False)
        else:
            out += raise_state(state, ev, c, e, "Degraded", [], ev.message, "ib_port", pci)
    elif ev.kind in ("link", "thermal", "service"):
        if ev.ok:
            out += restore(state, ev, c, e, ev.kind, ev.message)
        elif ev.kind == "service":
            health, actions = SERVICE_HEALTH.get(e, ("Degraded", []))
            out += raise_state(state, ev, c, e, health, list(actions), ev.message, "service", pci)
        else:
            fault(ev.kind, reason=ev.message)
    elif ev.kind == "module":
        out += restore(state, ev, c, e, ev.kind, ev.message)
    return out  # pstore records and reboots are stored; the reboot's boot_id did its clearing above


def _source_status(state: NodeState, ev: SourceStatus) -> list[HealthState]:
    health: Health
    if ev.available:
        health, reason = "Healthy", ev.reason
    elif not ev.applicable:
        health, reason = "Healthy", f"not applicable: {ev.reason}"
    else:
        health, reason = "Unknown", ev.reason
    key = _key(ev.component, ev.node)
    cs = state.states.get(key)
    if cs is not None and cs.health == health and cs.reason == reason:
        return []
    if cs is None:
        cs = state.states[key] = ComponentState(
            component=ev.component, entity=ev.node, health=health, reason="", since=ev.time
        )
    return [set_state(state, ev, cs, health, reason, [])]


def _decide(state: NodeState, ev: Event, d: checks.Decision) -> list[HealthState]:
    """A condition's latest word: published when its health or actions change, or an unhealthy reason does."""
    key = _key(d.component, d.entity)
    cs = state.states.get(key)
    if (
        cs is not None
        and (cs.health, cs.actions) == (d.health, d.actions)
        and (d.health == "Healthy" or cs.reason == d.reason)
    ):
        return []
    if cs is None:
        cs = state.states[key] = ComponentState(
            component=d.component, entity=d.entity, health=d.health, reason="", since=ev.time
        )
    return [set_state(state, ev, cs, d.health, d.reason, d.actions)]


def _set_healthy(state: NodeState, ev: SetHealthy) -> list[HealthState]:
    out = []
    for cs in state.states.values():
        if cs.component == ev.target_component and ev.entity in (None, cs.entity) and cs.health != "Healthy":
            why = f"set healthy by {ev.user or 'an operator'}: {ev.reason}".rstrip(": ")
            out.append(set_state(state, ev, cs, "Healthy", why, []))
    return out
