"""Every component rule over an event sequence: what state it ends in, and with what action.

Each case is (events, the (component, entity) to look at, health, actions, a word the reason has).
Times are minutes; the kernel, NVML and sysfs events are built as the producers build them.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from gpuhealth.events import Event, HostEvent, Incident, KernelEvent, NvlinkDetail, NvmlEvent
from producers.klog import COMPONENT_OF_KIND
from rules.catalog import load
from rules.engine import apply_all, has_pending, pending_incidents
from rules.state import NodeState
from rules.transitions import raise_state
from tests.unit.test_engine import run

CAT = load()
LIM = CAT.limits
GPU = "0000:18:00.0"
MIN = 60 * 10**9
_ids = itertools.count()


def kernel(kind: str, minute: float = 0, boot: str = "b1", **kw: Any) -> KernelEvent:
    n = next(_ids)
    return KernelEvent(id=f"k{n}", time=int(minute * MIN) + n, cluster="c", node="n1", boot_id=boot, source="kmsg",
                       component=COMPONENT_OF_KIND[kind], kind=kind, message=kw.pop("message", f"a {kind} line"),
                       **kw)  # fmt: skip


def nvml(kind: str, minute: float = 0, boot: str = "b1", **kw: Any) -> NvmlEvent:
    n = next(_ids)
    return NvmlEvent(id=f"v{n}", time=int(minute * MIN) + n, cluster="c", node="n1", boot_id=boot, source="nvml",
                     component="nvml", kind=kind, pci_bus_id=GPU, **kw)  # fmt: skip


def host(kind: str, component: str, entity: str, minute: float = 0, boot: str = "b1", **kw: Any) -> HostEvent:
    n = next(_ids)
    return HostEvent(id=f"h{n}", time=int(minute * MIN) + n, cluster="c", node="n1", boot_id=boot, source="sysfs",
                     component=component, kind=kind, entity=entity, message=kw.pop("message", kind), **kw)  # fmt: skip


def nvlink_xid(code: int, unit: str, fatal: bool, minute: float = 0) -> KernelEvent:
    return kernel("xid", minute, xid=code, pci_bus_id=GPU, nvlink=NvlinkDetail(subcode=1, unit=unit, fatal=fatal),
                  message=f"NVRM: Xid (PCI:0000:18:00): {code}, {unit} {'Fatal' if fatal else 'Nonfatal'} XC0")  # fmt: skip


XID = "accelerator-nvidia-error-xid"
K = LIM.kernel
CASES: dict[str, tuple[list[Event], tuple[str, str], str, list[str], str]] = {
    "hung task → Degraded, reboot": (
        [kernel("hung_task", message="INFO: task python:123 blocked for more than 120 seconds.")],
        ("os", "n1"), "Degraded", ["REBOOT_SYSTEM"], "hung tasks"),
    "soft lockup → Degraded, reboot": (
        [kernel("soft_lockup")], ("os", "n1"), "Degraded", ["REBOOT_SYSTEM"], "soft lockups"),
    "OOM kills under the threshold → nothing": (
        [kernel("oom", m) for m in range(K.oom.threshold - 1)], ("memory", "n1"), "-", [], ""),
    "OOM kills at the threshold in the window → Degraded, check the app": (
        [kernel("oom", m) for m in range(K.oom.threshold)], ("memory", "n1"), "Degraded", ["CHECK_USER_APP_AND_GPU"],
        f"{K.oom.threshold} in 1 h"),
    "OOM kills spread wider than the window → nothing": (
        [kernel("oom", m * K.oom.window_s / 60) for m in range(K.oom.threshold)], ("memory", "n1"), "-", [], ""),
    "read-only filesystem → Unhealthy, reboot": (
        [kernel("fs_readonly", message="EXT4-fs (nvme0n1p2): Remounting filesystem read-only")],
        ("disk", "n1"), "Unhealthy", ["REBOOT_SYSTEM"], "read-only"),
    "NFS not responding, repeatedly → Degraded, no action": (
        [kernel("nfs", m) for m in range(K.nfs.threshold)], ("nfs", "n1"), "Degraded", [], "NFS"),
    "a PCIe AER kernel line alone → no state (the sysfs counters decide)": (
        [kernel("pcie_aer", pci_bus_id=GPU)], ("pci", GPU), "-", [], ""),
    "NVLink Xid 149 fatal link event → RESET_GPU": (
        [nvlink_xid(149, "NETIR_LINK_EVT", True)], (XID, GPU), "Unhealthy", ["RESET_GPU"], "fatal"),
    "NVLink Xid 149 non-fatal BER event → an incident, no state": (
        [nvlink_xid(149, "NETIR_BER_EVENT", False)], (XID, GPU), "-", [], ""),
    "NVLink Xid 145 fatal, a unit the table has no row for → RESET_GPU": (
        [nvlink_xid(145, "RLW_NEWUNIT", True)], (XID, GPU), "Unhealthy", ["RESET_GPU"], "RLW_NEWUNIT"),
    "NVLink Xid 149 fatal on three boots → HARDWARE_INSPECTION": (
        [nvlink_xid(149, "NETIR_LINK_EVT", True, m) for m in range(1)]
        + [kernel("xid", 1, boot="b2", xid=149, pci_bus_id=GPU,
                  nvlink=NvlinkDetail(subcode=33, unit="NETIR_LINK_EVT", fatal=True))]
        + [kernel("xid", 2, boot="b3", xid=149, pci_bus_id=GPU,
                  nvlink=NvlinkDetail(subcode=33, unit="NETIR_LINK_EVT", fatal=True))],
        (XID, GPU), "Unhealthy", ["HARDWARE_INSPECTION"], "escalated"),
    "ECC SBE at the rate threshold → Degraded, watch": (
        [nvml("ecc_sbe", m / 100) for m in range(LIM.nvml.ecc_sbe.threshold)],
        ("accelerator-nvidia-ecc", GPU), "Degraded", [], "single-bit"),
    "ECC DBE → Unhealthy": ([nvml("ecc_dbe")], ("accelerator-nvidia-ecc", GPU), "Unhealthy", ["REBOOT_SYSTEM"], "double"),
    "HW slowdown in 6 of 10 minutes → Unhealthy, inspect": (
        [nvml("slowdown", m, data=1, message="hw thermal") for m in range(6)],
        ("accelerator-nvidia-hw-slowdown", GPU), "Unhealthy", ["HARDWARE_INSPECTION"], "6 minutes in 10 min"),
    "HW slowdown reported often but in 5 minutes → nothing": (
        [nvml("slowdown", m + s / 10, data=1) for m in range(5) for s in range(6)],
        ("accelerator-nvidia-hw-slowdown", GPU), "-", [], ""),
    "HW slowdown in 6 minutes spread over 30 → nothing": (
        [nvml("slowdown", m * 5, data=1) for m in range(6)], ("accelerator-nvidia-hw-slowdown", GPU), "-", [], ""),
    "GPU at its slowdown temperature → Degraded": (
        [nvml("temperature", data=1, message="GPU 0 at 91 C (slowdown at 90 C)")],
        ("accelerator-nvidia-temperature", GPU), "Degraded", ["HARDWARE_INSPECTION"], "91 C"),
    "GPU cooled down → Healthy again": (
        [nvml("temperature", 0, data=1, message="hot"), nvml("temperature", 1, data=0, message="cool")],
        ("accelerator-nvidia-temperature", GPU), "Healthy", [], "restored"),
    "GPU count below PCI → Unhealthy, inspect": (
        [nvml("gpu_count", message="NVML sees 7 GPUs, PCI has 8")],
        ("accelerator-nvidia-gpu-counts", GPU), "Unhealthy", ["HARDWARE_INSPECTION"], "7 GPUs"),
    "remapped rows pending → reboot": (
        [nvml("remap_pending")], ("accelerator-nvidia-remapped-rows", GPU), "Unhealthy", ["REBOOT_SYSTEM"], "pending"),
    "remapped rows failed → inspect": (
        [nvml("remap_failed")], ("accelerator-nvidia-remapped-rows", GPU), "Unhealthy", ["HARDWARE_INSPECTION"],
        "failed"),
    "NVML hung → reboot": (
        [NvmlEvent(id="hung", time=1, cluster="c", node="n1", boot_id="b1", source="nvml", component="nvml",
                   kind="hung", message="nvmlDeviceGetPowerUsage")],
        ("accelerator-nvidia-nvml", "n1"), "Unhealthy", ["REBOOT_SYSTEM"], "nvmlDeviceGetPowerUsage"),
    "PCIe AER non-fatal → Degraded": (
        [host("aer", "pci", GPU, counts={"nonfatal": 1}, pci_bus_id=GPU)], ("pci", GPU), "Degraded",
        ["HARDWARE_INSPECTION"], "nonfatal"),
    "EDAC correctable at the threshold → Degraded": (
        [host("edac", "edac", "mc0", counts={"ce": LIM.edac.correctable.threshold})], ("edac", "mc0"), "Degraded",
        ["HARDWARE_INSPECTION"], "correctable memory errors: 1000 in 1 d"),
    "IB error counters over the threshold → Degraded": (
        [host("ib_errors", "accelerator-nvidia-infiniband", "mlx5_0:1", counts={"symbol_error": 60,
                                                                               "port_rcv_errors": 40})],
        ("accelerator-nvidia-infiniband", "mlx5_0:1"), "Degraded", ["HARDWARE_INSPECTION"], "100 in 1 h"),
    "a service other than the fabric manager failed → Degraded": (
        [host("service", "kubelet", "kubelet", ok=False, state="failed", message="kubelet is failed")],
        ("kubelet", "kubelet"), "Degraded", [], "kubelet is failed"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_rule(case: str) -> None:
    events, (component, entity), health, actions, word = CASES[case]
    state, _ = run(events)
    cs = state.states.get(f"{component}\x1f{entity}")
    if health == "-":
        assert cs is None or cs.health == "Healthy", (cs.health, cs.reason) if cs else None
        return
    assert cs is not None, sorted(state.states)
    assert (cs.health, cs.actions) == (health, actions), cs.reason
    assert word in cs.reason


def test_every_kernel_kind_has_a_decision() -> None:
    """A kind the classifier can produce either has a rule or is stored on purpose."""
    from rules import faults

    decided = set(faults.KERNEL_FAULTS) | {"xid", "sxid"}
    stored_only = {"pcie_aer", "pcie_link", "mce_edac", "infiniband", "nvlink", "other_fault"}
    assert set(COMPONENT_OF_KIND) == decided | stored_only


def test_a_new_boot_clears_a_no_action_state_but_not_an_inspection() -> None:
    nfs = [kernel("nfs", m) for m in range(K.nfs.threshold)]
    inspect = [nvml("remap_failed")]
    state, _ = run([*nfs, *inspect, kernel("hung_task", 5, boot="b2")])
    assert state.states["nfs\x1fn1"].health == "Healthy"
    assert state.states[f"accelerator-nvidia-remapped-rows\x1f{GPU}"].health == "Unhealthy"


def test_a_storm_of_100000_xid_95_lines_is_one_incident_and_one_state_change() -> None:
    # The agent collapses a storm into a few events with counts; the engine adds them up.
    events: list[Event] = [kernel("xid", 0, xid=95, pci_bus_id=GPU, count=1)]
    events += [kernel("xid", s / 60, xid=95, pci_bus_id=GPU, count=9_999) for s in range(1, 11)]
    events += [kernel("xid", 1, xid=95, pci_bus_id=GPU, count=9)]
    state, out = run(events)
    assert len(out) == 1 and out[0].health == "Unhealthy"
    [fault] = [f for k, f in state.faults.items() if k.endswith("xid:95")]
    assert fault.count == 100_000


def incidents_of(events: list[Event]) -> list[Incident]:
    """What the service publishes for these events: the incidents they open, then one flush."""
    state: NodeState | None = None
    out: list[Incident] = []
    for ev in events:
        state, _, inc = apply_all(state, ev, CAT)
        out += inc
    return out + (pending_incidents(state) if state is not None else [])


def test_a_storm_is_one_incident_opened_at_once_then_its_latest_count() -> None:
    events: list[Event] = [kernel("xid", s / 60, xid=95, pci_bus_id=GPU, count=10_000) for s in range(10)]
    state, _, opened = apply_all(None, events[0], CAT)
    assert [(i.count, i.seq) for i in opened] == [(10_000, 1)]
    for ev in events[1:]:
        state, _, more = apply_all(state, ev, CAT)
        assert more == [] and has_pending(state)  # growth waits for the flush
    [last] = pending_incidents(state)
    assert last.id == opened[0].id
    assert (last.count, last.seq, last.code, last.severity) == (100_000, 10, "xid:95", CAT.xid[95].severity)
    assert (last.first, last.last, last.time) == (events[0].time, events[-1].time, events[-1].time)
    assert pending_incidents(state) == []  # published: nothing until it grows again
    state, _, _ = apply_all(state, kernel("xid", 0.5, xid=95, pci_bus_id=GPU), CAT)
    assert [(i.count, i.seq) for i in pending_incidents(state)] == [(100_001, 11)]


def test_pending_says_whether_an_incident_grew_since_it_was_published_by_the_last_event_or_any() -> None:
    """The service flushes the nodes whose last event left growth pending; at start it loads the saved
    states with any growth pending (all_faults), and no other: a fleet's states are not all kept in memory."""
    other = "0000:19:00.0"
    state, _, _ = apply_all(None, kernel("xid", 0, xid=95, pci_bus_id=GPU), CAT)
    assert not has_pending(state), "opened: published at once"
    state, _, _ = apply_all(state, kernel("xid", 0.1, xid=95, pci_bus_id=GPU), CAT)
    assert has_pending(state) and has_pending(state, all_faults=True)
    state, _, _ = apply_all(state, kernel("xid", 0.2, xid=95, pci_bus_id=other), CAT)
    assert not has_pending(state), "the last event only opened the other GPU's incident"
    assert has_pending(state, all_faults=True), "the first GPU's growth is still pending"
    assert [i.entity for i in pending_incidents(state)] == [GPU]
    assert not has_pending(state, all_faults=True)


