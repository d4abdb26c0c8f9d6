"""The pipeline against its building blocks, in one run on embedded NATS and chDB.

- raw_js_msgs_per_s: raw JetStream with our message size: publish_async with up to
  1,000 in flight and, concurrently, a pull consumer doing fetch(1000) + ack.
- pipeline_events_per_s: kernel events published to the event stream → rules
  service → rows in ClickHouse (count read back), rules and sink running as in
  `gpuctl up`.
- pipeline_ratio = pipeline / raw (goal ≥ 0.6). Every event of this workload is a new fault on a
  GPU of its own (up to 8,192 a node), so each one also makes a state and an incident: the worst case.
- pipeline_fleet_events_per_s and its ratio: a fleet's workload, 64 nodes of 8 GPUs whose faults
  repeat (application Xids 13, 31, 43, 45 and a 79): states change on first sight, incidents open
  once and then grow (their counts published every incident.update_s).
  Both pipeline figures count until the rules and the sink have acknowledged every event and
  everything the rules made of them, so they include the sink's linger (up to 1 s) once.
- raw_js_two_consumers_msgs_per_s: the same raw publisher with two durable consumers of the
  stream, as the rules and the sink both read every event; bound_ratio = it / raw is what any
  two-stage pipeline in one Python process could reach against the same denominator.
- *_cpu_us_per_*: CPU microseconds per message or event of this one Python process (all its
  threads: chDB's inserts too) and of nats-server over each block, so the limit is in the figures:
  the pipeline's process does a publisher's, two consumers', the rules' and the sink's work per event.
- latency_p50_ms / latency_p99_ms: fatal Xid records written at 200/s to a real
  agent's kmsg FIFO, each on its own GPU so each changes a state, from the write
  to the health state received on its health subject (goal p99 ≤ 20 ms).

Prints its figures as one JSON object on the last line.

    python bench/pipeline.py [EVENTS] [LATENCY_RECORDS]     (defaults 60000, 2000)
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from nats.aio.msg import Msg
from nats.js.api import StreamConfig

from gpuhealth import bus, subjects
from gpuhealth.events import HEALTH_DECODER, KernelEvent, derived_id, encode
from gpuhealth.natsd import EmbeddedNats
from rules.service import RulesService
from sinks.clickhouse import Store
from sinks.service import SinkService

T0 = 1_763_700_000_000_000_000


FLEET_XIDS = (13, 31, 43, 45, 13, 13, 31, 79)


def fleet_event(i: int) -> KernelEvent:
    """64 nodes x 8 GPUs, faults that repeat: most events grow an incident and change no state."""
    node, gpu, xid = i % 64, i // 64 % 8, FLEET_XIDS[i // 512 % 8]
    pci = f"0000:{0x18 + gpu:02x}:00.0"
    return KernelEvent(
        id=derived_id(T0 + i, "bench-fleet", "boot", i), time=T0 + i * 1000, cluster="bench", node=f"node-{node}",
        machine_id="m" * 32, boot_id="boot", source="kmsg", component="accelerator-nvidia-error-xid", kind="xid",
        message=f"NVRM: Xid (PCI:{pci[:-2]}): {xid}, pid=4242, name=python, Graphics Exception: ESR 0x504224",
        seq=i, priority=4, monotonic_us=i, xid=xid, pci_bus_id=pci, pid=4242, process="python",
    )  # fmt: skip


def kernel_event(i: int) -> KernelEvent:
    pci = f"0000:{i % 256:02x}:{i // 256 % 32:02x}.0"
    return KernelEvent(
        id=derived_id(T0 + i, "bench-node", "boot", i), time=T0 + i * 1000, cluster="bench", node=f"node-{i % 64}",
        machine_id="m" * 32, boot_id="boot", source="kmsg", component="accelerator-nvidia-error-xid", kind="xid",
        message=f"NVRM: Xid (PCI:{pci[:-2]}): 13, pid=4242, name=python, Graphics Exception: ESR 0x504224=0x80000041",
        seq=i, priority=4, monotonic_us=i, xid=13, pci_bus_id=pci, pid=4242, process="python",
    )  # fmt: skip


async def raw_jetstream(url: str, n: int, payload: bytes, consumers: int = 1) -> float:
    nc = await bus.connect(url, "bench-raw")
    js = nc.jetstream()
    stream = f"RAW{consumers}"
    await js.add_stream(StreamConfig(name=stream, subjects=[f"raw{consumers}.>"], duplicate_window=600))

    async def consume(durable: str) -> None:
        sub = await js.pull_subscribe(f"raw{consumers}.>", durable=durable, stream=stream)
        acked = 0
        while acked < n:
            try:
                msgs = await sub.fetch(1000, timeout=1)
            except TimeoutError:
                continue
            for m in msgs:
                await m.ack()
            acked += len(msgs)

    start = time.perf_counter()
    readers = [asyncio.create_task(consume(f"raw-{c}")) for c in range(consumers)]
    window = asyncio.Semaphore(1000)
    futures = []
    for i in range(n):
        await window.acquire()
        fut = await js.publish_async(f"raw{consumers}.node-{i % 64}", payload, headers=bus.headers_for(f"raw-{i}"))
        fut.add_done_callback(lambda _: window.release())
        futures.append(fut)
    await asyncio.gather(*futures)
    await asyncio.gather(*readers)
    elapsed = time.perf_counter() - start
    await nc.close()
    return n / elapsed


async def pipeline(url: str, n: int, store: Store, make: Callable[[int], KernelEvent] = kernel_event) -> float:
    nc = await bus.connect(url, "bench-pipeline")
    js = nc.jetstream()
    await bus.provision(js)
    stop = asyncio.Event()
    services = [
        asyncio.create_task(RulesService(js).run(stop)),
        asyncio.create_task(SinkService(nc, js, store).run(stop)),
    ]
    events = [make(i) for i in range(n)]
    start = time.perf_counter()
    window = asyncio.Semaphore(1000)
    futures = []
    for e in events:
        await window.acquire()
        fut = await js.publish_async(subjects.event_subject(e.node, "kmsg"), encode(e), headers=bus.headers_for(e.id))
        fut.add_done_callback(lambda _: window.release())
        futures.append(fut)
    await asyncio.gather(*futures)
    # Done when every event and everything the rules made of them is stored: the rules' consumer has
    # acknowledged every event (it does so after publishing what they changed), then the sink's.
    for stream, durable in ((subjects.EVENTS, "rules"), (subjects.HEALTH, "sink-health"),
                            (subjects.INCIDENTS, "sink-incidents"), (subjects.EVENTS, "sink-events")):  # fmt: skip
        while (info := await js.consumer_info(stream.name, durable)).num_pending or info.num_ack_pending:
            await asyncio.sleep(0.01)
    _, rows = await store.run(store.query, f"SELECT count() FROM {store.database}.events", {}, 10, 10)
    assert rows[0][0] == n, f"{rows[0][0]} of {n} events stored"
    elapsed = time.perf_counter() - start
    stop.set()
    await asyncio.gather(*services)
    await nc.close()
    return n / elapsed


async def latency(url: str, root: Path, n: int) -> list[float]:
    fifo = root / "kmsg"
    os.mkfifo(fifo)
    read_fd, write_fd = os.pipe()
    agent = subprocess.Popen(
        [sys.executable, "-m", "producers.agent", "--nats", url, "--data-dir", str(root / "agent"), "--kmsg-path",
         str(fifo), "--node", "latency", "--ready-fd", str(write_fd), "--log-level", "WARNING"],
        pass_fds=(write_fd,),
    )  # fmt: skip
    os.close(write_fd)
    with os.fdopen(read_fd) as ready:
        ready.readline()
    nc = await bus.connect(url, "bench-latency")
    js = nc.jetstream()
    stop = asyncio.Event()
    rules = asyncio.create_task(RulesService(js, durable="latency-rules").run(stop))
    written: dict[str, float] = {}
    received: dict[str, float] = {}

    async def on_health(msg: Msg) -> None:
        s = HEALTH_DECODER.decode(msg.data)
        if s.entity in written and s.entity not in received:
            received[s.entity] = time.perf_counter()

    await nc.subscribe(subjects.health_subject("latency", "accelerator-nvidia-error-xid"), cb=on_health)
    await asyncio.sleep(1.0)  # the rules consumer is bound and caught up
    fd = os.open(fifo, os.O_WRONLY)
    start = time.perf_counter()
    for i in range(n):
        bus_id, dev = i % 256, i // 256
        pci = f"0000:{bus_id:02x}:{dev:02x}.0"
        usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        record = f"3,{i + 1},{usec},-;NVRM: Xid (PCI:0000:{bus_id:02x}:{dev:02x}): 79, GPU has fallen off the bus.\n"
        written[pci] = time.perf_counter()
        os.write(fd, record.encode())
        await asyncio.sleep(max(0.0, start + (i + 1) / 200 - time.perf_counter()))
    deadline = time.perf_counter() + 30
    while len(received) < n and time.perf_counter() < deadline:
        await asyncio.sleep(0.05)
    os.close(fd)
    stop.set()
    await rules
    await nc.close()
    agent.terminate()
    agent.wait(timeout=30)
    if len(received) < n:
        print(f"only {len(received)} of {n} states arrived", file=sys.stderr)
    return sorted((received[k] - written[k]) * 1000 for k in received)


def cpu_s(pid: int | None = None) -> float:
    """CPU seconds used so far by this process (all its threads) or by another one."""
    if pid is None:
        t = os.times()
        return t.user + t.system
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Cpu:
    """CPU microseconds per event of this process and of nats-server over a block: where the time goes."""

    def __init__(self, nats: EmbeddedNats, n: int) -> None:
        assert nats.proc is not None
        self.pid, self.n = nats.proc.pid, n
        self.python_us = self.nats_us = 0.0

    def __enter__(self) -> Cpu:
        self.start = (cpu_s(), cpu_s(self.pid))
        return self

    def __exit__(self, *_: object) -> None:
        self.python_us = round((cpu_s() - self.start[0]) / self.n * 1e6, 1)
        self.nats_us = round((cpu_s(self.pid) - self.start[1]) / self.n * 1e6, 1)


async def main(n_events: int, n_latency: int) -> None:
    cpu: dict[str, Cpu] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        nats = EmbeddedNats(root / "raw-nats", auth=None)
        url = await nats.start()
        with Cpu(nats, n_events) as cpu["raw"]:
            raw = await raw_jetstream(url, n_events, encode(kernel_event(1)))
        raw2 = await raw_jetstream(url, n_events, encode(kernel_event(1)), consumers=2)
        await nats.stop()

        piped: dict[str, float] = {}
        for name, make in (("worst", kernel_event), ("fleet", fleet_event)):
            nats = EmbeddedNats(root / f"pipeline-nats-{name}", auth=None)
            url = await nats.start()
            store = Store(f"chdb://{root / 'clickhouse'}", database=f"bench_{name}")
            await store.run(store.connect)
            with Cpu(nats, n_events) as cpu[name]:
                piped[name] = await pipeline(url, n_events, store, make)
            await asyncio.get_running_loop().run_in_executor(None, store.close)
            await nats.stop()

        nats = EmbeddedNats(root / "latency-nats", auth=None)
        url = await nats.start()
        lat = await latency(url, root, n_latency)
        await nats.stop()
    figures = {
        "events": n_events,
        "raw_js_msgs_per_s": round(raw),
        "pipeline_events_per_s": round(piped["worst"]),
        "pipeline_ratio": round(piped["worst"] / raw, 3),
        "pipeline_fleet_events_per_s": round(piped["fleet"]),
        "pipeline_fleet_ratio": round(piped["fleet"] / raw, 3),
        "raw_cpu_us_per_msg": {"python": cpu["raw"].python_us, "nats_server": cpu["raw"].nats_us},
        "pipeline_cpu_us_per_event": {"python": cpu["worst"].python_us, "nats_server": cpu["worst"].nats_us},
        "pipeline_fleet_cpu_us_per_event": {"python": cpu["fleet"].python_us, "nats_server": cpu["fleet"].nats_us},
        "raw_js_two_consumers_msgs_per_s": round(raw2),
        "bound_ratio": round(raw2 / raw, 3),
        "latency_records": len(lat),
        "latency_p50_ms": round(statistics.median(lat), 2) if lat else None,
        "latency_p99_ms": round(lat[max(0, int(len(lat) * 0.99) - 1)], 2) if lat else None,
    }
    for name, value in figures.items():
        print(f"{name:24} {value}")
    print(json.dumps(figures))


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    asyncio.run(main(args[0] if args else 60_000, args[1] if len(args) > 1 else 2_000))
