"""Chaos: a steady kernel log on one node while the agent, the rules, the sink and nats-server are SIGKILLed at
random (20 times one, two or three of them at once), each started again after a short pause. Afterwards every
effect happened once: each fault line is counted once in the stored events and once in the incidents, no row is
stored twice, nothing the bus holds is missing from the store, and the GPUs' final states are those of one
uninterrupted engine over the same lines.

The random choices come from one seed, printed; GPUHEALTH_CHAOS_SEED=<seed> replays them (the timing, on a
loaded machine, only roughly)."""

from __future__ import annotations

import asyncio
import collections
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from nats.aio.client import Client as NATS

from gpuhealth import bus, client, subjects
from gpuhealth.config import NodeIdentity, read_identity
from gpuhealth.events import EVENT_DECODER, KernelEvent, derived_id
from rules.catalog import load
from rules.engine import apply_all
from rules.state import NodeState
from tests.e2e.conftest import GPUCTL, LOAD_SLACK, Nats

SEED_ENV = "GPUHEALTH_CHAOS_SEED"
KILLS = 20
NODE, CLUSTER = "chaos-node", "chaos"
XID = "accelerator-nvidia-error-xid"
GPUS = ("0000:04:00", "0000:05:00", "0000:06:00", "0000:07:00")  # as the driver prints them
# code (the incident's), kind, xid, line: the faults the writer picks from, each on any of the GPUs.
FAULTS: tuple[tuple[str, str, int | None, str], ...] = (
    ("xid:13", "xid", 13, "NVRM: Xid (PCI:{gpu}): 13, pid=4242, name=python3, Graphics SM Warp Exception"),
    ("xid:31", "xid", 31, "NVRM: Xid (PCI:{gpu}): 31, pid=4242, name=python3, Ch 00000008, intr 10000000. MMU Fault"),
    ("xid:48", "xid", 48, "NVRM: Xid (PCI:{gpu}): 48, pid=4242, name=python3, An uncorrectable double bit error"),
    ("xid:63", "xid", 63, "NVRM: Xid (PCI:{gpu}): 63, pid='<unknown>', name=<unknown>, Row Remapper: New row "
                          "(0x0000000000123456) marked for remapping, reset gpu to activate."),
    ("xid:64", "xid", 64, "NVRM: Xid (PCI:{gpu}): 64, pid=4242, name=python3, Row Remapper Error"),
    ("xid:79", "xid", 79, "NVRM: Xid (PCI:{gpu}): 79, pid=0, name=, GPU has fallen off the bus."),
    ("fallen_off_bus", "gpu_fallen_off_bus", None, "NVRM: GPU {gpu}.0: GPU has fallen off the bus."),
)  # fmt: skip
BENIGN = (
    "e1000e 0000:00:1f.6 eth0: NIC Link is Up 1000 Mbps Full Duplex, Flow Control: None",
    "systemd[1]: Started Session 4 of User slurm.",
    "EXT4-fs (nvme0n1p2): re-mounted. Opts: errors=remount-ro",
    'audit: type=1400 audit(1700000000.123:45): apparmor="STATUS" operation="profile_load"',
)


Fault = tuple[str, str, int | None, str]  # code, kind, xid, and the GPU as events carry it
Entry = tuple[str, Fault | None]  # a line, and the fault it reports


# ---------------------------------------------------------------- the node's kernel log


@dataclass
class Line:
    seq: int
    usec: int
    message: str
    fault: Fault | None


@dataclass
class KernelLog:
    """A kmsg-format file the test appends to, and what it wrote."""

    path: Path
    lines: list[Line] = field(default_factory=list)

    def append(self, entries: list[Entry]) -> None:
        """Lines in one write, as the kernel logs a storm: a reader sees all of them or a prefix."""
        out = []
        for message, fault in entries:
            line = Line(len(self.lines) + 1, time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000, message, fault)
            self.lines.append(line)
            out.append(f"3,{line.seq},{line.usec},-;{message}\n")
        with self.path.open("ab") as f:
            f.write("".join(out).encode())

    def faults(self) -> collections.Counter[tuple[str, str]]:
        """Fault lines per (GPU, code)."""
        return collections.Counter((f[3], f[0]) for line in self.lines if (f := line.fault) is not None)


