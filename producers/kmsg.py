"""The kernel log from /dev/kmsg, a FIFO, or a regular file in kmsg format.

/dev/kmsg hands out one record per read() as ``prio,seq,usec,flags;message``
followed by `` KEY=value`` device lines; reading it non-blocking through the
event loop costs nothing while the kernel is quiet. A FIFO or a file carries
the same records one per line (continuations start with a space), which is
what tests, ``--kmsg-path`` and ``gpuctl inject-fault`` use.

A position here is the kernel's sequence number, valid within one boot: the
pipeline in ``producers/klog.py`` resumes after it on the same boot and from the
boot's first record on a new one.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import errno
import fcntl
import logging
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from gpuhealth.config import NodeIdentity
from gpuhealth.errors import SourceError
from gpuhealth.events import now_ns
from producers.klog import Cursor, LogRecord, Position, Unusable, wait_readable

log = logging.getLogger("gpuhealth.kmsg")

MAX_RECORD = 16 * 1024  # /dev/kmsg records are < 8 KiB; a longer "line" in a file is garbage
# A regular file has no readiness: inotify on its directory wakes the reader when anything there is written,
# created, moved or removed (a write, a truncation, a rotation); the reader looks again at least this often.
IDLE_LOOK_S = 5.0
_IN_EVENTS = 0x2 | 0x4 | 0x80 | 0x100 | 0x200  # IN_MODIFY, IN_ATTRIB, IN_MOVED_TO, IN_CREATE, IN_DELETE
TAIL = 256  # the bytes before a file's read offset kept to see it rewritten: more than a record's seq and usec


@dataclass(frozen=True, slots=True)
class Record:
    priority: int
    seq: int
    usec: int
    message: str
    device: dict[str, str] = field(default_factory=dict)


def parse_record(raw: bytes) -> Record | Unusable:
    """One kmsg record (with its continuation lines) → Record, or why not."""
    if len(raw) > MAX_RECORD:
        return Unusable(raw[:1024], f"record of {len(raw)} bytes exceeds {MAX_RECORD}")
    head, sep, body = raw.partition(b";")
    fields = head.split(b",")
    if not sep or len(fields) < 3:
        return Unusable(raw, "not a kmsg record (want 'prio,seq,usec,flags;message')")
    try:
        prio, seq, usec = int(fields[0]), int(fields[1]), int(fields[2])
    except ValueError:
        return Unusable(raw, "non-numeric prio, seq or usec")
    if prio < 0 or seq < 0 or usec < 0:
        return Unusable(raw, "negative prio, seq or usec")
    lines = body.split(b"\n")
    device: dict[str, str] = {}
    for extra in lines[1:]:
        if extra.startswith(b" ") and b"=" in extra:
            k, _, v = extra[1:].decode("utf-8", "replace").partition("=")
            device[k] = v
    message = lines[0].decode("utf-8", "replace").replace("\x00", "")
    return Record(prio & 7, seq, usec, message, device)


# ---------------------------------------------------------------- source


class KmsgSource:
    """Kernel records from a char device, FIFO or growing file (a ``klog.LogSource``)."""

    name = "kmsg"

    def __init__(
        self, path: Path, identity: NodeIdentity, *, poll_interval: float = 0.1, lookback_s: float | None = None
    ) -> None:
        self.path = path
        self.identity = identity
        self.poll_interval = poll_interval
        self.lookback_s = lookback_s
        self.skip_through = -1
        self.min_usec = -1  # on the very first start with a look-back: older records are skipped
        self.gaps = 0  # sequence numbers never seen: records the kernel overwrote first
        self._last_seq: int | None = None
        self.fd = -1
        self.mode = ""
        self.lost = 0  # records the kernel overwrote before we read them (EPIPE)
        self._buf = b""
        self._inode = 0
        self._offset = 0
        self._tail = b""  # the file's last bytes read, which must still be there at the offset
        self.rewrites = 0  # times the file was replaced, truncated or rewritten: read again from its start
        self._watch: _DirWatch | None = None

    def open(self, resume: Cursor | None = None) -> tuple[str, Position | None]:
        self._open()
        same_boot = resume is not None and resume.boot_id == self.identity.boot_id
        if same_boot and resume is not None and isinstance(resume.position, int):
            # A file whose numbers end below the cursor is not the one the cursor was in: all of it is new.
            self.skip_through = (
                resume.position if self.mode != "file" or self._file_last_seq() >= resume.position else -1
            )
            return self.description(), resume.position
        if resume is None and self.lookback_s is not None:
            now_us = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
            self.min_usec = now_us - int(self.lookback_s * 1_000_000)
        return self.description(), None  # a new boot (or none yet): from the boot's first record

    def description(self) -> str:
        return f"reading {self.path} ({self.mode})"

    async def read(self, stop: asyncio.Event, timeout: float | None) -> list[LogRecord | Unusable]:
        out: list[LogRecord | Unusable] = []
        boot_ns = self.identity.boot_time_ns
        for raw in await self.read_batch(stop, timeout=timeout):
            rec = parse_record(raw)
            if isinstance(rec, Unusable):
                out.append(rec)
                continue
            if rec.seq <= self.skip_through or rec.usec < self.min_usec:
                continue
            if self._last_seq is not None and rec.seq > self._last_seq + 1:
                self.gaps += rec.seq - self._last_seq - 1
            self._last_seq = rec.seq
            t = boot_ns + rec.usec * 1000 if boot_ns else now_ns()
            out.append(LogRecord(position=rec.seq, boot_id=self.identity.boot_id, time_ns=t, priority=rec.priority,
                                 message=rec.message, seq=rec.seq, monotonic_us=rec.usec))  # fmt: skip
        return out

    def _open(self) -> None:
        try:
            st = os.stat(self.path)
            if stat.S_ISCHR(st.st_mode):
                self.fd, self.mode = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK), "device"
            elif stat.S_ISFIFO(st.st_mode):
                # O_RDWR keeps a writer open ourselves, so the FIFO never reads EOF while idle.
                self.fd, self.mode = os.open(self.path, os.O_RDWR | os.O_NONBLOCK), "fifo"
            elif stat.S_ISREG(st.st_mode):
                self.fd, self.mode = os.open(self.path, os.O_RDONLY), "file"
                self._inode, self._offset, self._buf, self._tail = st.st_ino, 0, b"", b""  # read again from its start
                self._watch = self._watch or _watch(self.path.parent)
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
        if self._watch is not None:
            self._watch.close()
            self._watch = None

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
        data = b"".join(chunks)
        if self.mode == "file":
            self._tail = (self._tail + data)[-TAIL:]
        return self._split(data)

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
            self.fd, self._inode = os.open(self.path, os.O_RDONLY), st.st_ino
        # Truncated, or truncated and written again past the offset before this poll: what is before the
        # offset is not what was read there.
        elif (
            st.st_size >= self._offset
            and os.pread(self.fd, len(self._tail), self._offset - len(self._tail)) == self._tail
        ):
            return
        if self._offset:
            self.rewrites += 1
            log.warning("%s was replaced or rewritten: reading it again from its start", self.path)
        self._offset, self._buf, self._tail = 0, b"", b""
        self.skip_through, self._last_seq = -1, None  # the numbers of the new content start where they start

    def _file_last_seq(self) -> int:
        with open(self.path, "rb") as f:
            return _last_seq(f)

    async def _wait_readable(self, stop: asyncio.Event, timeout: float | None) -> None:
        if self.mode == "file" and self._watch is not None:
            wait = IDLE_LOOK_S if timeout is None else min(IDLE_LOOK_S, timeout)
            await wait_readable(self._watch.fd, stop, wait)
            self._watch.drain()
        elif self.mode == "file":  # no inotify here (a filesystem without it): a short poll
            wait = self.poll_interval if timeout is None else min(self.poll_interval, timeout)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), wait)
        else:
            await wait_readable(self.fd, stop, timeout)


def _watch(directory: Path) -> _DirWatch | None:
    try:
        return _DirWatch(directory)
    except OSError as e:
        log.info("%s; following the file by polling", e)
        return None


class _DirWatch:
    """An inotify descriptor on one directory: readable when anything in it changed."""

    def __init__(self, directory: Path) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        self.fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0 or libc.inotify_add_watch(self.fd, os.fsencode(directory), _IN_EVENTS) < 0:
            err = ctypes.get_errno()
            self.close()
            raise OSError(err, f"inotify on {directory}: {os.strerror(err)}")

    def drain(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while os.read(self.fd, 1 << 16):
                pass

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


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
