"""A fleet of simulated nodes in one process, publishing into a real NATS: demos, load tests, benches.

Each node has a fake NVML (``FakeNvml``, H100-like values under load) read by
the same ``read_gpu`` the agent uses, an inventory, and faults drawn at
``fault_rate`` per node-hour from a mix shaped like a fleet's week: kernel
lines in the driver's own formats (classified by the same classifier as a
real node's log), NVML double-bit ECC events, PCIe AER fatal counts, InfiniBand
flaps, and reboots (a new boot id). Everything goes out as the agent would send
it, so the rules and the sink cannot tell a simulated node from a real one,
except by its name (``sim-0000``…) and ``source``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from gpuhealth import subjects
from gpuhealth.events import (
    GpuInfo,
    HostEvent,
    Inventory,
    KernelEvent,
    MetricBatch,
    NvmlEvent,
    SourceStatus,
    derived_id,
    encode,
    new_id,
    now_ns,
)
from producers import kernel
from producers.fake_nvml import FakeNvml, with_h100_load
from producers.klog import COMPONENT_OF_KIND
from producers.nvml_read import read_gpu

log = logging.getLogger("gpuhealth.simulate")

Item = tuple[str, str, bytes]
Publish = Callable[[list[Item]], Awaitable[None]]

# Kernel lines as the driver and the kernel print them; {pci} is "0000:18:00", {pid} a process id.
KERNEL_LINES = {
    "xid13": "NVRM: Xid (PCI:{pci}): 13, pid={pid}, name=python, Graphics Exception: ESR 0x50df30=0x107000e "
             "0x50df34=0x0 0x50df28=0x0 0x50df2c=0x0",
    "xid31": "NVRM: Xid (PCI:{pci}): 31, pid={pid}, name=pt_main_thread, Ch 00000008, intr 00000000. MMU Fault: "
             "ENGINE GRAPHICS GPCCLIENT_T1_3 faulted @ 0x7f4e_9a000000. Fault is of type FAULT_PDE "
             "ACCESS_TYPE_VIRT_READ",
    "xid43": "NVRM: Xid (PCI:{pci}): 43, pid={pid}, name=python3, Ch 00000018",
    "xid48": "NVRM: Xid (PCI:{pci}): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) "
             "has been detected on GPU in the framebuffer at partition 6, subpartition 0.",
    "xid63": "NVRM: Xid (PCI:{pci}): 63, pid='<unknown>', name=<unknown>, Row Remapper: New row (0x000000000102a3c0) "
             "marked for remapping, reset gpu to activate.",
    "xid79": "NVRM: Xid (PCI:{pci}): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
    "xid94": "NVRM: Xid (PCI:{pci}): 94, pid={pid}, name=python, Contained: SM (0x1). RST: No, D-RST: No",
    "xid119": "NVRM: Xid (PCI:{pci}): 119, pid={pid}, name=python, Timeout after 6s of waiting for RPC response "
              "from GPU0 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20800a4c 0x4).",
    "hung": "INFO: task python:{pid} blocked for more than 122 seconds.",
    "oom": "Out of memory: Killed process {pid} (python) total-vm:98765432kB, anon-rss:87654321kB, file-rss:0kB, "
           "shmem-rss:0kB, UID:1000 pgtables:171616kB oom_score_adj:0",
}  # fmt: skip
# name → weight: application faults dominate, hardware faults are rarer, as in a fleet's week
FAULT_MIX = {
    "xid13": 20, "xid31": 20, "xid43": 8, "xid94": 6, "xid48": 4, "xid63": 4, "xid79": 3, "xid119": 3,
    "hung": 6, "oom": 10, "nvml_dbe": 3, "aer_fatal": 2, "ib_flap": 4, "reboot": 7,
}  # fmt: skip


@dataclass
class SimNode:
    name: str
    cluster: str
    nvml: FakeNvml
    boot_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    machine_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    seq: int = 0
    ib_downs: int = 0

    def pci(self, gpu: int) -> str:
        return self.nvml.gpus[gpu].pci_bus_id.lower().removeprefix("0000")  # "0000:18:00.0"


class FleetSimulator:
    def __init__(self, publish: Publish, *, nodes: int, gpus: int = 8, fault_rate: float = 0.5,
                 interval: float = 10.0, cluster: str = "sim", seed: int = 1) -> None:  # fmt: skip
        self.publish = publish
        self.interval = interval
        self.fault_rate = fault_rate  # faults per node-hour
        self.rng = random.Random(seed)
        self.nodes = [SimNode(f"sim-{i:04d}", cluster, with_h100_load(FakeNvml(gpus, seed=f"sim-{i:04d}")))
                      for i in range(nodes)]  # fmt: skip
        for n in self.nodes:
            n.nvml.nvmlInit()
        self.published = {"events": 0, "metrics": 0, "faults": 0}

    # ---------------------------------------------------------------- messages

    def _base(self, n: SimNode, t: int, source: str, component: str) -> dict[str, Any]:
        return {"time": t, "cluster": n.cluster, "node": n.name, "machine_id": n.machine_id, "boot_id": n.boot_id,
                "source": source, "component": component}  # fmt: skip

    def hello(self, n: SimNode) -> list[Item]:
        """What an agent sends when it starts: its sources, and the inventory."""
        t = now_ns()
        gpus = [GpuInfo(index=g.index, pci_bus_id=n.pci(g.index), uuid=g.uuid, serial=g.serial,
                        name="NVIDIA H100 80GB HBM3", vbios="96.00.99.00.01") for g in n.nvml.gpus]  # fmt: skip
        inv = Inventory(id=new_id(t), **self._base(n, t, "nvml", "inventory"), gpus=gpus, driver_version="550.90.07",
                        cuda_driver_version="12.4", nvidia_pci_devices=len(gpus))  # fmt: skip
        items = [(subjects.inventory_subject(n.name), inv.id, encode(inv))]
        for source, component in (("kmsg", "kernel-log"), ("nvml", "accelerator-nvidia-nvml")):
            st = SourceStatus(id=new_id(t), **self._base(n, t, source, component), available=True,
                              reason="simulated")  # fmt: skip
            items.append((subjects.event_subject(n.name, source), st.id, encode(st)))
        return items

    def metrics(self, n: SimNode, t: int) -> list[Item]:
        out = []
        for g in n.nvml.gpus:
            h = n.nvml.nvmlDeviceGetHandleByIndex(g.index)
            r = read_gpu(n.nvml, h, set(), lambda name, *a: getattr(n.nvml, name)(*a))
            b = MetricBatch(id=new_id(t), **self._base(n, t, "nvml", "gpu"), entity=n.pci(g.index), gpu_uuid=g.uuid,
                            pci_bus_id=n.pci(g.index), values=r.values, processes=r.processes)  # fmt: skip
            out.append((subjects.metric_subject(n.name, "nvml"), b.id, encode(b)))
        return out

    def fault(self, n: SimNode, name: str, t: int) -> list[Item]:
        gpu = self.rng.randrange(len(n.nvml.gpus))
        pci = n.pci(gpu)
        if name in KERNEL_LINES:
            found = kernel.classify(KERNEL_LINES[name].format(pci=pci[:-2], pid=self.rng.randrange(1000, 99999)))
            n.seq += 1
            ev: Any = KernelEvent(
                id=derived_id(t, n.name, n.boot_id, n.seq), **self._base(n, t, "kmsg", COMPONENT_OF_KIND[found.kind
                or "other_fault"]), kind=found.kind, message=found.message, seq=n.seq, priority=3, xid=found.xid,
                pci_bus_id=found.pci_bus_id, pid=found.pid, process=found.process,
            )  # fmt: skip
            subject = subjects.event_subject(n.name, "kmsg")
        elif name == "nvml_dbe":
            n.nvml.inject_ecc(gpu, double_bit=True)
            ev = NvmlEvent(id=new_id(t), **self._base(n, t, "nvml", "nvml"), kind="ecc_dbe", gpu_index=gpu,
                           gpu_uuid=n.nvml.gpus[gpu].uuid, pci_bus_id=pci)  # fmt: skip
            subject = subjects.event_subject(n.name, "nvml")
        elif name == "aer_fatal":
            ev = HostEvent(id=new_id(t), **self._base(n, t, "sysfs", "pci"), kind="aer", entity=pci, pci_bus_id=pci,
                           counts={"fatal": 1, "fatal.CmpltTO": 1},
                           message=f"PCIe AER on gpu {pci}: fatal +1 (fatal.CmpltTO +1)")  # fmt: skip
            subject = subjects.event_subject(n.name, "sysfs")
        elif name == "ib_flap":
            n.ib_downs += 1
            port = f"mlx5_{gpu}:1"
            ev = HostEvent(id=new_id(t), **self._base(n, t, "sysfs", "accelerator-nvidia-infiniband"),
                           kind="ib_port", entity=port, state="ACTIVE", ok=True, since=t, counts={"downs": 1},
                           message=f"InfiniBand port {port} ACTIVE (LinkUp), 400 Gb/sec (4X NDR)")  # fmt: skip
            subject = subjects.event_subject(n.name, "sysfs")
        else:  # reboot: the node comes back with a new boot id
            previous = n.boot_id
            n.boot_id = str(uuid.uuid4())
            ev = HostEvent(id=new_id(t), **self._base(n, t, "host", "os"), kind="reboot", entity=n.name,
                           state=n.boot_id, since=t - 120 * 10**9,
                           message=f"rebooted: boot {previous} was last seen before {n.boot_id} began")  # fmt: skip
            subject = subjects.event_subject(n.name, "host")
        return [(subject, ev.id, encode(ev))]

    # ---------------------------------------------------------------- running

    def tick(self, t: int) -> tuple[list[Item], list[Item]]:
        """One interval: every GPU's metrics, and the faults that fell in it."""
        metrics = [item for n in self.nodes for item in self.metrics(n, t)]
        expected = len(self.nodes) * self.fault_rate * self.interval / 3600
        faults: list[Item] = []
        names, weights = list(FAULT_MIX), list(FAULT_MIX.values())
        for _ in range(_poisson(self.rng, expected)):
            n = self.rng.choice(self.nodes)
            faults += self.fault(n, self.rng.choices(names, weights)[0], t)
        return metrics, faults

    async def run(self, stop: asyncio.Event, duration: float | None = None) -> None:
        await self.publish([item for n in self.nodes for item in self.hello(n)])
        self.published["events"] += 2 * len(self.nodes)
        ends = time.monotonic() + duration if duration else None
        while not stop.is_set() and (ends is None or time.monotonic() < ends):
            started = time.monotonic()
            metrics, faults = await asyncio.to_thread(self.tick, now_ns())
            for i in range(0, len(metrics), 2000):
                await self.publish(metrics[i : i + 2000])
            if faults:
                await self.publish(faults)
            self.published["metrics"] += len(metrics)
            self.published["events"] += len(faults)
            self.published["faults"] += len(faults)
            wait = self.interval - (time.monotonic() - started)
            if ends is not None:
                wait = min(wait, ends - time.monotonic())
            if wait > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), wait)


def _poisson(rng: random.Random, mean: float) -> int:
    """Knuth's method, fine for the small means of one interval; a normal approximation above 30."""
    if mean > 30:
        return max(0, round(rng.gauss(mean, mean**0.5)))
    limit, k, p = pow(2.718281828459045, -mean), 0, 1.0
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1
