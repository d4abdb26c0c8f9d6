"""The sink stores the responder's decisions, each once, with what was decided and why."""

from __future__ import annotations

import asyncio

from nats.aio.client import Client as NATS

from gpuhealth import bus, subjects
from gpuhealth.events import Decision, ResponderOutcome, encode
from sinks.clickhouse import Store
from sinks.service import SinkService

T0 = 1_763_700_000_000_000_000


def decision(i: int, outcome: ResponderOutcome) -> Decision:
    return Decision(id=f"d-{i}", time=T0 + i, cluster="c", node=f"n{i}", source="responder",
                    component="accelerator-nvidia-error-xid", entity="GPU-1", health="Unhealthy",
                    repair_actions=["REBOOT_SYSTEM"], action="drain", outcome=outcome,
                    why=f"why {i}", adapter="slurm", health_id=f"h-{i}")  # fmt: skip


async def test_decisions_are_stored_once_each(nc: NATS, store: Store) -> None:
    js = nc.jetstream()
    sent = [decision(1, "acted"), decision(2, "refused"), decision(3, "dry_run")]
    items = [(subjects.decision_subject(d.node), d.id, encode(d)) for d in sent]
    await bus.publish_batch(js, items)
    await js.publish(items[0][0], items[0][2])  # a redelivery without its id: the sink still stores it once

    stop = asyncio.Event()
    task = asyncio.create_task(SinkService(nc, js, store).run(stop))
    query = f"SELECT node, action, outcome, why, repair_actions FROM {store.database}.responder_decisions ORDER BY node"
    async with asyncio.timeout(30):
        while len(store.client.query(query).result_rows) < 3:
            await asyncio.sleep(0.1)
    stop.set()
    await task
    assert [tuple(r) for r in store.client.query(query).result_rows] == [
        ("n1", "drain", "acted", "why 1", ["REBOOT_SYSTEM"]),
        ("n2", "drain", "refused", "why 2", ["REBOOT_SYSTEM"]),
        ("n3", "drain", "dry_run", "why 3", ["REBOOT_SYSTEM"]),
    ]
