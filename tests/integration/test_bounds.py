"""Bounded streams on a real nats-server: provision applies and updates the bounds, a full stream
refuses visibly and takes writes again, with no restart, once there is room."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest
from nats.aio.client import Client as NATS
from nats.js.api import DiscardPolicy, KeyValueConfig, StorageType, StreamConfig, SubjectTransform
from prometheus_client import CollectorRegistry

from gpuhealth import bus, sizing, subjects, telemetry
from gpuhealth.config import NodeIdentity
from gpuhealth.errors import ConfigError
from gpuhealth.jetstream import StoreFullError
from gpuhealth.natsd import EmbeddedNats
from producers.api import AGENT_COMPONENT, View

# Small enough for the test server to reserve in its store (it reserves every max_bytes).
FLEET = sizing.limits(sizing.Fleet(nodes=20))


# The publisher's instruments, handed to it as a stage hands its own (the agent's API shows their no_room).
MEASURED = telemetry.Metrics(CollectorRegistry())


def full(stream: str) -> float | None:
    return MEASURED.registry.get_sample_value("gpuhealth_stream_full", {"stream": stream})


def tiny(stream: str, max_bytes: int, lim: sizing.Limits = FLEET) -> sizing.Limits:
    """``lim`` with one stream's bytes made small (its age and policy kept)."""
    streams = dict(lim.streams)
    streams[stream] = dataclasses.replace(streams[stream], max_bytes=max_bytes)
    return sizing.Limits(streams, dict(lim.buckets))


async def test_provision_bounds_every_stream_and_bucket(nc: NATS) -> None:
    js = nc.jetstream()
    await bus.provision(js, limits=FLEET)
    for spec in subjects.STREAMS:
        config = (await js.stream_info(spec.name)).config
        want = FLEET.streams[spec.name]
        assert (config.max_bytes, config.max_age) == (want.max_bytes, want.max_age_s), spec.name
        assert config.discard == (DiscardPolicy.NEW if want.discard_new else DiscardPolicy.OLD), spec.name
    assert (await js.stream_info("GPUHEALTH_EVENTS")).config.discard == DiscardPolicy.NEW
    assert (await js.stream_info("GPUHEALTH_METRICS")).config.max_age == 6 * 3600 and FLEET.streams[
        "GPUHEALTH_METRICS"
    ].max_bytes == 648_000_000
    for bucket in subjects.KV_BUCKETS:
        assert (await js.stream_info(f"KV_{bucket}")).config.max_bytes == FLEET.buckets[bucket]


async def _old_deployment(js: object) -> None:
    """The streams and buckets as provision made them before they were bounded."""
    for spec in subjects.STREAMS:
        await js.add_stream(  # type: ignore[attr-defined]
            StreamConfig(
                name=spec.name,
                subjects=spec.subjects,
                max_age=2 * 86400 if spec is subjects.METRICS else spec.max_age_s,
                duplicate_window=spec.duplicate_window_s,
                max_msg_size=spec.max_msg_size,
                storage=StorageType.FILE,
                subject_transform=SubjectTransform(*spec.transform) if spec.transform else None,
            )
        )
    for bucket in subjects.KV_BUCKETS:
        await js.create_key_value(KeyValueConfig(bucket=bucket, history=1, storage=StorageType.FILE))  # type: ignore[attr-defined]


async def test_provision_bounds_an_existing_deployment_in_place(nats_url: str) -> None:
    nc = await bus.connect(nats_url, "t")
    js = nc.jetstream()
    await _old_deployment(js)
    assert (await js.stream_info("GPUHEALTH_METRICS")).config.max_bytes == -1
    events = [(subjects.event_subject("node-1", "kmsg"), f"e{i}", b"x" * 100) for i in range(20)]
    metrics = [(subjects.metric_subject("node-1", "nvml"), f"m{i}", b"y" * 100) for i in range(30)]
    await bus.publish_batch(js, events + metrics)
    kv = await js.key_value(subjects.KV_HEALTH)
    await kv.put("n.c.e", b"Healthy")
    created = (await js.stream_info("GPUHEALTH_EVENTS")).created

    await bus.provision(js, limits=FLEET)
    for spec in subjects.STREAMS:
        info = await js.stream_info(spec.name)
        assert info.config.max_bytes == FLEET.streams[spec.name].max_bytes, spec.name
        assert info.config.max_age == FLEET.streams[spec.name].max_age_s, spec.name
    for bucket in subjects.KV_BUCKETS:
        assert (await js.stream_info(f"KV_{bucket}")).config.max_bytes == FLEET.buckets[bucket]
    # Nothing lost, and the same stream (the rules count their progress in its sequences).
    assert (await js.stream_info("GPUHEALTH_EVENTS")).state.messages == 20
    assert (await js.stream_info("GPUHEALTH_METRICS")).state.messages == 30
    assert (await js.stream_info("GPUHEALTH_EVENTS")).created == created
    assert (await kv.get("n.c.e")).value == b"Healthy"
    await nc.close()


