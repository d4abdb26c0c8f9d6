"""The classifier against the labelled corpus, and against lines it has never seen."""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from producers.kernel import (
    _SPACES,
    KINDS,
    _candidates,
    _classify,
    classify,
    fault_of,
    normalise_pci,
    rules,
    strip_prefixes,
    xid_line,
)
from producers.kernel import BENIGN as BENIGN_KIND
from tests.conftest import SHARED, need

CORPUS = SHARED / "corpus" / "kernel_lines.jsonl"
DATA = Path(__file__).resolve().parents[1] / "data"


def corpus() -> list[dict[str, object]]:
    need(CORPUS.exists(), "../shared/corpus (beside this checkout)")
    return [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]


def test_corpus_figures() -> None:
    rows = corpus()
    xid = [r for r in rows if r["category"] == "xid"]
    sxid = [r for r in rows if r["category"] == "sxid"]
    faults = [r for r in rows if r["category"] != "benign"]
    benign = [r for r in rows if r["category"] == "benign"]
    got = {id(r): classify(str(r["line"])) for r in rows}

    xid_right = sum(got[id(r)].xid == r["xid"] and got[id(r)].pci_bus_id == r["pci_bus_id"] for r in xid)
    sxid_right = sum(got[id(r)].sxid == r["sxid"] for r in sxid)
    with_kind = sum(got[id(r)].kind is not None for r in faults)
    right_kind = sum(got[id(r)].kind == r["category"] for r in faults)
    benign_flagged = [r["line"] for r in benign if got[id(r)].kind is not None]

    assert xid_right == len(xid)
    assert sxid_right == len(sxid)
    assert with_kind / len(faults) >= 0.97
    assert right_kind / len(faults) >= 0.90
    assert benign_flagged == []


def test_corpus_fields() -> None:
    """pid and process name as labelled, on every line that carries them."""
    for r in corpus():
        got = classify(str(r["line"]))
        assert (got.pid, got.process) == (r["pid"], r["process_name"]), r["line"]
        assert got.pci_bus_id == r["pci_bus_id"], r["line"]


# Lines written from the formats' sources, none of them in the corpus: the patterns must generalise.
UNSEEN = [
    (
        "[ 100.000001] NVRM: Xid (PCI:0000:1b:00): 95, pid=4242, name=train.py, Uncontained: FBHUB. RST: Yes, D-RST: No",
        "xid",
        95,
        None,
        "0000:1b:00.0",
    ),
    (
        "Nov 21 10:00:00 gpu-07 kernel: NVRM: Xid (PCI:0000:c3:00): 48, pid='<unknown>', name=<unknown>, DBE",
        "xid",
        48,
        None,
        "0000:c3:00.0",
    ),
    (
        "kern  :err   : 2026-11-21T10:00:00,000000+00:00 NVRM: Xid (PCI:0008:06:00): 999, new code",
        "xid",
        999,
        None,
        "0008:06:00.0",
    ),
    (
        "3,812,90000000,-;nvidia-nvswitch5: SXid (PCI:0000:a5:00.0): 24007, Fatal, Link 12 sourcetrack TCEN0 crumbstore ECC",
        "sxid",
        None,
        24007,
        "0000:a5:00.0",
    ),
    (
        "[Fri Nov 20 01:02:03 2026] NVRM: GPU at PCI:0000:3b:00: has fallen off the bus.",
        "gpu_fallen_off_bus",
        None,
        None,
        "0000:3b:00.0",
    ),
    (
        "[ 55.1] pcieport 0000:40:01.1: AER: Uncorrected (Non-Fatal) error received: 0000:41:00.0",
        "pcie_aer",
        None,
        None,
        "0000:40:01.1",
    ),
    ("[ 9.9] EDAC MC2: 1 UE memory read error on CPU_SrcID#1_Ha#0_Chan#0_DIMM#1", "mce_edac", None, None, None),
    ("[ 77.0] INFO: task kworker/3:1:123 blocked for more than 241 seconds.", "hung_task", None, None, None),
    ("[ 78.0] watchdog: BUG: soft lockup - CPU#12 stuck for 22s! [python:9876]", "soft_lockup", None, None, None),
    ("[ 79.0] Memory cgroup out of memory: Killed process 5555 (torchrun) total-vm:1kB", "oom", None, None, None),
    (
        "[ 80.0] XFS (nvme1n1): Corruption of in-memory data detected. Shutting down filesystem; remounted read-only",
        "fs_readonly",
        None,
        None,
        None,
    ),
    ("[ 81.0] mlx5_core 0000:c1:00.0 ibp193s0: Port: 1 Link DOWN", "infiniband", None, None, "0000:c1:00.0"),
    ("[ 82.0] nfs: server storage-3 not responding, still trying", "nfs", None, None, None),
    ("[ 83.0] NVRM: GPU1 _kgspLogXid119: ********************************* GSP Timeout", "gsp", None, None, None),
    (
        "[ 84.0] pci 0000:17:00.0: 63.008 Gb/s available PCIe bandwidth, limited by 16.0 GT/s PCIe x4 link at "
        "0000:16:01.0 (capable of 252.048 Gb/s with 16.0 GT/s PCIe x16 link)",
        "pcie_link",
        None,
        None,
        "0000:17:00.0",
    ),
    ("[ 85.0] Kernel panic - not syncing: Fatal exception", "other_fault", None, None, None),
]