class Kernel:
    """What the kernel says, a tenth of a second at a time: now and then a line, and storms: a GPU in trouble
    repeats its fault for seconds, often while another storm goes on."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.storms: list[tuple[Entry, int]] = []  # the line, ticks left

    def fault(self) -> Entry:
        code, kind, xid, template = self.rng.choice(FAULTS)
        gpu = self.rng.choice(GPUS)
        return template.format(gpu=gpu), (code, kind, xid, f"{gpu}.0")

    def tick(self) -> list[Entry]:
        if self.rng.random() < 0.06:
            self.storms.append((self.fault(), self.rng.randint(10, 50)))
        out = [entry for entry, _ in self.storms for _ in range(self.rng.randint(0, 2))]
        self.storms = [(entry, left - 1) for entry, left in self.storms if left > 1]
        roll = self.rng.random()
        if roll < 0.25:
            out.append((self.rng.choice(BENIGN), None))
        elif roll < 0.5:
            out.append(self.fault())
        return out


# ---------------------------------------------------------------- the stages


@dataclass
class Stage:
    """One stage's process, killed and started again on the same command."""

    name: str
    argv: list[str]
    log: Path
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=20)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        if self.alive():
            assert self.proc is not None
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()


def stages(tmp: Path, url: str, kmsg: Path) -> dict[str, Stage]:
    agent = [sys.executable, "-m", "producers.agent", "--nats", url, "--node", NODE, "--cluster", CLUSTER,
             "--kmsg-path", str(kmsg), "--data-dir", str(tmp / "agent"), "--sysfs-root", str(tmp / "nosys"),
             "--proc-root", "/proc", "--api-listen", "off", "--nvml-poll-interval", "3600",
             "--sysfs-interval", "3600", "--host-interval", "3600"]  # fmt: skip
    return {
        "rules": Stage("rules", [GPUCTL, "serve", "rules", "--nats", url], tmp / "rules.log"),
        "sink": Stage(
            "sink", [GPUCTL, "serve", "sink", "--nats", url, "--clickhouse", f"chdb://{tmp / 'ch'}"], tmp / "sink.log"
        ),
        "agent": Stage("agent", agent, tmp / "agent.log"),
    }


@dataclass
class Chaos:
    seed: int
    nats: Nats
    stages: dict[str, Stage]
    kmsg: KernelLog
    kills: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rng = random.Random(f"{self.seed}-kills")  # the lines have their own: they replay exactly

    def check_alive(self) -> None:
        """A stage dies only when it is killed: one that stopped on its own (NATS away, a store restarted) is
        a failure of its own."""
        for s in self.stages.values():
            if not s.alive():
                raise AssertionError(f"{s.name} exited by itself ({s.proc and s.proc.returncode}):\n"
                                     f"{s.log.read_text()[-3000:]}")  # fmt: skip

    async def kill_some(self) -> None:
        """One stage, or two or three at once (an outage of NATS and a stage together), started again after
        the same pause."""
        targets = self.rng.sample([*self.stages, "nats"], self.rng.choice((1, 1, 2, 3)))
        pause = self.rng.uniform(0.0, 1.5)
        self.check_alive()
        self.kills.append("+".join(targets))
        print(f"chaos: kill {'+'.join(targets)} (line {len(self.kmsg.lines)}), back in {pause:.1f}s", flush=True)
        for target in targets:
            (self.nats if target == "nats" else self.stages[target]).kill()
        await asyncio.sleep(pause)
        for target in targets:
            if target == "nats":
                await asyncio.to_thread(self.nats.start)  # it waits for the port
            else:
                self.stages[target].start()

    async def run(self) -> None:
        """The writer and the killer at once; writing stops a moment after the last kill."""
        done = asyncio.Event()
        kernel = Kernel(random.Random(f"{self.seed}-kernel"))

        async def write() -> None:
            while not done.is_set():
                self.kmsg.append(kernel.tick())
                await asyncio.sleep(0.1)

        writer = asyncio.create_task(write())
        try:
            for _ in range(KILLS):
                await asyncio.sleep(self.rng.uniform(0.3, 2.0))
                await self.kill_some()
            await asyncio.sleep(1.0)
        finally:
            done.set()
            await writer
        self.check_alive()


