"""The sink against the real ClickHouse engine (chDB) and a real nats-server."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import msgspec
import pytest
from nats.aio.client import Client as NATS

from gpuhealth import bus, client, subjects
from gpuhealth.errors import QueryError
from gpuhealth.events import GpuInfo, HealthState, Incident, Inventory, KernelEvent, MetricBatch, encode
from sinks.clickhouse import Store, migrations
from sinks.rows import EVENT_COLUMNS, event_row, incident_row
from sinks.service import SinkService

T0 = 1_763_700_000_000_000_000


def kernel_event(i: int) -> KernelEvent:
    return KernelEvent(
        id=f"ev-{i:06d}",
        time=T0 + i * 1000,
        cluster="c",
        node=f"node-{i % 3}",
        boot_id="b",
        source="kmsg",
        component="accelerator-nvidia-error-xid",
        kind="xid",
        xid=79,
        pci_bus_id="0000:04:00.0",
        message=f"NVRM: Xid (PCI:0000:04:00): 79 #{i}",
        seq=i,
    )


def counts(store: Store) -> tuple[int, int]:
    (row,) = store.client.query(f"SELECT count(), uniqExact(id) FROM {store.database}.events").result_rows
    return int(row[0]), int(row[1])


def test_migrations_are_recorded_and_rerunnable(store: Store) -> None:
    store.migrate()
    versions = store.client.query(f"SELECT version FROM {store.database}.schema_migrations").result_rows
    assert sorted(versions) == [(v,) for v, _ in migrations()]  # every file once, the second run adding none


def test_redelivered_events_in_batches_of_another_make_up_count_once(store: Store) -> None:
    rows = [event_row(kernel_event(i)) for i in range(100)]
    assert store.insert_new("events", EVENT_COLUMNS, rows[:60]) == 60
    # The unacknowledged tail comes back mixed with new events, and one event twice in a batch.
    assert store.insert_new("events", EVENT_COLUMNS, rows[40:] + rows[95:]) == 40
    assert store.insert_new("events", EVENT_COLUMNS, rows[::7]) == 0
    assert counts(store) == (100, 100)


def test_events_stamped_alike_are_each_stored_and_an_empty_batch_writes_nothing(store: Store) -> None:
    # Two lines in the same second (a syslog source): two events, told apart by id alone.
    rows = [event_row(msgspec.structs.replace(kernel_event(i), time=T0)) for i in (1, 2)]
    assert store.insert_new("events", EVENT_COLUMNS, rows) == 2
    assert store.insert_new("events", EVENT_COLUMNS, []) == 0
    assert counts(store) == (2, 2)


def test_stored_event_keeps_its_fields(store: Store) -> None:
    store.insert_new("events", EVENT_COLUMNS, [event_row(kernel_event(7))])
    (row,) = store.client.query(
        f"SELECT toUnixTimestamp64Nano(time), node, kind, xid, pci_bus_id, seq FROM {store.database}.events"
    ).result_rows
    assert row == (T0 + 7000, "node-1", "xid", 79, "0000:04:00.0", 7)


def test_queries_are_read_only_and_limited(store: Store) -> None:
    store.insert_new("events", EVENT_COLUMNS, [event_row(kernel_event(i)) for i in range(20)])
    cols, rows = store.query(
        f"SELECT count() AS n FROM {store.database}.events WHERE xid = {{x:UInt32}}", {"x": 79}, 100, 5
    )
    assert cols == ["n"] and rows == [[20]]
    with pytest.raises(QueryError, match="DROP is not a read"):
        store.query(f"DROP TABLE {store.database}.events", {}, 100, 5)
    with pytest.raises(QueryError, match="readonly"):  # past the gate, the engine still refuses it
        store.reads.run_checked(f"DROP TABLE {store.database}.events", {}, 100, 5)
    with pytest.raises(QueryError, match=r"(?i)limit"):
        store.query(f"SELECT * FROM {store.database}.events", {}, 5, 5)
    assert counts(store) == (20, 20)


async def test_sink_service_stores_the_stream_and_answers_sql(nc: NATS, store: Store) -> None:
    js = nc.jetstream()
    items = [(subjects.event_subject(e.node, "kmsg"), e.id, encode(e)) for e in map(kernel_event, range(500))]
    await bus.publish_batch(js, items)
    await js.publish(subjects.event_subject("node-9", "kmsg"), b"garbage", headers={"Nats-Msg-Id": "junk"})

    sink = SinkService(nc, js, store)
    stop = asyncio.Event()
    task = asyncio.create_task(sink.run(stop))
    async with asyncio.timeout(30):
        while counts(store)[0] < 500:
            await asyncio.sleep(0.1)
        while True:
            _, dead = await client.sql(nc, f"SELECT count() FROM {store.database}.dead_letters")
            if dead[0][0] >= 1:
                break
            await asyncio.sleep(0.1)
    cols, rows = await client.sql(
        nc, f"SELECT node, count() AS n FROM {store.database}.events GROUP BY node ORDER BY node"
    )
    assert cols == ["node", "n"] and rows == [["node-0", 167], ["node-1", 167], ["node-2", 166]]
    with pytest.raises(QueryError):
        await client.sql(nc, f"INSERT INTO {store.database}.events (id) VALUES ('x')")
    stop.set()
    await task
    assert counts(store) == (500, 500)


def test_a_read_only_query_leaves_the_writer_writable(store: Store) -> None:
    store.query("SELECT 1", {}, 10, 5)
    assert store.insert_new("events", EVENT_COLUMNS, [event_row(kernel_event(1))]) == 1


async def test_with_clickhouse_away_nothing_is_acked_and_a_restart_on_chdb_delivers_each_once(
    nc: NATS, store: Store
) -> None:
    js = nc.jetstream()
    events = [kernel_event(i) for i in range(50)]
    await bus.publish_batch(js, [(subjects.event_subject(e.node, "kmsg"), e.id, encode(e)) for e in events])

    away = SinkService(nc, js, Store("http://127.0.0.1:1"))  # nothing listens on port 1
    stop = asyncio.Event()
    task = asyncio.create_task(away.run(stop))
    await asyncio.sleep(3)  # several retries with back-off
    info = await js.consumer_info(subjects.EVENTS.name, "sink-events")
    stop.set()
    await task
    assert away.rows_written == 0
    assert info.ack_floor.stream_seq == 0 and info.num_ack_pending == 50  # held, none acknowledged
    assert (await js.stream_info(subjects.DLQ.name)).state.messages == 0  # an outage is nobody's poison

    back = SinkService(nc, js, store)
    stop = asyncio.Event()
    task = asyncio.create_task(back.run(stop))
    try:
        async with asyncio.timeout(30):
            while counts(store) != (50, 50):
                await asyncio.sleep(0.1)
    finally:
        stop.set()
        await task
    assert counts(store) == (50, 50)


def health(i: int, health: str, actions: list[str], reason: str, t: int) -> HealthState:
    return HealthState(id=f"h{i}", time=t, cluster="c", node="node-1", source="rules",
                       component="accelerator-nvidia-error-xid", entity="0000:04:00.0", health=health,  # type: ignore[arg-type]
                       reason=reason, repair_actions=actions, since=t)  # fmt: skip


async def test_actions_rollups_and_gpus_are_derived_as_rows_arrive(nc: NATS, store: Store) -> None:
    sink = SinkService(nc, nc.jetstream(), store)
    await sink.handle_health([
        health(1, "Unhealthy", ["REBOOT_SYSTEM"], "Xid 79: fallen off the bus", T0),
        health(2, "Healthy", [], "cleared by reboot (boot 1234abcd)", T0 + 10**9),
        health(3, "Unhealthy", ["HARDWARE_INSPECTION"], "Xid 79 (seen on 3 boots: escalated)", T0 + 2 * 10**9),
        health(4, "Healthy", [], "set healthy by ops: replaced", T0 + 3 * 10**9),
        health(5, "Healthy", [], "InfiniBand port ACTIVE", T0 + 4 * 10**9),  # first sight: not an action
    ])  # fmt: skip
    rows = store.client.query(f"SELECT event, action FROM {store.database}.actions ORDER BY time").result_rows
    assert rows == [("issued", "REBOOT_SYSTEM"), ("cleared", "reboot"), ("issued", "HARDWARE_INSPECTION"),
                    ("cleared", "set-healthy")]  # fmt: skip

    hour = 3600 * 10**9
    batches = [MetricBatch(id=f"m{i}", time=T0 + i * 600 * 10**9, cluster="c", node="node-1", source="nvml",
                           component="gpu", entity="0000:04:00.0", gpu_uuid="GPU-1",
                           values={"ecc_sbe_volatile": float(i), "temperature_gpu_c": 40.0 + i})
               for i in range(12)]  # fmt: skip
    await sink.handle_metrics(batches)
    hourly = store.client.query(
        f"SELECT hour, max(max_v), sum(n), argMaxMerge(last_v) FROM {store.database}.metrics_hourly "
        "WHERE name = 'ecc_sbe_volatile' GROUP BY hour ORDER BY hour"
    ).result_rows
    # T0 is 40 minutes into an hour: samples every 10 minutes fall 2, 6 and 4 to an hour.
    assert [(r[1], r[2], r[3]) for r in hourly] == [(1.0, 2, 1.0), (7.0, 6, 7.0), (11.0, 4, 11.0)]
    assert hourly[0][0].timestamp() * 10**9 == T0 // hour * hour

    inv = [Inventory(id=f"i{n}", time=T0 + n * hour, cluster="c", node=node, machine_id=f"m-{node}", source="nvml",
                     component="inventory", gpus=[GpuInfo(index=0, pci_bus_id="0000:04:00.0", uuid="GPU-1",
                                                          serial="1650123456789")])
           for n, node in enumerate(["node-1", "node-2"])]  # fmt: skip
    await sink.handle_inventory(inv)
    [(serial, nodes, first, last)] = store.client.query(
        f"SELECT serial, arraySort(nodes), first_seen, last_seen FROM {store.database}.gpus"
    ).result_rows
    assert serial == "1650123456789" and nodes == ["node-1", "node-2"] and first < last


def incident(seq: int, count: int) -> Incident:
    return Incident(id="inc-1", seq=seq, time=T0, cluster="c", node="node-1", source="rules",
                    component="accelerator-nvidia-error-xid", entity="0000:04:00.0", code="xid:79", severity="Fatal",
                    reason="Xid 79", count=count, first=T0, last=T0)  # fmt: skip


def test_a_batch_of_incident_updates_redelivered_adds_no_row_whatever_its_order(store: Store) -> None:
    # The table keeps an incident's latest update (ReplacingMergeTree by seq, which folds the older updates of
    # one insert as it writes them): an older update stored after a newer one is a second row until a merge.
    newer, older = incident_row(incident(2, count=5)), incident_row(incident(1, count=3))
    assert store.insert_incidents([newer, older, newer]) == 1  # rows written: the latest update
    assert store.insert_incidents([older, newer]) == 0  # the batch again, its ack lost in a crash
    assert store.insert_incidents([older]) == 0
    assert store.insert_incidents([]) == 0
    assert store.client.query(f"SELECT seq, count FROM {store.database}.incidents").result_rows == [(2, 5)]
    assert store.insert_incidents([incident_row(incident(3, count=9))]) == 1  # the incident grew again
    [latest] = store.client.query(f"SELECT max(seq), argMax(count, seq) FROM {store.database}.incidents").result_rows
    assert latest == (3, 9)


def test_a_batch_keeps_each_incidents_newest_update_whichever_comes_first(store: Store) -> None:
    def update(id: str, seq: int, count: int) -> list[Any]:
        return incident_row(msgspec.structs.replace(incident(seq, count), id=id))

    batch = [update("a", 2, 5), update("a", 1, 3), update("b", 1, 3), update("b", 2, 5)]
    assert store.insert_incidents(batch) == 2
    stored = store.client.query(f"SELECT id, seq, count FROM {store.database}.incidents ORDER BY id").result_rows
    assert stored == [("a", 2, 5), ("b", 2, 5)]


def test_a_read_only_store_creates_nothing(chdb_path: Path) -> None:
    """gpuctl reading the sink's store: a database name mistyped is an error to see, never a new empty store."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    s = Store(f"chdb://{chdb_path}", database=name, read_only=True)
    try:
        s.connect()
        assert s.client.query("SELECT count() FROM system.databases WHERE name = {n:String}",
                              parameters={"n": name}).result_rows == [(0,)]  # fmt: skip
    finally:
        s.client.command(f"DROP DATABASE IF EXISTS {name}")
        s.close()


