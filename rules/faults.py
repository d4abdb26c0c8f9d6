"""The engine's rules as data: which fault each fact is, its component, its repair ladder, its rate.

rules/engine.py reads these tables; a new fault of a known shape is a row here, not code there.
"""

from __future__ import annotations

import re

from gpuhealth.events import Health, RepairAction
from rules.transitions import FaultRule

XID154 = re.compile(r"to 0x[0-9a-fA-F]+ \(([^)]*)\)")
XID154_ACTIONS: dict[str, RepairAction] = {
    "none": "IGNORE_NO_ACTION_REQUIRED",
    "gpu reset required": "RESET_GPU",
    "drain and reset": "RESET_GPU",
    "node reboot required": "REBOOT_SYSTEM",
    "drain p2p": "CHECK_USER_APP_AND_GPU",
}


XID_COMPONENT = "accelerator-nvidia-error-xid"
REBOOT_THEN_INSPECT: tuple[RepairAction, ...] = ("REBOOT_SYSTEM", "HARDWARE_INSPECTION")
INSPECT: tuple[RepairAction, ...] = ("HARDWARE_INSPECTION",)
REBOOT: tuple[RepairAction, ...] = ("REBOOT_SYSTEM",)
CHECK_APP: tuple[RepairAction, ...] = ("CHECK_USER_APP_AND_GPU",)

# Kernel faults that carry no catalog code, by kind (Xids and SXids take theirs from the catalog). The
# ones with a rate are judged by it (thresholds in limits.toml [kernel]).
KERNEL_FAULTS: dict[str, FaultRule] = {
    "gpu_fallen_off_bus": FaultRule("fallen_off_bus", REBOOT_THEN_INSPECT, "GPU has fallen off the bus"),
    "gsp": FaultRule("gsp", REBOOT_THEN_INSPECT, "GSP firmware error"),
    "fs_readonly": FaultRule("fs_readonly", REBOOT_THEN_INSPECT, "filesystem read-only"),
    "hung_task": FaultRule("hung_task", REBOOT, "hung tasks", health="Degraded", rate="kernel.hung_task"),
    "soft_lockup": FaultRule("soft_lockup", REBOOT, "CPU soft lockups", health="Degraded", rate="kernel.soft_lockup"),
    "oom": FaultRule("oom", CHECK_APP, "OOM kills", health="Degraded", rate="kernel.oom"),
    "nfs": FaultRule("nfs", (), "NFS server not responding", health="Degraded", rate="kernel.nfs"),
}
# Faults on a kernel line's own node (not a GPU): their entity is the node.
NODE_WIDE = {"hung_task", "soft_lockup", "oom", "nfs", "fs_readonly"}

_ECC, _NVML = "accelerator-nvidia-ecc", "accelerator-nvidia-nvml"
_ROWS = "accelerator-nvidia-remapped-rows"
# NVML facts, by kind: FaultRule(code, ladder, reason, component, …).
NVML_FAULTS: dict[str, FaultRule] = {
    "ecc_dbe": FaultRule("ecc_dbe", REBOOT_THEN_INSPECT, "double-bit ECC error", _ECC),
    "ecc_sbe": FaultRule(
        "ecc_sbe", (), "corrected (single-bit) ECC errors", _ECC, health="Degraded", rate="nvml.ecc_sbe"
    ),
    "slowdown": FaultRule(
        "slowdown",
        INSPECT,
        "hardware slowdown",
        "accelerator-nvidia-hw-slowdown",
        rate="nvml.slowdown",
        per_minute=True,
    ),
    "temperature": FaultRule(
        "temperature", INSPECT, "temperature", "accelerator-nvidia-temperature", health="Degraded"
    ),
    "gpu_lost": FaultRule("gpu_lost", REBOOT_THEN_INSPECT, "GPU lost", "accelerator-nvidia-gpu"),
    "remap_pending": FaultRule("remap_pending", REBOOT, "row remapping pending", _ROWS),
    "remap_failed": FaultRule("remap_failed", INSPECT, "row remapping failed", _ROWS),
    "init_failed": FaultRule("init_failed", REBOOT_THEN_INSPECT, "NVML failed to initialise", _NVML),
    "hung": FaultRule("hung", REBOOT, "NVML call hung", _NVML),
    "gpu_count": FaultRule("gpu_count", INSPECT, "fewer GPUs than on PCI", "accelerator-nvidia-gpu-counts"),
}

# sysfs and host counters and conditions, by the code of their incident (component and entity: the event's).
HOST_FAULTS: dict[str, FaultRule] = {
    "aer_fatal": FaultRule("aer_fatal", REBOOT_THEN_INSPECT, "PCIe AER fatal errors"),
    "aer_nonfatal": FaultRule(
        "aer_nonfatal", INSPECT, "PCIe AER nonfatal errors", health="Degraded", rate="pci.aer_nonfatal"
    ),
    "aer_correctable": FaultRule(
        "aer_correctable", INSPECT, "PCIe AER correctable errors", health="Degraded", rate="pci.aer_correctable"
    ),
    "edac_ue": FaultRule("edac_ue", REBOOT_THEN_INSPECT, "uncorrectable memory errors"),
    "edac_ce": FaultRule("edac_ce", INSPECT, "correctable memory errors", health="Degraded", rate="edac.correctable"),
    "ib_errors": FaultRule("ib_errors", INSPECT, "InfiniBand port errors", health="Degraded", rate="infiniband.errors"),
    "ib_flapping": FaultRule(
        "ib_flapping", INSPECT, "InfiniBand port flapping: went down", health="Degraded", rate="infiniband.flapping"
    ),
    "ib_port": FaultRule("ib_port", INSPECT, "InfiniBand port down"),
    # a narrow link retrains on reboot, or is reseated; a hot part needs its cooling looked at
    "link": FaultRule("link", REBOOT_THEN_INSPECT, "PCIe link degraded", health="Degraded"),
    "thermal": FaultRule("thermal", INSPECT, "too hot", health="Degraded"),
}

UNRECOGNISED = CHECK_APP


# service (unit) → health when it is not active where it is needed
SERVICE_HEALTH: dict[str, tuple[Health, list[RepairAction]]] = {
    "nvidia-fabricmanager": ("Unhealthy", ["REBOOT_SYSTEM"])
}
