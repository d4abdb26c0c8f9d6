"""gpuctl report weekly (the fleet's week as text, JSON, Markdown or an HTML page) and gpuctl inventory
(where GPUs have been): SQL files from sinks/queries/, run through the sink or on --clickhouse."""

from __future__ import annotations

import asyncio
import json
import sys
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import typer

from gpuctl.options import DataDirOpt, DirectClickhouseOpt, JsonOpt, NatsOpt, print_table, progress
from gpuctl.read import Reader

report_app = typer.Typer(
    rich_markup_mode=None,  # click's plain help: typer's rich one shows <bool> after every flag
    help="Fleet reports from ClickHouse (each section is a .sql file in sinks/queries/).",
                         no_args_is_help=True)  # fmt: skip


@report_app.command("weekly")
def weekly(
    week: Annotated[
        str | None, typer.Option("--week", help="ISO week, e.g. 2026-W47, or 'this' (default: the last complete one)")
    ] = None,
    fmt: Annotated[str, typer.Option("--format", help="text, json, md or html")] = "text",
    out: Annotated[Path | None, typer.Option("--out", help="write here instead of stdout")] = None,
    data_dir: DataDirOpt = None,
    nats: NatsOpt = None,
    clickhouse: DirectClickhouseOpt = None,
) -> None:
    """Availability per node, incidents by code and GPU model, top nodes and GPUs, faults that followed a
    serial across hosts, repair actions, ECC and remapped-row trends, MTBF per GPU model."""
    from sinks import report

    start, end, label = report.week_bounds(week)
    report.render(fmt, label, start, end, [])  # an unknown format fails before any query

    async def run() -> list[report.Section]:
        async with Reader(data_dir, nats, clickhouse) as db:

            async def query(sql: str, params: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
                return await db.sql(sql, params, max_rows=100_000, timeout=120)

            with progress(len(report.sections()), "report") as advance:
                return await report.collect(query, start, end, lambda title: advance(1, title))

    text = report.render(fmt, label, start, end, asyncio.run(run()))
    if out is None:
        sys.stdout.write(text)
    else:
        out.write_text(text)
        print(f"wrote {out} ({fmt}, week {label})", file=sys.stderr)


inventory_app = typer.Typer(
    rich_markup_mode=None,  # click's plain help: typer's rich one shows <bool> after every flag
    help="Where GPUs have been, from inventory snapshots (sinks/queries/inventory/*.sql).",
                            no_args_is_help=True)  # fmt: skip
SinceDaysOpt = Annotated[int, typer.Option("--since-days", help="only snapshots this recent (0: all)")]


def _inventory_query(name: str, since_days: int, json_out: bool, data_dir: Path | None, nats: str | None,
                     clickhouse: str | None) -> None:  # fmt: skip
    sql = resources.files("sinks").joinpath("queries", "inventory", f"{name}.sql").read_text()

    async def run() -> tuple[list[str], list[list[Any]]]:
        async with Reader(data_dir, nats, clickhouse) as db:
            return await db.sql(sql, {"since_days": since_days}, max_rows=100_000, timeout=60)

    columns, rows = asyncio.run(run())
    if json_out:
        print(json.dumps([dict(zip(columns, r, strict=True)) for r in rows], indent=2, default=str))
    elif rows:
        print_table([columns] + [[", ".join(map(str, v)) if isinstance(v, list) else str(v) for v in r] for r in rows])
    else:
        print("none")


def _inventory_command(name: str, doc: str) -> None:
    def command(since_days: SinceDaysOpt = 0, json_out: JsonOpt = False, data_dir: DataDirOpt = None,
                nats: NatsOpt = None, clickhouse: DirectClickhouseOpt = None) -> None:  # fmt: skip
        _inventory_query(name, since_days, json_out, data_dir, nats, clickhouse)

    command.__doc__ = doc
    inventory_app.command(name.replace("_", "-"))(command)


for _name, _doc in (
    ("multi_host", "GPUs seen on more than one machine, and the path they took."),
    ("moved_clusters", "GPUs that moved across clusters."),
    ("per_day", "GPUs reported per day, cluster and model."),
    ("chassis", "Chassis membership: nodes and GPUs per chassis serial."),
):
    _inventory_command(_name, _doc)
