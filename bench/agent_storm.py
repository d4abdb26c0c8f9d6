"""The agent under a kernel log storm: CPU and memory while 100,000 lines/s hit its kmsg source.

A real agent process reads a FIFO; this process writes an Xid storm into it at
the target rate for DURATION seconds, and measures the agent's CPU (user +
system, in cores) and RSS before and after with psutil. Then it checks that no
line was lost: the counts of the events on the stream add up to the lines
written. Prints its figures as one JSON object on the last line.
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

from gpuhealth import bus, subjects
from gpuhealth.events import EVENT_DECODER, KernelEvent
from gpuhealth.natsd import EmbeddedNats

RATE = 100_000  # lines per second
DURATION = 10.0
LINE = "NVRM: Xid (PCI:0000:0b:00): 95, pid=777, name=train.py, Uncontained: FBHUB. RST: Yes, D-RST: No"


def write_storm(fifo: Path) -> tuple[int, float]:
    fd = os.open(fifo, os.O_WRONLY)
    chunk, seq, start = 1000, 0, time.monotonic()
    try:
        while (elapsed := time.monotonic() - start) < DURATION:
            due = int(elapsed * RATE)
            while seq < due:
                block = "".join(f"3,{s},{s},-;{LINE}\n" for s in range(seq + 1, seq + chunk + 1))
                os.write(fd, block.encode())
                seq += chunk
            time.sleep(0.002)
    finally:
        os.close(fd)
    return seq, time.monotonic() - start


async def stream_count(url: str) -> tuple[int, int]:
    nc = await bus.connect(url, "bench")
    js = nc.jetstream()
    sub = await js.pull_subscribe("gpuhealth.v1.event.>", durable="bench", stream=subjects.EVENTS.name)
    lines = events = 0
    while True:
        try:
            msgs = await sub.fetch(1000, timeout=1)
        except TimeoutError:
            break
        for m in msgs:
            ev = EVENT_DECODER.decode(m.data)
            if isinstance(ev, KernelEvent):
                lines += ev.count
                events += 1
            await m.ack()
    await nc.close()
    return lines, events


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        nats = EmbeddedNats(root, auth=None)
        url = await nats.start()
        fifo = root / "kmsg"
        os.mkfifo(fifo)
        read_fd, write_fd = os.pipe()
        agent = subprocess.Popen(
            [sys.executable, "-m", "producers.agent", "--nats", url, "--data-dir", str(root / "agent"),
             "--kmsg-path", str(fifo), "--node", "bench", "--ready-fd", str(write_fd), "--log-level", "WARNING"],
            pass_fds=(write_fd,),
        )  # fmt: skip
        os.close(write_fd)
        with os.fdopen(read_fd) as ready:
            ready.readline()
        proc = psutil.Process(agent.pid)
        rss_before = proc.memory_info().rss
        cpu_before = sum(proc.cpu_times()[:2])
        written, seconds = await asyncio.to_thread(write_storm, fifo)
        await asyncio.sleep(2.0)  # let the last window close and publish
        cpu = sum(proc.cpu_times()[:2]) - cpu_before
        rss_after = proc.memory_info().rss
        agent.terminate()
        agent.wait(timeout=30)
        lines, events = await stream_count(url)
        await nats.stop()
    figures = {
        "storm_lines_written": written,
        "storm_lines_per_s": round(written / seconds),
        "agent_cpu_cores": round(cpu / (seconds + 2.0), 3),
        "agent_rss_mib_before": round(rss_before / 2**20, 1),
        "agent_rss_mib_after": round(rss_after / 2**20, 1),
        "lines_accounted": lines,
        "events_published": events,
    }
    for name, value in figures.items():
        print(f"{name:24} {value}")
    if lines != written:
        print(f"LOST LINES: {written - lines}", file=sys.stderr)
    print(json.dumps(figures))


if __name__ == "__main__":
    asyncio.run(main())
