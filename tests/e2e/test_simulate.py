"""gpuctl simulate into the embedded stack: the simulated nodes are in the fleet view, faults and all."""

from __future__ import annotations

from typing import Any

from tests.e2e.conftest import Up, gpuctl, gpuctl_json, wait_for


def test_a_simulated_fleet_shows_in_gpuctl_fleet(up_stack: Up) -> None:
    d = str(up_stack.data_dir)
    r = gpuctl("simulate", "--data-dir", d, "--nodes", "5", "--gpus", "2", "--interval", "0.5", "--duration", "3",
               "--fault-rate", "7200", "--seed", "3", timeout=60)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "simulating 5 nodes x 2 GPUs" in r.stderr and "published" in r.stderr

    def sim_nodes() -> list[dict[str, Any]]:
        code, out = gpuctl_json("fleet", "--data-dir", d)
        assert code == 0
        return [n for n in out["nodes"] if str(n["node"]).startswith("sim-")]  # type: ignore[index]

    wait_for(lambda: len(sim_nodes()) == 5 and all(len(n["gpus"]) == 2 for n in sim_nodes()), timeout=30)
    # 7,200 faults per node-hour for 3 s: about 30, so some node is not Healthy any more.
    wait_for(lambda: any(n["score"] < 100 for n in sim_nodes()), timeout=30)
    worst = sim_nodes()[0]
    assert set(worst) >= {"node", "cluster", "score", "band", "counts", "gpus", "oldest_open"}
    assert worst["cluster"] == "sim" and worst["band"] in ("Healthy", "Degraded", "Critical")
