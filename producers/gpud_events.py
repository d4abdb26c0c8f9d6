"""GPUd's ``/v1/events``: our events under GPUd's names, event types and components.

An Xid is GPUd's ``error_xid`` on ``accelerator-nvidia-error-xid`` whether the kernel log or NVML's event
waiter saw it, typed as GPUd's Xid table types it (components/accelerator/nvidia/xid/xid.go): Fatal, Warning or
Info. The sets below are that table's; the rules keep the same severities in rules/catalogs/xid.tsv (a test
holds the two together: a producer never imports the rules).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from gpuhealth.events import (
    CheckResult,
    Event,
    HostEvent,
    KernelEvent,
    NvmlEvent,
    SetHealthy,
    SourceStatus,
    Verification,
)

XID_COMPONENT = "accelerator-nvidia-error-xid"
XID_EVENT = "error_xid"
# GPUd's Xid table: the codes it types Fatal and Info; every other code is Warning.
FATAL_XIDS = frozenset({9, 12, 16, 18, 19, 26, 27, 28, 29, 30, 32, 33, 34, 35, 36, 38, 42, 44, 46, 47, 48, 59,
                        60, 61, 62, 63, 64, 65, 68, 69, 74, 78, 79, 81, 94, 95, 110, 119, 120, 121, 123, 140,
                        143})  # fmt: skip
INFO_XIDS = frozenset({152, 153, 157, 161, 162, 164, 165})


def iso(ns: int) -> str:
    """A time as Go's metav1.Time marshals it (RFC 3339, UTC); milliseconds kept."""
    return dt.datetime.fromtimestamp(ns / 1e9, dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def xid_type(xid: int | None) -> str:
    if xid is None:
        return "Unknown"
    return "Fatal" if xid in FATAL_XIDS else "Info" if xid in INFO_XIDS else "Warning"


def describe(e: Event) -> tuple[str, str, str, str]:
    """(component, name, GPUd event type, message) of one of our events."""
    if isinstance(e, KernelEvent):
        if e.xid is not None and e.component == XID_COMPONENT:
            return XID_COMPONENT, XID_EVENT, xid_type(e.xid), e.message
        kind = "Critical" if e.priority <= 3 else "Warning" if e.priority == 4 else "Info"
        return e.component, e.kind or "kernel", kind, e.message
    if isinstance(e, NvmlEvent):
        if e.kind == "xid":  # NVML's event waiter: the same fault GPUd's kmsg reader reports
            where = e.gpu_uuid or e.pci_bus_id or "a GPU"
            code = "with no code" if e.xid is None else str(e.xid)
            return XID_COMPONENT, XID_EVENT, xid_type(e.xid), f"NVML: Xid {code} on {where}"
        kind = "Critical" if e.kind in ("ecc_dbe", "gpu_lost") else "Warning"
        return e.component, e.kind, kind, e.message or e.kind
    if isinstance(e, HostEvent):
        return e.component, e.kind, "Warning" if not e.ok or e.counts else "Info", e.message
    if isinstance(e, SetHealthy):
        return e.component, "set_healthy", "Info", f"{e.user}: {e.reason}"
    if isinstance(e, CheckResult):
        health, reason = e.verdict()
        return e.component, "check", "Info" if health == "Healthy" else "Warning", reason
    if isinstance(e, Verification):
        status = "Warning" if e.status == "failed" else "Info"
        return e.component, "verification", status, f"{e.status}: {'; '.join(e.changes)}"
    assert isinstance(e, SourceStatus)
    return e.component, "source_status", "Info" if e.available else "Warning", e.reason


def events_json(events: list[Event], start: int, end: int, components: set[str] | None) -> list[dict[str, Any]]:
    """GPUd's GPUdComponentEvents of the events in [start, end)."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for e in events:
        if not start <= e.time < end:
            continue
        component, name, kind, message = describe(e)
        if components and component not in components:
            continue
        grouped.setdefault(component, []).append({"component": component, "time": iso(e.time), "name": name,
                                                  "type": kind, "message": message})  # fmt: skip
    return [{"component": c, "startTime": iso(start), "endTime": iso(end), "events": ev} for c, ev in grouped.items()]
