"""Reading one GPU through NVML: every value the poller publishes, nothing else.

Pure over the NVML module and a call function (the producer's, which records
the call in flight so a hang can be named). NOT_SUPPORTED is remembered per
GPU and never asked again; GPU_IS_LOST raises ``GpuLost``; any other error is
kept beside the values, never taken for a value.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass, field
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


@dataclass
class _Sampler:
    """One GPU's reading in progress: each NVML call by name, its value kept under a key, or its error."""

    n: Any
    h: Any
    unsupported: set[str]
    call_nvml: Call
    values: dict[str, float] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    def read(self, key: str, call: str, *args: Any) -> Any:
        """The call's answer; None when this GPU does not support it (never asked again) or it failed."""
        if call in self.unsupported:
            return None
        try:
            return self.call_nvml(call, self.h, *args)
        except self.n.NVMLError as e:
            if e.value == self.n.NVML_ERROR_NOT_SUPPORTED:
                self.unsupported.add(call)
            elif e.value == self.n.NVML_ERROR_GPU_IS_LOST:
                raise GpuLost from e
            else:
                self.errors[key] = str(e)
            return None

    def put(self, key: str, value: Any, scale: float = 1.0) -> None:
        if value is not None:
            self.values[key] = float(value) * scale

    def get(self, key: str, call: str, *args: Any, scale: float = 1.0) -> None:
        self.put(key, self.read(key, call, *args), scale)


def read_gpu(n: Any, h: Any, unsupported: set[str], call_nvml: Call) -> Reading:
    s = _Sampler(n, h, unsupported, call_nvml)
    _thermal_and_power(s)
    _memory_and_ecc(s)
    _clocks(s)
    _read_nvlink(n, h, call_nvml, s.read, s.put)
    _links(s)
    processes = [
        GpuProcess(pid=p.pid, name=_process_name(n, call_nvml, p.pid), used_memory_bytes=int(p.usedGpuMemory or 0))
        for p in s.read("processes", "nvmlDeviceGetComputeRunningProcesses") or []
    ]
    return Reading(s.values, s.errors, processes)


def _thermal_and_power(s: _Sampler) -> None:
    n = s.n
    s.get("temperature_gpu_c", "nvmlDeviceGetTemperature", n.NVML_TEMPERATURE_GPU)
    fields = s.read("temperature_memory_c", "nvmlDeviceGetFieldValues", [n.NVML_FI_DEV_MEMORY_TEMP])
    if fields and fields[0].nvmlReturn == n.NVML_SUCCESS:
        s.put("temperature_memory_c", fields[0].value.uiVal)
    s.get("temperature_slowdown_c", "nvmlDeviceGetTemperatureThreshold", n.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN)
    s.get("temperature_shutdown_c", "nvmlDeviceGetTemperatureThreshold", n.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN)
    s.get("power_w", "nvmlDeviceGetPowerUsage", scale=1e-3)
    s.get("power_limit_w", "nvmlDeviceGetEnforcedPowerLimit", scale=1e-3)
    s.get("energy_mj", "nvmlDeviceGetTotalEnergyConsumption")  # since the driver loaded
    if util := s.read("util", "nvmlDeviceGetUtilizationRates"):
        s.put("util_gpu_pct", util.gpu)
        s.put("util_memory_pct", util.memory)
    for key, call in (("util_encoder_pct", "nvmlDeviceGetEncoderUtilization"),
                      ("util_decoder_pct", "nvmlDeviceGetDecoderUtilization")):  # fmt: skip
        if sampled := s.read(key, call):  # [percent, sampling period in us]
            s.put(key, sampled[0])


def _memory_and_ecc(s: _Sampler) -> None:
    n = s.n
    if mem := s.read("memory", "nvmlDeviceGetMemoryInfo"):
        s.put("memory_used_bytes", mem.used)
        s.put("memory_total_bytes", mem.total)
    for etype, ename in ((n.NVML_MEMORY_ERROR_TYPE_CORRECTED, "sbe"), (n.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, "dbe")):
        for ctype, cname in ((n.NVML_VOLATILE_ECC, "volatile"), (n.NVML_AGGREGATE_ECC, "aggregate")):
            s.get(f"ecc_{ename}_{cname}", "nvmlDeviceGetTotalEccErrors", etype, ctype)
    for cause, cname in (
        (n.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, "sbe"),
        (n.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, "dbe"),
    ):
        pages = s.read(f"retired_pages_{cname}", "nvmlDeviceGetRetiredPages", cause)
        s.put(f"retired_pages_{cname}", None if pages is None else len(pages))
    s.get("retired_pages_pending", "nvmlDeviceGetRetiredPagesPendingStatus")
    if rows := s.read("remapped_rows", "nvmlDeviceGetRemappedRows"):
        for key, value in zip(("correctable", "uncorrectable", "pending", "failure"), rows, strict=True):
            s.put(f"remapped_rows_{key}", value)


def _clocks(s: _Sampler) -> None:
    n = s.n
    s.get("clock_graphics_mhz", "nvmlDeviceGetClockInfo", n.NVML_CLOCK_GRAPHICS)
    s.get("clock_sm_mhz", "nvmlDeviceGetClockInfo", n.NVML_CLOCK_SM)
    s.get("clock_memory_mhz", "nvmlDeviceGetClockInfo", n.NVML_CLOCK_MEM)
    reasons = s.read("clock_event_reasons", "nvmlDeviceGetCurrentClocksEventReasons")
    if reasons is None:
        return
    s.put("clock_event_reasons", reasons)
    for key, bit in (
        ("hw_slowdown", n.nvmlClocksEventReasonHwSlowdown),
        ("hw_thermal_slowdown", n.nvmlClocksEventReasonHwThermalSlowdown),
        ("hw_power_brake_slowdown", n.nvmlClocksEventReasonHwPowerBrakeSlowdown),
        ("sw_thermal_slowdown", n.nvmlClocksEventReasonSwThermalSlowdown),
    ):
        s.put(key, 1 if reasons & bit else 0)


def _links(s: _Sampler) -> None:
    """PCIe, persistence and the NVLink fabric (the per-link NVLink counters: _read_nvlink)."""
    s.get("pcie_replay_count", "nvmlDeviceGetPcieReplayCounter")
    s.get("pcie_gen_current", "nvmlDeviceGetCurrPcieLinkGeneration")
    s.get("pcie_gen_max", "nvmlDeviceGetMaxPcieLinkGeneration")
    s.get("pcie_width_current", "nvmlDeviceGetCurrPcieLinkWidth")
    s.get("pcie_width_max", "nvmlDeviceGetMaxPcieLinkWidth")
    s.get("persistence_mode", "nvmlDeviceGetPersistenceMode")
    fabric = s.n.c_nvmlGpuFabricInfo_t()
    ref = ctypes.byref(fabric) if isinstance(fabric, ctypes.Structure) else fabric
    if s.read("fabric", "nvmlDeviceGetGpuFabricInfo", ref) is not None:
        s.put("fabric_state", fabric.state)
        s.put("fabric_status", fabric.status)


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
