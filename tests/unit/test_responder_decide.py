"""The responder's pure core: which health states drain or resume a node, whose drains it never undoes,
and when its circuit breaker and rate limit say no."""

from __future__ import annotations

import msgspec
import pytest

from gpuhealth.errors import SchedulerError
from gpuhealth.events import GpuInfo, HealthState, Inventory, RepairAction
from responder.adapters import NodeState, node_name, slurm_reason
from responder.correlate import Topology, inventory_groups
from responder.decide import Ledger, Policy, Verdict, decide, record, release

XID = "accelerator-nvidia-error-xid"
IDLE = NodeState(exists=True, drained=False)
ACT = Policy(act=True)


def state(node: str, health: str = "Unhealthy", actions: tuple[RepairAction, ...] = ("REBOOT_SYSTEM",),
          entity: str = "GPU-aaaa", i: int = 1) -> HealthState:  # fmt: skip
    return HealthState(id=f"h{i}", time=i, cluster="c", node=node, source="rules", component=XID, entity=entity,
                       health=health, reason="Xid 79: GPU has fallen off the bus", repair_actions=list(actions),  # type: ignore[arg-type]
                       since=i, gpu_uuid=entity, pci_bus_id="0000:04:00.0")  # fmt: skip


def ours(v: Verdict) -> NodeState:
    return NodeState(exists=True, drained=True, reason=v.reason)


def step(ledger: Ledger, h: HealthState, current: NodeState = IDLE, policy: Policy = ACT, now: float = 0.0,
         fleet: int = 5) -> Verdict:  # fmt: skip
    v = decide(ledger, h, current, policy, fleet, now)
    record(ledger, h.node, v, now, policy)
    return v


def test_a_reboot_class_action_drains_with_a_reason_naming_gpuhealth_the_component_gpu_and_state() -> None:
    v = step(Ledger(), state("n1"))
    assert (v.action, v.outcome) == ("drain", "acted")
    assert v.reason == (
        "gpuhealth: REBOOT_SYSTEM accelerator-nvidia-error-xid GPU-aaaa (0000:04:00.0): "
        "Xid 79: GPU has fallen off the bus (health h1)"
    )
    assert v.reason == v.why


@pytest.mark.parametrize("action", ["RESET_GPU", "HARDWARE_INSPECTION"])
def test_every_drain_class_action_drains(action: RepairAction) -> None:
    assert step(Ledger(), state("n1", actions=(action,))).action == "drain"


def test_dry_run_is_the_default_and_says_what_it_would_do() -> None:
    ledger = Ledger()
    v = step(ledger, state("n1"), policy=Policy())
    assert (v.action, v.outcome) == ("drain", "dry_run")
    back = step(ledger, state("n1", "Healthy", (), i=2), policy=Policy())
    assert (back.action, back.outcome) == ("resume", "dry_run")


def test_no_drain_class_action_is_skipped() -> None:
    v = step(Ledger(), state("n1", actions=("CHECK_USER_APP_AND_GPU",)))
    assert (v.action, v.outcome) == ("none", "skipped")


def test_healthy_again_resumes_what_gpuhealth_drained_and_only_when_every_fault_cleared() -> None:
    ledger = Ledger()
    first = step(ledger, state("n1", entity="GPU-aaaa"))
    second = step(ledger, state("n1", entity="GPU-bbbb", i=2), current=ours(first))
    assert (second.action, second.outcome) == ("none", "skipped")
    one_back = step(ledger, state("n1", "Healthy", (), entity="GPU-aaaa", i=3), current=ours(first))
    assert (one_back.action, one_back.outcome) == ("none", "skipped") and "GPU-bbbb" in one_back.why
    both_back = step(ledger, state("n1", "Healthy", (), entity="GPU-bbbb", i=4), current=ours(first))
    assert (both_back.action, both_back.outcome) == ("resume", "acted")
    assert ledger.owned == {} and ledger.faults == {}


def test_a_node_a_person_drained_first_is_neither_taken_nor_resumed() -> None:
    ledger = Ledger()
    human = NodeState(exists=True, drained=True, reason="bad fan, ticket 123")
    v = step(ledger, state("n1"), current=human)
    assert (v.action, v.outcome) == ("drain", "skipped") and "bad fan" in v.why
    back = step(ledger, state("n1", "Healthy", (), i=2), current=human)
    assert (back.action, back.outcome) == ("none", "skipped")
    assert ledger.owned == {}


