"""What NVML's events become in the rules: an event is what its kind says, a fault is a state of its GPU in the
producer's words (once), an NVML Xid is judged like the kernel log's, and one from a boot the node left is history."""

from __future__ import annotations

import itertools

import pytest

from gpuhealth.events import Event, NvmlEvent, SourceStatus
from rules.catalog import load
from tests.unit.rules_run import run

CAT = load()
PCI = "0000:04:00.0"
S = 10**9
T0 = 1_700_000_000 * S  # boot b1 began here, b2 an hour later
BOOTS = {"b1": T0, "b2": T0 + 3600 * S}
XID, ECC, HUNG = "accelerator-nvidia-error-xid", "accelerator-nvidia-ecc", "accelerator-nvidia-nvml"
HOT, SLOW = "accelerator-nvidia-temperature", "accelerator-nvidia-hw-slowdown"
_n = itertools.count(1)


def nvml(kind: str, at: int, *, boot: str = "b1", xid: int | None = None, data: int = 0, message: str = "",
         pci: str | None = PCI) -> NvmlEvent:  # fmt: skip
    return NvmlEvent(id=f"n{next(_n):06d}", time=at, cluster="c", node="n", boot_id=boot, boot_time=BOOTS[boot],
                     source="nvml", component="nvml", kind=kind, pci_bus_id=pci, xid=xid, data=data,
                     message=message)  # fmt: skip


def each(kind: str, n: int, step_s: int, message: str = "") -> list[Event]:
    return [nvml(kind, T0 + (10 + i * step_s) * S, data=1, message=message) for i in range(n)]


def test_nvml_events_no_rule_judges_are_stored_not_states_whatever_code_they_carry() -> None:
    at = T0 + 10 * S
    state, out = run([
        nvml("power_source", at, data=1),
        nvml("power_source", at + S, xid=79, data=79),  # a foreign producer's code on a kind that has none
        nvml("event_4096", at + 2 * S, data=7),  # an event type this agent has no name for
        nvml("slowdown", at + 3 * S, data=0, message="ended"),  # a slowdown that ended
    ])  # fmt: skip
    assert out == []
    assert state.states == {} and state.faults == {}


def test_an_nvml_xid_154_with_no_text_takes_the_catalogs_action() -> None:
    # NVML hands over the code alone: the recovery action the kernel line names is not there to read.
    state, out = run([nvml("xid", T0 + 10 * S, xid=154, data=154)])
    assert [(o.component, o.entity, o.health, o.repair_actions) for o in out] == [
        (XID, PCI, "Unhealthy", ["RESET_GPU"])
    ]


@pytest.mark.parametrize("kind", ["xid", "ecc_dbe"])
def test_an_nvml_fault_of_a_boot_already_left_does_not_reopen(kind: str) -> None:
    b2 = BOOTS["b2"]
    up = SourceStatus(id="s1", time=b2 + 10 * S, cluster="c", node="n", boot_id="b2", boot_time=b2, source="kmsg",
                      component="kernel-log", available=True)  # fmt: skip
    key = f"{XID if kind == 'xid' else ECC}\x1f{PCI}"
    state, out = run([nvml(kind, T0 + 10 * S, xid=79 if kind == "xid" else None, data=79), up])
    assert state.states[key].health == "Healthy"  # the reboot cleared it
    late = nvml(kind, b2 - 5 * S, xid=79 if kind == "xid" else None, data=79)  # delivered late: before the reboot
    state, out = run([late], state)
    assert out == []
    assert state.states[key].health == "Healthy"


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        (each("ecc_dbe", 1, 1), (ECC, PCI, "Unhealthy", ["REBOOT_SYSTEM"], "double-bit ECC error", PCI)),
        (each("ecc_dbe", 1, 1, "volatile DBE"),
         (ECC, PCI, "Unhealthy", ["REBOOT_SYSTEM"], "double-bit ECC error: volatile DBE", PCI)),
        # corrected errors are counted, not described one by one: the rate says it all
        (each("ecc_sbe", 100, 1, "volatile SBE"),
         (ECC, PCI, "Degraded", [], "corrected (single-bit) ECC errors: 100 in 1 h", PCI)),
        ([nvml("hung", T0, message="nvmlDeviceGetPowerUsage", pci=None)],
         (HUNG, "n", "Unhealthy", ["REBOOT_SYSTEM"], "NVML nvmlDeviceGetPowerUsage hung", None)),
        ([nvml("hung", T0, pci=None)], (HUNG, "n", "Unhealthy", ["REBOOT_SYSTEM"], "NVML call hung", None)),
        ([nvml("temperature", T0, data=1, message="GPU 0 at 93 C (slowdown at 90 C)")],
         (HOT, PCI, "Degraded", ["HARDWARE_INSPECTION"], "GPU 0 at 93 C (slowdown at 90 C)", PCI)),
        (each("slowdown", 6, 60, "hw thermal"),
         (SLOW, PCI, "Unhealthy", ["HARDWARE_INSPECTION"], "hardware slowdown (hw thermal): 6 minutes in 10 min", PCI)),
        (each("slowdown", 6, 60),
         (SLOW, PCI, "Unhealthy", ["HARDWARE_INSPECTION"], "hardware slowdown: 6 minutes in 10 min", PCI)),
    ],
)  # fmt: skip
def test_an_nvml_fault_is_a_state_of_its_gpu_in_the_producers_words_once(
    events: list[Event], expected: tuple[object, ...]
) -> None:
    _, out = run(events)
    assert [(o.component, o.entity, o.health, o.repair_actions, o.reason, o.pci_bus_id) for o in out] == [expected]


def test_a_slowdown_counts_the_minutes_it_was_seen_in_even_reports_on_a_minutes_first_nanosecond() -> None:
    m0, minute = 28_333_334 * 60 * S, 60 * S  # a minute's first nanosecond, during boot b1
    halves = [
        nvml("slowdown", m0 + i * minute + h, data=1, message="hw thermal") for i in range(5) for h in (0, 30 * S)
    ]
    assert run(halves)[1] == []  # ten reports in five minutes: five, below the six that make a state
    starts = [nvml("slowdown", m0 + i * minute, data=1, message="hw thermal") for i in range(6)]
    assert [o.reason for o in run(starts)[1]] == ["hardware slowdown (hw thermal): 6 minutes in 10 min"]


def test_an_occurrence_exactly_a_window_old_has_left_it() -> None:
    # 100 corrected ECC errors in an hour make the state: 99 at once, and one more exactly 3600 s later, do not.
    t = T0 + 10 * S
    early = [nvml("ecc_sbe", t, data=1) for _ in range(99)]
    assert run([*early, nvml("ecc_sbe", t + 3600 * S, data=1)])[1] == []
    _, out = run([*early, nvml("ecc_sbe", t + 3600 * S - 1, data=1)])  # a nanosecond sooner: all in the hour
    assert [o.reason for o in out] == ["corrected (single-bit) ECC errors: 100 in 1 h"]
