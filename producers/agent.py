"""The node agent: runs the enabled producers and publishes what they see.

This is a lean entry point (``python -m producers.agent``): ``gpuctl serve
agent`` execs it so the long-running process on every GPU node holds no CLI
framework and no storage engine, only nats-py, msgspec and the producers.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import logging
import os
import secrets
import ssl
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import msgspec
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from prometheus_client import CollectorRegistry

from gpuhealth import bus, client, natsconf, sd, subjects, telemetry
from gpuhealth.backoff import Backoff
from gpuhealth.config import NodeIdentity, default_data_dir, read_identity
from gpuhealth.errors import ConfigError, GpuhealthError
from gpuhealth.events import (
    EVENT_DECODER,
    HEALTH_DECODER,
    INVENTORY_DECODER,
    METRIC_DECODER,
    GpuInfo,
    Inventory,
    SetHealthy,
    encode,
    new_id,
    now_ns,
)
from producers import api as api_mod
from producers import api_auth, check_spec, checks, host, injections, journald, machine, poller, sysfs
from producers import outbox as outbox_mod
from producers import spool as spool_mod
from producers.api_http import ClientError
from producers.fake_nvml import FakeNvml
from producers.klog import KernelLogProducer, LogSource
from producers.kmsg import KmsgSource, append_record
from producers.nvml import NvmlProducer
from producers.outbox import Outbox

log = logging.getLogger("gpuhealth.agent")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="gpuctl serve agent", description="gpuhealth node agent")
    p.add_argument("--nats", required=True, help="NATS server URL")
    p.add_argument("--data-dir", type=Path, default=None, help="where the agent keeps its cursors")
    p.add_argument("--kmsg-path", type=Path, default=Path("/dev/kmsg"))
    p.add_argument(
        "--kmsg-lookback", type=float, default=None, metavar="SECONDS",
        help="on the very first start, skip kernel records older than this (default: the whole boot)",
    )  # fmt: skip
    p.add_argument("--journal", action="store_true", help="read the kernel log from the system journal")
    p.add_argument("--journal-dir", type=Path, default=None, help="read the kernel log from this journal directory")
    p.add_argument("--sysfs-root", type=Path, default=Path("/sys"))
    p.add_argument("--proc-root", type=Path, default=Path("/proc"))
    p.add_argument("--node", default=None, help="node name (default: $GPUHEALTH_NODE or the hostname)")
    p.add_argument("--cluster", default=None, help="cluster name (default: $GPUHEALTH_CLUSTER or 'default')")
    p.add_argument("--allow-inject", action="store_true", help="accept inject-fault commands over NATS")
    p.add_argument("--simulate-gpus", type=int, default=None, metavar="N", help="a simulated node with N GPUs")
    p.add_argument("--nvml-poll-interval", type=float, default=10.0, metavar="SECONDS")
    p.add_argument(
        "--sysfs-interval",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="seconds between sysfs polls (PCIe AER and links, InfiniBand, EDAC, temperatures)",
    )
    p.add_argument(
        "--host-interval",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="seconds between host polls (CPU, memory, disks, processes; services every 6th)",
    )
    p.add_argument(
        "--disk",
        action="append",
        default=None,
        metavar="MOUNT",
        help="a mount point whose usage to report (repeatable; default: /)",
    )
    p.add_argument(
        "--pstore-dir",
        action="append",
        default=None,
        type=Path,
        metavar="DIR",
        help="where crash records appear (repeatable; default: /sys/fs/pstore, /var/lib/systemd/pstore)",
    )
    p.add_argument(
        "--api-listen",
        default=api_mod.DEFAULT_LISTEN,
        metavar="HOST:PORT",
        help="the local GPUd-compatible API and /metrics (default 127.0.0.1:15132; 'off': none)",
    )
    p.add_argument("--api-tls", choices=("on", "off"), default="on",
                   help="HTTPS, as GPUd serves it (default on: a self-signed certificate in the data dir)")  # fmt: skip
    p.add_argument("--api-tls-cert", type=Path, default=None, help="the API's certificate (PEM) instead of its own")
    p.add_argument("--api-tls-key", type=Path, default=None, help="the key of --api-tls-cert (PEM)")
    p.add_argument(
        "--checks", "--plugins", dest="checks", action="append", type=Path, default=None, metavar="FILE",
        help="custom checks in GPUd's plugin format (repeatable; default: /etc/gpuhealth/checks.yaml if present)",
    )  # fmt: skip
    p.add_argument(
        "--spool-max-bytes", type=int, default=spool_mod.DEFAULT_MAX_BYTES, metavar="BYTES",
        help="what the agent keeps on disk for the bus while it is away (default 64 MiB; past it, producers hold)",
    )  # fmt: skip
    p.add_argument("--ready-fd", type=int, default=None, help="write one JSON line here once every source is open")
    p.add_argument("--log-level", default="INFO")
    return p.parse_args(argv)


def inventory_of(identity: NodeIdentity, sysfs_root: Path) -> Inventory:
    t = now_ns()
    gpus = [GpuInfo(index=i, pci_bus_id=d.bdf) for i, d in enumerate(sysfs.nvidia_gpus(sysfs_root))]
    return Inventory(
        id=new_id(t),
        time=t,
        cluster=identity.cluster,
        node=identity.node,
        machine_id=identity.machine_id,
        boot_id=identity.boot_id,
        source="sysfs",
        component="inventory",
        gpus=gpus,
        driver_version=sysfs.nvidia_driver_version(sysfs_root),
    )


def kernel_log_source(args: argparse.Namespace, identity: NodeIdentity) -> LogSource:
    """The journal when asked for and readable; /dev/kmsg (or --kmsg-path) otherwise."""
    if args.journal or args.journal_dir is not None:
        if journald.available():
            return journald.JournalSource(identity, args.journal_dir)
        log.warning("systemd-python is not installed: reading %s instead of the journal", args.kmsg_path)
    return KmsgSource(args.kmsg_path, identity, lookback_s=args.kmsg_lookback)


def nvml_module(args: argparse.Namespace, identity: NodeIdentity) -> tuple[Any, str]:
    """The NVML module to use, or None and why not."""
    if args.simulate_gpus is not None:
        return FakeNvml(args.simulate_gpus, seed=identity.node), ""
    try:
        import pynvml
    except ImportError as e:
        return None, f"nvidia-ml-py is not installed ({e})"
    return pynvml, ""


async def supervise(name: str, run: Callable[[], Awaitable[None]], stop: asyncio.Event) -> None:
    """Keep a producer loop alive: an unexpected error is logged and the loop restarts."""
    delays = Backoff(first=0.5, cap=30.0)
    while not stop.is_set():
        try:
            await run()
            return
        except Exception:
            log.exception("%s failed; restarting in %.1fs", name, delays.delay)
            await delays.wait(stop)


async def run(args: argparse.Namespace) -> int:
    identity = read_identity(proc_root=args.proc_root, cluster=args.cluster, node=args.node)
    state_dir = (args.data_dir or default_data_dir()) / "agent"
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:  # read-only, full: the agent runs and publishes, and its own states say what it cannot keep
        log.error("cannot create %s: %s", state_dir, e)
    specs = check_spec.load_files(check_files(args))  # a bad file stops the agent here, with its reason
    stop = bus.stop_on_signals()
    metrics = telemetry.Metrics(CollectorRegistry())  # the agent's own, served with the API's at /metrics
    view = api_mod.View(identity, registry=metrics.registry, no_room=metrics.no_room,
                        host=machine.host_facts(args.proc_root))  # fmt: skip
    # Everything goes through the outbox: on disk before a producer moves on, sent when the bus takes it.
    outbox = Outbox(spool_mod.Spool(state_dir / "spool", max_bytes=args.spool_max_bytes),
                    on_sent=lambda items: note_published(view, items))  # fmt: skip
    outbox.on_change = lambda: outbox_mod.show_state(view, identity, outbox)
    outbox_mod.show_state(view, identity, outbox)

    async def publish(items: list[tuple[str, str, bytes]]) -> None:
        await outbox.publish(items)
        # What the agent knows of its hardware is what it saw, bus or not: verification and the API read it.
        for subject, _, payload in items:
            if subject == subjects.inventory_subject(identity.node):
                view.inventory = INVENTORY_DECODER.decode(payload)

    kernel_log = KernelLogProducer(kernel_log_source(args, identity), identity, state_dir, publish)
    kernel_log.on_change = lambda: show_cursor_state(view, identity, kernel_log)
    metrics.registry.register(telemetry.Readings(counters=[
        ("gpuhealth_agent_kernel_lines", "fault lines in published events", lambda: kernel_log.lines_published),
        ("gpuhealth_agent_kernel_events", "kernel events published", lambda: kernel_log.events_published),
        ("gpuhealth_agent_kmsg_lost", "records the kernel overwrote before they were read",
         lambda: getattr(kernel_log.source, "lost", 0)),
        ("gpuhealth_agent_kmsg_rewrites", "times a kmsg file was replaced or rewritten and read again from its start",
         lambda: getattr(kernel_log.source, "rewrites", 0)),
        ("gpuhealth_agent_spool_refused", "records the full spool refused", lambda: outbox.spool.refused),
        ("gpuhealth_agent_spool_torn", "segments cut at a torn record at start", lambda: outbox.spool.torn),
        ("gpuhealth_agent_metrics_dropped", "metric batches dropped while the bus was away",
         lambda: outbox.metrics_dropped),
    ], gauges=[
        ("gpuhealth_agent_bus_available", "1 while JetStream takes what the agent sends", lambda: outbox.bus_ok),
        ("gpuhealth_agent_spool_bytes", "bytes waiting in the spool for the bus", lambda: outbox.spool.bytes),
        ("gpuhealth_agent_spool_records", "records waiting in the spool", lambda: outbox.spool.records),
        ("gpuhealth_agent_spool_full", "1 while the spool refuses new records", lambda: outbox.spool.full),
    ]))  # fmt: skip
    statuses = [kernel_log.open()]
    show_cursor_state(view, identity, kernel_log)
    module, load_error = nvml_module(args, identity)
    nvml = NvmlProducer(module, identity, args.sysfs_root, publish, load_error=load_error,
                        poll_interval=args.nvml_poll_interval)  # fmt: skip
    first = [(subjects.event_subject(identity.node, s.source), s.id, encode(s)) for s in statuses]
    first += await nvml.open()
    sysfs_state = poller.PollState(state_dir / "sysfs.state", identity.boot_id)
    sysfs_poller = sysfs.SysfsPoller(args.sysfs_root, identity, sysfs_state)
    host_state = poller.PollState(state_dir / "host.state", identity.boot_id)
    pstore_dirs = args.pstore_dir if args.pstore_dir is not None else [args.sysfs_root / "fs" / "pstore",
                                                                       Path("/var/lib/systemd/pstore")]  # fmt: skip
    host_poller = host.HostPoller(args.proc_root, identity, host_state, mounts=args.disk or ["/"],
                                  pstore_dirs=pstore_dirs, nvswitches=lambda: sysfs_poller.found.nvswitches,
                                  slow_every=max(1, round(60 / args.host_interval)))  # fmt: skip
    # The first reads happen before the agent says it is ready: what was wrong at start is reported.
    for state, poll in ((sysfs_state, sysfs_poller.poll), (host_state, host_poller.poll)):
        state.saved.unacked.extend(await asyncio.to_thread(poll))  # with what an earlier run left unsent
        state.save()
        first += state.saved.unacked
    if not nvml.working:  # without NVML, what sysfs knows is the inventory
        inventory = inventory_of(identity, args.sysfs_root)
        first.append((subjects.inventory_subject(identity.node), inventory.id, encode(inventory)))
    try:
        await publish(first)
        spooled = True
    except spool_mod.SpoolFull:  # the pollers' items stay in their saved state; the rest is said again next start
        spooled = False
    runner = checks.CheckRunner(specs, identity, state_dir / "checks", publish)
    verifier = checks.Verifier(runner, identity, state_dir / "verified-inventory.json", publish)
    init_failed = [r.component for r in await runner.run_init() if r.verdict()[0] != "Healthy"]
    if init_failed:
        log.error("init checks failed: %s (see their health states)", ", ".join(init_failed))
    api = start_api(args, identity, view, publish, state_dir)
    for state in (sysfs_state, host_state):
        if spooled:
            state.saved.unacked.clear()
            state.save()
    background: set[asyncio.Task[Any]] = set()

    async def replaced() -> None:  # verification can take minutes: not inside the command's callback
        async def reread_and_verify() -> None:
            await publish(await nvml.reread_inventory())
            if view.inventory is not None:
                await verifier.inventory_seen(view.inventory)

        task = asyncio.create_task(reread_and_verify())
        background.add(task)
        task.add_done_callback(background.discard)

    connected = asyncio.Event()
    sent_all = asyncio.Event()  # the stop of the bus side: after the producers' and the outbox's flush

    async def bus_side() -> None:
        """The agent without NATS is whole; with it, it listens to its commands and drains the outbox."""
        nc = await bus.connect(
            args.nats, f"gpuhealth-agent-{identity.node}", inbox_prefix=natsconf.agent_inbox(identity.node)
        )
        try:
            js = nc.jetstream()
            await bus.provision(js, missing_only=True)
            if api is not None:
                await follow_health(nc, identity, view)
            await injections.serve_kernel(nc, identity, args.kmsg_path, args.allow_inject)
            await injections.serve_nvml(nc, identity, nvml, args.allow_inject, replaced)
            await checks.serve_requests(nc, identity, runner)
            connected.set()
            await outbox.run_connected(js, sent_all, metrics)
        finally:
            await bus.shutdown(nc)

    bus_task = asyncio.create_task(supervise("bus", bus_side, sent_all))
    tasks: list[asyncio.Task[Any]] = []
    try:  # a moment for the usual case; never a wait on the bus
        await asyncio.wait_for(connected.wait(), 2.0)
    except TimeoutError:
        log.warning("bus unavailable: no answer from NATS at %s yet; what the agent sees waits in %s",
                    bus.redact(args.nats), outbox.spool.dir)  # fmt: skip
    sources = {s.source: ("ok: " if s.available else "unavailable: ") + s.reason for s in statuses}
    if api is not None:
        sources["api"] = f"ok: {api.url}"
    sources["bus"] = "ok: " + bus.redact(args.nats) if connected.is_set() else outbox.bus
    sources["nvml"] = f"ok: {len(nvml.gpus)} GPUs" if nvml.working else "unavailable (see the health states)"
    if specs:
        sources["checks"] = (f"failed: init checks {', '.join(init_failed)}" if init_failed
                             else f"ok: {len(specs)} checks")  # fmt: skip
    log.info("agent ready on node %s: %s", identity.node, sources)
    if args.ready_fd is not None:
        with os.fdopen(args.ready_fd, "w") as ready:
            ready.write(json.dumps({"ready": True, "node": identity.node, "sources": sources}) + "\n")
    sd.ready(f"node {identity.node}: " + ", ".join(f"{k} {v.split(':')[0]}" for k, v in sources.items()))

    if statuses[0].available:

        async def run_kernel_log() -> None:
            try:
                await kernel_log.run(stop)
            except OSError:
                kernel_log.source.close()
                kernel_log.open()
                raise

        tasks.append(asyncio.create_task(supervise("kernel log", run_kernel_log, stop)))
    tasks.append(asyncio.create_task(supervise("nvml", lambda: nvml.run(stop), stop)))
    for name, state, poll, interval in (("sysfs", sysfs_state, sysfs_poller.poll, args.sysfs_interval),
                                        ("host", host_state, host_poller.poll, args.host_interval)):  # fmt: skip
        tasks.append(asyncio.create_task(supervise(name, functools.partial(
            poller.run_loop, name, poll, state, publish, interval, stop, first_wait=True), stop)))  # fmt: skip
    tasks.append(asyncio.create_task(supervise("checks", lambda: runner.run_scheduled(stop), stop)))
    if (at_start := view.inventory) is not None:  # hardware changed while the agent was away: verify it

        async def verify_at_start() -> None:
            await verifier.inventory_seen(at_start)

        tasks.append(asyncio.create_task(supervise("verification", verify_at_start, stop)))
    tasks.append(asyncio.create_task(sd.watchdog(stop)))
    await stop.wait()
    sd.stopping()
    log.info("agent stopping: draining")
    for t in tasks:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(t, 10)
    await stop_bus_side(outbox, bus_task, sent_all, connected)
    kernel_log.source.close()
    nvml.close()
    if api is not None:
        api.close()
    outbox.spool.close()
    return 0


async def stop_bus_side(outbox: Outbox, bus_task: asyncio.Task[None], sent_all: asyncio.Event,
                        connected: asyncio.Event) -> None:  # fmt: skip
    """What the producers handed over goes out while the bus takes it (a few seconds at most); the rest stays in
    the spool for the next start. A bus never reached has nothing to drain: its connection attempt is dropped."""
    if left := await outbox.flush():
        log.warning("agent stopping: %d events not sent; the spool keeps them for the next start", left)
    sent_all.set()
    if not connected.is_set():
        bus_task.cancel()
    with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
        await asyncio.wait_for(bus_task, 10)


DEFAULT_CHECKS = Path("/etc/gpuhealth/checks.yaml")


def check_files(args: argparse.Namespace) -> list[Path]:
    if args.checks is not None:
        return list(args.checks)
    return [DEFAULT_CHECKS] if DEFAULT_CHECKS.exists() else []


def show_cursor_state(view: api_mod.View, identity: NodeIdentity, kernel_log: KernelLogProducer) -> None:
    """Whether the kernel log's cursor is saved: one that is not means a restart reads records again."""
    if kernel_log.cannot_persist:
        outbox_mod.say(view, identity, f"{kernel_log.source.name} cursor", "Degraded",
                       f"{kernel_log.cannot_persist}; a restart reads the kernel log again from the last saved "
                       "position")  # fmt: skip
    else:
        outbox_mod.say(view, identity, f"{kernel_log.source.name} cursor", "Healthy", "cursor saved")