async def test_a_bound_lower_than_what_is_stored_waits_instead_of_deleting(nc: NATS) -> None:
    js = nc.jetstream()
    await bus.publish_batch(js, [(subjects.event_subject("node-1", "kmsg"), f"e{i}", b"x" * 1000) for i in range(50)])
    before = (await js.stream_info("GPUHEALTH_EVENTS")).config.max_bytes
    await bus.provision(js, limits=tiny("GPUHEALTH_EVENTS", 10_000))
    info = await js.stream_info("GPUHEALTH_EVENTS")
    assert info.state.messages == 50 and info.config.max_bytes == before  # not lowered while it holds more
    await js.purge_stream("GPUHEALTH_EVENTS")
    await bus.provision(js, limits=tiny("GPUHEALTH_EVENTS", 10_000))
    assert (await js.stream_info("GPUHEALTH_EVENTS")).config.max_bytes == 10_000


async def test_a_shorter_age_waits_while_a_consumer_has_older_messages_unread(nc: NATS) -> None:
    js = nc.jetstream()
    short = sizing.Limits(
        {**FLEET.streams, "GPUHEALTH_METRICS": dataclasses.replace(FLEET.streams["GPUHEALTH_METRICS"], max_age_s=1.0)},
        FLEET.buckets,
    )
    sub = await js.pull_subscribe("gpuhealth.v1.metric.>", durable="sink-metrics", stream="GPUHEALTH_METRICS")
    await bus.publish_batch(js, [(subjects.metric_subject("node-1", "nvml"), f"m{i}", b"y" * 100) for i in range(5)])
    await asyncio.sleep(1.5)  # older than the new age, and unread by the sink
    await bus.provision(js, limits=short)
    info = await js.stream_info("GPUHEALTH_METRICS")
    assert info.config.max_age == 6 * 3600 and info.state.messages == 5
    for m in await sub.fetch(5, timeout=5):
        await m.ack_sync()
    await bus.provision(js, limits=short)  # all read: the shorter age applies, and the read messages go
    assert (await js.stream_info("GPUHEALTH_METRICS")).config.max_age == 1.0


async def test_a_full_event_stream_refuses_says_which_and_resumes_when_the_bound_is_raised(
    nc: NATS, caplog: pytest.LogCaptureFixture, identity: NodeIdentity
) -> None:
    js = nc.jetstream()
    await bus.provision(js, limits=tiny("GPUHEALTH_EVENTS", 4096))
    subject = subjects.event_subject("node-1", "kmsg")
    sent = 0
    with pytest.raises(StoreFullError) as refused:
        for sent in range(100):
            await bus.publish_batch(js, [(subject, f"e{sent}", b"x" * 500)])
    assert refused.value.streams == ["GPUHEALTH_EVENTS"]
    assert "GPUHEALTH_EVENTS" in str(refused.value) and "maximum bytes exceeded" in str(refused.value)
    kept = (await js.stream_info("GPUHEALTH_EVENTS")).state.messages
    assert kept == sent and 0 < kept < 10  # DiscardNew: the stored events stay, the new one is refused

    # A producer keeps retrying (as the agent does) while the operator raises the bound.
    retrying = asyncio.create_task(
        bus.publish_until_acked(
            lambda items: bus.publish_batch(js, items), [(subject, "late", b"x" * 500)], metrics=MEASURED
        )
    )
    await asyncio.sleep(0.5)
    assert not retrying.done()
    assert full("GPUHEALTH_EVENTS") == 1.0  # shown where the process's metrics are served
    # and in the agent's own health (its API's /v1/states), with the server's words and how many wait
    [bus_state] = View(identity, no_room=MEASURED.no_room).states_json({AGENT_COMPONENT})
    [degraded] = bus_state["states"]
    assert (degraded["name"], degraded["health"]) == ("GPUHEALTH_EVENTS", "Degraded")
    assert "1 messages held" in degraded["reason"] and "maximum bytes exceeded" in degraded["reason"]
    [error] = [r for r in caplog.records if r.levelname == "ERROR"]
    assert "no room" in error.getMessage() and "GPUHEALTH_EVENTS" in error.getMessage()
    await bus.provision(js, limits=FLEET)
    async with asyncio.timeout(10):
        assert await retrying
    assert (await js.stream_info("GPUHEALTH_EVENTS")).state.messages == kept + 1
    assert full("GPUHEALTH_EVENTS") == 0.0
    assert View(identity).states_json({AGENT_COMPONENT}) == []


