"""The fleet view: every node and GPU with a 0-100 health score, worst first.

The score (documented in the README, tested in tests/unit/test_fleet.py):

    score = max(0, 100 - sum(cost(state) for every state that is not Healthy))
    cost: Unhealthy 45, Unknown 25, Degraded 25

for a node over all its states, for a GPU over the states on that GPU (matched
by PCI id or UUID). Bands, as in Flow's fleet view: Healthy 80-100, Degraded
60-79, Critical below 60. So one Degraded or Unknown state puts a node in the
Degraded band, one Unhealthy state (or two Degraded) makes it Critical.
"""

from __future__ import annotations

from typing import Any

from gpuhealth.events import HealthState, Inventory

COST = {"Healthy": 0, "Degraded": 25, "Unknown": 25, "Unhealthy": 45}


def score(states: list[HealthState]) -> int:
    return max(0, 100 - sum(COST[s.health] for s in states))


def band(value: int) -> str:
    return "Healthy" if value >= 80 else "Degraded" if value >= 60 else "Critical"


def _on_gpu(s: HealthState, pci: str, uuid: str | None) -> bool:
    return s.pci_bus_id == pci or (uuid is not None and s.gpu_uuid == uuid)


def fleet_view(states: list[HealthState], inventories: list[Inventory]) -> list[dict[str, Any]]:
    """One entry per node that reported anything, worst score first."""
    by_node: dict[str, list[HealthState]] = {}
    for s in states:
        by_node.setdefault(s.node, []).append(s)
    gpus_by_node = {inv.node: inv for inv in inventories}
    out = []
    for node in sorted(set(by_node) | set(gpus_by_node)):
        mine = by_node.get(node, [])
        inv = gpus_by_node.get(node)
        gpus = []
        for g in inv.gpus if inv else []:
            on_gpu = [s for s in mine if _on_gpu(s, g.pci_bus_id, g.uuid)]
            gpu_score = score(on_gpu)
            gpus.append({"index": g.index, "uuid": g.uuid, "pci_bus_id": g.pci_bus_id, "score": gpu_score,
                         "band": band(gpu_score)})  # fmt: skip
        open_states = sorted((s for s in mine if s.health != "Healthy"), key=lambda s: s.since)
        oldest = open_states[0] if open_states else None
        node_score = score(mine)
        counts = {h: sum(1 for s in mine if s.health == h) for h in ("Healthy", "Degraded", "Unhealthy", "Unknown")}
        out.append({
            "node": node, "cluster": (mine[0].cluster if mine else inv.cluster if inv else ""),
            "score": node_score, "band": band(node_score), "counts": counts, "gpus": gpus,
            "oldest_open": None if oldest is None else {
                "component": oldest.component, "entity": oldest.entity, "health": oldest.health,
                "reason": oldest.reason, "since_ns": oldest.since,
            },
        })  # fmt: skip
    return sorted(out, key=lambda n: (n["score"], n["node"]))
