"""The sysfs poller: PCIe AER and link health, InfiniBand ports, EDAC, temperatures.

Every reader takes ``sysfs_root`` so tests hand it a recorded tree. Formats
are the kernel's (Documentation/ABI/testing/sysfs-bus-pci, sysfs-class-
infiniband, sysfs-devices-edac, sysfs-class-thermal, hwmon/sysfs-interface).

Cost: devices are discovered once (and again every ``rediscover_s``), their
file paths kept as strings; a poll opens only those files. On an 8-GPU node
with NVSwitches and 8 IB ports that is a few hundred small reads.

A PCIe link is judged by its width only: GPUs lower their link *speed* when
idle to save power (an H100 at rest trains at 2.5 GT/s), so a slower link is
normal while a narrower one (x8 on an x16 slot) is a fault.
"""

from __future__ import annotations

import logging
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from gpuhealth import subjects
from gpuhealth.config import NodeIdentity
from gpuhealth.events import HostEvent, MetricBatch, encode, new_id, now_ns
from producers.poller import Item, PollState, read_int, read_text

log = logging.getLogger("gpuhealth.sysfs")

SOURCE = "sysfs"
NVIDIA_VENDOR = "0x10de"
# PCI class 0x03 (display): 0x0300 VGA, 0x0302 3D controller (every datacenter GPU).
DISPLAY_CLASS_PREFIX = "0x03"
BRIDGE_CLASS_PREFIX = "0x0680"  # NVSwitch enumerates as "other bridge"
_BDF = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")

PCI_COMPONENT = "pci"
IB_COMPONENT = "accelerator-nvidia-infiniband"
EDAC_COMPONENT = "edac"
THERMAL_COMPONENT = "thermal"

AER_FILES = {"correctable": "aer_dev_correctable", "nonfatal": "aer_dev_nonfatal", "fatal": "aer_dev_fatal"}
IB_ERROR_COUNTERS = (
    "symbol_error",
    "link_downed",
    "link_error_recovery",
    "port_rcv_errors",
    "excessive_buffer_overrun_errors",
)
IB_ACTIVE = "ACTIVE"


# ---------------------------------------------------------------- PCI discovery


@dataclass(frozen=True, slots=True)
class PciDevice:
    bdf: str
    vendor: str
    device: str
    pci_class: str


def _read(path: Path) -> str | None:
    return read_text(str(path))


def pci_devices(sysfs_root: Path, vendor: str = NVIDIA_VENDOR) -> list[PciDevice]:
    """Devices of one vendor under bus/pci/devices, sorted by address."""
    out = []
    base = sysfs_root / "bus" / "pci" / "devices"
    try:
        entries = sorted(base.iterdir())
    except OSError:
        return []
    for entry in entries:
        if _read(entry / "vendor") != vendor:
            continue
        out.append(
            PciDevice(
                bdf=entry.name.lower(),
                vendor=vendor,
                device=_read(entry / "device") or "",
                pci_class=_read(entry / "class") or "",
            )
        )
    return out


def nvidia_gpus(sysfs_root: Path) -> list[PciDevice]:
    return [d for d in pci_devices(sysfs_root) if d.pci_class.startswith(DISPLAY_CLASS_PREFIX)]


def nvidia_switches(sysfs_root: Path) -> list[PciDevice]:
    return [d for d in pci_devices(sysfs_root) if d.pci_class.startswith(BRIDGE_CLASS_PREFIX)]


def nvidia_driver_version(sysfs_root: Path) -> str | None:
    return _read(sysfs_root / "module" / "nvidia" / "version")


def upstream_port(sysfs_root: Path, bdf: str) -> str | None:
    """The bridge port above a device: the parent directory of its real path, when that is a PCI device."""
    try:
        real = (sysfs_root / "bus" / "pci" / "devices" / bdf).resolve(strict=True)
    except OSError:
        return None
    parent = real.parent.name.lower()
    return parent if _BDF.match(parent) else None


# ---------------------------------------------------------------- pure readers