def test_a_state_is_raised_only_by_worse_health_or_a_stronger_action_at_the_same_health() -> None:
    """States are sticky: the same news again changes nothing; an action where there was none is news."""
    state = NodeState(node="n1")
    raised: list[tuple[str, list[str]]] = []
    for health, actions in [
        ("Degraded", []), ("Degraded", []),  # the same state again: no change
        ("Degraded", ["IGNORE_NO_ACTION_REQUIRED"]), ("Degraded", ["CHECK_USER_APP_AND_GPU"]),  # stronger
        ("Degraded", []), ("Degraded", ["IGNORE_NO_ACTION_REQUIRED"]),  # weaker than what it says
        ("Unhealthy", []),  # worse health, whatever the action
    ]:  # fmt: skip
        out = raise_state(state, kernel("xid", 0), "c", GPU, health, actions, "why", "xid:1", GPU)
        raised += [(h.health, list(h.repair_actions)) for h in out]
    assert raised == [
        ("Degraded", []), ("Degraded", ["IGNORE_NO_ACTION_REQUIRED"]), ("Degraded", ["CHECK_USER_APP_AND_GPU"]),
        ("Unhealthy", []),
    ]  # fmt: skip


def test_an_unknown_code_is_an_unknown_severity_incident_never_dropped() -> None:
    [inc] = incidents_of([kernel("xid", xid=9999, pci_bus_id=GPU)])
    assert (inc.severity, inc.reason, inc.code) == ("Unknown", "unrecognised Xid 9999", "xid:9999")