BENIGN = [
    "[ 1.0] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.90.07  Fri May 31 09:35:42 UTC 2024",
    "[ 2.0] nvidia-nvswitch3: open (major=508)",
    "[ 3.0] mlx5_core 0000:c1:00.0 ibp193s0: Port: 1 Link ACTIVE",
    "[ 4.0] nfs: server storage-3 OK",
    "[ 5.0] EXT4-fs (nvme0n1p2): mounted filesystem with ordered data mode. Opts: errors=remount-ro",
    "[ 6.0] pcieport 0000:00:01.0: PME: Signaling with IRQ 26",
    "[ 7.0] systemd[1]: Started NVIDIA Persistence Daemon.",
    "[ 8.0] mce: [Firmware Bug]: Ignoring request to disable invalid MCA bank 15.",
]


@pytest.mark.parametrize(("line", "kind", "xid", "sxid", "pci"), UNSEEN)
def test_unseen_fault_lines(line: str, kind: str, xid: int | None, sxid: int | None, pci: str | None) -> None:
    got = classify(line)
    assert (got.kind, got.xid, got.sxid, got.pci_bus_id) == (kind, xid, sxid, pci)


@pytest.mark.parametrize("line", BENIGN)
def test_unseen_benign_lines(line: str) -> None:
    assert classify(line).kind is None


@pytest.mark.parametrize(
    ("line", "message", "priority"),
    [
        ("4,1234,5678,-;NVRM: hello", "NVRM: hello", 4),
        ("2025 Jul  2 06:56:57.749644 host ERR kernel: [  993.622973] I/O error, dev loop1", "I/O error, dev loop1", 3),
        # `talosctl dmesg`: the node, then the facility and level, then an RFC 3339 time in brackets and a colon
        (
            "10.0.3.7: kern:     err: [2025-01-02T03:04:05.123456789Z]: nvme nvme2: I/O 9 QID 4 timeout",
            "nvme nvme2: I/O 9 QID 4 timeout",
            3,
        ),
        (
            "kern: warning: [2024-11-30T23:59:59Z]: EXT4-fs (sdb1): mounted filesystem",
            "EXT4-fs (sdb1): mounted filesystem",
            4,
        ),
        # inside a record, such a head is the message's text, and gives no priority
        ("<6>kern: err: [2024-01-01T00:00:00Z]: nvme0: hello", "kern: err: [2024-01-01T00:00:00Z]: nvme0: hello", 6),
        # a serial console capture's elapsed time, then the kernel's own timestamp
        (
            "01h 15m 02.004s(  12ms): [ 4502.100200] mlx5_core 0000:3b:00.0: Port: 1 Link DOWN",
            "mlx5_core 0000:3b:00.0: Port: 1 Link DOWN",
            None,
        ),
    ],
)
def test_prefixes_are_stripped_and_priorities_kept(line: str, message: str, priority: int | None) -> None:
    s = strip_prefixes(line)
    assert (s.message, s.priority) == (message, priority)


def test_a_syslog_tag_is_kept() -> None:
    s = strip_prefixes("Jan 05 14:45:28 host nv-fabricmanager[1120]: started")
    assert (s.message, s.tag, s.tag_pid) == ("started", "nv-fabricmanager", 1120)


