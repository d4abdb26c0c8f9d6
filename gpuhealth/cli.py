"""gpuctl: the one command people type.

Exit codes: 0 ok (status: all Healthy), 1 an error (status: worst is Degraded),
2 status: worst is Unhealthy, 3 status: worst is Unknown, 4 no running
gpuhealth answers. Errors are one line on stderr; ``--debug`` shows the
traceback.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from gpuhealth import client
from gpuhealth.config import default_data_dir, read_run_info
from gpuhealth.errors import ConfigError, GpuhealthError, NotRunningError
from gpuhealth.events import HEALTH_ORDER, HealthState

app = typer.Typer(
    name="gpuctl",
    help="gpuhealth: GPU node health from the kernel log, NVML and sysfs, on NATS and ClickHouse.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
serve_app = typer.Typer(
    help="Run one stage against a NATS server (what systemd units and Kubernetes start).", no_args_is_help=True
)
app.add_typer(serve_app, name="serve")

DataDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        help="gpuhealth's data dir [default: $GPUHEALTH_DATA_DIR, /var/lib/gpuhealth as root, "
        "else ~/.local/state/gpuhealth]",
        show_default=False,
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


def _data_dir(value: Path | None) -> Path:
    return value if value is not None else default_data_dir()


def _log_to_stderr(level: int = logging.INFO) -> None:
    logging.basicConfig(level=level, stream=sys.stderr, format="%(asctime)s %(name)s %(levelname)s %(message)s")


# ---------------------------------------------------------------- running


@app.command()
def up(
    data_dir: DataDirOpt = None,
    kmsg_path: KmsgOpt = Path("/dev/kmsg"),
    sysfs_root: SysfsOpt = Path("/sys"),
    proc_root: ProcOpt = Path("/proc"),
    nats: Annotated[str | None, typer.Option("--nats", help="use this NATS server instead of starting one")] = None,
    clickhouse: ClickhouseOpt = None,
    node: NodeOpt = None,
    cluster: ClusterOpt = None,
    nats_port: Annotated[int, typer.Option("--nats-port", help="embedded NATS port (-1: any free port)")] = -1,
) -> None:
    """Run every stage on this node: embedded NATS and ClickHouse, rules, sink and the agent."""
    from gpuhealth.cli_up import UpOptions, run_up

    _log_to_stderr()
    opts = UpOptions(
        data_dir=_data_dir(data_dir),
        kmsg_path=kmsg_path,
        sysfs_root=sysfs_root,
        proc_root=proc_root,
        nats_url=nats,
        clickhouse=clickhouse,
        node=node,
        cluster=cluster,
        nats_port=nats_port,
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
) -> None:
    """The node agent. Hands over to a lean process that holds no CLI framework."""
    from gpuhealth.cli_up import UpOptions, agent_argv

    opts = UpOptions(
        data_dir=_data_dir(data_dir),
        kmsg_path=kmsg_path,
        sysfs_root=sysfs_root,
        proc_root=proc_root,
        nats_url=nats,
        clickhouse=None,
        node=node,
        cluster=cluster,
    )
    argv = agent_argv(nats, opts, ready_fd=None, allow_inject=allow_inject)
    sys.stdout.flush()
    os.execv(argv[0], argv)


@serve_app.command("rules")
def serve_rules(nats: Annotated[str, typer.Option("--nats", envvar="GPUHEALTH_NATS_URL", help="NATS URL")]) -> None:
    """The rules service: events in, health states out."""
    from gpuhealth.cli_up import serve_rules as run

    _log_to_stderr()
    raise typer.Exit(asyncio.run(run(nats)))


@serve_app.command("sink")
def serve_sink(
    nats: Annotated[str, typer.Option("--nats", envvar="GPUHEALTH_NATS_URL", help="NATS URL")],
    clickhouse: ClickhouseOpt = None,
    data_dir: DataDirOpt = None,
) -> None:
    """The ClickHouse sink, which also answers read-only SQL for gpuctl."""
    from gpuhealth.cli_up import serve_sink as run
    from sinks.clickhouse import chdb_dsn

    _log_to_stderr()
    raise typer.Exit(asyncio.run(run(nats, clickhouse or chdb_dsn(_data_dir(data_dir)))))


# ---------------------------------------------------------------- reading


def _iso(ns: int) -> str:
    return dt.datetime.fromtimestamp(ns / 1e9, dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def state_json(s: HealthState) -> dict[str, Any]:
    return {
        "node": s.node,
        "cluster": s.cluster,
        "component": s.component,
        "entity": s.entity,
        "gpu_uuid": s.gpu_uuid,
        "pci_bus_id": s.pci_bus_id,
        "health": s.health,
        "reason": s.reason,
        "repair_actions": list(s.repair_actions),
        "since": _iso(s.since),
        "event_ids": list(s.event_ids),
    }


STATUS_EXIT = {"Healthy": 0, "Degraded": 1, "Unhealthy": 2, "Unknown": 3}


@app.command()
def status(json_out: JsonOpt = False, data_dir: DataDirOpt = None, nats: NatsOpt = None) -> None:
    """Current health per node, component and GPU. Exit 0/1/2/3 = Healthy/Degraded/Unhealthy/Unknown, 4 = no answer."""

    async def read() -> tuple[list[HealthState], list[dict[str, Any]]]:
        nc = await client.open_client(client.nats_url_for(_data_dir(data_dir), nats))
        try:
            states = await client.health_states(nc)
            gpus = [
                {
                    "node": inv.node,
                    "index": g.index,
                    "uuid": g.uuid,
                    "pci_bus_id": g.pci_bus_id,
                    "serial": g.serial,
                    "name": g.name,
                }
                for inv in await client.inventories(nc)
                for g in inv.gpus
            ]
        finally:
            await nc.close()
        return states, gpus

    states, gpus = asyncio.run(read())
    if json_out:
        print(json.dumps({"states": [state_json(s) for s in states], "gpus": gpus}, indent=2))
    else:
        _print_states(states, gpus)
    raise typer.Exit(STATUS_EXIT[client.worst(states)])


def _print_states(states: list[HealthState], gpus: list[dict[str, Any]]) -> None:
    if not states:
        print("no health states yet")
    rows = [("NODE", "COMPONENT", "ENTITY", "HEALTH", "ACTION", "REASON")]
    for s in sorted(states, key=lambda s: (-HEALTH_ORDER[s.health], s.node, s.component, s.entity)):
        rows.append((s.node, s.component, s.entity, s.health, ",".join(s.repair_actions) or "-", s.reason))
    _print_table(rows)
    if gpus:
        print()
        _print_table(
            [("NODE", "GPU", "PCI", "UUID", "NAME")]
            + [(g["node"], str(g["index"]), g["pci_bus_id"], g["uuid"] or "-", g["name"] or "-") for g in gpus]
        )


def _print_table(rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1])


_DURATION = re.compile(r"^(\d+)([smhdw])$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> int:
    m = _DURATION.match(text.strip())
    if not m:
        raise ConfigError(f"bad duration {text!r}: use e.g. 90s, 15m, 1h, 7d")
    return int(m.group(1)) * _UNIT_S[m.group(2)]


EVENTS_SQL = """
SELECT id, toUnixTimestamp64Nano(time) AS time_ns, cluster, node, boot_id, source, component, type, kind,
       xid, sxid, pci_bus_id, pid, process, message, count
