"""The query path as anyone on the bus meets it: a raw request on gpuhealth.v1.query.sql to a running sink.

Every probe that once read or wrote files as the sink's user, fetched addresses or opened connections
for it, changed the next query's session, or held the writer's thread is refused or cut off, and
leaves no trace: no file, no connection, no setting, no pause in ingestion."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import nats.errors
import psutil
import pytest
from nats.aio.client import Client as NATS

from gpuhealth import bus, client, subjects
from gpuhealth.errors import QueryError, QueryRefused
from gpuhealth.events import encode
from sinks.clickhouse import Store
from sinks.reads import WAITING, Reads
from sinks.rows import EVENT_COLUMNS, event_row
from sinks.service import SinkService
from tests.integration.test_sink import kernel_event


async def ask(nc: NATS, sql: str, **fields: Any) -> dict[str, Any]:
    """The request any client of the bus can send, without gpuctl's client in between."""
    reply = await nc.request(subjects.QUERY_SUBJECT, msgspec.json.encode({"sql": sql, **fields}), timeout=60)
    body: dict[str, Any] = msgspec.json.decode(reply.data)
    return body


@pytest.fixture
async def sink(nc: NATS, store: Store) -> AsyncIterator[SinkService]:
    service = SinkService(nc, nc.jetstream(), store, linger_s=0.2, metrics_linger_s=0.2)
    stop = asyncio.Event()
    task = asyncio.create_task(service.run(stop))
    async with asyncio.timeout(30):
        while True:
            try:
                if "rows" in await ask(nc, "SELECT 1"):
                    break
            except nats.errors.NoRespondersError:  # not subscribed yet
                await asyncio.sleep(0.1)
    try:
        yield service
    finally:
        stop.set()
        await task


@pytest.fixture
async def listener() -> AsyncIterator[tuple[int, list[bytes]]]:
    """A TCP port on loopback that records what connects to it: where url(), s3() and remote() would go."""
    seen: list[bytes] = []

    async def record(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await reader.read(200))
        writer.close()

    server = await asyncio.start_server(record, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1], seen
    finally:
        server.close()


async def test_file_network_and_write_probes_are_refused_and_leave_no_trace(
    nc: NATS, sink: SinkService, tmp_path: Path, listener: tuple[int, list[bytes]]
) -> None:
    port, connections = listener
    secret = tmp_path / "shadow"
    secret.write_text("root:s3cr3t-hash:19000:0:99999:7:::\n")
    written = [tmp_path / "cron-x", tmp_path / "outfile"]
    probes = [
        f"SELECT * FROM file('{secret}', 'LineAsString')",
        f"SELECT file('{secret}')",
        f"INSERT INTO FUNCTION file('{written[0]}', 'RawBLOB') SELECT '* * * * * root id'",
        f"SELECT 'x' INTO OUTFILE '{written[1]}'",
        f"SELECT * FROM url('http://127.0.0.1:{port}/latest/meta-data', 'LineAsString')",
        f"SELECT * FROM s3('http://127.0.0.1:{port}/bucket/key.csv', 'CSV')",
        f"SELECT * FROM remote('127.0.0.1:{port}', system.one)",
        f"SELECT * FROM remoteSecure('127.0.0.1:{port}', system.one)",
    ]
    for sql in probes:
        body = await ask(nc, sql)
        assert body.get("refused") is True and body["error"].startswith("refused: "), (sql, body)
        assert "s3cr3t" not in msgspec.json.encode(body).decode()
    await asyncio.sleep(0.5)
    assert connections == [] and not any(p.exists() for p in written)
    with pytest.raises(QueryRefused, match="file reaches outside"):  # gpuctl's client says refused too
        await client.sql(nc, f"SELECT * FROM file('{secret}', 'LineAsString')")


async def test_a_set_changes_nothing_for_the_next_query(nc: NATS, sink: SinkService, store: Store) -> None:
    store.insert_new("events", EVENT_COLUMNS, [event_row(kernel_event(i)) for i in range(20)])
    for sql in ("SET limit = 1", f"SET additional_table_filters = {{'{store.database}.events': 'xid = 0'}}"):
        assert (await ask(nc, sql)).get("refused") is True
    body = await ask(nc, "SELECT id FROM events ORDER BY id")  # unqualified: the sink's database
    assert len(body["rows"]) == 20


