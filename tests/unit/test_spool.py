"""The agent's write-ahead spool on a real directory: order, acknowledgement, torn records, its bound."""

from __future__ import annotations

from pathlib import Path

import pytest

from producers.spool import Spool, SpoolFull, encode_records


def items(first: int, n: int, size: int = 10) -> list[tuple[str, str, bytes]]:
    return [(f"gpuhealth.v1.event.n.s{i}", f"id-{i}", bytes([i % 256]) * size) for i in range(first, first + n)]


def drain(spool: Spool) -> list[tuple[str, str, bytes]]:
    got: list[tuple[str, str, bytes]] = []
    while batch := spool.read(2)[0]:
        got += batch
    return got


def test_records_come_back_in_order_across_restarts_and_segments(tmp_path: Path) -> None:
    spool = Spool(tmp_path, segment_bytes=200)
    for i in range(10):
        spool.append(items(i, 1))
    assert len(list(tmp_path.glob("*.seg"))) > 1, "small segments: the records span several"
    # A restart (the process gone without closing anything) hands out everything, in order, ids and all.
    again = Spool(tmp_path, segment_bytes=200)
    assert again.records == 10
    assert drain(again) == items(0, 10)


def test_acknowledged_records_are_forgotten_and_their_segments_deleted(tmp_path: Path) -> None:
    spool = Spool(tmp_path, segment_bytes=100)
    spool.append(items(0, 6))
    batch, position = spool.read(4)
    assert batch == items(0, 4)
    spool.ack(position, len(batch))
    # Killed here: a restart resumes after the acknowledged records, not before.
    again = Spool(tmp_path, segment_bytes=100)
    assert again.records == 2
    batch, position = again.read()
    assert batch == items(4, 2)
    again.ack(position, len(batch))
    assert list(tmp_path.glob("*.seg")) == [] and again.records == 0 and again.bytes == 0
    again.append(items(6, 1))  # numbering goes on after an emptied spool and a stale "acked"
    assert drain(Spool(tmp_path)) == items(6, 1)


def test_a_torn_last_record_is_dropped_and_what_precedes_it_kept(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    spool.append(items(0, 3))
    spool.append(items(3, 1, size=500))
    (seg,) = tmp_path.glob("*.seg")
    whole = seg.stat().st_size
    with seg.open("r+b") as f:
        f.truncate(whole - 100)  # the crash came mid-append
    again = Spool(tmp_path)
    assert again.torn == 1
    assert drain(again) == items(0, 3)
    assert seg.stat().st_size < whole - 500, "the torn tail is cut off the file"
    again.append(items(4, 1))  # and appending goes on after it
    assert drain(Spool(tmp_path)) == items(0, 3) + items(4, 1)


def test_a_corrupt_record_fails_its_checksum(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    spool.append(items(0, 2))
    (seg,) = tmp_path.glob("*.seg")
    data = bytearray(seg.read_bytes())
    data[-1] ^= 0xFF  # the length is right, the body is not
    seg.write_bytes(bytes(data))
    again = Spool(tmp_path)
    assert again.torn == 1 and drain(again) == items(0, 1)
    assert seg.stat().st_size == len(data) // 2  # two records of the same size: the first kept


def test_past_its_bound_the_spool_refuses_the_newest_and_counts_them(tmp_path: Path) -> None:
    spool = Spool(tmp_path, max_bytes=1000, segment_bytes=300)
    taken = 0
    with pytest.raises(SpoolFull):
        while True:
            spool.append(items(taken, 1, size=100))
            taken += 1
    assert taken == 1000 // len(encode_records(items(0, 1, size=100))) and spool.bytes <= 1000
    assert spool.full and spool.refused == 1
    with pytest.raises(SpoolFull):
        spool.append(items(100, 3))
    assert spool.refused == 4
    assert drain(Spool(tmp_path, max_bytes=1000)) == items(0, taken, size=100), "what it holds is intact"
    batch, position = spool.read(3)
    spool.ack(position, len(batch))  # the bus took some: room again
    assert not spool.full
    spool.append(items(taken, 1, size=100))
    assert drain(Spool(tmp_path)) == items(3, taken - 2, size=100)
