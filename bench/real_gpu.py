"""The NVML producer on a real GPU: what the agent reads and publishes, and a real fault end to end.

The agent (`python -m producers.agent`, real nvidia-ml-py, no --simulate-gpus) and
the rules service run against an embedded nats-server; a subscriber records every
message on gpuhealth.v1.>. Once the first poll is in, a CUDA kernel writes
through a wild pointer (CuPy, or PyTorch's CUDA if CuPy is absent): the driver
reports that as an MMU fault, Xid 31. The bench then waits for the agent's NVML
event waiter to publish it and for the rules to turn it into the GPU's health
state, and reads the same state back from the agent's local API.

Prints one JSON object on its last line: driver, GPUs, the metric fields read and
those NVML refused, the events by kind, the Xid codes seen by NVML and by the
kernel log, seconds from the fault to the event and to the state, the state,
and the agent's RSS and CPU. On a machine without an NVIDIA GPU it says so
({"gpu": false}) and exits 0: the fake NVML is the test there.

    python bench/real_gpu.py [--simulate N] [--no-fault]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import nats
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gpuhealth.events import EVENT_DECODER, HEALTH_DECODER, INCIDENT_DECODER, INVENTORY_DECODER, METRIC_DECODER
from gpuhealth.natsd import EmbeddedNats

NODE = "gpu-real"
# An illegal address on the GPU: the driver logs it as Xid 31 and tears the context down.
CUPY_FAULT = (
    "import cupy\n"
    "k = cupy.RawKernel('extern \"C\" __global__ void wild() { *(volatile int *)0x10 = 1; }', 'wild')\n"
    "k((1,), (1,), ())\n"
    "cupy.cuda.runtime.deviceSynchronize()\n"
)
# A trap instruction in a kernel: the SM raises an exception the driver reports as an Xid of its own.
CUPY_TRAP = (
    "import cupy\n"
    "k = cupy.RawKernel('extern \"C\" __global__ void trap() { __trap(); }', 'trap')\n"
    "k((1,), (1,), ())\n"
    "cupy.cuda.runtime.deviceSynchronize()\n"
)
# Matrix products for a while: the clocks move as a training job's do.
CUPY_LOAD = (
    "import sys, time, cupy\n"
    "a = cupy.random.rand(8192, 8192, dtype=cupy.float32); end = time.monotonic() + float(sys.argv[1])\n"
    "while time.monotonic() < end:\n"
    "    (a @ a).sum().item()\n"
)
TORCH_FAULT = (
    "import torch\n"
    "x = torch.zeros(1, device='cuda')\n"
    "torch.cuda.memory.caching_allocator_delete(x.data_ptr())\n"  # then use memory no longer ours
    "torch.empty(2**34, dtype=torch.uint8, device='cuda').fill_(1); torch.cuda.synchronize()\n"
)


def has_gpu() -> bool:
    try:
        import pynvml

        pynvml.nvmlInit()
        count = int(pynvml.nvmlDeviceGetCount())
        pynvml.nvmlShutdown()
        return count > 0
    except Exception:
        return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Seen:
    """Everything the bus carried, decoded by subject family."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()
        self.kinds: collections.Counter[str] = collections.Counter()
        self.inventory: Any = None
        self.metrics: list[Any] = []
        self.nvml_xids: dict[int, float] = {}
        self.kernel_xids: dict[int, float] = {}
        self.states: dict[str, Any] = {}
        self.state_at: dict[str, float] = {}
        self.incidents: dict[str, Any] = {}
        self.clock_events: list[float] = []

    def take(self, subject: str, data: bytes) -> None:
        family, now = subject.split(".")[2], time.monotonic()
        if family == "event":
            ev = EVENT_DECODER.decode(data)
            kind = f"{type(ev).__name__}:{getattr(ev, 'kind', '') or getattr(ev, 'category', '')}"
            self.kinds[kind] += 1
            if kind == "NvmlEvent:clock":
                self.clock_events.append(now)
            xid = getattr(ev, "xid", None)
            if xid is not None:
                (self.nvml_xids if ev.source == "nvml" else self.kernel_xids).setdefault(xid, now)
        elif family == "metric":
            m = METRIC_DECODER.decode(data)
            if m.source == "nvml":
                self.metrics.append(m)
        elif family == "inventory":
            self.inventory = INVENTORY_DECODER.decode(data)
        elif family == "incident":
            i = INCIDENT_DECODER.decode(data)
            self.incidents[i.id] = i
        elif family == "health":
            h = HEALTH_DECODER.decode(data)
            key = f"{h.component}/{h.entity}"
            if key not in self.states or self.states[key].health != h.health:
                self.state_at[key] = now
            self.states[key] = h


