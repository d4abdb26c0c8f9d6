"""What NVML's events become in the rules: an event is what its kind says, an NVML Xid is judged like the
kernel log's, and one from a boot the node already left is history."""

from __future__ import annotations

import itertools

from gpuhealth.events import Event, HealthState, NvmlEvent, SourceStatus
from rules.catalog import load
from rules.engine import apply
from rules.state import NodeState

CAT = load()
PCI = "0000:04:00.0"
S = 10**9
T0 = 1_700_000_000 * S  # boot b1 began here, b2 an hour later
BOOTS = {"b1": T0, "b2": T0 + 3600 * S}
XID = "accelerator-nvidia-error-xid"
_n = itertools.count(1)


def nvml(kind: str, at: int, *, boot: str = "b1", xid: int | None = None, data: int = 0) -> NvmlEvent:
    return NvmlEvent(id=f"n{next(_n):06d}", time=at, cluster="c", node="n", boot_id=boot, boot_time=BOOTS[boot],
                     source="nvml", component="nvml", kind=kind, pci_bus_id=PCI, xid=xid, data=data)  # fmt: skip


def run(events: list[Event], state: NodeState | None = None) -> tuple[NodeState, list[HealthState]]:
    out: list[HealthState] = []
    for ev in events:
        state, o = apply(state, ev, CAT)
        out += o
    assert state is not None
    return state, out


def test_nvml_events_no_rule_judges_are_stored_not_states_whatever_code_they_carry() -> None:
    at = T0 + 10 * S
    state, out = run([
        nvml("power_source", at, data=1),
        nvml("power_source", at + S, xid=79, data=79),  # a foreign producer's code on a kind that has none
        nvml("event_4096", at + 2 * S, data=7),  # an event type this agent has no name for
        nvml("slowdown", at + 3 * S, data=0),  # an older agent's clock event: no slowdown reason in it
    ])  # fmt: skip
    assert out == []
    assert state.states == {} and state.faults == {}


def test_an_nvml_xid_154_with_no_text_takes_the_catalogs_action() -> None:
    # NVML hands over the code alone: the recovery action the kernel line names is not there to read.
    state, out = run([nvml("xid", T0 + 10 * S, xid=154, data=154)])
    assert [(o.component, o.entity, o.health, o.repair_actions) for o in out] == [
        (XID, PCI, "Unhealthy", ["RESET_GPU"])
    ]


def test_an_nvml_xid_of_a_boot_already_left_does_not_reopen() -> None:
    b2 = BOOTS["b2"]
    up = SourceStatus(id="s1", time=b2 + 10 * S, cluster="c", node="n", boot_id="b2", boot_time=b2, source="kmsg",
                      component="kernel-log", available=True)  # fmt: skip
    state, out = run([nvml("xid", T0 + 10 * S, xid=79, data=79), up])
    assert state.states[f"{XID}\x1f{PCI}"].health == "Healthy"  # the reboot cleared it
    state, out = run([nvml("xid", b2 - 5 * S, xid=79, data=79)], state)  # delivered late, from before the reboot
    assert out == []
    assert state.states[f"{XID}\x1f{PCI}"].health == "Healthy"
