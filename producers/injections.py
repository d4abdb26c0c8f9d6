"""Fault injection over NATS: ``cmd.<node>.inject`` writes a kernel log record, ``cmd.<node>.nvml``
changes a simulated GPU. Both answer with an error unless the agent runs with ``--allow-inject``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path

import msgspec
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from gpuhealth import subjects
from gpuhealth.config import NodeIdentity
from producers.fake_nvml import FakeNvml
from producers.kmsg import append_record
from producers.nvml import NvmlProducer


class NvmlInjectRequest(msgspec.Struct):
    action: str  # xid | ecc_dbe | ecc_sbe | gpu_lost | remap_pending | remap_failed | slowdown | hang | replace
    gpu: int = 0
    xid: int = 0
    call: str = ""
    seconds: float = 0.0


def apply_nvml_injection(fake: FakeNvml, req: NvmlInjectRequest) -> None:
    if not 0 <= req.gpu < len(fake.gpus):
        raise LookupError(f"no GPU {req.gpu}: the simulated node has {len(fake.gpus)}")
    actions: dict[str, Callable[[], None]] = {
        "xid": lambda: fake.inject_xid(req.gpu, req.xid),
        "ecc_dbe": lambda: fake.inject_ecc(req.gpu, double_bit=True),
        "ecc_sbe": lambda: fake.inject_ecc(req.gpu, double_bit=False),
        "gpu_lost": lambda: fake.lose_gpu(req.gpu),
        "remap_pending": lambda: fake.remap_rows(req.gpu, pending=True),
        "remap_failed": lambda: fake.remap_rows(req.gpu, failed=True),
        "slowdown": lambda: fake.slowdown(req.gpu),
        "hang": lambda: fake.hang(req.call, req.seconds),
        "replace": lambda: fake.replace_gpu(req.gpu),
    }
    if req.action not in actions:
        raise ValueError(f"unknown NVML injection {req.action!r}: one of {', '.join(actions)}")
    actions[req.action]()


async def serve_nvml(nc: NATS, identity: NodeIdentity, producer: NvmlProducer, allowed: bool,
                                on_replaced: Callable[[], Awaitable[None]]) -> None:  # fmt: skip
    """Answer ``cmd.<node>.nvml``: change the simulated GPUs (only a --simulate-gpus agent has them).
    A replaced board is seen the way a restarted agent would see it: the inventory is read again."""

    async def handle(msg: Msg) -> None:
        fake = producer.nvml if isinstance(producer.nvml, FakeNvml) else None
        if not allowed or fake is None:
            if fake is None:
                await msg.respond(b'{"error": "this agent simulates no GPUs", "code": "not_found"}')
            else:
                await msg.respond(b'{"error": "injection is not allowed on this agent", "code": "forbidden"}')
            return
        try:
            req = msgspec.json.decode(msg.data, type=NvmlInjectRequest)
            apply_nvml_injection(fake, req)
        except LookupError as e:
            await msg.respond(json.dumps({"error": str(e), "code": "not_found"}).encode())
            return
        except (msgspec.DecodeError, msgspec.ValidationError, ValueError) as e:
            await msg.respond(json.dumps({"error": str(e)}).encode())
            return
        producer.wake.set()
        await msg.respond(b'{"ok": true}')
        if req.action == "replace":
            await on_replaced()

    await nc.subscribe(subjects.cmd_subject(identity.node, "nvml"), cb=handle)


class InjectRequest(msgspec.Struct):
    message: str
    priority: int = 3


async def serve_kernel(nc: NATS, identity: NodeIdentity, kmsg_path: Path, allowed: bool) -> None:
    """Answer ``cmd.<node>.inject``: write the record to this agent's kernel log source."""

    async def handle(msg: Msg) -> None:
        if not allowed:
            why = "injection is not allowed on this agent (start it with --allow-inject)"
            await msg.respond(json.dumps({"error": why, "code": "forbidden"}).encode())
            return
        try:
            req = msgspec.json.decode(msg.data, type=InjectRequest)
            seq = await asyncio.to_thread(append_record, kmsg_path, req.message, req.priority)
        except (msgspec.DecodeError, msgspec.ValidationError, OSError) as e:
            await msg.respond(json.dumps({"error": str(e)}).encode())
            return
        await msg.respond(json.dumps({"ok": True, "seq": seq, "path": str(kmsg_path)}).encode())

    await nc.subscribe(subjects.cmd_subject(identity.node, "inject"), cb=handle)
