"""The kernel log from /dev/kmsg, a FIFO, or a regular file in kmsg format.

/dev/kmsg hands out one record per read() as ``prio,seq,usec,flags;message``
followed by `` KEY=value`` device lines; reading it non-blocking through the
event loop costs nothing while the kernel is quiet. A FIFO or a file carries
the same records one per line (continuations start with a space), which is
what tests, ``--kmsg-path`` and ``gpuctl inject-fault`` use.

The read cursor ``(boot_id, seq)`` lives in the data dir and moves only after
JetStream acknowledged every event up to it: a restart after SIGKILL re-reads
at most the unacknowledged tail, and the ids derived from (node, boot_id, seq)
make that tail a no-op downstream.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import logging
import os
import stat
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import msgspec

from gpuhealth import subjects
from gpuhealth.config import NodeIdentity
from gpuhealth.errors import SourceError
from gpuhealth.events import DeadLetter, KernelEvent, NvlinkDetail, SourceStatus, derived_id, encode, new_id, now_ns
from producers import kernel
from producers.storm import StormCollapser

log = logging.getLogger("gpuhealth.kmsg")

SOURCE = "kmsg"
MAX_RECORD = 16 * 1024  # /dev/kmsg records are < 8 KiB; a longer "line" in a file is garbage

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
class Record:
    priority: int
    seq: int
    usec: int
    message: str
    device: dict[str, str] = field(default_factory=dict)


class Malformed(msgspec.Struct, frozen=True):
    raw: bytes
    reason: str


def parse_record(raw: bytes) -> Record | Malformed:
    """One kmsg record (with its continuation lines) → Record, or why not."""
    if len(raw) > MAX_RECORD:
        return Malformed(raw[:1024], f"record of {len(raw)} bytes exceeds {MAX_RECORD}")
    head, sep, body = raw.partition(b";")
    fields = head.split(b",")
    if not sep or len(fields) < 3:
        return Malformed(raw, "not a kmsg record (want 'prio,seq,usec,flags;message')")
    try:
        prio, seq, usec = int(fields[0]), int(fields[1]), int(fields[2])
    except ValueError:
        return Malformed(raw, "non-numeric prio, seq or usec")
    if prio < 0 or seq < 0 or usec < 0:
        return Malformed(raw, "negative prio, seq or usec")
    lines = body.split(b"\n")
    device: dict[str, str] = {}
    for extra in lines[1:]:
        if extra.startswith(b" ") and b"=" in extra:
            k, _, v = extra[1:].decode("utf-8", "replace").partition("=")
            device[k] = v
    message = lines[0].decode("utf-8", "replace").replace("\x00", "")
    return Record(prio & 7, seq, usec, message, device)


# ---------------------------------------------------------------- cursor


class Cursor(msgspec.Struct):
    """Where the reader is, and the batch it was publishing (a write-ahead record).

    Written before a batch is published and again once it is acknowledged. A
    restart republishes ``unacked`` (same ids: JetStream and the sink drop what
    already arrived) and resumes after ``seq``, so storm counts stay exact even
    when a crash falls between an acknowledgement and the cursor write."""

    boot_id: str
    seq: int
    unacked: list[tuple[str, str, bytes]] = []


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


# ---------------------------------------------------------------- source


class KmsgSource:
    """Yields batches of raw records from a char device, FIFO or growing file."""

    def __init__(self, path: Path, *, poll_interval: float = 0.1) -> None:
        self.path = path
        self.poll_interval = poll_interval
        self.fd = -1
        self.mode = ""
        self.lost = 0  # records the kernel overwrote before we read them (EPIPE)
        self._buf = b""
        self._inode = 0
        self._offset = 0

    def open(self) -> None:
        try:
            st = os.stat(self.path)
            if stat.S_ISCHR(st.st_mode):
                self.fd, self.mode = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK), "device"
            elif stat.S_ISFIFO(st.st_mode):
                # O_RDWR keeps a writer open ourselves, so the FIFO never reads EOF while idle.
                self.fd, self.mode = os.open(self.path, os.O_RDWR | os.O_NONBLOCK), "fifo"
            elif stat.S_ISREG(st.st_mode):
                self.fd, self.mode = os.open(self.path, os.O_RDONLY), "file"
                self._inode, self._offset = st.st_ino, 0
            else:
                raise SourceError(errno.EINVAL, f"{self.path} is not a device, FIFO or file")
        except SourceError:
            raise
        except OSError as e:
            raise SourceError(e.errno or errno.EIO, f"cannot read {self.path}: {e.strerror}") from e

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    async def read_batch(
        self, stop: asyncio.Event, max_records: int = 2000, timeout: float | None = None
    ) -> list[bytes]:
        """At least one raw record; [] once ``stop`` is set or ``timeout`` seconds passed."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while not stop.is_set():
            records = self._read_available(max_records)
            if records:
                return records
            left = None if deadline is None else deadline - loop.time()
            if left is not None and left <= 0:
                break
            await self._wait_readable(stop, left)
        return []

    def _read_available(self, max_records: int) -> list[bytes]:
        if self.mode == "device":
            out: list[bytes] = []
            while len(out) < max_records:
                try:
                    out.append(os.read(self.fd, 8192).rstrip(b"\n"))
                except BlockingIOError:
                    break
                except BrokenPipeError:
                    continue  # overwritten records: the seq gap counts them
            return out
        if self.mode == "file":
            self._follow_rotation()
            os.lseek(self.fd, self._offset, os.SEEK_SET)
        chunks = []
        while True:
            try:
                chunk = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                break
            if not chunk:
                break
            chunks.append(chunk)
            self._offset += len(chunk)
            if len(chunks) * (1 << 16) > max_records * 256:
                break
        return self._split(b"".join(chunks))

    def _split(self, data: bytes) -> list[bytes]:
        """Lines → records: a line starting with a space continues the previous record."""
        data = self._buf + data
        head, nl, tail = data.rpartition(b"\n")
        if not nl:
            self._buf = data[-MAX_RECORD * 2 :]
            return []
        self._buf = tail
        records: list[bytes] = []
        for line in head.split(b"\n"):
            if line.startswith(b" ") and records:
                records[-1] += b"\n" + line
            elif line:
                records.append(line)
        return records

    def _follow_rotation(self) -> None:
        try:
            st = os.stat(self.path)
        except OSError:
            return  # gone for now; keep the old handle and look again next time
        if st.st_ino != self._inode:
            os.close(self.fd)
            self.fd, self._inode, self._offset, self._buf = os.open(self.path, os.O_RDONLY), st.st_ino, 0, b""
        elif st.st_size < self._offset:
            self._offset, self._buf = 0, b""  # truncated

    async def _wait_readable(self, stop: asyncio.Event, timeout: float | None) -> None:
        if self.mode == "file":
            # A regular file has no readiness; a short poll is the honest way to follow it.
            wait = self.poll_interval if timeout is None else min(self.poll_interval, timeout)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), wait)
            return
        loop = asyncio.get_running_loop()
        ready = asyncio.Event()
        loop.add_reader(self.fd, ready.set)
        try:
            stopper = asyncio.ensure_future(stop.wait())
            waiter = asyncio.ensure_future(ready.wait())
            await asyncio.wait({stopper, waiter}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            stopper.cancel()
            waiter.cancel()
        finally:
            loop.remove_reader(self.fd)


# ---------------------------------------------------------------- producer

Publish = Callable[[list[tuple[str, str, bytes]]], Awaitable[None]]


class KmsgProducer:
    """Kernel records → KernelEvents on ``gpuhealth.v1.event.<node>.kmsg``."""

    def __init__(
        self, path: Path, identity: NodeIdentity, state_dir: Path, publish: Publish, *, storm_window_s: float = 1.0
    ) -> None:
        self.path = path
        self.identity = identity
        self.cursor_path = state_dir / "kmsg.cursor"
        self.publish = publish
        self.source = KmsgSource(path)
        self.subject = subjects.event_subject(identity.node, SOURCE)
        self.records_read = 0
        self.events_published = 0
        self.malformed = 0
        self.gaps = 0
        self.lines_published = 0  # fault lines accounted for in published events (storm counts included)
        self.storms: StormCollapser[tuple[Record, kernel.KernelLine]] = StormCollapser(storm_window_s)
        self._last_seq: int | None = None
        self._saved_seq = -1
        self._skip_through = -1
        self._replay: list[tuple[str, str, bytes]] = []

    def open(self) -> SourceStatus:
        try:
            self.source.open()
        except SourceError as e:
            log.warning("kernel log unavailable: %s", e)
            return self._status(False, str(e))
        cursor = load_cursor(self.cursor_path)
        if cursor is not None:
            self._replay = cursor.unacked  # facts from any boot: publish them before anything new
            if cursor.boot_id == self.identity.boot_id:
                self._skip_through = self._saved_seq = cursor.seq  # resume after the last acknowledged record
        return self._status(True, f"reading {self.path} ({self.source.mode})")

    def _status(self, available: bool, reason: str) -> SourceStatus:
        t = now_ns()
        return SourceStatus(
            id=new_id(t),
            time=t,
            source=SOURCE,
            component="kernel-log",
            available=available,
            reason=reason,
            cluster=self.identity.cluster,
            node=self.identity.node,
            machine_id=self.identity.machine_id,
            boot_id=self.identity.boot_id,
        )

    async def run(self, stop: asyncio.Event) -> None:
        if self._replay:
            if not await self._publish_until_acked(self._replay, stop):
                return
            self._replay = []
            self._commit(self._saved_seq)
        while not stop.is_set():
            raws = await self.source.read_batch(stop, timeout=self.storms.window_s / 2)
            items = self._events_of(raws)
            items += [self._event(rec, found, n) for (rec, found), n in self.storms.expired(time.monotonic())]
            if not await self._publish_batch(items, stop):
                return  # stopping before the acknowledgement: the write-ahead record replays it
        # A clean stop publishes the storms' counts so the cursor can pass them (bounded:
        # if the bus is gone, the held records are simply read again next time).
        items = [self._event(rec, found, n) for (rec, found), n in self.storms.flush()]
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._publish_batch(items, asyncio.Event()), 5.0)

    def _safe_seq(self) -> int:
        """Through the last record read, but never past one whose count is not published."""
        if self._last_seq is None:
            return self._saved_seq
        hold = self.storms.hold_from()
        return max(self._saved_seq, self._last_seq if hold is None else min(self._last_seq, hold - 1))

    async def _publish_batch(self, items: list[tuple[str, str, bytes]], stop: asyncio.Event) -> bool:
        seq = self._safe_seq()
        if items:
            save_cursor(self.cursor_path, Cursor(self.identity.boot_id, seq, items))
            if not await self._publish_until_acked(items, stop):
                return False
        if items or seq > self._saved_seq:
            self._commit(seq)
        return True

    def _commit(self, seq: int) -> None:
        # Not fsynced: losing it only means re-reading records whose events are acknowledged.
        save_cursor(self.cursor_path, Cursor(self.identity.boot_id, seq), durable=False)
        self._saved_seq = seq

    def _events_of(self, raws: list[bytes]) -> list[tuple[str, str, bytes]]:
        items: list[tuple[str, str, bytes]] = []
        now = time.monotonic()
        for raw in raws:
            rec = parse_record(raw)
            if isinstance(rec, Malformed):
                self.malformed += 1
                items.append(self._dead_letter(rec))
                continue
            if rec.seq <= self._skip_through:
                continue
            self.records_read += 1
            if self._last_seq is not None and rec.seq > self._last_seq + 1:
                self.gaps += rec.seq - self._last_seq - 1
            self._last_seq = rec.seq
            found = kernel.fault_of(rec.message)
            if found is None:
                continue
            key = (
                found.kind,
                found.xid,
                found.sxid,
                found.pci_bus_id,
                found.message if found.kind == "other_fault" else "",
            )
            for (r, f), n in self.storms.offer(key, rec.seq, (rec, found), now):
                items.append(self._event(r, f, n))
        return items

    def _event(self, rec: Record, found: kernel.KernelLine, count: int) -> tuple[str, str, bytes]:
        i = self.identity
        t = i.boot_time_ns + rec.usec * 1000 if i.boot_time_ns else now_ns()
        event_id = derived_id(t, i.node, i.boot_id, rec.seq)
        nvlink = None
        if found.nvlink_subcode is not None:
            nvlink = NvlinkDetail(subcode=found.nvlink_subcode, fatal=found.nvlink_fatal)
        event = KernelEvent(
            id=event_id,
            time=t,
            source=SOURCE,
            component=COMPONENT_OF_KIND[found.kind or "other_fault"],
            kind=found.kind,
            message=found.message,
            seq=rec.seq,
            priority=rec.priority,
            monotonic_us=rec.usec,
            xid=found.xid,
            sxid=found.sxid,
            pci_bus_id=found.pci_bus_id,
            pid=found.pid,
            process=found.process,
            nvlink=nvlink,
            cluster=i.cluster,
            node=i.node,
            machine_id=i.machine_id,
            boot_id=i.boot_id,
            count=count,
        )
        self.events_published += 1
        self.lines_published += count
        return self.subject, event_id, encode(event)

    def _dead_letter(self, bad: Malformed) -> tuple[str, str, bytes]:
        letter = DeadLetter(
            id=new_id(),
            time=now_ns(),
            stage="agent.kmsg",
            subject=str(self.path),
            reason=bad.reason,
            data=bad.raw,
        )
        log.warning("kmsg: %s: %r", bad.reason, bad.raw[:120])
        return subjects.dlq_subject(subjects.token(self.identity.node), "agent.kmsg"), letter.id, encode(letter)

    async def _publish_until_acked(self, items: list[tuple[str, str, bytes]], stop: asyncio.Event) -> bool:
        """True once JetStream acknowledged every item; False if stopped first."""
        delay = 0.1
        while items:
            if stop.is_set():
                return False
            try:
                await self.publish(items)
                return True
            except Exception as e:
                log.warning("kmsg: publish of %d events not acknowledged (%s); retrying", len(items), e)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(stop.wait(), delay)
                delay = min(delay * 2, 5.0)
        return True


