"""Where a boot's start comes from, and when it is believed: the start orders boots, so a wrong one would clear
states on a boot that is not new, or keep them through a real reboot.

A start is believed only when it is plausible (known, and not after the event that names it), it is learnt for
the current boot from a newer agent's events, and it never moves backwards. Another boot that claims the very
start the current one has is not a newer boot."""

from __future__ import annotations

import msgspec

from tests.unit.test_boots import BOOTS, IDENTITY_COMPONENT, S, gpu, run, status, xid

B1, B2 = BOOTS["b1"], BOOTS["b2"]


def test_the_current_boot_s_start_is_learnt_from_a_newer_agent_and_orders_the_next_boot() -> None:
    # an older agent sent no start; then b1's start arrives; then an event of a boot that began before it
    state = run([
        xid(1, 79, "b1", B1 + 60 * S, boot_time=0),
        status(2, "b1", B1 + 70 * S),
        xid(3, 13, "b0", B1 + 80 * S, boot_time=B1 - 3600 * S),  # an older boot: history, no reboot
    ])  # fmt: skip
    assert state.boot_time == B1
    assert gpu(state) == ("Unhealthy", ["REBOOT_SYSTEM"])


def test_the_start_never_moves_backwards() -> None:
    state = run([
        status(1, "b1", B1 + 10 * S),
        status(2, "b1", B1 + 20 * S, boot_time=B1 - 100 * S),  # a skewed agent of the same boot
        xid(3, 79, "b1", B1 + 30 * S),
        xid(4, 13, "b2", B1 + 40 * S, boot_time=B1 - 50 * S),  # began before b1: not a reboot
    ])  # fmt: skip
    assert state.boot_time == B1
    assert gpu(state) == ("Unhealthy", ["REBOOT_SYSTEM"])


def test_an_event_that_names_no_boot_teaches_no_start() -> None:
    state = run([
        xid(1, 79, "b1", B1 + 10 * S),
        msgspec.structs.replace(status(2, "b1", B2 + 60 * S), boot_id="", boot_time=B2 + 30 * S),
        xid(3, 13, "b2", B2 + 90 * S),  # b2 began after b1: a reboot, which clears the reboot-class state
    ])  # fmt: skip
    assert (state.boot_id, state.boot_time) == ("b2", B2)
    assert gpu(state)[0] == "Degraded"  # Xid 13 of the new boot, the Xid 79 cleared


def test_an_implausible_first_start_is_not_believed_and_the_next_boot_is_still_a_reboot() -> None:
    future = B2 + 10 * 3600 * S  # a start after the event itself: garbage, or a clock gone wrong
    state = run([xid(1, 79, "b1", B1 + 10 * S, boot_time=future), xid(2, 13, "b2", B2 + 10 * S)])
    assert (state.boot_id, state.boot_time) == ("b2", B2)
    assert gpu(state)[0] == "Degraded"


def test_an_implausible_start_of_a_new_boot_is_not_kept() -> None:
    """With no start known, a boot not seen before is the newer one; its implausible start is not kept."""
    state = run([xid(1, 79, "b1", B1 + 10 * S, boot_time=0), xid(2, 13, "b2", B2 + 10 * S, boot_time=B2 + 3600 * S)])
    assert (state.boot_id, state.boot_time) == ("b2", 0)


def test_another_boot_claiming_the_current_start_is_no_reboot() -> None:
    state = run([xid(1, 79, "b1", B1 + 10 * S), xid(2, 13, "b9", B1 + 20 * S, boot_time=B1)])
    assert state.boot_id == "b1" and gpu(state) == ("Unhealthy", ["REBOOT_SYSTEM"])


def test_after_a_reboot_the_new_start_still_tells_a_second_agent_of_the_old_boot() -> None:
    """b1 rebooted into b2; an agent still sending for b1 well after b2 began is two boots alive at once."""
    state = run([
        status(1, "b1", B1 + 10 * S),
        status(2, "b2", B2 + 10 * S),
        xid(3, 13, "b1", B2 + 3600 * S, machine="m2"),
    ])  # fmt: skip
    assert state.states[f"{IDENTITY_COMPONENT}\x1fn"].health == "Unhealthy"
