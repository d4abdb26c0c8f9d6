"""The bus against a real nats-server: provisioning, dedup by id, dead letters."""

from __future__ import annotations

import asyncio

import msgspec
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

from gpuhealth import bus, subjects
from gpuhealth.consumer import Consumer
from gpuhealth.events import DLQ_DECODER, EVENT_DECODER, Event, SourceStatus, encode
from gpuhealth.jetstream import Puller


async def until_acked(js: JetStreamContext, durable: str) -> None:
    """Acks are fire-and-forget: wait (bounded) until the server has counted them."""
    async with asyncio.timeout(5):
        while True:
            info = await js.consumer_info(subjects.EVENTS.name, durable)
            if info.num_ack_pending == 0 and info.num_pending == 0:
                return
            await asyncio.sleep(0.05)


def status_event(i: int) -> SourceStatus:
    return SourceStatus(
        id=f"id-{i}", time=i, cluster="c", node="node-1", source="kmsg", component="kernel-log", available=True
    )


async def test_provision_is_idempotent(nc: NATS) -> None:
    js = nc.jetstream()
    await bus.provision(js)  # a second time: the fixture provisioned already
    names = {s.config.name for s in await js.streams_info()}
    assert {s.name for s in subjects.STREAMS} <= names
    for bucket in subjects.KV_BUCKETS:
        await js.key_value(bucket)


async def test_a_repeated_id_is_stored_once(nc: NATS) -> None:
    js = nc.jetstream()
    subject = subjects.event_subject("node-1", "kmsg")
    items = [(subject, f"id-{i}", encode(status_event(i))) for i in range(10)]
    await bus.publish_batch(js, items)
    await bus.publish_batch(js, [*items[3:7], (subject, "id-10", encode(status_event(10)))])
    info = await js.stream_info(subjects.EVENTS.name)
    assert info.state.messages == 11


async def test_garbage_is_dead_lettered_and_the_consumer_keeps_going(nc: NATS) -> None:
    js = nc.jetstream()
    subject = subjects.event_subject("node-1", "kmsg")
    await js.publish(subject, b"\xc1 not msgpack", headers={"Nats-Msg-Id": "g1"})
    await js.publish(subject, encode(status_event(1)), headers={"Nats-Msg-Id": "v1", "Gpuhealth-Schema": "99"})
    await js.publish(subject, msgspec.msgpack.encode({"type": "kernel", "id": 5}), headers={"Nats-Msg-Id": "g2"})
    # Valid, but on another node's subject: an agent speaking for a node it is not.
    await js.publish(subjects.event_subject("node-2", "kmsg"), encode(status_event(3)), headers=bus.headers_for("n2"))
    await js.publish(subject, encode(status_event(2)), headers=bus.headers_for("ok"))

    seen: list[Event] = []
    stop = asyncio.Event()

    async def handle(items: list[Event]) -> None:
        seen.extend(items)
        if seen:
            stop.set()

    consumer = Consumer(
        js,
        stream=subjects.EVENTS.name,
        durable="t",
        filter_subject="gpuhealth.v1.event.>",
        decoder=EVENT_DECODER,
        stage="test",
        handle=handle,
    )
    async with asyncio.timeout(10):
        await consumer.run(stop)
    assert [e.id for e in seen] == ["id-2"]
    assert consumer.dead_lettered == 4

    sub = await js.pull_subscribe("gpuhealth.v1.dlq.>", durable="dlq-reader", stream=subjects.DLQ.name)
    letters = [DLQ_DECODER.decode(m.data) for m in await sub.fetch(4, timeout=5)]
    reasons = sorted(letter.reason.split(":")[0] for letter in letters)
    assert reasons == ["the message names node 'node-1' but came on gpuhealth.v1.event.node-2.kmsg.6",
                       "undecodable", "undecodable", "unknown schema version '99' (this consumer reads 1)"]  # fmt: skip
    # The stored subject: the stream appends the node's partition token.
    assert {letter.subject.rsplit(".", 1)[0] for letter in letters} == {
        subject,
        subjects.event_subject("node-2", "kmsg"),
    }
    assert b"\xc1 not msgpack" in {letter.data for letter in letters}
    # Everything was acknowledged: nothing is redelivered to the consumer.
    await until_acked(js, "t")


async def test_a_failing_stage_is_retried_and_nothing_acked_meanwhile(nc: NATS) -> None:
    js = nc.jetstream()
    await bus.publish_batch(js, [(subjects.event_subject("node-1", "kmsg"), "a", encode(status_event(1)))])
    attempts = 0
    pending_while_failing: list[int] = []
    stop = asyncio.Event()

    async def flaky(items: list[Event]) -> None:
        nonlocal attempts
        attempts += 1
        if attempts < 3:
            info = await js.consumer_info(subjects.EVENTS.name, "flaky")
            pending_while_failing.append(info.num_ack_pending)
            raise ConnectionError("store down")
        stop.set()

    consumer = Consumer(
        js,
        stream=subjects.EVENTS.name,
        durable="flaky",
        filter_subject="gpuhealth.v1.event.>",
        decoder=EVENT_DECODER,
        stage="test",
        handle=flaky,
    )
    async with asyncio.timeout(10):
        await consumer.run(stop)
    assert attempts == 3 and consumer.processed == 1
    assert pending_while_failing == [1, 1]
    await until_acked(js, "flaky")