@pytest.mark.parametrize(
    "line",
    [
        "INFO: task python3:4121 blocked for more than 122 seconds.",
        "kworker/3:1     D    0  2291      2 0x80004000",
        "mlx5_core 0000:3b:00.0: Port: 1 Link DOWN",
        "EXT4-fs error (device sda2): ext4_find_entry:1455: inode #2: comm ls: reading directory lblock 0",
        "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.",
    ],
)
def test_a_line_pasted_with_other_spaces_is_the_same_line(line: str) -> None:
    # Web pages turn spaces into no-break spaces, tables into tabs; the rules' anchors are spelt with spaces.
    want = classify(line)
    assert want.kind is not None
    for space in ("\xa0", "\t", "\u202f", "\u3000", "\x0b", "\x1f", "\x85", "\u2028"):
        got = classify(line.replace(" ", space))
        assert (got.kind, got.xid, got.pci_bus_id, got.pid, got.process) == (
            want.kind,
            want.xid,
            want.pci_bus_id,
            want.pid,
            want.process,
        ), repr(space)


def test_every_space_python_knows_is_read_as_a_space() -> None:
    spaces = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]
    assert [c.translate(_SPACES) for c in spaces] == [" "] * len(spaces)


def test_prefix_stripping_grows_linearly_with_a_hostile_line() -> None:
    # "[" and 8 KiB of digits: a bracketed timestamp's unbounded "digit somewhere inside" took ~80 ms (quadratic)
    def cost(n: int) -> float:
        line = "[" + "1" * n
        runs = []
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(20):
                strip_prefixes(line)
            runs.append(time.perf_counter() - start)
        return statistics.median(runs)

    assert cost(8000) < 9 * cost(2000)  # linear: 4x the time for 4x the line, quadratic: 16x


def test_pci_forms_normalise() -> None:
    assert normalise_pci("0000:04:00") == "0000:04:00.0"
    assert normalise_pci("PCI:0000:9B:00") == "0000:9b:00.0"
    assert normalise_pci("00000000:86:00.0") == "0000:86:00.0"
    assert normalise_pci("0002:00") == "0000:02:00.0"
    assert normalise_pci("nonsense") is None


def test_nvlink_xids_decode_their_subcode() -> None:
    got = classify("NVRM: Xid (PCI:0009:01:00): 149, NETIR_LINK_EVT  Fatal   XC0 i0 Link 15 (0x0215e5c6 0x0)")
    assert (got.xid, got.nvlink_subcode, got.nvlink_fatal) == (149, (0x0215E5C6 >> 20) & 0x3F, True)
    assert got.nvlink_unit == "NETIR_LINK_EVT"
    got = classify("NVRM: Xid (PCI:0018:01:00): 149, NETIR_BER_EVENT Nonfatal XC0 i0 Link 03 (0x00086226 0x1)")
    assert got.nvlink_fatal is False


def test_an_nvlink_xid_says_only_what_its_line_says() -> None:
    got = classify("NVRM: Xid (PCI:0018:01:00): 145, RLW_REMAP Non-fatal XC0 i0 Link 07 (0x00100001 0x0)")
    assert (got.nvlink_unit, got.nvlink_subcode, got.nvlink_fatal) == ("RLW_REMAP", 1, False)
    got = classify("NVRM: Xid (PCI:0000:3b:00): 146, pid='<unknown>', name=<unknown>, NVLink link 3 error")
    assert (got.xid, got.nvlink_unit, got.nvlink_subcode, got.nvlink_fatal) == (146, None, None, None)


def test_a_word_where_a_level_may_stand_that_is_none_keeps_the_records_priority() -> None:
    # An upper-case host name sits where some syslogs print the level; a dmesg -x facility line with a level
    # this reader does not know: the kmsg head's <3> stands.
    for line in ("<3>Jan  1 00:00:00 DGXH kernel: NVRM: Xid (PCI:0000:3b:00): 79, x", "<3>kern  :xyz   : [  12.5] x"):
        assert classify(line).priority == 3, line


def test_every_rule_names_a_known_kind_and_its_source() -> None:
    assert {r.kind for r in rules()} <= {*KINDS, BENIGN_KIND}
    assert all(r.source for r in rules())


