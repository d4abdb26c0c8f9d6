"""The rules service's inventory consumer on a real nats-server: the node's GPUs by uuid, kept in its
bucket, and named on the states that follow."""

from __future__ import annotations

import asyncio

from nats.aio.client import Client as NATS

from gpuhealth import bus, client, subjects
from gpuhealth.events import GpuInfo, Inventory, KernelEvent, encode
from rules.service import RulesService

PCI = "0000:04:00.0"


async def test_an_inventory_is_kept_and_names_the_gpu_of_a_later_fault(nc: NATS) -> None:
    js = nc.jetstream()
    inv = Inventory(id="i1", time=10**9, cluster="c", node="gpu-1", boot_id="b1", source="nvml",
                    component="inventory", gpus=[GpuInfo(index=0, pci_bus_id=PCI, uuid="GPU-aaaa")],
                    driver_version="550.90.07")  # fmt: skip
    await bus.publish_batch(js, [(subjects.inventory_subject("gpu-1"), inv.id, encode(inv))])
    fault = KernelEvent(id="x1", time=2 * 10**9, cluster="c", node="gpu-1", boot_id="b1", source="kmsg",
                        component="accelerator-nvidia-error-xid", kind="xid", xid=79, pci_bus_id=PCI, message="m")  # fmt: skip
    service = RulesService(js)
    stop = asyncio.Event()
    task = asyncio.create_task(service.run(stop))
    try:
        async with asyncio.timeout(10):
            while not await client.inventories(nc):
                await asyncio.sleep(0.05)
            await bus.publish_batch(js, [(subjects.event_subject("gpu-1", "kmsg"), fault.id, encode(fault))])
            while service.states_published < 1:
                await asyncio.sleep(0.05)
    finally:
        stop.set()
        await task
    assert [(i.node, i.driver_version) for i in await client.inventories(nc)] == [("gpu-1", "550.90.07")]
    assert [(s.node, s.pci_bus_id, s.gpu_uuid) for s in await client.health_states(nc)] == [("gpu-1", PCI, "GPU-aaaa")]