def parse_counter_table(text: str) -> dict[str, int] | None:
    """An AER file ("RxErr 0" lines and a TOTAL_ERR_* line) → name → count.

    None when a line is not "name number" (half-written or not AER at all):
    the caller keeps its last values rather than take a wrong delta."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 2:
            return None
        try:
            out[parts[0]] = int(parts[1])
        except ValueError:
            return None
        if not 0 <= out[parts[0]] < 2**63:
            return None
    return out or None


def aer_total(table: dict[str, int]) -> int:
    for name, value in table.items():
        if name.startswith("TOTAL"):
            return value
    return sum(table.values())


@dataclass(frozen=True, slots=True)
class Link:
    speed: str
    width: int
    max_speed: str
    max_width: int

    @property
    def downtrained(self) -> bool:
        return 0 < self.width < self.max_width

    def describe(self) -> str:
        return f"x{self.width} {self.speed} (capable of x{self.max_width} {self.max_speed})"


def read_link(dev: str) -> Link | None:
    width, max_width = read_int(dev + "/current_link_width"), read_int(dev + "/max_link_width")
    if width is None or max_width is None or max_width <= 0 or width > 64:
        return None  # no link files (an integrated device) or a value that is not a width
    speed = read_text(dev + "/current_link_speed", 64) or "?"
    max_speed = read_text(dev + "/max_link_speed", 64) or "?"
    return Link(speed.removesuffix(" PCIe"), width, max_speed.removesuffix(" PCIe"), max_width)


def ib_state(text: str | None) -> str:
    """ "4: ACTIVE" → "ACTIVE"; unreadable → "UNKNOWN"."""
    if not text:
        return "UNKNOWN"
    return text.split(":", 1)[-1].strip().upper() or "UNKNOWN"


# ---------------------------------------------------------------- discovery


@dataclass(slots=True)
class PciWatch:
    bdf: str
    role: str  # gpu | nvswitch | upstream
    path: str


@dataclass(slots=True)
class Sensor:
    name: str
    input: str
    scale: float  # to degrees Celsius
    limit: float | None  # over this is not ok (critical trip point, hwmon crit or max)


@dataclass(slots=True)
class Discovered:
    pci: list[PciWatch] = field(default_factory=list)
    ib_ports: list[tuple[str, str]] = field(default_factory=list)  # (dev:port, dir)
    edac: list[tuple[str, str]] = field(default_factory=list)  # (mcN, dir)
    sensors: list[Sensor] = field(default_factory=list)
    nvswitches: int = 0


def _listdir(path: Path) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def discover(sysfs_root: Path) -> Discovered:
    found = Discovered()
    base = sysfs_root / "bus" / "pci" / "devices"
    seen: set[str] = set()
    switches = nvidia_switches(sysfs_root)
    found.nvswitches = len(switches)
    for role, devices in (("gpu", nvidia_gpus(sysfs_root)), ("nvswitch", switches)):
        for d in devices:
            for bdf, r in ((d.bdf, role), (upstream_port(sysfs_root, d.bdf), "upstream")):
                if bdf and bdf not in seen:
                    seen.add(bdf)
                    found.pci.append(PciWatch(bdf, r, str(base / bdf)))
    ib = sysfs_root / "class" / "infiniband"
    for dev in _listdir(ib):
        for port in _listdir(ib / dev / "ports"):
            found.ib_ports.append((f"{dev}:{port}", str(ib / dev / "ports" / port)))
    edac = sysfs_root / "devices" / "system" / "edac" / "mc"
    found.edac = [(mc, str(edac / mc)) for mc in _listdir(edac) if mc.startswith("mc")]
    found.sensors = _thermal_zones(sysfs_root) + _hwmon_sensors(sysfs_root)
    return found


def _thermal_zones(sysfs_root: Path) -> list[Sensor]:
    out = []
    base = sysfs_root / "class" / "thermal"
    for zone in _listdir(base):
        if not zone.startswith("thermal_zone"):
            continue
        d = base / zone
        limits = []
        for f in _listdir(d):
            if f.startswith("trip_point_") and f.endswith("_type") and read_text(str(d / f)) in ("critical", "hot"):
                t = read_int(str(d / f.replace("_type", "_temp")))
                if t is not None and t > 0:
                    limits.append(t / 1000)
        kind = read_text(str(d / "type")) or zone
        out.append(Sensor(f"{kind}.{zone}", str(d / "temp"), 1000.0, min(limits) if limits else None))
    return out


def _hwmon_sensors(sysfs_root: Path) -> list[Sensor]:
    out = []
    names: set[str] = set()
    base = sysfs_root / "class" / "hwmon"
    for hw in _listdir(base):
        d = base / hw
        chip = read_text(str(d / "name")) or hw
        for f in _listdir(d):
            if not (f.startswith("temp") and f.endswith("_input")):
                continue
            stem = f.removesuffix("_input")
            label = read_text(str(d / f"{stem}_label")) or stem
            name = f"{chip}.{label}"
            if name in names:
                name = f"{name}#{hw}"
            names.add(name)
            limit = read_int(str(d / f"{stem}_crit")) or read_int(str(d / f"{stem}_max"))
            out.append(Sensor(name, str(d / f), 1000.0, limit / 1000 if limit and limit > 0 else None))
    return out


# ---------------------------------------------------------------- the poller


class SysfsPoller:
    """Reads the discovered files and returns what changed, as events and metrics.

    ``poll`` is synchronous (the agent runs it on a worker thread) and never
    raises for what a tree may hold: missing files, permission errors, half-
    written or non-numeric values skip that reading until the next poll."""

    def __init__(
        self, sysfs_root: Path, identity: NodeIdentity, state: PollState, *, rediscover_s: float = 300.0
    ) -> None:
        self.root = sysfs_root
        self.identity = identity
        self.state = state
        self.rediscover_s = rediscover_s
        self.found = Discovered()
        self._discovered_at = -1e18
        self._aer_text: dict[str, list[str | None]] = {}
        self.polls = 0

    def poll(self, now: int | None = None) -> list[Item]:
        if time.monotonic() - self._discovered_at >= self.rediscover_s:
            self.found = discover(self.root)
            self._discovered_at = time.monotonic()
        t = now_ns() if now is None else now
        events: list[HostEvent] = []
        for dev in self.found.pci:
            events += self._aer(dev, t)
            events += self._link(dev, t)
        for name, port in self.found.ib_ports:
            events += self._ib(name, port, t)
        for name, mc in self.found.edac:
            events += self._edac(name, mc, t)
        temps = self._sensors(t, events)
        self.polls += 1
        node = self.identity.node
        items = [(subjects.event_subject(node, SOURCE), e.id, encode(e)) for e in events]
        if temps:
            batch = MetricBatch(
                id=new_id(t), time=t, cluster=self.identity.cluster, node=node,
                machine_id=self.identity.machine_id, boot_id=self.identity.boot_id, source=SOURCE,
                component=THERMAL_COMPONENT, entity=node, values=temps,
            )  # fmt: skip
            items.append((subjects.metric_subject(node, SOURCE), batch.id, encode(batch)))
        return items

    def _event(self, t: int, component: str, kind: str, entity: str, **fields: object) -> HostEvent:
        i = self.identity
        return HostEvent(
            id=new_id(t), time=t, cluster=i.cluster, node=i.node, machine_id=i.machine_id, boot_id=i.boot_id,
            boot_time=i.boot_time_ns, source=SOURCE, component=component, kind=kind, entity=entity,
            **fields,  # type: ignore[arg-type]
        )  # fmt: skip

    def _counters(self, prefix: str, values: dict[str, int]) -> tuple[dict[str, int], bool]:
        first = any(self.state.first_read(f"{prefix}/{k}") for k in values)
        deltas = {k: d for k, v in values.items() if (d := self.state.delta(f"{prefix}/{k}", v)) > 0}
        return deltas, first

    def _aer(self, dev: PciWatch, t: int) -> list[HostEvent]:
        texts = [read_text(f"{dev.path}/{fname}") for fname in AER_FILES.values()]
        if self._aer_text.get(dev.bdf) == texts:
            return []  # the usual case: nothing moved, nothing to parse
        self._aer_text[dev.bdf] = texts
        totals: dict[str, int] = {}
        detail: dict[str, int] = {}
        for severity, text in zip(AER_FILES, texts, strict=True):
            table = parse_counter_table(text) if text is not None else None
            if table is None:
                continue  # no AER capability, or unreadable this time
            totals[severity] = aer_total(table)
            detail.update({f"{severity}.{k}": v for k, v in table.items() if not k.startswith("TOTAL")})
        if not totals:
            return []
        deltas, first = self._counters(f"aer/{dev.bdf}", totals | detail)
        if not any(k in deltas for k in AER_FILES):
            return []
        named = ", ".join(f"{k} +{v}" for k, v in deltas.items() if "." in k)
        message = ", ".join(f"{s} +{deltas[s]}" for s in AER_FILES if s in deltas) + (f" ({named})" if named else "")
        return [self._event(t, PCI_COMPONENT, "aer", dev.bdf, pci_bus_id=dev.bdf, counts=deltas,
                            message=f"PCIe AER on {dev.role} {dev.bdf}: {message}", first_read=first)]  # fmt: skip

    def _link(self, dev: PciWatch, t: int) -> list[HostEvent]:
        link = read_link(dev.path)
        if link is None:
            return []
        state = f"x{link.width}/x{link.max_width}"
        cond = self.state.condition(f"link/{dev.bdf}", state, not link.downtrained, t, restate=False)
        if cond is None:
            return []
        what = "downtrained" if link.downtrained else "at full width"
        message = f"PCIe link of {dev.role} {dev.bdf} {what}: {link.describe()}"
        return [self._event(t, PCI_COMPONENT, "link", dev.bdf, pci_bus_id=dev.bdf, state=state, ok=cond.ok,
                            since=cond.since, message=message)]  # fmt: skip

    def _ib(self, name: str, port: str, t: int) -> list[HostEvent]:
        out = []
        counters: dict[str, int] = {}
        for c in IB_ERROR_COUNTERS:
            v = read_int(f"{port}/counters/{c}")
            if v is not None:
                counters[c] = v
        deltas, first = self._counters(f"ib/{name}", counters)
        if deltas:
            message = ", ".join(f"{k} +{v}" for k, v in deltas.items())
            out.append(self._event(t, IB_COMPONENT, "ib_errors", name, counts=deltas, first_read=first,
                                   message=f"InfiniBand port {name}: {message}"))  # fmt: skip
        state = ib_state(read_text(f"{port}/state", 64))
        phys = (read_text(f"{port}/phys_state", 64) or "?").split(":", 1)[-1].strip()
        previous = self.state.saved.conditions.get(f"ib/{name}")
        cond = self.state.condition(f"ib/{name}", state, state == IB_ACTIVE, t)
        # A port can go down and up between two polls: the link_downed counter still counts it.
        downs = 0 if first else deltas.get("link_downed", 0)
        if previous is not None and previous.ok and state != IB_ACTIVE:
            downs = max(downs, 1)
        if cond is None and downs == 0:
            return out
        cur = self.state.saved.conditions[f"ib/{name}"]
        rate = read_text(f"{port}/rate", 64) or "?"
        out.append(self._event(t, IB_COMPONENT, "ib_port", name, state=state, ok=cur.ok, since=cur.since,
                               counts={"downs": downs} if downs else {},
                               message=f"InfiniBand port {name} {state} ({phys}), {rate}"))  # fmt: skip
        return out

    def _edac(self, name: str, mc: str, t: int) -> list[HostEvent]:
        counters = {k: v for k in ("ce", "ue") if (v := read_int(f"{mc}/{k}_count")) is not None}
        deltas, first = self._counters(f"edac/{name}", counters)
        if not deltas:
            return []
        message = ", ".join(f"{'un' if k == 'ue' else ''}corrected +{v}" for k, v in deltas.items())
        return [self._event(t, EDAC_COMPONENT, "edac", name, counts=deltas, first_read=first,
                            message=f"EDAC memory controller {name}: {message}")]  # fmt: skip

    def _sensors(self, t: int, events: list[HostEvent]) -> dict[str, float]:
        temps = {}
        for s in self.found.sensors:
            raw = read_int(s.input)
            if raw is None:
                continue
            c = raw / s.scale
            temps[f"temp_c.{s.name}"] = c
            if s.limit is None:
                continue
            ok = c < s.limit
            key = f"temp/{s.name}"
            known = key in self.state.saved.conditions
            cond = self.state.condition(key, "ok" if ok else "over limit", ok, t, restate=False)
            # A sensor that is fine at its first read is not worth a state of its own.
            if cond is not None and (known or not ok):
                message = f"{s.name} at {c:.1f} C (limit {s.limit:.1f} C)"
                events.append(self._event(t, THERMAL_COMPONENT, "thermal", s.name, state=f"{c:.1f} C", ok=ok,
                                          since=cond.since, message=message))  # fmt: skip
        return temps
