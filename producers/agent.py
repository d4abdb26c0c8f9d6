"""The node agent: runs the enabled producers and publishes what they see.

This is a lean entry point (``python -m producers.agent``): ``gpuctl serve
agent`` execs it so the long-running process on every GPU node holds no CLI
framework and no storage engine, only nats-py, msgspec and the producers.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from gpuhealth import bus, flags, natsconf, sd, subjects, telemetry
from gpuhealth.backoff import Backoff
from gpuhealth.config import NodeIdentity, default_data_dir, read_identity
from gpuhealth.errors import GpuhealthError
from gpuhealth.events import INVENTORY_DECODER
from producers import api as api_mod
from producers import check_spec, checks, host, injections, journald, machine, sysfs
from producers import outbox as outbox_mod
from producers import spool as spool_mod
from producers.fake_nvml import FakeNvml
from producers.klog import KernelLogProducer, LogSource
from producers.kmsg import KmsgSource
from producers.local_api import follow_health, note_published, start_api
from producers.nvml import NvmlProducer
from producers.options import AgentOptions
from producers.outbox import Outbox
from producers.poller import Item, PollState
from producers.producer import Checks, KernelLog, Nvml, Polled, Producer, Verification

log = logging.getLogger("gpuhealth.agent")


def parse_args(argv: list[str] | None = None) -> AgentOptions:
    return flags.parse(AgentOptions, argv, prog="gpuctl serve agent", description="gpuhealth node agent")


def kernel_log_source(args: AgentOptions, identity: NodeIdentity) -> LogSource:
    """The journal when asked for and readable; /dev/kmsg (or --kmsg-path) otherwise."""
    if args.journal or args.journal_dir is not None:
        if journald.available():
            return journald.JournalSource(identity, args.journal_dir)
        log.warning("systemd-python is not installed: reading %s instead of the journal", args.kmsg_path)
    return KmsgSource(args.kmsg_path, identity, lookback_s=args.kmsg_lookback)


def nvml_module(args: AgentOptions, identity: NodeIdentity) -> tuple[Any, str]:
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


class Agent:
    """One node's agent: its producers, the outbox they publish through, the local API and the bus side."""

    def __init__(self, args: AgentOptions) -> None:
        self.args = args
        self.identity = identity = read_identity(proc_root=args.proc_root, cluster=args.cluster, node=args.node)
        self.state_dir = (args.data_dir or default_data_dir()) / "agent"
        try:
            self.state_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:  # read-only, full: the agent runs and publishes; its own states say what it cannot keep
            log.error("cannot create %s: %s", self.state_dir, e)
        self.specs = check_spec.load_files(check_files(args))  # a bad file stops the agent here, with its reason
        self.metrics = telemetry.Metrics(CollectorRegistry())  # the agent's own, served with the API's at /metrics
        self.view = api_mod.View(identity, registry=self.metrics.registry, no_room=self.metrics.no_room,
                                 host=machine.host_facts(args.proc_root),
                                 plugins=[s.gpud_spec() for s in self.specs])  # fmt: skip
        # Everything goes through the outbox: on disk before a producer moves on, sent when the bus takes it.
        self.outbox = Outbox(spool_mod.Spool(self.state_dir / "spool", max_bytes=args.spool_max_bytes),
                             on_sent=lambda items: note_published(self.view, items))  # fmt: skip
        self.outbox.on_change = lambda: outbox_mod.show_state(self.view, identity, self.outbox)
        outbox_mod.show_state(self.view, identity, self.outbox)
        self.connected = asyncio.Event()
        self.sent_all = asyncio.Event()  # the stop of the bus side: after the producers' and the outbox's flush
        self.background: set[asyncio.Task[Any]] = set()
        self.producers = self.make_producers()

    async def publish(self, items: list[Item]) -> None:
        await self.outbox.publish(items)
        # What the agent knows of its hardware is what it saw, bus or not: verification and the API read it.
        for subject, _, payload in items:
            if subject == subjects.inventory_subject(self.identity.node):
                self.view.inventory = INVENTORY_DECODER.decode(payload)

    def make_producers(self) -> list[Producer]:
        args, identity, state_dir = self.args, self.identity, self.state_dir
        self.kernel_log = KernelLogProducer(kernel_log_source(args, identity), identity, state_dir, self.publish)
        gauges(self.metrics, self.kernel_log, self.outbox)
        module, load_error = nvml_module(args, identity)
        self.nvml = NvmlProducer(module, identity, args.sysfs_root, self.publish, load_error=load_error,
                                 poll_interval=args.nvml_poll_interval)  # fmt: skip
        sysfs_poller = sysfs.SysfsPoller(
            args.sysfs_root, identity, PollState(state_dir / "sysfs.state", identity.boot_id)
        )
        pstore_dirs = args.pstore_dir if args.pstore_dir is not None else [args.sysfs_root / "fs" / "pstore",
                                                                           Path("/var/lib/systemd/pstore")]  # fmt: skip
        host_poller = host.HostPoller(args.proc_root, identity, PollState(state_dir / "host.state", identity.boot_id),
                                      mounts=args.disk or ["/"], pstore_dirs=pstore_dirs,
                                      nvswitches=lambda: sysfs_poller.found.nvswitches,
                                      slow_every=max(1, round(60 / args.host_interval)))  # fmt: skip
        self.runner = checks.CheckRunner(self.specs, identity, state_dir / "checks", self.publish)
        self.verifier = checks.Verifier(self.runner, identity, state_dir / "verified-inventory.json", self.publish)
        return [
            KernelLog(self.kernel_log, self.view),
            Nvml(self.nvml, identity, args.sysfs_root),
            Polled("sysfs", sysfs_poller.poll, sysfs_poller.state, self.publish, args.sysfs_interval),
            Polled("host", host_poller.poll, host_poller.state, self.publish, args.host_interval),
            Checks(self.runner, len(self.specs)),
            Verification(self.verifier, self.view),
        ]

    async def run(self) -> int:
        stop = bus.stop_on_signals()
        first = [item for p in self.producers for item in await p.open()]
        try:
            await self.publish(first)
            taken = True
        except spool_mod.SpoolFull:  # the pollers' items stay in their saved state; the rest is said again next start
            taken = False
        for p in self.producers:
            await p.after_first(taken)
        api = start_api(self.args, self.identity, self.view, self.publish, self.state_dir, self.runner)
        bus_task = asyncio.create_task(supervise("bus", functools.partial(self.bus_side, api), self.sent_all))
        with contextlib.suppress(TimeoutError):  # a moment for the usual case; never a wait on the bus
            await asyncio.wait_for(self.connected.wait(), 2.0)
        self.say_ready(api)
        tasks = [asyncio.create_task(supervise(p.name, functools.partial(p.run, stop), stop)) for p in self.producers]
        tasks.append(asyncio.create_task(sd.watchdog(stop)))
        await stop.wait()
        sd.stopping()
        log.info("agent stopping: draining")
        for t in tasks:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(t, 10)
        await stop_bus_side(self.outbox, bus_task, self.sent_all, self.connected)
        for p in self.producers:
            p.close()
        if api is not None:
            api.close()
        self.outbox.spool.close()
        return 0

    async def bus_side(self, api: api_mod.Api | None) -> None:
        """The agent without NATS is whole; with it, it listens to its commands and drains the outbox."""
        args, identity = self.args, self.identity
        nc = await bus.connect(args.nats, f"gpuhealth-agent-{identity.node}",
                               inbox_prefix=natsconf.agent_inbox(identity.node))  # fmt: skip
        try:
            js = nc.jetstream()
            await bus.provision(js, missing_only=True)
            if api is not None:
                await follow_health(nc, identity, self.view)
            await injections.serve_kernel(nc, identity, args.kmsg_path, args.allow_inject)
            await injections.serve_nvml(nc, identity, self.nvml, args.allow_inject, self.replaced)
            await checks.serve_requests(nc, identity, self.runner)
            self.connected.set()
            await self.outbox.run_connected(js, self.sent_all, self.metrics)
        finally:
            await bus.shutdown(nc)

    async def replaced(self) -> None:
        """A GPU replaced: its inventory read again and verified, in the background (verification can take
        minutes: not inside the command's callback)."""

        async def reread_and_verify() -> None:
            await self.publish(await self.nvml.reread_inventory())
            if self.view.inventory is not None:
                await self.verifier.inventory_seen(self.view.inventory)

        task = asyncio.create_task(reread_and_verify())
        self.background.add(task)
        task.add_done_callback(self.background.discard)

    def say_ready(self, api: api_mod.Api | None) -> None:
        if not self.connected.is_set():
            log.warning("bus unavailable: no answer from NATS at %s yet; what the agent sees waits in %s",
                        bus.redact(self.args.nats), self.outbox.spool.dir)  # fmt: skip
        sources = {k: v for p in self.producers for k, v in p.sources().items()}
        if api is not None:
            sources["api"] = f"ok: {api.url}"
        sources["bus"] = "ok: " + bus.redact(self.args.nats) if self.connected.is_set() else self.outbox.bus
        node = self.identity.node
        log.info("agent ready on node %s: %s", node, sources)
        if self.args.ready_fd is not None:
            with os.fdopen(self.args.ready_fd, "w") as ready:
                ready.write(json.dumps({"ready": True, "node": node, "sources": sources}) + "\n")
        sd.ready(f"node {node}: " + ", ".join(f"{k} {v.split(':')[0]}" for k, v in sources.items()))


async def run(args: AgentOptions) -> int:
    return await Agent(args).run()


def gauges(metrics: telemetry.Metrics, kernel_log: KernelLogProducer, outbox: Outbox) -> None:
    """The agent's own figures on /metrics, read when scraped."""
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


def check_files(args: AgentOptions) -> list[Path]:
    if args.checks is not None:
        return list(args.checks)
    return [DEFAULT_CHECKS] if DEFAULT_CHECKS.exists() else []


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
