"""The kernel log from the systemd journal, through systemd-python (extra ``journald``).

Only the kernel transport is read (``_TRANSPORT=kernel``): the same records as
/dev/kmsg, but kept across reboots and rotation. The reader opens a directory
(``--journal-dir``; the system journal by default), so rotated and archived
files stay in view. A position is a journal cursor, valid across boots: a
restart seeks to it and goes on with the next entry. The journal's own fd
(inotify underneath) is watched by the event loop, so nothing polls.

Without systemd-python the source says so once and the agent reads /dev/kmsg.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import errno
import importlib.util
from pathlib import Path
from typing import Any

from gpuhealth.config import NodeIdentity
from gpuhealth.errors import SourceError
from gpuhealth.events import now_ns
from producers.klog import Cursor, LogRecord, Position, Unusable, wait_readable

MAX_BATCH = 2000


def available() -> bool:
    return importlib.util.find_spec("systemd") is not None and importlib.util.find_spec("systemd.journal") is not None


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _micros(delta: dt.timedelta) -> int:
    """Exact: floats lose nanoseconds at today's epoch times."""
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


class JournalSource:
    """Kernel entries of a journal directory or the system journal (a ``klog.LogSource``)."""

    name = "journald"

    def __init__(self, identity: NodeIdentity, journal_dir: Path | None = None) -> None:
        self.identity = identity
        self.journal_dir = journal_dir
        self.reader: Any = None

    def open(self, resume: Cursor | None = None) -> tuple[str, Position | None]:
        if not available():
            raise SourceError(errno.ENOENT, "systemd-python is not installed (pip install 'gpuhealth[journald]')")
        from systemd import journal

        try:
            if self.journal_dir is not None:
                if not self.journal_dir.is_dir():
                    raise SourceError(errno.ENOENT, f"no journal directory at {self.journal_dir}")
                self.reader = journal.Reader(path=str(self.journal_dir))
            else:
                self.reader = journal.Reader()
        except OSError as e:
            raise SourceError(e.errno or errno.EIO, f"cannot open the journal: {e}") from e
        self.reader.add_match(_TRANSPORT="kernel")
        where = str(self.journal_dir) if self.journal_dir else "the system journal"
        if resume is not None and isinstance(resume.position, str):
            try:
                self.reader.seek_cursor(resume.position)
                entry = self.reader.get_next()  # the entry at the cursor was read already
                if entry and entry.get("__CURSOR") != resume.position:
                    self.reader.get_previous()  # the cursor's entry is gone (vacuumed): this one is new
                return f"reading kernel entries of {where}", resume.position
            except OSError:
                pass  # an unusable cursor: read what the journal has
        self.reader.seek_head()
        return f"reading kernel entries of {where}", None

    def close(self) -> None:
        if self.reader is not None:
            self.reader.close()
            self.reader = None

    async def read(self, stop: asyncio.Event, timeout: float | None) -> list[LogRecord | Unusable]:
        out = self._available()
        if out or stop.is_set():
            return out
        await self._wait(stop, timeout)
        return self._available()

    def _available(self) -> list[LogRecord | Unusable]:
        out: list[LogRecord | Unusable] = []
        while len(out) < MAX_BATCH:
            entry = self.reader.get_next()
            if not entry:
                break
            out.append(self._record(entry))
        return out

    def _record(self, entry: dict[str, Any]) -> LogRecord | Unusable:
        cursor = entry.get("__CURSOR")
        message = entry.get("MESSAGE")
        if not cursor or message is None:
            return Unusable(repr(entry)[:1024].encode(), "journal entry without a cursor or a MESSAGE")
        boot = entry.get("_BOOT_ID")
        boot_id = str(boot) if boot else self.identity.boot_id
        realtime = entry.get("__REALTIME_TIMESTAMP")
        time_ns = _micros(realtime - _EPOCH) * 1000 if isinstance(realtime, dt.datetime) else now_ns()
        monotonic = entry.get("__MONOTONIC_TIMESTAMP")
        delta = monotonic[0] if isinstance(monotonic, tuple) else monotonic
        usec = _micros(delta) if isinstance(delta, dt.timedelta) else 0
        try:
            priority = int(entry.get("PRIORITY", 6))
        except (TypeError, ValueError):
            priority = 6
        return LogRecord(position=str(cursor), boot_id=boot_id, time_ns=time_ns, priority=priority,
                         message=_text(message).replace("\x00", ""), monotonic_us=usec)  # fmt: skip

    async def _wait(self, stop: asyncio.Event, timeout: float | None) -> None:
        """Until the journal changes (its fd is inotify underneath), stop, or timeout."""
        try:
            await wait_readable(self.reader.fileno(), stop, timeout)
        finally:
            with contextlib.suppress(OSError):
                self.reader.process()  # acknowledge the inotify events, pick up new and rotated files
