from __future__ import annotations

import asyncio
import os
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from gpuhealth.config import NodeIdentity
from producers.klog import Cursor, Unusable, load_cursor, save_cursor
from producers.kmsg import KmsgSource, Record, append_record, parse_record


def test_parse_record_with_device_continuations() -> None:
    rec = parse_record(b"6,339,5140900,-;NVRM: Xid (PCI:0000:04:00): 79\n SUBSYSTEM=pci\n DEVICE=+pci:0000:04:00.0")
    assert isinstance(rec, Record)
    assert (rec.priority, rec.seq, rec.usec) == (6, 339, 5140900)
    assert rec.message == "NVRM: Xid (PCI:0000:04:00): 79"
    assert rec.device == {"SUBSYSTEM": "pci", "DEVICE": "+pci:0000:04:00.0"}


def test_facility_bits_are_dropped_from_the_priority() -> None:
    rec = parse_record(b"30,1,2,-;systemd[1]: hello")  # facility 3 (daemon), level 6
    assert isinstance(rec, Record) and rec.priority == 6


def test_malformed_records_say_why() -> None:
    for raw in (b"hello world", b"a,b,c;msg", b"1,2;msg", b"-1,2,3,-;m", b"6,1,1,-;" + b"x" * 20000):
        assert isinstance(parse_record(raw), Unusable)


def test_non_utf8_is_replaced_not_fatal() -> None:
    rec = parse_record(b"3,1,1,-;NVRM: \xff\xfe bad bytes\x00")
    assert isinstance(rec, Record)
    assert "\ufffd" in rec.message and "\x00" not in rec.message


@settings(max_examples=300)
@given(st.binary(max_size=2000))
def test_any_bytes_parse_without_raising(raw: bytes) -> None:
    assert isinstance(parse_record(raw), Record | Unusable)


def test_cursor_round_trip_and_garbage(tmp_path: Path) -> None:
    path = tmp_path / "kmsg.cursor"
    assert load_cursor(path) is None
    save_cursor(path, Cursor("boot", 41, [("subject", "id", b"payload")]))
    assert load_cursor(path) == Cursor("boot", 41, [("subject", "id", b"payload")])
    save_cursor(path, Cursor("boot", "s=abc;i=1"), durable=False)
    assert load_cursor(path) == Cursor("boot", "s=abc;i=1")
    path.write_bytes(b"{not json")
    assert load_cursor(path) is None


def test_append_record_numbers_records_in_a_file(tmp_path: Path) -> None:
    path = tmp_path / "kmsg"
    path.write_bytes(b"6,10,100,-;first\n")
    assert append_record(path, "second", 3) == 11
    assert append_record(path, "third", 4) == 12
    lines = path.read_bytes().splitlines()
    rec = parse_record(lines[-1])
    assert isinstance(rec, Record) and (rec.seq, rec.priority, rec.message) == (12, 4, "third")


async def _read_all(source: KmsgSource, want: int) -> list[bytes]:
    stop = asyncio.Event()
    got: list[bytes] = []
    async with asyncio.timeout(5):
        while len(got) < want:
            got += await source.read_batch(stop)
    return got


async def test_file_source_follows_growth_truncation_and_continuations(tmp_path: Path, identity: NodeIdentity) -> None:
    path = tmp_path / "kmsg"
    path.write_bytes(b"6,1,1,-;one\n SUBSYSTEM=pci\n6,2,2,-;tw")
    src = KmsgSource(path, identity, poll_interval=0.01)
    src.open()
    assert await _read_all(src, 1) == [b"6,1,1,-;one\n SUBSYSTEM=pci"]
    with path.open("ab") as f:
        f.write(b"o\n6,3,3,-;three\n")
    assert await _read_all(src, 2) == [b"6,2,2,-;two", b"6,3,3,-;three"]
    path.write_bytes(b"6,4,4,-;after truncation\n")
    assert await _read_all(src, 1) == [b"6,4,4,-;after truncation"]
    src.close()


async def test_a_growing_file_wakes_its_reader_without_polling(tmp_path: Path, identity: NodeIdentity) -> None:
    """Issue #20: the agent polled a kmsg file every 0.1 s (5 millicores doing nothing). Polled once a minute
    here, it sees a line written in well under a second: inotify woke it."""
    path = tmp_path / "kmsg"
    path.touch()
    src = KmsgSource(path, identity, poll_interval=60)
    src.open()
    loop = asyncio.get_running_loop()
    loop.call_later(0.2, append_record, path, "written while the reader sleeps", 3)
    start = loop.time()
    got = await src.read_batch(asyncio.Event(), timeout=30)
    assert [parse_record(r).message for r in got] == ["written while the reader sleeps"]  # type: ignore[union-attr]
    assert loop.time() - start < 3
    path.write_bytes(b"")  # truncated: woken again, nothing to read, and no spin
    assert await src.read_batch(asyncio.Event(), timeout=0.5) == []
    src.close()


async def test_fifo_source_reads_without_polling(tmp_path: Path, identity: NodeIdentity) -> None:
    path = tmp_path / "kmsg.fifo"
    os.mkfifo(path)
    src = KmsgSource(path, identity)
    src.open()
    assert src.mode == "fifo"
    writer = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    os.write(writer, b"6,1,1,-;a\n6,2,2,-;b\n")
    os.close(writer)  # the source holds its own writer end: no EOF spin
    assert await _read_all(src, 2) == [b"6,1,1,-;a", b"6,2,2,-;b"]
    seq = append_record(path, "c", 3)
    got = await _read_all(src, 1)
    rec = parse_record(got[0])
    assert isinstance(rec, Record) and rec.seq == seq and rec.message == "c"
    src.close()


