"""The rules and the sink as services: ``gpuctl serve rules|sink``, and both inside ``gpuctl up``'s process
where it has no service user to run them as (``Inside``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from nats.aio.client import Client as NATS
from prometheus_client import CollectorRegistry

from gpuctl import privsep
from gpuctl.options import data_dir_of
from gpuctl.stage_options import RulesOptions, SinkOptions
from gpuhealth import bus, sd, sizing, telemetry
from gpuhealth.errors import ConfigError
from rules import limits as limits_mod
from rules.service import RulesService
from sinks.clickhouse import Store, chdb_dsn
from sinks.service import SinkService

log = logging.getLogger("gpuhealth.up")

# What the rules and the sink import only when they first need it, imported as root before the drop: their user
# may not read the interpreter's files (gpuctl/privsep.py).
RULES_MODULES = ("encodings.idna",)
# The sink: the standard library's modules that chDB and clickhouse-connect import, then those two once dropped
# (gpuctl/privsep.py: chDB's threads must start with the capability to renice a query's threads).
SINK_MODULES = (*RULES_MODULES, "importlib.readers", "sqlglot", "sqlglot.dialects.clickhouse", "getpass",
                "sysconfig", "termios", "xml.etree.ElementTree", "zoneinfo", "pyexpat")  # fmt: skip
SINK_AFTER = ("chdb", "clickhouse_connect", "clickhouse_connect.driver.exceptions")

NOT_ASKED = privsep.Ready(None)  # a unit's service: no one waits on it but systemd


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


async def serve_rules(o: RulesOptions, ready: privsep.Ready = NOT_ASKED, measured: telemetry.Metrics | None = None,
                      probes: telemetry.Probes | None = None) -> int:  # fmt: skip
    limits = limits_mod.load(o.rules_file)  # a bad file fails here, before anything connects
    credentials = _become(o.as_user, RULES_MODULES)
    stop = bus.stop_on_signals()
    nc = await bus.connect(o.nats, f"gpuhealth-rules-{o.instance}of{o.instances}", credentials=credentials)
    js = nc.jetstream()
    await bus.provision(js, replicas=o.replicas, limits=bounds(o.fleet(), o.replicas))
    service = RulesService(js, instance=o.instance, instances=o.instances, limits=limits, metrics=measured)
    await service.start()
    probes = probes or telemetry.Probes()
    probes.ready = lambda: nc.is_connected
    ready.say(ready=True)
    sd.ready(f"rules instance {o.instance} of {o.instances}")
    await asyncio.gather(service.run(stop), sd.watchdog(stop), probes.beating(stop))
    sd.stopping()
    await bus.shutdown(nc)
    return 0


async def serve_sink(o: SinkOptions, ready: privsep.Ready = NOT_ASKED, measured: telemetry.Metrics | None = None,
                     probes: telemetry.Probes | None = None) -> int:  # fmt: skip
    # a bad URL fails here, before anything connects
    dsn = o.clickhouse or chdb_dsn(data_dir_of(o.data_dir))
    store = Store(dsn, password_file=o.password_file, metrics_ttl_days=o.metrics_ttl_days)
    credentials = _become(o.as_user, SINK_MODULES, SINK_AFTER)
    stop = bus.stop_on_signals()
    nc = await bus.connect(o.nats, "gpuhealth-sink", credentials=credentials)
    js = nc.jetstream()
    if not ready.asked:
        await bus.provision(js, replicas=o.replicas, limits=bounds(o.fleet(), o.replicas))
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
