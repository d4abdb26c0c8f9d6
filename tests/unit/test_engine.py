"""The rules engine over event sequences: table-driven, plus properties."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from gpuhealth.events import (
    Event,
    GpuInfo,
    HostEvent,
    Inventory,
    KernelEvent,
    NvmlEvent,
    SetHealthy,
    SourceStatus,
)
from rules.catalog import load
from rules.engine import apply, apply_all, apply_inventory
from rules.state import RECENT_IDS, NodeState, decode_state, encode_state, first_time
from tests.unit.rules_run import run

CAT = load()
_n = itertools.count(1)
PCI = "0000:04:00.0"


def xid(code: int, boot: str = "b1", pci: str = PCI, message: str = "") -> KernelEvent:
    i = next(_n)
    return KernelEvent(
        id=f"e{i:08d}",
        time=i * 10**9,
        cluster="c",
        node="n",
        boot_id=boot,
        source="kmsg",
        component="accelerator-nvidia-error-xid",
        kind="xid",
        xid=code,
        pci_bus_id=pci,
        message=message or f"NVRM: Xid (PCI:0000:04:00): {code}, test",
    )


def status(available: bool, boot: str = "b1") -> SourceStatus:
    i = next(_n)
    return SourceStatus(
        id=f"s{i:08d}",
        time=i * 10**9,
        cluster="c",
        node="n",
        boot_id=boot,
        source="kmsg",
        component="kernel-log",
        available=available,
        reason="reading" if available else "EACCES",
    )


def current(
    state: NodeState, component: str = "accelerator-nvidia-error-xid", entity: str = PCI
) -> tuple[str, list[str]]:
    cs = state.states[f"{component}\x1f{entity}"]
    return cs.health, list(cs.actions)


def test_fatal_xid_makes_the_gpu_unhealthy_with_the_catalog_action() -> None:
    state, out = run([xid(79)])
    assert [(o.health, o.repair_actions, o.entity) for o in out] == [("Unhealthy", ["REBOOT_SYSTEM"], PCI)]
    assert out[0].reason.startswith("Xid 79")


def test_reboot_clears_a_reboot_class_state() -> None:
    state, out = run([xid(79, "b1"), status(True, "b2")])
    assert current(state) == ("Healthy", [])
    assert out[1].reason.startswith("cleared by reboot")


def test_same_fault_on_three_boots_escalates_to_hardware_inspection() -> None:
    state, out = run([xid(79, "b1"), status(True, "b2"), xid(79, "b2"), status(True, "b3"), xid(79, "b3")])
    assert current(state) == ("Unhealthy", ["HARDWARE_INSPECTION"])
    state, out = run([status(True, "b4")], state)
    assert current(state) == ("Unhealthy", ["HARDWARE_INSPECTION"]), "hardware states never clear by reboot"


def test_the_ladder_climbs_on_the_third_boot_not_the_second() -> None:
    state, out = run([xid(79, "b1"), status(True, "b2"), xid(79, "b2")])
    assert current(state) == ("Unhealthy", ["REBOOT_SYSTEM"]), "one reboot did not fix it: reboot once more"
    assert out[-1].reason == "Xid 79: GPU has fallen off the bus"
    state, out = run([status(True, "b3"), xid(79, "b3")], state)
    assert current(state) == ("Unhealthy", ["HARDWARE_INSPECTION"])
    assert out[-1].reason == "Xid 79: GPU has fallen off the bus (seen on 3 boots: escalated)"


def test_application_xids_never_escalate() -> None:
    events: list[Event] = []
    for b in range(6):
        events += [status(True, f"b{b}"), xid(31, f"b{b}"), xid(45, f"b{b}")]
    state, out = run(events)
    assert current(state) == ("Degraded", ["CHECK_USER_APP_AND_GPU"])
    assert all("HARDWARE_INSPECTION" not in o.repair_actions for o in out)


def test_xid_45_alone_changes_nothing() -> None:
    state, out = run([xid(45) for _ in range(100)])
    assert out == []


def test_storm_is_one_state_change_and_one_incident_with_the_count() -> None:
    state, out = run([xid(95) for _ in range(100_000)])
    assert len(out) == 1
    (fault,) = state.faults.values()
    assert fault.count == 100_000


def test_redelivered_event_changes_nothing() -> None:
    ev = xid(79)
    state, out = run([ev])
    state, again = run([ev], state)
    assert again == []
    assert next(iter(state.faults.values())).count == 1


def test_unknown_code_is_surfaced_not_dropped() -> None:
    state, out = run([xid(9999)])
    assert out[0].reason == "unrecognised Xid 9999" and out[0].health == "Degraded"


def test_states_are_sticky_at_their_worst() -> None:
    state, out = run([xid(79), xid(13)])
    assert len(out) == 1 and current(state) == ("Unhealthy", ["REBOOT_SYSTEM"])


def test_xid_154_takes_the_action_the_driver_names() -> None:
    msg = "NVRM: Xid (PCI:0000:04:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)"
    state, out = run([xid(154, message=msg)])
    assert out[0].repair_actions == ["REBOOT_SYSTEM"]


def test_set_healthy_clears_hardware_state_and_says_who() -> None:
    state, _ = run([xid(81)])
    assert current(state) == ("Unhealthy", ["HARDWARE_INSPECTION"])
    ev = SetHealthy(
        id="op1",
        time=10**12,
        cluster="c",
        node="n",
        boot_id="b1",
        source="gpuctl",
        component="operator",
        target_component="accelerator-nvidia-error-xid",
        entity=PCI,
        user="alice",
        reason="GPU replaced",
    )
    state, out = run([ev], state)
    assert current(state) == ("Healthy", [])
    assert out[0].reason == "set healthy by alice: GPU replaced"


def test_unreadable_source_is_unknown_not_healthy() -> None:
    state, out = run([status(False)])
    assert out[0].health == "Unknown" and out[0].component == "kernel-log"
    state, out = run([status(True)], state)
    assert out[0].health == "Healthy"


def test_a_late_fault_from_a_boot_already_left_does_not_reopen() -> None:
    state, _ = run([xid(79, "b1"), status(True, "b2")])
    state, out = run([xid(79, "b1")], state)
    assert out == [] and current(state) == ("Healthy", [])


def test_a_gpu_fault_names_the_gpu_by_the_uuid_its_inventory_gave() -> None:
    inv = Inventory(id="i1", time=1, cluster="c", node="n", boot_id="b1", source="nvml", component="inventory",
                    gpus=[GpuInfo(index=0, pci_bus_id=PCI, uuid="GPU-aaaa"),
                          GpuInfo(index=1, pci_bus_id="0000:05:00.0")])  # fmt: skip
    state = apply_inventory(None, inv)
    state, out = run([xid(79)], state)
    assert [(o.node, o.pci_bus_id, o.gpu_uuid) for o in out] == [("n", PCI, "GPU-aaaa")]
    _, out = run([xid(79, pci="0000:05:00.0")], state)
    assert [(o.pci_bus_id, o.gpu_uuid) for o in out] == [("0000:05:00.0", None)], "no uuid known: none invented"


def test_a_condition_first_seen_fine_names_its_gpu() -> None:
    inv = Inventory(id="i2", time=1, cluster="c", node="n", boot_id="b1", source="nvml", component="inventory",
                    gpus=[GpuInfo(index=0, pci_bus_id=PCI, uuid="GPU-aaaa")])  # fmt: skip
    cool = NvmlEvent(id="t1", time=2, cluster="c", node="n", boot_id="b1", source="nvml", component="nvml",
                     kind="temperature", pci_bus_id=PCI, data=0, message="41 C")  # fmt: skip
    _, out = apply(apply_inventory(None, inv), cool, CAT)
    assert [(o.component, o.entity, o.health, o.reason, o.pci_bus_id, o.gpu_uuid) for o in out] == [
        ("accelerator-nvidia-temperature", PCI, "Healthy", "41 C", PCI, "GPU-aaaa")
    ]


def test_a_condition_seen_fine_again_and_again_is_published_once_until_it_breaks() -> None:
    def link(i: int, ok: bool) -> HostEvent:
        return HostEvent(id=f"l{i}", time=i, cluster="c", node="n", boot_id="b1", source="sysfs", component="pci",
                         kind="link", entity=PCI, ok=ok, message="x16" if ok else "x8 of x16")  # fmt: skip

    state, out = run([link(1, True)])
    assert [(o.health, o.reason) for o in out] == [("Healthy", "x16")]
    state, out = run([link(2, True), link(3, True)], state)
    assert out == []
    state, out = run([link(4, False), link(5, True), link(6, True)], state)
    assert [(o.health, o.reason) for o in out] == [("Degraded", "x8 of x16"), ("Healthy", "restored: x16")]


def test_output_ids_are_deterministic() -> None:
    ev = xid(79)
    _, a = apply(None, ev, CAT)
    _, b = apply(None, ev, CAT)
    assert [o.id for o in a] == [o.id for o in b]


# ---------------------------------------------------------------- properties

CODES = [13, 31, 43, 45, 48, 63, 79, 81, 94, 95, 119, 9999]


@st.composite
def histories(draw: st.DrawFn) -> list[Event]:
    out: list[Event] = []
    boot = 0
    for i in range(draw(st.integers(1, 40))):
        choice = draw(st.integers(0, 11))
        t = (i + 1) * 60 * 10**9
        if choice == 0:
            boot += 1
            out.append(
                SourceStatus(
                    id=f"s{i}",
                    time=t,
                    cluster="c",
                    node="n",
                    boot_id=f"b{boot}",
                    source="kmsg",
                    component="kernel-log",
                    available=draw(st.booleans()),
                )
            )
        elif choice == 1:
            out.append(
                SetHealthy(
                    id=f"h{i}",
                    time=t,
                    cluster="c",
                    node="n",
                    boot_id=f"b{boot}",
                    source="gpuctl",
                    component="operator",
                    target_component="accelerator-nvidia-error-xid",
                )
            )
        elif choice >= 10:  # sysfs: rate rules with windows, and conditions that clear
            kind = draw(st.sampled_from(["aer", "ib_port", "link"]))
            ok = draw(st.booleans())
            counts = {
                "aer": {"correctable": draw(st.integers(0, 80)), "fatal": draw(st.integers(0, 1))},
                "ib_port": {"downs": draw(st.integers(0, 2))},
            }.get(kind, {})
            out.append(
                HostEvent(
                    id=f"x{i}",
                    time=t,
                    cluster="c",
                    node="n",
                    boot_id=f"b{boot}",
                    source="sysfs",
                    component="pci" if kind != "ib_port" else "accelerator-nvidia-infiniband",
                    kind=kind,
                    entity="0000:04:00.0" if kind != "ib_port" else "mlx5_0:1",
                    counts=counts,
                    ok=ok,
                    since=t - draw(st.integers(0, 400)) * 10**9,
                    message="m",
                )
            )
        else:
            pci = draw(st.sampled_from(["0000:04:00.0", "0000:05:00.0"]))
            out.append(
                KernelEvent(
                    id=f"k{i}",
                    time=t,
                    cluster="c",
                    node="n",
                    boot_id=f"b{boot}",
                    source="kmsg",
                    component="accelerator-nvidia-error-xid",
                    kind="xid",
                    xid=draw(st.sampled_from(CODES)),
                    pci_bus_id=pci,
                    message="m",
                )
            )
        if draw(st.integers(0, 5)) == 0:
            out.append(out[-1])  # a redelivery
    return out


@settings(max_examples=200, deadline=None)
@given(histories(), st.data())
def test_replay_is_deterministic_and_resumable(events: list[Event], data: st.DataObject) -> None:
    state_a, out_a = run(events)
    state_b, out_b = run(events)
    assert out_a == out_b
    cut = data.draw(st.integers(0, len(events)))
    first, first_out = run(events[:cut]) if cut else (None, [])
    resumed = decode_state(encode_state(first)) if first is not None else None
    state_c, rest_out = run(events[cut:], resumed) if cut < len(events) else (first, [])
    assert state_c is not None
    assert first_out + rest_out == out_a
    assert encode_state(state_c) == encode_state(state_a)


def test_an_event_is_recognised_as_applied_for_its_last_512_ids_short_or_long() -> None:
    state = NodeState(node="n")
    assert all(first_time(state, f"e{i}") for i in range(600))
    assert len(state.recent) == RECENT_IDS
    assert not any(first_time(state, f"e{i}") for i in range(600 - RECENT_IDS, 600))  # the set's view
    assert first_time(state, "e0")  # forgotten: older than the last 512
    restored = decode_state(encode_state(state))  # a state loaded from KV builds its set from the list
    assert not first_time(restored, "e599") and first_time(restored, "e1")
    short = NodeState(node="m")
    assert first_time(short, "a") and not first_time(short, "a")


def test_a_redelivery_is_recognised_by_its_stream_sequence_however_many_events_came_since() -> None:
    events = [xid(13, pci=f"0000:0{i % 4}:00.0") for i in range(3 * RECENT_IDS)]
    state: NodeState | None = None
    for seq, ev in enumerate(events, start=100):  # a node's events: rising, not contiguous, sequences
        state, _, _ = apply_all(state, ev, CAT, seq * 3)
    assert state is not None
    state.touched = []  # what the last event touched: not part of the history
    before = encode_state(state)
    for seq, ev in enumerate(events, start=100):  # the whole history delivered again
        state, out, opened = apply_all(state, ev, CAT, seq * 3)
        assert (out, opened) == ([], [])
    assert encode_state(state) == before
    assert sum(f.count for f in state.faults.values()) == len(events)
