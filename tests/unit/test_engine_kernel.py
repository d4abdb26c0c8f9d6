"""Kernel log events through the rules engine: SXids, the kernel's own faults, Xid 154 and the NVLink Xids,
and faults from a boot already left."""

from __future__ import annotations

import msgspec

from gpuhealth.events import (
    Event,
    GpuInfo,
    HealthState,
    HostEvent,
    Inventory,
    KernelEvent,
    NvlinkDetail,
    SetHealthy,
)
from rules.engine import apply, apply_all, apply_inventory
from rules.state import NodeState, decode_state, encode_state
from tests.unit.test_checks import result, verification
from tests.unit.test_rules_table import CAT, incidents_of, kernel, nvml

GPU, OTHER, SWITCH = "0000:18:00.0", "0000:19:00.0", "0000:c8:00.0"
SXID = "accelerator-nvidia-error-sxid"


def changes_of(events: list[Event]) -> list[HealthState]:
    state: NodeState | None = None
    out: list[HealthState] = []
    for ev in events:
        state, changes, _ = apply_all(state, ev, CAT)
        out += changes
    return out


def states_of(events: list[Event]) -> list[tuple[str, str, str, list[str], str, str | None]]:
    return [
        (h.component, h.entity, h.health, list(h.repair_actions), h.reason, h.pci_bus_id) for h in changes_of(events)
    ]


def test_a_kernel_fault_is_on_the_node_or_on_its_gpu_and_quotes_its_line_where_the_line_says_more() -> None:
    line = "EXT4-fs (sda1): Remounting filesystem read-only " + "x" * 300
    events: list[Event] = [
        kernel("fs_readonly", 0, message=line, count=2),
        kernel("gsp", 0.1, pci_bus_id=GPU, message="NVRM: GSP timeout", count=4),
        kernel("gpu_fallen_off_bus", 0.2, pci_bus_id=OTHER, message="NVRM: GPU 0000:19:00.0: has fallen off the bus."),
        kernel("gsp", 0.3, message="NVRM: GSP timeout, no GPU named"),
    ]
    states = states_of(events)
    disk = states[0]
    assert disk[:4] == ("disk", "n1", "Unhealthy", ["REBOOT_SYSTEM"]) and disk[5] is None
    assert disk[4].startswith(f"filesystem read-only: {line[:100]}")
    assert len(disk[4]) == len("filesystem read-only: ") + 160, "a line quoted in a reason is clipped to 160"
    assert states[1:] == [
        ("accelerator-nvidia-gsp", GPU, "Unhealthy", ["REBOOT_SYSTEM"], "GSP firmware error: NVRM: GSP timeout", GPU),
        ("accelerator-nvidia-error-xid", OTHER, "Unhealthy", ["REBOOT_SYSTEM"], "GPU has fallen off the bus", OTHER),
        ("accelerator-nvidia-gsp", "unknown", "Unhealthy", ["REBOOT_SYSTEM"],
         "GSP firmware error: NVRM: GSP timeout, no GPU named", None),
    ]  # fmt: skip
    assert [(i.code, i.entity, i.count) for i in incidents_of(events)] == [
        ("fs_readonly", "n1", 2), ("gsp", GPU, 4), ("fallen_off_bus", OTHER, 1), ("gsp", "unknown", 1),
    ]  # fmt: skip


def test_a_fault_a_reboot_clears_from_a_boot_already_left_is_an_incident_and_no_state() -> None:
    events: list[Event] = [
        kernel("oom", 0, boot="b1"), kernel("oom", 1, boot="b2"),  # the node rebooted
        kernel("sxid", 2, boot="b1", sxid=20034, pci_bus_id=SWITCH), kernel("fs_readonly", 2.1, boot="b1"),
        kernel("gsp", 2.2, boot="b1", pci_bus_id=GPU),
    ]  # fmt: skip
    assert states_of(events) == []
    assert [i.code for i in incidents_of(events)] == ["sxid:20034", "fs_readonly", "gsp"]


def test_xid_154_takes_the_recovery_action_printed_and_a_reset_for_one_it_does_not_know() -> None:
    printed = "NVRM: Xid (PCI:0000:18:00): 154, GPU recovery action changed from 0x0 (None) to 0x9 (Something New)"
    assert states_of([kernel("xid", 0, xid=154, pci_bus_id=GPU, message=printed)]) == [
        ("accelerator-nvidia-error-xid", GPU, "Unhealthy", ["RESET_GPU"],
         "Xid 154: GPU recovery action changed to Something New", GPU),
    ]  # fmt: skip


