"""``gpuctl up``: every stage on one node.

``up`` starts the embedded nats-server (unless given ``--nats``), the rules
and sink services, and the agent in its own process, and only when each says
it is ready writes ``run.json`` into the data dir for the other commands to
find it. Run as root, it runs the rules and the sink each in a process of
their own as its service user (gpuctl/privsep.py), or in its own process
where it cannot (gpuctl/stages.py). Its own server takes only its own identities
(gpuhealth/localauth.py): the rules, the sink and the agent each connect as
themselves, gpuctl as the operator; on a server given with ``--nats``, every
stage uses the environment's credentials.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fcntl
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from gpuctl import privsep
from gpuctl.stage_options import RulesOptions, SinkOptions, UpOptions
from gpuctl.stages import Inside
from gpuhealth import bus, flags, localauth, natsconf, sd, sizing
from gpuhealth.config import LOCK, RunInfo, read_identity, remove_run_info, write_run_info
from gpuhealth.errors import ConfigError, GpuhealthError
from gpuhealth.events import now_ns
from gpuhealth.natsd import EmbeddedNats, die_with_parent
from producers.options import AgentOptions
from rules import limits as limits_mod
from sinks import target as target_mod
from sinks.clickhouse import Store, chdb_dsn

log = logging.getLogger("gpuhealth.up")


def agent_argv(o: AgentOptions) -> list[str]:
    return [sys.executable, "-m", "producers.agent", *flags.to_argv(o)]


def stage_argv(stage: str, url: str, o: UpOptions, data_dir: Path, user: privsep.ServiceUser,
               here: sizing.Fleet) -> list[str]:  # fmt: skip
    """``gpuctl serve rules|sink`` as up's child: root until it has read its inputs, then ``user``."""
    fleet: dict[str, Any] = {"nats": url, "as_user": user.name, "fleet_nodes": 1, "fleet_gpus": here.gpus_per_node,
             "fleet_poll": here.poll_interval_s}  # fmt: skip
    if o.metrics_listen:  # one flag, two processes: the rules on its port, the sink on the next (port 0: any)
        host, _, port = o.metrics_listen.rpartition(":")
        fleet["metrics_listen"] = f"{host}:{int(port) + (1 if stage == 'sink' and int(port) else 0)}"
    opts: RulesOptions | SinkOptions
    if stage == "rules":
        opts = RulesOptions(rules_file=o.rules_file, **fleet)
    else:
        opts = SinkOptions(clickhouse=o.clickhouse or chdb_dsn(data_dir), password_file=o.password_file,
                           metrics_ttl_days=o.metrics_ttl_days, **fleet)  # fmt: skip
    return [sys.executable, "-m", "gpuctl", "serve", stage, *flags.to_argv(opts)]


def stage_env(data_dir: Path, o: UpOptions, user: str) -> dict[str, str]:
    """A child's environment: its own identity on up's server; never up's systemd socket (only up notifies)."""
    env = localauth.child_env(data_dir, user, os.environ) if o.nats is None else dict(os.environ)
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


