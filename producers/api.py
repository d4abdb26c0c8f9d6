"""The agent's local HTTP API, GPUd-compatible, and its Prometheus metrics, on one loopback listener.

Tools written for GPUd's API (port 15132: every endpoint its client/v1 calls, in
its shapes; docs/gpud-compat.md says what matches) read ours unchanged; gpuhealth's
own views are under ``/gpuhealth/v1/``, ``/openapi.json`` describes it all and
``/metrics`` is Prometheus text. The routes are ``api_routes``.

Reads are open, as GPUd has them; every write needs the bearer token that only
the agent's user can read (``api_auth``). It is served on threads of its own
(``api_http``: a selector and a small pool, every request bounded in size and
time), so the agent stays lean and a slow or hostile client never touches the
event loop. What it shows is a ``View`` the agent keeps current: the health
states of this node (the rules publish them; the agent listens on its own
health subject), the events and metric batches it published lately, its
identity and inventory.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Counter

from gpuhealth.config import NodeIdentity
from gpuhealth.events import CheckResult, Event, HealthState, Inventory, KernelEvent, MetricBatch, NvmlEvent
from producers import exposition, gpud_detail, gpud_events, gpud_metrics, machine
from producers.api_http import Limits
from producers.api_routes import Handler
from producers.api_server import Server
from producers.host import OS_COMPONENT
from producers.klog import COMPONENT_OF_KIND

log = logging.getLogger("gpuhealth.api")

DEFAULT_LISTEN = "127.0.0.1:15132"
# The agent's own plumbing, one component: its bus, its spool (producers/outbox.py) and, Degraded while one
# refuses its writes for want of room, each stream by name.
AGENT_COMPONENT = "gpuhealth-agent"
RECENT_EVENTS = 10_000
# Every component the agent may report on: GPUd's detail components, those of the kernel log's faults, its own.
KNOWN_COMPONENTS = frozenset(
    {
        *gpud_detail.DETAIL_COMPONENTS,
        *COMPONENT_OF_KIND.values(),
        AGENT_COMPONENT,
        gpud_events.XID_COMPONENT,
        "accelerator-nvidia-remapped-rows",
        "nvml",
        OS_COMPONENT,
    }
)
DESCRIPTIONS = {
    "IGNORE_NO_ACTION_REQUIRED": "no action required",
    "CHECK_USER_APP_AND_GPU": "check the application, then the GPU",
    "RESET_GPU": "reset the GPU",
    "REBOOT_SYSTEM": "reboot the node",
    "HARDWARE_INSPECTION": "inspect the hardware",
}


@dataclass
class View:
    """What the API shows; written by the agent's event loop, read by the API's threads."""

    identity: NodeIdentity
    inventory: Inventory | None = None
    states: dict[tuple[str, str], HealthState] = field(default_factory=dict)
    events: collections.deque[Event] = field(default_factory=lambda: collections.deque(maxlen=RECENT_EVENTS))
    metrics: dict[str, MetricBatch] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)  # the agent's (gpuhealth.telemetry)
    no_room: dict[str, str] = field(default_factory=dict)  # streams refusing the agent's writes: telemetry.Metrics
    host: dict[str, Any] = field(default_factory=dict)  # machine.host_facts, read once at the start
    last_xid: dict[str, int] = field(default_factory=dict)  # GPU UUID or DCGM's PCI id → its last Xid
    history: gpud_metrics.History = field(default_factory=gpud_metrics.History)  # GPUd's /v1/metrics
    plugins: list[dict[str, Any]] = field(default_factory=list)  # the custom checks' specs, GPUd's plugin format

    def __post_init__(self) -> None:
        r = self.registry
        self.published = Counter("gpuhealth_agent_events_published", "events published, by source", ["source"],
                                 registry=r)  # fmt: skip
        self.metric_batches = Counter("gpuhealth_agent_metric_batches_published", "metric batches published",
                                      registry=r)  # fmt: skip
        r.register(exposition.HealthCollector(self))

    def published_event(self, ev: Event) -> None:
        with self.lock:
            self.events.append(ev)
            if isinstance(ev, KernelEvent | NvmlEvent) and ev.kind == "xid" and ev.xid is not None:
                # dcgm-exporter's DCGM_FI_DEV_XID_ERRORS: the last Xid of each GPU (NVML names it by UUID)
                uuid = ev.gpu_uuid if isinstance(ev, NvmlEvent) else None
                if uuid or ev.pci_bus_id:
                    self.last_xid[uuid or exposition.dcgm_pci(ev.pci_bus_id or "")] = ev.xid
        self.published.labels(ev.source).inc()

    def published_metrics(self, b: MetricBatch) -> None:
        with self.lock:
            self.metrics[b.entity] = b
            self.history.record(b, self._samples)
        self.metric_batches.inc()

    def health_changed(self, h: HealthState) -> None:
        with self.lock:
            self.states[(h.component, h.entity)] = h

    # ---------------------------------------------------------------- GPUd's shapes

    def states_json(self, components: set[str] | None) -> list[dict[str, Any]]:
        with self.lock:
            states = sorted(self.states.values(), key=lambda h: (h.component, h.entity))
        grouped: dict[str, list[dict[str, Any]]] = {}
        for h in states:
            if components and h.component not in components:
                continue
            actions = list(h.repair_actions)
            grouped.setdefault(h.component, []).append({
                "time": gpud_events.iso(h.time), "component": h.component, "name": h.entity, "health": h.health,
                "reason": h.reason,
                "suggested_actions": {"description": "; ".join(DESCRIPTIONS[a] for a in actions),
                                      "repair_actions": actions},
            })  # fmt: skip
        if not components or AGENT_COMPONENT in components:
            for stream, why in sorted(self.no_room.items()):  # the bus refusing writes: Degraded, with why
                grouped.setdefault(AGENT_COMPONENT, []).append(
                    gpud_detail.state(AGENT_COMPONENT, "Degraded", f"JetStream has no room in {stream}: {why}", stream)
                )
        details, pending = self._details()
        for component, data in details.items():
            if components and component not in components:
                continue
            info = gpud_detail.extra_info(data)
            rows = grouped.setdefault(component, [])
            for row in rows:  # GPUd's clients require the data on every state of a detail component
                row["extra_info"] = info
            if not rows:  # no rule says anything of it: as GPUd, one Healthy state named after it
                rows.append(gpud_detail.state(component, "Healthy", "no issue found") | {"extra_info": info})
        for component, first in pending.items():  # its first reading is yet to come
            if (not components or component in components) and component not in grouped:
                extra = {"extra_info": gpud_detail.extra_info(first)} if first is not None else {}
                grouped[component] = [gpud_detail.state(component, "Initializing", "no data yet") | extra]
        for p in self.plugins:  # GPUd marks a custom plugin's states as such
            for row in grouped.get(str(p["plugin_name"]), []):
                row |= {"component_type": "custom-plugin", "run_mode": p.get("run_mode", "auto")}
        return [{"component": c, "states": s} for c, s in grouped.items()]

    def _details(self) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any] | None]]:
        """The detail components' data, and those whose first reading is still pending (gpud_detail.pending)."""
        with self.lock:
            batches, gpus = list(self.metrics.values()), bool(self.inventory and self.inventory.gpus)
        host = next((b for b in batches if b.component == OS_COMPONENT), None)
        total = self.host.get("memoryInfo", {}).get("totalBytes")
        data = {**gpud_detail.gpu_payloads(batches), **gpud_detail.host_payloads(host, total)}
        if (os_data := gpud_detail.os_payload(host, self.host)) is not None:
            data["os"] = os_data
        return data, gpud_detail.pending(gpus and not any(b.gpu_uuid for b in batches), host)

    def events_json(self, start: int, end: int, components: set[str] | None) -> list[dict[str, Any]]:
        with self.lock:
            events = list(self.events)
        return gpud_events.events_json(events, start, end, components)

    def _samples(self, b: MetricBatch) -> list[gpud_metrics.Sample]:
        return gpud_metrics.samples(b, OS_COMPONENT, self.host.get("memoryInfo", {}).get("totalBytes"))

    def metrics_json(self, since: int, components: set[str] | None) -> list[dict[str, Any]]:
        with self.lock:
            return self.history.read(since, components)

    def info_json(self, start: int, end: int, since: int, components: set[str] | None) -> list[dict[str, Any]]:
        """GPUd's /v1/info: each component's states, events and metrics together."""
        states = {c["component"]: c["states"] for c in self.states_json(components)}
        events = {c["component"]: c["events"] for c in self.events_json(start, end, components)}
        metrics = {c["component"]: c["metrics"] for c in self.metrics_json(since, components)}
        window = {"startTime": gpud_events.iso(start), "endTime": gpud_events.iso(end)}
        return [{"component": c, **window, "info": {"states": states.get(c), "events": events.get(c),
                                                    "metrics": metrics.get(c)}}
                for c in sorted(components or (states.keys() | events.keys() | metrics.keys()))]  # fmt: skip

    def own_metrics_json(self) -> list[dict[str, Any]]:
        """gpuhealth's own view, as /v1/metrics was before GPUd's took that path: the latest batches, our names."""
        with self.lock:
            batches = list(self.metrics.values())
        grouped: dict[str, list[dict[str, Any]]] = {}
        for b in batches:
            labels = {"gpu_uuid": b.gpu_uuid or "", "pci_bus_id": b.pci_bus_id or "", "entity": b.entity}
            grouped.setdefault(b.component, []).extend(
                {"unix_seconds": b.time // 10**9, "name": k, "labels": labels, "value": v} for k, v in b.values.items()
            )
        return [{"component": c, "metrics": m} for c, m in grouped.items()]

    def components(self) -> list[str]:
        """The components this node has something to say of: states, events, detail data."""
        shown = {c["component"] for c in self.states_json(None)}
        with self.lock:
            return sorted(shown | {gpud_events.describe(e)[0] for e in self.events})

    def known(self) -> set[str]:
        """Every component name this agent may report: a name outside it is GPUd's 404."""
        with self.lock:
            seen = {c for c, _ in self.states} | {e.component for e in self.events}
        return seen | KNOWN_COMPONENTS | self.check_names()

    def held_components(self) -> list[str]:
        """The components the rules hold a state for: what set-healthy with none named clears."""
        with self.lock:
            return sorted({c for c, _ in self.states})

    def plugin_specs(self) -> list[dict[str, Any]]:
        return list(self.plugins)

    def check_names(self) -> set[str]:
        return {str(p["plugin_name"]) for p in self.plugins}

    def tagged(self, tag: str) -> list[str]:
        """The components with a tag: the custom checks' (ours carry none of their own)."""
        return sorted(str(p["plugin_name"]) for p in self.plugins if tag in p.get("tags", []))

    def machine_info(self) -> dict[str, Any]:
        """GPUd's /machine-info (machine.py)."""
        return machine.machine_info(self.identity, self.inventory, self.host)

    def own_machine_info(self) -> dict[str, Any]:
        """gpuhealth's own inventory view, as it was at /machine-info before GPUd's shape took that path."""
        i, inv = self.identity, self.inventory
        gpus = [{"index": g.index, "uuid": g.uuid, "serial": g.serial, "pciBusId": g.pci_bus_id, "name": g.name}
                for g in (inv.gpus if inv else [])]  # fmt: skip
        driver, cuda = (inv.driver_version, inv.cuda_driver_version) if inv else (None, None)
        return {"node": i.node, "cluster": i.cluster, "machineID": i.machine_id, "bootID": i.boot_id,
                "gpuDriverVersion": driver, "cudaVersion": cuda, "gpuCount": len(gpus), "gpus": gpus}  # fmt: skip


# ---------------------------------------------------------------- the server


@dataclass
class Actions:
    """What writes and triggers do, given by the agent (they need its kernel log source, its checks and its event
    loop)."""

    allow_inject: bool
    inject: Callable[[str, int], int]  # (message, priority) -> sequence number
    set_healthy: Callable[[list[str], str], int]  # (components, reason) -> events published
    default_pci: str = "0000:00:00.0"
    # (check names, tag) -> the results of running them now; KeyError for a name the agent has no check of
    run_checks: Callable[[list[str], str | None], list[CheckResult]] | None = None


class Api:
    """The API on ``listen``, over HTTPS given ``tls`` (api_tls); writes need ``token`` (api_auth), every
    request is bounded by ``limits``."""

    def __init__(
        self,
        view: View,
        actions: Actions,
        listen: str = DEFAULT_LISTEN,
        *,
        token: str,
        limits: Limits | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        host, _, port = listen.rpartition(":")
        self.view, self.actions, self.token = view, actions, token
        handler = type("Handler", (Handler,), {"api": self})
        self.server = Server(host.strip("[]") or "127.0.0.1", int(port), handler, limits or Limits(), tls)
        bound_host, bound_port = self.server.address
        self.address = f"{bound_host}:{bound_port}" if ":" not in bound_host else f"[{bound_host}]:{bound_port}"
        self.url = f"{'https' if tls else 'http'}://{self.address}"

    def start(self) -> None:
        self.server.start()
        log.info("local API on %s (writes need the bearer token)", self.url)

    def close(self) -> None:
        self.server.close()


def run_coroutine(loop: asyncio.AbstractEventLoop, coro: Any, timeout: float = 10.0) -> Any:
    """From an API thread, run something on the agent's event loop and wait for it."""
    return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout)
