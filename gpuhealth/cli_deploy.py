"""gpuctl nats-config: the NATS cluster's configs and one identity a node, for a fleet."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from gpuhealth.errors import ConfigError


def _nodes(names: list[str], files: list[Path]) -> list[str]:
    out = list(names)
    for f in files:
        try:
            lines = f.read_text().splitlines()
        except OSError as e:
            raise ConfigError(f"cannot read {f}: {e.strerror or e}") from None
        out += [line.split("#", 1)[0].strip() for line in lines if line.split("#", 1)[0].strip()]
    return out


def nats_config(
    out: Annotated[Path, typer.Option("--out", help="directory to write the configs and secrets into")],
    node: Annotated[list[str] | None, typer.Option("--node", help="a GPU node's name (repeatable)")] = None,
    nodes_file: Annotated[list[Path] | None, typer.Option("--nodes-file", help="node names, one a line")] = None,
    server: Annotated[list[str] | None, typer.Option(
        "--server", help="NAME=HOST of a NATS server (repeatable; default nats-1..3 on hosts of those names)")] = None,
    store_dir: Annotated[str, typer.Option("--store-dir", help="JetStream's directory on the servers")] = (
        "/data/jetstream"),
    tls_dir: Annotated[str | None, typer.Option(
        "--tls-dir", help="on the servers: ca.pem, server.pem, server-key.pem")] = None,
) -> None:  # fmt: skip
    """Write a 3-server JetStream cluster's configs (nats-N.conf, auth.conf) and one password an identity.

    Passwords go to OUT/secrets/<user>.password (0600), the server config keeps only bcrypt hashes. Run it again
    with more nodes: existing identities keep their passwords. Reload the servers with SIGHUP."""
    from gpuhealth import natsconf
    from gpuhealth.localauth import keep_secret

    servers = []
    for spec in server or ["nats-1=nats-1", "nats-2=nats-2", "nats-3=nats-3"]:
        name, _, host = spec.partition("=")
        if not name or not host:
            raise ConfigError(f"--server {spec!r}: use NAME=HOST")
        servers.append(natsconf.Server(name, host))
    names = _nodes(node or [], nodes_file or [])
    if not names:
        raise ConfigError("give the GPU nodes: --node NAME or --nodes-file FILE")
    secrets_dir = out / "secrets"
    secrets_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(secrets_dir, 0o700)

    def password(user: str) -> str:
        return keep_secret(secrets_dir / f"{user}.password")

    try:
        ids = natsconf.identities(names, password)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    (out / "auth.conf").write_text(natsconf.auth_conf(ids, system_password=password("system")))
    os.chmod(out / "auth.conf", 0o600)
    for s in servers:
        (out / f"{s.name}.conf").write_text(natsconf.server_conf(s, servers, store_dir=store_dir, tls_dir=tls_dir))
    print(f"wrote {len(servers)} server configs and auth.conf ({len(ids)} identities) to {out}")
    print(f"clients: --nats {natsconf.client_url(servers, tls=tls_dir is not None)}")
    print(f"secrets: {secrets_dir}/<user>.password (agents: agent-<node>; services: rules, sink, operator)")
