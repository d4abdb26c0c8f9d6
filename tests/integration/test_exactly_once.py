"""Every table counts a message once, however it is redelivered: alone, again, or inside a batch of another
make-up (with itself twice in it). The real ClickHouse engine; a plain count(), no FINAL."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from gpuhealth import subjects
from gpuhealth.consumer import Consumer
from gpuhealth.events import (
    DLQ_DECODER,
    EVENT_DECODER,
    DeadLetter,
    GpuInfo,
    GpuProcess,
    HealthState,
    Incident,
    Inventory,
    KernelEvent,
    MetricBatch,
)
from sinks.clickhouse import Store
from sinks.rows import MetricIn, metrics_in_block
from sinks.service import SinkService

NOW = time.time_ns() // 10**9 * 10**9  # metrics older than their TTL are dropped as they are inserted
N = 10
DAY_NS = 86_400 * 10**9


def health(i: int) -> HealthState:
    return HealthState(
        id=f"h{i}",
        time=NOW + i,
        cluster="c",
        node="n",
        source="rules",
        component="xid",
        entity="0000:04:00.0",
        health="Unhealthy",
        reason="Xid 79",
        repair_actions=["RESET_GPU"],
        since=NOW + i,
    )


def metrics(i: int) -> MetricBatch:
    return MetricBatch(
        id=f"m{i}",
        time=NOW + i,
        cluster="c",
        node="n",
        source="nvml",
        component="gpu",
        entity="0000:04:00.0",
        values={"power_w": 300.0, "temperature_gpu_c": 40.0},
        processes=[GpuProcess(pid=1, name="a"), GpuProcess(pid=2, name="b")],
    )


def inventory(i: int) -> Inventory:
    return Inventory(
        id=f"i{i}",
        time=NOW + i,
        cluster="c",
        node="n",
        source="nvml",
        component="inventory",
        gpus=[
            GpuInfo(index=0, pci_bus_id="0000:04:00.0", uuid="GPU-0"),
            GpuInfo(index=1, pci_bus_id="0000:05:00.0", uuid="GPU-1"),
        ],
    )


def incident(i: int) -> Incident:
    # One update each: the table keeps the latest update of an incident (ReplacingMergeTree by seq), so two
    # updates of one are one row or two depending on merges; a repeat of an update must never be a row.
    return Incident(
        id=f"inc{i}",
        seq=3,
        time=NOW + i,
        cluster="c",
        node="n",
        source="rules",
        component="xid",
        entity="0000:04:00.0",
        code="79",
        severity="Fatal",
        reason="r",
        count=3,
        first=NOW,
        last=NOW + i,
    )


def dead_letter(i: int) -> DeadLetter:
    return DeadLetter(id=f"d{i}", time=NOW + i, stage="sink", subject="gpuhealth.v1.event.n.kmsg.1", reason="bad")


# table → (message i, the handler, rows one message makes there)
CASES: dict[str, tuple[Callable[[int], Any], str, int]] = {
    "health_states": (health, "handle_health", 1),
    "actions": (health, "handle_health", 1),  # derived from health_states as rows arrive
    "metrics": (metrics, "handle_metrics", 2),
    "gpu_processes": (metrics, "handle_metrics", 2),
    "inventory": (inventory, "handle_inventory", 2),
    "incidents": (incident, "handle_incidents", 1),
    "dead_letters": (dead_letter, "handle_dlq", 1),
}


def count(store: Store, table: str) -> int:
    return int(store.client.query(f"SELECT count() FROM {store.database}.{table}").result_rows[0][0])


async def redeliver(handle: Callable[[list[Any]], Awaitable[None]], items: list[Any]) -> None:
    """What at-least-once delivery may do: a batch, its unacknowledged tail again with new messages and with
    one message twice, single messages again, and every third one."""
    await handle(items[:6])
    await handle(items[3:] + items[8:])
    await handle([items[1]])
    await handle([items[9], items[9]])
    await handle(items[::3])


@pytest.mark.parametrize("table", sorted(CASES))
async def test_a_redelivered_message_adds_no_row(nc: NATS, store: Store, table: str) -> None:
    make, handler, rows_per_message = CASES[table]
    sink = SinkService(nc, nc.jetstream(), store)
    await redeliver(getattr(sink, handler), [make(i) for i in range(N)])
    assert count(store, table) == N * rows_per_message


async def test_a_message_dead_lettered_twice_is_one_letter(nc: NATS, store: Store) -> None:
    """Redelivered after its letter was published but before its ack: the same letter again (same id and time),
    which the sink stores once even past JetStream's duplicate window."""
    js = nc.jetstream()
    await js.publish(subjects.event_subject("n", "kmsg"), b"\xc1 not msgpack", headers={"Nats-Msg-Id": "g1"})
    published: list[DeadLetter] = []

    async def capture(m: Msg) -> None:  # a core subscription sees every publish, duplicates too
        published.append(DLQ_DECODER.decode(m.data))

    await nc.subscribe("gpuhealth.v1.dlq.>", cb=capture)

    async def handle(items: list[KernelEvent]) -> None:
        pass

    for durable in ("first", "second"):  # two deliveries of one message to the same stage
        consumer = Consumer(
            js,
            stream=subjects.EVENTS.name,
            durable=durable,
            filter_subject="gpuhealth.v1.event.>",
            decoder=EVENT_DECODER,
            stage="sink",
            handle=handle,
        )
        stop = asyncio.Event()
        task = asyncio.create_task(consumer.run(stop))
        async with asyncio.timeout(10):
            while consumer.dead_lettered == 0:
                await asyncio.sleep(0.05)
        stop.set()
        await task
    await nc.flush()
    async with asyncio.timeout(5):
        while len(published) < 2:
            await asyncio.sleep(0.05)
    sink = SinkService(nc, js, store)
    await sink.handle_dlq(published[:1])
    await sink.handle_dlq(published)
    assert count(store, "dead_letters") == 1


