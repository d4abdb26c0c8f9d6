"""The agent's write-ahead spool: what it observed and JetStream has not yet acknowledged.

A directory of append-only segment files (``<seq>.seg``), each a run of records::

    u32 length | u32 crc32(body) | body = msgpack [subject, message id, payload]

``append`` returns only once its records are on disk (fsync), so a caller may treat them as sent:
faults come right before kernel panics and power cuts, where a flushed page cache is lost with the
node; a batch of events is one fsync, and the frequent, replaceable metric batches never come here.
``read`` hands records out in order from the last acknowledged position; ``ack`` moves that position
(saved beside the segments, not fsynced: losing it only replays records JetStream recognises by id
within its duplicate window) and deletes every segment it passed. A record torn by a crash fails its
length or checksum: the segment is cut there, counted, and everything before it kept.

Bounded: past ``max_bytes`` an append is refused whole (``SpoolFull``) and counted. What the spool
holds was promised to a caller, so the newest gives way; its producer keeps it as it does while the
bus is away (the kernel log's cursor, the pollers' saved state), and re-offers it later.

A directory it cannot write (read-only, full, gone) is a state, not a crash: ``cannot_persist`` says
why, an append raises the OSError (the outbox then holds the records in memory), an ack goes on in
memory, and the next append that works clears it.
"""

from __future__ import annotations

import logging
import os
import struct
import zlib
from collections.abc import Sequence
from pathlib import Path

import msgspec

log = logging.getLogger("gpuhealth.spool")

Item = tuple[str, str, bytes]  # subject, message id, payload
Position = tuple[int, int]  # segment number, byte offset in it
HEADER = struct.Struct("<II")
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
SEGMENT_BYTES = 1024 * 1024  # a segment is read whole: this bounds the memory a replay takes
ACKED_FILE = "acked"
_DECODER = msgspec.msgpack.Decoder(tuple[str, str, bytes])


class SpoolFull(Exception):
    """The spool holds ``max_bytes`` already: the records were not taken."""


def encode_records(items: Sequence[Item]) -> bytes:
    out = bytearray()
    for item in items:
        body = msgspec.msgpack.encode(item)
        out += HEADER.pack(len(body), zlib.crc32(body))
        out += body
    return bytes(out)


def decode_records(data: bytes, offset: int = 0, limit: int = -1) -> tuple[list[tuple[Item, int]], int]:
    """Records from ``offset`` (``limit`` of them at most) with the offset after each, and where they end."""
    out: list[tuple[Item, int]] = []
    while offset + HEADER.size <= len(data) and len(out) != limit:
        length, crc = HEADER.unpack_from(data, offset)
        end = offset + HEADER.size + length
        body = data[offset + HEADER.size : end]
        if end > len(data) or zlib.crc32(body) != crc:
            break
        try:
            item = _DECODER.decode(body)
        except (msgspec.DecodeError, msgspec.ValidationError):
            break
        out.append((item, end))
        offset = end
    return out, offset