def test_a_setting_ends_with_its_session_even_if_one_slipped_through(store: Store) -> None:
    import clickhouse_connect

    shared = clickhouse_connect.get_client(**store.target.client_kwargs())
    try:  # what a session shared between queries did: one asker's SET was every later asker's
        shared.command("SET limit = 1")
        assert len(shared.query("SELECT number FROM numbers(5)").result_rows) == 1
    finally:
        shared.close()
    # readonly=1 lets `limit` be SET: had the gate passed it, it would have run, and ended with its session.
    store.reads.run_checked("SET limit = 1", {}, 10, 5)
    assert len(store.reads.run_checked("SELECT number FROM numbers(5)", {}, 10, 5)[1]) == 5


async def test_heavy_and_huge_queries_are_refused_or_cut_off_with_the_sink_rss_bounded(
    nc: NATS, sink: SinkService, store: Store
) -> None:
    rss = psutil.Process().memory_info().rss
    t = time.monotonic()
    heavy = await ask(nc, "SELECT count() FROM numbers(1e12)", timeout_s=60)
    assert "max_rows_to_read" in heavy["error"] and time.monotonic() - t < 10
    for sql in (
        "SELECT count() FROM numbers(1e12) SETTINGS max_execution_time = 0",
        "SELECT number FROM numbers(1.5e7) SETTINGS max_result_rows = 0",
    ):
        assert "SETTINGS" in (await ask(nc, sql))["error"]
    huge = await ask(nc, "SELECT number FROM numbers(1.5e7)", max_rows=10**9)  # asks for more than the cap
    assert "TOO_MANY_ROWS_OR_BYTES" in huge["error"]
    with pytest.raises(QueryError, match="readonly"):  # had SETTINGS slipped past the gate
        store.reads.run_checked("SELECT number FROM numbers(1.5e7) SETTINGS max_result_rows = 0", {}, 10**9, 30)
    assert psutil.Process().memory_info().rss - rss < 300 << 20


# The heaviest query the path accepts: it reads 40,200 rows, far under every read limit, and counts
# 8e10 combinations of them on one core until its time is up.
HEAVIEST = "SELECT count() FROM numbers(20000) AS a, numbers(20000) AS b, numbers(200) AS c"


async def test_ingestion_goes_on_while_the_heaviest_accepted_query_runs(nc: NATS, sink: SinkService) -> None:
    js = nc.jetstream()
    published = 0

    async def publish(seconds: float) -> None:
        nonlocal published
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            events = [kernel_event(published + i) for i in range(20)]
            await bus.publish_batch(js, [(subjects.event_subject(e.node, "kmsg"), e.id, encode(e)) for e in events])
            published += len(events)
            await asyncio.sleep(0.05)

    async def stored_while(work: Any) -> tuple[int, int]:
        """Events published and events stored while the work ran (stored trails published by a linger)."""
        before_pub, before = published, sink.rows_written
        await work
        return published - before_pub, sink.rows_written - before

    feeding = asyncio.create_task(publish(3600))
    try:
        sent_alone, stored_alone = await stored_while(asyncio.sleep(5))
        t = time.monotonic()
        query = asyncio.create_task(ask(nc, HEAVIEST, timeout_s=8))
        sent, stored = await stored_while(query)
        took = time.monotonic() - t
    finally:
        feeding.cancel()
    body = query.result()
    assert "TIMEOUT_EXCEEDED" in body["error"] and took < 8 + 10  # cut off at its timeout
    assert stored_alone >= 0.8 * sent_alone and sent > 0
    assert stored >= 0.8 * sent, (sent, stored)  # the writer's thread was never the query's


async def test_a_long_query_does_not_hold_up_the_next_asker(nc: NATS, sink: SinkService) -> None:
    long = asyncio.create_task(ask(nc, HEAVIEST, timeout_s=8))
    await asyncio.sleep(1)
    t = time.monotonic()
    assert (await ask(nc, "SELECT count() FROM events"))["rows"] == [[0]]
    assert time.monotonic() - t < 3 and not long.done()
    assert "TIMEOUT_EXCEEDED" in (await long)["error"]


