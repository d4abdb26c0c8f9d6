"""What the agent runs: each source as a ``Producer``, opened once, run until stopped, closed.

The agent (producers/agent.py) opens every producer, publishes what they saw at start as one batch
before it says it is ready (what was wrong at start is reported), tells each whether the spool took
that batch, then runs them all, each restarted if it fails, and closes them in order. A producer here
adapts a source's own module (klog, nvml, sysfs, host, checks) to that life.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Protocol

from gpuhealth import subjects
from gpuhealth.config import NodeIdentity
from gpuhealth.events import GpuInfo, Inventory, encode, new_id, now_ns
from producers import api as api_mod
from producers import checks, poller, sysfs_tree
from producers import outbox as outbox_mod
from producers.klog import KernelLogProducer
from producers.nvml import NvmlProducer
from producers.poller import Item, PollState

log = logging.getLogger("gpuhealth.agent")

Publish = Callable[[list[Item]], Awaitable[None]]


class Producer(Protocol):
    name: str  # in the log when it fails and is restarted

    async def open(self) -> list[Item]:
        """Open the source; what it sees at start, published before the agent says it is ready."""
        return []

    async def after_first(self, taken: bool) -> None:
        """The first batch was handed over (``taken``: the spool holds it; else it is said again next start)."""
        return None

    def sources(self) -> dict[str, str]:
        """Its line in the agent's ready message ("ok: …" or "unavailable: …"), if it has one."""
        return {}

    async def run(self, stop: asyncio.Event) -> None: ...

    def close(self) -> None:
        """Let go of the source, once every producer has stopped."""
        return None


class KernelLog(Producer):
    name = "kernel log"

    def __init__(self, producer: KernelLogProducer, view: api_mod.View) -> None:
        self.log, self.view = producer, view
        producer.on_change = self.show_cursor_state
        self.available, self.source, self.line = False, "", ""

    async def open(self) -> list[Item]:
        status = self.log.open()
        self.show_cursor_state()
        self.available = status.available
        self.line = ("ok: " if status.available else "unavailable: ") + status.reason
        self.source = status.source
        return [(subjects.event_subject(self.log.identity.node, status.source), status.id, encode(status))]

    def sources(self) -> dict[str, str]:
        return {self.source: self.line}

    async def run(self, stop: asyncio.Event) -> None:
        if not self.available:
            return
        try:
            await self.log.run(stop)
        except OSError:
            self.log.source.close()
            self.log.open()
            raise

    def close(self) -> None:
        self.log.source.close()

    def show_cursor_state(self) -> None:
        """Whether the kernel log's cursor is saved: one that is not means a restart reads records again."""
        name, why = f"{self.log.source.name} cursor", self.log.cannot_persist
        if why:
            again = "; a restart reads the kernel log again from the last saved position"
            outbox_mod.say(self.view, self.log.identity, name, "Degraded", why + again)
        else:
            outbox_mod.say(self.view, self.log.identity, name, "Healthy", "cursor saved")


class Nvml(Producer):
    name = "nvml"

    def __init__(self, nvml: NvmlProducer, identity: NodeIdentity, sysfs_root: Path) -> None:
        self.nvml, self.identity, self.sysfs_root = nvml, identity, sysfs_root

    async def open(self) -> list[Item]:
        items = await self.nvml.open()
        if not self.nvml.working:  # without NVML, what sysfs knows is the inventory
            inventory = inventory_of(self.identity, self.sysfs_root)
            items.append((subjects.inventory_subject(self.identity.node), inventory.id, encode(inventory)))
        return items

    def sources(self) -> dict[str, str]:
        return {
            "nvml": f"ok: {len(self.nvml.gpus)} GPUs" if self.nvml.working else "unavailable (see the health states)"
        }

    async def run(self, stop: asyncio.Event) -> None:
        await self.nvml.run(stop)

    def close(self) -> None:
        self.nvml.close()


def inventory_of(identity: NodeIdentity, sysfs_root: Path) -> Inventory:
    t = now_ns()
    gpus = [GpuInfo(index=i, pci_bus_id=d.bdf) for i, d in enumerate(sysfs_tree.nvidia_gpus(sysfs_root))]
    return Inventory(
        id=new_id(t), time=t, cluster=identity.cluster, node=identity.node, machine_id=identity.machine_id,
        boot_id=identity.boot_id, source="sysfs", component="inventory", gpus=gpus,
        driver_version=sysfs_tree.nvidia_driver_version(sysfs_root),
    )  # fmt: skip


class Polled(Producer):
    """A synchronous poller (sysfs, host) on a worker thread, what it saw kept in its state until sent."""

    def __init__(self, name: str, poll: Callable[[], list[Item]], state: PollState, publish: Publish,
                 interval: float) -> None:  # fmt: skip
        self.name, self.poll, self.state, self.publish, self.interval = name, poll, state, publish, interval

    async def open(self) -> list[Item]:
        self.state.saved.unacked.extend(await asyncio.to_thread(self.poll))  # with what an earlier run left unsent
        self.state.save()
        return list(self.state.saved.unacked)

    async def after_first(self, taken: bool) -> None:
        if taken:
            self.state.saved.unacked.clear()
            self.state.save()

    async def run(self, stop: asyncio.Event) -> None:
        await poller.run_loop(self.name, self.poll, self.state, self.publish, self.interval, stop, first_wait=True)


class Checks(Producer):
    """Custom checks: the init ones once the first batch is handed over, then the scheduled ones."""

    name = "checks"

    def __init__(self, runner: checks.CheckRunner, count: int) -> None:
        self.runner, self.count = runner, count
        self.init_failed: list[str] = []

    async def after_first(self, taken: bool) -> None:
        self.init_failed = [r.component for r in await self.runner.run_init() if r.verdict()[0] != "Healthy"]
        if self.init_failed:
            log.error("init checks failed: %s (see their health states)", ", ".join(self.init_failed))

    def sources(self) -> dict[str, str]:
        if not self.count:
            return {}
        if self.init_failed:
            return {"checks": f"failed: init checks {', '.join(self.init_failed)}"}
        return {"checks": f"ok: {self.count} checks"}

    async def run(self, stop: asyncio.Event) -> None:
        await self.runner.run_scheduled(stop)


class Verification(Producer):
    """The hardware the agent finds at start, verified against what it last verified (it changed while away)."""

    name = "verification"

    def __init__(self, verifier: checks.Verifier, view: api_mod.View) -> None:
        self.verifier, self.view = verifier, view

    async def run(self, stop: asyncio.Event) -> None:
        if (at_start := self.view.inventory) is not None:
            await self.verifier.inventory_seen(at_start)