def test_a_store_never_connected_connects_on_its_first_insert_or_query(chdb_path: Path) -> None:
    """ClickHouse away when the sink started: its first insert (or a gpuctl query) is what connects."""
    values = {"power_w": 300.0, "temperature_gpu_c": 40.0}
    for first_use in ("incidents", "metrics", "query"):
        s = Store(f"chdb://{chdb_path}", database=f"t_{uuid.uuid4().hex[:12]}")
        try:
            if first_use == "incidents":
                assert s.insert_incidents([incident_row(incident(1, count=1))]) == 1
            elif first_use == "metrics":
                polls = [MetricBatch(id=f"m{n}", time=T0, cluster="c", node="node-1", source="nvml", component="gpu",
                                     entity="0000:04:00.0", values=dict(list(values.items())[:n]))
                         for n in (0, 2)]  # fmt: skip
                assert s.insert_batches(polls[:1]) == 0  # samples written: a poll that read none adds none
                assert s.insert_batches(polls) == 2
            else:
                assert s.query("SELECT 1", {}, 10, 5)[1] == [[1]]
        finally:
            if s.client is not None:
                s.client.command(f"DROP DATABASE IF EXISTS {s.database}")
            s.close()


async def test_a_read_connects_a_store_never_connected_and_says_why_clickhouse_is_away(chdb_path: Path) -> None:
    # gpuctl's reads (sql, incidents, report) on a sink whose ClickHouse was away at start
    s = Store(f"chdb://{chdb_path}", database=f"t_{uuid.uuid4().hex[:12]}")
    try:
        sql = f"SELECT count() FROM {s.database}.events WHERE node = {{node:String}}"
        assert await s.read(sql, {"node": "node-1"}, 10, 5) == (["count()"], [[0]])  # migrated, then read
    finally:
        if s.client is not None:
            s.client.command(f"DROP DATABASE IF EXISTS {s.database}")
        s.close()
    with pytest.raises(QueryError) as away:
        await Store("http://127.0.0.1:1").read("SELECT 1", {}, 10, 5)  # nothing listens on port 1
    head, why = str(away.value).split(" not reachable: ", 1)
    assert head == "clickhouse http://default@127.0.0.1:1/gpuhealth"
    assert "port=1" in why and "\n" not in why  # the driver's own words, on one line


