"""Options and small helpers shared by gpuctl's commands."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from gpuhealth import sizing
from gpuhealth.config import default_data_dir

DataDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        help="gpuhealth's data dir [default: $GPUHEALTH_DATA_DIR, /var/lib/gpuhealth as root, "
        "else ~/.local/state/gpuhealth]",
        show_default=False,
        readable=False,  # a user who may not read it is told so by gpuctl, in one line (not a usage error)
    ),
]
NatsOpt = Annotated[
    str | None,
    typer.Option("--nats", envvar="GPUHEALTH_NATS_URL", help="NATS URL (default: the one the local 'gpuctl up' runs)"),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="print JSON")]
KmsgOpt = Annotated[Path, typer.Option("--kmsg-path", help="kernel log source: /dev/kmsg, a FIFO or a file")]
SysfsOpt = Annotated[Path, typer.Option("--sysfs-root", help="root of sysfs (a recorded tree in tests)")]
ProcOpt = Annotated[Path, typer.Option("--proc-root", help="root of procfs (a recorded tree in tests)")]
JournalOpt = Annotated[bool, typer.Option("--journal", help="read the kernel log from the systemd journal")]
JournalDirOpt = Annotated[
    Path | None, typer.Option("--journal-dir", help="read the kernel log from this journal directory")
]
NodeOpt = Annotated[str | None, typer.Option("--node", envvar="GPUHEALTH_NODE", help="this node's name")]
ClusterOpt = Annotated[str | None, typer.Option("--cluster", envvar="GPUHEALTH_CLUSTER", help="the cluster's name")]
ClickhouseOpt = Annotated[
    str | None,
    typer.Option(
        "--clickhouse",
        envvar="GPUHEALTH_CLICKHOUSE_URL",
        help="ClickHouse URL: chdb:///path (embedded) or http(s)://host:port (default: embedded in the data dir)",
    ),
]


ClickhousePasswordFileOpt = Annotated[
    Path | None,
    typer.Option("--clickhouse-password-file", envvar="GPUHEALTH_CLICKHOUSE_PASSWORD_FILE",
                 help="a file whose first line is the ClickHouse password (or set $GPUHEALTH_CLICKHOUSE_PASSWORD)"),
]  # fmt: skip
MetricsTtlOpt = Annotated[
    int | None,
    typer.Option(
        "--metrics-ttl-days", help="keep raw metric samples this many days (default 180; hourly rollups stay)"
    ),
]
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


LookbackOpt = Annotated[
    float | None,
    typer.Option("--kmsg-lookback", help="on the very first start, skip kernel records older than SECONDS"),
]
SimulateOpt = Annotated[
    int | None, typer.Option("--simulate-gpus", help="simulate N GPUs (a fake NVML): try gpuhealth anywhere")
]
NvmlPollOpt = Annotated[float | None, typer.Option("--nvml-poll-interval", help="seconds between NVML polls [10]")]
SysfsIntervalOpt = Annotated[
    float | None, typer.Option("--sysfs-interval", help="seconds between sysfs polls (default 10)")
]
HostIntervalOpt = Annotated[
    float | None, typer.Option("--host-interval", help="seconds between host polls (default 10)")
]
ReplicasOpt = Annotated[
    int,
    typer.Option("--replicas", envvar="GPUHEALTH_STREAM_REPLICAS", min=1, max=5,
                 help="JetStream replicas of the streams and buckets this service creates (3 on a cluster)"),
]  # fmt: skip
# What the streams' bounds are sized for (gpuhealth/sizing.py); `gpuctl nats-config` writes them to fleet.env.
FleetNodesOpt = Annotated[
    int | None,
    typer.Option(
        "--fleet-nodes",
        envvar="GPUHEALTH_FLEET_NODES",
        min=1,
        help="GPU nodes the streams' bounds are sized for (not given: bounded by age only, existing bounds kept)",
    ),
]
FleetGpusOpt = Annotated[
    int, typer.Option("--fleet-gpus", envvar="GPUHEALTH_FLEET_GPUS", min=0, help="GPUs a node, for the bounds")
]
FleetPollOpt = Annotated[
    float,
    typer.Option(
        "--fleet-poll-interval", envvar="GPUHEALTH_FLEET_POLL_INTERVAL", min=0.1, help="the agents' NVML poll, seconds"
    ),
]
MetricsBufferOpt = Annotated[
    float,
    typer.Option(
        "--metrics-buffer-hours",
        envvar="GPUHEALTH_METRICS_BUFFER_HOURS",
        min=0.1,
        help="how long the metrics stream keeps what the sink has not stored (then its oldest go)",
    ),
]


def fleet_of(nodes: int | None, gpus: int, poll_interval_s: float, metrics_buffer_hours: float) -> sizing.Fleet | None:
    """The fleet the streams are sized for; None when its size was not given."""
    return None if nodes is None else sizing.Fleet(nodes, gpus, poll_interval_s, metrics_buffer_hours * sizing.HOUR)


ChecksOpt = Annotated[
    list[Path] | None,
    typer.Option("--checks", "--plugins", help="custom checks in GPUd's plugin format (repeatable; default: "
                 "/etc/gpuhealth/checks.yaml if present); see 'gpuctl check validate'"),
]  # fmt: skip
RulesFileOpt = Annotated[
    Path | None,
    typer.Option("--rules", help="a rules file (TOML) over the default thresholds; see 'gpuctl rules check'"),
]
ApiListenOpt = Annotated[
    str,
    typer.Option("--api-listen", help="the agent's local GPUd-compatible API and /metrics, HOST:PORT ('off': none)"),
]
ApiTlsOpt = Annotated[
    Literal["on", "off"],
    typer.Option("--api-tls", help="serve the API over HTTPS, as GPUd does (a self-signed certificate in the data "
                 "dir), or not"),
]  # fmt: skip
ApiTlsCertOpt = Annotated[
    Path | None, typer.Option("--api-tls-cert", help="the API's certificate (PEM) instead of its self-signed one")
]
ApiTlsKeyOpt = Annotated[Path | None, typer.Option("--api-tls-key", help="the key of --api-tls-cert (PEM)")]
MetricsListenOpt = Annotated[
    str | None,
    typer.Option("--metrics-listen", help="serve Prometheus /metrics, /healthz and /readyz on HOST:PORT "
                 "(e.g. 127.0.0.1:9464)"),
]  # fmt: skip
UpMetricsListenOpt = Annotated[
    str | None,
    typer.Option("--metrics-listen", help="serve the rules' and the sink's /metrics, /healthz and /readyz on "
                 "HOST:PORT (the agent's are on its API); as root, the sink's on the next port"),
]  # fmt: skip