async def wait_for(cond: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.2)
    return True


async def python(code: str, *args: str) -> tuple[int, str]:
    """Python code in a process of its own, as a user's job: its CUDA context dies with it. The loop
    goes on meanwhile, so what the bus carries is timed as it arrives."""
    p = await asyncio.create_subprocess_exec(sys.executable, "-c", code, *args, stdout=asyncio.subprocess.DEVNULL,
                                             stderr=asyncio.subprocess.PIPE)  # fmt: skip
    _, err = await p.communicate()
    return int(p.returncode or 0), (err.decode().strip().splitlines() or [""])[-1][:200]


async def provoke_xid(cupy_code: str, *, torch: bool = True) -> dict[str, Any]:
    for name, fault in (("cupy", cupy_code), *((("torch", TORCH_FAULT),) if torch else ())):
        if (await python(f"import {name}"))[0] == 0:
            code, error = await python(fault)
            return {"with": name, "exit": code, "error": error}
    return {"with": None}


def api_states(port: int) -> Any:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/states", timeout=10) as r:
        return json.load(r)


async def run(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    nats_server = EmbeddedNats(root / "nats", auth=None)
    url = await nats_server.start()
    seen = Seen()
    nc = await nats.connect(url)

    async def take(msg: Any) -> None:
        seen.take(msg.subject, msg.data)

    await nc.subscribe("gpuhealth.v1.>", cb=take)
    kmsg = "/dev/kmsg" if os.access("/dev/kmsg", os.R_OK) and not args.simulate else str(root / "kmsg")
    port = free_port()
    py = sys.executable
    with contextlib.ExitStack() as logs:
        rules_log, agent_log = (logs.enter_context((root / f).open("w")) for f in ("rules.log", "agent.log"))
        procs = [
            subprocess.Popen([py, "-m", "gpuctl", "serve", "rules", "--nats", url], stderr=rules_log),
            subprocess.Popen(
                [py, "-m", "producers.agent", "--nats", url, "--data-dir", str(root / "agent"), "--node", NODE,
                 "--kmsg-path", kmsg, "--kmsg-lookback", "60", "--nvml-poll-interval", "5",
                 "--api-listen", f"127.0.0.1:{port}", "--api-tls", "off", "--log-level", "INFO",
                 *(["--simulate-gpus", str(args.simulate)] if args.simulate else [])],
                stderr=agent_log,
            ),
        ]  # fmt: skip
    agent = psutil.Process(procs[1].pid)
    out: dict[str, Any] = {"kmsg": kmsg}
    try:
        first_poll = await wait_for(lambda: seen.inventory is not None and len(seen.metrics) > 0, 90)
        out["first_poll_s"] = round(time.monotonic() - seen.t0, 1) if first_poll else None
        if not args.no_fault:
            out["fault"] = await provoke_xid(CUPY_FAULT)
            t_fault = time.monotonic()  # the faulting process has exited: its context is torn down
            got = await wait_for(lambda: 31 in seen.nvml_xids, 60)
            # negative: the event was on the bus before the faulting process had finished exiting
            out["nvml_xid31_after_exit_s"] = round(seen.nvml_xids[31] - t_fault, 2) if got else None
            if 31 in seen.kernel_xids:
                out["kernel_xid31_after_exit_s"] = round(seen.kernel_xids[31] - t_fault, 2)
            gpu_bad = lambda: any(k.startswith("accelerator") and s.health != "Healthy" for k, s in seen.states.items())  # noqa: E731
            if await wait_for(gpu_bad, 30):
                key = next(k for k, s in seen.states.items() if k.startswith("accelerator") and s.health != "Healthy")
                out["state_after_s"] = round(seen.state_at[key] - t_fault, 2)
            if args.trap:
                before = set(seen.nvml_xids)
                out["trap"] = await provoke_xid(CUPY_TRAP, torch=False)
                await wait_for(lambda: set(seen.nvml_xids) - before, 20)
        cpu0 = sum(agent.cpu_times()[:2])
        await asyncio.sleep(args.settle)
        out["agent_cpu_millicores"] = round((sum(agent.cpu_times()[:2]) - cpu0) / args.settle * 1000, 1)
        mem = agent.memory_full_info()
        out["agent_rss_mib"] = round(mem.rss / 2**20, 1)
        out["agent_uss_mib"] = round(mem.uss / 2**20, 1)  # its own pages: the libraries' shared text excluded
        out["agent_pss_mib"] = round(mem.pss / 2**20, 1)
        if args.load and not args.simulate:
            clocks, cpu0 = len(seen.clock_events), sum(agent.cpu_times()[:2])
            code, _ = await python(CUPY_LOAD, str(args.load))
            out["load"] = {
                "seconds": args.load,
                "exit": code,
                "clock_events": len(seen.clock_events) - clocks,
                "agent_cpu_millicores": round((sum(agent.cpu_times()[:2]) - cpu0) / args.load * 1000, 1),
            }
        out["api_states"] = [
            {"component": c.get("component"), "states": [(s.get("name"), s.get("health"), s.get("reason"))
                                                         for s in c.get("states", [])]}
            for c in api_states(port) if "nvidia" in str(c.get("component", "")) or "accelerator" in str(c)
        ]  # fmt: skip
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=30)
        await nc.close()
        await nats_server.stop()
    return out | summary(seen)


