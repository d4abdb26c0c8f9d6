"""The node agent's options, each declared once (gpuhealth/flags.py).

The agent parses its argv from this class (``python -m producers.agent``), ``gpuctl serve agent`` and
``gpuctl up`` take the same flags from it, and ``up`` hands the agent the argv it makes of it. Kept
free of the producers' imports: gpuctl reads it to build its commands.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from gpuhealth.flags import flag
from producers.spool import DEFAULT_MAX_BYTES

DATA_DIR_HELP = (
    "gpuhealth's data dir [default: $GPUHEALTH_DATA_DIR, /var/lib/gpuhealth as root, else ~/.local/state/gpuhealth]"
)
# gpuctl up passes these itself: its own server's URL, inject-fault always on, and the ready pipe.
NOT_UP = ("nats", "allow_inject", "ready_fd")


@dataclass
class AgentOptions:
    nats: str = flag("--nats", help="NATS URL", envvar="GPUHEALTH_NATS_URL", required=True, default="")
    data_dir: Path | None = flag(
        "--data-dir", help=DATA_DIR_HELP, show_default=False, readable=False
    )  # a data dir gpuctl may not read is said in one line, not as usage
    kmsg_path: Path = flag(
        "--kmsg-path", help="kernel log source: /dev/kmsg, a FIFO or a file", default=Path("/dev/kmsg")
    )
    kmsg_lookback: float | None = flag(
        "--kmsg-lookback",
        metavar="SECONDS",
        help="on the very first start, skip kernel records older than this (default: the whole boot)",
    )
    journal: bool = flag("--journal", help="read the kernel log from the systemd journal", default=False)
    journal_dir: Path | None = flag("--journal-dir", help="read the kernel log from this journal directory")
    sysfs_root: Path = flag("--sysfs-root", help="root of sysfs (a recorded tree in tests)", default=Path("/sys"))
    proc_root: Path = flag("--proc-root", help="root of procfs (a recorded tree in tests)", default=Path("/proc"))
    node: str | None = flag("--node", envvar="GPUHEALTH_NODE", help="this node's name (default: the hostname)")
    cluster: str | None = flag("--cluster", envvar="GPUHEALTH_CLUSTER", help="the cluster's name (default: 'default')")
    allow_inject: bool = flag("--allow-inject", help="accept inject-fault commands over NATS", default=False)
    simulate_gpus: int | None = flag(
        "--simulate-gpus", metavar="N", help="simulate N GPUs (a fake NVML): try gpuhealth anywhere"
    )
    nvml_poll_interval: float = flag(
        "--nvml-poll-interval", metavar="SECONDS", default=10.0, help="seconds between NVML polls"
    )
    sysfs_interval: float = flag(
        "--sysfs-interval",
        metavar="SECONDS",
        default=10.0,
        help="seconds between sysfs polls (PCIe AER and links, InfiniBand, EDAC, temperatures)",
    )
    host_interval: float = flag(
        "--host-interval",
        metavar="SECONDS",
        default=10.0,
        help="seconds between host polls (CPU, memory, disks, processes; services every 6th)",
    )
    disk: list[str] | None = flag(
        "--disk", metavar="MOUNT", help="a mount point whose usage to report (repeatable; default: /)"
    )
    pstore_dir: list[Path] | None = flag(
        "--pstore-dir",
        metavar="DIR",
        help="where crash records appear (repeatable; default: /sys/fs/pstore, /var/lib/systemd/pstore)",
    )
    api_listen: str = flag(
        "--api-listen",
        metavar="HOST:PORT",
        default="127.0.0.1:15132",
        help="the local GPUd-compatible API and /metrics ('off': none)",
    )
    api_tls: Literal["on", "off"] = flag(
        "--api-tls",
        default="on",
        help="serve the API over HTTPS, as GPUd does (a self-signed certificate in the data dir), or not",
    )
    api_tls_cert: Path | None = flag(
        "--api-tls-cert", help="the API's certificate (PEM) instead of its self-signed one"
    )
    api_tls_key: Path | None = flag("--api-tls-key", help="the key of --api-tls-cert (PEM)")
    checks: list[Path] | None = flag(
        "--checks",
        "--plugins",
        metavar="FILE",
        help="custom checks in GPUd's plugin format (repeatable; default: /etc/gpuhealth/checks.yaml if present); "
        "see 'gpuctl check validate'",
    )
    spool_max_bytes: int = flag(
        "--spool-max-bytes",
        metavar="BYTES",
        default=DEFAULT_MAX_BYTES,
        help="what the agent keeps on disk for the bus while it is away (default 64 MiB; past it, producers hold)",
    )
    log_level: str = flag("--log-level", help="DEBUG, INFO, WARNING or ERROR", default="INFO")
    ready_fd: int | None = flag("--ready-fd", hidden=True, help="write one JSON line here once every source is open")
