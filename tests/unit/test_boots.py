"""Boots as evidence: the current boot is the one that began last, and never moves backwards."""

from __future__ import annotations

from gpuhealth.events import Event, KernelEvent, SourceStatus
from rules.boots import CLOCK_SLACK_NS, IDENTITY_COMPONENT
from rules.catalog import load
from rules.engine import apply_all
from rules.state import NodeState

CAT = load()
PCI = "0000:04:00.0"
S = 10**9
T0 = 1_700_000_000 * S  # boot b1 began here; b2 an hour later
BOOTS = {"b1": T0, "b2": T0 + 3600 * S}


def xid(i: int, code: int, boot: str, at: int, boot_time: int | None = None, machine: str = "m1") -> KernelEvent:
    return KernelEvent(id=f"x{i}", time=at, cluster="c", node="n", machine_id=machine, boot_id=boot,
                       boot_time=BOOTS.get(boot, 0) if boot_time is None else boot_time, source="kmsg",
                       component="accelerator-nvidia-error-xid", kind="xid", xid=code, pci_bus_id=PCI, message="m")  # fmt: skip


def status(i: int, boot: str, at: int, machine: str = "m1", boot_time: int | None = None) -> SourceStatus:
    return SourceStatus(id=f"s{i}", time=at, cluster="c", node="n", machine_id=machine, boot_id=boot,
                        boot_time=BOOTS.get(boot, 0) if boot_time is None else boot_time, source="kmsg",
                        component="kernel-log", available=True)  # fmt: skip


def run(events: list[Event]) -> NodeState:
    state: NodeState | None = None
    for ev in events:
        state, _, _ = apply_all(state, ev, CAT)
    assert state is not None
    return state


def gpu(state: NodeState) -> tuple[str, list[str]]:
    cs = state.states[f"accelerator-nvidia-error-xid\x1f{PCI}"]
    return cs.health, list(cs.actions)


def test_a_late_word_of_the_previous_boot_does_not_turn_the_current_boot_back() -> None:
    b2 = BOOTS["b2"]
    state = run([
        status(1, "b2", b2 + 10 * S),
        xid(2, 13, "b1", b2 - 5 * S),  # delivered late: it happened before the reboot
        xid(3, 79, "b2", b2 + 20 * S),  # a genuine fault of the current boot
    ])  # fmt: skip
    assert (state.boot_id, state.boot_time) == ("b2", b2)
    assert gpu(state) == ("Unhealthy", ["REBOOT_SYSTEM"])


def test_an_event_of_an_unknown_or_malformed_boot_is_history_counted_and_clearing_nothing() -> None:
    b1 = BOOTS["b1"]
    state = run([
        xid(1, 79, "b1", b1 + 10 * S),
        xid(2, 79, "bX", b1 + 20 * S, boot_time=0),  # a boot whose start is not known
        xid(3, 79, "bY", b1 + 30 * S, boot_time=b1 + 60 * S),  # began after its own event: malformed
    ])  # fmt: skip
    assert (state.boot_id, state.boot_time, state.past_boots) == ("b1", b1, [])
    assert gpu(state) == ("Unhealthy", ["REBOOT_SYSTEM"])
    (fault,) = state.faults.values()
    assert fault.count == 3  # stored and counted all the same


def test_a_boot_that_began_later_is_a_reboot_and_clears_reboot_class_states() -> None:
    state = run([xid(1, 79, "b1", BOOTS["b1"] + S), status(2, "b2", BOOTS["b2"] + S)])
    assert gpu(state) == ("Healthy", []) and state.boot_id == "b2" and state.past_boots == ["b1"]


def test_two_agents_claiming_one_node_are_a_conflict_not_a_reboot_each_time() -> None:
    now = BOOTS["b2"] + CLOCK_SLACK_NS + 10 * S  # both alive: each speaks after the other began
    state = run([
        xid(1, 79, "b1", now, machine="m1"),
        status(2, "b2", now + S, machine="m2"),  # looks like a reboot: nothing tells them apart yet
        xid(3, 79, "b1", now + 2 * S, machine="m1"),  # b1 alive while b2 is current
        status(4, "b2", now + 3 * S, machine="m2"),
        xid(5, 79, "b1", now + 4 * S, machine="m1"),
    ])  # fmt: skip
    conflict = state.states[f"{IDENTITY_COMPONENT}\x1fn"]
    assert conflict.health == "Unhealthy" and conflict.reason.startswith("node identity conflict")
    assert "b1" in conflict.reason and "b2" in conflict.reason
    assert (state.boot_id, state.machine_id) == ("b2", "m2")  # current never moved back
    # A genuine reboot later does not clear the conflict: a person must.
    state, _, _ = apply_all(state, status(6, "b3", now + 5 * S, machine="m2", boot_time=now), CAT)
    assert state.boot_id == "b3" and state.states[f"{IDENTITY_COMPONENT}\x1fn"].health == "Unhealthy"