FROM gpuhealth.events
WHERE time >= now64(9) - toIntervalSecond({since_s:UInt64})
ORDER BY time DESC, id
LIMIT {limit:UInt32}
"""


@app.command()
def events(
    since: Annotated[str, typer.Option("--since", help="how far back: 90s, 15m, 1h, 7d")] = "1h",
    limit: Annotated[int, typer.Option("--limit", help="at most this many events, newest first")] = 1000,
    json_out: JsonOpt = False,
    data_dir: DataDirOpt = None,
    nats: NatsOpt = None,
) -> None:
    """Events stored in ClickHouse, newest first."""
    params = {"since_s": parse_duration(since), "limit": limit}

    async def read() -> tuple[list[str], list[list[Any]]]:
        nc = await client.open_client(client.nats_url_for(_data_dir(data_dir), nats))
        try:
            return await client.sql(nc, EVENTS_SQL, params)
        finally:
            await nc.close()

    columns, rows = asyncio.run(read())
    objs = [dict(zip(columns, r, strict=True)) for r in rows]
    for o in objs:
        o["time"] = _iso(int(o["time_ns"]))
    if json_out:
        print(json.dumps(objs, indent=2, default=str))
        return
    if not objs:
        print(f"no events in the last {since}")
        return
    _print_table(
        [("TIME", "NODE", "KIND", "CODE", "PCI", "MESSAGE")]
        + [
            (
                o["time"],
                o["node"],
                o["kind"] or o["type"],
                str(o["xid"] or o["sxid"] or "-"),
                o["pci_bus_id"] or "-",
                o["message"][:100],
            )
            for o in objs
        ]
    )


# ---------------------------------------------------------------- faults and the kernel log

PRIORITIES = {
    "KERN_EMERG": 0,
    "KERN_ALERT": 1,
    "KERN_CRIT": 2,
    "KERN_ERR": 3,
    "KERN_WARNING": 4,
    "KERN_NOTICE": 5,
    "KERN_INFO": 6,
    "KERN_DEBUG": 7,
}


def parse_priority(text: str) -> int:
    t = text.strip().upper().replace("KERN.", "KERN_")
    aliases = {"KERN_WARN": "KERN_WARNING", "KERN_ERROR": "KERN_ERR"}
    t = aliases.get(t, t)
    if t.isdigit() and 0 <= int(t) <= 7:
        return int(t)
    if t in PRIORITIES:
        return PRIORITIES[t]
    raise ConfigError(f"bad priority {text!r}: use one of {', '.join(PRIORITIES)} or 0-7")


def xid_line(xid: int, pci: str) -> str:
    """An NVRM Xid line as the driver prints it: the PCI address without its function."""
    from producers.kernel import normalise_pci
    from rules.catalog import load

    norm = normalise_pci(pci)
    if norm is None:
        raise ConfigError(f"bad PCI address {pci!r}: use e.g. 0000:04:00.0")
    entry = load().xid.get(xid)
    text = entry.name if entry else "Unknown error"
    return f"NVRM: Xid (PCI:{norm[:-2]}): {xid}, pid='<unknown>', name=<unknown>, {text}"


@app.command("inject-fault")
def inject_fault(
    xid: Annotated[int | None, typer.Option("--xid", help="inject this NVIDIA Xid")] = None,
    pci: Annotated[str | None, typer.Option("--pci", help="the GPU's PCI address, e.g. 0000:04:00.0")] = None,
    kernel_message: Annotated[str | None, typer.Option("--kernel-message", help="inject this kernel line")] = None,
    priority: Annotated[str, typer.Option("--priority", help="KERN_ERR, kern.warn, … or 0-7")] = "KERN_ERR",
    kmsg_path: Annotated[Path | None, typer.Option("--kmsg-path", help="the agent's kernel log source")] = None,
    node: Annotated[str | None, typer.Option("--node", help="send it to this node's agent over NATS")] = None,
    data_dir: DataDirOpt = None,
    nats: NatsOpt = None,
) -> None:
    """Write a realistic fault record where the agent reads the kernel log: the whole pipeline runs."""
    if (xid is None) == (kernel_message is None):
        raise ConfigError("give exactly one of --xid or --kernel-message")
    if xid is not None:
        if pci is None:
            raise ConfigError("--xid needs --pci (the GPU's PCI address)")
        message = xid_line(xid, pci)
    else:
        message = str(kernel_message)
    prio = parse_priority(priority)
    if node is not None:
        print(asyncio.run(_inject_remote(node, message, prio, _data_dir(data_dir), nats)))
        return
    from producers.kmsg import append_record

    path = kmsg_path
    if path is None:
        info = read_run_info(_data_dir(data_dir))
        if info is not None and not info.allow_inject:
            raise ConfigError("the running gpuhealth does not accept injections")
        path = Path(info.kmsg_path) if info is not None else Path("/dev/kmsg")
    try:
        seq = append_record(path, message, prio)
    except PermissionError as e:
        raise ConfigError(f"cannot write to {path}: permission denied (root is needed for /dev/kmsg)") from e
    except FileNotFoundError as e:
        raise ConfigError(f"cannot write to {path}: no such file") from e
    where = f"{path} (seq {seq})" if seq >= 0 else str(path)
    print(f"injected into {where}: {message}")


async def _inject_remote(node: str, message: str, priority: int, data_dir: Path, nats: str | None) -> str:
    from gpuhealth import subjects

    nc = await client.open_client(client.nats_url_for(data_dir, nats))
    try:
        body = json.dumps({"message": message, "priority": priority}).encode()
        try:
            reply = await nc.request(subjects.cmd_subject(node, "inject"), body, timeout=5)
        except Exception as e:
            raise NotRunningError(f"no agent for node {node!r} answers: {e}") from e
    finally:
        await nc.close()
    answer = json.loads(reply.data)
    if "error" in answer:
        raise ConfigError(f"node {node}: {answer['error']}")
    return f"injected on node {node}: {message}"


@app.command()
def parse(json_out: JsonOpt = True) -> None:
    """Classify kernel lines from stdin: one JSON object per input line, in order."""
    from producers.kernel import classify

    out = sys.stdout
    for raw in sys.stdin.buffer:
        r = classify(raw.decode("utf-8", "replace").rstrip("\r\n"))
        out.write(
            json.dumps(
                {
                    "kind": r.kind,
                    "xid": r.xid,
                    "sxid": r.sxid,
                    "pci_bus_id": r.pci_bus_id,
                    "pid": r.pid,
                    "process_name": r.process,
                }
            )
            + "\n"
        )


@app.command()
def schema(
    out: Annotated[Path | None, typer.Option("--out", help="write here instead of stdout")] = None,
) -> None:
    """The JSON Schema of every message on gpuhealth's subjects."""
    from gpuhealth.wire_schema import render

    text = render()
    if out is None:
        sys.stdout.write(text)
    else:
        out.write_text(text)


@app.command()
def version() -> None:
    """Print gpuctl's version."""
    from importlib.metadata import version as v

    print(f"gpuctl {v('gpuhealth')}")


def main() -> None:
    debug = "--debug" in sys.argv[1:]
    if debug:
        sys.argv.remove("--debug")
    try:
        app()  # standalone: typer exits with the command's code; our own errors come out here
    except NotRunningError as e:
        if debug:
            raise
        print(f"gpuctl: {e}", file=sys.stderr)
        sys.exit(4)
    except GpuhealthError as e:
        if debug:
            raise
        print(f"gpuctl: {e}", file=sys.stderr)
        sys.exit(1)
