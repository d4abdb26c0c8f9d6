"""The agent's local HTTP API, GPUd-compatible, and its Prometheus metrics, on one loopback listener.

Tools written for GPUd's API (port 15132: ``/healthz``, ``/machine-info``,
``/v1/states``, ``/v1/events``, ``/v1/metrics``, ``/v1/components``, ``POST
/inject-fault``, ``POST /v1/health-states/set-healthy``) read ours unchanged;
``/openapi.json`` describes it and ``/metrics`` is Prometheus text.

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
import datetime as dt
import logging
import re
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from prometheus_client import CollectorRegistry, Counter, generate_latest

from gpuhealth.config import NodeIdentity
from gpuhealth.events import (
    KERNEL_PRIORITIES,
    CheckResult,
    Event,
    HealthState,
    HostEvent,
    Inventory,
    KernelEvent,
    MetricBatch,
    NvmlEvent,
    SetHealthy,
    SourceStatus,
    Verification,
)
from producers import exposition, gpud_detail, machine
from producers.api_auth import check_bearer
from producers.api_doc import COMPONENT_LIST, OPENAPI, OWN_MACHINE_INFO
from producers.api_http import ClientError, GuardedHandler, Limits
from producers.api_server import Server
from producers.host import OS_COMPONENT
from producers.kernel import xid_line

log = logging.getLogger("gpuhealth.api")

DEFAULT_LISTEN = "127.0.0.1:15132"
# The agent's own plumbing, one component: its bus, its spool (producers/outbox.py) and, Degraded while one
# refuses its writes for want of room, each stream by name.
AGENT_COMPONENT = "gpuhealth-agent"
RECENT_EVENTS = 10_000
DESCRIPTIONS = {
    "IGNORE_NO_ACTION_REQUIRED": "no action required",
    "CHECK_USER_APP_AND_GPU": "check the application, then the GPU",
    "RESET_GPU": "reset the GPU",
    "REBOOT_SYSTEM": "reboot the node",
    "HARDWARE_INSPECTION": "inspect the hardware",
}


def _iso(ns: int) -> str:
    return dt.datetime.fromtimestamp(ns / 1e9, dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


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
                "time": _iso(h.time), "component": h.component, "name": h.entity, "health": h.health,
                "reason": h.reason,
                "suggested_actions": {"description": "; ".join(DESCRIPTIONS[a] for a in actions),
                                      "repair_actions": actions},
            })  # fmt: skip
        if not components or AGENT_COMPONENT in components:
            for stream, why in sorted(self.no_room.items()):  # the bus refusing writes: Degraded, with why
                grouped.setdefault(AGENT_COMPONENT, []).append(_no_room(stream, why))
        for component, data in self._details().items():
            if components and component not in components:
                continue
            info = gpud_detail.extra_info(data)
            rows = grouped.setdefault(component, [])
            for row in rows:  # GPUd's clients require the data on every state of a detail component
                row["extra_info"] = info
            if not rows:  # no rule says anything of it: as GPUd, one Healthy state named after it
                rows.append(_detail_state(component, info))
        return [{"component": c, "states": s} for c, s in grouped.items()]

    def _details(self) -> dict[str, dict[str, Any]]:
        with self.lock:
            batches = list(self.metrics.values())
        host = next((b for b in batches if b.component == OS_COMPONENT), None)
        total = self.host.get("memoryInfo", {}).get("totalBytes")
        return {**gpud_detail.gpu_payloads(batches), **gpud_detail.host_payloads(host, total)}

    def events_json(self, start: int, end: int, components: set[str] | None) -> list[dict[str, Any]]:
        with self.lock:
            events = [e for e in self.events if start <= e.time < end]
        grouped: dict[str, list[dict[str, Any]]] = {}
        for e in events:
            if components and e.component not in components:
                continue
            name, kind, message = _describe(e)
            grouped.setdefault(e.component, []).append({"time": _iso(e.time), "name": name, "type": kind,
                                                        "message": message})  # fmt: skip
        return [{"component": c, "startTime": _iso(start), "endTime": _iso(end), "events": ev}
                for c, ev in grouped.items()]  # fmt: skip

    def metrics_json(self, components: set[str] | None) -> list[dict[str, Any]]:
        with self.lock:
            batches = list(self.metrics.values())
        grouped: dict[str, list[dict[str, Any]]] = {}
        for b in batches:
            if components and b.component not in components:
                continue
            labels = {"gpu_uuid": b.gpu_uuid or "", "pci_bus_id": b.pci_bus_id or "", "entity": b.entity}
            grouped.setdefault(b.component, []).extend(
                {"unix_seconds": b.time // 10**9, "name": k, "labels": labels, "value": v} for k, v in b.values.items()
            )
        return [{"component": c, "metrics": m} for c, m in grouped.items()]

    def components(self) -> list[str]:
        with self.lock:
            return sorted({c for c, _ in self.states} | {e.component for e in self.events})

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


def _detail_state(component: str, info: dict[str, str]) -> dict[str, Any]:
    return {"time": _iso(time.time_ns()), "component": component, "name": component, "health": "Healthy",
            "reason": "no issue found", "suggested_actions": {"description": "", "repair_actions": []},
            "extra_info": info}  # fmt: skip


def _no_room(stream: str, why: str) -> dict[str, Any]:
    reason = f"JetStream has no room in {stream}: {why}"
    actions = {"description": "", "repair_actions": []}
    t = _iso(time.time_ns())
    return {
        "time": t,
        "component": AGENT_COMPONENT,
        "name": stream,
        "health": "Degraded",
        "reason": reason,
        "suggested_actions": actions,
    }


def _describe(e: Event) -> tuple[str, str, str]:
    """(name, GPUd event type, message) of one of our events."""
    if isinstance(e, KernelEvent):
        kind = "Critical" if e.priority <= 3 else "Warning" if e.priority == 4 else "Info"
        return e.kind or "kernel", kind, e.message
    if isinstance(e, NvmlEvent):
        return e.kind, "Critical" if e.kind in ("xid", "ecc_dbe", "gpu_lost") else "Warning", e.message or e.kind
    if isinstance(e, HostEvent):
        return e.kind, "Warning" if not e.ok or e.counts else "Info", e.message
    if isinstance(e, SetHealthy):
        return "set_healthy", "Info", f"{e.user}: {e.reason}"
    if isinstance(e, CheckResult):
        health, reason = e.verdict()
        return "check", "Info" if health == "Healthy" else "Warning", reason
    if isinstance(e, Verification):
        return "verification", "Warning" if e.status == "failed" else "Info", f"{e.status}: {'; '.join(e.changes)}"
    assert isinstance(e, SourceStatus)
    return "source_status", "Info" if e.available else "Warning", e.reason


# ---------------------------------------------------------------- the server


@dataclass
class Actions:
    """What POSTs do, given by the agent (they need its kernel log source and its event loop)."""

    allow_inject: bool
    inject: Callable[[str, int], int]  # (message, priority) -> sequence number
    set_healthy: Callable[[list[str], str], int]  # (components, reason) -> events published
    default_pci: str = "0000:00:00.0"


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
        handler = type("Handler", (_Handler,), {"api": self})
        self.server = Server(host.strip("[]") or "127.0.0.1", int(port), handler, limits or Limits(), tls)
        bound_host, bound_port = self.server.address
        self.address = f"{bound_host}:{bound_port}" if ":" not in bound_host else f"[{bound_host}]:{bound_port}"
        self.url = f"{'https' if tls else 'http'}://{self.address}"

    def start(self) -> None:
        self.server.start()
        log.info("local API on %s (writes need the bearer token)", self.url)

    def close(self) -> None:
        self.server.close()


MAX_NS = 253_402_300_799 * 10**9  # 9999-12-31T23:59:59Z
_RFC3339 = re.compile(r"^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def _time_param(values: list[str] | None, default: int) -> int:
    """GPUd sends RFC 3339 (any number of fraction digits); unix seconds are accepted too."""
    if not values or not values[0]:
        return default
    text = values[0]
    if re.fullmatch(r"[0-9]{1,10}", text):
        return int(text) * 1_000_000_000
    m = _RFC3339.match(text)
    if m:
        zone = "+00:00" if m.group(4) in ("Z", "z") else m.group(4)
        fraction = (m.group(3) or ".0")[:7]  # microseconds are enough for a window
        try:
            t = dt.datetime.fromisoformat(f"{m.group(1)}T{m.group(2)}{fraction}{zone}").timestamp()
        except (ValueError, OverflowError):
            pass  # a date that does not exist (2026-02-30)
        else:
            return min(max(int(t * 1e9), 0), MAX_NS)  # before 1970 or after 9999 means "from the start" / "on"
    raise ClientError(400, f"bad time {text!r}: RFC 3339 or unix seconds")


class _Handler(GuardedHandler):
    api: Api

    def _not_allowed(self) -> None:
        path = urlsplit(self.path).path
        methods = [m.upper() for m in OPENAPI["paths"].get(path, {})]
        if not methods:
            self.respond(404, {"error": f"no such endpoint {path}"})
            return
        self.respond(
            405,
            {"error": f"{self.command} is not allowed on {path}: {', '.join(methods)}"},
            headers={"Allow": ", ".join(methods)},
        )

    def __getattr__(self, name: str) -> Any:
        # The stdlib answers a method without a do_* with 501; an API says 405 and what is allowed.
        if name.startswith("do_"):
            return self._not_allowed
        raise AttributeError(name)

    def do_GET(self) -> None:  # the stdlib's name
        try:
            self._get()
        except ClientError as e:
            self.refuse(e)

    def do_POST(self) -> None:  # the stdlib's name
        try:
            self._post()
        except ClientError as e:
            self.refuse(e)

    def _get(self) -> None:
        url = urlsplit(self.path)
        if url.path in OPENAPI["paths"] and "get" not in OPENAPI["paths"][url.path]:
            self._not_allowed()
            return
        q = parse_qs(url.query)
        components = {c for v in q.get("components", []) for c in v.split(",") if c} or None
        view = self.api.view
        now = int(dt.datetime.now(dt.UTC).timestamp() * 1e9)
        if url.path == "/healthz":
            self.respond(200, {"status": "ok", "version": "v1"})
        elif url.path == "/machine-info":
            self.respond(200, view.machine_info())
        elif url.path == OWN_MACHINE_INFO:
            self.respond(200, view.own_machine_info())
        elif url.path == "/v1/states":
            self.respond(200, view.states_json(components))
        elif url.path == "/v1/events":
            start = _time_param(q.get("startTime"), now - 3600 * 10**9)
            end = _time_param(q.get("endTime"), now + 1)
            self.respond(200, view.events_json(start, end, components))
        elif url.path == "/v1/metrics":
            self.respond(200, view.metrics_json(components))
        elif url.path == "/v1/components":
            self.respond(200, view.components())
        elif url.path == "/metrics":
            text = generate_latest(view.registry) + exposition.dcgm_text(view).encode()
            self.respond(200, text, "text/plain; version=0.0.4; charset=utf-8")
        elif url.path == "/openapi.json":
            self.respond(200, OPENAPI)
        else:
            self.respond(404, {"error": f"no such endpoint {url.path}"})

    def _post(self) -> None:
        # Every write needs the token, checked before anything of the request is read or routed.
        refused = check_bearer(self.headers, self.api.token)
        if refused == 401:
            raise ClientError(
                401,
                "writes need the agent's token: Authorization: Bearer <token>",
                {"WWW-Authenticate": 'Bearer realm="gpuhealth"'},
            )
        if refused:
            raise ClientError(403, "the token is wrong")
        url = urlsplit(self.path)
        if url.path in OPENAPI["paths"] and "post" not in OPENAPI["paths"][url.path]:
            self._not_allowed()
            return
        if url.path not in ("/inject-fault", "/v1/health-states/set-healthy"):
            self.respond(404, {"error": f"no such endpoint {url.path}"})
            return
        body = self.read_json()
        body = {} if body is None else body
        if not isinstance(body, dict):
            raise ClientError(400, "the body must be a JSON object")
        actions = self.api.actions
        if url.path == "/inject-fault":
            if not actions.allow_inject:
                raise ClientError(403, "injection is not allowed on this agent (start it with --allow-inject)")
            message, priority = _injection(body, actions.default_pci)
            seq = actions.inject(message, priority)
            self.respond(200, {"ok": True, "seq": seq, "message": message})
        else:
            q = parse_qs(url.query, keep_blank_values=True)
            names = q.get("components", [])
            if len(names) != 1 or not COMPONENT_LIST.fullmatch(names[0]):
                raise ClientError(400, "name the components: ?components=accelerator-nvidia-error-xid,…")
            components = names[0].split(",")
            n = actions.set_healthy(components, str(body.get("reason", "") or "set healthy through the API"))
            self.respond(200, {"ok": True, "components": components, "events": n})


def _injection(body: dict[str, Any], default_pci: str) -> tuple[str, int]:
    """GPUd's bodies: {"kernel_message": {"priority", "message"}} or {"xid": {"id": N}}."""
    km = body.get("kernel_message")
    if isinstance(km, dict) and isinstance(km.get("message"), str) and 0 < len(km["message"]) <= 4096:
        priority = km.get("priority", "KERN_ERR")
        if isinstance(priority, int) and not isinstance(priority, bool) and 0 <= priority <= 7:
            return km["message"], priority
        if isinstance(priority, str) and priority in KERNEL_PRIORITIES:
            return km["message"], KERNEL_PRIORITIES[priority]
    x = body.get("xid")
    if isinstance(x, dict) and isinstance(x.get("id"), int) and not isinstance(x["id"], bool) and 0 < x["id"] < 1 << 16:
        return xid_line(default_pci[:-2], x["id"], "injected through the API"), 3
    raise ClientError(400, 'give {"kernel_message": {"priority": "KERN_ERR", "message": "…"}} or {"xid": {"id": 79}}')


def run_coroutine(loop: asyncio.AbstractEventLoop, coro: Any, timeout: float = 10.0) -> Any:
    """From an API thread, run something on the agent's event loop and wait for it."""
    return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout)
