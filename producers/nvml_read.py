"""Reading one GPU through NVML: every value the poller publishes, nothing else.

Pure over the NVML module and a call function (the producer's, which records
the call in flight so a hang can be named). NOT_SUPPORTED is remembered per
GPU and never asked again; GPU_IS_LOST raises ``GpuLost``; any other error is
kept beside the values, never taken for a value.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpuhealth.events import GpuProcess

Call = Callable[..., Any]  # call(name, *args): one NVML call by name
NVLINK_COUNTERS = {"replay": 0, "recovery": 1, "crc_flit": 2, "crc_data": 3}


class GpuLost(Exception):
    pass


@dataclass
class Reading:
    values: dict[str, float]
    errors: dict[str, str]
    processes: list[GpuProcess]


def read_gpu(n: Any, h: Any, unsupported: set[str], call_nvml: Call) -> Reading:
    values: dict[str, float] = {}
    errors: dict[str, str] = {}

    def read(key: str, call: str, *args: Any) -> Any:
        if call in unsupported:
            return None
        try:
            return call_nvml(call, h, *args)
        except n.NVMLError as e:
            if e.value == n.NVML_ERROR_NOT_SUPPORTED:
                unsupported.add(call)
            elif e.value == n.NVML_ERROR_GPU_IS_LOST:
                raise GpuLost from e
            else:
                errors[key] = str(e)
            return None

    def put(key: str, value: Any, scale: float = 1.0) -> None:
        if value is not None:
            values[key] = float(value) * scale

    put("temperature_gpu_c", read("temperature_gpu_c", "nvmlDeviceGetTemperature", n.NVML_TEMPERATURE_GPU))
    fields = read("temperature_memory_c", "nvmlDeviceGetFieldValues", [n.NVML_FI_DEV_MEMORY_TEMP])
    if fields and fields[0].nvmlReturn == n.NVML_SUCCESS:
        put("temperature_memory_c", fields[0].value.uiVal)
    for key, threshold in (("temperature_slowdown_c", n.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN),
                           ("temperature_shutdown_c", n.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN)):  # fmt: skip
        put(key, read(key, "nvmlDeviceGetTemperatureThreshold", threshold))
    put("power_w", read("power_w", "nvmlDeviceGetPowerUsage"), 1e-3)
    put("power_limit_w", read("power_limit_w", "nvmlDeviceGetEnforcedPowerLimit"), 1e-3)
    if util := read("util", "nvmlDeviceGetUtilizationRates"):
        put("util_gpu_pct", util.gpu)
        put("util_memory_pct", util.memory)
    if mem := read("memory", "nvmlDeviceGetMemoryInfo"):
        put("memory_used_bytes", mem.used)
        put("memory_total_bytes", mem.total)
    for etype, ename in (
        (n.NVML_MEMORY_ERROR_TYPE_CORRECTED, "sbe"),
        (n.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, "dbe"),
    ):
        for ctype, cname in ((n.NVML_VOLATILE_ECC, "volatile"), (n.NVML_AGGREGATE_ECC, "aggregate")):
            key = f"ecc_{ename}_{cname}"
            put(key, read(key, "nvmlDeviceGetTotalEccErrors", etype, ctype))
    for cause, cname in ((n.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, "sbe"),
                         (n.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, "dbe")):  # fmt: skip
        pages = read(f"retired_pages_{cname}", "nvmlDeviceGetRetiredPages", cause)
        put(f"retired_pages_{cname}", None if pages is None else len(pages))
    put("retired_pages_pending", read("retired_pages_pending", "nvmlDeviceGetRetiredPagesPendingStatus"))
    if rows := read("remapped_rows", "nvmlDeviceGetRemappedRows"):
        for key, value in zip(("correctable", "uncorrectable", "pending", "failure"), rows, strict=True):
            put(f"remapped_rows_{key}", value)
    reasons = read("clock_event_reasons", "nvmlDeviceGetCurrentClocksEventReasons")
    if reasons is not None:
        put("clock_event_reasons", reasons)
        for key, bit in (("hw_slowdown", n.nvmlClocksEventReasonHwSlowdown),
                         ("hw_thermal_slowdown", n.nvmlClocksEventReasonHwThermalSlowdown),
                         ("hw_power_brake_slowdown", n.nvmlClocksEventReasonHwPowerBrakeSlowdown),
                         ("sw_thermal_slowdown", n.nvmlClocksEventReasonSwThermalSlowdown)):  # fmt: skip
            put(key, 1 if reasons & bit else 0)
    _read_nvlink(n, h, call_nvml, read, put)
    put("pcie_replay_count", read("pcie_replay_count", "nvmlDeviceGetPcieReplayCounter"))
    put("pcie_gen_current", read("pcie_gen_current", "nvmlDeviceGetCurrPcieLinkGeneration"))
    put("pcie_gen_max", read("pcie_gen_max", "nvmlDeviceGetMaxPcieLinkGeneration"))
    put("pcie_width_current", read("pcie_width_current", "nvmlDeviceGetCurrPcieLinkWidth"))
    put("pcie_width_max", read("pcie_width_max", "nvmlDeviceGetMaxPcieLinkWidth"))
    put("persistence_mode", read("persistence_mode", "nvmlDeviceGetPersistenceMode"))
    fabric = n.c_nvmlGpuFabricInfo_t()
    ref = ctypes.byref(fabric) if isinstance(fabric, ctypes.Structure) else fabric
    if read("fabric", "nvmlDeviceGetGpuFabricInfo", ref) is not None:
        put("fabric_state", fabric.state)
        put("fabric_status", fabric.status)
    processes = [
        GpuProcess(pid=p.pid, name=_process_name(n, call_nvml, p.pid),
                   used_memory_bytes=int(p.usedGpuMemory or 0))
        for p in read("processes", "nvmlDeviceGetComputeRunningProcesses") or []
    ]  # fmt: skip
    return Reading(values, errors, processes)


def _process_name(n: Any, call_nvml: Call, pid: int) -> str:
    try:
        return str(call_nvml("nvmlSystemGetProcessName", pid))
    except n.NVMLError:
        return ""


def _read_nvlink(n: Any, h: Any, call_nvml: Call, read: Callable[..., Any], put: Callable[..., None]) -> None:
    active = 0
    totals = dict.fromkeys(NVLINK_COUNTERS, 0)
    for link in range(n.NVML_NVLINK_MAX_LINKS):
        try:
            state = call_nvml("nvmlDeviceGetNvLinkState", h, link)
        except n.NVMLError as e:
            if e.value == n.NVML_ERROR_GPU_IS_LOST:
                raise GpuLost from e
            break  # past the last link (INVALID_ARGUMENT) or no NVLink at all (NOT_SUPPORTED)
        active += 1 if state == n.NVML_FEATURE_ENABLED else 0
        for name, counter in NVLINK_COUNTERS.items():
            value = read(f"nvlink_{name}", "nvmlDeviceGetNvLinkErrorCounter", link, counter)
            if value:
                put(f"nvlink{link}_{name}_errors", value)
                totals[name] += value
    put("nvlink_links_active", active)
    for name, total in totals.items():
        put(f"nvlink_{name}_errors", total)