def test_the_nvlink_decode_applies_to_xids_144_to_150_that_say_their_fatality() -> None:
    """A unit the decode rules do not name: a reset if printed fatal, nothing if not. Outside 144-150, or
    with no detail (NVML's report), the catalog's row decides."""

    def first_actions(code: int, fatal: bool | None) -> list[list[str]]:
        detail = None if fatal is None else NvlinkDetail(subcode=1, unit="NOT_A_DECODED_UNIT", fatal=fatal)
        return [s[3] for s in states_of([kernel("xid", 0, xid=code, pci_bus_id=GPU, nvlink=detail)])]

    assert [first_actions(code, fatal) for code in (144, 150) for fatal in (True, False)] == [
        [["RESET_GPU"]], [], [["RESET_GPU"]], [],
    ]  # fmt: skip
    assert first_actions(143, False) == [["HARDWARE_INSPECTION"]]
    assert first_actions(151, False) == [["REBOOT_SYSTEM"]]
    assert first_actions(149, None) == [["REBOOT_SYSTEM"]]


def test_an_incident_says_which_machine_boot_gpu_and_events_it_comes_from() -> None:
    inv = Inventory(id="i1", time=1, cluster="c", node="n1", boot_id="b1", source="nvml", component="inventory",
                    gpus=[GpuInfo(index=0, pci_bus_id=GPU, uuid="GPU-aaaa")])  # fmt: skip
    events = [kernel("xid", 0, xid=79, pci_bus_id=GPU, machine_id="m" * 32), kernel("xid", 0.1, xid=79)]
    state, _, [on_gpu] = apply_all(apply_inventory(None, inv), events[0], CAT)
    _, _, [no_gpu_named] = apply_all(state, events[1], CAT)
    assert (on_gpu.source, on_gpu.machine_id, on_gpu.boot_id, on_gpu.entity, on_gpu.pci_bus_id, on_gpu.gpu_uuid,
            on_gpu.event_ids) == ("rules", "m" * 32, "b1", GPU, GPU, "GPU-aaaa", [events[0].id])  # fmt: skip
    assert (no_gpu_named.entity, no_gpu_named.pci_bus_id, no_gpu_named.gpu_uuid) == ("unknown", None, None)


def test_an_nvlink_xid_says_its_unit_and_fatality_and_only_a_fatal_one_climbs_to_an_inspection() -> None:
    def nvlink(minute: float, boot: str, unit: str, fatal: bool) -> KernelEvent:
        return kernel("xid", minute, boot=boot, xid=149, pci_bus_id=GPU,
                      nvlink=NvlinkDetail(subcode=1, unit=unit, fatal=fatal))  # fmt: skip

    boots = [(60.0 * n, f"b{n}") for n in range(1, 4)]  # seen on three boots: the ladder's second rung
    fatal = [nvlink(t, b, "NOT_A_DECODED_UNIT", True) for t, b in boots]
    assert [s[3:5] for s in states_of(fatal)][-1] == (
        ["HARDWARE_INSPECTION"], "Xid 149: NVLINK: NETIR Error (NOT_A_DECODED_UNIT, fatal) (seen on 3 boots: escalated)",
    )  # fmt: skip
    assert states_of([nvlink(t, b, "", False) for t, b in boots]) == [], "nothing to do, however often"
    [nonfatal] = incidents_of([nvlink(0, "b1", "", False)])
    assert nonfatal.reason == "Xid 149: NVLINK: NETIR Error (unit not printed, non-fatal)"


def test_an_occurrence_a_whole_incident_window_after_the_last_is_still_that_incident() -> None:
    first = kernel("xid", 0, xid=79, pci_bus_id=GPU)
    again = msgspec.structs.replace(first, id="again", time=first.time + CAT.limits.incident.window_s * 10**9)
    events: list[Event] = [first, again]
    assert [(i.count, i.seq) for i in incidents_of(events)] == [(1, 1), (2, 2)]
    later = msgspec.structs.replace(again, id="later", time=again.time + 1)
    assert [(i.count, i.seq) for i in incidents_of([first, later])] == [(1, 1), (1, 1)], "1 ns past it: a new one"


