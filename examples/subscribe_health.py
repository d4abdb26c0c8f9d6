"""Follow gpuhealth's health changes from another service.

    python examples/subscribe_health.py nats://127.0.0.1:4222

Health states are published on gpuhealth.v1.health.<node>.<component> only when
they change; the current state of everything is in the KV bucket
``gpuhealth_health``. Messages are msgpack with the header Gpuhealth-Schema: 1;
gpuhealth/schema/health.schema.json describes them for consumers in any language.
"""

from __future__ import annotations

import asyncio
import sys

import msgspec
import nats
from nats.aio.msg import Msg


class HealthState(msgspec.Struct, kw_only=True):
    """The fields this consumer needs; msgspec ignores the rest, so new fields never break it."""

    node: str
    component: str
    entity: str
    health: str
    reason: str
    repair_actions: list[str] = []


decoder = msgspec.msgpack.Decoder(HealthState)


async def main(url: str) -> None:
    nc = await nats.connect(url)

    async def on_change(msg: Msg) -> None:
        if (msg.headers or {}).get("Gpuhealth-Schema", "1") != "1":
            return  # a newer contract than this consumer knows
        s = decoder.decode(msg.data)
        actions = ",".join(s.repair_actions) or "-"
        print(f"{s.node:20} {s.component:32} {s.entity:14} {s.health:10} {actions:22} {s.reason}", flush=True)

    await nc.subscribe("gpuhealth.v1.health.>", cb=on_change)
    try:
        await asyncio.Event().wait()
    finally:
        await nc.drain()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "nats://127.0.0.1:4222"))
