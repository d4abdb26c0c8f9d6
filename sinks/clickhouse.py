"""The ClickHouse sink: events, health changes and dead letters, each stored once.

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
import functools
import logging
import os
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import msgspec
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from gpuhealth import subjects
from gpuhealth.consumer import Consumer, is_outage
from gpuhealth.errors import QueryError, QueryRefused
from gpuhealth.events import (
    DECISION_DECODER,
    DLQ_DECODER,
    EVENT_DECODER,
    HEALTH_DECODER,
    INCIDENT_DECODER,
    INVENTORY_DECODER,
    METRIC_DECODER,
    DeadLetter,
    Decision,
    Event,
    HealthState,
    Incident,
    Inventory,
    MetricBatch,
)
from sinks import target as target_mod
from sinks.reads import Reads
from sinks.rows import (
    DECISION_COLUMNS,
    DLQ_COLUMNS,
    EVENT_COLUMNS,
    HEALTH_COLUMNS,
    INCIDENT_COLUMNS,
    INVENTORY_COLUMNS,
    PROCESS_COLUMNS,
    MetricIn,
    decision_row,
    dlq_row,
    event_row,
    health_row,
    incident_row,
    inventory_rows,
    metrics_in_block,
    process_rows,
)

log = logging.getLogger("gpuhealth.sink")

T = TypeVar("T")
DATABASE = "gpuhealth"

# ---------------------------------------------------------------- the store


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
        """Incident updates not stored yet, by (id, seq). ReplacingMergeTree would fold a repeat only at
        its next merge, and a plain count() (or the MV reading the insert) sees every copy until then."""
        if self.client is None:
            self.connect()
        fresh = list({(r[0], r[1]): r for r in rows}.values())
        if not fresh:
            return 0
        firsts = [r[INCIDENT_COLUMNS.index("first")] for r in fresh]  # the partition key: never changes
        found = self.client.query(
            f"SELECT DISTINCT id, seq FROM {self.database}.incidents WHERE first BETWEEN "
            f"fromUnixTimestamp64Nano({{lo:Int64}}) AND fromUnixTimestamp64Nano({{hi:Int64}}) "
            f"AND id IN {{ids:Array(String)}}",
            parameters={"lo": min(firsts), "hi": max(firsts), "ids": list({r[0] for r in fresh})},
        )
        stored = set(found.result_rows)
        fresh = [r for r in fresh if (r[0], r[1]) not in stored]
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
                raise QueryError(f"clickhouse {self.target.redacted()} not reachable: {_one_line(str(e))}") from e
        return await self.reads.query(sql, params, max_rows, timeout_s)


def _one_line(text: str) -> str:
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


# ---------------------------------------------------------------- read path over NATS


class QueryRequest(msgspec.Struct, kw_only=True):
    sql: str
    params: dict[str, Any] = {}
    max_rows: int = 10_000
    timeout_s: float = 10.0


class QueryResponse(msgspec.Struct, kw_only=True, omit_defaults=True):
    columns: list[str] = []
    rows: list[list[Any]] = []
    error: str | None = None
    refused: bool = False  # the gate refused the query: it never ran


MAX_REPLY_BYTES = 4 << 20


class SinkService:
    def __init__(self, nc: NATS, js: JetStreamContext, store: Store, *, durable: str = "sink", batch: int = 2000,
                 linger_s: float = 1.0) -> None:  # fmt: skip
        # Inserts of up to `batch` messages, at most `linger_s` after the first of them arrived:
        # ClickHouse wants a few large inserts a second per table, not one per message.
        self.batch, self.linger_s = batch, linger_s
        self.nc = nc
        self.js = js
        self.store = store
        self.durable = durable
        self.rows_written = 0
        self._answering: set[asyncio.Task[None]] = set()

    async def handle_events(self, events: list[Event]) -> None:
        self.rows_written += await self.store.run(
            self.store.insert_new, "events", EVENT_COLUMNS, [event_row(e) for e in events]
        )

    async def handle_health(self, states: list[HealthState]) -> None:
        self.rows_written += await self.store.run(
            self.store.insert_new, "health_states", HEALTH_COLUMNS, [health_row(h) for h in states]
        )

    async def handle_incidents(self, incidents: list[Incident]) -> None:
        rows = [incident_row(i) for i in incidents]
        self.rows_written += await self.store.run(self.store.insert_incidents, rows)

    async def handle_metrics(self, batches: list[MetricBatch]) -> None:
        # Many rows share a batch's id: a batch redelivered into the same fetch is dropped here, the lookup
        # by id cannot tell its rows from the first copy's.
        batches = list({b.id: b for b in batches}.values())
        processes = [row for b in batches for row in process_rows(b)]

        def write() -> int:
            n = self.store.insert_batches(batches)
            return n + self.store.insert_new("gpu_processes", PROCESS_COLUMNS, processes, rows_per_id=True)

        self.rows_written += await self.store.run(write)

    async def handle_inventory(self, items: list[Inventory]) -> None:
        rows = [row for inv in {i.id: i for i in items}.values() for row in inventory_rows(inv)]  # as metrics
        self.rows_written += await self.store.run(
            functools.partial(self.store.insert_new, "inventory", INVENTORY_COLUMNS, rows, rows_per_id=True)
        )

    async def handle_dlq(self, letters: list[DeadLetter]) -> None:
        self.rows_written += await self.store.run(
            self.store.insert_new, "dead_letters", DLQ_COLUMNS, [dlq_row(d) for d in letters]
        )

    async def handle_decisions(self, decisions: list[Decision]) -> None:
        self.rows_written += await self.store.run(
            self.store.insert_new, "responder_decisions", DECISION_COLUMNS, [decision_row(d) for d in decisions]
        )

    async def take_query(self, msg: Msg) -> None:
        """The subscription's callback. nats-py awaits its callbacks one at a time, so each query is
        answered in a task of its own: a long query does not hold up the next asker (sinks/reads.py
        bounds how many run and wait)."""
        task = asyncio.create_task(self.answer_query(msg))
        self._answering.add(task)
        task.add_done_callback(self._answering.discard)

    async def answer_query(self, msg: Msg) -> None:
        try:
            req = msgspec.json.decode(msg.data, type=QueryRequest)
            columns, rows = await self.store.read(req.sql, req.params, req.max_rows, req.timeout_s)
            reply = msgspec.json.encode(QueryResponse(columns=columns, rows=rows))
            if len(reply) > MAX_REPLY_BYTES:
                reply = msgspec.json.encode(
                    QueryResponse(error=f"result of {len(reply)} bytes is over {MAX_REPLY_BYTES}: add a LIMIT")
                )
        except (msgspec.DecodeError, msgspec.ValidationError) as e:
            reply = msgspec.json.encode(QueryResponse(error=f"bad query request: {e}"))
        except QueryError as e:
            reply = msgspec.json.encode(QueryResponse(error=str(e), refused=isinstance(e, QueryRefused)))
        await msg.respond(reply)

    async def run(self, stop: asyncio.Event) -> None:
        try:
            await self.store.run(self.store.connect)
        except Exception as e:  # ClickHouse away: the consumers retry with back-off and ack nothing
            log.warning("clickhouse %s not reachable yet (%s); holding every message until it is",
                        self.store.target.redacted(), _one_line(str(e)))  # fmt: skip
        await self.nc.subscribe(subjects.QUERY_SUBJECT, queue="gpuhealth-sink", cb=self.take_query)
        # (stream, decoder, handler): one durable consumer each, named after the stream.
        wiring: list[tuple[subjects.StreamSpec, Any, Any, str]] = [
            (subjects.EVENTS, EVENT_DECODER, self.handle_events, "sink"),
            (subjects.HEALTH, HEALTH_DECODER, self.handle_health, "sink"),
            (subjects.INCIDENTS, INCIDENT_DECODER, self.handle_incidents, "sink"),
            (subjects.METRICS, METRIC_DECODER, self.handle_metrics, "sink"),
            (subjects.INVENTORY, INVENTORY_DECODER, self.handle_inventory, "sink"),
            (subjects.DLQ, DLQ_DECODER, self.handle_dlq, "sink-dlq"),  # its own stage: a bad letter is not re-lettered
            (subjects.DECISIONS, DECISION_DECODER, self.handle_decisions, "sink"),
        ]
        consumers = [
            Consumer(
                self.js,
                stream=spec.name,
                durable=f"{self.durable}-{spec.name.split('_')[-1].lower()}",
                filter_subject=spec.subjects[0],
                decoder=decoder,
                stage=stage,
                handle=handle,
                batch=self.batch,
                linger_s=self.linger_s,
                outage=store_away,
            )
            for spec, decoder, handle, stage in wiring
        ]
        await asyncio.gather(*(c.run(stop) for c in consumers))
        for task in list(self._answering):  # a stopping sink answers no more
            task.cancel()
