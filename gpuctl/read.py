"""gpuctl's history and live commands: events from ClickHouse, health changes as they happen."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from nats.aio.msg import Msg

from gpuctl import schema
from gpuctl.options import DataDirOpt, DirectClickhouseOpt, JsonOpt, NatsOpt, data_dir_of, iso, print_table
from gpuhealth import client, config
from gpuhealth.events import HealthState
from gpuhealth.text import clip


def state_json(s: HealthState) -> dict[str, Any]:
    return {
        "node": s.node, "cluster": s.cluster, "component": s.component, "entity": s.entity,
        "gpu_uuid": s.gpu_uuid, "pci_bus_id": s.pci_bus_id, "health": s.health, "reason": s.reason,
        "repair_actions": list(s.repair_actions), "since": iso(s.since), "event_ids": list(s.event_ids),
    }  # fmt: skip


def watch(
    node: Annotated[str | None, typer.Option("--node", help="only this node")] = None,
    json_out: JsonOpt = False,
    data_dir: DataDirOpt = None,
    nats: NatsOpt = None,
) -> None:
    """Live health changes as the rules publish them (Ctrl-C to stop)."""
    from gpuhealth import subjects
    from gpuhealth.events import HEALTH_DECODER

    subject = subjects.node_health_subjects(node) if node else f"{subjects.PREFIX}.health.>"

    async def follow() -> None:
        nc = await client.connect(data_dir_of(data_dir), nats)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)

        async def show(msg: Msg) -> None:
            try:
                s = HEALTH_DECODER.decode(msg.data)
            except ValueError:  # msgspec's errors are ValueErrors: a bad message is skipped, not fatal
                return
            if json_out:
                print(schema.dump(schema.State, state_json(s), indent=0), flush=True)
            else:
                actions = ",".join(s.repair_actions) or "-"
                print(f"{iso(s.time)}  {s.node}  {s.component}  {s.entity}  {s.health}  {actions}  {s.reason}",
                      flush=True)  # fmt: skip

        await nc.subscribe(subject, cb=show)
        if not json_out:
            print(f"watching {subject} (Ctrl-C to stop)", file=sys.stderr, flush=True)
        await stop.wait()
        await nc.close()

    asyncio.run(follow())


class Reader:
    """Read-only SQL through the running sink (over NATS), or straight to the ClickHouse given with
    --clickhouse: a server, or the chDB directory of a stack that is not running."""

    def __init__(self, data_dir: Path | None, nats: str | None, clickhouse: str | None = None) -> None:
        self.data_dir, self.nats, self.clickhouse = data_dir, nats, clickhouse
        self._nc: Any = None
        self._store: Any = None

    async def __aenter__(self) -> Reader:
        if self.clickhouse:
            from sinks.clickhouse import Store

            self._store = Store(self.clickhouse, read_only=True)
        else:
            self._nc = await client.connect(data_dir_of(self.data_dir), self.nats)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._nc is not None:
            await self._nc.close()
        if self._store is not None:
            await asyncio.get_running_loop().run_in_executor(None, self._store.close)

    async def sql(self, query: str, params: dict[str, Any] | None = None, *, max_rows: int = 10_000,
                  timeout: float = 30.0) -> tuple[list[str], list[list[Any]]]:  # fmt: skip
        if self._store is not None:
            result: tuple[list[str], list[list[Any]]] = await self._store.read(query, params or {}, max_rows, timeout)
            return result
        return await client.sql(self._nc, query, params, max_rows=max_rows, timeout=timeout)


def read_objects(data_dir: Path | None, nats: str | None, clickhouse: str | None,
                 *queries: tuple[str, dict[str, Any]]) -> list[list[dict[str, Any]]]:  # fmt: skip
    """Each query's rows as objects keyed by column, all asked in one session with the store."""

    async def run() -> list[list[dict[str, Any]]]:
        async with Reader(data_dir, nats, clickhouse) as r:
            return [objects(await r.sql(query, params)) for query, params in queries]

    return asyncio.run(run())


