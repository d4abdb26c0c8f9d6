"""The rules: the pure engine in process, and the service over NATS with 10,000 nodes' traffic.

- engine_events_per_s: apply() over a mixed history (Xids with storms of repeats,
  NVML ECC and slowdown, sysfs AER counts and IB port conditions, kernel hung tasks,
  reboots) from 10,000 nodes, in one process, one core.
- service_events_per_s_1: the same events published to the event stream, drained by one
  `gpuctl serve rules` process (state and health to KV, states and incidents published);
  service_events_per_s_2: by two processes sharing the nodes (--instance 0|1 --instances 2, a
  durable consumer per partition of the node hash).
  Time from the first event consumed to the consumers' pending count reaching zero.

Prints its figures as one JSON object on the last line.

    python bench/engine.py [EVENTS] [NODES]     (defaults 100000, 10000)
(not bench/rules.py: a file named rules.py would shadow the rules package)
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gpuhealth import bus, subjects
from gpuhealth.events import Event, HostEvent, KernelEvent, NvmlEvent, derived_id, encode
from gpuhealth.natsd import EmbeddedNats
from rules.catalog import load
from rules.engine import apply
from rules.state import NodeState

GPUCTL = str(Path(sys.executable).parent / "gpuctl")
T0 = 1_763_700_000_000_000_000
S = 1_000_000_000


def history(n: int, nodes: int) -> list[Event]:
    """Per node, in time order: a fixed mix, every tenth node rebooting half-way."""
    out: list[Event] = []
    per_node = max(1, n // nodes)
    for node_i in range(nodes):
        node = f"gpu-{node_i:05d}"
        for k in range(per_node):
            t = T0 + k * 7 * S
            boot = "b2" if node_i % 10 == 0 and k > per_node // 2 else "b1"
            base = {"id": derived_id(t, node, k), "time": t, "cluster": "bench", "node": node, "boot_id": boot}
            kind = k % 5
            pci = f"0000:{(k % 8) * 16 + 0x18:02x}:00.0"
            ev: Event
            if kind == 0:
                code = (79, 13, 31, 48, 95)[k // 5 % 5]
                ev = KernelEvent(**base, source="kmsg", component="accelerator-nvidia-error-xid", kind="xid",
                                 xid=code, pci_bus_id=pci, message="NVRM: Xid", count=1 + k)  # fmt: skip
            elif kind == 1:
                ev = NvmlEvent(**base, source="nvml", component="nvml", kind=("ecc_sbe", "slowdown")[k % 2],
                               pci_bus_id=pci, data=1)  # fmt: skip
            elif kind == 2:
                ev = HostEvent(**base, source="sysfs", component="pci", kind="aer", entity=pci, pci_bus_id=pci,
                               counts={"correctable": 7})  # fmt: skip
            elif kind == 3:
                ev = HostEvent(**base, source="sysfs", component="accelerator-nvidia-infiniband", kind="ib_port",
                               entity="mlx5_0:1", state="DOWN" if k % 2 else "ACTIVE", ok=not k % 2,
                               since=t - 60 * S, counts={"downs": 1} if k % 2 else {})  # fmt: skip
            else:
                ev = KernelEvent(**base, source="kmsg", component="os", kind="hung_task", message="task blocked")
            out.append(ev)
    return out


def engine_rate(events: list[Event]) -> float:
    catalog = load()
    states: dict[str, NodeState] = {}
    t0 = time.perf_counter()
    for ev in events:
        states[ev.node], _ = apply(states.get(ev.node), ev, catalog)
    return len(events) / (time.perf_counter() - t0)


async def service_rate(events: list[Event], instances: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        nats = EmbeddedNats(Path(tmp), auth=None)
        url = await nats.start()
        nc = await bus.connect(url, "bench-rules")
        js = nc.jetstream()
        await bus.provision(js)
        items = [(subjects.event_subject(e.node, e.source), e.id, encode(e)) for e in events]
        for i in range(0, len(items), 5000):
            await bus.publish_batch(js, items[i : i + 5000], timeout=60)
        procs = [
            subprocess.Popen(
                [GPUCTL, "serve", "rules", "--nats", url, "--instance", str(i), "--instances", str(instances)],
                stderr=subprocess.DEVNULL,
            )
            for i in range(instances)
        ]
        durables = ["rules"] if instances == 1 else [f"rules-p{p:02d}" for p in range(subjects.PARTITIONS)]
        started = None
        try:
            while True:
                pending = 0
                consumed = 0
                for d in durables:
                    try:
                        info = await js.consumer_info(subjects.EVENTS.name, d)
                    except Exception:
                        pending += 1
                        continue
                    pending += info.num_pending + info.num_ack_pending
                    consumed += info.delivered.stream_seq
                if started is None and consumed:
                    started = time.perf_counter()
                if started is not None and pending == 0:
                    break
                await asyncio.sleep(0.05)
            elapsed = time.perf_counter() - started
        finally:
            for p in procs:
                p.terminate()
                p.wait(timeout=30)
            await nc.close()
            await nats.stop()
    return len(events) / elapsed


async def main(n: int, nodes: int) -> None:
    events = history(n, nodes)
    figures = {
        "events": len(events),
        "nodes": nodes,
        "engine_events_per_s": round(engine_rate(events)),
        "service_events_per_s_1": round(await service_rate(events, 1)),
        "service_events_per_s_2": round(await service_rate(events, 2)),
        "cpus": os.cpu_count(),
    }
    for name, value in figures.items():
        print(f"{name:26} {value}")
    print(json.dumps(figures))


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    asyncio.run(main(*(args + [100_000, 10_000][len(args) :])))
