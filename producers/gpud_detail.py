"""GPUd's detail components: the ``extra_info.data`` payloads its clients read from ``/v1/states``.

GPUd puts each component's latest reading, JSON-encoded, in ``extra_info["data"]`` of its state; Flow's
``flow health`` reads per-GPU temperature, memory, utilization, power, clocks, ECC, NVLink and throttling
from them, and the host's CPU, memory and disk. Here they are made from the latest metric batches the agent
published (NVML's per GPU, the host's), with GPUd's field names and units (milliwatts, bytes, MHz) from its
component packages. A field NVML did not give is left out, as GPUd's ``supported: false`` rows say nothing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from gpuhealth.events import MetricBatch
from producers.gpud_events import iso

Row = dict[str, Any]
Values = dict[str, float]


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.2f}" if whole else "0.00"  # GPUd's used_percent is a string


def _temperature(v: Values) -> Row | None:
    if "temperature_gpu_c" not in v:
        return None
    row: Row = {"current_celsius_gpu_core": int(v["temperature_gpu_c"]),
                "hbm_temperature_supported": "temperature_memory_c" in v}  # fmt: skip
    for ours, theirs in (("temperature_memory_c", "current_celsius_hbm"),
                         ("temperature_shutdown_c", "threshold_celsius_shutdown"),
                         ("temperature_slowdown_c", "threshold_celsius_slowdown")):  # fmt: skip
        if ours in v:
            row[theirs] = int(v[ours])
    return row


def _memory(v: Values) -> Row | None:
    if "memory_total_bytes" not in v or "memory_used_bytes" not in v:
        return None
    total, used = int(v["memory_total_bytes"]), int(v["memory_used_bytes"])
    return {"total_bytes": total, "used_bytes": used, "free_bytes": total - used, "used_percent": _pct(used, total),
            "supported": True}  # fmt: skip


def _utilization(v: Values) -> Row | None:
    if "util_gpu_pct" not in v:
        return None
    return {"gpu_used_percent": int(v["util_gpu_pct"]), "memory_used_percent": int(v.get("util_memory_pct", 0)),
            "supported": True}  # fmt: skip


def _power(v: Values) -> Row | None:
    if "power_w" not in v or "power_limit_w" not in v:
        return None
    usage, limit = round(v["power_w"] * 1000), round(v["power_limit_w"] * 1000)
    return {"usage_milli_watts": usage, "enforced_limit_milli_watts": limit, "used_percent": _pct(usage, limit),
            "get_power_usage_supported": True, "get_power_limit_supported": True}  # fmt: skip


def _clock_speed(v: Values) -> Row | None:
    if "clock_graphics_mhz" not in v:
        return None
    return {"graphics_mhz": int(v["clock_graphics_mhz"]), "memory_mhz": int(v.get("clock_memory_mhz", 0)),
            "clock_graphics_supported": True, "clock_memory_supported": "clock_memory_mhz" in v}  # fmt: skip


def _hw_slowdown(v: Values) -> Row | None:
    if "clock_event_reasons" not in v:
        return None
    return {"hw_slowdown": bool(v.get("hw_slowdown")), "hw_thermal_slowdown": bool(v.get("hw_thermal_slowdown")),
            "hw_power_brake_slowdown": bool(v.get("hw_power_brake_slowdown"))}  # fmt: skip


def _ecc(v: Values) -> Row | None:
    if "ecc_dbe_aggregate" not in v and "ecc_dbe_volatile" not in v:
        return None
    return {kind: {"total": {"corrected": int(v.get(f"ecc_sbe_{kind}", 0)),
                             "uncorrected": int(v.get(f"ecc_dbe_{kind}", 0))}}
            for kind in ("aggregate", "volatile")}  # fmt: skip


def _nvlink(v: Values) -> Row | None:
    if "nvlink_links_active" not in v:
        return None
    states = [{"link": i, "feature_enabled": True, "replay_errors": int(v.get(f"nvlink{i}_replay_errors", 0)),
               "recovery_errors": int(v.get(f"nvlink{i}_recovery_errors", 0)),
               "crc_errors": int(v.get(f"nvlink{i}_crc_flit_errors", 0) + v.get(f"nvlink{i}_crc_data_errors", 0))}
              for i in range(int(v["nvlink_links_active"]))]  # fmt: skip
    return {"supported": True, "states": states}


def _remapped_rows(v: Values) -> Row | None:
    if "remapped_rows_uncorrectable" not in v:
        return None
    return {"remapped_due_to_correctable_errors": int(v.get("remapped_rows_correctable", 0)),
            "remapped_due_to_uncorrectable_errors": int(v["remapped_rows_uncorrectable"]),
            "remapping_pending": bool(v.get("remapped_rows_pending")),
            "remapping_failed": bool(v.get("remapped_rows_failure")), "supported": True}  # fmt: skip


# component → (the list's key in its data, one GPU's row)
GPU_DETAIL: dict[str, tuple[str, Callable[[Values], Row | None]]] = {
    "accelerator-nvidia-temperature": ("temperatures", _temperature),
    "accelerator-nvidia-memory": ("memories", _memory),
    "accelerator-nvidia-utilization": ("utilizations", _utilization),
    "accelerator-nvidia-power": ("powers", _power),
    "accelerator-nvidia-clock-speed": ("clock_speeds", _clock_speed),
    "accelerator-nvidia-hw-slowdown": ("clock_events", _hw_slowdown),
    "accelerator-nvidia-ecc": ("ecc_errors", _ecc),
    "accelerator-nvidia-nvlink": ("nvlinks", _nvlink),
    "accelerator-nvidia-remapped-rows": ("remapped_rows", _remapped_rows),
}


def _processes(b: MetricBatch) -> Row:
    """GPUd's running_processes, and the processes list Flow's parser reads (its own names: both are given)."""
    return {"get_compute_running_processes_supported": True,
            "running_processes": [{"pid": p.pid, "gpu_used_memory_bytes": p.used_memory_bytes} for p in b.processes],
            "processes": [{"pid": p.pid, "name": p.name, "used_gpu_memory_bytes": p.used_memory_bytes}
                          for p in b.processes]}  # fmt: skip


def gpu_payloads(batches: list[MetricBatch]) -> dict[str, dict[str, list[Row]]]:
    """Each GPU detail component's data, one row per GPU that gave its values, in GPU order."""
    gpus = sorted((b for b in batches if b.gpu_uuid), key=lambda b: b.pci_bus_id or "")
    out: dict[str, dict[str, list[Row]]] = {}
    for component, (key, row_of) in GPU_DETAIL.items():
        rows = [{"uuid": b.gpu_uuid, "bus_id": b.pci_bus_id or ""} | row
                for b in gpus if (row := row_of(b.values)) is not None]  # fmt: skip
        if rows:
            out[component] = {key: rows}
    if gpus:
        rows = [{"uuid": b.gpu_uuid, "bus_id": b.pci_bus_id or ""} | _processes(b) for b in gpus]
        out["accelerator-nvidia-processes"] = {"processes": rows}
    return out


