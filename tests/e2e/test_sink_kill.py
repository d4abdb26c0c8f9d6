"""SIGKILL the sink in the middle of 100,000 events: after a restart, each is stored exactly once."""

from __future__ import annotations

import asyncio
import signal
import subprocess
from pathlib import Path

from gpuhealth import bus, client, subjects
from gpuhealth.events import KernelEvent, derived_id, encode
from tests.e2e.conftest import GPUCTL

N = 100_000
T0 = 1_763_700_000_000_000_000


def event(i: int) -> KernelEvent:
    return KernelEvent(id=derived_id(T0 + i * 1000, "kill", i), time=T0 + i * 1000, cluster="c", node=f"node-{i % 50}",
                       boot_id="b", source="kmsg", component="accelerator-nvidia-error-xid", kind="xid", xid=13,
                       pci_bus_id="0000:04:00.0", message=f"NVRM: Xid (PCI:0000:04:00): 13, #{i}", seq=i)  # fmt: skip


async def counts(url: str) -> tuple[int, int]:
    nc = await client.open_client(url)
    try:
        _, [[n, uniq]] = await client.sql(nc, "SELECT count(), uniqExact(id) FROM gpuhealth.events")
        return int(n), int(uniq)
    finally:
        await nc.close()


def sink(url: str, store: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([GPUCTL, "serve", "sink", "--nats", url, "--clickhouse", f"chdb://{store}"],
                            stderr=subprocess.DEVNULL)  # fmt: skip


async def test_sigkill_mid_stream_then_restart_stores_each_event_once(nats_url: str, tmp_path: Path) -> None:
    nc = await bus.connect(nats_url, "kill-test")
    js = nc.jetstream()
    await bus.provision(js)
    store = tmp_path / "clickhouse"
    first = sink(nats_url, store)
    try:
        items = [(subjects.event_subject(e.node, "kmsg"), e.id, encode(e)) for e in map(event, range(N))]
        for i in range(0, N, 5000):
            await bus.publish_batch(js, items[i : i + 5000], timeout=60)
        async with asyncio.timeout(120):  # the sink is part-way through when it is killed
            while True:
                try:
                    stored = (await counts(nats_url))[0]
                except Exception:
                    stored = 0
                if stored >= N // 5:
                    break
                await asyncio.sleep(0.05)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        assert stored < N, "the sink finished before it could be killed"

        second = sink(nats_url, store)
        try:
            async with asyncio.timeout(180):
                while True:
                    try:
                        n = (await counts(nats_url))[0]
                    except Exception:
                        n = 0
                    if n >= N:
                        break
                    await asyncio.sleep(0.5)
            await asyncio.sleep(1.0)  # anything redelivered late would show now
            assert await counts(nats_url) == (N, N)  # a plain count(), no FINAL
        finally:
            second.terminate()
            second.wait(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
        await nc.close()
