"""Where things live and who this node is.

Precedence for every setting: the command-line flag, then the environment
(``GPUHEALTH_*``), then the default here.
"""

from __future__ import annotations

import fcntl
import os
import re
import socket
from pathlib import Path

import msgspec

from gpuhealth.errors import ConfigError, PermissionDeniedError

_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h|d|w)")
_UNIT_S = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
    "d": 86400.0,
    "w": 604800.0,
}


def parse_duration(text: object) -> float:
    """Seconds from a duration as Go writes it ("500ms", "1h30m", "0"), with days and weeks ("7d",
    "1w") for the command line, or from a plain number of seconds."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        return float(text)
    s = str(text).strip()
    if s in ("", "0"):
        return 0.0
    pos, total = 0, 0.0
    for m in _DURATION.finditer(s):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNIT_S[m.group(2)]
        pos = m.end()
    if pos != len(s) or pos == 0:
        raise ConfigError(f"bad duration {text!r}: not a duration like 500ms, 90s, 15m, 1h30m or 7d")
    return total


def default_data_dir() -> Path:
    """``$GPUHEALTH_DATA_DIR``, else /var/lib/gpuhealth as root, else ~/.local/state/gpuhealth."""
    env = os.environ.get("GPUHEALTH_DATA_DIR")
    if env:
        return Path(env)
    if os.geteuid() == 0:
        return Path("/var/lib/gpuhealth")
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "gpuhealth"


class NodeIdentity(msgspec.Struct, frozen=True):
    cluster: str
    node: str
    machine_id: str
    boot_id: str
    boot_time_ns: int


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def boot_time_ns(proc_root: Path) -> int:
    """The boot's wall-clock start from /proc/stat's btime: stable for the whole boot,
    so a kernel record's time (and the id derived from it) is the same on every read."""
    for line in _read(proc_root / "stat").splitlines():
        if line.startswith("btime "):
            try:
                return int(line.split()[1]) * 1_000_000_000
            except (IndexError, ValueError):
                break
    return 0


def read_identity(
    *,
    proc_root: Path = Path("/proc"),
    etc_root: Path = Path("/etc"),
    cluster: str | None = None,
    node: str | None = None,
) -> NodeIdentity:
    cluster = cluster or os.environ.get("GPUHEALTH_CLUSTER") or "default"
    node = node or os.environ.get("GPUHEALTH_NODE") or socket.gethostname()
    if not node.strip():
        raise ConfigError("the node name is empty: set --node or GPUHEALTH_NODE")
    return NodeIdentity(
        cluster=cluster,
        node=node,
        machine_id=_read(etc_root / "machine-id"),
        boot_id=_read(proc_root / "sys" / "kernel" / "random" / "boot_id"),
        boot_time_ns=boot_time_ns(proc_root),
    )


class RunInfo(msgspec.Struct, kw_only=True):
    """What a running ``gpuctl up`` tells other commands, in <data-dir>/run.json."""

    pid: int
    nats_url: str
    node: str
    cluster: str
    kmsg_path: str
    allow_inject: bool
    started_ns: int
    clickhouse: str
    sources: dict[str, str] = {}
    # The server is up's own: a client takes the operator's identity from <data-dir>/secrets.
    embedded_nats: bool = False


RUN_FILE = "run.json"
LOCK = "up.lock"  # held by a running or starting gpuctl up, with its pid in it


def starting(data_dir: Path) -> int | None:
    """The pid of a gpuctl up that holds the data dir's lock (starting, or running), else None."""
    try:
        fd = os.open(data_dir / LOCK, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        text = os.pread(fd, 32, 0).decode(errors="replace").strip()
        return int(text) if text.isdigit() else -1
    finally:
        os.close(fd)  # with it, a shared lock taken
    return None


def write_run_info(data_dir: Path, info: RunInfo, gid: int | None = None) -> None:
    """No secret in it, but where the stack listens is for its operators only: 0600, or 0640 to ``gid``."""
    tmp = data_dir / (RUN_FILE + ".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        if gid is not None:
            os.fchown(f.fileno(), -1, gid)
            os.fchmod(f.fileno(), 0o640)
        f.write(msgspec.json.format(msgspec.json.encode(info)))
    tmp.replace(data_dir / RUN_FILE)


def read_run_info(data_dir: Path) -> RunInfo | None:
    """The running stack's, or None when nothing runs there; a user who may not read it is told so."""
    path = data_dir / RUN_FILE
    try:
        return msgspec.json.decode(path.read_bytes(), type=RunInfo)
    except PermissionError:
        raise PermissionDeniedError(
            f"permission denied: {path} is readable only by root or the gpuhealth group"
        ) from None
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None


def remove_run_info(data_dir: Path, pid: int) -> None:
    info = read_run_info(data_dir)
    if info is not None and info.pid == pid:
        (data_dir / RUN_FILE).unlink(missing_ok=True)
