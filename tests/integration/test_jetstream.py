"""The hot-path pull and publish (gpuhealth.jetstream) against a real nats-server: what the server
ends a request with, what it refuses, and that a consumer survives its durable being deleted."""

from __future__ import annotations

import asyncio
import time

import pytest
from nats.aio.client import Client as NATS
from nats.js.api import AckPolicy, ConsumerConfig, StreamConfig

from gpuhealth import bus, subjects
from gpuhealth.consumer import Consumer
from gpuhealth.events import EVENT_DECODER, Event, SourceStatus, encode
from gpuhealth.jetstream import ConsumerGone, PublishError, Puller, publish_all


async def stream_with_consumer(nc: NATS, name: str = "T") -> None:
    js = nc.jetstream()
    await js.add_stream(StreamConfig(name=name, subjects=[f"{name.lower()}.>"]))
    await js.add_consumer(name, ConsumerConfig(durable_name="d", ack_policy=AckPolicy.EXPLICIT, max_ack_pending=100))


async def test_fetch_returns_what_is_there_at_once_and_in_order(nc: NATS) -> None:
    await stream_with_consumer(nc)
    await publish_all(nc, ((f"t.{i}", b"%d" % i, None) for i in range(25)), timeout=5)
    puller = Puller(nc, "T", "d")
    start = time.monotonic()
    first = await puller.fetch(10, timeout=5)
    rest = await puller.fetch(100, timeout=5)  # fewer than asked: the server's 404 ends it, no waiting
    assert time.monotonic() - start < 1.0
    assert [m.data for m in first + rest] == [b"%d" % i for i in range(25)]
    assert [m.subject for m in first[:2]] == ["t.0", "t.1"]
    assert first[0].metadata.sequence.stream == 1
    for m in first + rest:
        await m.ack()
    await puller.stop()


async def test_fetch_waits_for_the_first_message_then_returns(nc: NATS) -> None:
    await stream_with_consumer(nc)
    puller = Puller(nc, "T", "d")
    start = time.monotonic()
    assert await puller.fetch(10, timeout=0.3) == []  # the request expired (408): empty, not an error
    assert 0.25 < time.monotonic() - start < 2.0

    async def later() -> None:
        await asyncio.sleep(0.2)
        await publish_all(nc, [("t.x", b"late", None)], timeout=5)

    task = asyncio.create_task(later())
    start = time.monotonic()
    got = await puller.fetch(10, timeout=5)
    await task
    assert [m.data for m in got] == [b"late"]
    assert time.monotonic() - start < 2.0  # the first arrival ends the wait, not the timeout
    await got[0].ack()
    await puller.stop()


async def test_a_deleted_consumer_is_an_error_of_its_own(nc: NATS) -> None:
    await stream_with_consumer(nc)
    await nc.jetstream().delete_consumer("T", "d")
    with pytest.raises(ConsumerGone, match="consumer d: 503"):
        await Puller(nc, "T", "d").fetch(10, timeout=1)


async def test_publish_all_waits_for_every_acknowledgement_and_names_refusals(nc: NATS) -> None:
    await stream_with_consumer(nc)
    await publish_all(nc, [("t.a", b"1", bus.headers_for("m-1")), ("t.a", b"1", bus.headers_for("m-1"))], timeout=5)
    info = await nc.jetstream().stream_info("T")
    assert info.state.messages == 1  # the repeat was acknowledged as a duplicate, stored once
    with pytest.raises(PublishError, match="refused 1 of 2 messages: no stream for the subject"):
        await publish_all(nc, [("t.b", b"2", None), ("nowhere.x", b"3", None)], timeout=5)
    await nc.jetstream().update_stream(StreamConfig(name="T", subjects=["t.>"], max_msgs=1, discard="new"))
    with pytest.raises(PublishError, match="maximum messages exceeded"):
        await publish_all(nc, [("t.c", b"4", None)], timeout=5)
    await publish_all(nc, [], timeout=5)  # nothing to send: returns at once


