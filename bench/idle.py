"""What `gpuctl up` costs doing nothing: CPU of every process of the stack over DURATION seconds at rest.

`gpuctl up` with its embedded NATS and ClickHouse as the README's first example runs it (no GPU), the
kernel log a regular file (followed by inotify), then a FIFO (read by readiness); then with 8 simulated
GPUs, whose NVML, sysfs and host polls every 10 s are work (metrics published and stored), not idleness.
After start-up and SETTLE seconds of quiet, the user + system time of each process of the stack (up
itself, with the rules and the sink inside it or as its children, the agent, nats-server) is taken at the
start and the end of DURATION seconds: millicores = CPU seconds / wall seconds x 1000. No fault is
injected. Goal (issue #20): the whole stack <= 10 doing nothing (the first two).
Prints its figures as one JSON object on the last line.

    python bench/idle.py [DURATION_SECONDS] [SETTLE_SECONDS]      (defaults 90, 15)

At rest the sink stores metrics every 30 s (sinks/service.py METRICS_LINGER_S): 90 s hold three.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

GPUCTL = str(Path(sys.executable).parent / "gpuctl")


def kind(p: psutil.Process) -> str:
    argv = " ".join(p.cmdline())
    if "nats-server" in argv:
        return "nats_server"
    if "producers.agent" in argv:
        return "agent"
    if " serve rules" in argv:
        return "rules"
    if " serve sink" in argv:
        return "sink"
    return "up"


def cpu(p: psutil.Process) -> float:
    t = p.cpu_times()
    return float(t.user + t.system)


def measure(kmsg_kind: str, duration: float, settle: float, gpus: int = 0) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        kmsg = Path(tmp) / "kmsg"
        if kmsg_kind == "fifo":
            os.mkfifo(kmsg)
        else:
            kmsg.touch()
        argv = [GPUCTL, "up", "--data-dir", f"{tmp}/data", "--kmsg-path", str(kmsg), "--api-listen", "127.0.0.1:0"]
        argv += ["--simulate-gpus", str(gpus)] if gpus else []
        up = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            for line in up.stdout or []:
                if line.startswith("ready"):
                    break
            else:
                raise SystemExit(f"gpuctl up did not start ({kmsg_kind})")
            time.sleep(settle)
            procs = [psutil.Process(up.pid), *psutil.Process(up.pid).children(recursive=True)]
            before = {p.pid: cpu(p) for p in procs}
            start = time.monotonic()
            time.sleep(duration)
            wall = time.monotonic() - start
            out: dict[str, float] = {}
            for p in procs:
                name = kind(p)
                out[name] = out.get(name, 0.0) + (cpu(p) - before[p.pid]) / wall * 1000
        finally:
            up.send_signal(signal.SIGINT)
            up.wait(timeout=60)
    out = {k: round(v, 2) for k, v in sorted(out.items())}
    out["total"] = round(sum(out.values()), 2)
    return out


def main(duration: float, settle: float) -> None:
    figures = {
        "duration_s": duration,
        "file_millicores": measure("file", duration, settle),
        "fifo_millicores": measure("fifo", duration, settle),
        "file_8_simulated_gpus_millicores": measure("file", duration, settle, gpus=8),
        "goals": {"total_millicores": 10},
    }
    for name, value in figures.items():
        print(f"{name:18} {value}")
    print(json.dumps(figures))


if __name__ == "__main__":
    args = [float(a) for a in sys.argv[1:]]
    main(*(args + [90.0, 15.0][len(args) :]))
