"""The store's promises that need no ClickHouse: where it connects, one writer thread, and its migrations."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from sinks.clickhouse import Store, split_statements


def test_a_store_connects_to_the_database_and_with_the_password_file_it_was_given(tmp_path: Path) -> None:
    secret = tmp_path / "password"
    secret.write_text("from-file\n")
    store = Store("https://reader@clickhouse.example/fleet_b", database="fleet_a", password_file=secret)
    try:
        assert (store.database, store.target.database, store.target.password) == ("fleet_a", "fleet_a", "from-file")
    finally:
        store.close()


async def test_the_store_runs_its_work_on_one_thread_one_call_at_a_time() -> None:
    """chDB's client is synchronous and owns its directory: a second call must not start beside the first."""
    store = Store("chdb:///never/opened")
    second_ran = threading.Event()
    try:
        first = asyncio.ensure_future(store.run(second_ran.wait, 0.5))  # True if the second ran meanwhile
        second = asyncio.ensure_future(store.run(second_ran.set))
        assert await asyncio.gather(first, second) == [False, None]
        assert second_ran.is_set()
    finally:
        store.close()


def test_a_store_that_never_connected_closes_quietly() -> None:
    """gpuctl and the sink close their store on the way out, ClickHouse reached or not."""
    store = Store("http://127.0.0.1:1")  # nothing listens on port 1; close does not try
    store.close()
    assert store.client is None


def test_a_migration_is_its_statements_without_comment_lines_indented_or_not() -> None:
    sql = """-- 009: two tables; the note says why
CREATE TABLE {db}.a (x UInt8) ENGINE = Memory;
    -- an indented note; with a semicolon
CREATE TABLE {db}.b (y UInt8)
ENGINE = Memory;
  -- a trailing note
"""
    assert split_statements(sql) == [
        "CREATE TABLE {db}.a (x UInt8) ENGINE = Memory",
        "CREATE TABLE {db}.b (y UInt8)\nENGINE = Memory",
    ]
