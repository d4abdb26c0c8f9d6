"""Which boot of a node an event speaks for: the current one, a newer one (a reboot), or history.

A boot is known by its start time (``boot_time``, from /proc/stat btime), carried on events: the
current boot is the one that began last, and "current" never moves backwards. An event of another
boot that did not begin later (an older boot's late word, a boot whose start is unknown, or one that
claims to begin after its own event) is history: its faults are stored and counted, it clears
nothing. A state whose boots carry no start time (older agents) keeps the old rule: a boot not seen
before is a reboot.

Two agents that claim one node (a copied machine image, a node name given twice) each speak for a
boot that is alive while the other is current: reported as its own Unhealthy state.
"""

from __future__ import annotations

from gpuhealth.events import Event, HealthState
from rules.catalog import REBOOT_CLEARS
from rules.state import MAX_BOOTS, NodeState
from rules.transitions import raise_state, set_state

IDENTITY_COMPONENT = "gpuhealth-node-identity"
# One machine's clock may be stepped at boot: the last words of its previous boot can look this much
# newer than the new boot's start without anything being wrong.
CLOCK_SLACK_NS = 300 * 10**9


def boot_change(state: NodeState, event: Event) -> tuple[list[HealthState], bool]:
    """The state changes the event's boot makes (a reboot's clearing, an identity conflict), and
    whether the event is history (a boot other than the current one)."""
    if not event.boot_id or event.boot_id == state.boot_id:
        if event.boot_id and event.boot_time > state.boot_time and _plausible(event):
            state.boot_time = event.boot_time  # the current boot's start, learnt from a newer agent
        return [], False
    if not state.boot_id:  # the first boot seen
        state.boot_id, state.boot_time = event.boot_id, event.boot_time if _plausible(event) else 0
        return [], False
    if state.boot_time:
        newer = event.boot_time > state.boot_time and _plausible(event)
    else:
        newer = event.boot_id not in state.past_boots
    if not newer:
        return _conflict(state, event), True
    state.past_boots.append(state.boot_id)
    del state.past_boots[:-MAX_BOOTS]
    state.boot_id, state.boot_time = event.boot_id, event.boot_time if _plausible(event) else 0
    out = []
    for cs in state.states.values():
        sticky = cs.component == IDENTITY_COMPONENT or bool(cs.actions and cs.actions[0] not in REBOOT_CLEARS)
        if cs.health not in ("Healthy", "Unknown") and not sticky:
            out.append(set_state(state, event, cs, "Healthy", f"cleared by reboot (boot {event.boot_id[:8]})", []))
    return out, False


def _plausible(event: Event) -> bool:
    """A boot's start is known and before the event it says happened during it."""
    return 0 < event.boot_time <= event.time


def _conflict(state: NodeState, event: Event) -> list[HealthState]:
    """An event of a non-current boot that happened after the current boot began: two boots alive."""
    if not state.boot_time or event.time <= state.boot_time + CLOCK_SLACK_NS:
        return []  # a late word of a boot that ended (or nothing to tell it by)
    other = f"boot {event.boot_id[:8]}" + (f" of machine {event.machine_id[:8]}" if event.machine_id else "")
    current = f"boot {state.boot_id[:8]}" + (f" of machine {state.machine_id[:8]}" if state.machine_id else "")
    reason = f"node identity conflict: {other} is active while {current} is the current one"
    return raise_state(state, event, IDENTITY_COMPONENT, state.node, "Unhealthy", [], reason, "identity", None)