def test_an_older_boot_heard_within_five_minutes_of_the_new_one_is_a_late_word_after_that_a_conflict() -> None:
    b2 = BOOTS["b2"]
    slack = 300 * S  # a clock stepped at boot: the old boot's last words may look this much newer
    calm = run([status(1, "b2", b2 + S), xid(2, 79, "b1", b2 + slack)])
    assert f"{IDENTITY_COMPONENT}\x1fn" not in calm.states
    state = run([status(1, "b2", b2 + S, machine="m2"), xid(2, 79, "b1", b2 + slack + 1, machine="m1")])
    conflict = state.states[f"{IDENTITY_COMPONENT}\x1fn"]
    assert (conflict.health, conflict.reason) == (
        "Unhealthy", "node identity conflict: boot b1 of machine m1 is active while boot b2 of machine m2 is the current one"
    )  # fmt: skip
    unnamed = run([status(1, "b2", b2 + S, machine=""), xid(2, 79, "boot-one-long-id", b2 + slack + 1, machine="")])
    assert unnamed.states[f"{IDENTITY_COMPONENT}\x1fn"].reason == (
        "node identity conflict: boot boot-one is active while boot b2 is the current one"
    )
    long_ids = run([
        status(1, "boot-two-long-id", b2 + S, machine="machine-two", boot_time=b2),
        xid(2, 79, "boot-one-long-id", b2 + slack + 1, machine="machine-one"),
    ])  # fmt: skip
    assert long_ids.states[f"{IDENTITY_COMPONENT}\x1fn"].reason == (
        "node identity conflict: boot boot-one of machine machine- is active while boot boot-two of machine machine- "
        "is the current one"
    )  # ids cut to 8 characters


def test_a_boots_start_is_learnt_from_a_newer_agent_and_never_moves_back_within_the_boot() -> None:
    state = run([status(1, "b1", T0 + 10 * S, boot_time=0)])  # an older agent: the start is not known
    assert state.boot_time == 0
    state = run([status(1, "b1", T0 + 10 * S, boot_time=0), status(2, "b1", T0 + 20 * S)])
    assert state.boot_time == T0
    state = run([status(1, "b1", T0 + 10 * S), status(2, "b1", T0 + 20 * S, boot_time=T0 - 100 * S)])
    assert state.boot_time == T0, "an earlier start said later (a clock stepped back) is not the boot's start"


def test_a_start_after_its_own_event_is_no_start_and_a_boot_begun_with_the_current_one_is_no_reboot() -> None:
    implausible = T0 + 500 * S  # after the event that claims it
    assert run([status(1, "b1", T0 + 10 * S, boot_time=implausible)]).boot_time == 0, "the first boot seen"
    rebooted = run([status(1, "b1", T0 + 10 * S, boot_time=0), status(2, "b2", T0 + 20 * S, boot_time=implausible)])
    assert (rebooted.boot_id, rebooted.boot_time) == ("b2", 0), "a boot not seen before: a reboot, start unknown"
    rebooted = run([status(1, "b1", T0 + 10 * S), status(2, "b2", BOOTS["b2"] + 10 * S)])
    assert (rebooted.boot_id, rebooted.boot_time) == ("b2", BOOTS["b2"])
    twin = run([xid(1, 79, "b1", T0 + 10 * S), status(2, "b2", T0 + 20 * S, boot_time=T0)])
    assert twin.boot_id == "b1" and gpu(twin) == ("Unhealthy", ["REBOOT_SYSTEM"]), "the same start: not newer"


def test_a_boot_whose_first_event_is_at_its_very_start_has_a_known_start() -> None:
    """kmsg's first record of a boot (usec 0) is stamped with the boot's start itself."""
    first = run([xid(1, 79, "b1", T0)])
    assert first.boot_time == T0
    state = run([xid(1, 79, "b1", T0), status(2, "b0", T0 + 10 * S, boot_time=T0 - 100 * S)])
    assert state.boot_id == "b1" and gpu(state) == ("Unhealthy", ["REBOOT_SYSTEM"]), "an older boot's word: history"


def test_a_reboot_clears_what_it_clears_once_says_which_boot_and_leaves_unknown_unknown() -> None:
    b2 = "0f6b4cbb-1c4d-4a55-9b0e-6e3c1d2d1b2a"
    nvml_down = SourceStatus(id="s3", time=T0 + 30 * S, cluster="c", node="n", machine_id="m1", boot_id="b1",
                             boot_time=T0, source="nvml", component="nvml", available=False)  # fmt: skip
    state: NodeState | None = None
    for ev in [status(1, "b1", T0 + 10 * S), xid(2, 79, "b1", T0 + 20 * S), nvml_down]:
        state, _, _ = apply_all(state, ev, CAT)
    state, out, _ = apply_all(state, status(4, b2, T0 + 4000 * S, boot_time=T0 + 3600 * S), CAT)
    assert [(o.component, o.health, o.reason) for o in out] == [
        ("accelerator-nvidia-error-xid", "Healthy", "cleared by reboot (boot 0f6b4cbb)"),
    ]  # kernel-log was Healthy already; nvml is Unknown until its source says otherwise
    assert state.states["nvml\x1fn"].health == "Unknown"