def summary(seen: Seen) -> dict[str, Any]:
    inv, last = seen.inventory, (seen.metrics[-1] if seen.metrics else None)
    refused = sorted({k for m in seen.metrics for k in (m.errors or {})})
    return {
        "driver": inv.driver_version if inv else None,
        "cuda": inv.cuda_driver_version if inv else None,
        "gpus": [(g.index, g.name, g.pci_bus_id, g.vbios) for g in inv.gpus] if inv else [],
        "nvidia_pci_devices_in_sysfs": inv.nvidia_pci_devices if inv else None,
        "metric_batches": len(seen.metrics),
        "fields_read": len(last.values) if last else 0,
        "sample": {k: last.values[k] for k in sorted(last.values)[:60]} if last else {},
        "fields_refused": refused,
        "events": dict(seen.kinds),
        "nvml_xids": sorted(seen.nvml_xids),
        "kernel_xids": sorted(seen.kernel_xids),
        "states": {k: (s.health, s.reason[:160]) for k, s in seen.states.items() if s.health != "Healthy"},
        "incidents": [(i.component, i.entity, i.code, i.severity, i.count) for i in seen.incidents.values()],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--simulate", type=int, default=0, help="simulated GPUs instead (a dry run of the bench)")
    ap.add_argument("--no-fault", action="store_true", help="read only: provoke no Xid")
    ap.add_argument("--settle", type=float, default=20.0, help="seconds measured at rest after the fault")
    ap.add_argument("--trap", action="store_true", help="also run a kernel that traps, and record its Xid")
    ap.add_argument("--load", type=float, default=20.0, help="seconds of matrix products, counting clock events")
    ap.add_argument("--keep-logs", type=Path, help="copy the agent's and the rules' logs here")
    args = ap.parse_args()
    if not args.simulate and not has_gpu():
        print(json.dumps({"gpu": False}))
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "kmsg").touch()  # the kernel log of a simulated node: empty
        try:
            figures = asyncio.run(run(args, root))
        finally:
            if args.keep_logs:
                args.keep_logs.mkdir(parents=True, exist_ok=True)
                for log in ("agent.log", "rules.log"):
                    if (root / log).exists():
                        shutil.copy(root / log, args.keep_logs / log)
    for name, value in figures.items():
        print(f"{name:28} {value}")
    print(json.dumps(figures, default=str))


if __name__ == "__main__":
    main()
