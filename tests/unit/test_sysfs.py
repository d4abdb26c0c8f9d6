"""The sysfs poller on recorded trees, through the rules engine: what an operator would see."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuhealth.config import NodeIdentity
from gpuhealth.events import EVENT_DECODER, METRIC_DECODER, HealthState, HostEvent
from producers import sysfs
from producers.poller import PollState
from rules.catalog import load
from rules.engine import apply
from rules.state import NodeState
from tests.conftest import REPO
from tests.data import trees

H100 = REPO / "tests" / "data" / "sysfs" / "h100-8gpu"
PLAIN = REPO / "tests" / "data" / "sysfs" / "plain-vm"
GPU = "0000:18:00.0"
S = 1_000_000_000
CAT = load()


class Node:
    """A poller over a tree, its events fed to the engine, with a clock the test moves."""

    def __init__(self, root: Path, state_file: Path | None = None, boot: str = "b1") -> None:
        self.root = root
        self.identity = NodeIdentity("c", "n1", "m", boot, 0)
        self.poller = sysfs.SysfsPoller(root, self.identity, PollState(state_file, boot))
        self.engine: NodeState | None = None
        self.t = 1_000 * S
        self.states: list[HealthState] = []

    def poll(self, advance_s: float = 10) -> list[HostEvent]:
        self.t += int(advance_s * S)
        items = self.poller.poll(self.t)
        self.poller.state.save()
        events = [EVENT_DECODER.decode(b) for s, _, b in items if ".event." in s]
        for ev in events:
            self.engine, out = apply(self.engine, ev, CAT)
            self.states += out
        return [e for e in events if isinstance(e, HostEvent)]

    def health(self, component: str, entity: str) -> tuple[str, str]:
        assert self.engine is not None
        cs = self.engine.states[f"{component}\x1f{entity}"]
        return cs.health, cs.reason

    def dev(self, bdf: str = GPU) -> Path:
        return (self.root / "bus" / "pci" / "devices" / bdf).resolve()

    def write(self, path: Path, text: str) -> None:
        path.write_text(text)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return Path(shutil.copytree(H100, tmp_path / "sys", symlinks=True))


@pytest.fixture
def node(tree: Path) -> Node:
    n = Node(tree)
    n.poll()
    return n


def test_committed_trees_are_what_the_generator_writes(tmp_path: Path) -> None:
    for committed, write in ((H100, trees.write_h100_sysfs), (trees.H100_PROC, trees.write_h100_proc)):
        fresh = write(tmp_path / committed.name / "x")
        listing = sorted(str(p.relative_to(fresh)) for p in fresh.rglob("*"))
        assert listing == sorted(str(p.relative_to(committed)) for p in committed.rglob("*")), committed
        for rel in listing:
            f = fresh / rel
            if f.is_symlink():
                assert f.readlink() == (committed / rel).readlink(), rel
            elif f.is_file():
                assert f.read_text() == (committed / rel).read_text(), rel


def test_discovery_finds_gpus_nvswitches_their_ports_ib_edac_and_sensors(node: Node) -> None:
    found = node.poller.found
    roles = [d.role for d in found.pci]
    assert (roles.count("gpu"), roles.count("nvswitch"), roles.count("upstream")) == (8, 4, 12)
    assert found.nvswitches == 4
    assert {d.bdf for d in found.pci if d.role == "upstream"} >= {"0000:17:00.0", "0000:04:00.0"}
    assert [n for n, _ in found.ib_ports] == [f"mlx5_{i}:1" for i in range(8)]
    assert [n for n, _ in found.edac] == ["mc0", "mc1"]
    assert {s.name: s.limit for s in found.sensors}["coretemp.Package id 0"] == 100.0
    # the critical trip point, not the passive one (where the kernel only throttles)
    assert {s.name: s.limit for s in found.sensors}["x86_pkg_temp.thermal_zone0"] == 105.0


def test_first_poll_shows_every_link_and_port_healthy_then_nothing_until_a_change(tree: Path) -> None:
    n = Node(tree)
    first = n.poll()
    assert sorted({(e.kind, e.ok) for e in first}) == [("ib_port", True), ("link", True)]
    assert len(first) == 24 + 8
    assert n.health("pci", GPU)[0] == "Healthy"
    assert n.poll() == []


def test_temperatures_are_metrics(tree: Path) -> None:
    n = Node(tree)
    items = n.poller.poll(n.t)
    [batch] = [METRIC_DECODER.decode(b) for s, _, b in items if ".metric." in s]
    assert batch.values["temp_c.coretemp.Package id 0"] == 46.0
    assert batch.values["temp_c.nvme.Composite"] == 38.85


def test_growing_aer_fatal_counter_makes_the_device_unhealthy(node: Node) -> None:
    node.write(node.dev() / "aer_dev_fatal", trees.aer_table("aer_dev_fatal", {"DLP": 1}))
    [ev] = node.poll()
    assert (ev.kind, ev.entity, ev.counts) == ("aer", GPU, {"fatal": 1, "fatal.DLP": 1})
    assert not ev.first_read
    health, reason = node.health("pci", GPU)
    assert health == "Unhealthy" and "AER fatal" in reason
    assert node.states[-1].repair_actions == ["REBOOT_SYSTEM"]
    assert node.poll() == []  # no growth, no event


def test_correctable_errors_over_the_threshold_make_it_degraded(node: Node) -> None:
    threshold = CAT.limits.pci.aer_correctable.threshold
    path = node.dev() / "aer_dev_correctable"
    path.write_text(trees.aer_table("aer_dev_correctable", {"BadTLP": threshold // 2}))
    node.poll()
    assert node.health("pci", GPU)[0] == "Healthy"  # half the threshold: counted, not yet a state
    path.write_text(trees.aer_table("aer_dev_correctable", {"BadTLP": threshold}))
    node.poll()
    health, reason = node.health("pci", GPU)
    assert health == "Degraded" and f"{threshold} in 1 h" in reason


def test_correctable_errors_spread_wider_than_the_window_are_not_a_state(node: Node) -> None:
    rate = CAT.limits.pci.aer_correctable
    path = node.dev() / "aer_dev_correctable"
    for i in range(1, 4):
        path.write_text(trees.aer_table("aer_dev_correctable", {"RxErr": i * (rate.threshold // 2)}))
        node.poll(advance_s=rate.window_s)  # each half-threshold burst a whole window after the last
    assert node.health("pci", GPU)[0] == "Healthy"


def test_counter_reset_counts_the_new_value(node: Node) -> None:
    path = node.dev() / "aer_dev_nonfatal"
    path.write_text(trees.aer_table("aer_dev_nonfatal", {"CmpltTO": 5}))
    assert node.poll()[0].counts["nonfatal"] == 5
    path.write_text(trees.aer_table("aer_dev_nonfatal", {"CmpltTO": 2}))  # the device was reset
    assert node.poll()[0].counts["nonfatal"] == 2


def test_a_count_already_there_at_the_first_read_of_a_boot_is_reported(tree: Path, tmp_path: Path) -> None:
    dev = (tree / "bus" / "pci" / "devices" / GPU).resolve()
    dev.joinpath("aer_dev_fatal").write_text(trees.aer_table("aer_dev_fatal", {"SDES": 1}))
    saved = tmp_path / "sysfs.state"
    n = Node(tree, saved)
    [aer] = [e for e in n.poll() if e.kind == "aer"]
    assert aer.first_read and aer.counts["fatal"] == 1
    assert n.health("pci", GPU)[0] == "Unhealthy"
    # The agent restarts within the same boot: the saved baseline means no second report.
    assert [e for e in Node(tree, saved).poll() if e.kind == "aer"] == []
    # A new boot: the count is news again.
    assert [e.counts["fatal"] for e in Node(tree, saved, boot="b2").poll() if e.kind == "aer"] == [1]


def test_a_link_that_drops_from_x16_to_x8_is_an_event_and_degraded_until_it_retrains(node: Node) -> None:
    (node.dev() / "current_link_width").write_text("8\n")
    [ev] = node.poll()
    assert (ev.kind, ev.ok, ev.state) == ("link", False, "x8/x16")
    assert "downtrained: x8 32.0 GT/s (capable of x16" in ev.message
    assert node.health("pci", GPU)[0] == "Degraded"
    assert node.states[-1].repair_actions == ["REBOOT_SYSTEM"]
    (node.dev() / "current_link_width").write_text("16\n")
    node.poll()
    health, reason = node.health("pci", GPU)
    assert health == "Healthy" and reason.startswith("restored")


def test_a_slower_link_at_full_width_is_normal(node: Node) -> None:
    (node.dev() / "current_link_speed").write_text("2.5 GT/s PCIe\n")  # an idle GPU saving power
    assert node.poll() == []


def _ib(node: Node, state: str, downs: int | None = None) -> None:
    port = node.root / "class" / "infiniband" / "mlx5_3" / "ports" / "1"
    port.joinpath("state").write_text(state + "\n")
    if downs is not None:
        port.joinpath("counters", "link_downed").write_text(f"{downs}\n")


def test_an_ib_port_going_down_and_back_three_times_is_flapping(node: Node) -> None:
    for i in range(1, 4):
        _ib(node, "1: DOWN", downs=i)
        node.poll()
        _ib(node, "4: ACTIVE")
        node.poll()
    health, reason = node.health("accelerator-nvidia-infiniband", "mlx5_3:1")
    assert health == "Degraded" and "flapping" in reason and "3 in 10 min" in reason
    assert node.states[-1].repair_actions == ["HARDWARE_INSPECTION"]
    _ib(node, "4: ACTIVE")
    node.poll(advance_s=3600)
    assert node.health("accelerator-nvidia-infiniband", "mlx5_3:1")[0] == "Degraded"  # a flap is not undone


def test_flaps_between_two_polls_are_counted_from_link_downed(node: Node) -> None:
    _ib(node, "4: ACTIVE", downs=3)  # down and up three times, never seen DOWN by a poll
    [port] = [e for e in node.poll() if e.kind == "ib_port"]
    assert port.counts == {"downs": 3}
    assert "flapping" in node.health("accelerator-nvidia-infiniband", "mlx5_3:1")[1]


def test_an_ib_port_down_for_four_minutes_is_unhealthy_and_clears_when_active(node: Node) -> None:
    _ib(node, "1: DOWN")
    node.poll()
    assert node.health("accelerator-nvidia-infiniband", "mlx5_3:1")[0] == "Degraded"
    for _ in range(4):
        node.poll(advance_s=60)  # restated every minute while down
    health, reason = node.health("accelerator-nvidia-infiniband", "mlx5_3:1")
    assert health == "Unhealthy" and "down for 4 min" in reason
    _ib(node, "4: ACTIVE")
    node.poll()
    assert node.health("accelerator-nvidia-infiniband", "mlx5_3:1")[0] == "Healthy"


def test_ib_error_counters_are_deltas(node: Node) -> None:
    port = node.root / "class" / "infiniband" / "mlx5_0" / "ports" / "1" / "counters"
    port.joinpath("symbol_error").write_text("7\n")
    port.joinpath("port_rcv_errors").write_text("2\n")
    [ev] = node.poll()
    assert (ev.kind, ev.counts) == ("ib_errors", {"symbol_error": 7, "port_rcv_errors": 2})


def test_an_edac_uncorrectable_increase_is_unhealthy(node: Node) -> None:
    mc = node.root / "devices" / "system" / "edac" / "mc" / "mc1"
    mc.joinpath("ue_count").write_text("1\n")
    [ev] = node.poll()
    assert (ev.kind, ev.entity, ev.counts) == ("edac", "mc1", {"ue": 1})
    assert node.health("edac", "mc1")[0] == "Unhealthy"


def test_a_sensor_over_its_critical_trip_is_degraded_until_it_cools(node: Node) -> None:
    hw = node.root / "class" / "hwmon" / "hwmon1"
    hw.joinpath("temp1_input").write_text("86000\n")
    [ev] = node.poll()
    assert (ev.kind, ev.entity, ev.ok) == ("thermal", "nvme.Composite", False)
    assert node.health("thermal", "nvme.Composite")[0] == "Degraded"
    hw.joinpath("temp1_input").write_text("40000\n")
    node.poll()
    assert node.health("thermal", "nvme.Composite")[0] == "Healthy"


def test_a_plain_vm_has_nothing_to_report(tmp_path: Path) -> None:
    n = Node(PLAIN)
    assert n.poll() == []
    assert n.poller.found.pci == [] and n.poller.found.ib_ports == []


BAD_VALUES = ["", "abc\n", "RxErr 1\nBadT", "RxErr one\n", "-\n", "\x00\x01\x02", "99999999999999999999999 1\n"]


def test_missing_unreadable_half_written_and_non_numeric_files_are_skipped(node: Node) -> None:
    dev = node.dev()
    (dev / "aer_dev_fatal").unlink()  # a device without AER
    (dev / "aer_dev_correctable").unlink()
    (dev / "aer_dev_correctable").mkdir()  # reading fails with an OSError, like EACCES does
    (dev / "aer_dev_nonfatal").write_text("RxErr 1\nBadT")  # half-written
    (dev / "current_link_width").write_text("sixteen\n")
    ib = node.root / "class" / "infiniband" / "mlx5_0" / "ports" / "1"
    (ib / "state").unlink()
    (ib / "counters" / "symbol_error").write_text("n/a\n")
    shutil.rmtree(node.root / "devices" / "system" / "edac" / "mc" / "mc0")
    events = node.poll()
    assert [(e.kind, e.entity, e.state) for e in events] == [("ib_port", "mlx5_0:1", "UNKNOWN")]
    assert node.health("pci", GPU)[0] == "Healthy"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(BAD_VALUES)), min_size=1, max_size=8))
def test_no_garbage_in_any_file_makes_the_poller_raise(tree: Path, garbage: list[tuple[int, str]]) -> None:
    n = Node(tree)
    n.poll()
    files = sorted(p for p in tree.rglob("*") if p.is_file() and not p.is_symlink())
    for index, value in garbage:
        files[index % len(files)].write_text(value)
    n.poll()  # must not raise
    n.poller.rediscover_s = 0
    n.poll()


def test_the_tree_vanishing_and_coming_back_is_survived(node: Node, tmp_path: Path) -> None:
    away = tmp_path / "away"
    node.root.rename(away)
    node.poller.rediscover_s = 0
    assert node.poll() == []  # nothing to read is not a fault, and not an exception
    away.rename(node.root)
    assert node.poll() == []  # the same devices in the same condition: nothing new
    (node.dev() / "current_link_width").write_text("4\n")
    assert [(e.kind, e.state) for e in node.poll()] == [("link", "x4/x16")]