def test_metrics_ttl_is_configurable(chdb_path: Path) -> None:
    s = Store(f"chdb://{chdb_path}", database=f"t_{uuid.uuid4().hex[:12]}", metrics_ttl_days=30)
    s.connect()
    try:
        [(ddl,)] = s.client.query(f"SHOW CREATE TABLE {s.database}.metrics").result_rows
        assert "toIntervalDay(30)" in ddl or "INTERVAL 30 DAY" in ddl
    finally:
        s.client.command(f"DROP DATABASE IF EXISTS {s.database}")
        s.close()


async def test_a_trickle_of_events_is_inserted_in_few_batches_not_one_per_message(nc: NATS, store: Store) -> None:
    js = nc.jetstream()
    sink = SinkService(nc, js, store, linger_s=1.0)
    inserts: list[int] = []
    handle = sink.handle_events

    async def counted(events: list[Any]) -> None:
        inserts.append(len(events))
        await handle(events)

    sink.handle_events = counted  # type: ignore[method-assign]
    stop = asyncio.Event()
    task = asyncio.create_task(sink.run(stop))
    try:
        await asyncio.sleep(1.0)  # bound and waiting
        for i in range(30):  # 30 events at 20/s: 1.5 s
            e = kernel_event(1000 + i)
            await bus.publish_batch(js, [(subjects.event_subject(e.node, "kmsg"), e.id, encode(e))])
            await asyncio.sleep(0.05)
        async with asyncio.timeout(10):
            while counts(store) != (30, 30):
                await asyncio.sleep(0.1)
    finally:
        stop.set()
        await task
    assert sum(inserts) == 30 and len(inserts) <= 4, inserts  # about one insert a second, not 30


def test_the_embedded_engine_recounts_its_memory_once_a_second_not_ten_times(store: Store) -> None:
    """At rest ClickHouse's memory worker was a sixth of the whole stack's CPU (bench/idle.py)."""
    store.connect()
    rows = store.client.query(
        "SELECT value FROM system.server_settings WHERE name = 'memory_worker_period_ms'"
    ).result_rows
    assert rows == [("1000",)]