def test_overlong_lines_are_cut_not_fatal() -> None:
    got = classify("NVRM: Xid (PCI:0000:04:00): 79, " + "x" * 100_000)
    assert got.xid == 79
    assert len(got.message) <= 8192


@pytest.mark.parametrize("index", range(len(rules())))
def test_a_rule_s_regex_matches_only_lines_holding_one_of_its_anchors(index: int) -> None:
    """Lines written from each rule's regex, with any characters where it allows them: where the regex matches, one
    of the rule's anchors is in the line, or the gate would hide the rule from it."""
    rule = rules()[index]

    @settings(max_examples=60, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.from_regex(rule.regex))
    def holds(line: str) -> None:
        line = line.translate(_SPACES)
        if rule.regex.search(line):
            assert any(a in line for a in rule.anchors), line

    holds()


@settings(max_examples=300)
@given(st.text(max_size=400))
def test_any_text_classifies_without_raising(line: str) -> None:
    got = classify(line)
    assert got.kind is None or got.kind in KINDS


def _all_known_lines() -> list[str]:
    """Every line the tests know: the corpus, every labelled set under tests/data, the families' cases."""
    from tests.unit import test_kernel_families as families
    from tests.unit import test_kernel_generalize as generalize

    known = [str(r["line"]) for r in corpus()] if CORPUS.exists() else []
    for path in sorted(DATA.glob("kernel_lines_*.jsonl")):
        known += [str(json.loads(row)["line"]) for row in path.read_text().splitlines() if row.strip()]
    cases = families.FAULTS + generalize.FAULTS
    return known + [u[0] for u in UNSEEN] + BENIGN + [c[0] for c in cases] + families.BENIGN + generalize.BENIGN


def test_anchors_never_change_a_result() -> None:
    """The anchors are an optimisation only: gated and ungated classification agree."""
    for line in _all_known_lines():
        assert _classify(line, gated=True) == _classify(line, gated=False), line


def test_a_line_s_candidates_are_every_rule_whose_anchor_it_holds() -> None:
    """Nested and overlapping anchors too: every anchor's text, and every pair of anchors run together with one
    character shared, is tried by exactly the rules that name an anchor the text contains."""
    every = rules()
    anchors = sorted({a for r in every for a in r.anchors})
    texts = anchors + [f"x{a}{b[1:]}y" for a in anchors for b in anchors if len(b) > 1 and a[-1] == b[0]]
    for text in texts:
        expected = tuple(i for i, r in enumerate(every) if any(a in text for a in r.anchors))
        assert _candidates(text) == expected, text


@settings(max_examples=300)
@given(
    st.lists(
        st.sampled_from(
            [
                "NVRM: ",
                "Xid (PCI:0000:04:00): 79",
                "AER:",
                "mlx5_core ",
                " failed",
                "nfs: server x ",
                "not responding",
                "EDAC MC0: 1 UE ",
                "task:x state:D pid:5",
                "[ 5] ",
                "0000:01:00.0 ",
                "Killed process 12 (x)",
                "GSP",
                "nvidia-modeset: ERROR",
                # pieces of anchors that overlap one another ("PCI" + "/O error" holds "I/O error")
                "PCI",
                "/O error",
                " D",
                " 0 1 2 0x00000000",
                "nvidia-nvs",
                "witch0: Link 3 failed",
                "EXT4-fs",
                " error (device x)",
                " ",
                "\xa0",
                "\t",
                "x",
            ]
        ),
        max_size=8,
    )
)
def test_anchors_agree_on_generated_lines(parts: list[str]) -> None:
    line = "".join(parts)
    assert _classify(line, gated=True) == _classify(line, gated=False)


def test_fault_of_is_classify_without_benign_fields() -> None:
    for line in _all_known_lines():
        full = classify(line)
        fast = fault_of(line)
        assert fast == (full if full.kind is not None else None), line


