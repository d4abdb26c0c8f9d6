"""The node agent at rest: RSS and CPU of `gpuctl serve agent` over DURATION seconds.

8 simulated GPUs, every producer on (kernel log from a FIFO, as /dev/kmsg is
read: by readiness, not polling, a boot's worth of BOOT_LINES real benign
lines written into it first, so that the classifier's rules, automaton and
caches are in the figure as on a real node; NVML polled every 10 s; sysfs every 10 s over
a recorded tree with 8 GPUs, 8 NVSwitches and 8 IB ports; the host's real
/proc every 10 s), against an embedded nats-server (not measured). Before
that, one sysfs and one host poll cycle are timed in process (CPU time, the
mean of 200 cycles). CPU is user + system time of the agent process and
its children, over the wall time; RSS is sampled every 5 s. Goals: ≤ 35 MB RSS,
≤ 2 millicores. Prints its figures as one JSON object on the last line.

    python bench/agent.py [DURATION_SECONDS]   (default 300)
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gpuhealth.config import NodeIdentity
from gpuhealth.natsd import EmbeddedNats
from producers import host, sysfs
from producers.poller import PollState
from tests.data import trees

GPUCTL = str(Path(sys.executable).parent / "gpuctl")
BOOT_LINES = 2000  # a GPU server's dmesg after boot holds about this many


def write_boot(fifo: Path) -> int:
    """The labelled sets' first BOOT_LINES distinct benign lines, as /dev/kmsg records at KERN_INFO."""
    seen: dict[str, None] = {}
    for path in sorted((Path(__file__).resolve().parent.parent / "tests" / "data").glob("kernel_lines_*.jsonl")):
        for raw in path.read_text().splitlines():
            row = json.loads(raw) if raw.strip() else {}
            if row.get("category") == "benign" and "\n" not in row["line"]:
                seen.setdefault(row["line"], None)
    lines = list(seen)[:BOOT_LINES]
    fd = os.open(fifo, os.O_WRONLY)  # blocks until the agent opens its end
    try:
        os.write(fd, "".join(f"6,{n},{n},-;{line}\n" for n, line in enumerate(lines, 1)).encode())
    finally:
        os.close(fd)
    return len(lines)


def cpu_seconds(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return t.user + t.system + t.children_user + t.children_system


def cycle_cpu_ms(poll: object, cycles: int = 200) -> float:
    poll()  # type: ignore[operator]  # discovery is not the steady state
    t0 = time.process_time()
    for _ in range(cycles):
        poll()  # type: ignore[operator]
    return round((time.process_time() - t0) / cycles * 1000, 3)


async def main(duration: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        tree = trees.write_h100_sysfs(root / "sys", gpus=8, nvswitches=8, ib_ports=8)
        identity = NodeIdentity("bench", "bench", "", "b", 0)
        sysfs_poller = sysfs.SysfsPoller(tree, identity, PollState(None, "b"))
        host_poller = host.HostPoller(Path("/proc"), identity, PollState(None, "b"), slow_every=10**9)
        sysfs_ms, host_ms = cycle_cpu_ms(sysfs_poller.poll), cycle_cpu_ms(host_poller.poll)
        # once a minute: systemctl, pstore and every process's stat (the count of processes drives it)
        slow_poller = host.HostPoller(Path("/proc"), identity, PollState(None, "b"), slow_every=1)
        host_slow_ms = cycle_cpu_ms(slow_poller.poll, cycles=20)
        files = len(sysfs_poller.found.pci) * 7 + len(sysfs_poller.found.ib_ports) * 8 + 2 * 2
        nats = EmbeddedNats(root, auth=None)
        url = await nats.start()
        fifo = root / "kmsg"
        os.mkfifo(fifo)
        agent = subprocess.Popen(
            [GPUCTL, "serve", "agent", "--nats", url, "--data-dir", str(root / "agent"), "--kmsg-path", str(fifo),
             "--node", "bench", "--simulate-gpus", "8", "--nvml-poll-interval", "10", "--sysfs-root", str(tree)],
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        proc = psutil.Process(agent.pid)
        boot = await asyncio.to_thread(write_boot, fifo)
        await asyncio.sleep(15)  # start-up (imports, the first poll) is not the steady state
        cpu0, t0 = cpu_seconds(proc), time.monotonic()
        rss: list[int] = []
        while time.monotonic() - t0 < duration:
            rss.append(proc.memory_info().rss)
            await asyncio.sleep(5)
        cpu, wall = cpu_seconds(proc) - cpu0, time.monotonic() - t0
        agent.terminate()
        agent.wait(timeout=30)
        await nats.stop()
    figures = {
        "duration_s": round(wall),
        "boot_lines": boot,
        "agent_cpu_millicores": round(cpu / wall * 1000, 2),
        "agent_rss_mib_max": round(max(rss) / 2**20, 1),
        "agent_rss_mib_last": round(rss[-1] / 2**20, 1),
        "goal_rss_mib": 35 / 1.048576,  # 35 MB
        "goal_cpu_millicores": 2,
        "sysfs_poll_cpu_ms": sysfs_ms,
        "sysfs_poll_files": files,
        "host_poll_cpu_ms": host_ms,
        "host_slow_poll_cpu_ms": host_slow_ms,
        "host_processes": len(psutil.pids()),
    }
    for name, value in figures.items():
        print(f"{name:24} {value}")
    print(json.dumps(figures))


if __name__ == "__main__":
    asyncio.run(main(float(sys.argv[1]) if len(sys.argv) > 1 else 300.0))
