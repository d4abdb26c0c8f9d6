"""Classifier throughput: lines/s on a realistic mix (1% fault lines) and on fault lines only.

Prints its figures as one JSON object on the last line.
"""

from __future__ import annotations

import json
import time

from producers.kernel import classify

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
    out = []
    for i in range(n):
        pool = FAULTS if fault_every and i % fault_every == 0 else BENIGN
        out.append(f"6,{i},{i * 10},-;{pool[i % len(pool)]}")
    return out


def rate(batch: list[str]) -> float:
    start = time.perf_counter()
    for line in batch:
        classify(line)
    return len(batch) / (time.perf_counter() - start)


def main() -> None:
    classify("warm up")
    mix = max(rate(lines(200_000, 100)) for _ in range(3))
    faults = max(rate(lines(50_000, 1)) for _ in range(3))
    figures = {"classify_mix_lines_per_s": round(mix), "classify_fault_lines_per_s": round(faults)}
    print(f"classifier: {mix:,.0f} lines/s on a 1% fault mix, {faults:,.0f} lines/s on fault lines")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