def test_a_node_a_person_drained_again_after_gpuhealth_stays_drained() -> None:
    ledger = Ledger()
    step(ledger, state("n1"))
    human = NodeState(exists=True, drained=True, reason="RMA: swap the board")
    back = step(ledger, state("n1", "Healthy", (), i=2), current=human)
    assert (back.action, back.outcome) == ("resume", "skipped") and "RMA: swap the board" in back.why
    assert ledger.owned == {}, "not gpuhealth's any more: a later Healthy does not resume it either"


def test_a_node_drained_by_gpuhealth_before_a_crash_is_recognised_not_drained_twice() -> None:
    ledger = Ledger()
    earlier = NodeState(exists=True, drained=True, reason="gpuhealth: REBOOT_SYSTEM ... (health h1)")
    v = step(ledger, state("n1"), current=earlier)
    assert (v.action, v.outcome) == ("drain", "acted") and ledger.owned == {"n1": earlier.reason}


def test_an_unknown_node_is_skipped() -> None:
    v = step(Ledger(), state("n9"), current=NodeState(exists=False, drained=False))
    assert (v.action, v.outcome) == ("drain", "skipped") and "no node n9" in v.why


def test_the_breaker_refuses_drains_beyond_half_the_fleet_in_its_window_and_trips() -> None:
    ledger = Ledger()
    verdicts = [step(ledger, state(f"n{i}", i=i), now=float(i)) for i in (1, 2, 3)]
    assert [v.outcome for v in verdicts] == ["acted", "acted", "refused"]
    assert verdicts[2].why == "circuit breaker: 2 of 5 nodes drained in the last 300s, the limit is 50% (2)"
    assert ledger.tripped and set(ledger.owned) == {"n1", "n2"}
    later = step(ledger, state("n3", i=4), now=3.0 + 300.0)
    assert later.outcome == "acted" and not ledger.tripped


def test_the_rate_limit_refuses_more_drains_a_minute() -> None:
    ledger, policy = Ledger(), Policy(act=True, max_drains_per_minute=2)
    outcomes = [step(ledger, state(f"n{i}", i=i), policy=policy, fleet=100, now=float(i)).outcome for i in (1, 2, 3)]
    assert outcomes == ["acted", "acted", "refused"]
    assert not ledger.tripped, "a rate limit is not the breaker"
    assert step(ledger, state("n3", i=4), policy=policy, fleet=100, now=70.0).outcome == "acted"


def test_the_ledger_survives_a_round_trip_through_its_file_format() -> None:
    ledger = Ledger()
    step(ledger, state("n1"), now=12.5)
    again = msgspec.json.decode(msgspec.json.encode(ledger), type=Ledger)
    assert again == ledger and again.drains == [(12.5, "n1")]


@pytest.mark.parametrize("forged", ["n[1-500]", "n1,n2", "-h", "n1 State=RESUME", "", "n1\nn2", "n1;x"])
def test_a_forged_node_name_is_refused(forged: str) -> None:
    with pytest.raises(SchedulerError):
        node_name(forged)


def test_a_reason_is_one_line_of_plain_characters() -> None:
    assert slurm_reason("Xid 79\nState=RESUME \"x\" 'y' $(rm) `z`;|&") == "Xid 79 State_RESUME _x_ _y_ _(rm) _z____"
    assert len(slurm_reason("x" * 1000)) == 240


@pytest.mark.parametrize("health", ["Unknown", "Degraded"])
def test_a_state_that_is_not_healthy_again_never_resumes(health: str) -> None:
    ledger = Ledger()
    first = step(ledger, state("n1"))
    v = step(ledger, state("n1", health, (), i=2), current=ours(first))
    assert (v.action, v.outcome) == ("none", "skipped")
    assert ledger.owned == {"n1": first.reason}
    assert step(ledger, state("n1", "Healthy", (), i=3), current=ours(first)).action == "resume"


SWITCHES = Topology({"switch": {"leaf-1": ["n1", "n2", "n3", "n4"], "leaf-2": ["n5", "n6"]}, "rack": {"r1": ["n1"]}})


