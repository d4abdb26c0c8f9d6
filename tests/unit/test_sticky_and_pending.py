"""Three small promises the rules service leans on, each stated outright.

- States are sticky: a state moves only to something worse, where an action outranks none at the same health.
- `has_pending` says whether an incident grew and was not published: of the faults the last event touched
  (what the service checks after each event), or of all of them (what a flush checks).
- Xid 154 names the recovery the driver wants; one the table does not know still asks for a GPU reset.
"""

from __future__ import annotations

from rules.engine import apply_all, has_pending, pending_incidents
from rules.state import ComponentState
from rules.transitions import worse_or_equal
from tests.unit.rules_run import run
from tests.unit.test_rules_table import CAT, GPU, kernel

OTHER_GPU = "0000:3b:00.0"


def at(health: str, *actions: str) -> ComponentState:
    return ComponentState(component="c", entity="e", health=health, reason="", since=0, actions=list(actions))  # type: ignore[arg-type]


def test_a_state_is_as_bad_as_itself_with_or_without_an_action() -> None:
    assert worse_or_equal(at("Degraded"), "Degraded", None)
    assert worse_or_equal(at("Degraded", "IGNORE_NO_ACTION_REQUIRED"), "Degraded", "IGNORE_NO_ACTION_REQUIRED")


def test_an_action_where_there_was_none_is_worse_even_the_least_of_them() -> None:
    assert not worse_or_equal(at("Degraded"), "Degraded", "IGNORE_NO_ACTION_REQUIRED")
    assert not worse_or_equal(at("Degraded"), "Degraded", "REBOOT_SYSTEM")


def test_no_action_where_there_was_one_is_not_worse() -> None:
    assert worse_or_equal(at("Degraded", "IGNORE_NO_ACTION_REQUIRED"), "Degraded", None)
    assert worse_or_equal(at("Unhealthy", "RESET_GPU"), "Unhealthy", None)


def test_health_outranks_action() -> None:
    assert not worse_or_equal(at("Degraded", "HARDWARE_INSPECTION"), "Unhealthy", None)
    assert worse_or_equal(at("Unhealthy"), "Degraded", "HARDWARE_INSPECTION")


def test_pending_growth_is_told_apart_by_what_the_last_event_touched() -> None:
    # Xid 95 on one GPU: opened (published at once), then grown (pending) ...
    state, _, opened = apply_all(None, kernel("xid", 0, xid=95, pci_bus_id=GPU), CAT)
    assert len(opened) == 1 and not has_pending(state) and not has_pending(state, all_faults=True)
    state, _, _ = apply_all(state, kernel("xid", 1, xid=95, pci_bus_id=GPU), CAT)
    assert has_pending(state) and has_pending(state, all_faults=True)
    # ... then a new fault on another GPU, opened and published at once: the last event left nothing pending,
    # the node still has the first GPU's growth to publish.
    state, _, _ = apply_all(state, kernel("xid", 2, xid=13, pci_bus_id=OTHER_GPU), CAT)
    assert not has_pending(state)
    assert has_pending(state, all_faults=True)
    [grown] = pending_incidents(state)
    assert (grown.entity, grown.code, grown.count) == (GPU, "xid:95", 2)
    assert not has_pending(state, all_faults=True)  # published: nothing left


def test_xid_154_asks_for_the_recovery_the_driver_names_and_a_reset_for_one_it_does_not_know() -> None:
    def actions(to: str) -> list[str]:
        msg = f"NVRM: Xid (PCI:0000:18:00): 154, GPU recovery action changed from 0x0 (None) to {to}"
        state, _ = run([kernel("xid", 0, xid=154, pci_bus_id=GPU, message=msg)])
        return state.states[f"accelerator-nvidia-error-xid\x1f{GPU}"].actions

    assert actions("0x2 (Node Reboot Required)") == ["REBOOT_SYSTEM"]
    assert actions("0x1 (GPU Reset Required)") == ["RESET_GPU"]
    assert actions("0x9 (Recalibrate Flux Capacitor)") == ["RESET_GPU"]
