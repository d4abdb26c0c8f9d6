"""Writes the recorded sysfs and procfs trees under tests/data/ (and bigger ones for benches).

The H100 trees are written from the kernel's documented formats
(Documentation/ABI/testing/sysfs-bus-pci, sysfs-class-infiniband,
sysfs-devices-edac, sysfs-class-thermal, hwmon/sysfs-interface, proc(5)),
shaped like an HGX H100 node: 8 GPUs and 8 ConnectX-7 InfiniBand NICs each
behind its own PCIe switch port, NVSwitches, two memory controllers, CPU and
NVMe temperature sensors. bus/pci/devices/<bdf> are symlinks into devices/,
as on a real system, so a device's upstream port is its parent directory.

    python tests/data/trees.py            # rewrite the committed trees
A test checks the committed trees are what this script writes.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
H100_SYSFS = HERE / "sysfs" / "h100-8gpu"
H100_PROC = HERE / "proc" / "h100-8gpu"
GPU_BUSES = (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)
NVSWITCH_BUSES = (0x05, 0x07, 0x09, 0x0B, 0x0D, 0x0F, 0x11, 0x13)
BOOT_ID = "6f1c2d4e-8a9b-4c3d-9e2f-1a2b3c4d5e6f"

AER = {
    "aer_dev_correctable": ["RxErr", "BadTLP", "BadDLLP", "Rollover", "Timeout", "NonFatalErr", "CorrIntErr",
                            "HeaderOF", "TOTAL_ERR_COR"],
    "aer_dev_nonfatal": ["Undefined", "DLP", "SDES", "TLP", "FCP", "CmpltTO", "CmpltAbrt", "UnxCmplt", "RxOF",
                         "MalfTLP", "ECRC", "UnsupReq", "ACSViol", "UncorrIntErr", "BlockedTLP", "AtomicOpBlocked",
                         "TLPBlockedErr", "PoisonTLPBlocked", "TOTAL_ERR_NONFATAL"],
}  # fmt: skip
AER["aer_dev_fatal"] = [*AER["aer_dev_nonfatal"][:-1], "TOTAL_ERR_FATAL"]
IB_COUNTERS = ("symbol_error", "link_downed", "link_error_recovery", "port_rcv_errors",
               "excessive_buffer_overrun_errors", "port_xmit_discards", "local_link_integrity_errors")  # fmt: skip


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text if text.endswith("\n") else text + "\n")


def aer_table(fname: str, counts: dict[str, int] | None = None) -> str:
    counts = counts or {}
    names = AER[fname]
    total = sum(counts.get(n, 0) for n in names[:-1])
    return "".join(f"{n} {counts.get(n, 0) if n != names[-1] else total}\n" for n in names)


def _pci(root: Path, path: str, vendor: str, device: str, cls: str, speed: str, width: int) -> Path:
    d = root / "devices" / path
    for name, value in (("vendor", vendor), ("device", device), ("class", cls), ("current_link_speed", speed),
                        ("max_link_speed", speed), ("current_link_width", str(width)),
                        ("max_link_width", str(width)), ("numa_node", "0")):  # fmt: skip
        _write(d / name, value)
    for fname in AER:
        _write(d / fname, aer_table(fname))
    link = root / "bus" / "pci" / "devices" / d.name
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(os.path.relpath(d, link.parent))
    return d


def _behind_switch(root: Path, port: int, bus: int, vendor: str, device: str, cls: str, speed: str,
                   width: int) -> None:  # fmt: skip
    """root port 0000:00:<port>.0 → switch downstream port 0000:<bus-1>:00.0 → the device 0000:<bus>:00.0."""
    rp = f"pci0000:00/0000:00:{port:02x}.0"
    _pci(root, rp, "0x8086", "0x352a", "0x060400", "32.0 GT/s PCIe", 16)
    dsp = f"{rp}/0000:{bus - 1:02x}:00.0"
    _pci(root, dsp, "0x1000", "0xc030", "0x060400", speed, width)
    _pci(root, f"{dsp}/0000:{bus:02x}:00.0", vendor, device, cls, speed, width)


def write_h100_sysfs(root: Path, *, gpus: int = 8, nvswitches: int = 4, ib_ports: int = 8) -> Path:
    if root.exists():
        shutil.rmtree(root)
    port = 1
    for bus in GPU_BUSES[:gpus]:
        _behind_switch(root, port, bus, "0x10de", "0x2330", "0x030200", "32.0 GT/s PCIe", 16)
        port += 1
    for bus in NVSWITCH_BUSES[:nvswitches]:
        _behind_switch(root, port, bus, "0x10de", "0x22a3", "0x068000", "16.0 GT/s PCIe", 2)
        port += 1
    for i in range(ib_ports):
        bus = GPU_BUSES[i % len(GPU_BUSES)] + 2 + 0x40 * (i // len(GPU_BUSES))
        _behind_switch(root, port, bus, "0x15b3", "0x1021", "0x020700", "32.0 GT/s PCIe", 16)
        port += 1
        p = root / "class" / "infiniband" / f"mlx5_{i}" / "ports" / "1"
        _write(p / "state", "4: ACTIVE")
        _write(p / "phys_state", "5: LinkUp")
        _write(p / "rate", "400 Gb/sec (4X NDR)")
        _write(p / "link_layer", "InfiniBand")
        for c in IB_COUNTERS:
            _write(p / "counters" / c, "0")
    for mc in range(2):
        d = root / "devices" / "system" / "edac" / "mc" / f"mc{mc}"
        _write(d / "mc_name", f"Intel_10nm Socket#{mc} IMC#0")
        _write(d / "ce_count", "0")
        _write(d / "ue_count", "0")
    for zone, kind, temp in ((0, "x86_pkg_temp", 45000), (1, "acpitz", 27800)):
        d = root / "class" / "thermal" / f"thermal_zone{zone}"
        _write(d / "type", kind)
        _write(d / "temp", str(temp))
        _write(d / "trip_point_0_type", "passive")
        _write(d / "trip_point_0_temp", "95000")
        _write(d / "trip_point_1_type", "critical")
        _write(d / "trip_point_1_temp", "105000")
    for hw, chip, sensors in (
        ("hwmon0", "coretemp", [("Package id 0", 46000, 100000), ("Package id 1", 44000, 100000)]),
        ("hwmon1", "nvme", [("Composite", 38850, 84850)]),
    ):
        d = root / "class" / "hwmon" / hw
        _write(d / "name", chip)
        for n, (label, temp, crit) in enumerate(sensors, start=1):
            _write(d / f"temp{n}_label", label)
            _write(d / f"temp{n}_input", str(temp))
            _write(d / f"temp{n}_crit", str(crit))
    _write(root / "module" / "nvidia" / "version", "550.90.07")
    return root


def write_h100_proc(root: Path, *, boot_id: str = BOOT_ID) -> Path:
    if root.exists():
        shutil.rmtree(root)
    _write(root / "sys" / "kernel" / "random" / "boot_id", boot_id)
    _write(root / "sys" / "fs" / "file-nr", "28704\t0\t9223372036854775807")
    _write(root / "uptime", "86400.52 21772012.33")
    _write(root / "loadavg", "12.40 11.85 10.02 9/2311 804112")
    cpus = "".join(f"cpu{i} 900000 100 80000 9000000 2000 0 1500 0 0 0\n" for i in range(4))
    _write(root / "stat", "cpu  3600000 400 320000 36000000 8000 0 6000 0 0 0\n" + cpus
           + "intr 0\nctxt 123456789\nbtime 1763640000\nprocesses 804112\nprocs_running 9\nprocs_blocked 1\n")  # fmt: skip
    _write(root / "meminfo", "\n".join(f"{k}: {v} kB" for k, v in (
        ("MemTotal", 2113478656), ("MemFree", 1500000000), ("MemAvailable", 1900000000), ("Buffers", 1200000),
        ("Cached", 300000000), ("SwapCached", 0), ("Active", 100000000), ("Inactive", 200000000),
        ("Shmem", 100000), ("SReclaimable", 20000000), ("SwapTotal", 8388604), ("SwapFree", 8388604),
    )))  # fmt: skip
    _write(root / "vmstat", "pswpin 0\npswpout 0\n")
    _write(root / "modules", "".join(
        f"{m} {size} {users} - Live 0x0000000000000000{extra}\n" for m, size, users, extra in (
            ("nvidia_peermem", 16384, 0, " (POE)"), ("nvidia_uvm", 4956160, 4, " (POE)"),
            ("nvidia_drm", 122880, 0, " (POE)"), ("nvidia", 54308864, 120, " (POE)"),
            ("mlx5_ib", 479232, 0, ""), ("mlx5_core", 2215936, 1, ""),
        )))  # fmt: skip
    for pid, comm, state in ((1, "systemd", "S"), (2211, "nv-hostengine", "S"), (80411, "python", "Z"),
                             (80412, "nfs_writer", "D")):  # fmt: skip
        _write(root / str(pid) / "stat", f"{pid} ({comm}) {state} 1 {pid} {pid} 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0")
    return root


def record_plain(sysfs_out: Path, proc_out: Path) -> None:
    """Copy what the pollers read from this machine (a plain VM: no GPU, IB, EDAC or hwmon)."""
    for out, src, names in (
        (sysfs_out, Path("/sys"), ["class/thermal", "module/nvidia/version", "class/infiniband",
                                   "devices/system/edac", "class/hwmon"]),
        (proc_out, Path("/proc"), ["sys/kernel/random/boot_id", "sys/fs/file-nr", "uptime", "loadavg", "stat",
                                   "meminfo", "vmstat", "modules"]),
    ):  # fmt: skip
        if out.exists():
            shutil.rmtree(out)
        for name in names:
            if (src / name).is_file():
                _write(out / name, (src / name).read_text())
    for dev in sorted((Path("/sys/bus/pci/devices")).iterdir()):
        d = sysfs_out / "devices" / "pci0000:00" / dev.name
        for f in ("vendor", "device", "class", "current_link_speed", "current_link_width", "max_link_speed",
                  "max_link_width"):  # fmt: skip
            if (dev / f).is_file():
                _write(d / f, (dev / f).read_text())
        link = sysfs_out / "bus" / "pci" / "devices" / dev.name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(d, link.parent))


def main() -> None:
    write_h100_sysfs(H100_SYSFS)
    write_h100_proc(H100_PROC)
    if "--record-plain" in sys.argv:
        record_plain(HERE / "sysfs" / "plain-vm", HERE / "proc" / "plain-vm")


if __name__ == "__main__":
    main()
