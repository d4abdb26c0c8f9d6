"""A fake of nvidia-ml-py (``pynvml``) for tests and demos, driven by a scenario.

Every function, constant, error class and struct field the NVML producer uses
has the name and value nvidia-ml-py gives it (a test compares them with the
real module, importable without a GPU). ``FakeNvml(gpus=8)`` is an 8-GPU H100
node with realistic values; ``inject_xid``, ``inject_ecc``, ``lose_gpu``,
``remap_rows``, ``slowdown`` and ``hang`` change it the way a failing GPU would.
``gpuctl up --simulate-gpus 8`` runs the agent on one.
"""

from __future__ import annotations

import hashlib
import queue
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from producers import nvml_names
from producers.nvml_names import (
    NVML_AGGREGATE_ECC,
    NVML_CLOCK_GRAPHICS,
    NVML_CLOCK_MEM,
    NVML_CLOCK_SM,
    NVML_ERROR_GPU_IS_LOST,
    NVML_ERROR_INVALID_ARGUMENT,
    NVML_ERROR_NOT_SUPPORTED,
    NVML_ERROR_TIMEOUT,
    NVML_ERROR_UNINITIALIZED,
    NVML_FEATURE_DISABLED,
    NVML_FEATURE_ENABLED,
    NVML_FI_DEV_MEMORY_TEMP,
    NVML_GPU_FABRIC_STATE_COMPLETED,
    NVML_MEMORY_ERROR_TYPE_CORRECTED,
    NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
    NVML_SUCCESS,
    NVML_TEMPERATURE_THRESHOLD_SHUTDOWN,
    NVML_TEMPERATURE_THRESHOLD_SLOWDOWN,
    NVML_VOLATILE_ECC,
    NVMLError,
    nvmlClocksEventReasonGpuIdle,
    nvmlClocksEventReasonHwSlowdown,
    nvmlClocksEventReasonHwThermalSlowdown,
    nvmlEventTypeClock,
    nvmlEventTypeDoubleBitEccError,
    nvmlEventTypeSingleBitEccError,
    nvmlEventTypeXidCriticalError,
)

# ---------------------------------------------------------------- the scenario


@dataclass
class FakeGpu:
    index: int
    uuid: str
    serial: str
    pci_bus_id: str
    name: str = "NVIDIA H100 80GB HBM3"
    board_part_number: str = "692-2G520-0200-000"
    vbios: str = "96.00.99.00.01"
    temperature: int = 34
    memory_temperature: int = 41
    power_mw: int = 71_000
    power_limit_mw: int = 700_000
    util_gpu: int = 0
    util_memory: int = 0
    memory_total: int = 81_559_420_928
    memory_used: int = 555_745_280
    clocks_mhz: dict[int, int] = field(  # idle
        default_factory=lambda: {NVML_CLOCK_GRAPHICS: 345, NVML_CLOCK_SM: 345, NVML_CLOCK_MEM: 2619}
    )
    energy_mj: int = 0  # since the driver loaded: the power drawn since nvmlInit added on every read
    encoder_util: int = 0
    decoder_util: int = 0
    ecc: dict[tuple[int, int], int] = field(default_factory=dict)  # (error type, counter type) → count
    retired: dict[int, int] = field(default_factory=dict)  # cause → pages
    retired_pending: int = NVML_FEATURE_DISABLED
    remapped: tuple[int, int, int, int] = (0, 0, 0, 0)  # correctable, uncorrectable, pending, failure
    clock_reasons: int = nvmlClocksEventReasonGpuIdle
    nvlink_links: int = 18
    nvlink_errors: dict[tuple[int, int], int] = field(default_factory=dict)  # (link, counter) → count
    pcie_replay: int = 0
    pcie_gen: tuple[int, int] = (5, 5)  # current, max
    pcie_width: tuple[int, int] = (16, 16)
    persistence: int = NVML_FEATURE_ENABLED
    fabric_state: int = NVML_GPU_FABRIC_STATE_COMPLETED
    processes: list[tuple[int, int]] = field(default_factory=list)  # (pid, used memory bytes)
    lost: bool = False


