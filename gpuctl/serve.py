"""gpuctl up and gpuctl serve: running gpuhealth, every stage on one node or one stage a process.

Their flags are declared once, as options classes (producers/options.py for the agent,
gpuctl/stage_options.py for the rest); the commands here are made from them (gpuctl/commands.py).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import sys
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

import typer

from gpuctl import privsep
from gpuctl.commands import taking
from gpuctl.options import data_dir_of
from gpuctl.stage_options import RulesOptions, ServiceOptions, SinkOptions, UpOptions
from gpuhealth import flags
from producers.options import NOT_UP, AgentOptions

if TYPE_CHECKING:
    from gpuhealth import telemetry

serve_app = typer.Typer(
    rich_markup_mode=None,  # click's plain help: typer's rich one shows <bool> after every flag
    help="Run one stage against a NATS server (what systemd units and Kubernetes start).",
    no_args_is_help=True,
)


def metrics(listen: str | None) -> tuple[telemetry.Metrics, telemetry.Probes]:
    """The stage's instruments, and its /metrics, /healthz and /readyz on ``listen``; the probes it keeps current."""
    from prometheus_client import CollectorRegistry  # here: the commands that serve nothing stay quick to start

    from gpuhealth import telemetry

    measured, probes = telemetry.Metrics(CollectorRegistry()), telemetry.Probes()
    if listen:
        address = telemetry.serve(listen, measured.registry, probes)
        logging.getLogger("gpuhealth").info("Prometheus metrics on http://%s/metrics (/healthz, /readyz)", address)
    return measured, probes


def log_to_stderr(level: int = logging.INFO) -> None:
    """stderr, or the journal with its structured fields when systemd runs us."""
    from gpuhealth import sd

    logging.basicConfig(level=level, handlers=[sd.log_handler()])


def serve_stage(o: ServiceOptions, run: Callable[..., Coroutine[Any, Any, int]]) -> None:
    """A service (``run(options, ready, metrics, probes)``) with its log, metrics and probes, until stopped."""
    log_to_stderr()
    measured, probes = metrics(o.metrics_listen)
    ready = privsep.Ready(o.ready_fd)
    with ready.or_why():
        code = asyncio.run(run(o, ready, measured, probes))
    raise typer.Exit(code)


# ---------------------------------------------------------------- running


@taking(AgentOptions, UpOptions, skip={AgentOptions: NOT_UP})
def up(agent: AgentOptions, o: UpOptions) -> None:
    """Run every stage on this node: embedded NATS and ClickHouse, rules, sink and the agent."""
    from gpuctl.up import run_up

    log_to_stderr()
    agent = dataclasses.replace(agent, data_dir=data_dir_of(agent.data_dir))
    raise typer.Exit(asyncio.run(run_up(agent, o)))


@serve_app.command("agent")
@taking(AgentOptions)
def serve_agent(o: AgentOptions) -> None:
    """The node agent. Hands over to a lean process that holds no CLI framework."""
    o = dataclasses.replace(o, data_dir=data_dir_of(o.data_dir))
    argv = [sys.executable, "-m", "producers.agent", *flags.to_argv(o)]
    sys.stdout.flush()
    os.execv(argv[0], argv)


@serve_app.command("rules")
@taking(RulesOptions)
def serve_rules(o: RulesOptions) -> None:
    """The rules service: events in, health states and incidents out. Instances share nodes by hash."""
    from gpuctl.stages import serve_rules as run

    serve_stage(o, run)


@serve_app.command("sink")
@taking(SinkOptions)
def serve_sink(o: SinkOptions) -> None:
    """The ClickHouse sink, which also answers read-only SQL for gpuctl."""
    from gpuctl.stages import serve_sink as run

    serve_stage(o, run)
