"""What sysfs and host events become in the rules: counters are occurrences (each counted as many times as it
rose), conditions are states that clear when they are fine again, and the figures in a reason are the real ones."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from gpuhealth.events import Event, HealthState, HostEvent, SourceStatus
from rules.catalog import load
from rules.state import NodeState
from tests.unit.rules_run import run

CAT = load()
PCI = "0000:3b:00.0"
S = 10**9
MIN = 60 * S
T0 = 28_333_333 * MIN  # boot b1 began here, on a minute's first nanosecond; b2 an hour later
BOOTS = {"b1": T0, "b2": T0 + 3600 * S}
_n = itertools.count(1)


def host(kind: str, entity: str, at: int, *, boot: str = "b1", component: str = "", **fields: Any) -> HostEvent:
    component = component or {"aer": "pcie", "edac": "edac"}.get(kind, "infiniband")
    return HostEvent(id=f"h{next(_n):06d}", time=at, cluster="c", node="n", boot_id=boot, boot_time=BOOTS[boot],
                     source="sysfs", component=component, kind=kind, entity=entity, **fields)  # fmt: skip


def seen(out: list[HealthState]) -> list[tuple[Any, ...]]:
    return [(o.component, o.entity, o.health, o.repair_actions, o.reason, o.pci_bus_id) for o in out]


def counted(state: NodeState) -> dict[str, int]:
    return {k.split("\x1f")[-1]: f.count for k, f in state.faults.items()}


PORT, DOWN, UP = "mlx5_0:1", "mlx5_0 port 1 is DOWN", "mlx5_0 port 1 is ACTIVE"
IB = "infiniband"
FM, FM_UP = "nvidia-fabricmanager", "nvidia-fabricmanager is active"
FM_DOWN = "nvidia-fabricmanager is failed on a node with 4 NVSwitches"
PEERMEM, LOADED = "accelerator-nvidia-peermem", "nvidia_peermem loaded (GPUDirect RDMA needs it)"


def port(at: int, since: int, *, ok: bool = False, downs: int = 0) -> HostEvent:
    counts = {"downs": downs} if downs else {}
    return host("ib_port", PORT, at, ok=ok, state="ACTIVE" if ok else "DOWN", since=since, counts=counts,
                message=UP if ok else DOWN)  # fmt: skip


CASES: list[tuple[str, list[Event], list[tuple[Any, ...]], dict[str, int]]] = [
    # one read: 2 fatal and 5 correctable (below the hour's 100), no nonfatal key at all
    ("aer", [host("aer", PCI, T0 + S, pci_bus_id=PCI, counts={"fatal": 2, "correctable": 5})],
     [("pcie", PCI, "Unhealthy", ["REBOOT_SYSTEM"], "PCIe AER fatal errors (+2)", PCI)],
     {"aer_fatal": 2, "aer_correctable": 5}),
    ("aer correctable", [host("aer", PCI, T0 + S, pci_bus_id=PCI, counts={"correctable": 100})],
     [("pcie", PCI, "Degraded", ["HARDWARE_INSPECTION"], "PCIe AER correctable errors: 100 in 1 h", PCI)],
     {"aer_correctable": 100}),
    ("aer nonfatal", [host("aer", PCI, T0 + S, pci_bus_id=PCI, counts={"nonfatal": 1})],
     [("pcie", PCI, "Degraded", ["HARDWARE_INSPECTION"], "PCIe AER nonfatal errors: 1 in 1 h", PCI)],
     {"aer_nonfatal": 1}),
    ("edac ue", [host("edac", "mc0", T0 + S, counts={"ue": 2})],
     [("edac", "mc0", "Unhealthy", ["REBOOT_SYSTEM"], "uncorrectable memory errors (+2)", None)], {"edac_ue": 2}),
    ("edac ce", [host("edac", "mc0", T0 + S, counts={"ce": 1000})],
     [("edac", "mc0", "Degraded", ["HARDWARE_INSPECTION"], "correctable memory errors: 1000 in 1 d", None)],
     {"edac_ce": 1000}),
    ("ib errors", [host("ib_errors", PORT, T0 + S, counts={"symbol_error": 60, "port_rcv_errors": 40})],
     [(IB, PORT, "Degraded", ["HARDWARE_INSPECTION"], "InfiniBand port errors: 100 in 1 h", None)], {"ib_errors": 100}),
    ("ib port down a while", [port(T0 + 10 * S, T0)], [(IB, PORT, "Degraded", [], DOWN, None)], {}),
    ("ib port down down_s", [port(T0 + 240 * S, T0)],
     [(IB, PORT, "Unhealthy", ["HARDWARE_INSPECTION"], f"{DOWN}, down for 4 min", None)], {"ib_port": 1}),
    ("ib port down a day", [port(T0 + 90_000 * S, T0)],
     [(IB, PORT, "Unhealthy", ["HARDWARE_INSPECTION"], f"{DOWN}, down for 25 h", None)], {"ib_port": 1}),
    ("ib port flapping", [port(T0 + 250 * S, T0 + 245 * S, ok=True, downs=3)],
     [(IB, PORT, "Degraded", ["HARDWARE_INSPECTION"], "InfiniBand port flapping: went down: 3 in 10 min", None)],
     {"ib_flapping": 3}),
    ("ib port down, then up", [port(T0 + 240 * S, T0), port(T0 + 250 * S, T0 + 245 * S, ok=True)],
     [(IB, PORT, "Unhealthy", ["HARDWARE_INSPECTION"], f"{DOWN}, down for 4 min", None),
      (IB, PORT, "Healthy", [], f"restored: {UP}", None)], {"ib_port": 1}),
    ("ib port flapping, down now", [port(T0 + 10 * S, T0, downs=3)],
     [(IB, PORT, "Degraded", ["HARDWARE_INSPECTION"], "InfiniBand port flapping: went down: 3 in 10 min", None)],
     {"ib_flapping": 3}),
    ("ib port down briefly, then up", [port(T0 + 10 * S, T0), port(T0 + 20 * S, T0 + 15 * S, ok=True)],
     [(IB, PORT, "Degraded", [], DOWN, None), (IB, PORT, "Healthy", [], f"restored: {UP}", None)], {}),
    ("service down, then up", [host("service", FM, T0 + S, component="os", ok=False, state="failed", message=FM_DOWN),
                               host("service", FM, T0 + 2 * S, component="os", state="active", message=FM_UP)],
     [("os", FM, "Unhealthy", ["REBOOT_SYSTEM"], FM_DOWN, None), ("os", FM, "Healthy", [], f"restored: {FM_UP}", None)],
     {}),
    ("module", [host("module", "nvidia_peermem", T0 + S, component=PEERMEM, state="loaded", message=LOADED)],
     [(PEERMEM, "nvidia_peermem", "Healthy", [], LOADED, None)], {}),
    ("link", [host("link", PCI, T0 + S, component="pcie", pci_bus_id=PCI, ok=False, state="x8",
                   message="PCIe link x8 of x16")],
     [("pcie", PCI, "Degraded", ["REBOOT_SYSTEM"], "PCIe link x8 of x16", PCI)], {"link": 1}),
    ("thermal", [host("thermal", "cpu0", T0 + S, component="thermal", ok=False, state="hot", message="cpu0 at 101 C")],
     [("thermal", "cpu0", "Degraded", ["HARDWARE_INSPECTION"], "cpu0 at 101 C", None)], {"thermal": 1}),
]  # fmt: skip


@pytest.mark.parametrize(("events", "states", "counts"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_host_event_is_the_state_and_the_occurrences_it_says(
    events: list[Event], states: list[tuple[Any, ...]], counts: dict[str, int]
) -> None:
    state, out = run(events)
    assert seen(out) == states
    assert counted(state) == counts


def test_a_host_fault_of_a_boot_already_left_does_not_reopen() -> None:
    b2 = BOOTS["b2"]
    up = SourceStatus(id="s1", time=b2 + 10 * S, cluster="c", node="n", boot_id="b2", boot_time=b2, source="kmsg",
                      component="kernel-log", available=True)  # fmt: skip
    state, _ = run([host("aer", PCI, T0 + S, pci_bus_id=PCI, counts={"fatal": 1}), up])
    state, out = run([host("aer", PCI, b2 - 5 * S, pci_bus_id=PCI, counts={"fatal": 1})], state)  # late
    assert out == []
    assert state.states[f"pcie\x1f{PCI}"].health == "Healthy"


def status(at: int, component: str, available: bool, reason: str) -> SourceStatus:
    return SourceStatus(id=f"s{next(_n):06d}", time=at, cluster="c", node="n", boot_id="b1", boot_time=T0,
                        source="agent", component=component, available=available, reason=reason)  # fmt: skip


def test_each_source_has_its_own_state_published_when_it_changes_only() -> None:
    _, out = run([
        status(T0 + S, "kernel-log", True, "reading /dev/kmsg"),
        status(T0 + 2 * S, "nvml", False, "NVML_ERROR_DRIVER_NOT_LOADED"),
        status(T0 + 3 * S, "kernel-log", True, "reading /dev/kmsg"),  # restated, unchanged
        status(T0 + 4 * S, "nvml", False, "NVML_ERROR_DRIVER_NOT_LOADED"),
        status(T0 + 5 * S, "nvml", False, "NVML_ERROR_LIB_RM_VERSION_MISMATCH"),  # still Unknown, a new why
    ])  # fmt: skip
    assert [(o.component, o.entity, o.health, o.reason) for o in out] == [
        ("kernel-log", "n", "Healthy", "reading /dev/kmsg"),
        ("nvml", "n", "Unknown", "NVML_ERROR_DRIVER_NOT_LOADED"),
        ("nvml", "n", "Unknown", "NVML_ERROR_LIB_RM_VERSION_MISMATCH"),
    ]