async def test_a_query_nobody_waits_for_is_not_run(nc: NATS, sink: SinkService) -> None:
    """A publish with no reply subject: its answer would go nowhere, so the engine must not spend a reader
    on it; three of them would otherwise hold both readers for 8 s."""
    for _ in range(3):
        await nc.publish(subjects.QUERY_SUBJECT, msgspec.json.encode({"sql": HEAVIEST, "timeout_s": 8}))
    await nc.flush()
    await asyncio.sleep(0.5)
    t = time.monotonic()
    assert (await ask(nc, "SELECT count() FROM events"))["rows"] == [[0]]
    assert time.monotonic() - t < 3


async def test_a_flood_of_queries_waits_in_a_bounded_line_and_the_rest_are_turned_away(store: Store) -> None:
    reads = Reads(store.target, readers=1)
    try:
        running = asyncio.create_task(reads.query(HEAVIEST, {}, 10, 3))
        await asyncio.sleep(0.5)
        waiting = [asyncio.create_task(reads.query("SELECT 1", {}, 10, 5)) for _ in range(WAITING)]
        await asyncio.sleep(0.1)
        with pytest.raises(QueryError, match=f"has {WAITING} queries waiting"):
            await reads.query("SELECT 1", {}, 10, 5)
        assert [await w for w in waiting] == [(["1"], [[1]])] * WAITING  # each answered once its turn came
        with pytest.raises(QueryError, match="TIMEOUT_EXCEEDED"):
            await running
    finally:
        reads.close()


# Ways ClickHouse has to reach a table by name; each must be refused, or read nothing of it.
SNEAKY = [
    "SELECT * FROM {o}.canary",
    "SELECT * FROM `{o}`.`canary`",
    "SELECT * FROM {o} . canary",
    "SELECT * FROM {o}./* c */canary",
    "SELECT 'CANARY' IN {o}.canary",
    "SELECT 'CANARY' IN ({o}.canary)",
    "SELECT 'CANARY' GLOBAL NOT IN {o}.canary",
    "SELECT globalIn('CANARY', {o}.canary)",
    "SELECT notIn('CANARY', {o}.canary)",
    "SELECT `in`('CANARY', {o}.canary)",
    "SELECT (SELECT any(v) FROM {o}.canary)",
    "WITH c AS (SELECT v FROM {o}.canary) SELECT * FROM c",
    "SELECT * FROM (SELECT 1) AS t JOIN {o}.canary ON 1",
    "SELECT * FROM merge('{o}', '.*')",
    "SELECT * FROM merge(REGEXP('{o}'), '.*')",
    "SELECT joinGet('{o}.canary', 'v', 1)",
    "SELECT * FROM system.tables WHERE database = '{o}'",
    "SELECT * FROM system.columns WHERE database = '{o}'",
    "SHOW TABLES FROM {o}",
    "SHOW CREATE TABLE {o}.canary",
    "SHOW CREATE DATABASE {o}",
    "DESCRIBE {o}.canary",
    "EXPLAIN SELECT * FROM {o}.canary",
    "SELECT * FROM remote('127.0.0.1', {o}.canary)",
    "SELECT * FROM view(SELECT * FROM {o}.canary)",
    "SELECT * FROM {{db:Identifier}}.canary",
]


@pytest.mark.parametrize("sql", SNEAKY)
def test_another_database_stays_out_of_reach(store: Store, sql: str) -> None:
    other = f"{store.database}_other"
    store.client.command(f"CREATE DATABASE IF NOT EXISTS {other}")
    try:
        store.client.command(f"CREATE TABLE IF NOT EXISTS {other}.canary (v String) ENGINE = Memory")
        store.client.command(f"INSERT INTO {other}.canary VALUES ('CANARY')")
        try:
            _, rows = store.query(sql.format(o=other), {"db": other}, 100, 5)
        except QueryRefused:
            return
        except QueryError as e:  # past the gate, the engine failed it: nothing of the canary came back
            assert "CANARY" not in str(e)
            return
        assert "CANARY" not in repr(rows) and other not in repr(rows), rows
    finally:
        store.client.command(f"DROP DATABASE IF EXISTS {other}")