async def test_concurrent_batches_are_told_apart(nc: NATS) -> None:
    await stream_with_consumer(nc)
    batches = [[(f"t.{b}", b"%d" % i, None) for i in range(200)] for b in range(5)]
    await asyncio.gather(*(publish_all(nc, batch, timeout=10) for batch in batches))
    assert (await nc.jetstream().stream_info("T")).state.messages == 1000


async def test_a_consumer_whose_durable_was_deleted_makes_it_again_and_goes_on(nc: NATS) -> None:
    js = nc.jetstream()
    subject = subjects.event_subject("node-1", "kmsg")
    seen: list[str] = []

    async def handle(items: list[Event]) -> None:
        seen.extend(e.id for e in items)

    def status(i: int) -> tuple[str, str, bytes]:
        ev = SourceStatus(id=f"id-{i}", time=i, cluster="c", node="node-1", source="kmsg", component="kernel-log",
                          available=True)  # fmt: skip
        return subject, ev.id, encode(ev)

    consumer = Consumer(js, stream=subjects.EVENTS.name, durable="w", filter_subject=f"{subject}.>",
                        decoder=EVENT_DECODER, stage="t", handle=handle, batch=10)  # fmt: skip
    stop = asyncio.Event()
    task = asyncio.create_task(consumer.run(stop))
    try:
        await bus.publish_batch(js, [status(1)])
        async with asyncio.timeout(10):
            while "id-1" not in seen:
                await asyncio.sleep(0.05)
        await js.delete_consumer(subjects.EVENTS.name, "w")
        await asyncio.sleep(0.3)
        await bus.publish_batch(js, [status(2)])
        async with asyncio.timeout(15):
            while "id-2" not in seen:
                await asyncio.sleep(0.05)
    finally:
        stop.set()
        await task
    assert (await js.consumer_info(subjects.EVENTS.name, "w")).config.durable_name == "w"


async def test_an_in_order_consumer_whose_deliveries_were_lost_starts_again_before_anything_newer(nc: NATS) -> None:
    """Deliveries that never reach the stage (here taken by another client, as a reconnect or a slow
    consumer loses them) come back only after their ack wait, after newer ones: an in-order stage
    must not see the newer ones first."""
    js = nc.jetstream()
    subject = subjects.event_subject("node-1", "kmsg")
    handled: list[int] = []
    release = asyncio.Event()

    async def handle(items: list[Event], seqs: list[int]) -> None:
        handled.extend(seqs)
        if 3 in seqs:
            await release.wait()  # busy: the next deliveries go elsewhere meanwhile

    def status(i: int) -> tuple[str, str, bytes]:
        ev = SourceStatus(id=f"id-{i}", time=i, cluster="c", node="node-1", source="kmsg", component="kernel-log",
                          available=True)  # fmt: skip
        return subject, ev.id, encode(ev)

    async def ignore(items: list[Event]) -> None:
        raise AssertionError("in order: handle is not called")

    consumer = Consumer(js, stream=subjects.EVENTS.name, durable="w", filter_subject=f"{subject}.>",
                        decoder=EVENT_DECODER, stage="t", handle=ignore, in_order=handle, batch=10,
                        ack_wait_s=1.0)  # fmt: skip
    stop = asyncio.Event()
    task = asyncio.create_task(consumer.run(stop))
    try:
        await bus.publish_batch(js, [status(i) for i in (1, 2, 3)])
        async with asyncio.timeout(10):
            while 3 not in handled:
                await asyncio.sleep(0.05)
        await bus.publish_batch(js, [status(i) for i in (4, 5, 6, 7)])
        thief = await js.pull_subscribe_bind("w", stream=subjects.EVENTS.name)
        taken = await thief.fetch(2, timeout=5)  # 4 and 5, never acknowledged
        assert [m.metadata.sequence.stream for m in taken] == [4, 5]
        await thief.unsubscribe()
        release.set()
        async with asyncio.timeout(15):
            while len(set(handled)) < 7:
                await asyncio.sleep(0.05)
    finally:
        stop.set()
        await task
    assert handled == [1, 2, 3, 4, 5, 6, 7]