# ---------------------------------------------------------------- what a clean run says


def clean_run(lines: list[Line], me: NodeIdentity) -> tuple[dict[str, tuple[str, str, list[str]]],
                                                             dict[str, tuple[int, int, int]]]:  # fmt: skip
    """The engine over every fault line, one event each, in order, never interrupted: the GPUs' states
    (health, reason, actions) and the incidents (count, first, last) by id."""
    state: NodeState | None = None
    for line in lines:
        if line.fault is None:
            continue
        _, kind, xid, pci = line.fault
        t = me.boot_time_ns + line.usec * 1000
        ev = KernelEvent(id=f"line-{line.seq}", time=t, cluster=CLUSTER, node=NODE, machine_id=me.machine_id,
                         boot_id=me.boot_id, boot_time=me.boot_time_ns, source="kmsg", component=XID, kind=kind,
                         xid=xid, pci_bus_id=pci, message=line.message, seq=line.seq)  # fmt: skip
        state, _, _ = apply_all(state, ev, load())
    assert state is not None
    states = {cs.entity: (cs.health, cs.reason, list(cs.actions)) for cs in state.states.values()
              if cs.component == XID}  # fmt: skip
    incidents = {derived_id(f.first, NODE, k): (f.count, f.first, f.last) for k, f in state.faults.items()}
    return states, incidents


# ---------------------------------------------------------------- what the pipeline stored


async def rows(nc: NATS, query: str) -> list[list[object]]:
    return (await client.sql(nc, query, max_rows=100_000))[1]


async def stored_faults(nc: NATS) -> collections.Counter[tuple[str, str]]:
    """Fault lines per (GPU, code), as the stored kernel events count them (a storm is one event)."""
    got: collections.Counter[tuple[str, str]] = collections.Counter()
    for pci, kind, xid, n in await rows(
        nc,
        f"SELECT pci_bus_id, kind, xid, sum(count) FROM gpuhealth.events WHERE component = '{XID}' "
        "GROUP BY pci_bus_id, kind, xid",
    ):
        code = {"xid": f"xid:{xid}", "gpu_fallen_off_bus": "fallen_off_bus"}.get(str(kind), f"{kind}?")
        got[(str(pci), code)] += int(n)  # type: ignore[call-overload]
    return got


async def stored_incidents(nc: NATS) -> dict[str, tuple[int, int, int]]:
    """Each incident's latest update in the store: (count, first, last)."""
    found = await rows(nc, "SELECT id, argMax(count, seq), toUnixTimestamp64Nano(argMax(first, seq)), "
                           "toUnixTimestamp64Nano(argMax(last, seq)) FROM gpuhealth.incidents GROUP BY id")  # fmt: skip
    return {str(r[0]): (int(r[1]), int(r[2]), int(r[3])) for r in found}  # type: ignore[call-overload]


async def bus_event_ids(nc: NATS) -> set[str]:
    """Every event id the events stream holds."""
    js = nc.jetstream()
    info = await js.stream_info(subjects.EVENTS.name)
    ids = set()
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        raw = await js.get_msg(subjects.EVENTS.name, seq)
        assert raw.data is not None
        ids.add(EVENT_DECODER.decode(raw.data).id)
    return ids


async def caught_up(nc: NATS) -> bool:
    """No consumer of the events, health or incidents has anything left to deliver or to be acknowledged."""
    js = nc.jetstream()
    for stream in (subjects.EVENTS, subjects.HEALTH, subjects.INCIDENTS):
        for c in await js.consumers_info(stream.name):
            if c.num_pending or c.num_ack_pending:
                return False
    return True


