"""The ClickHouse sink against its building blocks, in one run on embedded NATS and chDB.

- sink_events_per_s vs raw_js_msgs_per_s: kernel events from JetStream into ClickHouse (count
  read back) against raw JetStream publish + pull/ack of the same messages; ratio goal >= 0.6.
- sink_samples_per_s vs raw_chdb_rows_per_s: metric samples, 36 to a message (one GPU's poll),
  into ClickHouse against inserting the same rows straight into chDB in 10,000-row batches;
  ratio goal >= 0.5.
- bytes_per_sample, bytes_per_event: on disk after OPTIMIZE FINAL (goal <= 12 B a sample).
- report_s: `gpuctl report weekly`'s queries over REPORT_SAMPLES metric samples and
  REPORT_EVENTS events generated in an embedded store (goal <= 3 s); run in a child process
  because chDB opens one directory per process.

Prints its figures as one JSON object on the last line.

    python bench/sink.py [EVENTS] [SAMPLES] [REPORT_SAMPLES] [REPORT_EVENTS]
    (defaults 20000, 1000000, 100000000, 10000000)
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gpuhealth import bus, subjects
from gpuhealth.events import MetricBatch, derived_id, encode
from gpuhealth.natsd import EmbeddedNats
from sinks.clickhouse import Store
from sinks.rows import METRIC_COLUMNS, metric_rows
from sinks.service import SinkService

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pipeline import kernel_event, raw_jetstream

# Recent, or the metrics table's TTL (180 days) would drop the rows as they arrive.
T0 = (time.time_ns() - 7 * 86400 * 10**9) // 10**9 * 10**9
NAMES = [f"m{i:02d}" for i in range(36)]


def _noise(*parts: int) -> float:
    """Deterministic noise in [0, 1): the same run measures the same bytes."""
    return int.from_bytes(hashlib.blake2b(repr(parts).encode(), digest_size=4).digest(), "big") / 2**32


def metric_batch(i: int) -> MetricBatch:
    """GPU i % 64's poll number i // 64, every 10 s, shaped like an NVML poll: 12 slow integer gauges
    (temperatures, clocks), 12 noisy readings at milli resolution (power, currents), 6 utilisation
    percentages that jump, 6 counters that rarely move (ECC, retired rows, replays)."""
    gpu, poll = i % 64, i // 64
    t = T0 + poll * 10_000_000_000
    values = {}
    for k, name in enumerate(NAMES):
        if k < 12:
            v = float(round(45 + 15 * math.sin((poll + 7 * gpu + k) / 60)))
        elif k < 24:
            v = round(300 + 400 * _noise(gpu, poll, k), 3)
        elif k < 30:
            v = float(int(100 * _noise(gpu, poll, k)))
        else:
            v = float(gpu + k + poll // 1000)
        values[name] = v
    return MetricBatch(id=derived_id(t, gpu, poll), time=t, cluster="bench", node=f"node-{gpu // 8}", source="nvml",
                       component="gpu", entity=f"0000:{0x18 + gpu % 8:02x}:00.0", gpu_uuid=f"GPU-{gpu}",
                       values=values)  # fmt: skip


async def publish_all(js: object, items: list[tuple[str, str, bytes]]) -> None:
    for i in range(0, len(items), 5000):
        await bus.publish_batch(js, items[i : i + 5000], timeout=60)  # type: ignore[arg-type]


async def sink_rate(url: str, store: Store, items: list[tuple[str, str, bytes]], table: str, want: int) -> float:
    nc = await bus.connect(url, "bench-sink")
    js = nc.jetstream()
    await bus.provision(js)
    await publish_all(js, items)  # already in the stream: this measures the sink draining it
    stop = asyncio.Event()
    start = time.perf_counter()
    sink = SinkService(nc, js, store, durable="bench")  # one durable for both phases: nothing re-read
    task = asyncio.create_task(sink.run(stop))
    # Rows ClickHouse accepted, as the sink counts them (a count() every few ms would queue on the
    # store's one thread between inserts); checked against count() once at the end.
    deadline = start + 600
    while sink.rows_written < want:
        if time.perf_counter() > deadline:
            raise SystemExit(f"{table}: {sink.rows_written} of {want} rows after 600 s")
        await asyncio.sleep(0.005)
    elapsed = time.perf_counter() - start
    _, [[n]] = await store.run(store.query, f"SELECT count() FROM gpuhealth.{table}", {}, 10, 30)
    assert n == want, (table, n, want)
    stop.set()
    await task
    await nc.close()
    return want / elapsed


def raw_chdb_rate(store: Store, rows: list[list[object]]) -> float:
    store.client.command("CREATE TABLE IF NOT EXISTS gpuhealth.raw_metrics AS gpuhealth.metrics")
    start = time.perf_counter()
    for i in range(0, len(rows), 10_000):
        store.client.insert("gpuhealth.raw_metrics", rows[i : i + 10_000], column_names=METRIC_COLUMNS)
    return len(rows) / (time.perf_counter() - start)


def bytes_per_row(store: Store, table: str) -> float:
    store.client.command(f"OPTIMIZE TABLE gpuhealth.{table} FINAL")
    [[size, rows]] = store.client.query(
        f"SELECT sum(bytes_on_disk), sum(rows) FROM system.parts WHERE active AND database = 'gpuhealth' "
        f"AND table = '{table}'"
    ).result_rows
    return size / rows


def report_phase(path: str, samples: int, events: int) -> None:
    """Child process: generate the week with bulk rows, then time the report's queries."""
    from sinks.generate import generate
    from sinks.report import collect, week_bounds

    store = Store(f"chdb://{path}")
    t0 = time.perf_counter()
    start, end, week = week_bounds(None)  # the last complete week: inside the metrics TTL
    generate(store, week, bulk_metrics=samples, bulk_events=events)
    generated = time.perf_counter() - t0

    async def query(sql: str, params: dict[str, object]) -> tuple[list[str], list[list[object]]]:
        return await store.run(store.query, sql, params, 1_000_000, 300)

    asyncio.run(collect(query, start, end))  # warm: the first touch of each part reads its marks
    t1 = time.perf_counter()
    asyncio.run(collect(query, start, end))
    print(json.dumps({"report_s": round(time.perf_counter() - t1, 2), "generate_s": round(generated, 1)}))
    store.close()