@pytest.mark.parametrize("age_days", [0, 3])
async def test_a_batch_redelivered_after_its_raw_samples_expired_counts_once_in_the_hourly_rollup(
    nc: NATS, chdb_path: Path, age_days: int
) -> None:
    # The finding: a batch is recognised by its raw samples, which the metrics TTL drops (at once, for a batch
    # older than the TTL when it comes: a node's clock behind, a long outage), while the hourly rollup keeps
    # what every insert fed it. Redelivered, such a batch was counted again there.
    store = Store(f"chdb://{chdb_path}", database=f"t_{uuid.uuid4().hex[:12]}", metrics_ttl_days=1)
    store.connect()
    try:
        sink = SinkService(nc, nc.jetstream(), store)
        old = [msgspec.structs.replace(metrics(i), time=NOW - age_days * DAY_NS + i) for i in range(N)]
        await redeliver(sink.handle_metrics, old)
        store.client.command(f"OPTIMIZE TABLE {store.database}.metrics FINAL")  # the TTL applied, as merges do
        await redeliver(sink.handle_metrics, old)
        rolled_up = store.client.query(f"SELECT sum(n) FROM {store.database}.metrics_hourly").result_rows[0][0]
        assert rolled_up == N * 2  # two values a batch
        assert count(store, "metrics") == (N * 2 if age_days == 0 else 0)
    finally:
        store.client.command(f"DROP DATABASE IF EXISTS {store.database}")
        store.close()


async def test_batches_stored_before_the_ledger_existed_are_recognised_after_the_upgrade(
    nc: NATS, store: Store
) -> None:
    # A store of schema v6: its batches are known only by their samples when v7 brings the ledger.
    db = store.database
    store.client.command(f"DROP VIEW {db}.metric_batches_mv")
    store.client.command(f"DROP TABLE {db}.metric_batches")
    store.client.command(f"ALTER TABLE {db}.schema_migrations DELETE WHERE version = 7 SETTINGS mutations_sync = 1")
    store.client.raw_insert(
        f"{db}.metrics_in",
        list(MetricIn.__struct_fields__),
        metrics_in_block([metrics(i) for i in range(N)]),
        fmt="JSONEachRow",
    )  # as v6 wrote them
    store.migrate()
    sink = SinkService(nc, nc.jetstream(), store)
    await redeliver(sink.handle_metrics, [metrics(i) for i in range(N)])
    assert count(store, "metrics") == N * 2
    assert store.client.query(f"SELECT sum(n) FROM {db}.metrics_hourly").result_rows[0][0] == N * 2
