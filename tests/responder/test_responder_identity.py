"""The responder's NATS identity (gpuhealth/natsconf.py) on a real server: it publishes its decisions, its
breaker's state and fleet incidents, and nothing that would speak for a node or for the rules."""

from __future__ import annotations

import asyncio
from pathlib import Path

import nats
import pytest

from gpuhealth import bus, natsconf, subjects
from gpuhealth.natsd import EmbeddedNats


async def test_the_responder_may_publish_only_its_own_subjects(tmp_path: Path) -> None:
    ids = natsconf.identities(["n1"], lambda user: f"pw-{user}")
    server = EmbeddedNats(tmp_path, auth=natsconf.auth_conf(ids, rounds=4))
    url = await server.start()
    errors: list[str] = []

    async def on_error(e: Exception) -> None:
        errors.append(str(e))

    try:
        rules = await bus.connect(url, "rules", credentials={"user": "rules", "password": "pw-rules"})
        await bus.provision(rules.jetstream())
        await rules.close()
        nc = await nats.connect(url, user="responder", password="pw-responder", error_cb=on_error)
        js = nc.jetstream()
        for subject in (subjects.decision_subject("n1"), subjects.health_subject("resp", "gpuhealth-responder"),
                        subjects.incident_subject("resp", "gpuhealth-fleet")):  # fmt: skip
            await js.publish(subject, b"x", timeout=5)  # stored: acknowledged by its stream
        kv = await js.key_value(subjects.KV_HEALTH)
        await kv.put(subjects.health_key("resp", "gpuhealth-responder", "circuit-breaker"), b"x")
        for subject in (subjects.event_subject("n1", "kmsg"), subjects.health_subject("n1", "accelerator-nvidia-error-xid"),
                        subjects.incident_subject("n1", "accelerator-nvidia-error-xid")):  # fmt: skip
            with pytest.raises((nats.errors.TimeoutError, TimeoutError)):
                await js.publish(subject, b"x", timeout=1)
        with pytest.raises((nats.errors.TimeoutError, TimeoutError)):  # a node's state in the bucket: the rules'
            await kv.put(subjects.health_key("n1", "accelerator-nvidia-error-xid", "GPU-1"), b"x", validate_keys=False)
        async with asyncio.timeout(10):
            while len(errors) < 4:
                await asyncio.sleep(0.05)
        await nc.close()
    finally:
        await server.stop()
    assert (
        sorted(errors)
        == [
            'nats: permissions violation for publish to "$kv.gpuhealth_health.n1.accelerator-nvidia-error-xid.gpu-1"',  # nats-py lowercases
            'nats: permissions violation for publish to "gpuhealth.v1.event.n1.kmsg"',
            'nats: permissions violation for publish to "gpuhealth.v1.health.n1.accelerator-nvidia-error-xid"',
            'nats: permissions violation for publish to "gpuhealth.v1.incident.n1.accelerator-nvidia-error-xid"',
        ]
    )