def test_an_informational_code_is_an_incident_without_a_state() -> None:
    state, changes, incidents = apply_all(None, kernel("xid", xid=164, pci_bus_id=GPU), CAT)
    assert changes == [] and [(i.code, i.severity) for i in incidents] == [("xid:164", CAT.xid[164].severity)]


def test_the_same_fault_after_a_quiet_window_is_a_new_incident() -> None:
    window_min = LIM.incident.window_s / 60
    out = incidents_of(
        [kernel("xid", 0, xid=13, pci_bus_id=GPU), kernel("xid", window_min + 1, xid=13, pci_bus_id=GPU)]
    )
    assert len({i.id for i in out}) == 2 and out[-1].count == 1


def test_a_reason_says_the_producers_words_once() -> None:
    """Issue #20: "row remapping pending: row remapping pending: reset the GPU"."""
    state, _ = run([nvml("remap_pending", message="row remapping pending: reset the GPU")])
    assert state.states[f"accelerator-nvidia-remapped-rows\x1f{GPU}"].reason == "row remapping pending: reset the GPU"
    state, _ = run([nvml("gpu_lost", message="nvmlDeviceGetHandleByIndex: GPU is lost")])
    assert (
        state.states[f"accelerator-nvidia-gpu\x1f{GPU}"].reason == "GPU lost: nvmlDeviceGetHandleByIndex: GPU is lost"
    )


