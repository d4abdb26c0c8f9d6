"""Options and small helpers shared by gpuctl's commands."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from gpuctl.commands import typer_option
from gpuctl.stage_options import RulesFileOptions, ServiceOptions
from gpuhealth.config import default_data_dir
from producers.options import DATA_DIR_HELP

DataDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        help=DATA_DIR_HELP,
        show_default=False,
        readable=False,  # a user who may not read it is told so by gpuctl, in one line (not a usage error)
    ),
]
NatsOpt = Annotated[
    str | None,
    typer.Option("--nats", envvar="GPUHEALTH_NATS_URL", help="NATS URL (default: the one the local 'gpuctl up' runs)"),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="print JSON")]


DirectClickhouseOpt = Annotated[
    str | None,
    typer.Option("--clickhouse", help="query this ClickHouse directly (https://…, or chdb:///path of a stopped "
                                      "store) instead of through the running sink"),
]  # fmt: skip


STATUS_EXIT = {"Healthy": 0, "Degraded": 1, "Unhealthy": 2, "Unknown": 3}  # a command's exit: the worst health shown


def data_dir_of(value: Path | None) -> Path:
    return value if value is not None else default_data_dir()


def iso(ns: int) -> str:
    return dt.datetime.fromtimestamp(ns / 1e9, dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


COLOURS = {"Healthy": "green", "Degraded": "yellow", "Unhealthy": "bold red", "Unknown": "magenta",
           "Critical": "bold red", "Fatal": "bold red"}  # fmt: skip


def print_table(rows: Sequence[Sequence[str]]) -> None:
    """A header row and data rows: a rich table with health in colour on a terminal, plain columns when piped
    (what scripts and grep see does not depend on the terminal)."""
    if sys.stdout.isatty() and not os.environ.get("NO_COLOR"):
        from rich.console import Console

        Console().print(rich_table(rows))
        return
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1])


Advance = Callable[..., None]  # advance(steps, description=None)


@contextlib.contextmanager
def progress(total: int, label: str) -> Iterator[Advance]:
    """A progress bar on a terminal (stderr), nothing when piped or when there is nothing to count."""
    if not total or not sys.stderr.isatty():
        yield lambda steps, description=None: None
        return
    from rich.console import Console
    from rich.progress import Progress

    bar = Progress(console=Console(stderr=True), transient=True)
    bar.start()
    task = bar.add_task(label, total=total)
    try:
        yield lambda steps, description=None: bar.update(task, advance=steps, description=description or label)
    finally:
        bar.stop()


def rich_table(rows: Sequence[Sequence[str]]) -> Any:
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, header_style="bold", pad_edge=False)
    for name in rows[0]:
        table.add_column(name, overflow="fold")
    for r in rows[1:]:
        table.add_row(*(Text(c, style=COLOURS.get(c, "")) for c in r))
    return table


# Flags a service declares (gpuctl/stage_options.py) that a command of typer's own takes too: said there, once.
FleetGpusOpt = Annotated[int, typer_option(ServiceOptions, "fleet_gpus")]
FleetPollOpt = Annotated[float, typer_option(ServiceOptions, "fleet_poll")]
MetricsBufferOpt = Annotated[float, typer_option(ServiceOptions, "metrics_buffer")]
RulesFileOpt = Annotated[Path | None, typer_option(RulesFileOptions, "rules_file")]
