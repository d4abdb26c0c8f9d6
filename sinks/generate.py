"""A generated week in a ClickHouse store, with the weekly report it must produce.

    python -m sinks.generate chdb:///tmp/week --week 2026-W47 [--bulk-metrics N] [--bulk-events N]

Writes a small fleet whose every report figure is known (``expected()``: the
truth the report is tested against), and optionally bulk rows that change no
figure (temperatures, zero ECC counters, informational events) so the report's
speed can be measured over a realistic volume. Rows go in as the sink writes them: health
states feed the ``actions`` view, metrics the hourly rollup.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from typing import Any

from sinks.clickhouse import Store
from sinks.report import week_bounds
from sinks.rows import DECISION_COLUMNS, HEALTH_COLUMNS, INCIDENT_COLUMNS, INVENTORY_COLUMNS, METRIC_COLUMNS

H100, A100 = "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"
NODES = {"node-a": H100, "node-b": H100, "node-c": A100, "node-d": A100}
XID = "accelerator-nvidia-error-xid"
HOUR = 3600 * 10**9
DAY = 24 * HOUR


def ns(t: dt.datetime) -> int:
    return int(t.timestamp()) * 10**9


def generate(store: Store, week: str, *, bulk_metrics: int = 0, bulk_events: int = 0) -> dict[str, Any]:
    start, _, _ = week_bounds(week)
    ws = ns(start)
    store.connect()
    for part in (_inventory, _states, _incidents, _metrics, _decisions):
        part(store.client, store.database, ws)
    if bulk_metrics:
        _bulk_metrics(store, ws, bulk_metrics)
    if bulk_events:
        _bulk_events(store, ws, bulk_events)

    return expected(week)


def _gpu(key: str, t: int, node: str, index: int, uuid: str, model: str, cluster: str = "c",
         pci: str | None = None) -> list[Any]:  # fmt: skip
    """One GPU's row of an inventory snapshot (serial S-<uuid minus 'GPU-'>)."""
    return [key, t, cluster, node, f"m-{node}", "b", "nvml", index, uuid, f"S-{uuid.removeprefix('GPU-')}",
            f"CH-{node}", pci or f"0000:{0x18 + index:02x}:00.0", model, "", "96.00", "550.90", "12.4"]  # fmt: skip


def _inventory(c: Any, db: str, ws: int) -> None:
    inventory = [_gpu(f"inv-{node}", ws - 7 * DAY, node, i, f"GPU-{node}-{i}", model)
                 for node, model in NODES.items() for i in range(8)]  # fmt: skip
    # One H100 moves from node-a (before the week) to node-c (during it), failing on both.
    inventory.append(_gpu("inv-mover-a", ws - 3 * DAY, "node-a", 8, "GPU-MOVER", H100, pci="0000:f0:00.0"))
    inventory.append(_gpu("inv-mover-c", ws + 2 * DAY, "node-c", 8, "GPU-MOVER", H100, pci="0000:f0:00.0"))
    # And one A100 moves to another cluster.
    inventory.append(_gpu("inv-x", ws + 1 * DAY, "node-x", 0, "GPU-node-d-7", A100, cluster="c2"))
    # node-e joins mid-week (day 2, 12:00): its GPUs are observed for 108 of the week's 168 hours.
    inventory += [_gpu("inv-node-e", ws + 2 * DAY + 12 * HOUR, "node-e", i, f"GPU-node-e-{i}", H100) for i in range(4)]
    c.insert(f"{db}.inventory", inventory, column_names=INVENTORY_COLUMNS)


def _states(c: Any, db: str, ws: int) -> None:
    def state(i: int, node: str, t: int, component: str, entity: str, health: str, actions: list[str],
              reason: str) -> list[Any]:  # fmt: skip
        return [f"hs-{i}", t, "c", node, "b", component, entity, health, reason, actions, t, [], "", ""]

    c.insert(f"{db}.health_states", [
        state(1, "node-a", ws + 1 * HOUR, XID, "E1", "Unhealthy", ["REBOOT_SYSTEM"], "Xid 79"),
        state(2, "node-a", ws + 2 * HOUR, "pci", "E2", "Degraded", ["HARDWARE_INSPECTION"], "PCIe AER"),
        state(3, "node-a", ws + 3 * HOUR, XID, "E1", "Healthy", [], "cleared by reboot (boot 0f0e0d0c)"),
        state(4, "node-a", ws + 5 * HOUR, "pci", "E2", "Healthy", [], "set healthy by ops: reseated"),
        state(5, "node-b", ws - 1 * DAY, XID, "E1", "Unhealthy", ["RESET_GPU"], "Xid 48"),
        state(6, "node-b", ws + 10 * HOUR, XID, "E1", "Healthy", [], "restored: after reset"),
        state(7, "node-c", ws + 6 * DAY, "kernel-log", "node-c", "Unknown", [], "cannot read /dev/kmsg"),
        state(8, "node-d", ws + 1 * HOUR, "pci", "0000:17:00.0", "Healthy", [], "PCIe link at full width"),
    ], column_names=HEALTH_COLUMNS)  # fmt: skip


