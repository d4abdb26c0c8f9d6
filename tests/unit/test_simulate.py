"""The fleet simulator: what it publishes is what agents publish, and the rules take it as such."""

from __future__ import annotations

import asyncio
from collections import Counter

from gpuhealth.events import EVENT_DECODER, INVENTORY_DECODER, METRIC_DECODER, HostEvent, KernelEvent, NvmlEvent
from producers.simulate import FAULT_MIX, KERNEL_LINES, FleetSimulator
from rules.catalog import load
from rules.engine import apply
from rules.state import NodeState

Item = tuple[str, str, bytes]


class Sink:
    def __init__(self) -> None:
        self.items: list[Item] = []

    async def __call__(self, items: list[Item]) -> None:
        self.items += items


def test_every_kernel_line_is_classified_as_a_real_node_would() -> None:
    sim = FleetSimulator(Sink(), nodes=1, gpus=8)
    for name in KERNEL_LINES:
        [(_, _, data)] = sim.fault(sim.nodes[0], name, 10**18)
        ev = EVENT_DECODER.decode(data)
        assert isinstance(ev, KernelEvent) and ev.kind is not None, name
        if name.startswith("xid"):
            assert (ev.kind, ev.xid) == ("xid", int(name[3:])) and ev.pci_bus_id, name


def test_a_tick_is_every_gpus_metrics_and_faults_at_the_rate() -> None:
    sim = FleetSimulator(Sink(), nodes=20, gpus=4, fault_rate=3600.0, interval=10.0, seed=7)
    metrics, faults = sim.tick(10**18)
    assert len(metrics) == 80
    batch = METRIC_DECODER.decode(metrics[0][2])
    assert batch.gpu_uuid and batch.values["power_w"] > 0 and batch.values["util_gpu_pct"] > 0
    assert 120 < len(faults) < 290  # Poisson around 20 nodes x 1 fault/s x 10 s
    again = FleetSimulator(Sink(), nodes=20, gpus=4, fault_rate=3600.0, interval=10.0, seed=7).tick(10**18)[1]
    kinds = Counter(type(EVENT_DECODER.decode(d)).__name__ for _, _, d in faults)
    assert len(again) == len(faults) and set(kinds) <= {"KernelEvent", "NvmlEvent", "HostEvent"}


def test_the_rules_take_simulated_nodes_as_real_ones() -> None:
    sink = Sink()
    sim = FleetSimulator(sink, nodes=3, gpus=8, fault_rate=0.0, interval=0.01)
    asyncio.run(sim.run(asyncio.Event(), duration=0.05))
    invs = [INVENTORY_DECODER.decode(d) for s, _, d in sink.items if ".inventory." in s]
    assert sorted(i.node for i in invs) == ["sim-0000", "sim-0001", "sim-0002"] and len(invs[0].gpus) == 8
    node = sim.nodes[0]
    states: NodeState | None = None
    for name in ("xid79", "nvml_dbe", "aer_fatal", "reboot"):
        [(_, _, data)] = sim.fault(node, name, 10**18 + len(name))
        ev = EVENT_DECODER.decode(data)
        assert isinstance(ev, KernelEvent | NvmlEvent | HostEvent)
        states, _ = apply(states, ev, load())
    assert states is not None
    # Three faults raised states; the reboot cleared those a reboot clears (all three ladders start there).
    assert len(states.states) == 3
    assert all(cs.health == "Healthy" and cs.reason.startswith("cleared by reboot") for cs in states.states.values())
    assert set(FAULT_MIX) >= set(KERNEL_LINES)