# ---------------------------------------------------------------- writing (inject-fault)


def append_record(path: Path, message: str, priority: int = 3) -> int:
    """Write one kernel record where the agent reads: /dev/kmsg takes '<prio>message' and
    numbers it itself; a file gets a full record with the next sequence number and a
    CLOCK_MONOTONIC timestamp. Returns the sequence number written (-1 when the kernel picks)."""
    st = os.stat(path)
    if stat.S_ISCHR(st.st_mode):
        with open(path, "wb", buffering=0) as dev:
            dev.write(f"<{priority}>{message}\n".encode())
        return -1
    usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
    if stat.S_ISFIFO(st.st_mode):
        seq = usec  # a FIFO cannot be read back; microseconds keep the numbers rising
        with open(path, "ab", buffering=0) as fifo:
            fifo.write(f"{priority},{seq},{usec},-;{message}\n".encode())
        return seq
    with open(path, "a+b") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # concurrent injectors must not share a number
        seq = _last_seq(f) + 1
        f.write(f"{priority},{seq},{usec},-;{message}\n".encode())
        f.flush()
        return seq


def _last_seq(f: BinaryIO) -> int:
    size = f.seek(0, os.SEEK_END)
    f.seek(max(0, size - 65536))
    for line in reversed(f.read().split(b"\n")):
        rec = parse_record(line)
        if isinstance(rec, Record):
            return rec.seq
    return 0
