"""Running the stages: ``gpuctl up`` (all of them on one node) and ``gpuctl serve …``.

``up`` starts the embedded nats-server (unless given ``--nats``), runs the rules
and sink services in this process, starts the agent in its own process, and
only when the agent says every source is open writes ``run.json`` into the
data dir for the other commands to find it. Its own server takes only its own
identities (gpuhealth/localauth.py): the rules, the sink and the agent each
connect as themselves, gpuctl as the operator; on a server given with
``--nats``, every stage uses the environment's credentials.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from gpuhealth import bus, localauth, natsconf, sd, sizing
from gpuhealth.config import RunInfo, read_identity, read_run_info, remove_run_info, write_run_info
from gpuhealth.errors import ConfigError, GpuhealthError
from gpuhealth.events import now_ns
from gpuhealth.natsd import EmbeddedNats, die_with_parent
from rules import limits as limits_mod
from rules.service import RulesService
from sinks.clickhouse import SinkService, Store, chdb_dsn

log = logging.getLogger("gpuhealth.up")


@dataclass
class UpOptions:
    data_dir: Path
    kmsg_path: Path
    sysfs_root: Path
    proc_root: Path
    nats_url: str | None
    clickhouse: str | None
    node: str | None
    cluster: str | None
    nats_port: int = -1
    journal: bool = False
    journal_dir: Path | None = None
    kmsg_lookback: float | None = None
    simulate_gpus: int | None = None
    nvml_poll_interval: float | None = None
    sysfs_interval: float | None = None
    host_interval: float | None = None
    rules_file: Path | None = None
    api_listen: str = "127.0.0.1:15132"
    api_tls: str = "on"
    api_tls_cert: Path | None = None
    api_tls_key: Path | None = None
    clickhouse_password_file: Path | None = None
    metrics_ttl_days: int | None = None
    checks: list[Path] | None = None


def agent_argv(nats_url: str, o: UpOptions, *, allow_inject: bool) -> list[str]:
    argv = [
        sys.executable,
        "-m",
        "producers.agent",
        "--nats",
        nats_url,
        "--data-dir",
        str(o.data_dir),
        "--kmsg-path",
        str(o.kmsg_path),
        "--sysfs-root",
        str(o.sysfs_root),
        "--proc-root",
        str(o.proc_root),
    ]
    if o.node:
        argv += ["--node", o.node]
    if o.cluster:
        argv += ["--cluster", o.cluster]
    if o.kmsg_lookback is not None:
        argv += ["--kmsg-lookback", str(o.kmsg_lookback)]
    if o.simulate_gpus is not None:
        argv += ["--simulate-gpus", str(o.simulate_gpus)]
    for flag, value in (("--nvml-poll-interval", o.nvml_poll_interval), ("--sysfs-interval", o.sysfs_interval),
                        ("--host-interval", o.host_interval)):  # fmt: skip
        if value is not None:
            argv += [flag, str(value)]
    if o.journal:
        argv.append("--journal")
    if o.journal_dir is not None:
        argv += ["--journal-dir", str(o.journal_dir)]
    argv += ["--api-listen", o.api_listen, "--api-tls", o.api_tls]
    for flag, path in (("--api-tls-cert", o.api_tls_cert), ("--api-tls-key", o.api_tls_key)):
        if path is not None:
            argv += [flag, str(path.resolve())]
    for path in o.checks or []:
        argv += ["--checks", str(path.resolve())]
    if allow_inject:
        argv.append("--allow-inject")
    return argv


class Agent:
    """The agent child process; restarted if it dies while we run."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.argv = argv
        self.env = env  # its identity (a password file) when the server is up's own
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self, timeout: float = 60.0) -> dict[str, object]:
        read_fd, write_fd = os.pipe()
        try:
            self.proc = await asyncio.create_subprocess_exec(
                *self.argv,
                "--ready-fd",
                str(write_fd),
                pass_fds=(write_fd,),
                preexec_fn=die_with_parent,
                stdin=asyncio.subprocess.DEVNULL,
                env=self.env,
            )
        finally:
            os.close(write_fd)
        loop = asyncio.get_running_loop()
        with os.fdopen(read_fd, "rb") as ready:
            try:
                line = await asyncio.wait_for(loop.run_in_executor(None, ready.readline), timeout)
            except TimeoutError:
                line = b""
        if not line:
            await self.stop()
            raise GpuhealthError("the agent exited before it was ready; see its log above")
        result: dict[str, object] = json.loads(line)
        return result

    async def stop(self, timeout: float = 15.0) -> None:
        if self.proc is None or self.proc.returncode is not None:
            return
        self.proc.terminate()
        try:
            await asyncio.wait_for(self.proc.wait(), timeout)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()


