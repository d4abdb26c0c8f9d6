"""NATS for a fleet, with real servers: a 3-server JetStream cluster from the configs `gpuctl nats-config`
writes, the services and an agent each with its own identity, a server killed mid-stream, and the
permissions that stop one node from speaking for another."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import nats
import nats.errors
import pytest

from gpuhealth import bus, natsconf, subjects
from gpuhealth.events import KernelEvent, SourceStatus, encode
from tests.e2e.conftest import GPUCTL, wait_for
from tests.natscluster import Cluster, creds_env, password, start_cluster, write_certs


@contextlib.contextmanager
def service(cluster: Cluster, user: str, argv: list[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("ab") as out:
        proc = subprocess.Popen(argv, env=creds_env(user), stdout=out, stderr=subprocess.STDOUT)
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def pipeline(cluster: Cluster, tmp_path: Path) -> Iterator[None]:
    """The rules and the sink, as on a fleet: their own identities, streams with 3 replicas."""
    rules = [GPUCTL, "serve", "rules", "--nats", cluster.url, "--replicas", "3"]
    sink = [GPUCTL, "serve", "sink", "--nats", cluster.url, "--replicas", "3", "--clickhouse",
            f"chdb://{tmp_path / 'clickhouse'}"]  # fmt: skip
    with service(cluster, "rules", rules, tmp_path / "rules.log"), service(cluster, "sink", sink,
                                                                           tmp_path / "sink.log"):  # fmt: skip
        yield


def operator(cluster: Cluster, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([GPUCTL, *args, "--nats", cluster.url], env=creds_env("operator"), capture_output=True,
                          text=True, timeout=timeout)  # fmt: skip


def sql(cluster: Cluster, query: str) -> list[list[object]] | None:
    """Rows as lists, asked of the sink over NATS with the operator's identity; None when it does not answer."""
    try:
        r = operator(cluster, "sql", query, "--json", timeout=20)
    except subprocess.TimeoutExpired:
        return None
    return [list(row.values()) for row in json.loads(r.stdout)] if r.returncode == 0 else None


async def as_user(cluster: Cluster, user: str, **kw: object) -> nats.NATS:
    errors: list[str] = kw.pop("errors", [])  # type: ignore[assignment]

    async def on_error(e: Exception) -> None:
        errors.append(str(e))

    return await nats.connect(cluster.url.split(","), user=user, password=password(user), error_cb=on_error,
                              connect_timeout=5, **kw)  # type: ignore[arg-type]  # fmt: skip


def event(i: int, node: str = "node-a") -> SourceStatus | KernelEvent:
    base = {"id": f"e-{i:06d}", "time": 1_800_000_000_000_000_000 + i, "cluster": "c", "node": node,
            "boot_id": "boot-1", "source": "kmsg"}  # fmt: skip
    if i % 1000 == 500:  # now and then a fatal Xid on a GPU of its own: the rules turn it into a state
        pci = f"0000:{i // 1000 + 16:02x}:00.0"
        return KernelEvent(**base, component="accelerator-nvidia-error-xid", kind="xid", xid=79, pci_bus_id=pci,
                           message=f"NVRM: Xid (PCI:{pci[:-2]}): 79, GPU has fallen off the bus")  # fmt: skip
    return SourceStatus(**base, component="kernel-log", available=True, reason=f"read {i}")


async def test_a_server_killed_mid_stream_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path / "nats")
    try:
        with pipeline(cluster, tmp_path):
            nc = await as_user(cluster, "agent-node-a", inbox_prefix=natsconf.agent_inbox("node-a"))
            try:
                js = nc.jetstream()
                await bus.provision(js, missing_only=True)  # what the agent does: waits for the services' streams
                info = await js.stream_info(subjects.EVENTS.name)
                assert info.config.num_replicas == 3
                total, killed = 6000, ""
                stop = asyncio.Event()
                for start in range(0, total, 250):
                    batch = [(subjects.event_subject("node-a", "kmsg"), e.id, encode(e))
                             for e in map(event, range(start, start + 250))]  # fmt: skip
                    await bus.publish_until_acked(lambda b: bus.publish_batch(js, b, timeout=5), batch, stop,
                                                  what="test")  # fmt: skip
                    if start == 2000:  # the stream's leader goes, mid-stream
                        killed = (await js.stream_info(subjects.EVENTS.name)).cluster.leader  # type: ignore[union-attr]
                        cluster.kill(killed)
            finally:
                await nc.close()
            assert killed

            def stored() -> bool:
                rows = sql(cluster, "SELECT count(), uniqExact(id) FROM gpuhealth.events")
                return rows == [[total, total]]

            wait_for(stored, timeout=90)
            # The rules saw every fault too: one Unhealthy GPU for each of the six Xids, two of them sent after the kill.
            wait_for(lambda: sql(cluster, "SELECT count(DISTINCT entity) FROM gpuhealth.health_states WHERE "
                                 "component = 'accelerator-nvidia-error-xid' AND health = 'Unhealthy'") == [[6]])  # fmt: skip
    finally:
        cluster.stop()