async def test_resume_applies_only_on_the_same_boot(tmp_path: Path, identity: NodeIdentity) -> None:
    path = tmp_path / "kmsg"
    path.write_bytes(b"".join(f"6,{i},{i},-;line {i}\n".encode() for i in range(1, 6)))
    same = KmsgSource(path, identity)
    assert same.open(Cursor(identity.boot_id, 3))[1] == 3
    got = await same.read(asyncio.Event(), timeout=1)
    assert [r.seq for r in got if not isinstance(r, Unusable)] == [4, 5]
    other = KmsgSource(path, identity)
    assert other.open(Cursor("an-earlier-boot", 3))[1] is None
    got = await other.read(asyncio.Event(), timeout=1)
    assert [r.seq for r in got if not isinstance(r, Unusable)] == [1, 2, 3, 4, 5]
    assert got[0].time_ns == identity.boot_time_ns + 1000  # type: ignore[union-attr]
    same.close()
    other.close()


async def test_sequence_gaps_are_counted_as_lost_records(tmp_path: Path, identity: NodeIdentity) -> None:
    path = tmp_path / "kmsg"
    path.write_bytes(b"6,1,1,-;a\n6,2,2,-;b\n6,7,7,-;c\n")
    src = KmsgSource(path, identity)
    src.open()
    await src.read(asyncio.Event(), timeout=1)
    assert src.gaps == 4
    src.close()


async def test_first_start_look_back_skips_old_records(tmp_path: Path, identity: NodeIdentity) -> None:
    import time

    now_us = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
    path = tmp_path / "kmsg"
    path.write_bytes(f"6,1,{now_us - 3_600_000_000},-;an hour ago\n6,2,{now_us - 1_000_000},-;a second ago\n".encode())
    first = KmsgSource(path, identity, lookback_s=60)
    first.open(None)
    got = await first.read(asyncio.Event(), timeout=1)
    assert [r.message for r in got if not isinstance(r, Unusable)] == ["a second ago"]
    # With a cursor of an earlier boot, a new boot is read from its first record, look-back or not.
    again = KmsgSource(path, identity, lookback_s=60)
    again.open(Cursor("an-earlier-boot", 9))
    assert len(await again.read(asyncio.Event(), timeout=1)) == 2
    first.close()
    again.close()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=20))
def test_garbage_files_never_raise_out_of_the_reader(chunks: list[bytes]) -> None:
    import tempfile

    from gpuhealth.config import NodeIdentity as Identity
    from producers.klog import KernelLogProducer

    ident = Identity("c", "n", "m", "b", 1)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kmsg"
        content = b"\n".join(chunks) + b"\n"
        path.write_bytes(content)

        async def publish(items: list[tuple[str, str, bytes]]) -> None:
            return None

        producer = KernelLogProducer(KmsgSource(path, ident), ident, Path(tmp), publish)
        assert producer.open().available

        async def drain() -> None:
            records = await producer.source.read(asyncio.Event(), timeout=0.01)
            producer._events_of(records)

        asyncio.run(drain())
        producer.source.close()
        assert producer.records_read + producer.unusable <= content.count(b"\n")


async def test_a_file_rewritten_past_the_old_offset_is_read_from_its_start(
    tmp_path: Path, identity: NodeIdentity
) -> None:
    # The finding: truncated and rewritten faster than the reader polls, the new file grew past the old
    # offset and the reader went on from there: 20 of 60 new lines were lost, and nothing said so.
    path = tmp_path / "kmsg"
    path.write_bytes(b"".join(f"6,{i},{i},-;old line {i}\n".encode() for i in range(1, 41)))
    src = KmsgSource(path, identity, poll_interval=0.01)
    src.open()
    assert len(await _read_all(src, 40)) == 40
    path.write_bytes(b"".join(f"6,{i},{1000 + i},-;new line {i:02}\n".encode() for i in range(1, 61)))
    got = await src.read(asyncio.Event(), timeout=1)
    assert [r.message for r in got if not isinstance(r, Unusable)] == [f"new line {i:02}" for i in range(1, 61)]
    assert src.rewrites == 1
    # The rewritten file then grows as files do: only the new record comes, nothing of it twice.
    append_record(path, "appended", 3)
    got = await src.read(asyncio.Event(), timeout=1)
    assert [(r.seq, r.message) for r in got if not isinstance(r, Unusable)] == [(61, "appended")]
    src.close()


async def test_a_file_rewritten_while_the_agent_was_away_is_read_whole(tmp_path: Path, identity: NodeIdentity) -> None:
    # The cursor says "after 40" of the old file; the new file's numbers start again: none of them is old.
    path = tmp_path / "kmsg"
    path.write_bytes(b"".join(f"6,{i},{i},-;new line {i}\n".encode() for i in range(1, 11)))
    src = KmsgSource(path, identity)
    src.open(Cursor(identity.boot_id, 40))
    got = await src.read(asyncio.Event(), timeout=1)
    assert [r.seq for r in got if not isinstance(r, Unusable)] == list(range(1, 11))
    src.close()