def note_published(view: api_mod.View, items: list[tuple[str, str, bytes]]) -> None:
    """What went out, for the local API: events and metric batches (a storm is already a few events); the
    inventory is the newest taken, not the newest sent (a replayed spool holds older ones)."""
    for subject, _, payload in items:
        family = subject.split(".", 3)[2]
        if family == "event":
            view.published_event(EVENT_DECODER.decode(payload))
        elif family == "metric":
            view.published_metrics(METRIC_DECODER.decode(payload))


Publisher = Callable[[list[tuple[str, str, bytes]]], Awaitable[None]]


async def follow_health(nc: NATS, identity: NodeIdentity, view: api_mod.View) -> None:
    """Feed the local API this node's health states: the KV bucket, then the health subject."""

    async def on_health(msg: Msg) -> None:
        with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError):
            view.health_changed(HEALTH_DECODER.decode(msg.data))

    await nc.subscribe(subjects.node_health_subjects(identity.node), cb=on_health)
    with contextlib.suppress(Exception):  # the bucket may be away: states arrive on the subject anyway
        for h in await client.node_health_states(nc, identity.node):
            view.health_changed(h)


def start_api(args: argparse.Namespace, identity: NodeIdentity, view: api_mod.View, publish: Publisher,
              state_dir: Path) -> api_mod.Api | None:  # fmt: skip
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

    gpus = view.inventory.gpus if view.inventory else []
    actions = api_mod.Actions(allow_inject=args.allow_inject, inject=inject, set_healthy=set_healthy,
                              default_pci=gpus[0].pci_bus_id if gpus else "0000:00:00.0")  # fmt: skip
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


def api_tls_context(args: argparse.Namespace, state_dir: Path) -> ssl.SSLContext | None:
    """The API's TLS: off, the operator's certificate, or the agent's own (made at the first start)."""
    given = (args.api_tls_cert, args.api_tls_key)
    if given.count(None) == 1:
        raise ConfigError("--api-tls-cert and --api-tls-key go together")
    if args.api_tls == "off":
        if args.api_tls_cert is not None:
            raise ConfigError("--api-tls-cert with --api-tls off: a certificate would not be used")
        return None
    from producers import api_tls  # only an agent serving HTTPS needs it

    if args.api_tls_cert is not None:
        return api_tls.server_context(args.api_tls_cert, args.api_tls_key)
    return api_tls.own_context(state_dir)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), handlers=[sd.log_handler()])
    try:
        return asyncio.run(run(args))
    except GpuhealthError as e:
        print(f"gpuhealth agent: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
