"""What a sysfs tree holds for gpuhealth: the NVIDIA devices on PCI, the files to watch (AER, links,
InfiniBand ports, EDAC, temperature sensors), and pure readers of their formats.

Every function takes ``sysfs_root`` so tests hand it a recorded tree; producers/sysfs.py polls what
``discover`` finds.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from producers.poller import read_int, read_text

NVIDIA_VENDOR = "0x10de"
# PCI class 0x03 (display): 0x0300 VGA, 0x0302 3D controller (every datacenter GPU).
DISPLAY_CLASS_PREFIX = "0x03"
BRIDGE_CLASS_PREFIX = "0x0680"  # NVSwitch enumerates as "other bridge"
_BDF = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")


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