class Stack:
    """What up has started, to be stopped in the reverse order: the agent first, so that what it sent is drained
    by the rest, and NATS last."""

    def __init__(self, data_dir: Path, gid: int | None, node: str, stop: asyncio.Event) -> None:
        self.data_dir, self.gid, self.node, self.stop_event = data_dir, gid, node, stop
        self.nats: EmbeddedNats | None = None
        self.children: list[Child] = []
        self.inside = Inside()
        # Each stage its own identity on our own server; on a given server, the environment's.
        self.creds: dict[str, dict[str, str] | None] = {"rules": None, "sink": None}
        self.agent_env: dict[str, str] | None = None

    async def start_nats(self, o: UpOptions, here: sizing.Fleet) -> str:
        if o.nats is not None:
            return o.nats
        ids = localauth.identities(self.data_dir, self.node, self.gid)
        self.creds = {i.user: {"user": i.user, "password": i.password} for i in ids}
        self.agent_env = localauth.child_env(self.data_dir, natsconf.agent_user(self.node), os.environ)
        room = sizing.store_bytes(sizing.limits(here))  # the bounds, not the disk, stop what is stored
        self.nats = EmbeddedNats(self.data_dir, port=o.nats_port, auth=localauth.server_auth(ids), max_store=room)
        return await bus.unless_stopped(self.nats.start(), self.stop_event)

    async def start_stages(self, url: str, o: UpOptions, user: privsep.ServiceUser | None, here: sizing.Fleet,
                           limits: limits_mod.Limits, dsn: str) -> None:  # fmt: skip
        if user is None:
            store = Store(dsn, password_file=o.password_file, metrics_ttl_days=o.metrics_ttl_days)
            started = self.inside.start(url, self.creds, store, limits, here, self.stop_event, o.metrics_listen)
            await bus.unless_stopped(started, self.stop_event)
            return
        if o.clickhouse is None:
            privsep.give_store(self.data_dir, Path(target_mod.parse(dsn).path), user, self.gid)
        for stage in ("rules", "sink"):  # the rules first: they make the streams the sink reads
            argv = stage_argv(stage, url, o, self.data_dir, user, here)
            self.children.append(Child(stage, argv, env=stage_env(self.data_dir, o, stage)))
            await bus.unless_stopped(self.children[-1].start(), self.stop_event)

    async def start_agent(self, agent: AgentOptions) -> dict[str, str]:
        child = Child("agent", agent_argv(agent), env=self.agent_env)
        self.children.insert(0, child)  # stopped first: what it sent is then drained by the rest
        ready = await bus.unless_stopped(child.start(), self.stop_event)
        return {str(k): str(v) for k, v in dict(ready.get("sources", {})).items()}  # type: ignore[call-overload]

    async def stop(self) -> None:
        for child in self.children:
            await child.stop()
        await self.inside.stop()
        if self.nats is not None:
            await self.nats.stop()


async def run_up(agent: AgentOptions, o: UpOptions) -> int:
    """Every stage on this node, started in order (NATS, the rules and the sink, the agent) and stopped in the
    reverse order. A SIGINT or SIGTERM at any instant, start-up included, stops what has started and nothing
    waits on what has not."""
    assert agent.data_dir is not None, "gpuctl up fills it in"
    data_dir = agent.data_dir
    limits = limits_mod.load(o.rules_file)  # a bad rules file fails before anything starts
    kmsg_file(agent.kmsg_path)
    gid = localauth.prepare_data_dir(data_dir, localauth.operator_gid())
    _lock = take_lock(data_dir)  # held until up's process ends, however it ends
    identity = read_identity(proc_root=agent.proc_root, cluster=agent.cluster, node=agent.node)
    user = privsep.service_user(o.service_user, data_gid=gid, needs_dir=o.clickhouse is None)
    stop = bus.stop_on_signals()
    # One node: the metrics bound counts its GPUs at its poll interval.
    gpus = agent.simulate_gpus if agent.simulate_gpus is not None else 8
    here = sizing.Fleet(1, gpus, agent.nvml_poll_interval)
    dsn = o.clickhouse or chdb_dsn(data_dir)
    target = target_mod.parse(dsn, password_file=o.password_file)
    stack = Stack(data_dir, gid, identity.node, stop)
    try:
        url = await stack.start_nats(o, here)
        await stack.start_stages(url, o, user, here, limits, dsn)
        sources = await stack.start_agent(dataclasses.replace(agent, nats=url, allow_inject=True))
        info = RunInfo(pid=os.getpid(), nats_url=url, node=identity.node, cluster=identity.cluster,
                       kmsg_path=str(agent.kmsg_path), allow_inject=True, started_ns=now_ns(),
                       clickhouse=target.redacted(), sources=sources, embedded_nats=stack.nats is not None)  # fmt: skip
        write_run_info(data_dir, info, gid)
        _say_ready(info, data_dir)
        if sd.watchdog_interval() is not None:  # a task that ends at once would read as a service that died
            stack.inside.tasks.append(asyncio.create_task(sd.watchdog(stop)))
        await _watch(stack.children, stop, stack.inside.tasks)
    except bus.Stopped:
        log.info("stopped while starting")
    finally:
        stop.set()
        remove_run_info(data_dir, os.getpid())
        await stack.stop()
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
