"""``gpuctl simulate``: a fleet of simulated nodes publishing to a running stack."""

from __future__ import annotations

import asyncio
import contextlib
import sys

from gpuhealth import bus, natsconf


async def run_simulation(nats_url: str, *, nodes: int, gpus: int, fault_rate: float, interval: float,
                         duration: float | None, cluster: str, seed: int,
                         credentials: dict[str, str] | None = None) -> int:  # fmt: skip
    from producers.simulate import FleetSimulator

    stop = bus.stop_on_signals()
    inbox = natsconf.SIMULATOR_INBOX
    nc = await bus.connect(nats_url, "gpuhealth-simulate", credentials=credentials, inbox_prefix=inbox)
    js = nc.jetstream()
    await bus.provision(js, missing_only=True)  # the services own the streams; it only waits for them

    async def publish(items: list[bus.Item]) -> None:
        await bus.publish_until_acked(lambda batch: bus.publish_batch(js, batch, timeout=30), items, stop,
                                      what="simulate")  # fmt: skip

    sim = FleetSimulator(publish, nodes=nodes, gpus=gpus, fault_rate=fault_rate, interval=interval, cluster=cluster,
                         seed=seed)  # fmt: skip
    print(f"simulating {nodes} nodes x {gpus} GPUs on {nats_url}: metrics every {interval:g} s, "
          f"{fault_rate:g} faults per node-hour{f', for {duration:g} s' if duration else ' (Ctrl-C to stop)'}",
          file=sys.stderr, flush=True)  # fmt: skip

    async def report() -> None:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), max(interval, 5.0))
            p = sim.published
            print(f"published {p['metrics']} metric batches, {p['events']} events ({p['faults']} faults)",
                  file=sys.stderr, flush=True)  # fmt: skip

    reporter = asyncio.create_task(report())
    await sim.run(stop, duration)
    stop.set()
    await reporter
    await bus.shutdown(nc)
    return 0