def _fake_uuid(node_seed: str, index: int) -> str:
    h = hashlib.sha256(f"{node_seed}/{index}".encode()).hexdigest()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


H100_BUSES = (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)


class FakeNvml:
    """An object with nvidia-ml-py's surface, over a scenario of fake GPUs."""

    def __init__(
        self, gpus: int = 8, *, seed: str = "gpuhealth", init_error: int | None = None, driver: str = "550.90.07"
    ) -> None:
        self.gpus = [
            FakeGpu(
                index=i,
                uuid=_fake_uuid(seed, i),
                serial=f"16523{int(hashlib.sha256(f'{seed}/{i}'.encode()).hexdigest()[:8], 16) % 10**8:08d}",
                pci_bus_id=f"00000000:{H100_BUSES[i % 8] + i // 8:02X}:00.0",
            )
            for i in range(gpus)
        ]
        self.init_error = init_error
        self.driver = driver
        self.initialized = False
        self.init_at = time.monotonic()
        self.hangs: dict[str, float] = {}  # function name → seconds it blocks
        self._events: queue.Queue[SimpleNamespace] = queue.Queue()
        self._lock = threading.Lock()
        self.calls: deque[str] = deque(maxlen=100_000)  # for tests: what the producer asked, lately

    # ---- scenario controls

    def inject_xid(self, index: int, xid: int) -> None:
        self._emit(index, nvmlEventTypeXidCriticalError, xid)

    def inject_ecc(self, index: int, *, double_bit: bool) -> None:
        g = self.gpus[index]
        etype = NVML_MEMORY_ERROR_TYPE_UNCORRECTED if double_bit else NVML_MEMORY_ERROR_TYPE_CORRECTED
        for counter in (NVML_VOLATILE_ECC, NVML_AGGREGATE_ECC):
            g.ecc[(etype, counter)] = g.ecc.get((etype, counter), 0) + 1
        self._emit(index, nvmlEventTypeDoubleBitEccError if double_bit else nvmlEventTypeSingleBitEccError, 0)

    def inject_event(self, index: int, event_type: int, data: int = 0) -> None:
        """Any NVML event (a clock change, a power-source change) as the driver would deliver it."""
        self._emit(index, event_type, data)

    def replace_gpu(self, index: int) -> None:
        """The board in slot ``index`` swapped for another: a new UUID and serial on the same bus."""
        g = self.gpus[index]
        g.uuid = _fake_uuid(g.uuid, index)
        g.serial = f"16524{int(hashlib.sha256(g.serial.encode()).hexdigest()[:8], 16) % 10**8:08d}"

    def lose_gpu(self, index: int) -> None:
        self.gpus[index].lost = True

    def remap_rows(self, index: int, *, pending: bool = False, failed: bool = False) -> None:
        c, u, _, _ = self.gpus[index].remapped
        self.gpus[index].remapped = (c, u + 1, int(pending), int(failed))

    def slowdown(self, index: int, on: bool = True) -> None:
        g = self.gpus[index]
        bits = nvmlClocksEventReasonHwSlowdown | nvmlClocksEventReasonHwThermalSlowdown
        g.clock_reasons = (g.clock_reasons | bits) if on else (g.clock_reasons & ~bits)

    def hang(self, function: str, seconds: float) -> None:
        self.hangs[function] = seconds

    def _emit(self, index: int, event_type: int, data: int) -> None:
        self._events.put(SimpleNamespace(device=self._handle(index), eventType=event_type, eventData=data,
                                         gpuInstanceId=0xFFFFFFFF, computeInstanceId=0xFFFFFFFF))  # fmt: skip

    # ---- plumbing

    def _call(self, name: str) -> None:
        self.calls.append(name)
        if name in self.hangs:
            time.sleep(self.hangs[name])
        if not self.initialized and name not in ("nvmlInit", "nvmlShutdown"):
            raise NVMLError(NVML_ERROR_UNINITIALIZED)

    def _handle(self, index: int) -> SimpleNamespace:
        return SimpleNamespace(index=index)

    def _gpu(self, name: str, handle: Any) -> FakeGpu:
        self._call(name)
        g: FakeGpu = self.gpus[handle.index]
        if g.lost:
            raise NVMLError(NVML_ERROR_GPU_IS_LOST)
        return g

    # ---- the library

    def nvmlInit(self) -> None:
        self._call("nvmlInit")
        if self.init_error is not None:
            raise NVMLError(self.init_error)
        self.initialized = True
        self.init_at = time.monotonic()

    def nvmlShutdown(self) -> None:
        self._call("nvmlShutdown")
        self.initialized = False

    def nvmlSystemGetDriverVersion(self) -> str:
        self._call("nvmlSystemGetDriverVersion")
        return self.driver

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        self._call("nvmlSystemGetCudaDriverVersion")
        return 12040

    def nvmlSystemGetProcessName(self, pid: int) -> str:
        self._call("nvmlSystemGetProcessName")
        return "python3"

    def nvmlDeviceGetCount(self) -> int:
        self._call("nvmlDeviceGetCount")
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> SimpleNamespace:
        self._call("nvmlDeviceGetHandleByIndex")
        if not 0 <= index < len(self.gpus):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        if self.gpus[index].lost:
            raise NVMLError(NVML_ERROR_GPU_IS_LOST)
        return self._handle(index)

    def nvmlDeviceGetIndex(self, handle: Any) -> int:
        return self._gpu("nvmlDeviceGetIndex", handle).index

    def nvmlDeviceGetUUID(self, handle: Any) -> str:
        return self._gpu("nvmlDeviceGetUUID", handle).uuid

    def nvmlDeviceGetSerial(self, handle: Any) -> str:
        return self._gpu("nvmlDeviceGetSerial", handle).serial

    def nvmlDeviceGetName(self, handle: Any) -> str:
        return self._gpu("nvmlDeviceGetName", handle).name

    def nvmlDeviceGetBoardPartNumber(self, handle: Any) -> str:
        return self._gpu("nvmlDeviceGetBoardPartNumber", handle).board_part_number

    def nvmlDeviceGetVbiosVersion(self, handle: Any) -> str:
        return self._gpu("nvmlDeviceGetVbiosVersion", handle).vbios

    def nvmlDeviceGetPciInfo(self, handle: Any) -> SimpleNamespace:
        g = self._gpu("nvmlDeviceGetPciInfo", handle)
        _, bus, rest = g.pci_bus_id.split(":")
        return SimpleNamespace(busId=g.pci_bus_id.encode(), busIdLegacy=g.pci_bus_id[4:].encode(), domain=0,
                               bus=int(bus, 16), device=int(rest.split(".")[0], 16), pciDeviceId=0x233010DE,
                               pciSubSystemId=0x16C110DE)  # fmt: skip

    def nvmlDeviceGetTemperature(self, handle: Any, sensor: int) -> int:
        return self._gpu("nvmlDeviceGetTemperature", handle).temperature

    def nvmlDeviceGetTemperatureThreshold(self, handle: Any, threshold: int) -> int:
        self._gpu("nvmlDeviceGetTemperatureThreshold", handle)
        return {NVML_TEMPERATURE_THRESHOLD_SHUTDOWN: 92, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN: 89}.get(threshold, 87)

    def nvmlDeviceGetFieldValues(self, handle: Any, field_ids: list[int]) -> list[SimpleNamespace]:
        g = self._gpu("nvmlDeviceGetFieldValues", handle)
        out = []
        for fid in field_ids:
            known = fid == NVML_FI_DEV_MEMORY_TEMP
            out.append(SimpleNamespace(fieldId=fid, scopeId=0, timestamp=0, latencyUsec=0, valueType=1,
                                       nvmlReturn=NVML_SUCCESS if known else NVML_ERROR_NOT_SUPPORTED,
                                       value=SimpleNamespace(uiVal=g.memory_temperature if known else 0)))  # fmt: skip
        return out

    def nvmlDeviceGetPowerUsage(self, handle: Any) -> int:
        return self._gpu("nvmlDeviceGetPowerUsage", handle).power_mw

    def nvmlDeviceGetClockInfo(self, handle: Any, clock_type: int) -> int:
        return self._gpu("nvmlDeviceGetClockInfo", handle).clocks_mhz[clock_type]

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: Any) -> int:
        g = self._gpu("nvmlDeviceGetTotalEnergyConsumption", handle)
        return g.energy_mj + int(g.power_mw * (time.monotonic() - self.init_at))  # mW x s = mJ

    def nvmlDeviceGetEncoderUtilization(self, handle: Any) -> list[int]:
        return [self._gpu("nvmlDeviceGetEncoderUtilization", handle).encoder_util, 167_000]  # [%, sampling us]

    def nvmlDeviceGetDecoderUtilization(self, handle: Any) -> list[int]:
        return [self._gpu("nvmlDeviceGetDecoderUtilization", handle).decoder_util, 167_000]

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: Any) -> int:
        return self._gpu("nvmlDeviceGetEnforcedPowerLimit", handle).power_limit_mw

    def nvmlDeviceGetUtilizationRates(self, handle: Any) -> SimpleNamespace:
        g = self._gpu("nvmlDeviceGetUtilizationRates", handle)
        return SimpleNamespace(gpu=g.util_gpu, memory=g.util_memory)

    def nvmlDeviceGetMemoryInfo(self, handle: Any, version: Any = None) -> SimpleNamespace:
        g = self._gpu("nvmlDeviceGetMemoryInfo", handle)
        return SimpleNamespace(total=g.memory_total, used=g.memory_used, free=g.memory_total - g.memory_used)

    def nvmlDeviceGetTotalEccErrors(self, handle: Any, error_type: int, counter_type: int) -> int:
        return self._gpu("nvmlDeviceGetTotalEccErrors", handle).ecc.get((error_type, counter_type), 0)

    def nvmlDeviceGetRetiredPages(self, handle: Any, cause: int) -> list[int]:
        g = self._gpu("nvmlDeviceGetRetiredPages", handle)
        if g.name.startswith("NVIDIA H100"):
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)  # Hopper remaps rows instead of retiring pages
        return [0x1000 * i for i in range(g.retired.get(cause, 0))]

    def nvmlDeviceGetRetiredPagesPendingStatus(self, handle: Any) -> int:
        g = self._gpu("nvmlDeviceGetRetiredPagesPendingStatus", handle)
        if g.name.startswith("NVIDIA H100"):
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return g.retired_pending

    def nvmlDeviceGetRemappedRows(self, handle: Any) -> tuple[int, int, int, int]:
        return self._gpu("nvmlDeviceGetRemappedRows", handle).remapped

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: Any) -> int:
        return self._gpu("nvmlDeviceGetCurrentClocksEventReasons", handle).clock_reasons

    def nvmlDeviceGetNvLinkState(self, handle: Any, link: int) -> int:
        g = self._gpu("nvmlDeviceGetNvLinkState", handle)
        if link >= g.nvlink_links:
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return NVML_FEATURE_ENABLED

    def nvmlDeviceGetNvLinkErrorCounter(self, handle: Any, link: int, counter: int) -> int:
        return self._gpu("nvmlDeviceGetNvLinkErrorCounter", handle).nvlink_errors.get((link, counter), 0)

    def nvmlDeviceGetPcieReplayCounter(self, handle: Any) -> int:
        return self._gpu("nvmlDeviceGetPcieReplayCounter", handle).pcie_replay

    def nvmlDeviceGetCurrPcieLinkGeneration(self, handle: Any) -> int:
        return self._gpu("nvmlDeviceGetCurrPcieLinkGeneration", handle).pcie_gen[0]

    def nvmlDeviceGetMaxPcieLinkGeneration(self, handle: Any) -> int:
        return self._gpu("nvmlDeviceGetMaxPcieLinkGeneration", handle).pcie_gen[1]

    def nvmlDeviceGetCurrPcieLinkWidth(self, handle: Any) -> int:
        return self._gpu("nvmlDeviceGetCurrPcieLinkWidth", handle).pcie_width[0]

    def nvmlDeviceGetMaxPcieLinkWidth(self, handle: Any) -> int:
        return self._gpu("nvmlDeviceGetMaxPcieLinkWidth", handle).pcie_width[1]

    def nvmlDeviceGetPersistenceMode(self, handle: Any) -> int:
        return self._gpu("nvmlDeviceGetPersistenceMode", handle).persistence

    def nvmlDeviceGetGpuFabricInfo(self, handle: Any, info: Any) -> int:
        """Fills ``info`` (a c_nvmlGpuFabricInfo_t) as the real call does."""
        g = self._gpu("nvmlDeviceGetGpuFabricInfo", handle)
        info.clusterUuid, info.status, info.cliqueId, info.state = bytes(16), NVML_SUCCESS, 1, g.fabric_state
        return NVML_SUCCESS

    def nvmlDeviceGetComputeRunningProcesses(self, handle: Any) -> list[SimpleNamespace]:
        g = self._gpu("nvmlDeviceGetComputeRunningProcesses", handle)
        return [SimpleNamespace(pid=p, usedGpuMemory=m, gpuInstanceId=0xFFFFFFFF, computeInstanceId=0xFFFFFFFF)
                for p, m in g.processes]  # fmt: skip

    def nvmlDeviceGetSupportedEventTypes(self, handle: Any) -> int:
        self._gpu("nvmlDeviceGetSupportedEventTypes", handle)
        return (nvmlEventTypeXidCriticalError | nvmlEventTypeSingleBitEccError | nvmlEventTypeDoubleBitEccError
                | nvmlEventTypeClock)  # fmt: skip  # no power-source events on a datacenter GPU

    # ---- events

    def nvmlEventSetCreate(self) -> SimpleNamespace:
        self._call("nvmlEventSetCreate")
        return SimpleNamespace(registered={})

    def nvmlDeviceRegisterEvents(self, handle: Any, event_types: int, event_set: Any) -> None:
        g = self._gpu("nvmlDeviceRegisterEvents", handle)
        if event_types & ~self.nvmlDeviceGetSupportedEventTypes(handle):
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        event_set.registered[g.index] = event_set.registered.get(g.index, 0) | event_types

    def nvmlEventSetWait_v2(self, event_set: Any, timeout_ms: int) -> SimpleNamespace:
        self._call("nvmlEventSetWait_v2")
        deadline = time.monotonic() + timeout_ms / 1000
        while (left := deadline - time.monotonic()) > 0:
            try:
                ev = self._events.get(timeout=left)
            except queue.Empty:
                break
            if event_set.registered.get(ev.device.index, 0) & ev.eventType:
                return ev
        raise NVMLError(NVML_ERROR_TIMEOUT)

    def nvmlEventSetFree(self, event_set: Any) -> None:
        self._call("nvmlEventSetFree")
        event_set.registered.clear()


def with_h100_load(nvml: FakeNvml) -> FakeNvml:
    """A busy node: training processes and realistic utilisation on every GPU."""
    for g in nvml.gpus:
        g.util_gpu, g.util_memory, g.temperature, g.power_mw = 97, 61, 63, 612_000
        g.memory_used = 71_000_000_000
        g.processes = [(41_000 + g.index, 70_000_000_000)]
    return nvml


# The producer takes "the NVML module": a FakeNvml instance answers for the constants,
# error classes and structs too, exactly as the pynvml module does.
for _name, _value in vars(nvml_names).items():
    if _name.startswith(("NVML_", "nvmlEventType", "nvmlClocksEventReason", "NVMLError", "c_nvml")):
        setattr(FakeNvml, _name, _value)