class Spool:
    def __init__(self, directory: Path, *, max_bytes: int = DEFAULT_MAX_BYTES, segment_bytes: int = SEGMENT_BYTES):
        self.dir = directory
        self.max_bytes = max_bytes
        self.segment_bytes = segment_bytes
        self.torn = 0  # segments cut at a torn or corrupt record
        self.refused = 0  # records not taken because the spool was full
        self.full = False
        self.cannot_persist = ""  # why the last write failed; "" while writes work
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            self._failed(e)
        self.sizes: dict[int, int] = {}
        for path in sorted(directory.glob("*.seg")):
            data = path.read_bytes()
            _, end = decode_records(data)
            if end < len(data):  # a crash mid-append, or a damaged file: keep what checks out
                log.error("spool %s: dropping %d bytes after offset %d (torn or corrupt record)",
                          path.name, len(data) - end, end)  # fmt: skip
                self._truncate(path, end)
                self.torn += 1
            self.sizes[int(path.stem)] = end
        self.acked = self._load_acked()
        self._fd = -1  # the segment being appended to: always a new one after a start
        self._writing = max([self.acked[0], *self.sizes])  # numbers only grow: a stale "acked" never hides one
        for seq in [s for s in self.sizes if s < self.acked[0]]:
            self._delete(seq)
        if self.acked[0] not in self.sizes:
            self.acked = (min(self.sizes, default=0), 0)
        self.read_at = self.acked
        self.records = sum(len(self._records_of(seq, self.acked[1] if seq == self.acked[0] else 0))
                           for seq in self.sizes)  # fmt: skip

    # ---------------------------------------------------------------- state

    @property
    def bytes(self) -> int:
        return sum(self.sizes.values())

    def _failed(self, e: OSError) -> None:
        why = f"cannot persist: {e.strerror or e} ({self.dir})"
        if why != self.cannot_persist:
            log.error("spool %s: what the agent sees goes to the bus from memory only, lost if it stops", why)
        self.cannot_persist = why

    def _writable(self) -> None:
        if self.cannot_persist:
            log.info("spool %s: writes work again", self.dir)
        self.cannot_persist = ""

    def _truncate(self, path: Path, end: int) -> None:
        try:
            os.truncate(path, end)
        except OSError as e:  # read-only: the torn tail stays, and is cut again at the next start
            self._failed(e)

    def _load_acked(self) -> Position:
        try:
            seq, offset = (self.dir / ACKED_FILE).read_text().split()
            return int(seq), int(offset)
        except (OSError, ValueError):
            return 0, 0

    def _path(self, seq: int) -> Path:
        return self.dir / f"{seq:016d}.seg"

    def _records_of(self, seq: int, offset: int, limit: int = -1) -> list[tuple[Item, int]]:
        return decode_records(self._path(seq).read_bytes(), offset, limit)[0]

    def _delete(self, seq: int) -> None:
        if seq == self._writing_seq():
            self.close()
        self.sizes.pop(seq, None)
        try:
            self._path(seq).unlink(missing_ok=True)
        except OSError as e:  # forgotten all the same: a start after "acked" passed it deletes it
            self._failed(e)

    def _writing_seq(self) -> int | None:
        return self._writing if self._fd >= 0 else None

    # ---------------------------------------------------------------- writing

    def append(self, items: Sequence[Item]) -> None:
        """Durably add ``items`` (all or none); raises SpoolFull past the bound."""
        if not items:
            return
        data = encode_records(items)
        if self.bytes + len(data) > self.max_bytes:
            self.refused += len(items)
            if not self.full:
                log.error("spool full (%d bytes, %d records waiting for the bus): new records are held by their "
                          "producers, or dropped where they cannot be", self.bytes, self.records)  # fmt: skip
            self.full = True
            raise SpoolFull(f"spool full: {self.bytes} of {self.max_bytes} bytes")
        self.full = False
        try:
            if self._fd < 0 or self.sizes[self._writing] >= self.segment_bytes:
                self._open_segment()
            os.write(self._fd, data)
            # On the event loop: a few milliseconds a batch of events, and the API has threads of its own.
            os.fsync(self._fd)
        except OSError as e:
            self._failed(e)
            self.close()  # what this write left is cut at the next start; the next append takes a new segment
            raise
        self._writable()
        self.sizes[self._writing] += len(data)
        self.records += len(items)

    def _open_segment(self) -> None:
        self.close()
        self.dir.mkdir(parents=True, exist_ok=True)  # it may have been impossible at start
        self._writing = max([self._writing, *self.sizes]) + 1
        self._fd = os.open(self._path(self._writing), os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        self.sizes[self._writing] = 0
        dir_fd = os.open(self.dir, os.O_RDONLY)  # the new name must survive a power cut too
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        if self.read_at[0] not in self.sizes:
            self.read_at = (self._writing, 0)

    # ---------------------------------------------------------------- reading and acknowledging

    def read(self, max_records: int = 1024) -> tuple[list[Item], Position]:
        """The next records not handed out yet, and the position after them (for ``ack``)."""
        at, offset = self.read_at
        for seq in sorted(s for s in self.sizes if s >= at):
            start = offset if seq == at else 0
            if start < self.sizes[seq]:
                records = self._records_of(seq, start, max_records)
                if records:
                    self.read_at = (seq, records[-1][1])
                    return [item for item, _ in records], self.read_at
        return [], self.read_at

    def ack(self, position: Position, count: int) -> None:
        """Everything up to ``position`` is in the stream: forget it."""
        self.acked = position
        self.records = max(0, self.records - count)
        self.full = False  # room again, until an append says otherwise
        seq, offset = position
        for done in [s for s in self.sizes if s < seq or (s == seq and offset >= self.sizes[s])]:
            self._delete(done)
        if seq not in self.sizes:  # all of it went: the next segment's start, whenever there is one
            self.acked = (seq + 1, 0)
            self._writing = max(self._writing, seq)
        self.read_at = max(self.read_at, self.acked)
        try:
            self._save_acked()
        except OSError as e:  # known in memory: not sent again by this run; a restart may (same ids)
            self._failed(e)

    def _save_acked(self) -> None:
        tmp = self.dir / (ACKED_FILE + ".tmp")
        tmp.write_text(f"{self.acked[0]} {self.acked[1]}\n")
        tmp.replace(self.dir / ACKED_FILE)

    def probe(self) -> None:
        """Whether the directory takes writes again, with nothing to append: raises the OSError while not."""
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            self._save_acked()
        except OSError as e:
            self._failed(e)
            raise
        self._writable()

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
