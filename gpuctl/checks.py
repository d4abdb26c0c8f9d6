"""gpuctl check: custom checks in GPUd's plugin format, run now on a node's agent, listed, or validated here."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import msgspec
import typer

from gpuctl import schema
from gpuctl.options import STATUS_EXIT, DataDirOpt, JsonOpt, NatsOpt, data_dir_of, print_table
from gpuhealth import client
from gpuhealth.errors import ConfigError
from gpuhealth.events import CheckResult

check_app = typer.Typer(
    rich_markup_mode=None,  # click's plain help: typer's rich one shows <bool> after every flag
    help="Custom checks (GPUd plugin specs): run them now, list them, validate a file.",
                        no_args_is_help=True)  # fmt: skip
NodeOpt = Annotated[str | None, typer.Option("--node", help="the node whose agent runs them (default: gpuctl up's)")]


def run_json(r: CheckResult) -> dict[str, Any]:
    """A run as gpuctl shows it: the facts, with the rules' judgement of them."""
    from rules import checks

    d = checks.check(r)
    return {"name": r.component, "node": r.node, "type": r.plugin_type, "trigger": r.trigger, "health": d.health,
            "reason": d.reason, "repair_actions": list(d.actions), "exit_code": r.exit_code, "timed_out": r.timed_out,
            "duration_ms": r.duration_ms, "fields": r.fields, "suggested_actions": r.suggested_actions,
            "output": r.output}  # fmt: skip


def print_runs(runs: list[dict[str, Any]], json_out: bool) -> None:
    if json_out:
        print(schema.dump(list[schema.CheckRun], runs))
        return
    rows = [("CHECK", "HEALTH", "EXIT", "TIME", "ACTIONS", "REASON")]
    for r in runs:
        code = "timeout" if r["timed_out"] else "-" if r["exit_code"] is None else str(r["exit_code"])
        rows.append((r["name"], r["health"], code, f"{r['duration_ms'] / 1000:.1f}s",
                     ",".join(r["repair_actions"]) or "-", r["reason"]))  # fmt: skip
    print_table(rows)


def _exit_for(runs: list[dict[str, Any]]) -> int:
    return max((STATUS_EXIT[r["health"]] for r in runs), default=0)


def _ask(node: str | None, body: dict[str, Any], data_dir: Path | None, nats: str | None, wait: float) -> Any:
    """The request to a node's agent (default: the local gpuctl up's) on its ``check`` subject."""
    d = data_dir_of(data_dir)
    return client.ask_agent(node or client.local_node(d), "check", body, d, nats, timeout=wait)


@check_app.command("run")
def run(
    names: Annotated[list[str] | None, typer.Argument(help="checks to run (plugin_name)")] = None,
    tag: Annotated[str | None, typer.Option("--tag", help="also every check with this tag")] = None,
    node: NodeOpt = None,
    wait: Annotated[float, typer.Option("--wait", help="seconds to wait for the results")] = 600.0,
    json_out: JsonOpt = False,
    data_dir: DataDirOpt = None,
    nats: NatsOpt = None,
) -> None:
    """Run checks now on a node's agent (manual ones too), one after another, and print their results.

    The results are published like any run's: `gpuctl status` shows them. Exit 0 when all are Healthy, 2 when one
    is not."""
    if not names and not tag:
        raise ConfigError("name a check or give --tag")
    answer = asyncio.run(_ask(node, {"names": names or [], "tag": tag or ""}, data_dir, nats, wait))
    decoder = msgspec.json.Decoder(CheckResult)
    runs = [run_json(decoder.decode(json.dumps(r))) for r in answer["results"]]
    print_runs(runs, json_out)
    raise typer.Exit(_exit_for(runs))


@check_app.command("list")
def list_checks(node: NodeOpt = None, json_out: JsonOpt = False, data_dir: DataDirOpt = None,
                nats: NatsOpt = None) -> None:  # fmt: skip
    """The checks a node's agent runs, with each one's last result."""
    answer = asyncio.run(_ask(node, {"describe": True}, data_dir, nats, 10.0))
    decoder = msgspec.json.Decoder(CheckResult)
    specs = [{**c, "last": run_json(decoder.decode(json.dumps(c["last"]))) if c["last"] else None}
             for c in answer["checks"]]  # fmt: skip
    _print_specs(specs, json_out)


def _print_specs(specs: list[dict[str, Any]], json_out: bool) -> None:
    if json_out:
        print(schema.dump(list[schema.CheckSpec], specs))
        return
    rows = [("CHECK", "TYPE", "RUN MODE", "TIMEOUT", "INTERVAL", "TAGS", "LAST")]
    for s in specs:
        last = s.get("last")
        rows.append((s["name"], s["type"], s["run_mode"], f"{s['timeout_s']:g}s",
                     f"{s['interval_s']:g}s" if s["interval_s"] else "once", ",".join(s["tags"]) or "-",
                     f"{last['health']}: {last['reason']}" if last else "-"))  # fmt: skip
    print_table(rows)


@check_app.command("validate")
def validate(
    files: Annotated[list[Path], typer.Argument(help="GPUd plugin files, e.g. /etc/default/gpud.plugins.yaml")],
    run_them: Annotated[
        bool, typer.Option("--run", help="also run them here, now (no agent, nothing published)")
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Check plugin files the way the agent will read them (like `gpud cs FILE`); exit 64 naming the first problem.

    With --run, every check in them runs on this machine, init ones first, and the exit code is the worst
    health (0 Healthy, 2 Unhealthy)."""
    from producers.check_spec import load_files

    specs = load_files(files)
    if not run_them:
        _print_specs([{**s.describe(), "last": None} for s in specs], json_out)
        return
    import logging

    from gpuhealth.config import read_identity
    from producers.checks import CheckRunner

    logging.getLogger("gpuhealth.checks").setLevel(logging.ERROR)  # the table says it all

    async def nowhere(_: list[tuple[str, str, bytes]]) -> None:
        return None

    async def run_all() -> list[CheckResult]:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="gpuctl-check-") as tmp:
            runner = CheckRunner(specs, read_identity(), Path(tmp), nowhere)
            ordered = sorted(specs, key=lambda s: s.plugin_type != "init")
            return await runner.run_many(ordered, "manual")

    runs = [run_json(r) for r in asyncio.run(run_all())]
    print_runs(runs, json_out)
    raise typer.Exit(_exit_for(runs))
