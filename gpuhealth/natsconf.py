"""NATS for a fleet: a JetStream cluster's server configs and who may do what on it.

One account (``GPUHEALTH``) holds every identity:

- ``agent-<node>``, one a node: publishes only under its own node's event,
  metric and inventory subjects, subscribes only to its own commands, its own
  health subject and its own inbox (``_INBOX.<node>.>``; the agent connects with
  that inbox prefix), answers the commands it receives, and may read the health
  bucket (states are not secret inside a fleet; commands are);
- ``rules``, ``sink``: the services, with the JetStream API, acks and the
  subjects they publish; they create and update the streams;
- ``responder``: reads the health stream through its durable consumer and publishes only its
  decisions, its own breaker's state (``health.<node>.gpuhealth-responder``, and in the health
  bucket) and fleet incidents
  (``incident.<node>.gpuhealth-fleet``): it cannot speak as a node's agent or as the rules;
- ``operator``: what ``gpuctl`` needs: read everything, send commands to agents
  (fault injection and checks) and set-healthy events;
- ``reader``: for a third-party consumer (README, The wire contract): follows
  the health, event and incident subjects and reads the health and inventory
  buckets, and may change nothing: no subject of gpuhealth's, no KV write, no
  stream's durable consumer; its replies come on its own inbox
  (``_INBOX.reader``; it connects with that inbox prefix);
- ``simulator`` (only on ``gpuctl up``'s own server, not in a fleet's configs): what
  ``gpuctl simulate`` publishes, as any node except the real ones.

Anyone else is refused at connect. Passwords are random, stored in the server
config only as bcrypt hashes, and written once, one file an identity, for your
provisioning to put on the node (``/etc/gpuhealth/nats-password``) or in the
service's secret. ``gpuctl nats-config`` writes it all; this module is pure.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from gpuhealth import subjects
from gpuhealth.subjects import KV_HEALTH, PREFIX, STREAMS, token

ACCOUNT = "GPUHEALTH"
SERVICES = ("rules", "sink", "responder", "operator", "reader")
READER_INBOX = "_INBOX.reader"
# The buckets that are the contract (the rules' own state is not): read with the JetStream API's read-only
# requests. Consumers on a KV stream are only readers' ephemeral watchers, so creating one is no write.
_READ_BUCKETS = (f"KV_{subjects.KV_HEALTH}", f"KV_{subjects.KV_INVENTORY}")


def agent_user(node: str) -> str:
    return f"agent-{token(node)}"


def agent_inbox(node: str) -> str:
    """The inbox prefix an agent connects with: replies to it stay under a subject only it may read."""
    return f"_INBOX.{token(node)}"


def agent_permissions(node: str) -> dict[str, Any]:
    n = token(node)
    health_stream = f"KV_{KV_HEALTH}"
    return {
        "publish": {"allow": [
            f"{PREFIX}.event.{n}.>", f"{PREFIX}.metric.{n}.>", f"{PREFIX}.inventory.{n}",
            # Whether the streams exist (they are created by the services), and reading its own states.
            *(f"$JS.API.STREAM.INFO.{s.name}" for s in STREAMS),
            *(f"$JS.API.STREAM.INFO.KV_{b}" for b in subjects.KV_BUCKETS),
            f"$JS.API.CONSUMER.CREATE.{health_stream}", f"$JS.API.CONSUMER.CREATE.{health_stream}.>",
            f"$JS.API.CONSUMER.MSG.NEXT.{health_stream}.>", f"$JS.API.CONSUMER.DELETE.{health_stream}.>",
        ]},
        "subscribe": {"allow": [f"{PREFIX}.cmd.{n}.>", f"{PREFIX}.health.{n}.*", f"{agent_inbox(node)}.>"]},
        "allow_responses": True,  # to answer a command, on the asker's reply subject
    }  # fmt: skip


SERVICE_PERMISSIONS: dict[str, dict[str, Any]] = {
    "rules": {
        "publish": {"allow": [f"{PREFIX}.health.>", f"{PREFIX}.incident.>", f"{PREFIX}.dlq.>", "$KV.>",
                              "$JS.API.>", "$JS.ACK.>"]},
        "subscribe": {"allow": ["_INBOX.>"]},
    },
    "sink": {
        "publish": {"allow": [f"{PREFIX}.dlq.>", "$JS.API.>", "$JS.ACK.>"]},
        "subscribe": {"allow": ["_INBOX.>", subjects.QUERY_SUBJECT]},
        "allow_responses": True,  # answers read-only SQL
    },
    "responder": {
        "publish": {"allow": [f"{PREFIX}.decision.>", f"{PREFIX}.health.*.gpuhealth-responder",
                              f"$KV.{KV_HEALTH}.*.gpuhealth-responder.*", f"{PREFIX}.incident.*.gpuhealth-fleet",
                              "$JS.API.>", "$JS.ACK.>"]},
        "subscribe": {"allow": ["_INBOX.>"]},
    },
    "operator": {
        "publish": {"allow": [f"{PREFIX}.cmd.>", f"{PREFIX}.event.*.operator", subjects.QUERY_SUBJECT, "$JS.API.>",
                              "$JS.ACK.>"]},
        "subscribe": {"allow": ["_INBOX.>", f"{PREFIX}.health.>", f"{PREFIX}.incident.>", f"{PREFIX}.event.>"]},
    },
    "reader": {
        "publish": {"allow": [
            "$JS.API.INFO",
            *(f"$JS.API.{api}.{b}" for b in _READ_BUCKETS for api in ("STREAM.INFO", "STREAM.MSG.GET", "DIRECT.GET",
                                                                      "CONSUMER.CREATE")),
            *(f"$JS.API.{api}.{b}.>" for b in _READ_BUCKETS for api in ("DIRECT.GET", "CONSUMER.CREATE",
                                                                        "CONSUMER.INFO", "CONSUMER.MSG.NEXT",
                                                                        "CONSUMER.DELETE")),
        ]},
        "subscribe": {"allow": [f"{PREFIX}.health.>", f"{PREFIX}.event.>", f"{PREFIX}.incident.>",
                                f"{READER_INBOX}.>"]},
    },
}  # fmt: skip


SIMULATOR = "simulator"
SIMULATOR_INBOX = "_INBOX.simulator"


def simulator_permissions(real_nodes: Iterable[str]) -> dict[str, Any]:
    """Simulated nodes' events, metrics and inventories; a real node's subjects stay its agent's alone."""
    speaks = (f"{PREFIX}.event.{{}}.>", f"{PREFIX}.metric.{{}}.>", f"{PREFIX}.inventory.{{}}")
    return {
        "publish": {
            "allow": [
                *(s.format("*") for s in speaks),
                *(f"$JS.API.STREAM.INFO.{s.name}" for s in STREAMS),
                *(f"$JS.API.STREAM.INFO.KV_{b}" for b in subjects.KV_BUCKETS),
            ],
            "deny": [s.format(token(n)) for n in real_nodes for s in speaks],
        },
        "subscribe": {"allow": [f"{SIMULATOR_INBOX}.>"]},
    }


