"""The sink's store: ClickHouse, where events, health changes and dead letters are each stored once.

One writer thread owns the clickhouse-connect client: chDB's client is
synchronous and its directory can be opened by one process, so every insert
runs there, never on the event loop. Read-only queries never use it: they go
through sinks/reads.py (checked, on reader threads, a session each). Inserts are
idempotent by id: before a batch goes in, the ids already stored are looked
up (bloom-filter index, time range pruned) and skipped, so a redelivered
event is never counted twice, whatever batch it comes back in. With one sink
per table this is exact; the ids are what makes it safe to retry at all.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

from gpuhealth.consumer import is_outage
from gpuhealth.errors import QueryError
from gpuhealth.events import (
    MetricBatch,
)
from sinks import target as target_mod
from sinks.reads import Reads
from sinks.rows import (
    INCIDENT_COLUMNS,
    MetricIn,
    metrics_in_block,
)

log = logging.getLogger("gpuhealth.sink")

T = TypeVar("T")
DATABASE = "gpuhealth"


def migrations() -> list[tuple[int, str]]:
    files = resources.files("sinks").joinpath("schema")
    out = []
    for f in files.iterdir():
        if m := re.match(r"(\d+)_.*\.sql$", f.name):
            out.append((int(m.group(1)), f.read_text()))
    return sorted(out)


def split_statements(sql: str) -> list[str]:
    body = "\n".join(line for line in sql.splitlines() if not line.lstrip().startswith("--"))
    return [s.strip() for s in body.split(";") if s.strip()]


def chdb_dsn(data_dir: Path) -> str:
    return f"chdb://{(data_dir / 'clickhouse').resolve()}"


class Store:
    """ClickHouse through clickhouse-connect, on one dedicated thread."""

    def __init__(
        self,
        dsn: str,
        database: str | None = None,
        *,
        password_file: Path | None = None,
        read_only: bool = False,
        metrics_ttl_days: int | None = None,
    ) -> None:
        self.target = target_mod.parse(dsn, database=database, password_file=password_file)
        self.read_only = read_only  # gpuctl reading a server: no migrations, no writes
        self.metrics_ttl_days = metrics_ttl_days  # raw samples; the hourly rollup is kept
        self.database = self.target.database
        self.client: Any = None
        self.reads = Reads(self.target)  # queries: never on the writer's thread or session
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="clickhouse")

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._thread, fn, *args)

    def connect(self) -> None:
        """Open both clients and migrate, or raise and leave nothing half-open: the caller (a
        consumer's retry with back-off) calls again while ClickHouse is away."""
        if self.client is not None:
            return
        import clickhouse_connect  # heavy; only the sink and gpuctl load it

        if self.target.kind == "chdb":
            os.makedirs(self.target.path, exist_ok=True)
        client = clickhouse_connect.get_client(**self.target.client_kwargs())
        try:
            if not self.read_only:
                self.migrate(client)
        except Exception:
            client.close()
            raise
        self.client = client  # in chDB, also what keeps the engine open between queries

    def migrate(self, client: Any = None) -> None:
        c, db = client or self.client, self.database
        c.command(f"CREATE DATABASE IF NOT EXISTS {db}")
        c.command(
            f"CREATE TABLE IF NOT EXISTS {db}.schema_migrations (version UInt32, applied DateTime DEFAULT now())"
            " ENGINE = MergeTree ORDER BY version"
        )
        done = {r[0] for r in c.query(f"SELECT version FROM {db}.schema_migrations").result_rows}
        for version, sql in migrations():
            if version in done:
                continue
            for stmt in split_statements(sql.replace("{db}", db)):
                c.command(stmt)
            c.insert(f"{db}.schema_migrations", [[version]], column_names=["version"])
            log.info("clickhouse: applied schema migration %03d", version)
        if self.metrics_ttl_days is not None:
            for table in ("metrics", "gpu_processes"):
                c.command(f"ALTER TABLE {db}.{table} MODIFY TTL toDateTime(time) + INTERVAL "
                          f"{int(self.metrics_ttl_days)} DAY")  # fmt: skip

    def close(self) -> None:
        self.reads.close()
        if self.client is not None:
            self.client.close()
        self.client = None
        self._thread.shutdown(wait=True)

    def insert_new(
        self, table: str, columns: list[str], rows: Sequence[list[Any]], *, rows_per_id: bool = False
    ) -> int:
        """Insert the rows whose id (column 0) is not stored yet; time is column 1.

        One row per id (events, states), or many (a metric batch's rows share its id)."""
        if self.client is None:
            self.connect()
        fresh = list(rows) if rows_per_id else list({r[0]: r for r in rows}.values())
        if not fresh:
            return 0
        stored = self._stored_ids(table, columns[0], list({r[0] for r in fresh}), [r[1] for r in fresh])
        fresh = [r for r in fresh if r[0] not in stored]
        if fresh:
            self.client.insert(f"{self.database}.{table}", fresh, column_names=columns)
        return len(fresh)

    def insert_batches(self, batches: Sequence[MetricBatch]) -> int:
        """Metric batches not stored yet (by batch id), through metrics_in; returns the samples written."""
        if self.client is None:
            self.connect()
        fresh = list({b.id: b for b in batches if b.values}.values())
        if not fresh:
            return 0
        # By the ledger of batch ids, not the samples: those go with the TTL, and the rollup keeps their sums.
        stored = self._stored_ids("metric_batches", "batch_id", [b.id for b in fresh], [b.time for b in fresh])
        fresh = [b for b in fresh if b.id not in stored]
        if fresh:
            self.client.raw_insert(f"{self.database}.metrics_in", list(MetricIn.__struct_fields__),
                                   metrics_in_block(fresh), fmt="JSONEachRow")  # fmt: skip
        return sum(len(b.values) for b in fresh)

    def _stored_ids(self, table: str, column: str, ids: list[str], times: list[int]) -> set[str]:
        rows = self.client.query(
            f"SELECT DISTINCT {column} FROM {self.database}.{table} WHERE time BETWEEN "
            f"fromUnixTimestamp64Nano({{lo:Int64}}) AND fromUnixTimestamp64Nano({{hi:Int64}}) "
            f"AND {column} IN {{ids:Array(String)}}",
            parameters={"lo": min(times), "hi": max(times), "ids": ids},
        ).result_rows
        return {sid for (sid,) in rows}

    def insert_incidents(self, rows: Sequence[list[Any]]) -> int:
        """Each incident's latest update, unless one as new is stored. The table keeps an incident's latest
        (ReplacingMergeTree by seq, which also folds the older updates of one insert as it writes them): an
        older update stored after a newer one, as a redelivered batch of both would be, is a second row that
        a plain count() sees until the next merge."""
        if self.client is None:
            self.connect()
        latest: dict[str, list[Any]] = {}
        for r in rows:
            if r[0] not in latest or r[1] > latest[r[0]][1]:
                latest[r[0]] = r
        fresh = list(latest.values())
        if not fresh:
            return 0
        firsts = [r[INCIDENT_COLUMNS.index("first")] for r in fresh]  # the partition key: never changes
        found = self.client.query(
            f"SELECT id, max(seq) FROM {self.database}.incidents WHERE first BETWEEN "
            f"fromUnixTimestamp64Nano({{lo:Int64}}) AND fromUnixTimestamp64Nano({{hi:Int64}}) "
            f"AND id IN {{ids:Array(String)}} GROUP BY id",
            parameters={"lo": min(firsts), "hi": max(firsts), "ids": list(latest)},
        )
        stored = dict(found.result_rows)
        fresh = [r for r in fresh if r[1] > stored.get(r[0], -1)]
        if fresh:
            self.client.insert(f"{self.database}.incidents", fresh, column_names=INCIDENT_COLUMNS)
        return len(fresh)

    def query(self, sql: str, params: dict[str, Any], max_rows: int, timeout_s: float) -> tuple[list[str], list[Any]]:
        """A read-only query on the calling thread (tests, scripts); the sink and gpuctl use read."""
        if self.client is None:
            self.connect()
        return self.reads.run(sql, params, max_rows, timeout_s)

    async def read(
        self, sql: str, params: dict[str, Any], max_rows: int, timeout_s: float
    ) -> tuple[list[str], list[Any]]:
        """A read-only query on a reader thread: the writer's thread goes on inserting meanwhile."""
        if self.client is None:
            try:
                await self.run(self.connect)
            except Exception as e:  # ClickHouse away: the asker hears why
                raise QueryError(f"clickhouse {self.target.redacted()} not reachable: {one_line(str(e))}") from e
        return await self.reads.query(sql, params, max_rows, timeout_s)


def one_line(text: str) -> str:
    return " ".join(text.split())[:500]


# Server errors that say ClickHouse is overloaded, restarting or its cluster unwell: the rows are not at fault.
_BUSY = re.compile(
    r"\b(?:MEMORY_LIMIT_EXCEEDED|TOO_MANY_PARTS|TOO_MANY_SIMULTANEOUS_QUERIES|TIMEOUT_EXCEEDED|SOCKET_TIMEOUT|"
    r"NETWORK_ERROR|ALL_CONNECTION_TRIES_FAILED|TABLE_IS_READ_ONLY|KEEPER_EXCEPTION|NO_ZOOKEEPER|ABORTED|"
    r"QUERY_WAS_CANCELLED|UNFINISHED|response code 50[234])\b"
)


def store_away(error: BaseException) -> bool:
    """ClickHouse (or NATS) away or busy: hold the messages. Anything else a message may be guilty of."""
    if is_outage(error):
        return True
    from clickhouse_connect.driver.exceptions import OperationalError  # loaded already by connect()

    e: BaseException | None = error
    for _ in range(8):  # a driver error's chain of causes is short
        if e is None:
            break
        if isinstance(e, OperationalError) or _BUSY.search(str(e)):
            return True
        e = e.__cause__ or e.__context__
    return False
