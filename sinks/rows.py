"""Messages as ClickHouse rows: the column lists of each table and one function a message type.

Pure (no client, no I/O), so the writer, the benches and the tests build the same rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from gpuhealth.events import (
    CheckResult,
    DeadLetter,
    Decision,
    Event,
    HealthState,
    HostEvent,
    Incident,
    Inventory,
    KernelEvent,
    MetricBatch,
    NvmlEvent,
    SetHealthy,
    SourceStatus,
    Verification,
)

EVENT_COLUMNS = [
    "id",
    "time",
    "cluster",
    "node",
    "machine_id",
    "boot_id",
    "source",
    "component",
    "type",
    "kind",
    "xid",
    "sxid",
    "pci_bus_id",
    "pid",
    "process",
    "message",
    "count",
    "seq",
    "payload",
]
HEALTH_COLUMNS = [
    "id",
    "time",
    "cluster",
    "node",
    "boot_id",
    "component",
    "entity",
    "health",
    "reason",
    "repair_actions",
    "since",
    "event_ids",
    "gpu_uuid",
    "pci_bus_id",
]
INCIDENT_COLUMNS = ["id", "seq", "time", "cluster", "node", "boot_id", "component", "entity", "code", "severity",
                    "reason", "count", "first", "last", "event_ids", "gpu_uuid", "pci_bus_id"]  # fmt: skip
DLQ_COLUMNS = ["id", "time", "stage", "subject", "reason", "headers", "data"]
DECISION_COLUMNS = ["id", "time", "cluster", "node", "component", "entity", "health", "repair_actions", "action",
                    "outcome", "why", "adapter", "health_id"]  # fmt: skip
METRIC_COLUMNS = ["batch_id", "time", "cluster", "node", "entity", "gpu_uuid", "name", "value"]
PROCESS_COLUMNS = ["batch_id", "time", "cluster", "node", "gpu_uuid", "pci_bus_id", "pid", "process",
                   "used_memory_bytes"]  # fmt: skip


_U32 = 2**32 - 1


def event_row(ev: Event) -> list[Any]:
    kind, xid, sxid, pci, pid, process, message, count, seq = "", None, None, "", None, "", "", 1, -1
    if isinstance(ev, KernelEvent):
        kind, xid, sxid, pci = ev.kind or "", ev.xid, ev.sxid, ev.pci_bus_id or ""
        pid, process, message, count, seq = ev.pid, ev.process or "", ev.message, ev.count, ev.seq
    elif isinstance(ev, SourceStatus):
        kind, message = "source_status", ev.reason
    elif isinstance(ev, SetHealthy):
        kind, message = "set_healthy", f"{ev.user}: {ev.reason}"
    elif isinstance(ev, NvmlEvent):
        kind, xid, pci, message = ev.kind, ev.xid, ev.pci_bus_id or "", ev.message
    elif isinstance(ev, CheckResult):  # fields, actions and the output are in the payload
        kind, message = f"check_{ev.trigger}", ev.verdict()[1]
    elif isinstance(ev, Verification):
        kind, message = f"verification_{ev.status}", "; ".join(ev.changes)
    elif isinstance(ev, HostEvent):  # the entity, counts and condition are in the payload
        # Each count fits, their sum may not: the column is UInt32, and the payload keeps the counts.
        kind, pci, message, count = ev.kind, ev.pci_bus_id or "", ev.message, min(max(1, sum(ev.counts.values())), _U32)
    return [
        ev.id,
        ev.time,
        ev.cluster,
        ev.node,
        ev.machine_id,
        ev.boot_id,
        ev.source,
        ev.component,
        type(ev).__name__,
        kind,
        xid,
        sxid,
        pci,
        pid,
        process,
        message,
        count,
        seq,
        msgspec.json.encode(ev).decode(),
    ]


def health_row(h: HealthState) -> list[Any]:
    return [
        h.id,
        h.time,
        h.cluster,
        h.node,
        h.boot_id,
        h.component,
        h.entity,
        h.health,
        h.reason,
        list(h.repair_actions),
        h.since,
        list(h.event_ids),
        h.gpu_uuid or "",
        h.pci_bus_id or "",
    ]


def incident_row(i: Incident) -> list[Any]:
    return [i.id, i.seq, i.time, i.cluster, i.node, i.boot_id, i.component, i.entity, i.code, i.severity, i.reason,
            i.count, i.first, i.last, list(i.event_ids), i.gpu_uuid or "", i.pci_bus_id or ""]  # fmt: skip


class MetricIn(msgspec.Struct, array_like=False):
    """A row of metrics_in: one batch, unrolled by ClickHouse."""

    batch_id: str
    time_ns: int
    cluster: str
    node: str
    entity: str
    gpu_uuid: str
    names: list[str]
    values: list[float]


_JSON_ROWS = msgspec.json.Encoder()


def metrics_in_block(batches: Sequence[MetricBatch]) -> bytes:
    """JSONEachRow for metrics_in: one line a batch."""
    return b"\n".join(
        _JSON_ROWS.encode(MetricIn(b.id, b.time, b.cluster, b.node, b.entity, b.gpu_uuid or "", list(b.values),
                                   list(b.values.values())))
        for b in batches
    )  # fmt: skip


def metric_rows(b: MetricBatch) -> list[list[Any]]:
    return [[b.id, b.time, b.cluster, b.node, b.entity, b.gpu_uuid or "", name, value]
            for name, value in b.values.items()]  # fmt: skip


def process_rows(b: MetricBatch) -> list[list[Any]]:
    return [[b.id, b.time, b.cluster, b.node, b.gpu_uuid or "", b.pci_bus_id or "", p.pid, p.name,
             p.used_memory_bytes] for p in b.processes]  # fmt: skip


INVENTORY_COLUMNS = ["id", "time", "cluster", "node", "machine_id", "boot_id", "source", "gpu_index", "gpu_uuid",
                     "serial", "chassis_serial", "pci_bus_id", "model", "board_part_number", "vbios",
                     "driver_version", "cuda_driver_version"]  # fmt: skip


def inventory_rows(inv: Inventory) -> list[list[Any]]:
    return [[inv.id, inv.time, inv.cluster, inv.node, inv.machine_id, inv.boot_id, inv.source, g.index, g.uuid or "",
             g.serial or "", inv.chassis_serial or "", g.pci_bus_id, g.name or "", g.board_part_number or "",
             g.vbios or "", inv.driver_version or "", inv.cuda_driver_version or ""] for g in inv.gpus]  # fmt: skip


def dlq_row(d: DeadLetter) -> list[Any]:
    return [d.id, d.time, d.stage, d.subject, d.reason, d.headers, d.data.decode("utf-8", "replace")]


def decision_row(d: Decision) -> list[Any]:
    return [d.id, d.time, d.cluster, d.node, d.component, d.entity, d.health, list(d.repair_actions), d.action,
            d.outcome, d.why, d.adapter, d.health_id]  # fmt: skip