async def test_an_agent_may_speak_only_for_its_own_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = start_cluster(tmp_path / "nats")
    kmsg = tmp_path / "kmsg"
    kmsg.touch()
    agent = [sys.executable, "-m", "producers.agent", "--nats", cluster.url, "--node", "node-a", "--simulate-gpus",
             "1", "--allow-inject", "--kmsg-path", str(kmsg), "--data-dir", str(tmp_path / "agent"),
             "--sysfs-root", str(tmp_path / "nosys"), "--proc-root", "/proc", "--api-listen", "off"]  # fmt: skip
    try:
        with pipeline(cluster, tmp_path), service(cluster, "agent-node-a", agent, tmp_path / "agent.log"):
            # The real agent, rules, sink and gpuctl, each with only its own permissions, do the whole job:
            # a fault injected over the agent's command subject comes back as a state in gpuctl status.
            def injected() -> bool:
                return operator(cluster, "inject-fault", "--node", "node-a", "--xid", "79", "--pci",
                                "0000:18:00.0").returncode == 0  # fmt: skip

            wait_for(injected, timeout=60)

            def unhealthy() -> bool:
                r = operator(cluster, "status", "--json")
                return r.stdout.strip() != "" and any(
                    s["node"] == "node-a" and s["component"] == "accelerator-nvidia-error-xid"
                    and s["health"] == "Unhealthy" for s in json.loads(r.stdout)["states"])  # fmt: skip

            wait_for(unhealthy, timeout=60)

            errors: list[str] = []
            nc = await as_user(cluster, "agent-node-a", inbox_prefix=natsconf.agent_inbox("node-a"), errors=errors)
            try:
                js = nc.jetstream()
                # Publishing as another node: the server refuses it, nothing is stored.
                with pytest.raises((nats.errors.TimeoutError, TimeoutError)):
                    await js.publish(subjects.event_subject("node-b", "kmsg"), encode(event(1, "node-b")), timeout=2)
                # Listening to another node's commands, or to everything: refused.
                await nc.subscribe(subjects.cmd_subject("node-b", "inject"))
                await nc.subscribe("gpuhealth.v1.>")
                await nc.flush()
                async with asyncio.timeout(10):  # the server's refusals arrive on this loop: wait on it, not beside it
                    while len(errors) < 3:
                        await asyncio.sleep(0.05)
            finally:
                await nc.close()
            assert sorted(errors) == [
                'nats: permissions violation for publish to "gpuhealth.v1.event.node-b.kmsg"',
                'nats: permissions violation for subscription to "gpuhealth.v1.>"',
                'nats: permissions violation for subscription to "gpuhealth.v1.cmd.node-b.inject"',
            ]
            ops = await as_user(cluster, "operator")
            try:
                stored = await ops.jetstream().stream_info(
                    subjects.EVENTS.name, subjects_filter="gpuhealth.v1.event.node-b.>"
                )
                assert stored.state.subjects in (None, {})
                with pytest.raises(nats.errors.NoRespondersError):  # nobody took node-b's commands
                    await ops.request(subjects.cmd_subject("node-b", "inject"), b"{}", timeout=2)
            finally:
                await ops.close()

        # No credentials, or wrong ones: refused at connect, with a clear error.
        with pytest.raises(ConnectionRefusedError, match="refused the credentials"):
            await bus.connect(cluster.url, "nobody", retry_for=3)
        monkeypatch.setenv("GPUHEALTH_NATS_USER", "agent-node-a")
        monkeypatch.setenv("GPUHEALTH_NATS_PASSWORD", "wrong")
        with pytest.raises(ConnectionRefusedError, match="refused the credentials"):
            await bus.connect(cluster.url, "impostor", retry_for=3)
    finally:
        cluster.stop()


async def test_with_tls_a_client_must_trust_the_servers_ca(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    certs = write_certs(tmp_path / "tls")
    cluster = start_cluster(tmp_path / "nats", tls_dir=certs)  # routes verify each other's certificates
    try:
        monkeypatch.setenv("GPUHEALTH_NATS_USER", "operator")
        monkeypatch.setenv("GPUHEALTH_NATS_PASSWORD", password("operator"))
        with pytest.raises((ConnectionError, ConnectionRefusedError)):  # no CA given: the handshake fails
            await bus.connect(cluster.url, "untrusting", retry_for=3)
        monkeypatch.setenv("GPUHEALTH_NATS_TLS_CA", str(certs / "ca.pem"))
        nc = await bus.connect(cluster.url, "trusting", retry_for=20)
        try:
            js = nc.jetstream()
            await bus.provision(js, replicas=3)  # JetStream over TLS routes: the cluster formed
            ack = await js.publish(subjects.event_subject("node-a", "operator"), encode(event(1)))  # its one subject
            assert ack.stream == subjects.EVENTS.name
        finally:
            await nc.close()
    finally:
        cluster.stop()
