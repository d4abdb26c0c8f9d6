"""sysfs readers. Every reader takes ``sysfs_root`` so tests hand it a recorded tree.

Today: the NVIDIA GPUs on the PCI bus and the loaded driver's version, which
is the inventory the agent can give without NVML.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

NVIDIA_VENDOR = "0x10de"
# PCI class 0x03 (display): 0x0300 VGA, 0x0302 3D controller (every datacenter GPU).
DISPLAY_CLASS_PREFIX = "0x03"
BRIDGE_CLASS_PREFIX = "0x0680"  # NVSwitch enumerates as "other bridge"


@dataclass(frozen=True, slots=True)
class PciDevice:
    bdf: str
    vendor: str
    device: str
    pci_class: str


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


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


def nvidia_driver_version(sysfs_root: Path) -> str | None:
    return _read(sysfs_root / "module" / "nvidia" / "version")
