"""Rules for custom checks and hardware verification: what each run or verification means for its component.

Pure: each function returns the state its (component, entity) should have now;
the engine compares it with the current one and publishes a change. A check's
result is a condition (its latest run stands), judged the way GPUd judges a
plugin (``CheckResult.verdict``); the actions the parser suggested are the
repair actions of an Unhealthy run, strongest first, and suggestions that are
not actions gpuhealth knows are named in the reason instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast, get_args

from gpuhealth.events import CheckResult, Health, RepairAction, Verification
from rules.catalog import ACTION_RANK

KNOWN_ACTIONS = frozenset(get_args(RepairAction))
VERIFICATION = "verification"


@dataclass(frozen=True)
class Decision:
    component: str
    entity: str
    health: Health
    reason: str
    actions: list[RepairAction]


def check(ev: CheckResult) -> Decision:
    health, reason = ev.verdict()
    actions: list[RepairAction] = []
    if health != "Healthy":
        known = sorted(
            (a for a in ev.suggested_actions if a in KNOWN_ACTIONS), key=ACTION_RANK.__getitem__, reverse=True
        )
        actions = [cast(RepairAction, a) for a in known]
        unknown = sorted(a for a in ev.suggested_actions if a not in KNOWN_ACTIONS)
        if unknown:
            reason += f" (suggested {', '.join(unknown)}: not a repair action gpuhealth knows)"
    if ev.plugin_type == "init":
        reason = f"init check: {reason}"
    return Decision(ev.component, ev.node, health, reason, actions)


def verification(ev: Verification) -> Decision:
    changed = "; ".join(ev.changes)
    failed = sorted(name for name, health in ev.checks.items() if health != "Healthy")
    if ev.status == "running":
        return Decision(VERIFICATION, ev.node, "Degraded", f"hardware changed ({changed}): verifying", [])
    if ev.status == "failed":  # not cleared by a reboot: the agent verifies again after one
        why = f"verification failed ({', '.join(failed)}) after: {changed}"
        return Decision(VERIFICATION, ev.node, "Degraded", why, ["HARDWARE_INSPECTION"])
    if ev.status == "passed":
        why = f"verified by {', '.join(sorted(ev.checks))} after: {changed}"
        return Decision(VERIFICATION, ev.node, "Healthy", why, [])
    return Decision(VERIFICATION, ev.node, "Healthy", f"hardware changed ({changed}); no checks tagged verify", [])
