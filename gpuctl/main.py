"""gpuctl: the one command people type.

Exit codes: 0-3 are verdicts (status, scan, check run: the worst health shown,
Healthy, Degraded, Unhealthy, Unknown; other commands exit 0 when done); an
error exits with its own code from sysexits.h (gpuhealth/errors.py: 64 usage,
68 nothing named so, 69 nothing running, 77 permission denied, …). Errors are
one line on stderr; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.exceptions import TyperException

from gpuctl import checks, deploy, kernel, read, report, responder, rules, schema, serve
from gpuctl.options import (
    STATUS_EXIT,
    DataDirOpt,
    JsonOpt,
    NatsOpt,
    data_dir_of,
    print_table,
)
from gpuctl.read import state_json
from gpuhealth import client
from gpuhealth.errors import ConfigError, GpuhealthError, NotFoundError
from gpuhealth.events import FAMILIES, HEALTH_ORDER, HealthState
from gpuhealth.text import plural

app = typer.Typer(
    rich_markup_mode=None,  # click's plain help: typer's rich one shows <bool> after every flag
    name="gpuctl",
    help="gpuhealth: GPU node health from the kernel log, NVML and sysfs, on NATS and ClickHouse.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(serve.serve_app, name="serve")
app.command("up")(serve.up)


@app.callback()
def _connection(
    nats_creds: Annotated[
        Path | None,
        typer.Option(
            "--nats-creds", "--creds", envvar="GPUHEALTH_NATS_CREDS", help="a NATS .creds file (JWT and NKey)"
        ),
    ] = None,
    nats_user: Annotated[
        str | None,
        typer.Option(
            "--nats-user",
            envvar="GPUHEALTH_NATS_USER",
            help="NATS user; the password from $GPUHEALTH_NATS_PASSWORD or the file $GPUHEALTH_NATS_PASSWORD_FILE",
        ),
    ] = None,
    nats_tls_ca: Annotated[
        Path | None,
        typer.Option(
            "--nats-tls-ca", "--tls-ca", envvar="GPUHEALTH_NATS_TLS_CA", help="CA bundle to verify the NATS servers"
        ),
    ] = None,
    debug: Annotated[bool, typer.Option("--debug", help="show an error's traceback (anywhere on the line)")] = False,
) -> None:
    """How every command (and the agent it may start) authenticates to NATS: set once, before the command.
    A token or user:password may also be in the URL; none of it is ever logged. (``--debug`` is taken off
    the command line by main() before typer sees it: it is here to be listed.)"""
    for name, value in (("CREDS", nats_creds), ("USER", nats_user), ("TLS_CA", nats_tls_ca)):
        if value is not None:
            os.environ[f"GPUHEALTH_NATS_{name}"] = str(value)  # the exec'd agent inherits it


app.command("inject-fault")(kernel.inject_fault)
app.command("parse")(kernel.parse)
app.command("scan")(kernel.scan)
app.command("set-healthy")(kernel.set_healthy)
app.command("events")(read.events)
app.command("watch")(read.watch)
# A query may open with a comment: "-- …" is the query, not an unknown option.
app.command("sql", context_settings={"ignore_unknown_options": True, "help_option_names": ["-h", "--help"]})(read.sql)
app.command("incidents")(read.incidents)
app.add_typer(rules.rules_app, name="rules")
app.command("replay")(rules.replay)
app.add_typer(checks.check_app, name="check")
app.command("nats-config")(deploy.nats_config)
app.add_typer(report.report_app, name="report")
app.add_typer(report.inventory_app, name="inventory")
app.add_typer(responder.responder_app, name="responder")
serve.serve_app.command("responder")(responder.serve_responder)  # beside its status command, not in serve.py
app.command("fleet")(read.fleet)


@app.command()
def simulate(
    nodes: Annotated[int, typer.Option("--nodes", help="how many simulated nodes")] = 50,
    gpus: Annotated[int, typer.Option("--gpus", help="GPUs per node")] = 8,
    fault_rate: Annotated[float, typer.Option("--fault-rate", help="faults per node-hour")] = 0.5,
    interval: Annotated[float, typer.Option("--interval", help="seconds between metric polls")] = 10.0,
    duration: Annotated[float | None, typer.Option("--duration", help="stop after SECONDS (default: Ctrl-C)")] = None,
    cluster: Annotated[str, typer.Option("--cluster", help="the simulated nodes' cluster")] = "sim",
    seed: Annotated[int, typer.Option("--seed", help="the same seed, the same faults")] = 1,
    data_dir: DataDirOpt = None,
    nats: NatsOpt = None,
) -> None:
    """A fleet of simulated nodes (fake NVML, real kernel line formats, sysfs faults) publishing into NATS."""
    from gpuctl.simulate import run_simulation

    serve.log_to_stderr(logging.WARNING)
    from gpuhealth.natsconf import SIMULATOR

    url, credentials = client.stack(data_dir_of(data_dir), nats, SIMULATOR)  # up's own identity for it
    raise typer.Exit(asyncio.run(run_simulation(url, nodes=nodes, gpus=gpus, fault_rate=fault_rate, interval=interval,
                                                duration=duration, cluster=cluster, seed=seed,
                                                credentials=credentials)))  # fmt: skip


# ---------------------------------------------------------------- reading


@app.command()
def status(
    json_out: JsonOpt = False,
    node: Annotated[str | None, typer.Option("--node", help="only this node")] = None,
    component: Annotated[str | None, typer.Option("--component", help="only this component")] = None,
    gpu: Annotated[str | None, typer.Option("--gpu", help="only this GPU: its UUID, PCI id or index")] = None,
    show_all: Annotated[bool, typer.Option("--all", help="list Healthy states and every GPU, however many")] = False,
    data_dir: DataDirOpt = None,
    nats: NatsOpt = None,
) -> None:
    """Current health per node, component and GPU. Exit 0/1/2/3 = Healthy/Degraded/Unhealthy/Unknown: the worst
    of what is shown; a filter that matches nothing is an error (68), nothing running another (69)."""

    async def read() -> tuple[list[HealthState], list[dict[str, Any]]]:
        nc = await client.connect(data_dir_of(data_dir), nats)
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

    states, gpus = filter_status(*asyncio.run(read()), node=node, component=component, gpu=gpu)
    if json_out:
        print(schema.dump(schema.Status, {"states": [state_json(s) for s in states], "gpus": gpus}))
    else:
        _print_states(states, gpus, show_all=show_all)
    raise typer.Exit(STATUS_EXIT[client.worst(states)])


def filter_status(
    states: list[HealthState], gpus: list[dict[str, Any]], *, node: str | None, component: str | None, gpu: str | None
) -> tuple[list[HealthState], list[dict[str, Any]]]:
    """The states and GPUs a filter selects. A GPU is named by UUID, PCI id or index (the index needs --node
    when several nodes report; a node's GPU states are keyed by PCI id)."""
    if node is not None:
        known = sorted({s.node for s in states} | {g["node"] for g in gpus})
        states = [s for s in states if s.node == node]
        gpus = [g for g in gpus if g["node"] == node]
        if not states and not gpus:
            raise NotFoundError(f"no node {node!r} has reported (nodes: {', '.join(known) or 'none yet'})")
    if component is not None:
        known = sorted({s.component for s in states})
        states = [s for s in states if s.component == component]
        if not states:
            raise NotFoundError(f"no state of component {component!r} (components: {', '.join(known) or 'none'})")
    if gpu is not None:
        chosen = [g for g in gpus if gpu in (g["uuid"], g["pci_bus_id"], str(g["index"]))]
        pcis = {(g["node"], g["pci_bus_id"]) for g in chosen}
        states = [s for s in states if s.gpu_uuid == gpu or s.pci_bus_id == gpu or (s.node, s.pci_bus_id) in pcis]
        if not chosen and not states:
            raise NotFoundError(f"no GPU {gpu!r} (a GPU is named by its UUID, PCI id or index)")
        gpus = chosen
    return states, gpus


FEW = 30  # up to this many states (or one node's), the table shows Healthy ones too


def _print_states(states: list[HealthState], gpus: list[dict[str, Any]], *, show_all: bool) -> None:
    """One node: everything. A fleet: what is not Healthy, and a count of the rest (--all lists it)."""
    ordered = sorted(states, key=lambda s: (-HEALTH_ORDER[s.health], s.node, s.component, s.entity))
    nodes = len({s.node for s in states})
    everything = show_all or nodes <= 1 or len(states) <= FEW
    shown = ordered if everything else [s for s in ordered if s.health != "Healthy"]
    if shown:
        print_table([("NODE", "COMPONENT", "ENTITY", "HEALTH", "ACTION", "REASON")]
                    + [(s.node, s.component, s.entity, s.health, ",".join(s.repair_actions) or "-", s.reason)
                       for s in shown])  # fmt: skip
    counts = {h: sum(s.health == h for s in states) for h in HEALTH_ORDER}
    summary = ", ".join(f"{n} {h}" for h, n in counts.items() if n)
    hidden = len(states) - len(shown)
    print(f"{plural(len(states), 'state')} on {plural(nodes, 'node')}: {summary or 'none yet'}"
          + (f" ({hidden} Healthy not listed: --all)" if hidden else ""))  # fmt: skip
    if gpus and (everything or len(gpus) <= 16):
        print()
        print_table(
            [("NODE", "GPU", "PCI", "UUID", "SERIAL", "NAME")]
            + [
                (g["node"], str(g["index"]), g["pci_bus_id"], g["uuid"] or "-", g["serial"] or "-", g["name"] or "-")
                for g in gpus
            ]
        )
    elif gpus:
        print(f"{len(gpus)} GPUs (--all, --node or --gpu to list them)")


@app.command("schema")
def print_schema(
    family: Annotated[
        str, typer.Argument(help="event | metric | inventory | health | incident | dlq | decision")
    ] = "event",
    out: Annotated[Path | None, typer.Option("--out", help="write here instead of stdout")] = None,
    directory: Annotated[Path | None, typer.Option(
        "--dir", help="write every family's schema into DIR as <family>.schema.json")] = None,
    outputs: Annotated[bool, typer.Option("--outputs", help="the schema of gpuctl's --json output instead")] = False,
) -> None:  # fmt: skip
    """The JSON Schema of one family of messages on gpuhealth's subjects (or, --outputs, of gpuctl's --json)."""
    from gpuhealth import wire_schema

    if directory is not None:
        for name, text in wire_schema.files().items():
            (directory / name).write_text(text)
        return
    if not outputs and family not in FAMILIES:
        raise ConfigError(f"no message family {family!r}: one of {', '.join(FAMILIES)}")
    text = schema.render() if outputs else wire_schema.files()[f"{family}.schema.json"]
    if out is None:
        sys.stdout.write(text)
    else:
        out.write_text(text)


@app.command()
def version(json_out: JsonOpt = False) -> None:
    """Print gpuctl's version (and the wire schema version it speaks)."""
    from importlib.metadata import version as v

    from gpuhealth.events import SCHEMA_VERSION

    if json_out:
        print(schema.dump(schema.Version, {"gpuctl": v("gpuhealth"), "wire_schema": SCHEMA_VERSION}, indent=0))
    else:
        print(f"gpuctl {v('gpuhealth')} (wire schema {SCHEMA_VERSION})")


def main() -> None:
    """Run one command. Its exit: 0-3 its verdict (or 0, done), or its error's code (gpuhealth/errors.py)."""
    debug = "--debug" in sys.argv[1:]
    if debug:
        sys.argv.remove("--debug")
    try:
        code = app(standalone_mode=False)  # our own exits: click's would give usage errors 2, a verdict
    except (KeyboardInterrupt, typer.Abort):
        sys.exit(130)
    except TyperException as e:  # usage: an unknown command or flag, a value of the wrong type
        if hasattr(e, "show"):
            e.show()
        else:
            print(f"gpuctl: {e}", file=sys.stderr)
        sys.exit(ConfigError.exit_code)
    except Exception as e:
        if debug:
            raise
        if isinstance(e, GpuhealthError):
            print(f"gpuctl: {e}", file=sys.stderr)
            sys.exit(e.exit_code)
        print(f"gpuctl: unexpected error: {e!r} (run with --debug for the traceback)", file=sys.stderr)
        sys.exit(GpuhealthError.exit_code)
    sys.exit(code if isinstance(code, int) else 0)
