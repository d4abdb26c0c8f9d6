"""The agent's outbox: every producer publishes into it, one sender drains it to JetStream.

Events (faults, conditions, statuses, inventories, check results, set-healthy) go to the
durable spool (``producers/spool.py``) before ``publish`` returns, so the agent runs, restarts
and is killed while the bus is away or refusing writes without losing one; on start what the
spool holds goes first, in order, with its ids. Metric batches skip the spool: they come every
few seconds per GPU and the next one replaces the last, so a bounded queue in memory holds the
newest while the bus is away (counted when it drops the oldest) and a restart forgets them.

A spool that cannot write (the data dir read-only or full) does not stop the agent: events it cannot
persist wait in memory (as bounded as the spool) and go to the bus from there, after what the spool
holds; the agent says so in its own state, and every few seconds tries the spool again, moving them
there once it writes.
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
from gpuhealth.telemetry import Metrics
from producers.api import AGENT_COMPONENT, View
from producers.spool import Item, Spool, SpoolFull

log = logging.getLogger("gpuhealth.outbox")

METRIC_QUEUE = 512  # metric batches held while the bus is away: a minute of a busy 8-GPU node
BATCH = 1024
RETRY_PERSIST_S = 5.0  # how often a spool that cannot write is tried again, events or not
FLUSH_S = 5.0  # on a clean stop, how long the sender may go on with what is not sent yet


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
        # Events the spool could not write, newer than all it holds: sent after it, moved into it once it writes.
        self.unspooled: list[Item] = []
        self._moved = 0  # times ``unspooled`` went into the spool: a batch sent from memory meanwhile is there too
        self._wake = asyncio.Event()
        self._sent_some = asyncio.Event()  # for ``flush``

    @property
    def bus_ok(self) -> bool:
        return self.bus.startswith("ok")

    async def publish(self, items: Sequence[Item]) -> None:
        """Take ``items``; events are on disk when this returns, or in memory when the spool cannot write (its
        state says so). Raises SpoolFull: the caller keeps them."""
        self._persist([i for i in items if not is_metric(i)])
        for item in items:
            if is_metric(item):
                if len(self.metrics) == self.metrics.maxlen:
                    self.metrics_dropped += 1
                self.metrics.append(item)
        self._wake.set()

    def _persist(self, events: list[Item]) -> None:
        failing = self.spool.cannot_persist
        try:
            if events or self.unspooled:
                self.spool.append(self.unspooled + events)
            elif failing:
                self.spool.probe()
        except SpoolFull:
            self.on_change()
            raise
        except OSError:
            self._hold(events)
        else:
            if self.unspooled:
                self.unspooled, self._moved = [], self._moved + 1
        if self.spool.cannot_persist != failing:
            self.on_change()

    def _hold(self, events: list[Item]) -> None:
        """Keep ``events`` in memory, within what the spool may hold."""
        held = self.spool.bytes + sum(len(p) for items in (self.unspooled, events) for _, _, p in items)
        if held > self.spool.max_bytes:
            self.spool.refused += len(events)
            self.spool.full = True
            self.on_change()
            raise SpoolFull(f"spool full: it cannot write ({self.spool.cannot_persist}) and memory holds its bound")
        self.unspooled += events

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
            memory, moved = [] if batch else self.unspooled[:BATCH], self._moved
            metrics = [] if batch or memory else [self.metrics.popleft() for _ in range(min(len(self.metrics), BATCH))]
            if not batch and not memory and not metrics:
                self._wake.clear()
                batch, position = self.spool.read(BATCH)
                if not batch:
                    await self._idle(stop)
                continue
            try:
                await send(batch or memory or metrics)
            except Exception as e:  # away, refusing writes (a full stream), slow: the same batch again
                self._bus_is(f"unavailable: {type(e).__name__}: {e}".rstrip(": "))
                self.metrics.extendleft(reversed(metrics))
                await _first(asyncio.sleep(delay), stop.wait())
                delay = min(delay * 2, 5.0)
                self._retry_persist()  # what memory holds goes to disk as soon as it can: the bus may stay away
                continue
            delay = 0.1
            self._bus_is("ok")
            if batch:
                was = self.spool.full, self.spool.cannot_persist
                self.spool.ack(position, len(batch))
                if was != (self.spool.full, self.spool.cannot_persist):
                    self.on_change()
            elif memory and moved == self._moved:
                del self.unspooled[: len(memory)]
            self.sent += len(batch or memory or metrics)
            if self.on_sent is not None:
                self.on_sent(batch or memory or metrics)
            batch = []
            self._sent_some.set()

    @property
    def unsent(self) -> int:
        """Events taken and not acknowledged yet, on disk or in memory."""
        return self.spool.records + len(self.unspooled)

    async def flush(self, seconds: float = FLUSH_S) -> int:
        """On a clean stop, before the sender's: wait up to ``seconds`` while it sends what is unsent. Returns
        what is left: the spool keeps its part for the next start."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while self.unsent and (left := deadline - loop.time()) > 0:
            self._sent_some.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._sent_some.wait(), left)
        return self.unsent

    async def _idle(self, stop: asyncio.Event) -> None:
        """Wait for something to send; while the spool cannot write, try it again every few seconds."""
        if not self.spool.cannot_persist:
            await _first(self._wake.wait(), stop.wait())
            return
        await _first(self._wake.wait(), stop.wait(), asyncio.sleep(RETRY_PERSIST_S))
        self._retry_persist()

    def _retry_persist(self) -> None:
        if self.spool.cannot_persist:
            with contextlib.suppress(SpoolFull):
                self._persist([])

    async def run_connected(self, js: Any, stop: asyncio.Event, metrics: Metrics | None = None) -> None:
        await self.run(lambda items: bus.publish_batch(js, items, metrics=metrics), stop)


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
    spool = outbox.spool
    full = f"spool full: {spool.bytes} bytes, {spool.records} records waiting; {spool.refused} refused"
    if spool.cannot_persist:
        kept: tuple[Health, str] = ("Degraded", f"{spool.cannot_persist}; events go to the bus from memory, "
                                                "lost if the agent stops before they are sent")  # fmt: skip
    else:
        kept = ("Degraded", full) if spool.full else ("Healthy", "spool has room")
    say(view, identity, "bus", "Healthy" if outbox.bus_ok else "Unknown", "bus " + outbox.bus)
    say(view, identity, "spool", *kept)


def say(view: View, identity: NodeIdentity, entity: str, health: Health, reason: str) -> None:
    """One of the agent's own states on the local API, when it changed."""
    t, i = now_ns(), identity
    old = view.states.get((AGENT_COMPONENT, entity))
    if old is None or (old.health, old.reason) != (health, reason):
        view.health_changed(HealthState(id=new_id(t), time=t, cluster=i.cluster, node=i.node, machine_id=i.machine_id,
                                        boot_id=i.boot_id, source="agent", component=AGENT_COMPONENT, entity=entity,
                                        health=health, reason=reason, since=t))  # fmt: skip