def test_a_long_kernel_line_in_a_reason_is_cut_between_words() -> None:
    words = "GSP RPC timeout while waiting for the firmware to answer the driver " * 5
    state, _ = run([kernel("gsp", message=words)])
    (cs,) = [s for s in state.states.values() if s.component == COMPONENT_OF_KIND["gsp"]]
    assert cs.reason.endswith("…") and len(cs.reason) <= len("GSP firmware error: ") + 160
    assert cs.reason.removesuffix("…").split()[-1] in words.split()


def test_an_incident_says_no_more_than_the_state_it_caused() -> None:
    """Issue #20: single OOMs and slowdowns were Degraded/Unhealthy incidents while the node stayed Healthy."""
    one_oom = incidents_of([kernel("oom", 0)])
    one_slow_minute = incidents_of([nvml("slowdown", 0, data=1)])
    assert one_oom == [] and one_slow_minute == []
    ooms = incidents_of([kernel("oom", m) for m in range(K.oom.threshold)])
    assert [(i.code, i.severity, i.count) for i in ooms][-1:] == [("oom", "Degraded", K.oom.threshold)]
    assert len({i.id for i in ooms}) == 1  # every OOM of the window counted in the one incident


def test_one_infiniband_port_down_is_one_incident_named_for_what_happened() -> None:
    """Issue #20: one port going down opened an "ib_flapping" incident, then a second for the same outage."""
    port = "mlx5_0/1"
    down = host("ib_port", "infiniband", port, 0, counts={"downs": 1}, ok=False, since=0, message=f"{port} DOWN")
    still = host("ib_port", "infiniband", port, 5, counts={}, ok=False, since=0, message=f"{port} DOWN")
    got = incidents_of([down, still])
    assert {i.code for i in got} == {"ib_port"} and len({i.id for i in got}) == 1, [(i.code, i.reason) for i in got]