async def test_a_full_event_stream_takes_writes_again_once_purged(nc: NATS) -> None:
    js = nc.jetstream()
    await bus.provision(js, limits=tiny("GPUHEALTH_EVENTS", 4096))
    subject = subjects.event_subject("node-1", "kmsg")
    with pytest.raises(StoreFullError):
        for i in range(100):
            await bus.publish_batch(js, [(subject, f"e{i}", b"x" * 500)])
    await js.purge_stream("GPUHEALTH_EVENTS")
    await bus.publish_batch(js, [(subject, "after", b"x" * 500)])
    assert (await js.stream_info("GPUHEALTH_EVENTS")).state.messages == 1


async def test_a_full_metrics_stream_drops_its_oldest_and_never_refuses(nc: NATS) -> None:
    js = nc.jetstream()
    await bus.provision(js, limits=tiny("GPUHEALTH_METRICS", 8192))
    subject = subjects.metric_subject("node-1", "nvml")
    for i in range(100):
        await bus.publish_batch(js, [(subject, f"m{i}", b"y" * 500)])
    info = await js.stream_info("GPUHEALTH_METRICS")
    assert info.state.bytes <= 8192 and info.state.last_seq == 100
    assert info.state.first_seq > 1  # the oldest went


async def test_bounds_the_server_cannot_reserve_stop_provisioning_with_a_reason(nc: NATS) -> None:
    """The server reserves every stream's max_bytes in its store; waiting for room would wait forever."""
    with pytest.raises(ConfigError, match="do not fit the NATS server's JetStream store"):
        await bus.provision(nc.jetstream(), limits=sizing.limits(sizing.Fleet(nodes=1_000_000)))


async def test_up_caps_its_servers_store_at_what_the_bounds_need(tmp_path: Path) -> None:
    """`gpuctl up`'s server gets a store just large enough for one node's bounds: the streams stop at their
    bounds (recoverable) long before the disk fills (which disables JetStream until a restart)."""
    one = sizing.limits(sizing.Fleet(nodes=1))
    for max_store, fits in ((sizing.store_bytes(one), True), (100 << 20, False)):
        server = EmbeddedNats(tmp_path / str(max_store), auth=None, max_store=max_store)
        nc = await bus.connect(await server.start(), "t")
        try:
            if fits:
                await bus.provision(nc.jetstream(), limits=one)
            else:
                with pytest.raises(ConfigError):
                    await bus.provision(nc.jetstream(), limits=one)
        finally:
            await nc.close()
            await server.stop()


async def test_a_stage_not_told_the_fleet_keeps_the_bounds_it_finds_and_bounds_new_streams_by_age(
    nats_url: str,
) -> None:
    """A fleet's services upgraded without --fleet-nodes must not shrink its streams to one node's floors:
    18 s of a 3,000-node fleet's metrics, and an events stream that refuses new faults once full."""
    nc = await bus.connect(nats_url, "t")
    try:
        js = nc.jetstream()
        await bus.provision(js)  # a new deployment's stage, not told its size
        events = (await js.stream_info("GPUHEALTH_EVENTS")).config
        metrics = (await js.stream_info("GPUHEALTH_METRICS")).config
        assert (events.max_bytes, events.max_age) == (-1, 7 * 86400)
        assert (metrics.max_bytes, metrics.max_age) == (-1, 6 * 3600)
        await bus.provision(js, limits=FLEET)
        await bus.provision(js)  # a stage of the same fleet, not told its size
        for spec in subjects.STREAMS:
            assert (await js.stream_info(spec.name)).config.max_bytes == FLEET.streams[spec.name].max_bytes, spec.name
        for bucket in subjects.KV_BUCKETS:
            assert (await js.stream_info(f"KV_{bucket}")).config.max_bytes == FLEET.buckets[bucket], bucket
    finally:
        await nc.close()


def test_a_service_not_told_the_fleet_says_so(caplog: pytest.LogCaptureFixture) -> None:
    from gpuctl.stages import bounds

    lim = bounds(None)
    assert {x.max_bytes for x in lim.streams.values()} == {-1} and set(lim.buckets.values()) == {-1}
    [warning] = [r for r in caplog.records if r.levelname == "WARNING"]
    assert "--fleet-nodes" in warning.getMessage()