def _incidents(c: Any, db: str, ws: int) -> None:
    def incident(key: str, node: str, first: int, code: str, severity: str, count: int, uuid: str,
                 component: str = XID, entity: str = "0000:18:00.0") -> list[Any]:  # fmt: skip
        return [f"inc-{key}", count, first + count, "c", node, "b", component, entity, code, severity, code, count,
                first, first + count * 10**9, [], uuid, entity]  # fmt: skip

    c.insert(f"{db}.incidents", [
        incident("a1", "node-a", ws + 1 * HOUR, "xid:79", "Fatal", 3, "GPU-node-a-1"),
        incident("a2", "node-a", ws + 2 * DAY, "xid:13", "Warning", 50, "GPU-node-a-2"),
        incident("b0", "node-b", ws + 2 * DAY, "xid:48", "Fatal", 1, "GPU-node-b-0"),
        incident("mover-c", "node-c", ws + 3 * DAY, "xid:79", "Fatal", 1, "GPU-MOVER"),
        incident("mover-a", "node-a", ws - 2 * DAY, "xid:79", "Fatal", 2, "GPU-MOVER"),
        incident("d-aer", "node-d", ws + 4 * DAY, "aer_correctable", "Degraded", 120, "", "pci", "0000:17:00.0"),
        # The responder's fleet incident: 3 nodes behind leaf-2 (counted there, not as a node's incident).
        incident("fleet", "resp-host", ws + 5 * DAY, XID, "Critical", 3, "", "gpuhealth-fleet", "switch:leaf-2"),
    ], column_names=INCIDENT_COLUMNS)  # fmt: skip
    # A second update of incident a1 (seq 3 → 5 occurrences): the report counts the latest only.
    c.insert(f"{db}.incidents", [incident("a1", "node-a", ws + 1 * HOUR, "xid:79", "Fatal", 5, "GPU-node-a-1")],
             column_names=INCIDENT_COLUMNS)  # fmt: skip


def _metrics(c: Any, db: str, ws: int) -> None:
    metrics = [[f"mb-{h}", ws + h * HOUR, "c", "node-a", "0000:19:00.0", "GPU-node-a-1", "ecc_sbe_aggregate", float(h)]
               for h in range(168)]  # fmt: skip
    metrics += [[f"mr-{h}", ws + h * HOUR, "c", "node-b", "0000:18:00.0", "GPU-node-b-0", "remapped_rows_pending",
                 1.0 if 48 <= h < 72 else 0.0] for h in range(168)]  # fmt: skip
    c.insert(f"{db}.metrics", metrics, column_names=METRIC_COLUMNS)


def _decisions(c: Any, db: str, ws: int) -> None:
    def decision(i: int, node: str, t: int, action: str, outcome: str) -> list[Any]:
        return [f"dec-{i}", t, "c", node, XID, "E1", "Unhealthy", ["REBOOT_SYSTEM"], action, outcome, "why", "slurm",
                f"hs-{i}"]  # fmt: skip

    c.insert(f"{db}.responder_decisions", [
        decision(1, "node-a", ws + 1 * HOUR, "drain", "acted"),
        decision(2, "node-a", ws + 3 * HOUR, "resume", "acted"),
        decision(3, "node-b", ws + 2 * DAY, "drain", "refused"),
        decision(4, "node-c", ws + 5 * DAY, "drain", "held"),
        decision(5, "node-d", ws + 5 * DAY, "drain", "held"),
        decision(6, "node-d", ws + 5 * DAY + HOUR, "none", "skipped"),
        decision(7, "node-a", ws - 1 * DAY, "drain", "acted"),  # the week before
    ], column_names=DECISION_COLUMNS)  # fmt: skip