def test_a_burst_of_one_fault_behind_one_switch_is_one_fleet_incident_and_its_drains_are_held() -> None:
    ledger, policy = Ledger(), Policy(act=True, breaker_fraction=1.0, topology=SWITCHES)
    verdicts = [step(ledger, state(n, i=i), policy=policy, now=float(i), fleet=6) for i, n in enumerate(
        ["n1", "n5", "n2", "n3", "n4"], 1)]  # fmt: skip
    assert [v.outcome for v in verdicts] == ["acted", "acted", "acted", "held", "held"]
    assert verdicts[3].why == (
        "fleet incident: 3 nodes sharing switch leaf-1 report accelerator-nvidia-error-xid within 60s, "
        "a shared cause: drains held for a person (n1, n2, n3)"
    )
    incident = verdicts[4].incident
    assert incident is not None and (incident.kind, incident.group, incident.nodes) == (
        "switch", "leaf-1", ["n1", "n2", "n3", "n4"])  # fmt: skip
    assert incident.first == 4.0 and incident.last == 5.0, "one incident, growing"
    assert set(ledger.owned) == {"n1", "n5", "n2"}


def test_a_burst_releases_the_drains_gpuhealth_made_on_its_earlier_nodes_and_holds_every_node() -> None:
    ledger, policy = Ledger(), Policy(act=True, breaker_fraction=1.0, topology=SWITCHES)
    first = [step(ledger, state(n, i=i), policy=policy, now=float(i), fleet=6) for i, n in enumerate(["n1", "n2"], 1)]
    assert [v.outcome for v in first] == ["acted", "acted"]
    third = step(ledger, state("n3", i=3), policy=policy, now=3.0, fleet=6)
    assert (third.action, third.outcome, third.release) == ("drain", "held", ("n1", "n2"))
    assert third.incident is not None
    for node, drained in zip(("n1", "n2"), first, strict=True):
        v = release(ledger, node, ours(drained), third.incident, policy)
        assert (v.action, v.outcome) == ("resume", "held")
        assert v.why.startswith("gpuhealth's drain released: fleet incident: 3 nodes sharing switch leaf-1 ")
        record(ledger, node, v, 3.0, policy)
    held = dict.fromkeys(["n1", "n2", "n3"], f"switch:leaf-1:{XID}")
    assert ledger.owned == {} and ledger.held == held
    again = step(ledger, state("n1", i=4), policy=policy, now=200.0, fleet=6)
    assert (again.action, again.outcome) == ("drain", "held"), "held until a person acts, past the burst window"
    assert again.why == f"n1 is held for the fleet incident switch:leaf-1:{XID}: a person decides (set-healthy ends it)"
    back = step(ledger, state("n1", "Healthy", (), i=5), policy=policy, now=201.0, fleet=6)
    assert (back.action, back.outcome) == ("none", "skipped") and "n1" not in ledger.held
    assert step(ledger, state("n1", i=6), policy=policy, now=400.0, fleet=6).outcome == "acted", "no hold any more"


def test_a_released_drain_a_person_took_over_stays_drained_and_dry_run_releases_the_same() -> None:
    ledger, policy = Ledger(), Policy(act=True, breaker_fraction=1.0, topology=SWITCHES)
    step(ledger, state("n1"), policy=policy, fleet=6)
    step(ledger, state("n2", i=2), policy=policy, now=1.0, fleet=6)
    third = step(ledger, state("n3", i=3), policy=policy, now=2.0, fleet=6)
    assert third.incident is not None and third.release == ("n1", "n2")
    human = NodeState(exists=True, drained=True, reason="RMA: swap the board")
    v = release(ledger, "n1", human, third.incident, policy)
    assert (v.action, v.outcome) == ("resume", "skipped") and "RMA: swap the board" in v.why
    record(ledger, "n1", v, 2.0, policy)
    assert "n1" not in ledger.owned and "n1" not in ledger.held, "a person's node now, not gpuhealth's"
    dry = Policy(breaker_fraction=1.0, topology=SWITCHES)
    ledger = Ledger()
    for i, n in enumerate(["n1", "n2"], 1):
        step(ledger, state(n, i=i), policy=dry, now=float(i), fleet=6)
    burst = step(ledger, state("n3", i=3), policy=dry, now=3.0, fleet=6)
    assert burst.incident is not None and burst.release == ("n1", "n2")
    assert release(ledger, "n1", IDLE, burst.incident, dry).outcome == "held", "dry-run drained nothing: idle is ours"


