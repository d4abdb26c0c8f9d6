"""gpuctl's reads of the KV buckets are whole even while the rules write them."""

from __future__ import annotations

import asyncio

from nats.aio.client import Client as NATS

from gpuhealth import bus, client, subjects


async def test_a_bucket_read_during_writes_sees_every_key(nc: NATS, nats_url: str) -> None:
    js = nc.jetstream()
    keys = [f"node.comp.e{i}" for i in range(300)]
    await bus.publish_messages(js, [bus.kv_put(subjects.KV_HEALTH, k, b"0") for k in keys])
    stop = asyncio.Event()

    async def writer() -> None:  # the rules rewriting a seventh of the states, again and again
        i = 0
        while not stop.is_set():
            await bus.publish_messages(
                js, [bus.kv_put(subjects.KV_HEALTH, k, str(i).encode()) for k in keys[i % 7 :: 7]]
            )
            i += 1

    task = asyncio.create_task(writer())
    reader = await bus.connect(nats_url, "reader")
    try:
        # nats-py's KV watcher returned 0 or a few keys short in 22 of 150 such reads.
        counts = [len(await client._all_values(reader, subjects.KV_HEALTH)) for _ in range(60)]
    finally:
        stop.set()
        await task
        await reader.close()
    assert counts == [300] * 60


async def test_an_empty_bucket_reads_as_empty(nc: NATS) -> None:
    assert await client._all_values(nc, subjects.KV_INVENTORY) == []