async def run_up(o: UpOptions) -> int:
    limits = limits_mod.load(o.rules_file)  # a bad rules file fails before anything starts
    gid = localauth.prepare_data_dir(o.data_dir, localauth.operator_gid())
    existing = read_run_info(o.data_dir)
    if existing is not None and _alive(existing.pid):
        raise ConfigError(f"gpuhealth is already running here (pid {existing.pid}, data dir {o.data_dir})")
    identity = read_identity(proc_root=o.proc_root, cluster=o.cluster, node=o.node)
    stop = bus.stop_on_signals()
    # One node: the metrics bound counts its GPUs at its poll interval.
    here = sizing.Fleet(1, o.simulate_gpus if o.simulate_gpus is not None else 8, o.nvml_poll_interval or 10.0)
    nats = None
    # Each stage its own identity on our own server; on a given server, the environment's (as today).
    creds: dict[str, dict[str, str] | None] = {"rules": None, "sink": None}
    agent_env = None
    if o.nats_url is None:
        ids = localauth.identities(o.data_dir, identity.node, gid)
        creds = {i.user: {"user": i.user, "password": i.password} for i in ids}
        agent_env = localauth.child_env(o.data_dir, natsconf.agent_user(identity.node), os.environ)
        room = sizing.store_bytes(sizing.limits(here))  # the bounds, not the disk, stop what is stored
        nats = EmbeddedNats(o.data_dir, port=o.nats_port, auth=localauth.server_auth(ids), max_store=room)
        url = await nats.start()
    else:
        url = o.nats_url
    store = Store(o.clickhouse or chdb_dsn(o.data_dir), password_file=o.clickhouse_password_file,
                  metrics_ttl_days=o.metrics_ttl_days)  # fmt: skip
    agent: Agent | None = None
    tasks: list[asyncio.Task[None]] = []
    connections = []
    try:
        rules_nc = await bus.connect(url, "gpuhealth-up-rules", retry_for=30, credentials=creds["rules"])
        connections.append(rules_nc)
        sink_nc = await bus.connect(url, "gpuhealth-up-sink", retry_for=30, credentials=creds["sink"])
        connections.append(sink_nc)
        await bus.provision(rules_nc.jetstream(), limits=bounds(here))
        await store.run(store.connect)
        tasks.append(asyncio.create_task(RulesService(rules_nc.jetstream(), limits=limits).run(stop)))
        tasks.append(asyncio.create_task(SinkService(sink_nc, sink_nc.jetstream(), store).run(stop)))
        agent = Agent(agent_argv(url, o, allow_inject=True), env=agent_env)
        ready = await agent.start()
        sources = {str(k): str(v) for k, v in dict(ready.get("sources", {})).items()}  # type: ignore[call-overload]
        info = RunInfo(
            pid=os.getpid(),
            nats_url=url,
            node=identity.node,
            cluster=identity.cluster,
            kmsg_path=str(o.kmsg_path),
            allow_inject=True,
            started_ns=now_ns(),
            clickhouse=store.target.redacted(),
            sources=sources,
            embedded_nats=nats is not None,
        )
        write_run_info(o.data_dir, info, gid)
        print(f"gpuhealth up on node {identity.node}", flush=True)
        print(f"  nats:       {url}{' (embedded)' if nats else ''}", flush=True)
        print(f"  clickhouse: {store.target.redacted()}", flush=True)
        print(f"  data dir:   {o.data_dir}", flush=True)
        for name, state in sources.items():
            print(f"  source {name}: {state}", flush=True)
        print("ready: Ctrl-C to stop", flush=True)
        sd.ready(f"node {identity.node}: {len(sources)} sources")
        if sd.watchdog_interval() is not None:  # a task that ends at once would read as a service that died
            tasks.append(asyncio.create_task(sd.watchdog(stop)))
        await _watch(agent, stop, tasks)
    finally:
        stop.set()
        remove_run_info(o.data_dir, os.getpid())
        if agent is not None:
            await agent.stop()
        for t in tasks:
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(t, 15)
        for nc in connections:
            with contextlib.suppress(Exception):
                await bus.shutdown(nc)
        await asyncio.get_running_loop().run_in_executor(None, store.close)
        if nats is not None:
            await nats.stop()
    print("gpuhealth stopped", flush=True)
    return 0


async def _watch(agent: Agent, stop: asyncio.Event, tasks: list[asyncio.Task[None]]) -> None:
    """Until stopped: restart the agent if it dies; fail loudly if a service dies."""
    while not stop.is_set():
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), 1.0)
        for t in tasks:
            if t.done() and not stop.is_set():
                exc = t.exception()
                raise GpuhealthError(f"a service stopped unexpectedly: {exc!r}")
        if agent.proc is not None and agent.proc.returncode is not None and not stop.is_set():
            log.warning("agent exited with %s; restarting it", agent.proc.returncode)
            await agent.start()