def host_payloads(host: MetricBatch | None, memory_total: int | None) -> dict[str, Row]:
    """The cpu, memory and disk components' data from the host's latest batch (disk: the fullest mount)."""
    if host is None:
        return {}
    v, out = host.values, dict[str, Row]()
    if "cpu_percent" in v:  # from the second poll on: it is a difference of two
        out["cpu"] = {"usage_percent": round(v["cpu_percent"], 2), "load_average_1min": v.get("load1", 0.0)}
    if memory_total and "memory_available_bytes" in v:
        available = int(v["memory_available_bytes"])
        out["memory"] = {"total_bytes": memory_total, "available_bytes": available,
                         "used_bytes": memory_total - available,
                         "used_percent": _pct(memory_total - available, memory_total)}  # fmt: skip
    disks = {k.removeprefix("disk_used_percent."): p for k, p in v.items() if k.startswith("disk_used_percent.")}
    if disks:
        out["disk"] = {"usage_percent": max(disks.values()), "mount_points_usage_percent": disks}
    return out


def extra_info(data: Row) -> dict[str, str]:
    """As GPUd's Go sets it: the data as compact JSON, a string in a string map."""
    return {"data": json.dumps(data, separators=(",", ":")), "encoding": "json"}


def os_payload(host: MetricBatch | None, facts: dict[str, Any]) -> Row | None:
    """GPUd's os component data, from the host's latest batch and the facts read at the start."""
    if host is None:
        return None
    v = host.values
    row: Row = {"kernel": {"arch": facts.get("cpuInfo", {}).get("architecture", ""),
                           "version": facts.get("kernelVersion", "")}}  # fmt: skip
    if "uptime_s" in v:
        row["uptimes"] = {
            "seconds": int(v["uptime_s"]),
            "boot_time_unix_seconds": host.time // 10**9 - int(v["uptime_s"]),
        }
    if "procs_zombie" in v:
        row["zombie_processes"] = int(v["procs_zombie"])
    if "fd_used" in v and "fd_max" in v:
        row["file_descriptors"] = {"allocated_file_handles": int(v["fd_used"]), "limit": int(v["fd_max"]),
                                   "allocated_file_handles_percent": _pct(v["fd_used"], v["fd_max"]),
                                   "file_handles_supported": True, "fd_limit_supported": True}  # fmt: skip
    return row


HOST_DETAIL = ("cpu", "memory", "disk", "os")
DETAIL_COMPONENTS = frozenset({*GPU_DETAIL, "accelerator-nvidia-processes", *HOST_DETAIL})


def pending(gpus_unread: bool, host: MetricBatch | None) -> dict[str, Row | None]:
    """The detail components whose first reading is yet to come (GPUd's ``Initializing``), with the data their
    Initializing state carries. GPUd's clients (Flow) require data on every state of a GPU detail component and
    read its rows: an empty list of them says "none read yet" and keeps such a client working. cpu, memory and
    disk they read fields from that would have to be invented: those stay out until their first reading."""
    out: dict[str, Row | None] = {}
    if gpus_unread:
        out |= {c: {key: []} for c, (key, _) in GPU_DETAIL.items()} | {
            "accelerator-nvidia-processes": {"processes": []}
        }
    if host is None:
        out["os"] = None  # no client of GPUd's reads its data
    return out


def state(component: str, health: str, reason: str, name: str | None = None) -> dict[str, Any]:
    """One GPUd state of a component, as of now."""
    return {"time": iso(time.time_ns()), "component": component, "name": name or component, "health": health,
            "reason": reason, "suggested_actions": {"description": "", "repair_actions": []}}  # fmt: skip
