"""gpuctl serve responder (the stage) and gpuctl responder status: what the responder holds drained
and what it decided, from ClickHouse."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer

from gpuctl import schema
from gpuctl.options import (
    ClusterOpt,
    DataDirOpt,
    DirectClickhouseOpt,
    JsonOpt,
    NatsOpt,
    NodeOpt,
    data_dir_of,
    iso,
    print_table,
)
from gpuctl.read import Reader
from gpuhealth.config import parse_duration
from gpuhealth.errors import ConfigError
from gpuhealth.text import clip

responder_app = typer.Typer(
    rich_markup_mode=None,
    help="The responder: what it drained, resumed, skipped and refused.",
    no_args_is_help=True,
)

# A node is gpuhealth's while its last acted drain-or-resume is a drain: every decision ever, since a
# drain may be older than any window asked for.
DRAINED_SQL = """
SELECT node, argMax(why, time) AS why, toUnixTimestamp64Nano(max(time)) AS at_ns
FROM gpuhealth.responder_decisions
WHERE outcome = 'acted' AND action IN ('drain', 'resume')
GROUP BY node
HAVING argMax(action, time) = 'drain'
ORDER BY node
"""
DECISIONS_SQL = """
SELECT toUnixTimestamp64Nano(time) AS time_ns, node, component, entity, action, outcome, why, adapter
FROM gpuhealth.responder_decisions
WHERE time >= now64(9) - toIntervalSecond({since_s:UInt64}) AND ({node:String} = '' OR node = {node:String})
ORDER BY time DESC, id
LIMIT {limit:UInt32}
"""


def objects(result: tuple[list[str], list[list[Any]]]) -> list[dict[str, Any]]:
    columns, rows = result
    return [dict(zip(columns, r, strict=True)) for r in rows]


def status_of(drained: list[dict[str, Any]], decisions: list[dict[str, Any]], since: str) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for d in decisions:
        counts[d["outcome"]] = counts.get(d["outcome"], 0) + 1
    for d in drained:
        d["since"] = iso(int(d.pop("at_ns")))
    for d in decisions:
        d["time"] = iso(int(d.pop("time_ns")))
    return {"since": since, "drained": drained, "counts": counts, "decisions": decisions}


@responder_app.command("status")
def status(
    since: Annotated[str, typer.Option("--since", help="decisions of the last: 90s, 15m, 1h, 7d")] = "1d",
    node: Annotated[str | None, typer.Option("--node", help="only this node's decisions")] = None,
    limit: Annotated[int, typer.Option("--limit", help="at most this many decisions, most recent first")] = 100,
    json_out: JsonOpt = False,
    data_dir: DataDirOpt = None,
    nats: NatsOpt = None,
    clickhouse: DirectClickhouseOpt = None,
) -> None:
    """The nodes the responder holds drained, and its decisions: acted, dry_run (pending --act),
    skipped (and why), refused (by the circuit breaker or the rate limit), failed."""
    params = {"since_s": int(parse_duration(since)), "node": node or "", "limit": limit}

    async def read() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        async with Reader(data_dir, nats, clickhouse) as r:
            return objects(await r.sql(DRAINED_SQL)), objects(await r.sql(DECISIONS_SQL, params))

    drained, decisions = asyncio.run(read())
    out = status_of(drained, decisions, since)
    if json_out:
        print(schema.dump(schema.ResponderStatus, out))
        return
    counts = ", ".join(f"{n} {k}" for k, n in sorted(out["counts"].items())) or "none"
    print(f"drained by gpuhealth: {len(drained)} node(s); decisions in the last {since}: {counts}")
    if drained:
        print_table([("NODE", "SINCE", "REASON")] + [(d["node"], d["since"], clip(d["why"], 100)) for d in drained])
    if decisions:
        fields = ("time", "node", "action", "outcome", "entity", "why")
        print_table(
            [tuple(f.upper() for f in fields)] + [tuple(clip(str(d[f]), 90) for f in fields) for d in decisions]
        )


def serve_responder(
    nats: Annotated[str, typer.Option("--nats", envvar="GPUHEALTH_NATS_URL", help="NATS URL")],
    act: Annotated[bool, typer.Option("--act", help="act on the scheduler (default: dry-run, decisions only)")] = False,
    adapter: Annotated[str, typer.Option("--adapter", help="slurm | command")] = "slurm",
    slurm_conf: Annotated[Path | None, typer.Option("--slurm-conf", help="slurm.conf (default: Slurm's own)")] = None,
    command: Annotated[Path | None, typer.Option("--command", help="the hook: gets each action as JSON")] = None,
    breaker_fraction: Annotated[float, typer.Option("--breaker-fraction", min=0.0, max=1.0,
                                                    help="most of the fleet drained in a window")] = 0.5,
    breaker_window: Annotated[float, typer.Option("--breaker-window", min=1.0, help="seconds")] = 300.0,
    max_drains_per_minute: Annotated[int, typer.Option("--max-drains-per-minute", min=1)] = 10,
    fleet_size: Annotated[int, typer.Option("--fleet-size", min=0,
                                            help="nodes in the fleet (0: as the scheduler lists them)")] = 0,
    topology: Annotated[Path | None, typer.Option("--topology", help="TOML: [switch] leaf-1 = [nodes], ...")] = None,
    burst_nodes: Annotated[int, typer.Option("--burst-nodes", min=0,
                                             help="nodes of one group with one fault: a fleet incident (0: off)")] = 3,
    burst_window: Annotated[float, typer.Option("--burst-window", min=1.0, help="seconds")] = 60.0,
    group_by: Annotated[list[str] | None, typer.Option("--group-by-inventory",
                                                       help="also group nodes by: driver, gpu-model")] = None,
    data_dir: DataDirOpt = None,
    node: NodeOpt = None,
    cluster: ClusterOpt = None,
) -> None:  # fmt: skip
    """The responder: drains nodes whose repair action needs it and resumes those it drained once
    Healthy again, through Slurm or a command hook. Dry-run unless --act."""
    from gpuctl.serve import log_to_stderr
    from gpuhealth.config import read_identity
    from responder import correlate
    from responder.adapters import CommandHook, Scheduler, Slurm
    from responder.decide import Policy
    from responder.service import Identity, serve

    log_to_stderr()
    scheduler: Scheduler
    if adapter == "slurm":
        scheduler = Slurm(slurm_conf)
    elif adapter == "command" and command is not None:
        scheduler = CommandHook(command)
    else:
        raise ConfigError(f"--adapter {adapter!r}: slurm, or command with --command PATH")
    unknown = sorted(set(group_by or []) - set(correlate.INVENTORY_KINDS))
    if unknown:
        raise ConfigError(f"--group-by-inventory {', '.join(unknown)}: one of {', '.join(correlate.INVENTORY_KINDS)}")
    policy = Policy(act=act, breaker_fraction=breaker_fraction, breaker_window_s=breaker_window,
                    max_drains_per_minute=max_drains_per_minute, fleet_size=fleet_size, burst_nodes=burst_nodes,
                    burst_window_s=burst_window, inventory_groups=tuple(group_by or ()),
                    topology=correlate.load(topology) if topology else correlate.Topology())  # fmt: skip
    me = read_identity(cluster=cluster, node=node)
    raise typer.Exit(asyncio.run(serve(nats, scheduler, policy, data_dir_of(data_dir), Identity(me.cluster, me.node))))