def expected(week: str) -> dict[str, Any]:
    """What the weekly report must say about the generated week."""
    start, _, label = week_bounds(week)
    days = [(start + dt.timedelta(days=d)).date().isoformat() for d in range(7)]
    return {
        "week": label,
        "availability": {"node-a": {"unhealthy_s": 7200, "degraded_s": 7200, "unknown_s": 0},
                         "node-b": {"unhealthy_s": 36000, "degraded_s": 0, "unknown_s": 0},
                         "node-c": {"unhealthy_s": 0, "degraded_s": 0, "unknown_s": 86400}},
        # (incidents, occurrences, entities, nodes): xid:79 hit PCI 0000:18:00.0 on node-a and on node-c,
        # two entities although one address.
        "incidents_by_code": {("xid:79", H100): (2, 6, 2, 2), ("xid:13", H100): (1, 50, 1, 1),
                              ("xid:48", H100): (1, 1, 1, 1), ("aer_correctable", "unknown"): (1, 120, 1, 1)},
        "top_nodes": [("node-a", 1, 2), ("node-b", 1, 1), ("node-c", 1, 1), ("node-d", 0, 1)],
        "top_gpu": ("GPU-node-a-2", "S-node-a-2", 1),
        "followed_serial": [("S-MOVER", ["node-a", "node-c"])],
        "actions": {("issued", "REBOOT_SYSTEM"): 1, ("issued", "HARDWARE_INSPECTION"): 1, ("cleared", "reboot"): 1,
                    ("cleared", "set-healthy"): 1, ("cleared", "restored"): 1},
        "ecc_trend": {(day, "ecc_sbe_aggregate"): (24 * d + 23, 1) for d, day in enumerate(days)}
        | {(day, "remapped_rows_pending"): (1 if d == 2 else 0, 1 if d == 2 else 0) for d, day in enumerate(days)},
        # (GPUs, observed GPU-hours, failures, MTBF): node-e's 4 GPUs count from when they were first seen.
        "responder": [("drain", "held", 2, 2), ("drain", "acted", 1, 1), ("drain", "refused", 1, 1),
                      ("resume", "acted", 1, 1)],
        "common_causes": [("switch:leaf-2", XID, 3)],
        "mtbf": {H100: (21, 17 * 168 + 4 * 108, 3, round((17 * 168 + 4 * 108) / 3, 2)), A100: (16, 16 * 168, 0, None)},
        "multi_host": {"GPU-MOVER": "node-a -> node-c", "GPU-node-d-7": "node-d -> node-x"},
        "moved_clusters": {"GPU-node-d-7": "c -> c2"},
        "chassis": {"CH-node-a": 9, "CH-node-b": 8, "CH-node-c": 9, "CH-node-d": 8, "CH-node-x": 1, "CH-node-e": 4},
    }  # fmt: skip


def generate_fresh(store: Store, since: dt.datetime) -> None:
    """A week in progress on a fresh install: gpuhealth started at ``since`` (whole seconds) on node-f (8 H100s);
    a minute later GPU 0 hit Xid 79 (Unhealthy since) and reported its ECC and remapped-row counters.
    Nothing else: the week's later days have not happened, and its charts have one day of data."""
    t, t1 = ns(since), ns(since) + 60 * 10**9
    store.connect()
    c, db = store.client, store.database
    c.insert(f"{db}.inventory", [_gpu("inv-node-f", t, "node-f", i, f"GPU-node-f-{i}", H100) for i in range(8)],
             column_names=INVENTORY_COLUMNS)  # fmt: skip
    c.insert(f"{db}.health_states", [["hs-f", t1, "c", "node-f", "b", XID, "GPU-node-f-0", "Unhealthy", "Xid 79",
                                      ["REBOOT_SYSTEM"], t1, [], "", ""]], column_names=HEALTH_COLUMNS)  # fmt: skip
    c.insert(f"{db}.incidents", [["inc-f", 1, t1, "c", "node-f", "b", XID, "0000:18:00.0", "xid:79", "Fatal",
                                  "xid:79", 1, t1, t1, [], "GPU-node-f-0", "0000:18:00.0"]],
             column_names=INCIDENT_COLUMNS)  # fmt: skip
    c.insert(f"{db}.metrics", [[f"mf-{name}", t1, "c", "node-f", "0000:18:00.0", "GPU-node-f-0", name, v]
                               for name, v in _fresh_counters().items()], column_names=METRIC_COLUMNS)  # fmt: skip


