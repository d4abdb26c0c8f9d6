"""What gpuctl's read commands need from a running gpuhealth: find it, read the
health and inventory buckets, and ask the sink read-only SQL."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import msgspec
import nats.errors
import nats.js.errors
from nats.aio.client import Client as NATS
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from gpuhealth import bus, localauth, subjects
from gpuhealth.config import read_run_info, starting
from gpuhealth.errors import (
    ConfigError,
    GpuhealthError,
    NotFoundError,
    NotRunningError,
    PermissionDeniedError,
    QueryError,
    QueryRefused,
)
from gpuhealth.events import HEALTH_DECODER, HEALTH_ORDER, INVENTORY_DECODER, HealthState, Inventory


def stack(data_dir: Path, nats_url: str | None, user: str = localauth.OPERATOR) -> tuple[str, dict[str, str] | None]:
    """Where to connect and as whom: ``--nats`` with the environment's credentials (None), or the stack
    running in ``data_dir`` with its own ``user`` identity when its server is up's own."""
    if nats_url:
        return nats_url, None
    info = read_run_info(data_dir)
    if info is None:
        if (pid := starting(data_dir)) is not None:
            raise NotRunningError(f"gpuhealth is starting (pid {pid}, data dir {data_dir}): try again in a moment")
        raise NotRunningError(f"no running gpuhealth found in {data_dir} (start it with 'gpuctl up', or pass --nats)")
    return info.nats_url, localauth.credentials(data_dir, user) if info.embedded_nats else None


async def open_client(url: str, credentials: dict[str, str] | None = None) -> NATS:
    try:
        return await bus.connect(url, "gpuctl", retry_for=2.0, credentials=credentials)
    except ConnectionRefusedError as e:
        raise PermissionDeniedError(str(e)) from None
    except (TimeoutError, OSError, nats.errors.Error) as e:
        raise NotRunningError(f"no gpuhealth answers at {bus.redact(url)}: {e}") from e


async def connect(data_dir: Path, nats_url: str | None) -> NATS:
    """A client of ``--nats``, or of the stack running in ``data_dir`` as its operator."""
    return await open_client(*stack(data_dir, nats_url))


def local_node(data_dir: Path) -> str:
    """The node of the gpuctl up running in ``data_dir``: where a command goes when no --node is given."""
    info = read_run_info(data_dir)
    if info is None:
        raise NotRunningError(f"no running gpuhealth found in {data_dir}: pass --node and --nats")
    return info.node


async def ask_agent(node: str, verb: str, body: dict[str, Any], data_dir: Path, nats_url: str | None, *,
                    timeout: float = 5.0) -> dict[str, Any]:  # fmt: skip
    """One command to one node's agent over ``gpuhealth.v1.cmd.<node>.<verb>``; its refusal is an error."""
    nc = await connect(data_dir, nats_url)
    try:
        try:
            reply = await nc.request(subjects.cmd_subject(node, verb), json.dumps(body).encode(), timeout=timeout)
        except Exception as e:
            raise NotRunningError(f"no agent for node {node!r} answered within {timeout:g}s: {e!r}") from e
    finally:
        await nc.close()
    answer: dict[str, Any] = json.loads(reply.data)
    if "error" in answer:
        # The agent says what kind of refusal it is: an exit code of its own for each (gpuhealth/errors.py).
        kinds: dict[str, type[GpuhealthError]] = {"not_found": NotFoundError, "forbidden": PermissionDeniedError}
        error = kinds.get(str(answer.get("code")), ConfigError)
        raise error(f"node {node}: {answer['error']}")
    return answer


async def _all_values(nc: NATS, bucket: str, keys: str = ">") -> list[bytes]:
    """Every current value of a bucket, read through one ephemeral pull consumer (last value per key).

    Not nats-py's KV watcher: its end-of-initial-values marker can arrive before the values when
    the bucket is being written (a consumer_info race), and a status read would then see no states
    at all, or some of them; reproduced with 300 keys under a writer, 22 reads in 150 short. Here a
    read ends at the message the server says nothing is pending after."""
    js = nc.jetstream()
    stream, prefix = f"KV_{bucket}", f"$KV.{bucket}."
    try:
        info = await js.stream_info(stream)
        if info.state.messages == 0:
            return []
        sub = await js.pull_subscribe(
            f"{prefix}{keys}", stream=stream,
            config=ConsumerConfig(deliver_policy=DeliverPolicy.LAST_PER_SUBJECT, ack_policy=AckPolicy.NONE,
                                  mem_storage=True, inactive_threshold=30.0),
        )  # fmt: skip
    except nats.js.errors.NotFoundError as e:
        raise NotRunningError(f"bucket {bucket} not found: is gpuhealth provisioned on this server?") from e
    except (TimeoutError, nats.errors.Error) as e:
        raise NotRunningError(f"cannot read {bucket}: {e}") from e
    latest: dict[str, bytes] = {}
    try:
        while True:
            msgs = await sub.fetch(1000, timeout=5.0)
            for m in msgs:
                key = m.subject[len(prefix) :]
                if (m.headers or {}).get("KV-Operation") in ("DEL", "PURGE") or not m.data:
                    latest.pop(key, None)
                else:
                    latest[key] = m.data
            if msgs and msgs[-1].metadata.num_pending == 0:
                return list(latest.values())
    except (TimeoutError, nats.errors.TimeoutError) as e:
        raise NotRunningError(f"cannot read {bucket}: no answer in 5s") from e
    finally:
        with contextlib.suppress(nats.errors.Error):
            await sub.unsubscribe()


async def node_health_states(nc: NATS, node: str) -> list[HealthState]:
    """One node's current states (the agent's local API starts from them)."""
    return [
        HEALTH_DECODER.decode(raw) for raw in await _all_values(nc, subjects.KV_HEALTH, f"{subjects.kv_escape(node)}.>")
    ]


async def health_states(nc: NATS) -> list[HealthState]:
    states = []
    for raw in await _all_values(nc, subjects.KV_HEALTH):
        with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError):
            states.append(HEALTH_DECODER.decode(raw))
    return sorted(states, key=lambda s: (s.node, s.component, s.entity))


async def inventories(nc: NATS) -> list[Inventory]:
    out = []
    for raw in await _all_values(nc, subjects.KV_INVENTORY):
        with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError):
            out.append(INVENTORY_DECODER.decode(raw))
    return sorted(out, key=lambda i: i.node)


def worst(states: list[HealthState]) -> str:
    return max((s.health for s in states), key=HEALTH_ORDER.__getitem__, default="Healthy")


async def sql(
    nc: NATS, query: str, params: dict[str, Any] | None = None, *, max_rows: int = 10_000, timeout: float = 15.0
) -> tuple[list[str], list[list[Any]]]:
    """A read-only query answered by the sink that owns the ClickHouse store."""
    request = msgspec.json.encode({"sql": query, "params": params or {}, "max_rows": max_rows, "timeout_s": timeout})
    try:
        reply = await nc.request(subjects.QUERY_SUBJECT, request, timeout=timeout + 2)
    except nats.errors.NoRespondersError as e:
        raise NotRunningError("no gpuhealth sink answers queries on this server") from e
    except (TimeoutError, nats.errors.TimeoutError) as e:
        raise QueryError(f"the query did not finish in {timeout:.0f}s") from e
    body = msgspec.json.decode(reply.data)
    if body.get("error"):
        raise (QueryRefused if body.get("refused") else QueryError)(body["error"])
    return body.get("columns", []), body.get("rows", [])