def test_an_incident_keeps_the_ids_of_its_last_8_events_and_the_severity_its_first_rung_implies() -> None:
    events: list[Event] = [kernel("gsp", n / 60, pci_bus_id=GPU) for n in range(10)]
    *_, latest = incidents_of(events)
    assert (latest.count, latest.severity) == (10, "Unhealthy")  # a reboot, then an inspection: Unhealthy
    assert latest.event_ids == [e.id for e in events[-8:]]
    [first] = incidents_of(events[:1])
    assert first.event_ids == [events[0].id]


def test_a_fault_from_an_event_that_names_no_boot_takes_the_first_rung() -> None:
    """The ladder climbs with the boots a fault was seen on; none known is no climb (not its last rung)."""
    assert [s[3] for s in states_of([kernel("xid", 0, boot="", xid=79, pci_bus_id=GPU)])] == [["REBOOT_SYSTEM"]]


def test_a_state_names_its_machine_boot_and_event_and_its_id_is_its_nodes_own() -> None:
    """Two nodes' agents may publish the same record at the same moment with the same event id (a derived id
    of a clock that starts alike): the states' ids must still differ, or JetStream keeps one of them."""
    ev = kernel("xid", 0, xid=79, pci_bus_id=GPU, machine_id="m" * 32)
    _, [here] = apply(None, ev, CAT)
    _, [there] = apply(None, msgspec.structs.replace(ev, node="n2", machine_id="k" * 32), CAT)
    assert (here.source, here.cluster, here.node, here.machine_id, here.boot_id, here.event_ids) == (
        "rules", "c", "n1", "m" * 32, "b1", [ev.id],
    )  # fmt: skip
    assert there.node == "n2" and there.id != here.id


def test_an_event_of_a_new_boot_says_both_what_the_reboot_cleared_and_what_it_raised() -> None:
    before, _, _ = apply_all(None, kernel("xid", 0, xid=79, pci_bus_id=GPU), CAT)
    saved = encode_state(before)
    link_down = HostEvent(id="h1", time=2 * 60 * 10**9, cluster="c", node="n1", boot_id="b2", source="sysfs",
                          component="pci", kind="link", entity=GPU, ok=False, message="link down")  # fmt: skip
    cleared = ("accelerator-nvidia-error-xid", GPU, "Healthy", "cleared by reboot (boot b2)")
    for ev, raised in [
        (kernel("xid", 1, boot="b2", xid=79, pci_bus_id=OTHER),
         ("accelerator-nvidia-error-xid", OTHER, "Unhealthy", "Xid 79: GPU has fallen off the bus")),
        (nvml("ecc_dbe", 1, boot="b2"), ("accelerator-nvidia-ecc", GPU, "Unhealthy", "double-bit ECC error")),
        (link_down, ("pci", GPU, "Degraded", "link down")),
        (result(node="n1", boot_id="b2", time=2 * 60 * 10**9), ("nccl", "n1", "Healthy", "ok")),
        (verification("running", boot="b2"), ("verification", "n1", "Degraded",
                                              "hardware changed (GPU 0000:18:00.0 serial 1 -> 2): verifying")),
    ]:  # fmt: skip
        _, out, _ = apply_all(decode_state(saved), ev, CAT)
        assert [(o.component, o.entity, o.health, o.reason) for o in out] == [cleared, raised]
    operator = SetHealthy(id="op1", time=2 * 60 * 10**9, cluster="c", node="n1", boot_id="b2", source="api",
                          component="operator", target_component="accelerator-nvidia-error-xid", reason="fixed")  # fmt: skip
    _, out, _ = apply_all(decode_state(saved), operator, CAT)
    assert [(o.component, o.entity, o.health, o.reason) for o in out][:1] == [cleared]


def test_states_from_one_event_or_one_moment_have_ids_of_their_own() -> None:
    """A reboot clears many states with one event; two events of one moment may change one state twice."""
    b1 = [kernel("xid", 0, xid=79, pci_bus_id=GPU), kernel("gsp", 0.1, pci_bus_id=GPU), kernel("xid", 0.2, xid=79,
          pci_bus_id=OTHER)]  # fmt: skip
    state: NodeState | None = None
    for ev in b1:
        state, _, _ = apply_all(state, ev, CAT)
    _, cleared, _ = apply_all(state, kernel("oom", 1, boot="b2"), CAT)
    assert len(cleared) == 3 and len({h.id for h in cleared}) == 3
    app = kernel("xid", 2, xid=13, pci_bus_id=GPU)
    same_moment = msgspec.structs.replace(app, id="other", xid=79)
    changes = changes_of([app, same_moment])  # Degraded (check the app), then Unhealthy (reboot)
    assert len(changes) == 2 and len({h.id for h in changes}) == 2
