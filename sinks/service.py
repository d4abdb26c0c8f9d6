"""The sink as a service: one durable consumer a stream into the store (sinks/clickhouse.py), and the
read-only SQL it answers on gpuhealth.v1.query.sql (sinks/reads.py runs it)."""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import Any

import msgspec
import nats.errors
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from gpuhealth import subjects
from gpuhealth.consumer import Consumer
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
from gpuhealth.telemetry import Metrics
from sinks.clickhouse import Store, one_line, store_away
from sinks.rows import (
    DECISION_COLUMNS,
    DLQ_COLUMNS,
    EVENT_COLUMNS,
    HEALTH_COLUMNS,
    INVENTORY_COLUMNS,
    PROCESS_COLUMNS,
    decision_row,
    dlq_row,
    event_row,
    health_row,
    incident_row,
    inventory_rows,
    process_rows,
)

log = logging.getLogger("gpuhealth.sink")


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
# Metric batches wait longer for company than events: they serve reports, not verdicts (the agent's own
# /metrics and API have the live values). A node at rest sends one batch per poll; stored one at a time,
# each is an insert into three tables and their merges, most of what the sink cost at rest.
METRICS_LINGER_S = 30.0


class SinkService:
    def __init__(self, nc: NATS, js: JetStreamContext, store: Store, *, durable: str = "sink", batch: int = 2000,
                 linger_s: float = 1.0, metrics_linger_s: float = METRICS_LINGER_S,
                 metrics: Metrics | None = None) -> None:  # fmt: skip
        self.metrics = metrics  # its process's instruments (gpuhealth/telemetry.py)
        # Inserts of up to `batch` messages, at most `linger_s` after the first of them arrived:
        # ClickHouse wants a few large inserts a second per table, not one per message.
        self.batch, self.linger_s, self.metrics_linger_s = batch, linger_s, metrics_linger_s
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
        bounds how many run and wait). A query with no reply subject is dropped unread: its answer would
        go nowhere, and a flood of them would hold the readers for nothing."""
        if not msg.reply:
            log.debug("a query on %s with no reply subject: not run", msg.subject)
            return
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
        try:
            await msg.respond(reply)
        except nats.errors.Error as e:  # the sink's own connection closing: the asker gets no answer either way
            log.info("a query's answer was not sent: %s", one_line(str(e)))

    async def run(self, stop: asyncio.Event) -> None:
        try:
            await self.store.run(self.store.connect)
        except Exception as e:  # ClickHouse away: the consumers retry with back-off and ack nothing
            log.warning("clickhouse %s not reachable yet (%s); holding every message until it is",
                        self.store.target.redacted(), one_line(str(e)))  # fmt: skip
        await self.nc.subscribe(subjects.QUERY_SUBJECT, queue="gpuhealth-sink", cb=self.take_query)
        # (stream, decoder, handler): one durable consumer each, named after the stream.
        wiring: list[tuple[subjects.StreamSpec, Any, Any, str, float]] = [
            (subjects.EVENTS, EVENT_DECODER, self.handle_events, "sink", self.linger_s),
            (subjects.HEALTH, HEALTH_DECODER, self.handle_health, "sink", self.linger_s),
            (subjects.INCIDENTS, INCIDENT_DECODER, self.handle_incidents, "sink", self.linger_s),
            (subjects.METRICS, METRIC_DECODER, self.handle_metrics, "sink", self.metrics_linger_s),
            (subjects.INVENTORY, INVENTORY_DECODER, self.handle_inventory, "sink", self.linger_s),
            # Its own stage: a bad letter is not re-lettered.
            (subjects.DLQ, DLQ_DECODER, self.handle_dlq, "sink-dlq", self.linger_s),
            (subjects.DECISIONS, DECISION_DECODER, self.handle_decisions, "sink", self.linger_s),
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
                linger_s=linger_s,
                outage=store_away,
                metrics=self.metrics,
            )
            for spec, decoder, handle, stage, linger_s in wiring
        ]
        await asyncio.gather(*(c.run(stop) for c in consumers))
        for task in list(self._answering):  # a stopping sink answers no more
            task.cancel()
