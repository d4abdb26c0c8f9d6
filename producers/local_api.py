"""The agent's local API (producers/api.py) as the agent runs it: started beside the producers, its TLS and
its token, the writes it takes (inject a kernel line, set components healthy) and what it shows (what the
agent published, the health states the rules publish for this node). It needs no bus.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import ssl
from pathlib import Path

import msgspec
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from gpuhealth import client, subjects
from gpuhealth.config import NodeIdentity
from gpuhealth.errors import ConfigError
from gpuhealth.events import (
    EVENT_DECODER,
    HEALTH_DECODER,
    METRIC_DECODER,
    CheckResult,
    SetHealthy,
    encode,
    new_id,
    now_ns,
)
from producers import api as api_mod
from producers import api_auth, checks
from producers import spool as spool_mod
from producers.api_http import ClientError
from producers.kmsg import append_record
from producers.options import AgentOptions
from producers.producer import Publish

log = logging.getLogger("gpuhealth.agent")


def note_published(view: api_mod.View, items: list[tuple[str, str, bytes]]) -> None:
    """What went out, for the local API: events and metric batches (a storm is already a few events); the
    inventory is the newest taken, not the newest sent (a replayed spool holds older ones)."""
    for subject, _, payload in items:
        family = subject.split(".", 3)[2]
        if family == "event":
            view.published_event(EVENT_DECODER.decode(payload))
        elif family == "metric":
            view.published_metrics(METRIC_DECODER.decode(payload))


async def follow_health(nc: NATS, identity: NodeIdentity, view: api_mod.View) -> None:
    """Feed the local API this node's health states: the KV bucket, then the health subject."""

    async def on_health(msg: Msg) -> None:
        with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError):
            view.health_changed(HEALTH_DECODER.decode(msg.data))

    await nc.subscribe(subjects.node_health_subjects(identity.node), cb=on_health)
    with contextlib.suppress(Exception):  # the bucket may be away: states arrive on the subject anyway
        for h in await client.node_health_states(nc, identity.node):
            view.health_changed(h)


def start_api(args: AgentOptions, identity: NodeIdentity, view: api_mod.View, publish: Publish,
              state_dir: Path, runner: checks.CheckRunner) -> api_mod.Api | None:  # fmt: skip
    """The local API; its writes need the token in ``state_dir``/api-token. It needs no bus."""
    if args.api_listen in ("", "off"):
        return None
    loop = asyncio.get_running_loop()

    def inject(message: str, priority: int) -> int:
        return append_record(args.kmsg_path, message, priority)

    def set_healthy(components: list[str], reason: str) -> int:
        t = now_ns()
        events = [SetHealthy(id=new_id(t), time=t, cluster=identity.cluster, node=identity.node,
                             machine_id=identity.machine_id, boot_id=identity.boot_id,
                             boot_time=identity.boot_time_ns, source="api",
                             component="operator", target_component=c, user="local-api", reason=reason)
                  for c in components]  # fmt: skip
        items = [(subjects.event_subject(identity.node, "api"), e.id, encode(e)) for e in events]
        try:
            api_mod.run_coroutine(loop, publish(items))
        except spool_mod.SpoolFull as e:
            raise ClientError(503, f"not taken: {e}; try again once the bus is back") from None
        return len(items)

    def run_checks(names: list[str], tag: str | None) -> list[CheckResult]:  # GPUd's trigger-check: run them now
        chosen = runner.select(names, tag)
        longest = max((c.timeout_s for c in chosen), default=0.0)
        return list(api_mod.run_coroutine(loop, runner.run_many(chosen, "tag" if tag else "manual"), longest + 10))

    gpus = view.inventory.gpus if view.inventory else []
    actions = api_mod.Actions(allow_inject=args.allow_inject, inject=inject, set_healthy=set_healthy,
                              default_pci=gpus[0].pci_bus_id if gpus else "0000:00:00.0",
                              run_checks=run_checks)  # fmt: skip
    try:
        token = api_auth.load_or_create_token(state_dir / api_auth.TOKEN_FILE)
    except OSError as e:  # a token no one can read is no token: reads stay open, writes are refused
        log.error("the local API refuses writes: cannot keep its token in %s: %s", state_dir, e)
        token = secrets.token_urlsafe(32)
    tls = api_tls_context(args, state_dir)
    try:
        server = api_mod.Api(view, actions, args.api_listen, token=token, tls=tls)
    except OSError as e:  # the port is taken (another agent, GPUd itself): run without the API, say so
        log.error("local API not started on %s: %s", args.api_listen, e)
        return None
    server.start()
    return server


def api_tls_context(args: AgentOptions, state_dir: Path) -> ssl.SSLContext | None:
    """The API's TLS: off, the operator's certificate, or the agent's own (made at the first start)."""
    cert, key = args.api_tls_cert, args.api_tls_key
    if (cert is None) != (key is None):
        raise ConfigError("--api-tls-cert and --api-tls-key go together")
    if args.api_tls == "off":
        if cert is not None:
            raise ConfigError("--api-tls-cert with --api-tls off: a certificate would not be used")
        return None
    from producers import api_tls  # only an agent serving HTTPS needs it

    if cert is not None and key is not None:
        return api_tls.server_context(cert, key)
    return api_tls.own_context(state_dir)
