"""The options of the rules, the sink and ``gpuctl up``, each declared once (gpuhealth/flags.py).

The rules and the sink share what every service takes (its bus, its metrics, the fleet its streams
are sized for); ``up`` takes the sink's store and the rules' file, and passes them to its children
as the argv made of these same classes. The agent's are in producers/options.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gpuhealth import sizing
from gpuhealth.flags import flag
from producers.options import DATA_DIR_HELP


@dataclass
class ServiceOptions:
    nats: str = flag("--nats", help="NATS URL", envvar="GPUHEALTH_NATS_URL", required=True, default="")
    metrics_listen: str | None = flag(
        "--metrics-listen", help="serve Prometheus /metrics, /healthz and /readyz on HOST:PORT (e.g. 127.0.0.1:9464)"
    )
    replicas: int = flag(
        "--replicas",
        envvar="GPUHEALTH_STREAM_REPLICAS",
        default=1,
        min=1,
        max=5,
        help="JetStream replicas of the streams and buckets this service creates (3 on a cluster)",
    )
    # What the streams' bounds are sized for (gpuhealth/sizing.py); `gpuctl nats-config` writes them to fleet.env.
    fleet_nodes: int | None = flag(
        "--fleet-nodes",
        envvar="GPUHEALTH_FLEET_NODES",
        min=1,
        help="GPU nodes the streams' bounds are sized for (not given: bounded by age only, existing bounds kept)",
    )
    fleet_gpus: int = flag(
        "--fleet-gpus", envvar="GPUHEALTH_FLEET_GPUS", default=8, min=0, help="GPUs a node, for the bounds"
    )
    fleet_poll: float = flag(
        "--fleet-poll-interval",
        envvar="GPUHEALTH_FLEET_POLL_INTERVAL",
        default=10.0,
        min=0.1,
        help="the agents' NVML poll, seconds",
    )
    metrics_buffer: float = flag(
        "--metrics-buffer-hours",
        envvar="GPUHEALTH_METRICS_BUFFER_HOURS",
        default=6.0,
        min=0.1,
        help="how long the metrics stream keeps what the sink has not stored (then its oldest go)",
    )
    # gpuctl up's, for the rules and the sink it runs as its service user (gpuctl/privsep.py).
    as_user: str | None = flag("--as-user", hidden=True, help="become this user once set up")
    ready_fd: int | None = flag("--ready-fd", hidden=True, help="one JSON line here when serving")

    def fleet(self) -> sizing.Fleet | None:
        """The fleet the streams are sized for; None when its size was not given."""
        if self.fleet_nodes is None:
            return None
        return sizing.Fleet(self.fleet_nodes, self.fleet_gpus, self.fleet_poll, self.metrics_buffer * sizing.HOUR)


@dataclass
class RulesFileOptions:
    rules_file: Path | None = flag(
        "--rules", help="a rules file (TOML) over the default thresholds; see 'gpuctl rules check'"
    )


@dataclass
class StoreOptions:
    clickhouse: str | None = flag(
        "--clickhouse",
        envvar="GPUHEALTH_CLICKHOUSE_URL",
        help="ClickHouse URL: chdb:///path (embedded) or http(s)://host:port (default: embedded in the data dir)",
    )
    password_file: Path | None = flag(
        "--clickhouse-password-file",
        envvar="GPUHEALTH_CLICKHOUSE_PASSWORD_FILE",
        help="a file whose first line is the ClickHouse password (or set $GPUHEALTH_CLICKHOUSE_PASSWORD)",
    )
    metrics_ttl_days: int | None = flag(
        "--metrics-ttl-days", help="keep raw metric samples this many days (default 180; hourly rollups stay)"
    )


@dataclass
class RulesOptions(RulesFileOptions, ServiceOptions):
    instance: int = flag("--instance", default=0, help="this instance's number, 0-based")
    instances: int = flag("--instances", default=1, help="how many instances share the nodes (<= 16)")


@dataclass
class SinkOptions(StoreOptions, ServiceOptions):
    data_dir: Path | None = flag("--data-dir", help=DATA_DIR_HELP, show_default=False, readable=False)


@dataclass
class UpOptions(RulesFileOptions, StoreOptions):
    """What ``gpuctl up`` takes besides the agent's options."""

    nats: str | None = flag("--nats", help="use this NATS server instead of starting one")
    nats_port: int = flag("--nats-port", default=-1, help="embedded NATS port (-1: any free port)")
    service_user: str | None = flag(
        "--service-user",
        help="up run as root runs the rules and the sink as this user "
        "(default: gpuhealth, where it exists; root: inside up, as root)",
    )
    metrics_listen: str | None = flag(
        "--metrics-listen",
        help="serve the rules' and the sink's /metrics, /healthz and /readyz on HOST:PORT (the agent's are on "
        "its API); as root, the sink's on the next port",
    )


@dataclass
class ResponderOptions:
    """``gpuctl serve responder``: repair actions in, scheduler actions out (responder/)."""

    nats: str = flag("--nats", help="NATS URL", envvar="GPUHEALTH_NATS_URL", required=True, default="")
    act: bool = flag("--act", default=False, help="act on the scheduler (default: dry-run, decisions only)")
    adapter: str = flag("--adapter", default="slurm", help="slurm | command")
    slurm_conf: Path | None = flag("--slurm-conf", help="slurm.conf (default: Slurm's own)")
    command: Path | None = flag("--command", help="the hook: gets each action as JSON")
    breaker_fraction: float = flag(
        "--breaker-fraction", default=0.5, min=0.0, max=1.0, help="most of the fleet drained in a window"
    )
    breaker_window: float = flag("--breaker-window", default=300.0, min=1.0, help="seconds")
    max_drains_per_minute: int = flag("--max-drains-per-minute", default=10, min=1, help="drains a minute at most")
    fleet_size: int = flag("--fleet-size", default=0, min=0, help="nodes in the fleet (0: as the scheduler lists them)")
    topology: Path | None = flag("--topology", help="TOML: [switch] leaf-1 = [nodes], ...")
    burst_nodes: int = flag(
        "--burst-nodes", default=3, min=0, help="nodes of one group with one fault: a fleet incident (0: off)"
    )
    burst_window: float = flag("--burst-window", default=60.0, min=1.0, help="seconds")
    group_by: list[str] | None = flag(
        "--group-by-inventory", metavar="KIND", help="also group nodes by: driver, gpu-model (repeatable)"
    )
    data_dir: Path | None = flag("--data-dir", help=DATA_DIR_HELP, show_default=False, readable=False)
    node: str | None = flag("--node", envvar="GPUHEALTH_NODE", help="this node's name (default: the hostname)")
    cluster: str | None = flag("--cluster", envvar="GPUHEALTH_CLUSTER", help="the cluster's name (default: 'default')")