@pytest.mark.parametrize("code", [str(2**32), str(2**40), str(2**63), str(2**64 - 1), "1" + "0" * 5000])
def test_an_xid_code_out_of_range_is_a_fault_with_no_code(code: str) -> None:
    # The wire (and the store's UInt32) cannot hold it: the line stays a fault, with its text, of no known kind.
    for line in (f"NVRM: Xid (PCI:0000:3b:00): {code}, pid=1234, name=python", f"SXid (PCI:0000:3b:00.0): {code}, x"):
        found = fault_of(line)
        assert found is not None and found.kind == "other_fault" and found.xid is None and found.sxid is None, line
        assert found.message == line


def test_the_largest_codes_and_pids_are_kept_and_larger_pids_dropped() -> None:
    found = classify(f"NVRM: Xid (PCI:0000:3b:00): {2**32 - 1}, pid={2**31 - 1}, name=x")
    assert (found.kind, found.xid, found.pid) == ("xid", 2**32 - 1, 2**31 - 1)
    assert classify("NVRM: Xid (PCI:0000:3b:00): 79, pid=2147483648, name=x").pid is None
    assert classify(f"Killed process {'9' * 5000} (x)").pid is None  # int() refuses > 4300 digits: no crash
    assert classify(f"<{'0' * 5000}3>x").priority == 3
    assert classify(f"Jan  1 00:00:00 h app[{'7' * 5000}]: x").pid is None


def test_an_injected_xid_line_is_the_drivers_form_and_reads_back_as_the_same_fault() -> None:
    # gpuctl inject-fault and the agent's API write these: the line must be one the classifier (and a person
    # used to the driver's log) reads as that Xid on that GPU, with or without the process it hit.
    anonymous = xid_line("0000:3b:00", 79, "GPU has fallen off the bus")
    assert anonymous == "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus"
    named = xid_line("0000:04:00", 13, "Graphics Exception", pid=1234, process="train.py")
    assert named == "NVRM: Xid (PCI:0000:04:00): 13, pid=1234, name=train.py, Graphics Exception"
    assert [(f.kind, f.xid, f.pci_bus_id, f.pid, f.process) for f in map(classify, (anonymous, named))] == [
        ("xid", 79, "0000:3b:00.0", None, None),
        ("xid", 13, "0000:04:00.0", 1234, "train.py"),
    ]


def test_a_process_the_driver_could_not_name_is_none_and_leading_zeros_do_not_make_a_number_too_long() -> None:
    unnamed = classify("NVRM: Xid (PCI:0000:04:00): 13, pid='<unknown>', name='<unknown>', Graphics Exception")
    assert (unnamed.xid, unnamed.pid, unnamed.process) == (13, None, None)
    padded = classify("NVRM: Xid (PCI:0000:04:00): 00000000000013, pid=000000000000001234, name=a, Graphics Exception")
    assert (padded.kind, padded.xid, padded.pid, padded.process) == ("xid", 13, 1234, "a")


def test_a_hung_task_names_its_process_whole_when_the_name_holds_spaces_and_colons() -> None:
    lines = (
        "INFO: task Isolated Web Co:48213 blocked for more than 245 seconds.",
        "task:gdbus worker    state:D stack:0     pid:3301  ppid:1      flags:0x00004002",
        "INFO: task kworker/u16:3:9122 blocked for more than 1228 seconds.",
        # 'in:' would read as dmesg -x's facility and level, were the level not one of util-linux's names
        "task:in:imjournal    state:D stack:0     pid:1187  ppid:1      flags:0x00000002",
    )
    assert [(f.kind, f.pid, f.process) for f in map(classify, lines)] == [
        ("hung_task", 48213, "Isolated Web Co"),
        ("hung_task", 3301, "gdbus worker"),
        ("hung_task", 9122, "kworker/u16:3"),
        ("hung_task", 1187, "in:imjournal"),
    ]


def test_the_nvlink_detail_is_read_for_xids_144_to_150_only() -> None:
    line = "NVRM: Xid (PCI:0009:01:00): {}, NETIR_LINK_EVT  Fatal   XC0 i0 Link 15 (0x0215e5c6 0x0)"
    details = {x: (f.nvlink_subcode, f.nvlink_unit, f.nvlink_fatal) for x in (143, 144, 150, 151)
               for f in [classify(line.format(x))]}  # fmt: skip
    assert details == {143: (None, None, None), 144: (33, "NETIR_LINK_EVT", True), 150: (33, "NETIR_LINK_EVT", True),
                       151: (None, None, None)}  # fmt: skip