def objects(result: tuple[list[str], list[list[Any]]]) -> list[dict[str, Any]]:
    columns, rows = result
    return [dict(zip(columns, r, strict=True)) for r in rows]


def parse_duration(text: str) -> int:
    """Whole seconds back from now, as --since and --until take them (90s, 15m, 1h, 7d)."""
    return int(config.parse_duration(text))


EVENTS_SQL = """
SELECT id, toUnixTimestamp64Nano(time) AS time_ns, cluster, node, boot_id, source, component, type, kind,
       xid, sxid, pci_bus_id, pid, process, message, count
FROM gpuhealth.events
WHERE time >= now64(9) - toIntervalSecond({since_s:UInt64})
  AND time < now64(9) - toIntervalSecond({until_s:UInt64})
  AND ({node:String} = '' OR node = {node:String})
  AND ({component:String} = '' OR component = {component:String})
  AND ({kind:String} = '' OR kind = {kind:String} OR type = {kind:String})
ORDER BY time DESC, id
LIMIT {limit:UInt32}
"""


def events(
    since: Annotated[str, typer.Option("--since", help="how far back: 90s, 15m, 1h, 7d")] = "1h",
    until: Annotated[str, typer.Option("--until", help="up to this long ago: 0s (now), 30m, 1d")] = "0s",
    node: Annotated[str | None, typer.Option("--node", help="only this node")] = None,
    component: Annotated[str | None, typer.Option("--component", help="only this component")] = None,
    kind: Annotated[str | None, typer.Option("--kind", help="only this kind: xid, sxid, aer, reboot, …")] = None,
    limit: Annotated[int, typer.Option("--limit", help="at most this many events, newest first")] = 1000,
    json_out: JsonOpt = False,
    data_dir: DataDirOpt = None,
    nats: NatsOpt = None,
    clickhouse: DirectClickhouseOpt = None,
) -> None:
    """Events stored in ClickHouse, newest first."""
    params = {"since_s": parse_duration(since), "until_s": parse_duration(until), "node": node or "",
              "component": component or "", "kind": kind or "", "limit": limit}  # fmt: skip

    (objs,) = read_objects(data_dir, nats, clickhouse, (EVENTS_SQL, params))
    for o in objs:
        o["time"] = iso(int(o["time_ns"]))
    if json_out:
        print(schema.dump(list[schema.Event], objs))
        return
    if not objs:
        print(f"no events in the last {since}")
        return
    print_table(
        [("TIME", "NODE", "KIND", "CODE", "PCI", "MESSAGE")]
        + [
            (
                o["time"],
                o["node"],
                o["kind"] or o["type"],
                str(o["xid"] or o["sxid"] or "-"),
                o["pci_bus_id"] or "-",
                clip(o["message"], 100),
            )
            for o in objs
        ]
    )


INCIDENTS_SQL = """
SELECT id, node, component, entity, code, severity, reason, count, toUnixTimestamp64Nano(first) AS first_ns,
       toUnixTimestamp64Nano(last) AS last_ns, gpu_uuid, pci_bus_id
FROM gpuhealth.incidents FINAL
WHERE last >= now64(9) - toIntervalSecond({since_s:UInt64}) AND ({node:String} = '' OR node = {node:String})
ORDER BY last DESC, id
LIMIT {limit:UInt32}
"""