async def main(n_events: int, n_samples: int, report_samples: int, report_events: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        nats = EmbeddedNats(root / "nats", auth=None)
        url = await nats.start()
        raw = await raw_jetstream(url, n_events, encode(kernel_event(1)))
        print("raw jetstream done", file=sys.stderr)
        store = Store(f"chdb://{root / 'clickhouse'}")
        await store.run(store.connect)
        events = [kernel_event(i) for i in range(n_events)]
        ev_items = [(subjects.event_subject(e.node, "kmsg"), e.id, encode(e)) for e in events]
        sink_events = await sink_rate(url, store, ev_items, "events", n_events)
        print("sink events done", file=sys.stderr)
        batches = [metric_batch(i) for i in range(n_samples // len(NAMES))]
        m_items = [(subjects.metric_subject(b.node, "nvml"), b.id, encode(b)) for b in batches]
        sink_samples = await sink_rate(url, store, m_items, "metrics", len(batches) * len(NAMES))
        rows = [row for b in batches for row in metric_rows(b)]
        raw_chdb = await store.run(raw_chdb_rate, store, rows)
        per_sample = await store.run(bytes_per_row, store, "metrics")
        per_event = await store.run(bytes_per_row, store, "events")
        store.close()
        await nats.stop()
        child = subprocess.run(  # noqa: ASYNC221  # nothing else runs on this loop now
            [sys.executable, __file__, "--report-phase", str(root / "report"), str(report_samples), str(report_events)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        report = json.loads(child.stdout.strip().splitlines()[-1])
    figures = {
        "raw_js_msgs_per_s": round(raw),
        "sink_events_per_s": round(sink_events),
        "events_ratio": round(sink_events / raw, 2),
        "raw_chdb_rows_per_s": round(raw_chdb),
        "sink_samples_per_s": round(sink_samples),
        "samples_ratio": round(sink_samples / raw_chdb, 2),
        "bytes_per_sample": round(per_sample, 2),
        "bytes_per_event": round(per_event, 1),
        "report_samples": report_samples,
        "report_events": report_events,
        "report_s": report["report_s"],
        "report_generate_s": report["generate_s"],
        "goals": {"events_ratio": 0.6, "samples_ratio": 0.5, "bytes_per_sample": 12, "report_s": 3},
    }
    for name, value in figures.items():
        print(f"{name:22} {value}")
    print(json.dumps(figures))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--report-phase"]:
        report_phase(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        args = [int(a) for a in sys.argv[1:]]
        asyncio.run(main(*(args + [20_000, 1_000_000, 100_000_000, 10_000_000][len(args) :])))
