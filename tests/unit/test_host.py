"""The host producer on recorded /proc trees: metrics, reboots, services, modules, crash records."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

from gpuhealth.config import NodeIdentity
from gpuhealth.events import EVENT_DECODER, METRIC_DECODER, HostEvent, MetricBatch
from producers import host
from producers.poller import PollState
from rules.catalog import load
from rules.engine import apply
from rules.state import NodeState
from tests.conftest import REPO
from tests.data import trees

PLAIN = REPO / "tests" / "data" / "proc" / "plain-vm"
S = 1_000_000_000


class Services:
    """What systemd would say: unit → (LoadState, ActiveState)."""

    def __init__(self, **states: tuple[str, str]) -> None:
        self.states = {k.replace("_", "-"): v for k, v in states.items()}
        self.calls = 0

    def __call__(self, units: Sequence[str]) -> dict[str, tuple[str, str]]:
        self.calls += 1
        return {u: self.states.get(u, ("not-found", "inactive")) for u in units}


@pytest.fixture
def proc(tmp_path: Path) -> Path:
    return trees.write_h100_proc(tmp_path / "proc")


def poller(proc: Path, state_file: Path | None = None, *, services: Services | None = None, switches: int = 0,
           pstore: Sequence[Path] = (), boot: str = trees.BOOT_ID) -> host.HostPoller:  # fmt: skip
    identity = NodeIdentity("c", "n1", "m", boot, 0)
    return host.HostPoller(proc, identity, PollState(state_file, boot), pstore_dirs=pstore,
                           nvswitches=lambda: switches, service_states=services or Services(), slow_every=1)  # fmt: skip


def split(items: list[tuple[str, str, bytes]]) -> tuple[list[HostEvent], MetricBatch]:
    events = [EVENT_DECODER.decode(b) for s, _, b in items if ".event." in s]
    [batch] = [METRIC_DECODER.decode(b) for s, _, b in items if ".metric." in s]
    return [e for e in events if isinstance(e, HostEvent)], batch


def test_metrics_from_the_recorded_proc(proc: Path) -> None:
    p = poller(proc)
    _, first = split(p.poll())
    v = first.values
    assert (v["procs_zombie"], v["procs_dstate"]) == (1, 1)
    assert (v["fd_used"], v["load1"], v["uptime_s"]) == (28704, 12.4, 86400.52)
    assert 0 < v["memory_used_percent"] < 100 and v["swap_used_percent"] == 0
    assert 0 <= v["disk_used_percent./"] <= 100
    assert "cpu_percent" not in v  # a rate needs two reads
    stat = proc / "stat"
    stat.write_text(stat.read_text().replace("cpu  3600000 400 320000 36000000", "cpu  3600100 400 320000 36000300", 1))
    _, second = split(p.poll())
    assert second.values["cpu_percent"] == pytest.approx(25.0)


def test_a_new_boot_id_is_a_reboot_event_with_when_the_last_boot_was_seen(proc: Path, tmp_path: Path) -> None:
    saved = tmp_path / "host.state"
    p = poller(proc, saved)
    p.poll(now=100 * S)
    p.poll(now=110 * S)
    p.state.save()
    new_boot = "0f0e0d0c-0b0a-4908-8706-050403020100"
    (proc / "sys" / "kernel" / "random" / "boot_id").write_text(new_boot + "\n")
    after = poller(proc, saved, boot=new_boot)
    events, _ = split(after.poll(now=300 * S))
    after.state.save()
    [reboot] = [e for e in events if e.kind == "reboot"]
    assert (reboot.component, reboot.boot_id, reboot.since) == ("os", new_boot, 110 * S)
    assert trees.BOOT_ID in reboot.message
    # Seen once: the next start in the same boot says nothing more.
    assert [e for e in split(poller(proc, saved, boot=new_boot).poll())[0] if e.kind == "reboot"] == []


def test_a_reboot_while_running_is_seen_too(proc: Path) -> None:
    p = poller(proc)
    p.poll()
    (proc / "sys" / "kernel" / "random" / "boot_id").write_text("11111111-2222-4333-8444-555555555555\n")
    stat = proc / "stat"
    stat.write_text(stat.read_text().replace("btime 1763640000", "btime 1763700000"))
    [reboot] = split(p.poll())[0]
    # It dates the new boot (the rules take a boot that began after the current one for a reboot), not the
    # boot this agent started in, and not "unknown".
    assert (reboot.kind, reboot.boot_time) == ("reboot", 1_763_700_000 * S)
    assert [e.kind for e in split(p.poll())[0]] == []


def test_fabric_manager_down_on_a_node_with_nvswitches_is_unhealthy(proc: Path) -> None:
    services = Services(nvidia_fabricmanager=("loaded", "failed"), kubelet=("loaded", "active"))
    events, _ = split(poller(proc, services=services, switches=4).poll())
    by_unit = {e.entity: e for e in events if e.kind == "service"}
    assert set(by_unit) == {"nvidia-fabricmanager", "kubelet"}  # docker, containerd, persistenced: not installed
    fm = by_unit["nvidia-fabricmanager"]
    assert (fm.ok, fm.state, fm.component) == (False, "failed", "accelerator-nvidia-fabric-manager")
    state: NodeState | None = None
    for ev in events:
        state, _ = apply(state, ev, load())
    assert state is not None
    cs = state.states["accelerator-nvidia-fabric-manager\x1fnvidia-fabricmanager"]
    assert (cs.health, cs.actions) == ("Unhealthy", ["REBOOT_SYSTEM"])
    assert state.states["kubelet\x1fkubelet"].health == "Healthy"


def test_fabric_manager_missing_matters_only_with_nvswitches(proc: Path) -> None:
    with_switches, _ = split(poller(proc, services=Services(), switches=4).poll())
    assert [(e.entity, e.state, e.ok) for e in with_switches if e.kind == "service"] == [
        ("nvidia-fabricmanager", "not installed", False)
    ]
    without, _ = split(poller(proc, services=Services(), switches=0).poll())
    assert [e for e in without if e.kind == "service"] == []


def test_services_are_reported_on_change_only(proc: Path) -> None:
    services = Services(containerd=("loaded", "active"))
    p = poller(proc, services=services)
    assert [e.entity for e in split(p.poll())[0] if e.kind == "service"] == ["containerd"]
    assert [e for e in split(p.poll())[0] if e.kind == "service"] == []
    services.states["containerd"] = ("loaded", "failed")
    [ev] = [e for e in split(p.poll())[0] if e.kind == "service"]
    assert (ev.state, ev.ok) == ("failed", False)


def test_without_systemd_services_are_not_applicable(proc: Path) -> None:
    p = host.HostPoller(proc, NodeIdentity("c", "n", "m", "b", 0), PollState(None, "b"),
                        service_states=lambda units: {}, pstore_dirs=())  # fmt: skip
    assert [e for e in split(p.poll())[0] if e.kind == "service"] == []


def test_peermem_unloaded_is_an_event(proc: Path) -> None:
    p = poller(proc)
    [first] = [e for e in split(p.poll())[0] if e.kind == "module"]
    assert first.state == "loaded"
    modules = proc / "modules"
    modules.write_text("".join(ln + "\n" for ln in modules.read_text().splitlines() if "peermem" not in ln))
    [ev] = [e for e in split(p.poll())[0] if e.kind == "module"]
    assert (ev.entity, ev.state) == ("nvidia_peermem", "not loaded")


def test_a_new_pstore_record_is_reported_once(proc: Path, tmp_path: Path) -> None:
    pstore = tmp_path / "pstore"
    pstore.mkdir()
    saved = tmp_path / "host.state"
    p = poller(proc, saved, pstore=[pstore])
    assert [e for e in split(p.poll())[0] if e.kind == "pstore"] == []
    (pstore / "dmesg-ramoops-0").write_text("Oops#1 Part1\n<0>Kernel panic - not syncing: Fatal exception\n")
    [ev] = [e for e in split(p.poll())[0] if e.kind == "pstore"]
    assert "Kernel panic" in ev.message and ev.entity == "dmesg-ramoops-0"
    p.state.save()
    assert [e for e in split(poller(proc, saved, pstore=[pstore]).poll())[0] if e.kind == "pstore"] == []


def test_a_plain_vm_and_a_broken_proc_still_give_what_can_be_read(tmp_path: Path) -> None:
    _, batch = split(poller(PLAIN).poll())
    assert batch.values["memory_used_percent"] > 0 and "fd_used" in batch.values
    broken = Path(shutil.copytree(PLAIN, tmp_path / "proc"))
    (broken / "loadavg").write_text("garbage\n")
    (broken / "sys" / "fs" / "file-nr").unlink()
    (broken / "uptime").write_text("")
    _, batch = split(poller(broken).poll())
    assert "load1" not in batch.values and "fd_used" not in batch.values and "uptime_s" not in batch.values
    assert "memory_used_percent" in batch.values
