"""The agent's outbox: every producer publishes into it, one sender drains it to JetStream.

Events (faults, conditions, statuses, inventories, check results, set-healthy) go to the
durable spool (``producers/spool.py``) before ``publish`` returns, so the agent runs, restarts
and is killed while the bus is away or refusing writes without losing one; on start what the
spool holds goes first, in order, with its ids. Metric batches skip the spool: they come every
few seconds per GPU and the next one replaces the last, so a bounded queue in memory holds the
newest while the bus is away (counted when it drops the oldest) and a restart forgets them.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from gpuhealth import bus
from gpuhealth.config import NodeIdentity
from gpuhealth.events import Health, HealthState, new_id, now_ns
from producers.api import AGENT_COMPONENT, View
from producers.spool import Item, Spool, SpoolFull

log = logging.getLogger("gpuhealth.outbox")

METRIC_QUEUE = 512  # metric batches held while the bus is away: a minute of a busy 8-GPU node
BATCH = 1024


def is_metric(item: Item) -> bool:
    return item[0].split(".", 3)[2:3] == ["metric"]


class Outbox:
    def __init__(self, spool: Spool, on_sent: Callable[[list[Item]], None] | None = None) -> None:
        self.spool = spool
        self.on_sent = on_sent
        self.metrics: collections.deque[Item] = collections.deque(maxlen=METRIC_QUEUE)
        self.metrics_dropped = 0
        self.bus = "unavailable: not connected yet"
        self.sent = 0
        self.on_change: Callable[[], None] = lambda: None  # the bus's or the spool's state changed
        self._wake = asyncio.Event()

    @property
    def bus_ok(self) -> bool:
        return self.bus.startswith("ok")

    async def publish(self, items: Sequence[Item]) -> None:
        """Take ``items``; events are on disk when this returns. Raises SpoolFull: the caller keeps them."""
        try:
            self.spool.append([i for i in items if not is_metric(i)])
        except SpoolFull:
            self.on_change()
            raise
        for item in items:
            if is_metric(item):
                if len(self.metrics) == self.metrics.maxlen:
                    self.metrics_dropped += 1
                self.metrics.append(item)
        self._wake.set()

    def _bus_is(self, state: str) -> None:
        if state != self.bus and (state.startswith("ok") or self.bus_ok or self.bus.startswith("unavailable: not")):
            (log.info if state.startswith("ok") else log.warning)("bus %s", state)
        changed, self.bus = state != self.bus, state
        if changed:
            self.on_change()

    async def run(self, send: Callable[[list[Item]], Awaitable[Any]], stop: asyncio.Event) -> None:
        """Send what the spool holds, then the metrics, until ``stop``; retry with back-off meanwhile."""
        delay = 0.1
        batch, position = self.spool.read(BATCH)
        while not stop.is_set():
            metrics = [] if batch else [self.metrics.popleft() for _ in range(min(len(self.metrics), BATCH))]
            if not batch and not metrics:
                self._wake.clear()
                batch, position = self.spool.read(BATCH)
                if not batch:
                    await _first(self._wake.wait(), stop.wait())
                continue
            try:
                await send(batch or metrics)
            except Exception as e:  # away, refusing writes (a full stream), slow: the same batch again
                self._bus_is(f"unavailable: {type(e).__name__}: {e}".rstrip(": "))
                self.metrics.extendleft(reversed(metrics))
                await _first(asyncio.sleep(delay), stop.wait())
                delay = min(delay * 2, 5.0)
                continue
            delay = 0.1
            self._bus_is("ok")
            if batch:
                was_full = self.spool.full
                self.spool.ack(position, len(batch))
                if was_full:
                    self.on_change()
            self.sent += len(batch or metrics)
            if self.on_sent is not None:
                self.on_sent(batch or metrics)
            batch = []

    async def run_connected(self, js: Any, stop: asyncio.Event) -> None:
        await self.run(lambda items: bus.publish_batch(js, items), stop)


async def _first(*waits: Awaitable[Any]) -> None:
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for t in tasks:
            t.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await t


def show_state(view: View, identity: NodeIdentity, outbox: Outbox) -> None:
    """The agent's own word on the local API: whether the bus takes what it sends, whether its spool has room."""
    t, i, spool = now_ns(), identity, outbox.spool
    full = f"spool full: {spool.bytes} bytes, {spool.records} records waiting; {spool.refused} refused"
    said: tuple[tuple[str, Health, str], ...] = (
        ("bus", "Healthy" if outbox.bus_ok else "Unknown", "bus " + outbox.bus),
        ("spool", "Degraded" if spool.full else "Healthy", full if spool.full else "spool has room"),
    )
    for entity, health, reason in said:
        old = view.states.get((AGENT_COMPONENT, entity))
        if old is None or (old.health, old.reason) != (health, reason):
            view.health_changed(HealthState(id=new_id(t), time=t, cluster=i.cluster, node=i.node,
                                            machine_id=i.machine_id, boot_id=i.boot_id, source="agent",
                                            component=AGENT_COMPONENT, entity=entity, health=health,
                                            reason=reason, since=t))  # fmt: skip
