"""The NVML producer: GPU inventory, an event waiter and a poller, over nvidia-ml-py.

The NVML module is a parameter (``pynvml``, or ``producers.fake_nvml.FakeNvml``
in tests and ``--simulate-gpus``). Lessons from the field, built in:

- NVML calls can hang. Every poll runs on one worker thread under a deadline;
  a poll that overruns is an ``NvmlEvent(kind="hung")`` naming the call, and
  the rest of the agent never waits for it.
- NOT_SUPPORTED means "skip that field or event type", never "unhealthy".
- NVML failing on a node with NVIDIA PCI devices is ``init_failed`` (the rules
  make it Unhealthy: such a node must not take work); a node with no NVIDIA
  device says once that NVML is not applicable, and is Healthy.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuhealth import bus, subjects
from gpuhealth.config import NodeIdentity
from gpuhealth.events import (
    GpuInfo,
    Inventory,
    MetricBatch,
    NvmlEvent,
    SourceStatus,
    derived_id,
    encode,
    new_id,
    now_ns,
)
from producers import sysfs_tree
from producers.kernel import normalise_pci
from producers.nvml_read import GpuLost, read_gpu

log = logging.getLogger("gpuhealth.nvml")

SOURCE = "nvml"
SLOWDOWN_KEYS = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown")
RESTATE_NS = 60_000_000_000
Item = tuple[str, str, bytes]
Publish = Callable[[list[Item]], Awaitable[None]]


@dataclass
class Gpu:
    index: int
    handle: Any
    uuid: str
    pci_bus_id: str
    info: GpuInfo
    unsupported: set[str] = field(default_factory=set)
    remap_pending: bool = False
    remap_failed: bool = False
    lost: bool = False
    slowdown_reported: int = 0  # when an ongoing HW slowdown was last reported (0: none ongoing)
    hot: bool = False


class NvmlProducer:
    def __init__(
        self,
        nvml: Any,  # the pynvml module, a FakeNvml, or None when it could not be loaded
        identity: NodeIdentity,
        sysfs_root: Path,
        publish: Publish,
        *,
        load_error: str = "",
        poll_interval: float = 10.0,
        deadline: float = 5.0,
    ) -> None:
        self.nvml = nvml
        self.identity = identity
        self.sysfs_root = sysfs_root
        self.publish = publish
        self.load_error = load_error
        self.poll_interval = poll_interval
        self.deadline = deadline
        self.gpus: list[Gpu] = []
        self.working = False
        self.polls = 0
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nvml")
        self._current_call = ""
        self._pending_poll: asyncio.Future[list[Item]] | None = None
        self._hung_reported = False
        self._event_set: Any = None
        self._stop_waiter = threading.Event()
        self.wake = asyncio.Event()  # set to poll now (a simulated fault was injected)

    # ---------------------------------------------------------------- start

    async def open(self) -> list[Item]:
        """Initialise NVML and read the inventory. Returns what to publish first."""
        pci_gpus = len(sysfs_tree.nvidia_gpus(self.sysfs_root))
        error = self.load_error or "NVML is not installed"
        if self.nvml is not None:
            try:
                # nvmlInit alone can take many seconds without persistence mode: a longer deadline.
                inventory = await self._in_thread(self._init_and_inventory, pci_gpus, deadline=self.deadline * 6)
                self.working = True
            except TimeoutError:
                error = f"nvmlInit did not return within {self.deadline:.0f}s"
            except Exception as e:  # an NVMLError, or the library missing underneath pynvml
                error = f"{type(e).__name__}: {e}"
        if not self.working:
            if pci_gpus == 0:
                log.info("NVML: not applicable: no NVIDIA GPU on this node")
                return [self._status(False, "no NVIDIA GPU on this node", applicable=False)]
            log.error("NVML unavailable with %d NVIDIA GPUs on PCI: %s", pci_gpus, error)
            return [self._event("init_failed", None, message=f"{error} ({pci_gpus} NVIDIA GPUs on PCI)")]
        items = [self._status(True, f"{len(self.gpus)} GPUs, driver {inventory.driver_version}")]
        items.append((subjects.inventory_subject(self.identity.node), inventory.id, encode(inventory)))
        if len(self.gpus) < pci_gpus:
            items.append(self._event("gpu_count", None, data=len(self.gpus),
                                     message=f"NVML sees {len(self.gpus)} GPUs, PCI has {pci_gpus}"))  # fmt: skip
        return items

    def _init_and_inventory(self, pci_gpus: int) -> Inventory:
        n = self.nvml
        self._q("nvmlInit")
        driver = self._q("nvmlSystemGetDriverVersion")
        cuda = self._try("nvmlSystemGetCudaDriverVersion")
        self.gpus = []
        for index in range(self._q("nvmlDeviceGetCount")):
            try:
                h = self._q("nvmlDeviceGetHandleByIndex", index)
                uuid = self._q("nvmlDeviceGetUUID", h)
                bus = self._q("nvmlDeviceGetPciInfo", h).busId
                pci = normalise_pci(bus.decode() if isinstance(bus, bytes) else str(bus)) or str(bus)
            except n.NVMLError as e:
                log.error("NVML: GPU %d unreadable: %s", index, e)
                continue
            self.gpus.append(Gpu(index, h, uuid, pci, self._gpu_info(index, h, uuid, pci)))
        self._register_events()
        return self._inventory(pci_gpus, driver, cuda)

    def _gpu_info(self, index: int, h: Any, uuid: str, pci: str) -> GpuInfo:
        return GpuInfo(
            index=index, pci_bus_id=pci, uuid=uuid,
            serial=self._try("nvmlDeviceGetSerial", h),
            name=self._try("nvmlDeviceGetName", h),
            board_part_number=self._try("nvmlDeviceGetBoardPartNumber", h),
            vbios=self._try("nvmlDeviceGetVbiosVersion", h),
        )  # fmt: skip

    def _inventory(self, pci_gpus: int, driver: Any, cuda: Any) -> Inventory:
        t = now_ns()
        return Inventory(
            id=new_id(t), time=t, cluster=self.identity.cluster, node=self.identity.node,
            machine_id=self.identity.machine_id, boot_id=self.identity.boot_id, source=SOURCE,
            component="inventory", gpus=[g.info for g in self.gpus], driver_version=str(driver),
            cuda_driver_version=f"{cuda // 1000}.{cuda % 1000 // 10}" if isinstance(cuda, int) else None,
            nvidia_pci_devices=pci_gpus,
        )  # fmt: skip

    def _reread(self) -> Inventory:
        for g in self.gpus:
            g.uuid = self._try("nvmlDeviceGetUUID", g.handle) or g.uuid
            g.info = self._gpu_info(g.index, g.handle, g.uuid, g.pci_bus_id)
        return self._inventory(len(sysfs_tree.nvidia_gpus(self.sysfs_root)), self._q("nvmlSystemGetDriverVersion"),
                               self._try("nvmlSystemGetCudaDriverVersion"))  # fmt: skip

    async def reread_inventory(self) -> list[Item]:
        """Read the GPUs' identities again (a board was replaced, the driver reloaded): the inventory to publish."""
        if not self.working:
            return []
        inventory = await self._in_thread(self._reread, deadline=self.deadline * 6)
        return [(subjects.inventory_subject(self.identity.node), inventory.id, encode(inventory))]

    def _register_events(self) -> None:
        """Xid, ECC and power-source events where supported; NOT_SUPPORTED skips a type. Not clock changes:
        a real H100 at work raised 11 a second, none a fault (the poller reads clocks and their reasons)."""
        n = self.nvml
        wanted = (n.nvmlEventTypeXidCriticalError, n.nvmlEventTypeSingleBitEccError,
                  n.nvmlEventTypeDoubleBitEccError, n.nvmlEventTypePowerSourceChange)  # fmt: skip
        self._event_set = self._q("nvmlEventSetCreate")
        for g in self.gpus:
            supported = self._try("nvmlDeviceGetSupportedEventTypes", g.handle) or 0
            for event_type in wanted:
                if not supported & event_type:
                    continue
                try:
                    self._q("nvmlDeviceRegisterEvents", g.handle, event_type, self._event_set)
                except n.NVMLError as e:
                    log.info("NVML: GPU %d: event type %d not registered: %s", g.index, event_type, e)

    # ---------------------------------------------------------------- NVML calls

    def _q(self, name: str, *args: Any) -> Any:
        """One NVML call, remembered so a hang can be named."""
        self._current_call = name
        return getattr(self.nvml, name)(*args)

    def _try(self, name: str, *args: Any) -> Any:
        """A call whose failure only means the value is unknown."""
        try:
            return self._q(name, *args)
        except self.nvml.NVMLError:
            return None

    async def _in_thread(self, fn: Callable[..., Any], *args: Any, deadline: float) -> Any:
        loop = asyncio.get_running_loop()
        return await asyncio.wait_for(asyncio.shield(loop.run_in_executor(self._pool, fn, *args)), deadline)

    # ---------------------------------------------------------------- running

    async def run(self, stop: asyncio.Event) -> None:
        if not self.working:
            return
        queue: asyncio.Queue[Any] = asyncio.Queue()
        waiter = threading.Thread(target=self._wait_events, args=(asyncio.get_running_loop(), queue),
                                  name="nvml-events", daemon=True)  # fmt: skip
        waiter.start()
        events = asyncio.create_task(self._forward_events(queue, stop))
        try:
            while not stop.is_set():
                self.wake.clear()
                await bus.publish_until_acked(self.publish, await self.poll_once(), what="nvml")
                waits = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(self.wake.wait())]
                await asyncio.wait(waits, timeout=self.poll_interval, return_when=asyncio.FIRST_COMPLETED)
                for w in waits:
                    w.cancel()
        finally:
            self._stop_waiter.set()
            events.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await events

    async def poll_once(self) -> list[Item]:
        """One poll of every GPU; a poll still stuck in NVML from before is not stacked on."""
        if self._pending_poll is None or self._pending_poll.done():
            loop = asyncio.get_running_loop()
            self._pending_poll = asyncio.ensure_future(loop.run_in_executor(self._pool, self._poll_all))
        try:
            items: list[Item] = await asyncio.wait_for(asyncio.shield(self._pending_poll), self.deadline)
        except TimeoutError:
            if self._hung_reported:
                return []
            self._hung_reported = True
            log.error("NVML call %s did not return within %.0fs", self._current_call, self.deadline)
            return [self._event("hung", None, message=self._current_call)]
        self._hung_reported = False
        self.polls += 1
        return items

    def _poll_all(self) -> list[Item]:
        items: list[Item] = []
        for g in self.gpus:
            if g.lost:
                continue
            try:
                items += self._poll_gpu(g)
            except GpuLost:
                g.lost = True
                items.append(self._event("gpu_lost", g, message=f"GPU {g.index} ({g.uuid}) is lost"))
        return items

    def _poll_gpu(self, g: Gpu) -> list[Item]:
        r = read_gpu(self.nvml, g.handle, g.unsupported, self._q)
        items: list[Item] = []
        pending, failed = r.values.get("remapped_rows_pending"), r.values.get("remapped_rows_failure")
        if pending and not g.remap_pending:
            items.append(self._event("remap_pending", g, message="row remapping pending: reset the GPU"))
        if failed and not g.remap_failed:
            items.append(self._event("remap_failed", g, message="row remapping failed"))
        g.remap_pending, g.remap_failed = bool(pending), bool(failed)
        items += self._conditions(g, r.values)
        t, i = now_ns(), self.identity
        batch = MetricBatch(
            id=new_id(t), time=t, cluster=i.cluster, node=i.node, machine_id=i.machine_id, boot_id=i.boot_id,
            source=SOURCE, component="gpu", entity=g.pci_bus_id, gpu_uuid=g.uuid, pci_bus_id=g.pci_bus_id,
            values=r.values, processes=r.processes, errors=r.errors,
        )  # fmt: skip
        items.append((subjects.metric_subject(i.node, SOURCE), batch.id, encode(batch)))
        return items

    def _conditions(self, g: Gpu, v: dict[str, float]) -> list[Item]:
        """HW slowdown and temperature as conditions: on change, and an ongoing slowdown once a
        minute, so the rules can count the minutes it was active in (no clock of their own)."""
        items = []
        t = now_ns()
        why = [k.removesuffix("_slowdown").replace("_", " ") for k in SLOWDOWN_KEYS if v.get(k)]
        if why and t - g.slowdown_reported >= RESTATE_NS:
            g.slowdown_reported = t
            items.append(self._event("slowdown", g, data=1, message=", ".join(why)))
        elif not why and g.slowdown_reported:
            g.slowdown_reported = 0
            items.append(self._event("slowdown", g, data=0, message="ended"))
        temp, limit = v.get("temperature_gpu_c"), v.get("temperature_slowdown_c")
        if temp is not None and limit:
            hot = temp >= limit
            if hot != g.hot:
                g.hot = hot
                message = f"GPU {g.index} at {temp:.0f} C (slowdown at {limit:.0f} C)"
                items.append(self._event("temperature", g, data=int(hot), message=message))
        return items

    # ---------------------------------------------------------------- events

    def _wait_events(self, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[Any]) -> None:
        """A dedicated thread blocks in nvmlEventSetWait_v2 and hands events to the loop."""
        n = self.nvml
        while not self._stop_waiter.is_set():
            try:
                data = n.nvmlEventSetWait_v2(self._event_set, 5000)  # blocks in C; wakes only to check stop
                uuid = n.nvmlDeviceGetUUID(data.device)
            except n.NVMLError as e:
                if e.value != n.NVML_ERROR_TIMEOUT:
                    log.warning("NVML event wait: %s", e)
                    self._stop_waiter.wait(1.0)
                continue
            loop.call_soon_threadsafe(queue.put_nowait, (uuid, data.eventType, data.eventData))

    async def _forward_events(self, queue: asyncio.Queue[Any], stop: asyncio.Event) -> None:
        n = self.nvml
        kinds = {n.nvmlEventTypeXidCriticalError: "xid", n.nvmlEventTypeSingleBitEccError: "ecc_sbe",
                 n.nvmlEventTypeDoubleBitEccError: "ecc_dbe",
                 n.nvmlEventTypePowerSourceChange: "power_source"}  # fmt: skip
        by_uuid = {g.uuid: g for g in self.gpus}
        while not stop.is_set():
            uuid, event_type, data = await queue.get()
            batch = [(uuid, event_type, data)]
            while not queue.empty():
                batch.append(queue.get_nowait())
            items = []
            for uuid, event_type, data in batch:
                kind = kinds.get(event_type, f"event_{event_type}")
                g = by_uuid.get(uuid)
                xid = int(data) if kind == "xid" and 0 <= int(data) < 2**32 else None  # else no code: the wire's range
                items.append(self._event(kind, g, xid=xid, data=int(data)))
            await bus.publish_until_acked(self.publish, items, what="nvml")

    # ---------------------------------------------------------------- messages

    def _event(self, kind: str, g: Gpu | None, *, xid: int | None = None, data: int = 0, message: str = "") -> Item:
        t, i = now_ns(), self.identity
        # Facts the poller derives (a GPU lost, a remap pending) get ids from what they are, so a
        # second agent start within the dedup window does not report them twice.
        derived = kind in ("gpu_lost", "remap_pending", "remap_failed", "init_failed", "gpu_count")
        event_id = derived_id(t // 60_000_000_000 * 60_000_000_000, i.node, i.boot_id, kind,
                              g.uuid if g else "") if derived else new_id(t)  # fmt: skip
        ev = NvmlEvent(
            id=event_id, time=t, cluster=i.cluster, node=i.node, machine_id=i.machine_id, boot_id=i.boot_id,
            boot_time=i.boot_time_ns, source=SOURCE, component="nvml", kind=kind, gpu_index=g.index if g else None,
            gpu_uuid=g.uuid if g else None, pci_bus_id=g.pci_bus_id if g else None, xid=xid, data=data,
            message=message,
        )  # fmt: skip
        return subjects.event_subject(i.node, SOURCE), ev.id, encode(ev)

    def _status(self, available: bool, reason: str, *, applicable: bool = True) -> Item:
        t, i = now_ns(), self.identity
        st = SourceStatus(
            id=new_id(t), time=t, cluster=i.cluster, node=i.node, machine_id=i.machine_id, boot_id=i.boot_id,
            boot_time=i.boot_time_ns, source=SOURCE, component="accelerator-nvidia-nvml", available=available,
            applicable=applicable, reason=reason,
        )  # fmt: skip
        return subjects.event_subject(i.node, SOURCE), st.id, encode(st)

    def close(self) -> None:
        self._stop_waiter.set()
        if self.working:
            with contextlib.suppress(Exception):
                self.nvml.nvmlShutdown()
        self._pool.shutdown(wait=False, cancel_futures=True)
