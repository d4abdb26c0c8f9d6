"""Bounded streams on a real nats-server: provision applies and updates the bounds, a full stream
refuses visibly and takes writes again, with no restart, once there is room."""

from __future__ import annotations

import dataclasses

import pytest
from nats.aio.client import Client as NATS
from nats.js.api import DiscardPolicy, KeyValueConfig, StorageType, StreamConfig, SubjectTransform

from gpuhealth import bus, sizing, subjects
from gpuhealth.errors import ConfigError

# Small enough for the test server to reserve in its store (it reserves every max_bytes).
FLEET = sizing.limits(sizing.Fleet(nodes=20))


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
    held = (await js.stream_info("GPUHEALTH_EVENTS")).state.bytes
    await bus.provision(js, limits=tiny("GPUHEALTH_EVENTS", 10_000))
    info = await js.stream_info("GPUHEALTH_EVENTS")
    assert info.state.messages == 50 and info.config.max_bytes == held


async def test_bounds_the_server_cannot_reserve_stop_provisioning_with_a_reason(nc: NATS) -> None:
    """The server reserves every stream's max_bytes in its store; waiting for room would wait forever."""
    with pytest.raises(ConfigError, match="do not fit the NATS server's JetStream store"):
        await bus.provision(nc.jetstream(), limits=sizing.limits(sizing.Fleet(nodes=1_000_000)))