def _fresh_counters() -> dict[str, float]:
    """GPU 0's ECC and remapped-row counters as NVML gives them all: two corrected errors, a remapping pending."""
    zero = ("ecc_dbe_aggregate", "ecc_sbe_volatile", "ecc_dbe_volatile", "remapped_rows_correctable",
            "remapped_rows_uncorrectable", "remapped_rows_failure")  # fmt: skip
    return {"ecc_sbe_aggregate": 2.0, "remapped_rows_pending": 1.0} | dict.fromkeys(zero, 0.0)


def expected_fresh(since: dt.datetime, week: str, now: dt.datetime) -> dict[str, Any]:
    """What the report says about generate_fresh's week at ``now``: GPU-hours observed from ``since`` (or the
    week's start) to ``now`` (or the week's end), not the whole week; node-f Unhealthy from a minute after."""
    start, end, _ = week_bounds(week)
    upto, fault = min(now, end), since + dt.timedelta(minutes=1)
    seconds = 8 * max(0.0, (upto - max(since, start)).total_seconds())
    failures = int(start <= fault < upto)  # 0 when the week began less than a minute ago
    day = fault.date().isoformat()
    return {
        "mtbf": {H100: (8, round(seconds / 3600, 2), failures,
                        round(seconds / 3600 / failures, 2) if failures else None)},
        "availability": {"node-f": (upto - max(fault, start)).total_seconds()},
        "ecc_trend": {(day, name): (v, int(v > 0)) for name, v in _fresh_counters().items()} if failures else {},
    }  # fmt: skip


def _bulk_metrics(store: Store, ws: int, n: int) -> None:
    """n samples over the week from 1,000 nodes x 8 GPUs, in ClickHouse itself: temperatures and power,
    and ECC and remapped-row counters at zero (the report reads them, no figure changes)."""
    step = 7 * DAY // max(1, n // 8000)
    store.client.command(
        f"INSERT INTO {store.database}.metrics SELECT concat('bulk-', toString(intDiv(number, 8))) AS batch_id, "
        f"fromUnixTimestamp64Nano(toInt64({ws} + intDiv(number, 8000) * {step})) AS time, 'c', "
        f"concat('bulk-', toString(intDiv(number, 8) % 1000)), concat('0000:', toString(number % 8), ':00.0'), "
        f"concat('GPU-bulk-', toString(number % 8000)) AS gpu, ['temperature_gpu_c', 'power_w', "
        f"'ecc_sbe_aggregate', 'remapped_rows_pending'][intDiv(number, 8000) % 4 + 1] AS name, "
        f"if(name IN ('temperature_gpu_c', 'power_w'), 30 + (number % 50), 0) "
        f"FROM numbers({n})",
        settings={"max_insert_threads": 4, "max_block_size": 1_000_000},
    )


def _bulk_events(store: Store, ws: int, n: int) -> None:
    store.client.command(
        f"INSERT INTO {store.database}.events (id, time, cluster, node, machine_id, boot_id, source, component, "
        f"type, kind, pci_bus_id, process, message, count, seq, payload) SELECT concat('bev-', toString(number)), "
        f"fromUnixTimestamp64Nano(toInt64({ws} + number * intDiv({7 * DAY}, {n}))), 'c', "
        f"concat('bulk-', toString(number % 1000)), '', 'b', 'kmsg', 'os', 'KernelEvent', 'oom', '', 'python', "
        f"'Out of memory: Killed process', 1, number, '' FROM numbers({n})",
        settings={"max_insert_threads": 4},
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sinks.generate", description=__doc__.split("\n\n")[0])
    p.add_argument("clickhouse", help="chdb:///path or http(s)://…")
    p.add_argument("--week", required=True)
    p.add_argument("--bulk-metrics", type=int, default=0)
    p.add_argument("--bulk-events", type=int, default=0)
    p.add_argument("--fresh-since", type=dt.datetime.fromisoformat, metavar="ISO-TIME",
                   help="instead of the week's fleet, a fresh install started then (generate_fresh)")  # fmt: skip
    args = p.parse_args(argv)
    store = Store(args.clickhouse)
    try:
        if args.fresh_since:
            generate_fresh(store, args.fresh_since)
        else:
            generate(store, args.week, bulk_metrics=args.bulk_metrics, bulk_events=args.bulk_events)
    finally:
        store.close()
    print(f"generated {args.week} in {store.target.redacted()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
