from __future__ import annotations

from gpuhealth.events import GpuInfo, HealthState, Inventory
from gpuhealth.fleet import band, fleet_view, score


def state(node: str, health: str, pci: str | None = None, since: int = 1, component: str = "c") -> HealthState:
    return HealthState(id=f"{node}{pci}{health}{since}", time=since, cluster="k", node=node, source="rules",
                       component=component, entity=pci or node, health=health, reason=f"{health} here",  # type: ignore[arg-type]
                       since=since, pci_bus_id=pci)  # fmt: skip


def inventory(node: str, n: int) -> Inventory:
    return Inventory(id=node, time=1, cluster="k", node=node, source="nvml", component="inventory",
                     gpus=[GpuInfo(index=i, pci_bus_id=f"0000:{i:02x}:00.0", uuid=f"GPU-{node}-{i}") for i in range(n)])  # fmt: skip


def test_the_score_and_its_bands() -> None:
    assert score([]) == 100 and band(100) == "Healthy"
    assert score([state("a", "Healthy")]) == 100
    assert score([state("a", "Degraded")]) == 75 and band(75) == "Degraded"
    assert score([state("a", "Unknown")]) == 75
    assert score([state("a", "Unhealthy")]) == 55 and band(55) == "Critical"
    assert score([state("a", "Degraded"), state("a", "Degraded")]) == 50
    assert score([state("a", "Unhealthy")] * 3) == 0
    assert (band(80), band(79), band(60), band(59)) == ("Healthy", "Degraded", "Degraded", "Critical")


def test_fleet_view_is_worst_first_with_gpu_scores_and_the_oldest_open_state() -> None:
    states = [
        state("good", "Healthy", component="kernel-log"),
        state("bad", "Unhealthy", "0000:01:00.0", since=50),
        state("bad", "Degraded", "0000:02:00.0", since=20),
        state("meh", "Degraded", "0000:00:00.0", since=5),
    ]
    view = fleet_view(states, [inventory("good", 2), inventory("bad", 4), inventory("meh", 1)])
    assert [(n["node"], n["score"], n["band"]) for n in view] == [
        ("bad", 30, "Critical"),
        ("meh", 75, "Degraded"),
        ("good", 100, "Healthy"),
    ]
    bad = view[0]
    assert [g["score"] for g in bad["gpus"]] == [100, 55, 75, 100]
    assert bad["counts"] == {"Healthy": 0, "Degraded": 1, "Unhealthy": 1, "Unknown": 0}
    assert bad["oldest_open"]["since_ns"] == 20 and bad["oldest_open"]["entity"] == "0000:02:00.0"
    assert view[2]["oldest_open"] is None


def test_a_node_with_inventory_but_no_state_is_listed_healthy() -> None:
    (only,) = fleet_view([], [inventory("quiet", 8)])
    assert (only["node"], only["score"], len(only["gpus"])) == ("quiet", 100, 8)
