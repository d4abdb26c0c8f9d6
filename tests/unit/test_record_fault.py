"""record_fault's contract, stated outright: when an occurrence starts a new incident, what the incident keeps
and says, how severe it is, and which rung of its ladder a first sighting stands on."""

from __future__ import annotations

from typing import Any

import msgspec

from gpuhealth.events import Incident
from rules.engine import apply_all, pending_incidents
from rules.faults import FaultRule
from rules.state import NodeState
from rules.transitions import record_fault
from tests.unit.rules_run import run
from tests.unit.test_rules_table import CAT, GPU, LIM, kernel

HOUR_NS = 3600 * 10**9  # rules/limits.toml [incident] window_s


def at_ns(ev: Any, t: int) -> Any:
    return msgspec.structs.replace(ev, time=t)


def published(events: list[Any]) -> list[list[Incident]]:
    """What each event makes the service publish at once (an opened incident), then what a flush adds."""
    state: NodeState | None = None
    out = []
    for ev in events:
        state, _, inc = apply_all(state, ev, CAT)
        out.append(inc)
    return [*out, pending_incidents(state) if state is not None else []]


def test_an_occurrence_a_whole_window_after_the_last_is_still_the_same_incident_one_nanosecond_more_a_new_one() -> None:
    first = at_ns(kernel("xid", 0, xid=79, pci_bus_id=GPU), 10**9)
    same = published([first, at_ns(kernel("xid", 0, xid=79, pci_bus_id=GPU), 10**9 + HOUR_NS)])
    assert [[(i.count, i.seq) for i in p] for p in same] == [[(1, 1)], [], [(2, 2)]]
    new = published([first, at_ns(kernel("xid", 0, xid=79, pci_bus_id=GPU), 10**9 + HOUR_NS + 1)])
    # the new incident is opened and published at once, with its own id and count
    assert [[(i.count, i.seq) for i in p] for p in new] == [[(1, 1)], [(1, 1)], []]
    assert new[0][0].id != new[1][0].id


def test_an_incident_keeps_the_ids_of_its_last_eight_events() -> None:
    events = [kernel("xid", m / 10, xid=79, pci_bus_id=GPU) for m in range(10)]
    *_, flushed = published(events)
    [inc] = flushed
    assert inc.event_ids == [e.id for e in events[-8:]]


def fault_of(rule: FaultRule, **kw: Any) -> Incident:
    state = NodeState(node="n1")
    ev = kernel("oom", 0, **kw)
    record_fault(state, ev, rule, "n1", LIM, late=False)
    [inc] = pending_incidents(state)
    return inc


def test_a_rule_s_severity_is_its_own_else_its_health_else_its_first_action_s() -> None:
    assert fault_of(FaultRule("a", ("REBOOT_SYSTEM",), "r", severity="Fatal")).severity == "Fatal"
    assert fault_of(FaultRule("b", ("REBOOT_SYSTEM",), "r", health="Degraded")).severity == "Degraded"
    assert fault_of(FaultRule("c", ("REBOOT_SYSTEM",), "r")).severity == "Unhealthy"
    assert fault_of(FaultRule("d", ("CHECK_USER_APP_AND_GPU",), "r")).severity == "Degraded"


def test_a_rule_that_asks_nothing_is_an_info_incident() -> None:
    assert fault_of(FaultRule("e", ("IGNORE_NO_ACTION_REQUIRED",), "r")).severity == "Info"
    assert fault_of(FaultRule("f", (), "r")).severity == "Info"


def test_a_state_with_no_action_remembers_the_fault_that_set_it() -> None:
    """The state's cause is what a later all-clear for that fault may clear (transitions.restore)."""
    state, _ = run([kernel("nfs", m) for m in range(LIM.kernel.nfs.threshold)])
    assert state.states["nfs\x1fn1"].cause == "nfs"


def test_a_first_sighting_with_no_boot_stands_on_the_first_rung() -> None:
    state, _ = run([kernel("gpu_fallen_off_bus", 0, boot="", pci_bus_id=GPU)])
    [cs] = [cs for k, cs in state.states.items() if k.endswith(GPU)]
    assert (cs.health, cs.actions) == ("Unhealthy", ["REBOOT_SYSTEM"])
