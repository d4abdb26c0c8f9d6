"""What one event makes the rules publish, and what each published state carries.

An event that arrives on a new boot both clears the states a reboot clears and raises its own: both go out,
whatever kind of event it is (a lost "cleared by reboot" would leave a fixed GPU drained in every reader).
A state names its cluster, machine, boot and the event that set it, and its id is its own: another node,
component, entity or event never shares it (the sink stores a state once per id)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
import pytest

from gpuhealth.events import CheckResult, HealthState, HostEvent, NvmlEvent, SetHealthy, Verification
from rules.engine import apply_all
from rules.state import NodeState
from tests.unit.test_rules_table import CAT, GPU, kernel

XID = "accelerator-nvidia-error-xid"
MIN = 60 * 10**9
OTHER = "0000:3b:00.0"

ON_B2: dict[str, Callable[[], Any]] = {
    "kernel": lambda: kernel("xid", 10, "b2", xid=13, pci_bus_id=OTHER),
    "nvml": lambda: NvmlEvent(id="v", time=10 * MIN, cluster="c", node="n1", boot_id="b2", source="nvml",
                              component="nvml", kind="ecc_dbe", pci_bus_id=OTHER),
    "host": lambda: HostEvent(id="h", time=10 * MIN, cluster="c", node="n1", boot_id="b2", source="sysfs",
                              component="pci", kind="aer", entity=OTHER, pci_bus_id=OTHER, counts={"fatal": 1},
                              message="aer"),
    "set_healthy": lambda: SetHealthy(id="op", time=10 * MIN, cluster="c", node="n1", boot_id="b2",
                                      source="gpuctl", component="operator", target_component="disk",
                                      entity="n1", user="ops", reason="fixed"),
    "check": lambda: CheckResult(id="ck", time=10 * MIN, cluster="c", node="n1", boot_id="b2", source="checks",
                                 component="custom-nccl", plugin_type="component", trigger="interval",
                                 exit_code=1, output="bandwidth low"),
    "verification": lambda: Verification(id="vf", time=10 * MIN, cluster="c", node="n1", boot_id="b2",
                                         source="checks", component="verification", changes=["reboot"],
                                         status="failed", checks={"custom-nccl": "Unhealthy"}),
}  # fmt: skip


def outputs(events: list[Any]) -> tuple[NodeState, list[HealthState]]:
    state: NodeState | None = None
    out: list[HealthState] = []
    for ev in events:
        state, o, _ = apply_all(state, ev, CAT)
        out = o  # the last event's
    assert state is not None
    return state, out


@pytest.mark.parametrize("kind", list(ON_B2))
def test_an_event_on_a_new_boot_publishes_the_reboot_s_clearing_and_its_own_states(kind: str) -> None:
    before = [
        kernel("xid", 0, "b1", xid=79, pci_bus_id=GPU),  # reboot-class: a reboot clears it
        kernel("fs_readonly", 1, "b1"),  # the disk, for the operator's set-healthy
    ]
    _, out = outputs([*before, ON_B2[kind]()])
    cleared = [s for s in out if (s.component, s.entity) == (XID, GPU)]
    assert [(s.health, s.reason[:16]) for s in cleared] == [("Healthy", "cleared by reboo")]
    own = [s for s in out if (s.component, s.entity) != (XID, GPU)]
    assert own, f"{kind}: only the reboot's clearing went out"


def test_a_state_names_its_cluster_machine_boot_event_and_speaker() -> None:
    ev = msgspec.structs.replace(kernel("xid", 0, "b1", xid=79, pci_bus_id=GPU), cluster="east", machine_id="m-7")
    _, [s] = outputs([ev])
    assert (s.cluster, s.machine_id, s.boot_id, s.source, s.event_ids) == ("east", "m-7", "b1", "rules", [ev.id])


def state_id(node: str = "n1", kind: str = "xid", pci: str = GPU, ev_id: str = "e1") -> str:
    ev = kernel(kind, 0, "b1", xid=79 if kind == "xid" else None, pci_bus_id=pci)
    ev = msgspec.structs.replace(ev, node=node, id=ev_id, time=5 * MIN)
    _, [s] = outputs([ev])
    return s.id


def test_a_state_s_id_is_its_own() -> None:
    one = state_id()
    assert one == state_id()  # deterministic: a replay publishes the same id
    others = [state_id(node="n2"), state_id(kind="gsp"), state_id(pci=OTHER), state_id(ev_id="e2")]
    assert len({one, *others}) == 5
