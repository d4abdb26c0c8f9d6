"""The kernel log pipeline, whatever the reader: records → faults → events on NATS.

A source (``producers/kmsg.py``, ``producers/journald.py``) hands over
``LogRecord``s, each with a *position* to resume after. This module classifies
them, collapses storms, publishes, and keeps the cursor: a write-ahead record
of the batch being published, the position after which to resume, and the
summaries the open storm windows owe (the lines they hold are behind the
cursor). The cursor moves only after JetStream acknowledged every event before
it, and a restart republishes the batch that was in flight (same ids, so
JetStream and the sink drop what already arrived) and the owed summaries: a
restart neither repeats nor skips a line, and storm counts stay exact.

A cursor that cannot be saved (the data dir read-only or full) does not stop the log: records are
read and published all the same, ``cannot_persist`` says why (a restart would read again from the
last saved position), and the save is tried again every few seconds until it works.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import msgspec

from gpuhealth import bus, subjects
from gpuhealth.config import NodeIdentity
from gpuhealth.errors import SourceError
from gpuhealth.events import DeadLetter, KernelEvent, NvlinkDetail, SourceStatus, derived_id, encode, new_id, now_ns
from producers import kernel
from producers.storm import StormCollapser

log = logging.getLogger("gpuhealth.klog")

Position = int | str  # a kmsg sequence number, a journal cursor
Item = tuple[str, str, bytes]  # subject, message id, payload
Publish = Callable[[list[Item]], Awaitable[None]]
_MAX_I64 = 2**63 - 1  # the wire's (and the store's) Int64 fields
RETRY_SAVE_S = 5.0  # how often a cursor that could not be saved is tried again, records or not

COMPONENT_OF_KIND = {
    "xid": "accelerator-nvidia-error-xid",
    "gpu_fallen_off_bus": "accelerator-nvidia-error-xid",
    "sxid": "accelerator-nvidia-error-sxid",
    "nvlink": "accelerator-nvidia-nvlink",
    "gsp": "accelerator-nvidia-gsp",
    "pcie_aer": "pci",
    "pcie_link": "pci",
    "mce_edac": "edac",
    "oom": "memory",
    "hung_task": "os",
    "soft_lockup": "os",
    "fs_readonly": "disk",
    "infiniband": "accelerator-nvidia-infiniband",
    "nfs": "nfs",
    "other_fault": "kernel",
}


@dataclass(frozen=True, slots=True)
class LogRecord:
    position: Position
    boot_id: str
    time_ns: int
    priority: int
    message: str
    seq: int = -1  # the kernel's sequence number, where the source has one
    monotonic_us: int = 0


class Unusable(msgspec.Struct, frozen=True):
    """Input that is not a record: dead-lettered with the reason, never dropped."""

    raw: bytes
    reason: str


class Cursor(msgspec.Struct):
    """Resume after ``position`` (None: from the start); ``unacked`` is the batch in flight, ``held`` the
    summaries of the storm lines read up to ``position`` whose counts are not published yet."""

    boot_id: str
    position: int | str | None
    unacked: list[tuple[str, str, bytes]] = []
    held: list[tuple[str, str, bytes]] = []


def load_cursor(path: Path) -> Cursor | None:
    try:
        return msgspec.json.decode(path.read_bytes(), type=Cursor)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None


def save_cursor(path: Path, cursor: Cursor, *, durable: bool = True) -> None:
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        f.write(msgspec.json.encode(cursor))
        if durable:
            f.flush()
            os.fsync(f.fileno())
    tmp.replace(path)


async def wait_readable(fd: int, stop: asyncio.Event, timeout: float | None) -> None:
    """Until ``fd`` is readable (the event loop's epoll: no polling), ``stop``, or ``timeout``."""
    loop = asyncio.get_running_loop()
    ready = asyncio.Event()
    loop.add_reader(fd, ready.set)
    waits = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(ready.wait())]
    try:
        await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()
        loop.remove_reader(fd)


class LogSource(Protocol):
    """A kernel log reader: kmsg (device, FIFO, file) or the journal."""

    name: str  # the subject's source token and the cursor file's name

    def open(self, resume: Cursor | None) -> tuple[str, Position | None]:
        """Open and position after ``resume`` where it applies (a kmsg cursor of another boot
        does not). Returns a description and the position resumed after; raises SourceError."""
        ...

    async def read(self, stop: asyncio.Event, timeout: float | None) -> list[LogRecord | Unusable]:
        """Records available now (waiting up to ``timeout``, None: until there are some or ``stop``)."""
        ...

    def close(self) -> None: ...


