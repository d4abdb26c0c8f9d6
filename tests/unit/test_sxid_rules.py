"""An NVSwitch's SXid lines through the rules: the state and incident each class of code gives, on the switch.

The Fabric Manager guide's classes (rules/catalogs/sxid.tsv): a fatal code takes the node down for a reboot,
one that may point at the hardware climbs to an inspection when it comes back on a third boot, a non-fatal
one is counted and changes nothing, and a code the catalog has never seen is surfaced, never dropped.
"""

from __future__ import annotations

from typing import Any

from gpuhealth.events import Event, Incident
from tests.unit.rules_run import run
from tests.unit.test_rules_table import GPU, incidents_of, kernel

SWITCH = "0000:05:00.0"
SXID = "accelerator-nvidia-error-sxid"


def sxid(code: int, minute: float = 0, boot: str = "b1", **kw: Any) -> Any:
    kw.setdefault("pci_bus_id", SWITCH)
    return kernel("sxid", minute, boot, sxid=code, message=f"nvidia-nvswitch0: SXid (PCI:{SWITCH}): {code}", **kw)


def state_of(events: list[Event], entity: str = SWITCH) -> tuple[str, list[str], str] | None:
    state, _ = run(events)
    cs = state.states.get(f"{SXID}\x1f{entity}")
    return (cs.health, cs.actions, cs.reason) if cs else None


def incidents(events: list[Event]) -> list[Incident]:
    """The latest word on each incident these events opened, as the service would have published it."""
    return list({i.id: i for i in incidents_of(events)}.values())


def test_a_fatal_sxid_asks_for_a_reboot_of_the_node_on_its_switch() -> None:
    # 12028: egress non-posted PRIV error, fatal, a reboot (and no inspection: not a hardware code)
    health, actions, reason = state_of([sxid(12028)]) or ("-", [], "")
    assert (health, actions) == ("Unhealthy", ["REBOOT_SYSTEM"])
    assert "SXid 12028" in reason and "egress nonposted PRIV error" in reason
    [inc] = incidents([sxid(12028, count=3)])  # a storm the log folded into one record
    assert (inc.component, inc.entity, inc.pci_bus_id) == (SXID, SWITCH, SWITCH)
    assert (inc.code, inc.severity, inc.count) == ("sxid:12028", "Fatal", 3)


def test_a_fatal_sxid_that_may_be_the_hardware_climbs_to_an_inspection_on_the_third_boot() -> None:
    # 20034: LTSSM fault up, fatal: a reboot first, an inspection once it is back on a third boot
    assert (state_of([sxid(20034)]) or ())[:2] == ("Unhealthy", ["REBOOT_SYSTEM"])
    three = [sxid(20034, 0, "b1"), sxid(20034, 1, "b2"), sxid(20034, 2, "b3")]
    assert (state_of(three) or ())[:2] == ("Unhealthy", ["HARDWARE_INSPECTION"])


def test_a_non_fatal_sxid_is_counted_and_changes_no_state() -> None:
    # 11012: single-bit ECC errors on the switch, a warning with no action
    events = [sxid(11012, m) for m in range(3)]
    assert state_of(events) is None
    [inc] = incidents(events)
    assert (inc.code, inc.severity, inc.count) == ("sxid:11012", "Warning", 3)


def test_an_sxid_the_catalog_has_never_seen_is_surfaced_as_unknown() -> None:
    health, _, reason = state_of([sxid(99999)]) or ("-", [], "")
    assert (health, reason) == ("Degraded", "unrecognised SXid 99999")
    [inc] = incidents([sxid(99999)])
    assert (inc.code, inc.severity) == ("sxid:99999", "Unknown")


def test_an_sxid_with_no_switch_address_is_kept_on_an_unknown_entity() -> None:
    assert (state_of([sxid(12028, pci_bus_id=None)], "unknown") or ())[:2] == ("Unhealthy", ["REBOOT_SYSTEM"])


def test_the_kind_decides_not_a_code_field_it_should_not_carry() -> None:
    """A kernel event is judged by its kind: an Xid or SXid number on an event of another kind (no producer
    sends one; a forged or garbled message might) makes no Xid or SXid state."""
    oom_with_xid = kernel("oom", 0, xid=79, pci_bus_id=GPU)
    state, _ = run([oom_with_xid])
    assert not [k for k in state.states if k.startswith(("accelerator-nvidia-error-xid", SXID))], sorted(state.states)
    xid_with_sxid = kernel("xid", 0, xid=13, sxid=12028, pci_bus_id=GPU)
    state, _ = run([xid_with_sxid])
    assert not [k for k in state.states if k.startswith(SXID)], sorted(state.states)
    sxid_without_code = kernel("sxid", 0, pci_bus_id=SWITCH)
    state, _ = run([sxid_without_code])
    assert not [k for k in state.states if k.startswith(SXID)], sorted(state.states)
