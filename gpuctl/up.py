"""Running the stages: ``gpuctl up`` (all of them on one node) and ``gpuctl serve …``.

``up`` starts the embedded nats-server (unless given ``--nats``), the rules
and sink services, and the agent in its own process, and only when each says
it is ready writes ``run.json`` into the data dir for the other commands to
find it. Run as root, it runs the rules and the sink each in a process of
their own as its service user (gpuctl/privsep.py), or in its own process
where it cannot. Its own server takes only its own identities
(gpuhealth/localauth.py): the rules, the sink and the agent each connect as
themselves, gpuctl as the operator; on a server given with ``--nats``, every
stage uses the environment's credentials.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from nats.aio.client import Client as NATS
from prometheus_client import CollectorRegistry

from gpuctl import privsep
from gpuhealth import bus, localauth, natsconf, sd, sizing, telemetry
from gpuhealth.config import LOCK, RunInfo, read_identity, remove_run_info, write_run_info
from gpuhealth.errors import ConfigError, GpuhealthError
from gpuhealth.events import now_ns
from gpuhealth.natsd import EmbeddedNats, die_with_parent
from rules import limits as limits_mod
from rules.service import RulesService
from sinks import target as target_mod
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
    service_user: str | None = None
    metrics_listen: str | None = None  # the rules' and the sink's (the agent's: its API)


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


# What the rules and the sink import only when they first need it, imported as root before the drop: their user
# may not read the interpreter's files (gpuctl/privsep.py).
RULES_MODULES = ("encodings.idna",)
# The sink: the standard library's modules that chDB and clickhouse-connect import, then those two once dropped
# (gpuctl/privsep.py: chDB's threads must start with the capability to renice a query's threads).
SINK_MODULES = (*RULES_MODULES, "importlib.readers", "sqlglot", "sqlglot.dialects.clickhouse", "getpass",
                "sysconfig", "termios", "xml.etree.ElementTree", "zoneinfo", "pyexpat")  # fmt: skip
SINK_AFTER = ("chdb", "clickhouse_connect", "clickhouse_connect.driver.exceptions")


NOT_ASKED = privsep.Ready(None)  # a unit's service: no one waits on it but systemd


def stage_argv(stage: str, nats_url: str, o: UpOptions, user: privsep.ServiceUser, here: sizing.Fleet) -> list[str]:
    """``gpuctl serve rules|sink`` as up's child: root until it has read its inputs, then ``user``."""
    argv = [sys.executable, "-m", "gpuctl", "serve", stage, "--nats", nats_url, "--as-user", user.name,
            "--fleet-nodes", "1", "--fleet-gpus", str(here.gpus_per_node),
            "--fleet-poll-interval", str(here.poll_interval_s)]  # fmt: skip
    if stage == "rules" and o.rules_file is not None:
        argv += ["--rules", str(o.rules_file)]
    if stage == "sink":
        argv += ["--clickhouse", o.clickhouse or chdb_dsn(o.data_dir)]
        if o.clickhouse_password_file is not None:
            argv += ["--clickhouse-password-file", str(o.clickhouse_password_file)]
        if o.metrics_ttl_days is not None:
            argv += ["--metrics-ttl-days", str(o.metrics_ttl_days)]
    if o.metrics_listen:  # one flag, two processes: the rules on its port, the sink on the next (port 0: any)
        host, _, port = o.metrics_listen.rpartition(":")
        argv += ["--metrics-listen", f"{host}:{int(port) + (1 if stage == 'sink' and int(port) else 0)}"]
    return argv


