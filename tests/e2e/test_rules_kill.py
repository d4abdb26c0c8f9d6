"""SIGKILL `gpuctl serve rules` a few times mid-backlog: the states and incidents end as one clean run's."""

from __future__ import annotations

import asyncio
import signal
import subprocess

from gpuhealth import bus, client, subjects
from gpuhealth.events import INCIDENT_DECODER, Event, KernelEvent, SetHealthy, derived_id, encode
from rules.catalog import load
from rules.engine import apply_all
from rules.state import NodeState
from tests.e2e.conftest import GPUCTL

NODES, PER_NODE = 4, 6000  # a node's backlog far longer than a batch (1000) and the id memory (512)
RUN = 800  # a node's events come in runs this long: a batch holds more of one node than the id memory
T0 = 1_763_700_000_000_000_000
S = 10**9
GPUS = [f"0000:{b:02x}:00.0" for b in (0x04, 0x05, 0x06, 0x07)]


def history() -> list[Event]:
    """Per node: Xid 13 on four GPUs, then an operator's set-healthy, the last word."""
    out: list[Event] = []
    for start in range(0, PER_NODE, RUN):
        for n, k in ((n, k) for n in range(NODES) for k in range(start, min(start + RUN, PER_NODE))):
            node, t = f"node-{n}", T0 + k * S
            out.append(KernelEvent(id=derived_id(t, node, k), time=t, cluster="c", node=node, boot_id="b",
                                   source="kmsg", component="accelerator-nvidia-error-xid", kind="xid", xid=13,
                                   pci_bus_id=GPUS[k % 4], message="m"))  # fmt: skip
    for n in range(NODES):
        out.append(SetHealthy(id=f"op-{n}", time=T0 + PER_NODE * S, cluster="c", node=f"node-{n}", boot_id="b",
                              source="gpuctl", component="operator",
                              target_component="accelerator-nvidia-error-xid", entity=GPUS[0]))  # fmt: skip
    return out


def clean_run(events: list[Event]) -> tuple[dict[tuple[str, str], str], dict[str, tuple[int, int, int]]]:
    states: dict[str, NodeState] = {}
    for ev in events:
        states[ev.node], _, _ = apply_all(states.get(ev.node), ev, load())
    health = {(s.node, cs.entity): cs.health for s in states.values() for cs in s.states.values()}
    incidents = {derived_id(f.first, s.node, k): (f.count, f.first, f.last)
                 for s in states.values() for k, f in s.faults.items()}  # fmt: skip
    return health, incidents


def rules(url: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([GPUCTL, "serve", "rules", "--nats", url], stderr=subprocess.DEVNULL)


async def test_sigkill_mid_backlog_a_few_times_ends_as_one_clean_run(nats_url: str) -> None:
    nc = await bus.connect(nats_url, "kill-test")
    js = nc.jetstream()
    await bus.provision(js)
    events = history()
    items = [(subjects.event_subject(e.node, "kmsg"), e.id, encode(e)) for e in events]
    for i in range(0, len(items), 5000):
        await bus.publish_batch(js, items[i : i + 5000], timeout=60)

    async def progress() -> tuple[int, int]:
        """How far the rules' consumer has delivered, and how many events it has not delivered yet."""
        try:
            info = await js.consumer_info(subjects.EVENTS.name, "rules")
        except Exception:
            return 0, len(events)
        return info.delivered.stream_seq, info.num_pending

    kills = 0
    try:
        for target in (len(events) // 10, len(events) // 3, len(events) // 2):
            proc = rules(nats_url)
            try:
                async with asyncio.timeout(60):
                    while (await progress())[0] < target:
                        await asyncio.sleep(0.01)
            finally:
                proc.send_signal(signal.SIGKILL)
                proc.wait(timeout=30)
            kills += (await progress())[1] > 0
        assert kills >= 2, "the rules finished the backlog before they could be killed"
        last = rules(nats_url)
        try:
            async with asyncio.timeout(90):
                while True:
                    info = await js.consumer_info(subjects.EVENTS.name, "rules")
                    if info.ack_floor.stream_seq == len(events) and not info.num_ack_pending:
                        break
                    await asyncio.sleep(0.2)
        finally:
            last.terminate()  # drains: its last flush publishes the incidents' latest counts
            last.wait(timeout=30)
        want_health, want_incidents = clean_run(events)
        health = {(h.node, h.entity): h.health for h in await client.health_states(nc)}
        latest: dict[str, tuple[int, int, int, int]] = {}
        info = await js.stream_info(subjects.INCIDENTS.name)
        for seq in range(info.state.first_seq, info.state.last_seq + 1):
            raw = await js.get_msg(subjects.INCIDENTS.name, seq)
            assert raw.data is not None
            i = INCIDENT_DECODER.decode(raw.data)
            if i.seq > latest.get(i.id, (0,))[0]:
                latest[i.id] = (i.seq, i.count, i.first, i.last)
        assert sum(v[1] for v in latest.values()) == NODES * PER_NODE
        assert {k: v[1:] for k, v in latest.items()} == want_incidents
        assert health == want_health
    finally:
        await nc.close()