class Stored(NamedTuple):
    events: int
    unique_ids: int
    faults: collections.Counter[tuple[str, str]]
    incidents: dict[str, tuple[int, int, int]]


async def stored(nc: NATS) -> Stored:
    [[events, unique]] = await rows(nc, "SELECT count(), uniqExact(id) FROM gpuhealth.events")
    return Stored(int(events), int(unique), await stored_faults(nc), await stored_incidents(nc))  # type: ignore[call-overload]


async def settle(nc: NATS, want_lines: int, timeout: float) -> Stored:
    """Until the store holds every fault line in its events and incidents, the bus has nothing in flight,
    and all that stays put for one incident flush and more (a late duplicate would show meanwhile)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout * LOAD_SLACK
    since, last = loop.time(), None
    while loop.time() < deadline:
        try:
            now, idle = await stored(nc), await caught_up(nc)
        except Exception as e:  # a stage still starting: ask again
            now, idle = None, False
            print(f"chaos: not answering yet: {e!r}", flush=True)
        complete = (now is not None and idle and sum(now.faults.values()) >= want_lines
                    and sum(c for c, _, _ in now.incidents.values()) >= want_lines)  # fmt: skip
        if not complete or now != last:
            since, last = loop.time(), now if complete else None
        elif loop.time() - since >= 3.0:
            return now
        await asyncio.sleep(0.5)
    raise AssertionError(f"the pipeline did not settle on {want_lines} fault lines: {now}")


# ---------------------------------------------------------------- the test


async def test_sigkill_any_stage_at_random_every_effect_happens_once(tmp_path: Path) -> None:
    seed = int(os.environ.get(SEED_ENV) or random.randrange(2**32))
    print(f"chaos seed {seed} ({SEED_ENV}={seed} replays it)", flush=True)
    kmsg = KernelLog(tmp_path / "kmsg")
    kmsg.path.touch()
    (tmp_path / "nosys").mkdir()
    nats = Nats(tmp_path / "nats")
    await asyncio.to_thread(nats.start)
    chaos = Chaos(seed, nats, stages(tmp_path, nats.url, kmsg.path), kmsg)
    nc = None
    try:
        for s in chaos.stages.values():
            s.start()
        await chaos.run()
        want = kmsg.faults()
        print(f"chaos: {len(kmsg.lines)} lines, {sum(want.values())} of them faults; kills {chaos.kills}", flush=True)
        nc = await bus.connect(nats.url, "chaos-test", retry_for=20)
        caught_up_from = time.monotonic()
        end = await settle(nc, sum(want.values()), timeout=30)
        print(f"chaos: {end.events} events stored, settled in {time.monotonic() - caught_up_from:.1f}s", flush=True)

        assert end.faults == want  # each line counted once in the events, storms or not
        ids = await bus_event_ids(nc)
        assert (end.events, end.unique_ids) == (
            len(ids),
            len(ids),
        )  # every event on the bus stored, once: a plain count()
        assert {str(r[0]) for r in await rows(nc, "SELECT id FROM gpuhealth.events")} == ids
        want_states, want_incidents = clean_run(kmsg.lines, read_identity(proc_root=Path("/proc")))
        assert sum(c for c, _, _ in end.incidents.values()) == sum(want.values())
        assert end.incidents == want_incidents  # per incident: count, first and last
        [[n, uniq_updates]] = await rows(nc, "SELECT count(), uniqExact(id, seq) FROM gpuhealth.incidents")
        assert n == uniq_updates
        [[n, uniq_states]] = await rows(nc, "SELECT count(), uniqExact(id) FROM gpuhealth.health_states")
        assert n == uniq_states
        live = {h.entity: (h.health, h.reason, list(h.repair_actions))
                for h in await client.health_states(nc) if h.component == XID}  # fmt: skip
        assert live == want_states
    finally:
        if nc is not None:
            await nc.close()
        for s in chaos.stages.values():
            s.stop()
        nats.stop()
