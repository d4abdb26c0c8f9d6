"""The host producer: CPU, memory, disks, file descriptors, processes, reboots, and the
services and modules the GPUs depend on.

Metrics go out every poll as one MetricBatch (entity = the node); events only
on change: a reboot (a ``boot_id`` other than the one saved in the data dir,
with the time the previous boot was last seen), a service that changed state,
``nvidia_peermem`` loaded or not, a new pstore crash record.

psutil reads ``proc_root`` (its ``PROCFS_PATH``), so a recorded tree stands in
for /proc in tests; disk usage is of real mount points.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

import psutil

from gpuhealth import subjects
from gpuhealth.config import NodeIdentity, boot_time_ns
from gpuhealth.events import HostEvent, MetricBatch, encode, new_id, now_ns
from producers.poller import Item, PollState, read_text

log = logging.getLogger("gpuhealth.host")

SOURCE = "host"
OS_COMPONENT = "os"
FABRIC_MANAGER = "nvidia-fabricmanager"
# unit → component (GPUd's names where it has one)
SERVICES: dict[str, str] = {
    FABRIC_MANAGER: "accelerator-nvidia-fabric-manager",
    "nvidia-persistenced": "accelerator-nvidia-persistenced",
    "containerd": "containerd",
    "docker": "docker",
    "kubelet": "kubelet",
}
PEERMEM = "nvidia_peermem"
PSTORE_DIRS = (Path("/sys/fs/pstore"), Path("/var/lib/systemd/pstore"))

ServiceStates = Callable[[Sequence[str]], dict[str, tuple[str, str]]]


def systemd_states(units: Sequence[str]) -> dict[str, tuple[str, str]]:
    """unit → (LoadState, ActiveState) from ``systemctl show``; {} where systemd is not running."""
    systemctl = shutil.which("systemctl")
    if systemctl is None:
        return {}
    try:
        # Not our notify socket: systemctl would report its own errors there as the service's.
        env = {k: v for k, v in os.environ.items() if k not in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID")}
        run = subprocess.run(
            [systemctl, "show", "--property=Id,LoadState,ActiveState", "--", *(f"{u}.service" for u in units)],
            capture_output=True, text=True, timeout=10, check=False, env=env,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as e:
        log.warning("systemctl failed: %s", e)
        return {}
    if run.returncode != 0:
        return {}
    out = {}
    for block in run.stdout.strip().split("\n\n"):
        props = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
        unit = props.get("Id", "").removesuffix(".service")
        if unit:
            out[unit] = (props.get("LoadState", ""), props.get("ActiveState", ""))
    return out


def loaded_modules(proc_root: Path) -> set[str]:
    text = read_text(str(proc_root / "modules"), 1 << 20) or ""
    return {line.split(maxsplit=1)[0] for line in text.splitlines() if line.strip()}


def file_descriptors(proc_root: Path) -> tuple[int, int] | None:
    """(allocated, max) from sys/fs/file-nr ("allocated  free  max")."""
    parts = (read_text(str(proc_root / "sys" / "fs" / "file-nr"), 128) or "").split()
    try:
        return int(parts[0]) - int(parts[1]), int(parts[2])
    except (IndexError, ValueError):
        return None


def uptime_s(proc_root: Path) -> float | None:
    try:
        return float((read_text(str(proc_root / "uptime"), 128) or "").split()[0])
    except (IndexError, ValueError):
        return None


def load_average(proc_root: Path) -> tuple[float, float, float] | None:
    parts = (read_text(str(proc_root / "loadavg"), 256) or "").split()
    try:
        return float(parts[0]), float(parts[1]), float(parts[2])
    except (IndexError, ValueError):
        return None


def process_states(proc_root: Path) -> tuple[int, int]:
    """(zombies, uninterruptible sleepers): the third field of every /proc/<pid>/stat."""
    zombies = dstate = 0
    try:
        pids = [p for p in os.listdir(proc_root) if p.isdigit()]
    except OSError:
        return 0, 0
    for pid in pids:
        stat = read_text(str(proc_root / pid / "stat"), 512)
        if not stat or ")" not in stat:
            continue  # the process ended between the listing and the read
        state = stat.rsplit(")", 1)[1].split()[:1]
        zombies += state == ["Z"]
        dstate += state == ["D"]
    return zombies, dstate


class HostPoller:
    def __init__(
        self,
        proc_root: Path,
        identity: NodeIdentity,
        state: PollState,
        *,
        mounts: Sequence[str] = ("/",),
        pstore_dirs: Sequence[Path] = PSTORE_DIRS,
        nvswitches: Callable[[], int] = lambda: 0,
        service_states: ServiceStates = systemd_states,
        slow_every: int = 6,
    ) -> None:
        self.proc_root = proc_root
        self.identity = identity
        self.state = state
        self.mounts = list(mounts)
        self.pstore_dirs = list(pstore_dirs)
        self.nvswitches = nvswitches
        self.service_states = service_states
        # polls between the costly reads: systemctl (a process), pstore, every process's stat
        self.slow_every = slow_every
        self.polls = 0
        self._cpu_last: tuple[float, float, float] | None = None

    def poll(self, now: int | None = None) -> list[Item]:
        t = now_ns() if now is None else now
        events = self._reboot(t)
        if self.polls % self.slow_every == 0:
            events += self._services(t)
            events += self._pstore(t)
        events += self._modules(t)
        values = self._metrics(slow=self.polls % self.slow_every == 0)
        self.polls += 1
        node = self.identity.node
        items = [(subjects.event_subject(node, SOURCE), e.id, encode(e)) for e in events]
        i = self.identity
        batch = MetricBatch(
            id=new_id(t), time=t, cluster=i.cluster, node=node, machine_id=i.machine_id, boot_id=i.boot_id,
            source=SOURCE, component=OS_COMPONENT, entity=node, values=values,
        )  # fmt: skip
        items.append((subjects.metric_subject(node, SOURCE), batch.id, encode(batch)))
        return items

    def _event(self, t: int, component: str, kind: str, entity: str, **fields: object) -> HostEvent:
        i = self.identity
        fields.setdefault("boot_id", i.boot_id)
        fields.setdefault("boot_time", i.boot_time_ns if fields["boot_id"] == i.boot_id else 0)  # another's: unknown
        return HostEvent(
            id=new_id(t), time=t, cluster=i.cluster, node=i.node, machine_id=i.machine_id, source=SOURCE,
            component=component, kind=kind, entity=entity, **fields,  # type: ignore[arg-type]
        )  # fmt: skip

    # ---------------------------------------------------------------- events

    def _reboot(self, t: int) -> list[HostEvent]:
        extra = self.state.saved.extra
        boot_id = read_text(str(self.proc_root / "sys" / "kernel" / "random" / "boot_id"), 64) or ""
        previous, last_seen = extra.get("boot_id", ""), int(extra.get("last_seen", "0") or 0)
        extra["boot_id"], extra["last_seen"] = boot_id or previous, str(t)
        if not boot_id or not previous or boot_id == previous:
            return []
        message = f"rebooted: boot {previous} was last seen before {boot_id} began"
        # The boot running now is the one /proc/stat's btime dates: read with its id, so the rules can tell
        # it began after the last one even when this agent outlived the boot it started in.
        return [self._event(t, OS_COMPONENT, "reboot", self.identity.node, boot_id=boot_id, state=boot_id,
                            boot_time=boot_time_ns(self.proc_root), since=last_seen, message=message)]  # fmt: skip

    def _services(self, t: int) -> list[HostEvent]:
        states = self.service_states(list(SERVICES))
        if not states:
            return []  # no systemd here (a container, another init): not applicable, not unhealthy
        out = []
        switches = self.nvswitches()
        for unit, component in SERVICES.items():
            load, active = states.get(unit, ("not-found", "inactive"))
            needed = unit == FABRIC_MANAGER and switches > 0
            if load == "not-found" and not needed:
                continue  # not installed and not needed
            state = "not installed" if load == "not-found" else active
            ok = active == "active" or (not needed and unit == FABRIC_MANAGER)
            cond = self.state.condition(f"service/{unit}", state, ok, t, restate=False)
            if cond is None:
                continue
            why = f" on a node with {switches} NVSwitches" if needed else ""
            out.append(self._event(t, component, "service", unit, state=state, ok=ok, since=cond.since,
                                   message=f"{unit} is {state}{why}"))  # fmt: skip
        return out

    def _modules(self, t: int) -> list[HostEvent]:
        modules = loaded_modules(self.proc_root)
        if "nvidia" not in modules:
            return []  # not a node with the NVIDIA driver: GPUDirect RDMA is not a question
        loaded = PEERMEM in modules
        cond = self.state.condition(f"module/{PEERMEM}", "loaded" if loaded else "not loaded", True, t)
        if cond is None:
            return []
        return [self._event(t, "accelerator-nvidia-peermem", "module", PEERMEM, state=cond.state,
                            message=f"{PEERMEM} {cond.state} (GPUDirect RDMA needs it)")]  # fmt: skip

    def _pstore(self, t: int) -> list[HostEvent]:
        seen = set(filter(None, self.state.saved.extra.get("pstore", "").split("\n")))
        out = []
        for d in self.pstore_dirs:
            try:
                names = sorted(p for p in d.rglob("*") if p.is_file())
            except OSError:
                continue
            for path in names:
                key = str(path)
                if key in seen:
                    continue
                seen.add(key)
                head = (read_text(key, 4096) or "").splitlines()
                tail = " | ".join(line for line in head if line.strip())[-300:]
                out.append(self._event(t, OS_COMPONENT, "pstore", path.name, state=str(path),
                                       message=f"crash record {path}: {tail}"))  # fmt: skip
        self.state.saved.extra["pstore"] = "\n".join(sorted(seen))
        return out

    # ---------------------------------------------------------------- metrics

    def _metrics(self, *, slow: bool) -> dict[str, float]:
        psutil.PROCFS_PATH = str(self.proc_root)  # one proc root per agent process
        v: dict[str, float] = {}
        try:
            times = psutil.cpu_times()
            busy = times.user + times.nice + times.system + times.irq + times.softirq + times.steal
            now = (busy, times.iowait, sum(times))
            if self._cpu_last is not None and now[2] > self._cpu_last[2]:
                span = now[2] - self._cpu_last[2]
                v["cpu_percent"] = 100 * (now[0] - self._cpu_last[0]) / span
                v["cpu_iowait_percent"] = 100 * (now[1] - self._cpu_last[1]) / span
            self._cpu_last = now
        except (OSError, ValueError, AttributeError) as e:
            log.debug("cpu times: %s", e)
        try:
            mem = psutil.virtual_memory()
            v["memory_used_percent"], v["memory_available_bytes"] = mem.percent, float(mem.available)
            swap = psutil.swap_memory()
            v["swap_used_percent"] = swap.percent
        except (OSError, ValueError, RuntimeError) as e:
            log.debug("memory: %s", e)
        if (load := load_average(self.proc_root)) is not None:
            v["load1"], v["load5"], v["load15"] = load
        if (fds := file_descriptors(self.proc_root)) is not None:
            v["fd_used"], v["fd_max"] = float(fds[0]), float(fds[1])
        if (up := uptime_s(self.proc_root)) is not None:
            v["uptime_s"] = up
        if slow:  # a read of every process's stat: thousands of files on a busy node, so once a minute
            v["procs_zombie"], v["procs_dstate"] = map(float, process_states(self.proc_root))
        for mount in self.mounts:
            try:
                v[f"disk_used_percent.{mount}"] = psutil.disk_usage(mount).percent
            except OSError as e:
                log.debug("disk usage of %s: %s", mount, e)
        return v
