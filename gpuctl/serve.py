"""gpuctl up and gpuctl serve: running gpuhealth, every stage on one node or one stage a process."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from gpuctl import privsep
from gpuctl.options import (
    ApiListenOpt,
    ApiTlsCertOpt,
    ApiTlsKeyOpt,
    ApiTlsOpt,
    ChecksOpt,
    ClickhouseOpt,
    ClickhousePasswordFileOpt,
    ClusterOpt,
    DataDirOpt,
    FleetGpusOpt,
    FleetNodesOpt,
    FleetPollOpt,
    HostIntervalOpt,
    JournalDirOpt,
    JournalOpt,
    KmsgOpt,
    LookbackOpt,
    MetricsBufferOpt,
    MetricsListenOpt,
    MetricsTtlOpt,
    NodeOpt,
    NvmlPollOpt,
    ProcOpt,
    ReplicasOpt,
    RulesFileOpt,
    SimulateOpt,
    SysfsIntervalOpt,
    SysfsOpt,
    data_dir_of,
    fleet_of,
)

ServiceUserOpt = Annotated[
    str | None,
    typer.Option("--service-user", help="up run as root runs the rules and the sink as this user "
                 "(default: gpuhealth, where it exists; root: inside up, as root)"),
]  # fmt: skip
# gpuctl up's, for the rules and the sink it runs as its service user (gpuctl/privsep.py).
AsUserOpt = Annotated[str | None, typer.Option("--as-user", hidden=True, help="become this user once set up")]
ReadyFdOpt = Annotated[int | None, typer.Option("--ready-fd", hidden=True, help="one JSON line here when serving")]

serve_app = typer.Typer(
    rich_markup_mode=None,  # click's plain help: typer's rich one shows <bool> after every flag
    help="Run one stage against a NATS server (what systemd units and Kubernetes start).",
    no_args_is_help=True,
)


def metrics(listen: str | None) -> None:
    if listen:
        from gpuhealth import telemetry

        logging.getLogger("gpuhealth").info("Prometheus metrics on http://%s/metrics", telemetry.serve(listen))


def log_to_stderr(level: int = logging.INFO) -> None:
    """stderr, or the journal with its structured fields when systemd runs us."""
    from gpuhealth import sd

    logging.basicConfig(level=level, handlers=[sd.log_handler()])


# ---------------------------------------------------------------- running


def up(
    data_dir: DataDirOpt = None,
    kmsg_path: KmsgOpt = Path("/dev/kmsg"),
    sysfs_root: SysfsOpt = Path("/sys"),
    proc_root: ProcOpt = Path("/proc"),
    nats: Annotated[str | None, typer.Option("--nats", help="use this NATS server instead of starting one")] = None,
    clickhouse: ClickhouseOpt = None,
    password_file: ClickhousePasswordFileOpt = None,
    metrics_ttl_days: MetricsTtlOpt = None,
    node: NodeOpt = None,
    cluster: ClusterOpt = None,
    nats_port: Annotated[int, typer.Option("--nats-port", help="embedded NATS port (-1: any free port)")] = -1,
    journal: JournalOpt = False,
    journal_dir: JournalDirOpt = None,
    kmsg_lookback: LookbackOpt = None,
    simulate_gpus: SimulateOpt = None,
    nvml_poll_interval: NvmlPollOpt = None,
    sysfs_interval: SysfsIntervalOpt = None,
    host_interval: HostIntervalOpt = None,
    rules_file: RulesFileOpt = None,
    api_listen: ApiListenOpt = "127.0.0.1:15132",
    api_tls: ApiTlsOpt = "on",
    api_tls_cert: ApiTlsCertOpt = None,
    api_tls_key: ApiTlsKeyOpt = None,
    checks: ChecksOpt = None,
    service_user: ServiceUserOpt = None,
) -> None:
    """Run every stage on this node: embedded NATS and ClickHouse, rules, sink and the agent."""
    from gpuctl.up import UpOptions, run_up

    log_to_stderr()
    opts = UpOptions(
        data_dir=data_dir_of(data_dir),
        kmsg_path=kmsg_path,
        sysfs_root=sysfs_root,
        proc_root=proc_root,
        nats_url=nats,
        clickhouse=clickhouse,
        clickhouse_password_file=password_file,
        metrics_ttl_days=metrics_ttl_days,
        node=node,
        cluster=cluster,
        nats_port=nats_port,
        journal=journal,
        journal_dir=journal_dir,
        kmsg_lookback=kmsg_lookback,
        simulate_gpus=simulate_gpus,
        nvml_poll_interval=nvml_poll_interval,
        sysfs_interval=sysfs_interval,
        host_interval=host_interval,
        rules_file=rules_file,
        api_listen=api_listen,
        api_tls=api_tls,
        api_tls_cert=api_tls_cert,
        api_tls_key=api_tls_key,
        checks=checks,
        service_user=service_user,
    )
    raise typer.Exit(asyncio.run(run_up(opts)))


@serve_app.command("agent")
def serve_agent(
    nats: Annotated[str, typer.Option("--nats", envvar="GPUHEALTH_NATS_URL", help="NATS URL")],
    data_dir: DataDirOpt = None,
    kmsg_path: KmsgOpt = Path("/dev/kmsg"),
    sysfs_root: SysfsOpt = Path("/sys"),
    proc_root: ProcOpt = Path("/proc"),
    node: NodeOpt = None,
    cluster: ClusterOpt = None,
    allow_inject: Annotated[bool, typer.Option("--allow-inject", help="accept inject-fault over NATS")] = False,
    journal: JournalOpt = False,
    journal_dir: JournalDirOpt = None,
    kmsg_lookback: LookbackOpt = None,
    simulate_gpus: SimulateOpt = None,
    nvml_poll_interval: NvmlPollOpt = None,
    sysfs_interval: SysfsIntervalOpt = None,
    host_interval: HostIntervalOpt = None,
    api_listen: ApiListenOpt = "127.0.0.1:15132",
    api_tls: ApiTlsOpt = "on",
    api_tls_cert: ApiTlsCertOpt = None,
    api_tls_key: ApiTlsKeyOpt = None,
    checks: ChecksOpt = None,
) -> None:
    """The node agent. Hands over to a lean process that holds no CLI framework."""
    from gpuctl.up import UpOptions, agent_argv

    opts = UpOptions(
        data_dir=data_dir_of(data_dir),
        kmsg_path=kmsg_path,
        sysfs_root=sysfs_root,
        proc_root=proc_root,
        nats_url=nats,
        clickhouse=None,
        node=node,
        cluster=cluster,
        journal=journal,
        journal_dir=journal_dir,
        kmsg_lookback=kmsg_lookback,
        simulate_gpus=simulate_gpus,
        nvml_poll_interval=nvml_poll_interval,
        sysfs_interval=sysfs_interval,
        host_interval=host_interval,
        api_listen=api_listen,
        api_tls=api_tls,
        api_tls_cert=api_tls_cert,
        api_tls_key=api_tls_key,
        checks=checks,
    )
    argv = agent_argv(nats, opts, allow_inject=allow_inject)
    sys.stdout.flush()
    os.execv(argv[0], argv)


@serve_app.command("rules")
def serve_rules(
    nats: Annotated[str, typer.Option("--nats", envvar="GPUHEALTH_NATS_URL", help="NATS URL")],
    instance: Annotated[int, typer.Option("--instance", help="this instance's number, 0-based")] = 0,
    instances: Annotated[int, typer.Option("--instances", help="how many instances share the nodes (<= 16)")] = 1,
    rules_file: RulesFileOpt = None,
    metrics_listen: MetricsListenOpt = None,
    replicas: ReplicasOpt = 1,
    fleet_nodes: FleetNodesOpt = None,
    fleet_gpus: FleetGpusOpt = 8,
    fleet_poll: FleetPollOpt = 10.0,
    metrics_buffer: MetricsBufferOpt = 6.0,
    as_user: AsUserOpt = None,
    ready_fd: ReadyFdOpt = None,
) -> None:
    """The rules service: events in, health states and incidents out. Instances share nodes by hash."""
    from gpuctl.up import serve_rules as run

    log_to_stderr()
    metrics(metrics_listen)
    fleet = fleet_of(fleet_nodes, fleet_gpus, fleet_poll, metrics_buffer)
    ready = privsep.Ready(ready_fd)
    with ready.or_why():
        code = asyncio.run(run(nats, instance=instance, instances=instances, rules_file=rules_file,
                               replicas=replicas, fleet=fleet, as_user=as_user, ready=ready))  # fmt: skip
    raise typer.Exit(code)


@serve_app.command("sink")
def serve_sink(
    nats: Annotated[str, typer.Option("--nats", envvar="GPUHEALTH_NATS_URL", help="NATS URL")],
    clickhouse: ClickhouseOpt = None,
    password_file: ClickhousePasswordFileOpt = None,
    metrics_ttl_days: MetricsTtlOpt = None,
    metrics_listen: MetricsListenOpt = None,
    data_dir: DataDirOpt = None,
    replicas: ReplicasOpt = 1,
    fleet_nodes: FleetNodesOpt = None,
    fleet_gpus: FleetGpusOpt = 8,
    fleet_poll: FleetPollOpt = 10.0,
    metrics_buffer: MetricsBufferOpt = 6.0,
    as_user: AsUserOpt = None,
    ready_fd: ReadyFdOpt = None,
) -> None:
    """The ClickHouse sink, which also answers read-only SQL for gpuctl."""
    from gpuctl.up import serve_sink as run
    from sinks.clickhouse import chdb_dsn

    log_to_stderr()
    dsn = clickhouse or chdb_dsn(data_dir_of(data_dir))
    metrics(metrics_listen)
    fleet = fleet_of(fleet_nodes, fleet_gpus, fleet_poll, metrics_buffer)
    ready = privsep.Ready(ready_fd)
    with ready.or_why():
        code = asyncio.run(run(nats, dsn, password_file, metrics_ttl_days, replicas, fleet, as_user, ready))
    raise typer.Exit(code)
