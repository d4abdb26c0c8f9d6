"""gpuctl up on a recorded H100 tree: the devices show in status, a change in the tree reaches it."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

from tests.conftest import REPO
from tests.data import trees
from tests.e2e.conftest import gpuctl, gpuctl_json, running, wait_for

GPU = "0000:2a:00.0"


def states(data_dir: Path) -> list[dict[str, Any]]:
    _, status = gpuctl_json("status", "--data-dir", str(data_dir))
    assert isinstance(status, dict)
    return list(status["states"])


def test_up_on_a_recorded_h100_tree_shows_its_devices_and_their_faults(tmp_path: Path) -> None:
    sys_root = Path(shutil.copytree(REPO / "tests" / "data" / "sysfs" / "h100-8gpu", tmp_path / "sys", symlinks=True))
    proc_root = trees.write_h100_proc(tmp_path / "proc")
    extra = ("--sysfs-root", str(sys_root), "--proc-root", str(proc_root), "--simulate-gpus", "8",
             "--sysfs-interval", "0.5", "--host-interval", "0.5")  # fmt: skip
    with running(tmp_path, *extra) as up:
        # The first read happened before the agent was ready: every GPU's link and every IB port is there.
        wait_for(lambda: len([s for s in states(up.data_dir) if s["component"] == "pci"]) == 24)
        pci = {s["entity"]: s for s in states(up.data_dir) if s["component"] == "pci"}
        assert pci[GPU]["health"] == "Healthy" and "x16 32.0 GT/s" in pci[GPU]["reason"]
        ib = [s for s in states(up.data_dir) if s["component"] == "accelerator-nvidia-infiniband"]
        assert sorted(s["entity"] for s in ib) == [f"mlx5_{i}:1" for i in range(8)]
        assert gpuctl("status", "--data-dir", str(up.data_dir)).returncode == 0

        dev = (sys_root / "bus" / "pci" / "devices" / GPU).resolve()
        dev.joinpath("aer_dev_fatal").write_text(trees.aer_table("aer_dev_fatal", {"CmpltTO": 2}))

        def gpu_health() -> str:  # strict: a status read missing a state is a bug (it once was: client.py)
            return str({s["entity"]: s for s in states(up.data_dir) if s["component"] == "pci"}[GPU]["health"])

        wait_for(lambda: gpu_health() == "Unhealthy", timeout=20)
        code, status = gpuctl_json("status", "--data-dir", str(up.data_dir), "--component", "pci")
        assert code == 2 and isinstance(status, dict)
        [bad] = [s for s in status["states"] if s["health"] != "Healthy"]
        assert bad["entity"] == GPU and bad["repair_actions"] == ["REBOOT_SYSTEM"] and "fatal" in bad["reason"]

        # The node reboots (a new boot_id): a reboot event, and the reboot-class state clears.
        proc_root.joinpath("sys", "kernel", "random", "boot_id").write_text("0f0e0d0c-0b0a-4908-8706-050403020100\n")
        stat = proc_root / "stat"  # and the new boot began later, as every real one does
        stat.write_text(stat.read_text().replace("btime 1763640000", f"btime {int(time.time()) - 60}"))
        wait_for(lambda: gpu_health() == "Healthy", timeout=20)

        def reboots() -> list[Any]:
            r = gpuctl("sql", "--data-dir", str(up.data_dir), "--json",
                       "SELECT node, message FROM gpuhealth.events WHERE kind = 'reboot'")  # fmt: skip
            return list(json.loads(r.stdout)) if r.returncode == 0 else []

        wait_for(lambda: len(reboots()) == 1, timeout=20)
        assert trees.BOOT_ID in reboots()[0]["message"]