def stage_env(o: UpOptions, user: str) -> dict[str, str]:
    """A child's environment: its own identity on up's server; never up's systemd socket (only up notifies)."""
    env = localauth.child_env(o.data_dir, user, os.environ) if o.nats_url is None else dict(os.environ)
    return {k: v for k, v in env.items() if k not in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID")}


class Child:
    """A stage in its own process (the agent; the rules and the sink as the service user); restarted if it dies."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.name = name
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
                start_new_session=True,  # a terminal's Ctrl-C reaches up alone, which stops its children in order
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
        result: dict[str, object] = json.loads(line) if line else {}
        if not result.get("ready"):
            await self.stop()
            raise GpuhealthError(f"the {self.name} could not start: {result.get('error', 'see its log above')}")
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
    """Every stage on this node, started in order (NATS, the rules and the sink, the agent) and stopped in the
    reverse order: the agent first, so that what it sent is drained by the rest, and NATS last. A SIGINT or
    SIGTERM at any instant, start-up included, stops what has started and nothing waits on what has not."""
    limits = limits_mod.load(o.rules_file)  # a bad rules file fails before anything starts
    kmsg_file(o.kmsg_path)
    gid = localauth.prepare_data_dir(o.data_dir, localauth.operator_gid())
    _lock = take_lock(o.data_dir)  # held until up's process ends, however it ends
    identity = read_identity(proc_root=o.proc_root, cluster=o.cluster, node=o.node)
    user = privsep.service_user(o.service_user, data_gid=gid, needs_dir=o.clickhouse is None)
    stop = bus.stop_on_signals()
    # One node: the metrics bound counts its GPUs at its poll interval.
    here = sizing.Fleet(1, o.simulate_gpus if o.simulate_gpus is not None else 8, o.nvml_poll_interval or 10.0)
    nats, url = None, o.nats_url or ""
    # Each stage its own identity on our own server; on a given server, the environment's (as today).
    creds: dict[str, dict[str, str] | None] = {"rules": None, "sink": None}
    agent_env = None
    dsn = o.clickhouse or chdb_dsn(o.data_dir)
    target = target_mod.parse(dsn, password_file=o.clickhouse_password_file)
    children: list[Child] = []
    inside = Inside()
    try:
        if o.nats_url is None:
            ids = localauth.identities(o.data_dir, identity.node, gid)
            creds = {i.user: {"user": i.user, "password": i.password} for i in ids}
            agent_env = localauth.child_env(o.data_dir, natsconf.agent_user(identity.node), os.environ)
            room = sizing.store_bytes(sizing.limits(here))  # the bounds, not the disk, stop what is stored
            nats = EmbeddedNats(o.data_dir, port=o.nats_port, auth=localauth.server_auth(ids), max_store=room)
            url = await bus.unless_stopped(nats.start(), stop)
        if user is None:
            store = Store(dsn, password_file=o.clickhouse_password_file, metrics_ttl_days=o.metrics_ttl_days)
            await bus.unless_stopped(inside.start(url, creds, store, limits, here, stop, o.metrics_listen), stop)
        else:
            if o.clickhouse is None:
                privsep.give_store(o.data_dir, Path(target.path), user, gid)
            for stage in ("rules", "sink"):  # the rules first: they make the streams the sink reads
                children.append(Child(stage, stage_argv(stage, url, o, user, here), env=stage_env(o, stage)))
                await bus.unless_stopped(children[-1].start(), stop)
        agent = Child("agent", agent_argv(url, o, allow_inject=True), env=agent_env)
        children.insert(0, agent)  # stopped first: what it sent is then drained by the rest
        ready = await bus.unless_stopped(agent.start(), stop)
        sources = {str(k): str(v) for k, v in dict(ready.get("sources", {})).items()}  # type: ignore[call-overload]
        info = RunInfo(pid=os.getpid(), nats_url=url, node=identity.node, cluster=identity.cluster,
                       kmsg_path=str(o.kmsg_path), allow_inject=True, started_ns=now_ns(), clickhouse=target.redacted(),
                       sources=sources, embedded_nats=nats is not None)  # fmt: skip
        write_run_info(o.data_dir, info, gid)
        _say_ready(info, o.data_dir)
        if sd.watchdog_interval() is not None:  # a task that ends at once would read as a service that died
            inside.tasks.append(asyncio.create_task(sd.watchdog(stop)))
        await _watch(children, stop, inside.tasks)
    except bus.Stopped:
        log.info("stopped while starting")
    finally:
        stop.set()
        remove_run_info(o.data_dir, os.getpid())
        for child in children:
            await child.stop()
        await inside.stop()
        if nats is not None:
            await nats.stop()
    print("gpuhealth stopped", flush=True)
    return 0


def _say_ready(info: RunInfo, data_dir: Path) -> None:
    print(f"gpuhealth up on node {info.node}", flush=True)
    print(f"  nats:       {info.nats_url}{' (embedded)' if info.embedded_nats else ''}", flush=True)
    print(f"  clickhouse: {info.clickhouse}", flush=True)
    print(f"  data dir:   {data_dir}", flush=True)
    for name, state in info.sources.items():
        print(f"  source {name}: {state}", flush=True)
    print("ready: Ctrl-C to stop", flush=True)
    sd.ready(f"node {info.node}: {len(info.sources)} sources")


def take_lock(data_dir: Path) -> int:
    """The data dir's lock, taken before anything starts and held by up's process for its life (the kernel lets
    go when it ends, however it ends), with its pid in it: a second up says who runs here, and gpuctl status
    says "starting" while the lock is held and run.json not yet written."""
    fd = os.open(data_dir / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
        os.close(fd)
        raise ConfigError(
            f"gpuhealth is already running or starting here (pid {holder}, data dir {data_dir})"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def kmsg_file(path: Path) -> None:
    """A kernel log file named but not there yet is made, empty, for the agent to follow: the README's first
    example points up at one (--kmsg-path /tmp/kmsg) and injects into it. Never a device or a FIFO."""
    if not path.exists() and path.parent.is_dir() and path.parent != Path("/dev"):
        path.touch(mode=0o600)
        log.info("made %s, an empty kernel log file, as --kmsg-path names it", path)


class Inside:
    """The rules and the sink in up's own process, as root: where there is no service user to drop to."""

    def __init__(self) -> None:
        self.tasks: list[asyncio.Task[None]] = []
        self.connections: list[NATS] = []
        self.store: Store | None = None

    async def start(self, url: str, creds: dict[str, dict[str, str] | None], store: Store, limits: limits_mod.Limits,
                    here: sizing.Fleet, stop: asyncio.Event, metrics_listen: str | None) -> None:  # fmt: skip
        measured, probes = telemetry.Metrics(CollectorRegistry()), telemetry.Probes()
        if metrics_listen:  # one process, one registry: the rules' and the sink's series, by stage
            address = telemetry.serve(metrics_listen, measured.registry, probes)
            log.info("the rules' and the sink's metrics on http://%s/metrics (/healthz, /readyz)", address)
        self.store = store
        rules_nc = await bus.connect(url, "gpuhealth-up-rules", retry_for=30, credentials=creds["rules"])
        self.connections.append(rules_nc)
        sink_nc = await bus.connect(url, "gpuhealth-up-sink", retry_for=30, credentials=creds["sink"])
        self.connections.append(sink_nc)
        await bus.provision(rules_nc.jetstream(), limits=bounds(here))
        await store.run(store.connect)
        rules = RulesService(rules_nc.jetstream(), limits=limits, metrics=measured)
        sink = SinkService(sink_nc, sink_nc.jetstream(), store, metrics=measured)
        self.tasks += [asyncio.create_task(rules.run(stop)), asyncio.create_task(sink.run(stop))]
        probes.ready = self.connected
        self.tasks.append(asyncio.create_task(probes.beating(stop)))

    def connected(self) -> bool:
        return all(nc.is_connected for nc in self.connections) and not any(t.done() for t in self.tasks)

    async def stop(self) -> None:
        for t in self.tasks:
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(t, 15)
        for nc in self.connections:
            with contextlib.suppress(Exception):
                await bus.shutdown(nc)
        if self.store is not None:
            await asyncio.get_running_loop().run_in_executor(None, self.store.close)


async def _watch(children: list[Child], stop: asyncio.Event, tasks: list[asyncio.Task[None]]) -> None:
    """Until stopped: restart a child that dies; fail loudly if a service inside up dies."""
    while not stop.is_set():
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), 1.0)
        for t in tasks:
            if t.done() and not stop.is_set():
                exc = t.exception()
                raise GpuhealthError(f"a service stopped unexpectedly: {exc!r}")
        for child in children:
            if child.proc is not None and child.proc.returncode is not None and not stop.is_set():
                log.warning("%s exited with %s; restarting it", child.name, child.proc.returncode)
                await child.start()


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


