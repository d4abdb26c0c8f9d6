"""Events through the rules engine in order, with the shipped catalog: the engine tests' one way in."""

from __future__ import annotations

from gpuhealth.events import Event, HealthState
from rules.catalog import load
from rules.engine import apply
from rules.state import NodeState


def run(events: list[Event], state: NodeState | None = None) -> tuple[NodeState, list[HealthState]]:
    out: list[HealthState] = []
    for ev in events:
        state, o = apply(state, ev, load())
        out += o
    assert state is not None
    return state, out