def test_a_burst_keeps_a_node_drained_for_another_fault_too() -> None:
    ledger, policy = Ledger(), Policy(act=True, breaker_fraction=1.0, topology=SWITCHES)
    step(ledger, state("n1"), policy=policy, fleet=6)
    other = HealthState(**{**msgspec.structs.asdict(state("n1", i=2)), "component": "pcie", "entity": "x"})
    step(ledger, other, policy=policy, now=1.0, fleet=6, current=NodeState(True, True, ledger.owned["n1"]))
    step(ledger, state("n2", i=3), policy=policy, now=2.0, fleet=6)
    third = step(ledger, state("n3", i=4), policy=policy, now=3.0, fleet=6)
    assert third.release == ("n2",), "n1 stays drained: its pcie fault holds it, no burst"


def test_faults_spread_in_time_or_of_other_kinds_are_no_burst() -> None:
    ledger, policy = Ledger(), Policy(act=True, breaker_fraction=1.0, topology=SWITCHES)
    slow = [step(ledger, state(n, i=i), policy=policy, now=i * 61.0, fleet=6).outcome for i, n in enumerate(
        ["n1", "n2", "n3"], 1)]  # fmt: skip
    assert slow == ["acted", "acted", "acted"]
    ledger = Ledger()
    mixed = [step(ledger, HealthState(**{**msgspec.structs.asdict(state(n, i=i)), "component": c}), policy=policy,
                  now=float(i), fleet=6).outcome for i, (n, c) in enumerate(
        [("n1", "a"), ("n2", "b"), ("n3", "c")], 1)]  # fmt: skip
    assert mixed == ["acted", "acted", "acted"]


def test_the_rate_limit_holds_with_a_breaker_window_shorter_than_its_minute() -> None:
    ledger, policy = Ledger(), Policy(act=True, max_drains_per_minute=2, breaker_window_s=10.0)
    outcomes = [step(ledger, state(f"n{i}", i=i), policy=policy, fleet=100, now=i * 20.0).outcome for i in (1, 2, 3)]
    assert outcomes == ["acted", "acted", "refused"]


def test_inventory_groups_name_the_driver_and_gpu_model() -> None:
    inv = Inventory(id="i", time=1, cluster="c", node="n1", source="nvml", component="inventory", driver_version="550.54",
                    gpus=[GpuInfo(index=0, pci_bus_id="0000:04:00.0", name="NVIDIA H100 80GB HBM3")])  # fmt: skip
    assert inventory_groups(inv, ("driver", "gpu-model")) == [
        ("driver", "550.54"),
        ("gpu-model", "NVIDIA H100 80GB HBM3"),
    ]
    assert inventory_groups(inv, ("driver",)) == [("driver", "550.54")]
    assert inventory_groups(Inventory(id="i", time=1, cluster="c", node="n1", source="nvml", component="inventory"),
                            ("driver", "gpu-model")) == []  # fmt: skip


def test_a_burst_on_one_driver_version_is_held_like_one_behind_a_switch() -> None:
    ledger, policy = Ledger(), Policy(act=True, breaker_fraction=1.0, inventory_groups=("driver",))
    labels = {n: [("driver", "550.54")] for n in ("n1", "n2", "n3")} | {"n4": [("driver", "560.28")]}
    outcomes = [decide(ledger, state(n, i=i), IDLE, policy, 10, float(i), labels) for i, n in enumerate(
        ["n1", "n4", "n2", "n3"], 1)]  # fmt: skip
    assert [v.outcome for v in outcomes] == ["acted", "acted", "acted", "held"]
    assert "sharing driver 550.54" in outcomes[3].why


def test_the_breaker_also_caps_each_rack_of_the_topology() -> None:
    racks = Topology({"rack": {"r1": ["n1", "n2", "n3", "n4"], "r2": ["n5", "n6", "n7", "n8"]}})
    ledger, policy = Ledger(), Policy(act=True, topology=racks, burst_nodes=0)
    verdicts = [step(ledger, state(n, i=i), policy=policy, now=float(i), fleet=100) for i, n in enumerate(
        ["n1", "n2", "n3", "n5"], 1)]  # fmt: skip
    assert [v.outcome for v in verdicts] == ["acted", "acted", "refused", "acted"]
    assert verdicts[2].why == "circuit breaker: 2 of 4 nodes of rack r1 drained in the last 300s, the limit is 50% (2)"
    assert ledger.tripped is False, "the last drain went through: the breaker closed"