class KernelLogProducer:
    """Kernel log records → KernelEvents on ``gpuhealth.v1.event.<node>.<source>``."""

    def __init__(
        self,
        source: LogSource,
        identity: NodeIdentity,
        state_dir: Path,
        publish: Publish,
        *,
        storm_window_s: float = 1.0,
    ) -> None:
        self.source = source
        self.identity = identity
        self.cursor_path = state_dir / f"{source.name}.cursor"
        self.publish = publish
        self.subject = subjects.event_subject(identity.node, source.name)
        self.storms: StormCollapser[tuple[LogRecord, kernel.KernelLine]] = StormCollapser(storm_window_s)
        self.records_read = 0
        self.events_published = 0
        self.lines_published = 0  # fault lines accounted for in published events (storm counts included)
        self.unusable = 0
        self._last: Position | None = None
        self._saved: Position | None = None
        self._replay: list[Item] = []
        self.cannot_persist = ""  # why the cursor could not be saved; "" while it can
        self.on_change: Callable[[], None] = lambda: None  # ``cannot_persist`` changed

    def open(self) -> SourceStatus:
        cursor = load_cursor(self.cursor_path)
        try:
            description, self._last = self.source.open(cursor)
        except SourceError as e:
            log.warning("kernel log unavailable: %s", e)
            return self._status(False, str(e))
        self._saved = self._last
        # Opened again after a read error, in the same process: what the windows hold is in the cursor's
        # summaries, published below; kept here too, it would be counted twice.
        self.storms = StormCollapser(self.storms.window_s)
        if cursor is not None:
            # Facts from any boot, published before anything new. Re-reading the held lines instead would count
            # again those of other storms read after them, whose summaries are out already.
            self._replay = cursor.unacked + cursor.held
        probe = self.cursor_path.with_suffix(".probe")  # a data dir it cannot write is said at once
        if self._save(probe, Cursor(self.identity.boot_id, None), durable=False):
            with contextlib.suppress(OSError):
                probe.unlink()
        return self._status(True, description)

    def _status(self, available: bool, reason: str) -> SourceStatus:
        t, i = now_ns(), self.identity
        return SourceStatus(
            id=new_id(t), time=t, cluster=i.cluster, node=i.node, machine_id=i.machine_id, boot_id=i.boot_id,
            boot_time=i.boot_time_ns, source=self.source.name, component="kernel-log", available=available,
            reason=reason,
        )  # fmt: skip

    async def run(self, stop: asyncio.Event) -> None:
        if self._replay:
            if not await bus.publish_until_acked(self.publish, self._replay, stop, what=self.source.name):
                return
            self._replay = []
            self._commit(self._saved)
        while not stop.is_set():
            # Storm windows need closing on time; with none open, wait for the source (and retry a failed save).
            timeout = self.storms.window_s / 2 if self.storms.open_windows() else None
            if self.cannot_persist:
                timeout = min(timeout or RETRY_SAVE_S, RETRY_SAVE_S)
            records = await self.source.read(stop, timeout=timeout)
            items = self._events_of(records)
            items += [self._event(r, f, n) for (r, f), n in self.storms.expired(time.monotonic())]
            if not await self._publish_batch(items, stop):
                return  # stopped before the acknowledgement: the write-ahead record replays it
        # A clean stop publishes the storms' counts (bounded: if the bus is gone, the cursor keeps them).
        items = [self._event(r, f, n) for (r, f), n in self.storms.flush()]
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._publish_batch(items, asyncio.Event()), 5.0)

    def _events_of(self, records: list[LogRecord | Unusable]) -> list[Item]:
        items: list[Item] = []
        now = time.monotonic()
        for rec in records:
            if isinstance(rec, Unusable):
                self.unusable += 1
                items.append(self._dead_letter(rec))
                continue
            self.records_read += 1
            self._last = rec.position
            found = kernel.fault_of(rec.message)
            if found is None:
                continue
            storm = (found.kind, found.xid, found.sxid, found.pci_bus_id,
                     found.message if found.kind == "other_fault" else "")  # fmt: skip
            items += [self._event(r, f, n) for (r, f), n in self.storms.offer(storm, (rec, found), now)]
        return items

    async def _publish_batch(self, items: list[Item], stop: asyncio.Event) -> bool:
        position = self._last
        if items:
            self._save(self.cursor_path, Cursor(self.identity.boot_id, position, items, self._held()))
            if not await bus.publish_until_acked(self.publish, items, stop, what=self.source.name):
                return False
        if items or position != self._saved or self.cannot_persist:
            self._commit(position)
        return True

    def _commit(self, position: Position | None) -> None:
        # Not fsynced: losing it only means re-reading records whose events are acknowledged (with the held
        # counts of the last write-ahead record, which were not published either).
        if self._save(self.cursor_path, Cursor(self.identity.boot_id, position, held=self._held()), durable=False):
            self._saved = position

    def _save(self, path: Path, cursor: Cursor, *, durable: bool = True) -> bool:
        """Save ``cursor``; False (and why in ``cannot_persist``) when the data dir does not take it."""
        was = self.cannot_persist
        try:
            path.parent.mkdir(parents=True, exist_ok=True)  # it may have been impossible at start
            save_cursor(path, cursor, durable=durable)
        except OSError as e:
            self.cannot_persist = f"cannot persist the cursor: {e.strerror or e} ({path.parent})"
        else:
            self.cannot_persist = ""
        if self.cannot_persist != was:
            if self.cannot_persist:
                log.error("%s: %s; records are still read and published, a restart reads them again from the "
                          "last saved position", self.source.name, self.cannot_persist)  # fmt: skip
            else:
                log.info("%s: the cursor is saved again", self.source.name)
            self.on_change()
        return not self.cannot_persist

    def _held(self) -> list[Item]:
        return [self._summary(r, f, n) for (r, f), n in self.storms.held()]

    def _event(self, rec: LogRecord, found: kernel.KernelLine, count: int) -> Item:
        self.events_published += 1
        self.lines_published += count
        return self._summary(rec, found, count)

    def _summary(self, rec: LogRecord, found: kernel.KernelLine, count: int) -> Item:
        """The event for ``count`` lines of one fault, the last of them ``rec``."""
        i = self.identity
        event_id = derived_id(rec.time_ns, i.node, rec.boot_id, rec.position)
        nvlink = None
        if found.nvlink_subcode is not None:
            nvlink = NvlinkDetail(subcode=found.nvlink_subcode, unit=found.nvlink_unit or "", fatal=found.nvlink_fatal)
        # A record's numbers are the source's word: one the wire cannot hold is replaced (time: when read; the
        # others: unknown), never sent for a consumer to choke on. Its position still makes the id.
        event = KernelEvent(
            id=event_id, time=rec.time_ns if 0 <= rec.time_ns <= _MAX_I64 else now_ns(), cluster=i.cluster,
            node=i.node, machine_id=i.machine_id, boot_id=rec.boot_id,
            boot_time=i.boot_time_ns if rec.boot_id == i.boot_id else 0,  # another boot's: unknown
            source=self.source.name, component=COMPONENT_OF_KIND[found.kind or "other_fault"], kind=found.kind,
            message=found.message, seq=rec.seq if -1 <= rec.seq <= _MAX_I64 else -1, priority=rec.priority & 7,
            monotonic_us=rec.monotonic_us if 0 <= rec.monotonic_us <= _MAX_I64 else 0, xid=found.xid,
            sxid=found.sxid, pci_bus_id=found.pci_bus_id, pid=found.pid, process=found.process, nvlink=nvlink,
            count=min(count, 2**32 - 1),
        )  # fmt: skip
        return self.subject, event_id, encode(event)

    def _dead_letter(self, bad: Unusable) -> Item:
        stage = f"agent.{self.source.name}"
        letter = DeadLetter(id=new_id(), time=now_ns(), stage=stage, subject=self.source.name, reason=bad.reason,
                            data=bad.raw)  # fmt: skip
        log.warning("%s: %s: %r", self.source.name, bad.reason, bad.raw[:120])
        return subjects.dlq_subject(subjects.token(self.identity.node), stage), letter.id, encode(letter)