def incidents(
    since: Annotated[str, typer.Option("--since", help="active in the last: 90s, 15m, 1h, 7d")] = "7d",
    node: Annotated[str | None, typer.Option("--node", help="only this node")] = None,
    limit: Annotated[int, typer.Option("--limit", help="at most this many, most recent first")] = 1000,
    json_out: JsonOpt = False,
    data_dir: DataDirOpt = None,
    nats: NatsOpt = None,
    clickhouse: DirectClickhouseOpt = None,
) -> None:
    """Incidents from ClickHouse: each fault on each entity once, with its count, first and last time."""
    params = {"since_s": parse_duration(since), "node": node or "", "limit": limit}

    (objs,) = read_objects(data_dir, nats, clickhouse, (INCIDENTS_SQL, params))
    for o in objs:
        o["first"], o["last"] = iso(int(o.pop("first_ns"))), iso(int(o.pop("last_ns")))
    if json_out:
        print(schema.dump(list[schema.Incident], objs))
        return
    if not objs:
        print(f"no incidents in the last {since}")
        return
    header = ("LAST", "NODE", "COMPONENT", "ENTITY", "CODE", "SEVERITY", "COUNT", "FIRST", "REASON")
    fields = ("last", "node", "component", "entity", "code", "severity", "count", "first", "reason")
    print_table([header] + [tuple(clip(str(o[f]), 80) for f in fields) for o in objs])


def sql(
    query: Annotated[str, typer.Argument(help="a read-only ClickHouse query, e.g. 'SELECT count() FROM events'")],
    json_out: Annotated[bool, typer.Option("--json", help="print an array of objects keyed by column name")] = False,
    max_rows: Annotated[int, typer.Option("--max-rows", help="refuse results longer than this")] = 10_000,
    timeout: Annotated[float, typer.Option("--timeout", help="seconds the query may run")] = 30.0,
    data_dir: DataDirOpt = None,
    nats: NatsOpt = None,
    clickhouse: DirectClickhouseOpt = None,
) -> None:
    """Run read-only SQL on gpuhealth's ClickHouse store (through the sink that owns it, or --clickhouse).

    Tables are gpuhealth's (plain names mean them); SELECT, EXPLAIN, DESCRIBE and SHOW run, inside
    limits. Anything else is refused before it runs, in one line saying why (exit 65)."""

    async def run() -> tuple[list[str], list[list[Any]]]:
        async with Reader(data_dir, nats, clickhouse) as r:
            return await r.sql(query, max_rows=max_rows, timeout=timeout)

    columns, rows = asyncio.run(run())
    if json_out:
        print(json.dumps([dict(zip(columns, r, strict=True)) for r in rows], indent=2, default=str))
    elif columns:
        print_table([columns] + [[str(v) for v in r] for r in rows])


def fleet(json_out: JsonOpt = False, data_dir: DataDirOpt = None, nats: NatsOpt = None) -> None:
    """Every node in one view, worst first, with a 0-100 health score per node and GPU (exit 0 when shown)."""
    from gpuhealth.fleet import fleet_view

    async def read() -> list[dict[str, Any]]:
        nc = await client.connect(data_dir_of(data_dir), nats)
        try:
            return fleet_view(await client.health_states(nc), await client.inventories(nc))
        finally:
            await nc.close()

    nodes = asyncio.run(read())
    for n in nodes:
        if n["oldest_open"] is not None:
            n["oldest_open"]["since"] = iso(n["oldest_open"].pop("since_ns"))
    if json_out:
        print(schema.dump(schema.Fleet, {"nodes": nodes}))
        return
    if not nodes:
        print("no node has reported yet")
        return
    rows = [["NODE", "SCORE", "BAND", "UNHEALTHY", "DEGRADED", "UNKNOWN", "GPUS<80", "OLDEST OPEN"]]
    for n in nodes:
        oldest = n["oldest_open"]
        weak = sum(1 for g in n["gpus"] if g["score"] < 80)
        rows.append([n["node"], str(n["score"]), n["band"], str(n["counts"]["Unhealthy"]),
                     str(n["counts"]["Degraded"]), str(n["counts"]["Unknown"]), f"{weak}/{len(n['gpus'])}",
                     f"{oldest['since']} {oldest['component']} {oldest['entity']}" if oldest else "-"])  # fmt: skip
    print_table(rows)
