"""The read-only identity a third-party consumer gets: it follows health, events and incidents and reads the
health and inventory buckets, and can change nothing on the bus."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import nats
import nats.js.errors
from nats.aio.msg import Msg
from nats.js.kv import KeyValue

from gpuhealth import localauth, natsconf, subjects
from gpuhealth.events import HEALTH_DECODER
from tests.e2e.conftest import Up, gpuctl

READER = "reader"
XID_STATE = ("e2e-node", "accelerator-nvidia-error-xid", "0000:04:00.0")


async def as_reader(up: Up, errors: list[str]) -> nats.NATS:
    async def on_error(e: Exception) -> None:
        errors.append(str(e))

    return await nats.connect(
        up.info.nats_url, error_cb=on_error, connect_timeout=5, inbox_prefix=natsconf.READER_INBOX,
        **localauth.credentials(up.data_dir, READER),
    )  # fmt: skip


async def test_the_reader_follows_health_and_events_and_reads_the_buckets(up_stack: Up) -> None:
    errors: list[str] = []
    nc = await as_reader(up_stack, errors)
    try:
        got: dict[str, list[str]] = {"health": [], "event": [], "incident": []}
        for family, seen in got.items():
            await nc.subscribe(f"{subjects.PREFIX}.{family}.>", cb=_recorder(seen))
        await nc.flush()
        assert gpuctl("inject-fault", "--xid", "79", "--pci", "0000:04:00.0", "--data-dir",
                      str(up_stack.data_dir)).returncode == 0  # fmt: skip
        async with asyncio.timeout(60):
            while not all(got.values()):
                await asyncio.sleep(0.1)
        kv = await nc.jetstream().key_value(subjects.KV_HEALTH)
        state = HEALTH_DECODER.decode((await kv.get(subjects.health_key(*XID_STATE))).value or b"")
        assert (state.health, state.pci_bus_id) == ("Unhealthy", "0000:04:00.0")
        assert subjects.health_key(*XID_STATE) in await kv.keys()
        inventory = await nc.jetstream().key_value(subjects.KV_INVENTORY)
        async with asyncio.timeout(60):  # the rules keep the inventory the agent sends at its start
            while subjects.kv_escape("e2e-node") not in await _keys(inventory):
                await asyncio.sleep(0.2)
        assert errors == []
    finally:
        await nc.close()


def _recorder(seen: list[str]) -> Callable[[Msg], Awaitable[None]]:
    async def record(msg: Msg) -> None:
        seen.append(msg.subject)

    return record


async def _keys(kv: KeyValue) -> list[str]:
    try:
        return await kv.keys()
    except nats.js.errors.NoKeysError:
        return []


FORBIDDEN_PUBLISH = [
    subjects.event_subject("e2e-node", "kmsg"),  # speak for a node
    subjects.event_subject("e2e-node", "operator"),  # a SetHealthy
    subjects.health_subject("e2e-node", "accelerator-nvidia-error-xid"),
    subjects.incident_subject("e2e-node", "accelerator-nvidia-error-xid"),
    subjects.dlq_subject("e2e-node", "rules"),
    subjects.cmd_subject("e2e-node", "inject"),
    subjects.QUERY_SUBJECT,
    f"$KV.{subjects.KV_HEALTH}.e2e-node.x.y",  # a KV put
    f"$JS.API.STREAM.PURGE.KV_{subjects.KV_HEALTH}",
    f"$JS.API.STREAM.DELETE.{subjects.EVENTS.name}",
    f"$JS.API.CONSUMER.MSG.NEXT.{subjects.EVENTS.name}.rules",  # take the rules' messages
    f"$JS.API.CONSUMER.DURABLE.CREATE.{subjects.EVENTS.name}.rules",
    f"$JS.API.CONSUMER.DELETE.{subjects.HEALTH.name}.sink",
    f"$JS.API.STREAM.MSG.GET.KV_{subjects.KV_RULES}",  # the rules' own state is not the contract
    "$JS.ACK.GPUHEALTH_EVENTS.rules.1.1.1.1.0",
]


async def test_the_reader_may_publish_nothing_and_read_no_one_elses_replies(up_stack: Up) -> None:
    errors: list[str] = []
    nc = await as_reader(up_stack, errors)
    try:
        for s in FORBIDDEN_PUBLISH:
            await nc.publish(s, b"forged")
        for s in ("_INBOX.>", f"{subjects.PREFIX}.cmd.>", f"{subjects.PREFIX}.query.>"):
            await nc.subscribe(s)
        await nc.flush()
        expected = len(FORBIDDEN_PUBLISH) + 3
        async with asyncio.timeout(10):
            while len(errors) < expected:
                await asyncio.sleep(0.05)
    finally:
        await nc.close()
    # The refusals come lower-cased.
    assert sorted(errors) == sorted(
        [f'nats: permissions violation for publish to "{s.lower()}"' for s in FORBIDDEN_PUBLISH]
        + [f'nats: permissions violation for subscription to "{s.lower()}"'
           for s in ("_INBOX.>", f"{subjects.PREFIX}.cmd.>", f"{subjects.PREFIX}.query.>")]
    )  # fmt: skip