async def serve_rules(nats_url: str, *, instance: int = 0, instances: int = 1, rules_file: Path | None = None,
                      replicas: int = 1, fleet: sizing.Fleet | None = None, as_user: str | None = None,
                      ready: privsep.Ready = NOT_ASKED, measured: telemetry.Metrics | None = None,
                      probes: telemetry.Probes | None = None) -> int:  # fmt: skip
    limits = limits_mod.load(rules_file)  # a bad file fails here, before anything connects
    credentials = _become(as_user, RULES_MODULES)
    stop = bus.stop_on_signals()
    nc = await bus.connect(nats_url, f"gpuhealth-rules-{instance}of{instances}", credentials=credentials)
    js = nc.jetstream()
    await bus.provision(js, replicas=replicas, limits=bounds(fleet, replicas))
    service = RulesService(js, instance=instance, instances=instances, limits=limits, metrics=measured)
    await service.start()
    probes = probes or telemetry.Probes()
    probes.ready = lambda: nc.is_connected
    ready.say(ready=True)
    sd.ready(f"rules instance {instance} of {instances}")
    await asyncio.gather(service.run(stop), sd.watchdog(stop), probes.beating(stop))
    sd.stopping()
    await bus.shutdown(nc)
    return 0


async def serve_sink(nats_url: str, clickhouse: str, password_file: Path | None = None,
                     metrics_ttl_days: int | None = None, replicas: int = 1, fleet: sizing.Fleet | None = None,
                     as_user: str | None = None, ready: privsep.Ready = NOT_ASKED,
                     measured: telemetry.Metrics | None = None,
                     probes: telemetry.Probes | None = None) -> int:  # fmt: skip
    # a bad URL fails here, before anything connects
    store = Store(clickhouse, password_file=password_file, metrics_ttl_days=metrics_ttl_days)
    credentials = _become(as_user, SINK_MODULES, SINK_AFTER)
    stop = bus.stop_on_signals()
    nc = await bus.connect(nats_url, "gpuhealth-sink", credentials=credentials)
    js = nc.jetstream()
    if not ready.asked:
        await bus.provision(js, replicas=replicas, limits=bounds(fleet, replicas))
    else:  # up's child: up's rules sized the streams to fill its server's store, which a second resize overflows
        await bus.provision(js, missing_only=True)
        await store.run(store.connect)  # serving is with its store open (a unit's sink waits for a server)
        ready.say(ready=True)
    sd.ready(f"sink to {store.target.redacted()}")
    probes = probes or telemetry.Probes()
    probes.ready = lambda: nc.is_connected
    try:
        sink = SinkService(nc, js, store, metrics=measured)
        await asyncio.gather(sink.run(stop), sd.watchdog(stop), probes.beating(stop))
    finally:
        sd.stopping()
        await bus.shutdown(nc)
        await asyncio.get_running_loop().run_in_executor(None, store.close)
    return 0


def _become(user: str | None, modules: tuple[str, ...], then: tuple[str, ...] = ()) -> dict[str, object]:
    """The environment's NATS credentials, read while still root (its files may be root's); then, given a
    user, become it for good."""
    credentials = bus.auth_options()
    if user is not None:
        found = privsep.lookup(user)
        if found is None:
            raise ConfigError(f"no user {user!r} to run as")
        privsep.drop(found, modules, then)
    return credentials


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
