"""Read-only queries: each one checked, then run on a reader thread in a session of its own, inside limits.

    query ──▶ query_guard.check ──▶ a reader thread (READERS of them; the writer's thread is never used)
          ──▶ a fresh ClickHouse session: the limits SET first, readonly=1 last ──▶ rows ──▶ session closed

chDB runs a query and the writer's inserts side by side: each connection is its own handle on the one
engine and the driver releases the GIL while the engine works. Side by side is not enough on a small
node: a query at full priority took half of what the sink stored per second on 2 cores
(bench/query_isolation.py: 0.48 and 0.59 of the rate alone); with its threads reniced by the engine
(os_thread_priority=19) the sink kept 0.84 to 1.08 of it, and with them in the idle scheduling class as well,
on half the cores (sinks/idle.py), 0.90 to 0.92. A query stops at its asker's timeout
(max_execution_time), which is when the asker stops waiting for it.

Nothing a query does outlives it: its session is opened for it and closed after it. readonly=1
alone would not do: it refuses SETTINGS that loosen a limit, but `SET limit = 1` passes it, and on a
shared session every later query would have returned one row.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from gpuhealth.errors import QueryError
from sinks import query_guard
from sinks.idle import IDLE
from sinks.target import Target

READERS = 2  # queries at once; more wait for a reader
WAITING = 16  # queries waiting beyond that are refused at once, so a flood cannot queue without end


@dataclass(frozen=True)
class Limits:
    """What one query may use, enforced by the engine on every query (the figures of the
    gpuhealth_reader settings profile in deploy/clickhouse/reader.sql too).

    The weekly report over a fleet fits: its largest read is a month's partition of metrics_hourly,
    ~1.7e9 rows for 10,000 nodes x 8 GPUs x 30 series, under max_rows_to_read; its answers are under
    100,000 rows (gpuctl report asks for that much); it runs in seconds, under the 120 s gpuctl
    report allows. What the attacks need is far over them: numbers(1e12) is refused before it starts
    (1e12 rows to read), an unbounded result stops at max_result_rows, anything else at 120 s or 1 GiB.
    The sink answers READERS queries at once, so its engine gives queries 2 GiB at most.
    """

    max_execution_time: int = 120  # s; a query's own timeout, if shorter, is what counts
    max_memory_usage: int = 1 << 30  # bytes the query may allocate in the engine
    max_result_rows: int = 100_000  # a query's own max_rows, if smaller, is what counts
    max_result_bytes: int = 32 << 20  # a reply is at most 4 MiB of JSON anyway
    max_rows_to_read: int = 2_000_000_000
    # In chDB, half the cores at most (sinks/idle.py pins the threads there too: the engine may run more):
    # the other half is the writer's whatever the query does.
    max_threads: int = field(default_factory=lambda: max(1, (os.cpu_count() or 2) // 2))


LIMITS = Limits()


def session_settings(limits: Limits, max_rows: int, timeout_s: float, *, in_process: bool) -> dict[str, Any]:
    """The settings of one query's session, in the order they are SET: readonly=1 last, after which
    no statement in the session can loosen them."""
    settings: dict[str, Any] = {
        "max_execution_time": max(1, min(int(timeout_s), limits.max_execution_time)),
        "max_memory_usage": limits.max_memory_usage,
        "max_result_rows": max(1, min(max_rows, limits.max_result_rows)),
        "max_result_bytes": limits.max_result_bytes,
        "result_overflow_mode": "throw",
        "max_rows_to_read": limits.max_rows_to_read,
        "read_overflow_mode": "throw",
        "allow_introspection_functions": 0,
    }
    # On a server the reader's profile makes the session read-only (deploy/clickhouse/reader.sql),
    # and a query's threads are the server's, not the sink's.
    if in_process:
        settings["max_threads"] = limits.max_threads
        # The engine renices the query's threads: the CPU a query takes is what ingestion leaves.
        settings["os_thread_priority"] = 19
        settings["readonly"] = 1
    return settings


def _one_line(text: str) -> str:
    return " ".join(text.split())[:500]


class Reads:
    """The query path of one store: the guard, the reader threads, a session per query."""

    def __init__(self, target: Target, *, limits: Limits = LIMITS, readers: int = READERS) -> None:
        self.target, self.limits = target, limits
        self._pool = ThreadPoolExecutor(max_workers=readers, thread_name_prefix="clickhouse-read")
        self._slots = asyncio.Semaphore(readers)
        self._waiting = 0

    async def query(
        self, sql: str, params: dict[str, Any], max_rows: int, timeout_s: float
    ) -> tuple[list[str], list[Any]]:
        """One query, checked, on a reader thread; QueryRefused before it runs, QueryError if it fails."""
        sql = query_guard.check(sql, self.target.database)
        if self._waiting >= WAITING:
            raise QueryError(f"the sink has {self._waiting} queries waiting; try again")
        self._waiting += 1
        try:
            await self._slots.acquire()
        finally:
            self._waiting -= 1
        try:
            return await asyncio.get_running_loop().run_in_executor(
                self._pool, self.run_checked, sql, params, max_rows, timeout_s
            )
        finally:
            self._slots.release()

    def run(self, sql: str, params: dict[str, Any], max_rows: int, timeout_s: float) -> tuple[list[str], list[Any]]:
        """One query, checked, on the calling thread."""
        return self.run_checked(query_guard.check(sql, self.target.database), params, max_rows, timeout_s)

    def run_checked(
        self, sql: str, params: dict[str, Any], max_rows: int, timeout_s: float
    ) -> tuple[list[str], list[Any]]:
        """One query the guard has passed, in a session opened for it and closed after it."""
        import clickhouse_connect

        settings = session_settings(self.limits, max_rows, timeout_s, in_process=self.target.kind == "chdb")
        try:
            client = clickhouse_connect.get_client(
                **self.target.client_kwargs(), database=self.target.database, settings=settings
            )
        except Exception as e:  # the driver raises its own DatabaseError family
            raise QueryError(_one_line(str(e))) from e
        try:
            with IDLE.during() if self.target.kind == "chdb" else contextlib.nullcontext():
                r = client.query(sql, parameters=params or None)
        except Exception as e:
            raise QueryError(_one_line(str(e))) from e
        finally:
            client.close()
        return list(r.column_names), [list(row) for row in r.result_rows]

    def close(self) -> None:
        self._pool.shutdown(wait=True)
