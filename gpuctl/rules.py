"""gpuctl rules check and gpuctl replay: try a change to the rules before it goes live."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Annotated, Any

import msgspec
import typer

from gpuctl import schema
from gpuctl.options import (
    DataDirOpt,
    DirectClickhouseOpt,
    JsonOpt,
    NatsOpt,
    RulesFileOpt,
    print_table,
    progress,
)
from gpuctl.read import Reader, parse_duration
from gpuhealth.events import Event

rules_app = typer.Typer(
    rich_markup_mode=None,  # click's plain help: typer's rich one shows <bool> after every flag
    help="The rules' thresholds and windows.",
    no_args_is_help=True,
)


@rules_app.command("check")
def check(
    path: Annotated[Path, typer.Argument(help="a rules file (TOML), e.g. one with [infiniband] down_s = 120")],
    json_out: JsonOpt = False,
) -> None:
    """Validate a rules file and print what it changes from the defaults (exit 64 when it is not valid)."""
    from rules import limits

    changes = limits.check(path)
    if json_out:
        print(schema.dump(list[schema.RulesChange], [{"key": k, "default": d, "value": v} for k, d, v in changes]))
        return
    if not changes:
        print(f"{path}: valid, the same as the defaults")
        return
    print(f"{path}: valid, {len(changes)} change{'s' if len(changes) != 1 else ''} from the defaults")
    print_table([("KEY", "DEFAULT", "THIS FILE")] + [(k, str(d), str(v)) for k, d, v in changes])


WHERE = "time >= now64(9) - toIntervalSecond({since_s:UInt64}) AND ({node:String} = '' OR node = {node:String})"
COUNT_SQL = f"SELECT count() FROM gpuhealth.events WHERE {WHERE}"
EVENTS_SQL = f"""
SELECT payload FROM gpuhealth.events WHERE {WHERE}
ORDER BY node, time, id LIMIT {{limit:UInt32}} OFFSET {{offset:UInt64}}
"""
PUBLISHED_SQL = f"""
SELECT node, component, entity, argMax(health, time), argMax(reason, time), count()
FROM gpuhealth.health_states WHERE {WHERE} GROUP BY node, component, entity
"""
PAGE = 2000
_EVENT_JSON = msgspec.json.Decoder(Event)


def replay(
    since: Annotated[str, typer.Option("--since", help="how far back: 90s, 15m, 1h, 7d")] = "7d",
    rules_file: RulesFileOpt = None,
    node: Annotated[str | None, typer.Option("--node", help="only this node")] = None,
    all_rows: Annotated[bool, typer.Option("--all", help="also the entities where nothing would change")] = False,
    json_out: JsonOpt = False,
    data_dir: DataDirOpt = None,
    nats: NatsOpt = None,
    clickhouse: DirectClickhouseOpt = None,
) -> None:
    """Re-run the rules (the defaults, or --rules FILE) over stored events and compare with what was published.

    Every node starts from a clean state at --since; exit 0 when it could compare."""
    from rules import limits
    from rules.catalog import load
    from rules.replay import Replay

    catalog = dataclasses.replace(load(), limits=limits.load(rules_file))
    params: dict[str, Any] = {"since_s": parse_duration(since), "node": node or ""}
    engine = Replay(catalog)

    async def run() -> None:
        async with Reader(data_dir, nats, clickhouse) as db:
            _, [[total]] = await db.sql(COUNT_SQL, params)
            with progress(int(total), "replaying") as advance:
                for offset in range(0, int(total), PAGE):
                    page = {**params, "limit": PAGE, "offset": offset}
                    _, rows = await db.sql(EVENTS_SQL, page, max_rows=PAGE, timeout=60)
                    engine.feed(_EVENT_JSON.decode(payload) for (payload,) in rows)
                    advance(len(rows))
            _, published = await db.sql(PUBLISHED_SQL, params, max_rows=1_000_000, timeout=60)
            for n, component, entity, health, reason, count in published:
                engine.published((n, component, entity), health, reason, int(count))

    asyncio.run(run())
    rows = [r for r in engine.result() if all_rows or r.differs]
    differ = sum(r.differs for r in engine.rows.values())
    if json_out:
        table = [dataclasses.asdict(r) | {"differs": r.differs} for r in rows]
        summary = {"events": engine.events, "entities": len(engine.rows), "differ": differ}
        print(schema.dump(schema.Replay, summary | {"rows": table}))
        return
    rules = rules_file or "the default rules"
    print(f"{engine.events} events since {since}, {len(engine.rows)} entities: {differ} would differ under {rules}")
    if rows:
        header = ("NODE", "COMPONENT", "ENTITY", "PUBLISHED", "CHANGES", "REPLAYED", "CHANGES", "")
        print_table([header] + [_cells(r) for r in rows])


def _cells(r: Any) -> tuple[str, ...]:
    p, q = r.published, r.replayed
    return (r.node, r.component, r.entity, p.health, str(p.changes), q.health, str(q.changes), "*" if r.differs else "")
