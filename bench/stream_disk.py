"""Disk a node-day takes in each stream, and what gpuhealth/sizing.py gives a 3,000-node fleet.

Publishes, into a real nats-server: NODES simulated nodes' hour of metric batches at the default
poll interval (producers/simulate.py: one batch a GPU a poll, the fake NVML's values), and DAYS
node-days of events at the simulator's default fault rate (0.5 faults a node-hour, plus the
statuses and inventory an agent sends when it starts), through the real rules service, so the
health and incident streams hold what the rules derive from them. Bytes come from stream info
(what counts against max_bytes); disk_bytes is the store directory on disk.

Prints one JSON object on its last line.

    python bench/stream_disk.py [NODES] [DAYS]   (defaults 4, 5)
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

from gpuhealth import bus, sizing, subjects
from gpuhealth.natsd import EmbeddedNats
from producers.simulate import FAULT_MIX, FleetSimulator
from rules.service import RulesService

FLEET = 3000
FAULTS_PER_NODE_HOUR = 0.5


async def _caught_up(js: Any, stream: str, durable: str) -> None:
    async with asyncio.timeout(120):
        while True:
            info = await js.consumer_info(stream, durable)
            if info.num_pending == 0 and info.num_ack_pending == 0:
                return
            await asyncio.sleep(0.2)


async def run(nodes: int, days: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        server = EmbeddedNats(Path(tmp), auth=None)
        url = await server.start()
        nc = await bus.connect(url, "bench-stream-disk")
        js = nc.jetstream()
        await bus.provision(js)
        sim = FleetSimulator(lambda items: asyncio.sleep(0), nodes=nodes, gpus=8, interval=10.0, seed=7)

        async def publish(items: list[bus.Item]) -> None:
            for i in range(0, len(items), 2000):
                await bus.publish_batch(js, items[i : i + 2000], timeout=30)

        t = 1_700_000_000_000_000_000
        polls = int(sizing.HOUR / sim.interval)
        for k in range(polls):  # an hour of metrics
            await publish([item for n in sim.nodes for item in sim.metrics(n, t + k * 10**10)])
        rng = random.Random(7)
        names, weights = list(FAULT_MIX), list(FAULT_MIX.values())
        events: list[bus.Item] = []
        for _day in range(days):
            for n in sim.nodes:
                events += sim.hello(n)  # an agent (re)start a day
                for _ in range(round(24 * FAULTS_PER_NODE_HOUR)):
                    t += 10**9
                    events += sim.fault(n, rng.choices(names, weights)[0], t)
        await publish(events)

        stop = asyncio.Event()
        rules = asyncio.create_task(RulesService(js).run(stop))
        await asyncio.sleep(1)
        await _caught_up(js, subjects.EVENTS.name, "rules")
        await _caught_up(js, subjects.INVENTORY.name, "rules-inventory")
        await asyncio.sleep(1)  # the rules flush incidents' growth on a timer
        stop.set()
        await rules
        per_node_day = {}
        state = {}
        for spec in subjects.STREAMS:
            info = await js.stream_info(spec.name)
            node_days = nodes * (polls * sim.interval / sizing.DAY if spec is subjects.METRICS else days)
            state[spec.name] = {"messages": info.state.messages, "bytes": info.state.bytes}
            per_node_day[spec.name] = round(info.state.bytes / node_days)
        metric_msgs = state[subjects.METRICS.name]["messages"]
        await bus.shutdown(nc)
        disk = sum(p.stat().st_size for p in (Path(tmp) / "nats" / "jetstream").rglob("*") if p.is_file())
        await server.stop()

    lim = sizing.limits(sizing.Fleet(nodes=FLEET))
    m = subjects.METRICS.name
    return {
        "nodes": nodes,
        "metric_hours": polls * sim.interval / sizing.HOUR,
        "event_node_days": nodes * days,
        "stored": state,
        "disk_bytes": disk,
        "bytes_per_metric_batch": round(state[subjects.METRICS.name]["bytes"] / metric_msgs),
        "bytes_per_node_day": per_node_day,
        "fleet_nodes": FLEET,
        "fleet_bytes_per_day": {k: v * FLEET for k, v in per_node_day.items()},
        "fleet_limits": {
            k: {
                "max_bytes": sizing.human(v.max_bytes),
                "max_age_h": v.max_age_s / sizing.HOUR,
                "discard": "new" if v.discard_new else "old",
            }
            for k, v in lim.streams.items()
        },
        "fleet_bucket_limits": {k: sizing.human(v) for k, v in lim.buckets.items()},
        "fleet_max_file_store": sizing.human(sizing.store_bytes(lim)),
        # What the metrics stream holds in steady state: 2 days unbounded before, the buffer (or the bound) now.
        "fleet_metrics_held_before": sizing.human(per_node_day[m] * FLEET * 2),
        "fleet_metrics_held_now": sizing.human(
            min(per_node_day[m] * FLEET * lim.streams[m].max_age_s / sizing.DAY, lim.streams[m].max_bytes)
        ),
    }


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    print(json.dumps(asyncio.run(run(*(args or [4, 5])))))
