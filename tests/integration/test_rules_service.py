"""The rules service on a real nats-server: states on subjects and in KV, restarts that don't re-alert."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from gpuhealth import bus, client, subjects
from gpuhealth.events import HEALTH_DECODER, Event, KernelEvent, SourceStatus, encode
from rules.service import RulesService


def xid(i: int, code: int, boot: str = "b1", node: str = "gpu-1") -> KernelEvent:
    return KernelEvent(
        id=f"x{i}",
        time=i * 10**9,
        cluster="c",
        node=node,
        boot_id=boot,
        source="kmsg",
        component="accelerator-nvidia-error-xid",
        kind="xid",
        xid=code,
        pci_bus_id="0000:04:00.0",
        message="m",
    )


async def publish(js: JetStreamContext, events: list[Event]) -> None:
    await bus.publish_batch(js, [(subjects.event_subject(e.node, "kmsg"), e.id, encode(e)) for e in events])


async def run_until(service: RulesService, predicate: Callable[[], bool], timeout: float = 10) -> None:
    stop = asyncio.Event()
    task = asyncio.create_task(service.run(stop))
    try:
        async with asyncio.timeout(timeout):
            while not predicate():
                await asyncio.sleep(0.05)
    finally:
        stop.set()
        await task


async def test_states_reach_the_subject_and_the_bucket(nc: NATS) -> None:
    js = nc.jetstream()
    seen: list[Msg] = []

    async def collect(m: Msg) -> None:
        seen.append(m)

    sub = await nc.subscribe("gpuhealth.v1.health.>", cb=collect)
    await publish(js, [xid(1, 79), xid(2, 79), xid(3, 13, node="gpu-2")])
    service = RulesService(js)
    await run_until(service, lambda: service.states_published >= 2)
    await nc.flush()
    states = await client.health_states(nc)
    assert [(s.node, s.health, s.repair_actions) for s in states] == [
        ("gpu-1", "Unhealthy", ["REBOOT_SYSTEM"]),
        ("gpu-2", "Degraded", ["CHECK_USER_APP_AND_GPU"]),
    ]
    decoded = [HEALTH_DECODER.decode(m.data) for m in seen]
    assert sorted(m.subject for m in seen) == [
        "gpuhealth.v1.health.gpu-1.accelerator-nvidia-error-xid",
        "gpuhealth.v1.health.gpu-2.accelerator-nvidia-error-xid",
    ]
    assert {d.node for d in decoded} == {"gpu-1", "gpu-2"}
    await sub.unsubscribe()


async def test_a_restarted_service_resumes_without_realerting(nc: NATS) -> None:
    js = nc.jetstream()
    await publish(js, [xid(1, 79)])
    first = RulesService(js)
    await run_until(first, lambda: first.states_published == 1)

    # A new process: engine state comes back from KV, the same fault again is no news,
    # and the reboot still clears what the first instance set.
    await publish(js, [xid(2, 79)])
    second = RulesService(js)
    stream_before = (await js.stream_info(subjects.HEALTH.name)).state.messages
    await publish(
        js,
        [
            SourceStatus(
                id="s",
                time=3 * 10**9,
                cluster="c",
                node="gpu-1",
                boot_id="b2",
                source="kmsg",
                component="kernel-log",
                available=True,
            )
        ],
    )
    await run_until(second, lambda: second.states_published >= 2)
    states = {(s.component, s.entity): s for s in await client.health_states(nc)}
    assert states[("accelerator-nvidia-error-xid", "0000:04:00.0")].health == "Healthy"
    assert states[("kernel-log", "gpu-1")].health == "Healthy"
    assert (await js.stream_info(subjects.HEALTH.name)).state.messages == stream_before + 2
