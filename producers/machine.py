"""``/machine-info`` in GPUd's shape (api/v1 ``MachineInfo``), from the agent's identity, inventory and host.

GPUd's clients read ``gpuInfo.gpus[].uuid/busID/sn``, ``gpudVersion``, ``hostname``, kernel, OS, uptime, CPU
and memory; Flow refuses a node whose ``gpuInfo`` is not an object. Every GPUd field keeps its name and
type; what gpuhealth knows beyond them is added (``node``, ``cluster``, each GPU's ``index`` and ``name``).
Host facts that do not change while the agent runs are read once, at its start.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import socket
from pathlib import Path
from typing import Any

from gpuhealth.config import NodeIdentity
from gpuhealth.events import Inventory

VERSION = "gpuhealth-0.1.0"  # in gpudVersion: a client showing it names what answered


def host_facts(proc_root: Path = Path("/proc"), etc_root: Path = Path("/etc")) -> dict[str, Any]:
    """GPUd's host fields: kernel, OS, hostname, CPU and memory (empty where unreadable; GPUd omits them)."""
    facts: dict[str, Any] = {"kernelVersion": platform.release(), "operatingSystem": "linux",
                             "hostname": socket.gethostname()}  # fmt: skip
    if image := _os_image(etc_root / "os-release"):
        facts["osImage"] = image
    facts["cpuInfo"] = _cpu_info(proc_root / "cpuinfo")
    if total := _mem_total(proc_root / "meminfo"):
        facts["memoryInfo"] = {"totalBytes": total}
    return facts


def _os_image(path: Path) -> str | None:
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None
    fields = dict(line.split("=", 1) for line in lines if "=" in line)
    return fields.get("PRETTY_NAME", "").strip().strip('"') or None


def _cpu_info(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text()
    except OSError:
        text = ""
    fields = dict((k.strip(), v.strip()) for k, _, v in (line.partition(":") for line in text.splitlines()) if v)
    info: dict[str, Any] = {"type": fields.get("model name", ""), "manufacturer": fields.get("vendor_id", ""),
                            "architecture": platform.machine(), "logicalCores": os.cpu_count() or 0}  # fmt: skip
    return {k: v for k, v in info.items() if v}  # GPUd's omitempty


def _mem_total(path: Path) -> int | None:
    try:
        for line in path.read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _rfc3339(ns: int) -> str:
    """As Go's metav1.Time marshals: seconds, UTC, Z."""
    return dt.datetime.fromtimestamp(ns // 10**9, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def gpu_info(inv: Inventory | None) -> dict[str, Any]:
    """GPUd's MachineGPUInfo: the product, and per GPU uuid, busID and sn (plus our index and name)."""
    gpus = inv.gpus if inv else []
    info: dict[str, Any] = {"gpus": []}  # present even with no GPU: Flow requires gpuInfo.gpus to be a list
    names = {g.name for g in gpus if g.name}
    if len(names) == 1:
        info["product"], info["manufacturer"] = names.pop(), "NVIDIA"
    for g in gpus:
        row = {"uuid": g.uuid, "busID": g.pci_bus_id, "sn": g.serial, "index": g.index, "name": g.name}
        info["gpus"].append({k: v for k, v in row.items() if v is not None and v != ""})
    return info


def machine_info(identity: NodeIdentity, inv: Inventory | None, host: dict[str, Any]) -> dict[str, Any]:
    """GPUd's MachineInfo, with gpuhealth's node and cluster added."""
    info: dict[str, Any] = {"gpudVersion": VERSION}
    if inv and inv.driver_version:
        info["gpuDriverVersion"] = inv.driver_version
    if inv and inv.cuda_driver_version:
        info["cudaVersion"] = inv.cuda_driver_version
    info |= {k: v for k, v in host.items() if k not in ("cpuInfo", "memoryInfo")}
    info |= {"machineID": identity.machine_id, "bootID": identity.boot_id}
    if identity.boot_time_ns:
        info["uptime"] = _rfc3339(identity.boot_time_ns)
    if inv and inv.chassis_serial:
        info["chassisSerial"] = inv.chassis_serial
    for key in ("cpuInfo", "memoryInfo"):
        if host.get(key):
            info[key] = host[key]
    info["gpuInfo"] = gpu_info(inv)
    info |= {"node": identity.node, "cluster": identity.cluster}
    return info
