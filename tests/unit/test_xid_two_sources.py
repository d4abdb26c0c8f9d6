"""One Xid, two witnesses: the driver prints it to the kernel log and hands it to NVML's event waiters.

On a real H100 (bench/real_gpu.py) one MMU fault reached the bus twice, as a kernel line and as an
NVML event 0.02 s apart, and its incident counted 2. Each source alone must still count every
occurrence: the kernel log may be unreadable, NVML may be down, and a storm is many faults."""

from __future__ import annotations

import itertools

from gpuhealth.events import Event, KernelEvent, NvmlEvent
from rules.catalog import load
from rules.engine import apply_all
from rules.state import NodeState, decode_state, encode_state

CAT = load()
PCI = "0000:00:06.0"
S = 10**9
_ids = itertools.count(1)


def kernel(code: int, at: float, *, count: int = 1, pci: str = PCI, source: str = "kmsg") -> KernelEvent:
    return KernelEvent(
        id=f"k{next(_ids):06d}", time=int(at * S), cluster="c", node="n", boot_id="b1", source=source,
        component="accelerator-nvidia-error-xid", kind="xid", xid=code, pci_bus_id=pci, count=count,
        message=f"NVRM: Xid (PCI:0000:00:06): {code}, pid=491, name=python3",
    )  # fmt: skip


def nvml(code: int, at: float, *, pci: str = PCI) -> NvmlEvent:
    return NvmlEvent(
        id=f"n{next(_ids):06d}", time=int(at * S), cluster="c", node="n", boot_id="b1", source="nvml",
        component="nvml", kind="xid", xid=code, pci_bus_id=pci, data=code, gpu_uuid="GPU-de59a436",
    )  # fmt: skip


def counts(events: list[Event], state: NodeState | None = None) -> dict[str, int]:
    for seq, ev in enumerate(events, 1):
        state, _, _ = apply_all(state, ev, CAT, seq=seq)
    assert state is not None
    return {k.split("\x1f")[2]: f.count for k, f in state.faults.items()}


def test_one_fault_seen_by_the_kernel_log_and_by_nvml_counts_once_in_either_order() -> None:
    assert counts([kernel(31, 100.0), nvml(31, 100.02)]) == {"xid:31": 1}
    assert counts([nvml(31, 100.0), kernel(31, 100.3)]) == {"xid:31": 1}


def test_each_source_alone_counts_every_occurrence() -> None:
    assert counts([nvml(31, 100.0 + i) for i in range(3)]) == {"xid:31": 3}
    assert counts([kernel(31, 100.0 + i) for i in range(3)]) == {"xid:31": 3}
    assert counts([kernel(31, 100.0, source="journald"), kernel(31, 100.0)]) == {"xid:31": 2}


def test_reports_up_to_30_s_apart_pair_and_one_report_pairs_once() -> None:
    assert counts([nvml(31, 100.0), kernel(31, 130.0)]) == {"xid:31": 1}, "30 s apart: still one fault"
    assert counts([nvml(31, 100.0), kernel(31, 130.5)]) == {"xid:31": 2}
    assert counts([nvml(31, 100.0), kernel(31, 100.1), kernel(31, 100.2)]) == {"xid:31": 2}, "NVML's one, paired once"
    assert counts([kernel(31, 100.0, count=0)]) == {}, "a report of no occurrence (the wire allows count 0)"


def test_repeated_faults_pair_one_to_one() -> None:
    twice = [kernel(31, 100.0), nvml(31, 100.1), kernel(31, 103.0), nvml(31, 103.1)]
    assert counts(twice) == {"xid:31": 2}
    # a storm the kernel log folded into one record of 5, and NVML's 5 events: 5 faults, not 10
    assert counts([kernel(13, 200.0, count=5), *(nvml(13, 200.0 + i / 10) for i in range(5))]) == {"xid:13": 5}
    # NVML saw 3, the rate-limited log printed 2: at least 3 happened
    assert counts([nvml(13, 300.0), nvml(13, 300.1), kernel(13, 300.2), nvml(13, 300.3), kernel(13, 300.4)]) == {
        "xid:13": 3
    }


def test_only_the_same_code_on_the_same_gpu_close_in_time_is_the_same_fault() -> None:
    assert counts([kernel(31, 100.0), nvml(43, 100.1)]) == {"xid:31": 1, "xid:43": 1}
    other_gpu = [kernel(79, 100.0), nvml(79, 100.1, pci="0000:00:07.0")]
    state = None
    for seq, ev in enumerate(other_gpu, 1):
        state, _, _ = apply_all(state, ev, CAT, seq=seq)
    assert state is not None and sorted(f.count for f in state.faults.values()) == [1, 1]
    assert counts([kernel(31, 100.0), nvml(31, 200.0)]) == {"xid:31": 2}, "minutes apart: two faults"


def test_a_fault_seen_twice_raises_one_state() -> None:
    state, first, _ = apply_all(None, kernel(79, 100.0), CAT, seq=1)
    state, second, _ = apply_all(state, nvml(79, 100.1), CAT, seq=2)
    assert [(o.health, o.repair_actions) for o in first] == [("Unhealthy", ["REBOOT_SYSTEM"])]
    assert second == []


def test_the_pairing_survives_a_restart_of_the_rules_between_the_two_sightings() -> None:
    state, _, _ = apply_all(None, kernel(31, 100.0), CAT, seq=1)
    state = decode_state(encode_state(state))
    state, _, _ = apply_all(state, nvml(31, 100.05), CAT, seq=2)
    assert [f.count for f in state.faults.values()] == [1]


def test_what_the_state_keeps_to_pair_stays_small_whatever_the_storm() -> None:
    state: NodeState | None = None
    for seq in range(1, 5001):
        state, _, _ = apply_all(state, nvml(31, 100.0 + seq / 1000), CAT, seq=seq)
    assert state is not None and [f.count for f in state.faults.values()] == [5000]
    assert len(encode_state(state)) < 8192


def test_a_late_line_of_another_gpu_forgets_no_report_awaiting_its_pair() -> None:
    """An agent's start replays the kernel log: a line minutes old arrives between NVML's report of a fault
    and the kernel's report of the same fault."""
    other = "0000:00:07.0"
    assert counts([nvml(31, 1000.0), kernel(79, 700.0, pci=other), kernel(31, 1000.1)]) == {"xid:31": 1, "xid:79": 1}