def bounds(fleet: sizing.Fleet | None, replicas: int = 1) -> sizing.Limits:
    """The streams' bounds for ``fleet``, said once in the log: an operator sees what a full stream means."""
    if fleet is None:
        log.warning("the fleet's size was not given (--fleet-nodes, nats-config's fleet.env): streams bounded by "
                    "age only, existing bounds in bytes kept")  # fmt: skip
        return sizing.unsized()
    lim = sizing.limits(fleet)
    if fleet.nodes == 1 and replicas > 1:  # a cluster for one node: the fleet's size was surely not given
        log.warning("streams sized for one node on a cluster: give --fleet-nodes (nats-config's fleet.env)")
    each = [f"{n.removeprefix('GPUHEALTH_').lower()} {sizing.human(x.max_bytes)}" for n, x in lim.streams.items()]
    store = sizing.human(sizing.store_bytes(lim))
    log.info("streams sized for %d nodes x %d GPUs: %s; store %s", fleet.nodes, fleet.gpus_per_node, each, store)
    return lim


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


async def serve_rules(nats_url: str, *, instance: int = 0, instances: int = 1, rules_file: Path | None = None,
                      replicas: int = 1, fleet: sizing.Fleet | None = None) -> int:  # fmt: skip
    limits = limits_mod.load(rules_file)  # a bad file fails here, before anything connects
    stop = bus.stop_on_signals()
    nc = await bus.connect(nats_url, f"gpuhealth-rules-{instance}of{instances}")
    js = nc.jetstream()
    await bus.provision(js, replicas=replicas, limits=bounds(fleet, replicas))
    service = RulesService(js, instance=instance, instances=instances, limits=limits)
    await service.start()
    sd.ready(f"rules instance {instance} of {instances}")
    await asyncio.gather(service.run(stop), sd.watchdog(stop))
    sd.stopping()
    await bus.shutdown(nc)
    return 0


async def serve_sink(nats_url: str, clickhouse: str, password_file: Path | None = None,
                     metrics_ttl_days: int | None = None, replicas: int = 1,
                     fleet: sizing.Fleet | None = None) -> int:  # fmt: skip
    # a bad URL fails here, before anything connects
    store = Store(clickhouse, password_file=password_file, metrics_ttl_days=metrics_ttl_days)
    stop = bus.stop_on_signals()
    nc = await bus.connect(nats_url, "gpuhealth-sink")
    js = nc.jetstream()
    await bus.provision(js, replicas=replicas, limits=bounds(fleet, replicas))
    sd.ready(f"sink to {store.target.redacted()}")
    try:
        await asyncio.gather(SinkService(nc, js, store).run(stop), sd.watchdog(stop))
    finally:
        sd.stopping()
        await bus.shutdown(nc)
        await asyncio.get_running_loop().run_in_executor(None, store.close)
    return 0


async def run_simulation(nats_url: str, *, nodes: int, gpus: int, fault_rate: float, interval: float,
                         duration: float | None, cluster: str, seed: int,
                         credentials: dict[str, str] | None = None) -> int:  # fmt: skip
    from producers.simulate import FleetSimulator

    stop = bus.stop_on_signals()
    inbox = natsconf.SIMULATOR_INBOX
    nc = await bus.connect(nats_url, "gpuhealth-simulate", credentials=credentials, inbox_prefix=inbox)
    js = nc.jetstream()
    await bus.provision(js, missing_only=True)  # the services own the streams; it only waits for them

    async def publish(items: list[bus.Item]) -> None:
        await bus.publish_until_acked(lambda batch: bus.publish_batch(js, batch, timeout=30), items, stop,
                                      what="simulate")  # fmt: skip

    sim = FleetSimulator(publish, nodes=nodes, gpus=gpus, fault_rate=fault_rate, interval=interval, cluster=cluster,
                         seed=seed)  # fmt: skip
    print(f"simulating {nodes} nodes x {gpus} GPUs on {nats_url}: metrics every {interval:g} s, "
          f"{fault_rate:g} faults per node-hour{f', for {duration:g} s' if duration else ' (Ctrl-C to stop)'}",
          file=sys.stderr, flush=True)  # fmt: skip

    async def report() -> None:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), max(interval, 5.0))
            p = sim.published
            print(f"published {p['metrics']} metric batches, {p['events']} events ({p['faults']} faults)",
                  file=sys.stderr, flush=True)  # fmt: skip

    reporter = asyncio.create_task(report())
    await sim.run(stop, duration)
    stop.set()
    await reporter
    await bus.shutdown(nc)
    return 0
