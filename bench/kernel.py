"""Classifier throughput, lines/s, on unique lines (no cache help) and in a storm.

- classify_*: the full classification `gpuctl parse` does, every field of every line;
- fault_of_*: the agent's path, which stops at "benign" without extracting fields;
- storm: one Xid message repeated, as in a real Xid storm (the cache's case).

Prints its figures as one JSON object on the last line.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from producers.kernel import classify, fault_of

FAULTS = [
    "NVRM: Xid (PCI:0000:04:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
    "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error",
    "pcieport 0000:00:03.0: AER: Multiple Uncorrected (Fatal) error received: 0000:00:03.0",
    "INFO: task python:280058 blocked for more than 120 seconds.",
    "mlx5_core 0000:53:00.0 mlx5_3: Port: 1 Link DOWN",
]
BENIGN = [
    "IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready",
    "perf: interrupt took too long (2509 > 2500), lowering kernel.perf_event_max_sample_rate to 79500",
    "nvidia-nvswitch2: open (major=510)",
    "EXT4-fs (nvme0n1p5): re-mounted. Opts: errors=remount-ro. Quota mode: none.",
    "bond0: (slave enp83s0f0np0): link status definitely up, 100000 Mbps full duplex",
]


def lines(n: int, fault_every: int) -> list[str]:
    """Unique lines (a counter in each), so the cache cannot help."""
    out = []
    for i in range(n):
        pool = FAULTS if fault_every and i % fault_every == 0 else BENIGN
        out.append(f"{pool[i % len(pool)]} #{i}")
    return out


def rate(fn: Callable[[str], object], batch: list[str]) -> float:
    start = time.perf_counter()
    for line in batch:
        fn(line)
    return len(batch) / (time.perf_counter() - start)


def best(fn: Callable[[str], object], batch: list[str]) -> int:
    return round(max(rate(fn, batch) for _ in range(3)))


def main() -> None:
    mix, faults = lines(100_000, 100), lines(30_000, 1)
    storm = [FAULTS[0]] * 200_000
    figures = {
        "classify_mix_lines_per_s": best(classify, mix),
        "classify_fault_lines_per_s": best(classify, faults),
        "fault_of_mix_lines_per_s": best(fault_of, mix),
        "fault_of_fault_lines_per_s": best(fault_of, faults),
        "fault_of_storm_lines_per_s": best(fault_of, storm),
    }
    for name, value in figures.items():
        print(f"{name:32} {value:>12,}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