async def test_connect_gives_up_on_a_closed_port_when_asked() -> None:
    try:
        await bus.connect("nats://127.0.0.1:1", "t", retry_for=0.5)
    except ConnectionError as e:
        assert "127.0.0.1:1" in str(e)
    else:
        raise AssertionError("connected to a closed port")


async def test_a_batch_taken_by_a_dead_worker_is_redelivered_not_acknowledged_by_the_next(
    nats_url: str, nc: NATS
) -> None:
    """At-least-once across a crash: what a dead process held comes back, even after its successor acked later
    messages (which an AckPolicy.ALL consumer would get wrong)."""
    js = nc.jetstream()
    subject = subjects.event_subject("node-1", "kmsg")
    await bus.publish_batch(js, [(subject, f"id-{i}", encode(status_event(i))) for i in range(10)])

    # The first worker takes a batch and dies before handling it.
    doomed = await bus.connect(nats_url, "doomed")
    first = Consumer(
        doomed.jetstream(),
        stream=subjects.EVENTS.name,
        durable="w",
        filter_subject=f"{subject}.>",
        decoder=EVENT_DECODER,
        stage="t",
        handle=None,
        batch=5,
        ack_wait_s=1.0,
    )  # type: ignore[arg-type]
    await first._bind(asyncio.Event())
    taken = await Puller(doomed, subjects.EVENTS.name, "w").fetch(5, timeout=5)
    assert len(taken) == 5
    await doomed.close()

    seen: list[str] = []
    stop = asyncio.Event()

    async def handle(items: list[Event]) -> None:
        seen.extend(e.id for e in items)
        if len(set(seen)) == 10:
            stop.set()

    successor = Consumer(js, stream=subjects.EVENTS.name, durable="w", filter_subject=f"{subject}.>",
                             decoder=EVENT_DECODER, stage="t", handle=handle, batch=5, ack_wait_s=1.0)  # fmt: skip
    async with asyncio.timeout(20):
        await successor.run(stop)
    assert set(seen) == {f"id-{i}" for i in range(10)}


async def test_partition_of_is_the_partition_the_server_stores_a_node_under(nc: NATS) -> None:
    js = nc.jetstream()
    nodes = [f"node-{i}" for i in range(100)] + ["gpu.a b", "ñode", "x" * 60]
    await bus.publish_messages(js, [(subjects.event_subject(n, "kmsg"), b"x", None) for n in nodes])
    info = await js.stream_info(subjects.EVENTS.name, subjects_filter=">")
    stored = {s.split(".")[3]: int(s.split(".")[5]) for s in info.state.subjects or {}}
    assert {subjects.token(n): subjects.partition_of(n) for n in nodes} == stored
    assert len(set(stored.values())) == subjects.PARTITIONS  # and they spread over all 16


async def test_a_linger_longer_than_the_ack_wait_keeps_what_it_holds(nc: NATS) -> None:
    """The sink's metrics wait 30 s for company on a 15 s ack wait: JetStream must not hand the first
    ones out again meanwhile, or every batch would be handled with copies of itself."""
    js = nc.jetstream()
    subject = subjects.event_subject("node-1", "kmsg")
    await bus.publish_batch(js, [(subject, "id-1", encode(status_event(1)))])
    batches: list[list[str]] = []
    stop = asyncio.Event()

    async def handle(items: list[Event]) -> None:
        batches.append([e.id for e in items])
        stop.set()

    consumer = Consumer(js, stream=subjects.EVENTS.name, durable="slow", filter_subject="gpuhealth.v1.event.>",
                        decoder=EVENT_DECODER, stage="test", handle=handle, ack_wait_s=1.0, linger_s=3.5)  # fmt: skip
    async with asyncio.timeout(15):
        await consumer.run(stop)
    assert batches == [["id-1"]]
    info = await js.consumer_info(subjects.EVENTS.name, "slow")
    assert info.num_redelivered == 0


async def test_a_stop_while_lingering_handles_what_it_has_at_once(nc: NATS) -> None:
    js = nc.jetstream()
    subject = subjects.event_subject("node-1", "kmsg")
    await bus.publish_batch(js, [(subject, f"id-{i}", encode(status_event(i))) for i in range(3)])
    seen: list[str] = []
    stop = asyncio.Event()

    async def handle(items: list[Event]) -> None:
        seen.extend(e.id for e in items)

    consumer = Consumer(js, stream=subjects.EVENTS.name, durable="lingers", filter_subject="gpuhealth.v1.event.>",
                        decoder=EVENT_DECODER, stage="test", handle=handle, linger_s=60.0)  # fmt: skip
    task = asyncio.create_task(consumer.run(stop))
    await asyncio.sleep(1.0)  # fetched, and lingering for more
    assert seen == []
    stop.set()
    async with asyncio.timeout(3):  # not the linger's 60 s
        await task
    assert seen == ["id-0", "id-1", "id-2"]
    await until_acked(js, "lingers")