@dataclass(frozen=True)
class Identity:
    user: str
    password: str  # the secret handed to the identity; the server config has only its hash
    permissions: dict[str, Any]


def identities(nodes: Iterable[str], password: Callable[[str], str] | None = None) -> list[Identity]:
    """The services' identities and one an agent; ``password(user)`` gives each its secret (default: random)."""
    make = password or (lambda _user: secrets.token_urlsafe(24))
    out = [Identity(role, make(role), SERVICE_PERMISSIONS[role]) for role in SERVICES]
    seen = set()
    for node in nodes:
        user = agent_user(node)
        if user in seen:
            raise ValueError(f"node {node!r} twice (or two names that make the same subject token)")
        seen.add(user)
        out.append(Identity(user, make(user), agent_permissions(node)))
    return out


def _hash(password: str, rounds: int) -> str:
    import bcrypt  # only the machine that writes configs needs it (gpuhealth[fleet])

    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=rounds, prefix=b"2a")).decode()


def auth_conf(ids: list[Identity], *, rounds: int = 10, system_password: str | None = None) -> str:
    """The accounts block every server includes: users with bcrypt hashes and their permissions."""
    users = [{"user": i.user, "password": _hash(i.password, rounds), "permissions": i.permissions} for i in ids]
    sys_users = [{"user": "system", "password": _hash(system_password or secrets.token_urlsafe(24), rounds)}]
    lines = [
        "# Generated by `gpuctl nats-config`: who may do what (gpuhealth/natsconf.py). Reload with SIGHUP.",
        "accounts {",
        f"  {ACCOUNT}: {{",
        "    jetstream: enabled",
        f"    users: {json.dumps(users, indent=2)}".replace("\n", "\n    "),
        "  }",
        f"  SYS: {{ users: {json.dumps(sys_users)} }}",
        "}",
        "system_account: SYS",
    ]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Server:
    name: str
    host: str  # where the others reach it
    client_port: int = 4222
    cluster_port: int = 6222
    monitor_port: int = 8222


def server_conf(me: Server, cluster: list[Server], *, store_dir: str, listen_host: str = "0.0.0.0",
                tls_dir: str | None = None, max_file_store: str = "100G") -> str:  # fmt: skip
    """One server of the cluster: client, route and monitoring listeners, JetStream, the shared auth."""
    routes = [f"nats-route://{s.host}:{s.cluster_port}" for s in cluster if s.name != me.name]
    lines = [
        f"# {me.name} of the gpuhealth NATS cluster. Generated by `gpuctl nats-config`.",
        f"server_name: {json.dumps(me.name)}",
        f"listen: {json.dumps(f'{listen_host}:{me.client_port}')}",
        f"http: {json.dumps(f'{listen_host}:{me.monitor_port}')}",
        f"jetstream {{ store_dir: {json.dumps(store_dir)}, max_file_store: {max_file_store} }}",
        "cluster {",
        '  name: "gpuhealth"',
        f"  listen: {json.dumps(f'{listen_host}:{me.cluster_port}')}",
        f"  routes: {json.dumps(routes)}",
    ]
    if tls_dir is not None:  # routes authenticate each other by certificate
        lines.append(f"  tls {{ cert_file: {json.dumps(f'{tls_dir}/server.pem')}, key_file: "
                     f"{json.dumps(f'{tls_dir}/server-key.pem')}, ca_file: {json.dumps(f'{tls_dir}/ca.pem')}, "
                     "verify: true }")  # fmt: skip
    lines.append("}")
    if tls_dir is not None:  # clients: encrypted, and they check the server's certificate
        lines.append(f"tls {{ cert_file: {json.dumps(f'{tls_dir}/server.pem')}, key_file: "
                     f"{json.dumps(f'{tls_dir}/server-key.pem')}, ca_file: {json.dumps(f'{tls_dir}/ca.pem')}, "
                     "timeout: 5 }")  # fmt: skip
    lines += ["max_payload: 2MB", 'include "auth.conf"']
    return "\n".join(lines) + "\n"


def client_url(cluster: list[Server], *, tls: bool = False) -> str:
    """Every server, comma-separated: what --nats takes, so a client fails over between them."""
    return ",".join(f"{'tls' if tls else 'nats'}://{s.host}:{s.client_port}" for s in cluster)
