"""record_fault's contract for any rule, stated with rules built here: how severe its incident is, and what
the state it raises remembers. (The tables' own rules are test_rules_table.py's and test_engine_kernel.py's.)"""

from __future__ import annotations

from gpuhealth.events import Incident
from rules.engine import pending_incidents
from rules.faults import FaultRule
from rules.state import NodeState
from rules.transitions import record_fault
from tests.unit.rules_run import run
from tests.unit.test_rules_table import LIM, kernel


def incident_of(rule: FaultRule) -> Incident:
    state = NodeState(node="n1")
    record_fault(state, kernel("oom", 0), rule, "n1", LIM, late=False)
    [inc] = pending_incidents(state)
    return inc


def test_a_rule_s_severity_is_its_own_else_its_health_else_its_first_action_s() -> None:
    assert incident_of(FaultRule("a", ("REBOOT_SYSTEM",), "r", severity="Fatal")).severity == "Fatal"
    assert incident_of(FaultRule("b", ("REBOOT_SYSTEM",), "r", health="Degraded")).severity == "Degraded"
    assert incident_of(FaultRule("c", ("REBOOT_SYSTEM",), "r")).severity == "Unhealthy"
    assert incident_of(FaultRule("d", ("CHECK_USER_APP_AND_GPU",), "r")).severity == "Degraded"


def test_a_rule_that_asks_nothing_is_an_info_incident() -> None:
    assert incident_of(FaultRule("e", ("IGNORE_NO_ACTION_REQUIRED",), "r")).severity == "Info"
    assert incident_of(FaultRule("f", (), "r")).severity == "Info"


def test_a_state_with_no_action_remembers_the_fault_that_set_it() -> None:
    """The state's cause is what a later all-clear for that fault may clear (transitions.restore)."""
    state, _ = run([kernel("nfs", m) for m in range(LIM.kernel.nfs.threshold)])
    assert state.states["nfs\x1fn1"].cause == "nfs"
