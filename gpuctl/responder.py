"""gpuctl serve responder (the stage) and gpuctl responder status: what the responder holds drained
and what it decided, from ClickHouse."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import typer

from gpuctl import schema
from gpuctl.commands import taking
from gpuctl.options import (
    DataDirOpt,
    DirectClickhouseOpt,
    JsonOpt,
    NatsOpt,
    data_dir_of,
    iso,
    print_table,
)
from gpuctl.read import read_objects
from gpuctl.stage_options import ResponderOptions
from gpuhealth.config import parse_duration
from gpuhealth.errors import ConfigError
from gpuhealth.text import clip

responder_app = typer.Typer(
    rich_markup_mode=None,
    help="The responder: what it drained, resumed, skipped and refused.",
    no_args_is_help=True,
)

# A node is gpuhealth's while its last acted drain-or-resume is a drain: every decision ever, since a
# drain may be older than any window asked for. A held resume is a drain a fleet incident released.
DRAINED_SQL = """
SELECT node, argMax(why, time) AS why, toUnixTimestamp64Nano(max(time)) AS at_ns
FROM gpuhealth.responder_decisions
WHERE (outcome = 'acted' AND action IN ('drain', 'resume')) OR (outcome = 'held' AND action = 'resume')
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
    skipped (and why), refused (by the circuit breaker or the rate limit), held (a fleet incident's
    node, its drain released, pending a person), failed."""
    params = {"since_s": int(parse_duration(since)), "node": node or "", "limit": limit}

    drained, decisions = read_objects(data_dir, nats, clickhouse, (DRAINED_SQL, {}), (DECISIONS_SQL, params))
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


@taking(ResponderOptions)
def serve_responder(o: ResponderOptions) -> None:
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
    if o.adapter == "slurm":
        scheduler = Slurm(o.slurm_conf)
    elif o.adapter == "command" and o.command is not None:
        scheduler = CommandHook(o.command)
    else:
        raise ConfigError(f"--adapter {o.adapter!r}: slurm, or command with --command PATH")
    unknown = sorted(set(o.group_by or []) - set(correlate.INVENTORY_KINDS))
    if unknown:
        raise ConfigError(f"--group-by-inventory {', '.join(unknown)}: one of {', '.join(correlate.INVENTORY_KINDS)}")
    policy = Policy(act=o.act, breaker_fraction=o.breaker_fraction, breaker_window_s=o.breaker_window,
                    max_drains_per_minute=o.max_drains_per_minute, fleet_size=o.fleet_size, burst_nodes=o.burst_nodes,
                    burst_window_s=o.burst_window, inventory_groups=tuple(o.group_by or ()),
                    topology=correlate.load(o.topology) if o.topology else correlate.Topology())  # fmt: skip
    me = read_identity(cluster=o.cluster, node=o.node)
    identity = Identity(me.cluster, me.node)
    raise typer.Exit(asyncio.run(serve(o.nats, scheduler, policy, data_dir_of(o.data_dir), identity)))
