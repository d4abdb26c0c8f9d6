"""What an Xid's incident carries, and the Xid paths that take their action from the line itself.

An incident is what the sink stores and the weekly report counts: it names the GPU by PCI id and by the uuid
the node's inventory gave, the node's machine, the events that made it and who said it (the rules). NVLink
Xids 144-150 take the action of the unit and fatality the driver printed; Xid 154 the recovery it named.
"""

from __future__ import annotations

from typing import Any

import msgspec

from gpuhealth.events import GpuInfo, Incident, Inventory, NvlinkDetail
from rules.engine import apply_all, apply_inventory, pending_incidents
from rules.state import NodeState
from tests.unit.rules_run import run
from tests.unit.test_rules_table import CAT, GPU, kernel

XID = "accelerator-nvidia-error-xid"


def incidents(events: list[Any], state: NodeState | None = None) -> list[Incident]:
    """The latest word on each incident, as the service publishes it."""
    out: list[Incident] = []
    for ev in events:
        state, _, inc = apply_all(state, ev, CAT)
        out += inc
    out += pending_incidents(state) if state is not None else []
    return list({i.id: i for i in out}.values())


def test_an_xid_incident_names_its_gpu_machine_events_and_speaker() -> None:
    inv = Inventory(id="i1", time=1, cluster="c", node="n1", boot_id="b1", source="nvml", component="inventory",
                    gpus=[GpuInfo(index=0, pci_bus_id=GPU, uuid="GPU-1234")])  # fmt: skip
    state = apply_inventory(None, inv)
    first = msgspec.structs.replace(kernel("xid", 0, xid=79, pci_bus_id=GPU), machine_id="m-42")
    again = kernel("xid", 1, xid=79, pci_bus_id=GPU)
    [inc] = incidents([first, again], state)
    assert (inc.pci_bus_id, inc.gpu_uuid, inc.machine_id, inc.boot_id) == (GPU, "GPU-1234", "m-42", "b1")
    assert (inc.source, inc.component, inc.entity, inc.count) == ("rules", XID, GPU, 2)
    assert inc.event_ids == [first.id, again.id]


def test_an_xid_with_no_gpu_address_is_kept_on_an_unknown_entity() -> None:
    state, _ = run([kernel("xid", 0, xid=79, pci_bus_id=None)])
    assert state.states[f"{XID}\x1funknown"].health == "Unhealthy"


def test_xid_154_says_the_recovery_the_driver_asked_for() -> None:
    msg = "NVRM: Xid (PCI:0000:18:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)"
    state, _ = run([kernel("xid", 0, xid=154, pci_bus_id=GPU, message=msg)])
    assert state.states[f"{XID}\x1f{GPU}"].reason == "Xid 154: GPU recovery action changed to Node Reboot Required"


def nvlink(code: int, unit: str | None, fatal: bool, boot: str = "b1", minute: float = 0) -> Any:
    return kernel("xid", minute, boot, xid=code, pci_bus_id=GPU, nvlink=NvlinkDetail(subcode=1, unit=unit, fatal=fatal),
                  message=f"NVRM: Xid (PCI:0000:18:00): {code}, {unit or ''} {'Fatal' if fatal else 'Nonfatal'}")  # fmt: skip


def test_every_nvlink_code_from_144_takes_the_printed_fatality() -> None:
    for code in (144, 150):
        state, _ = run([nvlink(code, "RLW_NEWUNIT", True)])
        cs = state.states[f"{XID}\x1f{GPU}"]
        assert (cs.health, cs.actions) == ("Unhealthy", ["RESET_GPU"]), code
        assert cs.reason.startswith(f"Xid {code}") and cs.reason.endswith("(RLW_NEWUNIT, fatal)"), cs.reason


def test_an_nvlink_line_without_its_unit_says_so() -> None:
    state, _ = run([nvlink(145, None, True)])
    assert state.states[f"{XID}\x1f{GPU}"].reason.endswith("(unit not printed, fatal)")


def test_a_non_fatal_nvlink_event_of_an_unknown_unit_never_climbs_to_an_inspection() -> None:
    """Nothing to do, however often and on however many boots: no state, and the incident says non-fatal."""
    events = [nvlink(145, "RLW_NEWUNIT", False, boot, m) for m, boot in enumerate(["b1", "b2", "b3", "b4"])]
    state, _ = run(events)
    assert f"{XID}\x1f{GPU}" not in state.states
    [inc] = incidents(events)
    assert inc.reason.endswith("(RLW_NEWUNIT, non-fatal)") and inc.count == 4


def test_a_code_outside_the_nvlink_range_keeps_its_catalog_action_whatever_detail_it_carries() -> None:
    """Xid 79 (fallen off the bus) or 151 (key rotation, next to the range) with an NVLink detail (a garbled or
    forged record): the catalog's action, not the detail's."""
    state, _ = run([nvlink(79, "RLW_NEWUNIT", False)])
    cs = state.states[f"{XID}\x1f{GPU}"]
    assert (cs.health, cs.actions) == ("Unhealthy", ["REBOOT_SYSTEM"])
    state, _ = run([nvlink(151, "RLW_NEWUNIT", True)])
    cs = state.states[f"{XID}\x1f{GPU}"]
    assert cs.actions == ["REBOOT_SYSTEM"] and "fatal" not in cs.reason, cs.reason
