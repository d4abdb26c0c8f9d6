"""gpuctl report weekly: the fleet's week from ClickHouse, as text, JSON, Markdown or an HTML page."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from gpuhealth.cli_options import DataDirOpt, DirectClickhouseOpt, NatsOpt
from gpuhealth.cli_read import Reader

report_app = typer.Typer(help="Fleet reports from ClickHouse (each section is a .sql file in sinks/queries/).",
                         no_args_is_help=True)  # fmt: skip


@report_app.command("weekly")
def weekly(
    week: Annotated[
        str | None, typer.Option("--week", help="ISO week, e.g. 2026-W47 (default: the last complete one)")
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

            with _Progress(len(report.sections())) as advance:
                return await report.collect(query, start, end, advance)

    text = report.render(fmt, label, start, end, asyncio.run(run()))
    if out is None:
        sys.stdout.write(text)
    else:
        out.write_text(text)
        print(f"wrote {out} ({fmt}, week {label})", file=sys.stderr)


class _Progress:
    """A progress bar on a terminal (stderr), nothing when piped."""

    def __init__(self, total: int) -> None:
        self.total = total
        self._bar: Any = None

    def __enter__(self) -> Any:
        if not sys.stderr.isatty():
            return lambda title: None
        from rich.console import Console
        from rich.progress import Progress

        self._bar = Progress(console=Console(stderr=True), transient=True)
        self._bar.start()
        task = self._bar.add_task("report", total=self.total)

        def advance(title: str) -> None:
            self._bar.update(task, advance=1, description=title)

        return advance

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
