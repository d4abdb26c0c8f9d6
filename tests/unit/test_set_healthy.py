"""An operator's SetHealthy: it clears the non-Healthy states of the component (and entity) it names, nothing
else, once, and the state says who did it and why in the operator's own words."""

from __future__ import annotations

import itertools

from gpuhealth.events import KernelEvent, NvmlEvent, SetHealthy
from rules.catalog import load
from rules.state import NodeState
from tests.unit.rules_run import run

CAT = load()
A, B = "0000:04:00.0", "0000:05:00.0"
XID, ECC = "accelerator-nvidia-error-xid", "accelerator-nvidia-ecc"
_n = itertools.count(1)


def xid(pci: str) -> KernelEvent:
    return KernelEvent(id=f"k{next(_n)}", time=next(_n) * 10**9, cluster="c", node="n", boot_id="b1", source="kmsg",
                       component=XID, kind="xid", xid=79, pci_bus_id=pci, message="m")  # fmt: skip


def dbe(pci: str) -> NvmlEvent:
    return NvmlEvent(id=f"n{next(_n)}", time=next(_n) * 10**9, cluster="c", node="n", boot_id="b1", source="nvml",
                     component="nvml", kind="ecc_dbe", pci_bus_id=pci)  # fmt: skip


def healthy(
    entity: str | None, user: str | None = "alice", reason: str = "GPU replaced", target: str = XID
) -> SetHealthy:
    return SetHealthy(id=f"op{next(_n)}", time=next(_n) * 10**9, cluster="c", node="n", boot_id="b1", source="gpuctl",
                      component="operator", target_component=target, entity=entity, user=user, reason=reason)  # fmt: skip


def healths(state: NodeState) -> dict[tuple[str, str], str]:
    return {(cs.component, cs.entity): cs.health for cs in state.states.values()}


def test_set_healthy_clears_the_named_component_and_entity_only_and_only_once() -> None:
    state, _ = run([xid(A), xid(B), dbe(A)])
    state, out = run([healthy(A)], state)
    assert [(o.component, o.entity, o.reason) for o in out] == [(XID, A, "set healthy by alice: GPU replaced")]
    assert healths(state) == {(XID, A): "Healthy", (XID, B): "Unhealthy", (ECC, A): "Unhealthy"}
    state, out = run([healthy(None, reason="both boards swapped in RMA 4471-X")], state)  # every entity of it
    assert [(o.entity, o.reason) for o in out] == [(B, "set healthy by alice: both boards swapped in RMA 4471-X")]
    _, out = run([healthy(None), healthy(A)], state)
    assert out == []  # nothing left to clear


def test_set_healthy_without_a_user_or_a_reason_says_what_it_knows() -> None:
    state, _ = run([xid(A), xid(B)])
    _, out = run([healthy(A, user=None), healthy(B, reason="")], state)
    assert [o.reason for o in out] == ["set healthy by an operator: GPU replaced", "set healthy by alice"]
