"""Kernel log line → typed finding. Pure: no I/O but reading the pattern file once.

The patterns live in ``kernel_patterns.toml`` with the source of each; this
module strips the many prefixes a kernel line arrives with, tries the rules in
order and extracts the fields an operator acts on (Xid/SXid code, the PCI
device, the process).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources

import ahocorasick

from gpuhealth.events import kernel_priority

MAX_LINE = 8192  # longer lines are cut: a kernel record is at most ~1 KiB, anything else is garbage
MAX_CODE = 2**32 - 1  # Xid and SXid codes are 32-bit; a longer number is no code (the wire refuses it)
MAX_PID = 2**31 - 1  # pid_t
BENIGN = "benign"  # a rule of this kind names an informational or recovery format: the line is no fault
ERR = 3  # KERN_ERR: an error-or-worse line from a hardware subsystem is a fault even when no rule names it

KINDS = (  # by where the fault lies: the GPU and its fabric, the host's buses and memory, its kernel, the network
    *("xid", "sxid", "nvlink", "gpu_fallen_off_bus", "gsp"),
    *("pcie_aer", "pcie_link", "mce_edac"),
    *("oom", "hung_task", "soft_lockup", "fs_readonly"),
    *("infiniband", "nfs", "other_fault"),
)


@dataclass(frozen=True, slots=True)
class KernelLine:
    """What one line says. ``kind`` is None for a line that is not a fault."""

    kind: str | None
    message: str
    priority: int | None = None
    xid: int | None = None
    sxid: int | None = None
    pci_bus_id: str | None = None
    pid: int | None = None
    process: str | None = None
    nvlink_subcode: int | None = None
    nvlink_unit: str | None = None
    nvlink_fatal: bool | None = None


@dataclass(frozen=True, slots=True)
class Rule:
    kind: str
    regex: re.Pattern[str]
    source: str
    anchors: tuple[str, ...] = ()


@cache
def rules() -> tuple[Rule, ...]:
    text = resources.files("producers").joinpath("kernel_patterns.toml").read_text()
    data = tomllib.loads(text)
    out = []
    for r in data["rule"]:
        if r["kind"] not in KINDS and r["kind"] != BENIGN:
            raise ValueError(f"kernel_patterns.toml: unknown kind {r['kind']!r}")
        if not r.get("anchors"):
            raise ValueError(f"kernel_patterns.toml: the rule {r['regex']!r} names no anchors")
        # ASCII: a kernel prints \d and \w as ASCII, and a Unicode digit no anchor names would slip past the gate
        out.append(Rule(r["kind"], re.compile(r["regex"], re.ASCII), r["source"], tuple(r["anchors"])))
    return tuple(out)


# ---------------------------------------------------------------- prefixes

_KMSG_HEAD = re.compile(r"^(?P<prio>\d+),\d+,\d+,[^;]*;")
_ANGLE_PRIO = re.compile(r"^<(?P<prio>\d+)>")
# dmesg -x / --decode: "kern  :warn  : " then dmesg --time-format iso; util-linux's level names only, so that a
# message that starts with two words and colons ("task:rs:main Q:Reg state:D") keeps them
_DMESG_X = re.compile(r"^(?P<fac>[a-z]+\d?)\s*:(?P<lvl>emerg|alert|crit|err|warn|notice|info|debug)\s*:\s*")
# `talosctl dmesg`: "[node: ]kern:    info: [2025-06-04T04:51:57.572293906Z]: ", the level padded on its left
_TALOS = re.compile(
    r"^(?:\S+:\s+)?[a-z]+\d?:\s+(?P<lvl>emerg|alert|crit|err|warning|notice|info|debug):\s+"
    r"\[\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})\]:\s*"
)
_ISO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\s+")
# "[ 1234.5678]", "[  +0.000001]", "[Sun Feb 23 16:24:30 2025]", "[wo jul 28 05:19:43 2021]",
# "[Jul 09 2024 18:14:07]": any bracket holding a digit and no nested bracket (200 characters at most: an unbounded
# one backtracks quadratically on a line of digits), at the start, but not lockdep's old
# banner "[ BUG: %s/%d still has locks held! ]", which is the message. Unbracketed: a bare "hh:mm:ss[.frac]"
# (notes and chat logs keep only the time) and dmesg --time-format iso's "YYYY-MM-DDThh:mm:ss,usec+zz:zz" (a comma
# and a zone, no tag after it: not rsyslog's RFC 3339); a serial console capture's "00h 02m 10.251s(76962ms): ".
# Xen's console head "(XEN) " before its own "[uptime]", and a tab a pager showed as "^I" (a copy keeps the caret),
# one a pass: the loop in strip_prefixes takes the next (a repeated group here cost every line ~15 ns). A line number
# an editor or a code view pasted before a "[ 843.133422]" stamp goes with it, and so does the '> ' a mail's
# author put before a quoted stamp (' > [  774.318157] etnaviv-gpu …'); avocado's job log puts its level and
# the test's stream after the time ("12:17:09 DEBUG| [stdout] "); a PREEMPT_RT kernel's console puts the CPU after the
# stamp ("[ 198.48] 000: SError Interrupt …"): three digits and a colon, taken with it.
_BRACKET_TIME = re.compile(
    r"^(?:(?:(?:\d{1,6}|>) (?=\[\s*\d+\.\d+\]))?\[(?! (?:INFO|BUG): )(?=[^\[\]\d]*\d)[^\[\]]{1,200}\](?: \d{3}:(?= ))?"
    r"|\d{2}:\d{2}:\d{2}(?:\.\d+)?(?: [A-Z]{4,5} ?\| \[std(?:out|err)\])?(?=\s)"
    r"|\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2},\d+[+-]\d{2}:?\d{2}(?=\s)|\d+h \d+m \d+\.\d+s\(\s*\d+ms\):|\(XEN\)|\^I)\s*"
)
# syslog / journalctl: "<mon> <day> <hh:mm:ss>[.frac] [host] [LEVEL] tag[pid]: ", month in any
# language ("jan.", "фев", "8月"), an optional leading year, BusyBox syslogd's "facility.level" after the host
# ("Jun 21 17:28:01 openelec user.err kernel: "); or OpenWrt's logread: ctime ("Tue Dec  1 17:07:50 2020"),
# then "facility.level" (kern.err, kern.warn). One pattern, not two: a second failed match costs every line ~3%.
_SYSLOG = re.compile(
    r"^(?:(?:\d{4}\s+)?\S+\s+\d{1,2},?\s+(?:\d{4}\s+)?\d{2}:\d{2}:\d{2}(?:\.\d+)?\s+"
    r"(?:(?P<host>[^\s:\[\]]+)\s+)??(?:(?P<lvl>[A-Z]{3,7})\s+"
    r"|(?:kern|user|daemon|syslog|local\d)\.(?P<bb_lvl>emerg|alert|crit|err|warn(?:ing)?|notice|info|debug)\s+)?"
    r"|[A-Z][a-z]{2} [A-Z][a-z]{2}\s+\d{1,2} \d{2}:\d{2}:\d{2} \d{4} [a-z]+\d?\.(?P<logread_lvl>[a-z]+) )"
    r"(?P<tag>[^\s:\[\]]+)(?:\[(?P<pid>\d+)\])?:\s*"
)
# RFC 3339 (rsyslog), or a log shipper's "2021-03-16 11:30:24.753 kernel: ": a space for the T, no zone.
_RFC3339_SYSLOG = re.compile(
    r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\s+"
    r"(?:(?P<host>[^\s:\[\]]+)\s+)?(?P<tag>[^\s:\[\]]+)(?:\[(?P<pid>\d+)\])?:\s*"
)
# "kernel: ", or `kubectl describe node`'s event columns (Type, Reason, Age, From) of a kernel-monitor event
_KERNEL_TAG = re.compile(
    r"^(?:(?:[^\s:\[\]]+\s+)?kernel:\s*"
    r"|(?:Warning|Normal)\s{2,}[A-Z]\w*\s{2,}\S+(?: \(x\d+ over \S+\))?\s{2,}\S+(?:, \S+)?\s{2,})"
)
# Every character str.isspace() calls a space (tabs, line and page breaks, the no-break and other spaces web pages
# and editors put in pasted lines), read as a space: the rules' anchors are spelt with spaces.
# So are the control pictures of a carriage return and a line feed ("␍␊") a terminal capture shows at a line's end.
_SPACES = str.maketrans(
    dict.fromkeys(
        "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
        "\u200a\u2028\u2029\u202f\u205f\u3000\u240a\u240d",
        " ",
    )
)
# NV_PRINTF's head: 'NVRM: ' [GPU%d ] and the RM's function, camelCase as no Linux one; quoted without 'NVRM: ' too
_RM_FUNCTION = re.compile(r"^(?:GPU\d+ )?_?[a-z]+[A-Z]\w*: ")


def _level(name: str, otherwise: int | None) -> int | None:
    level = kernel_priority(name)
    return otherwise if level is None else level


def xid_line(pci: str, xid: int, text: str, *, pid: int | None = None, process: str = "<unknown>") -> str:
    """An Xid line as the NVIDIA driver prints it; pci is domain:bus:device, without the function."""
    who = "pid='<unknown>'" if pid is None else f"pid={pid}"
    return f"NVRM: Xid (PCI:{pci}): {xid}, {who}, name={process}, {text}"


@dataclass(frozen=True, slots=True)
class Stripped:
    message: str
    priority: int | None
    tag: str | None
    tag_pid: int | None


def _glued_kernel_tag(m: re.Match[str]) -> bool:
    """A syslog head whose host and 'kernel:' a forwarder glued together ('node-1kernel: '): no host read apart, no
    pid, the tag ending in 'kernel'. A program's own tag ('ipykernel[12]: ') comes after its host and is kept."""
    tag = m["tag"]
    return tag.endswith("kernel") and m["host"] is None and m["pid"] is None


def strip_prefixes(line: str) -> Stripped:
    """Remove record heads, timestamps and syslog prefixes, keeping what they say."""
    s = first = line.strip()
    while s.endswith("^M"):  # a serial console capture's carriage return, kept in caret notation at the line's end
        s = first = s[:-2].rstrip()
    priority: int | None = None
    tag: str | None = None
    tag_pid: int | None = None
    for _ in range(6):  # prefixes nest (syslog, then "[ 12.3]"), but never deeply
        before = s
        if m := _KMSG_HEAD.match(s) or _ANGLE_PRIO.match(s):
            priority = int(m["prio"][-3:]) & 7  # 1000 is a multiple of 8: the last digits decide
            s = s[m.end() :]
        if m := _DMESG_X.match(s):
            priority = _level(m["lvl"], priority)
            s = s[m.end() :]
            if t := _ISO_TIME.match(s):
                s = s[t.end() :]
        elif s is first and "]: " in s and (m := _TALOS.match(s)):  # it opens a line: inside one it is text
            priority = _level(m["lvl"], priority)
            s = s[m.end() :]
        if m := _BRACKET_TIME.match(s):
            s = s[m.end() :]
        if m := _SYSLOG.match(s) or _RFC3339_SYSLOG.match(s):
            if m["tag"] != "kernel" and not _glued_kernel_tag(m):
                tag = m["tag"]
                tag_pid = _pid(m["pid"]) if m["pid"] else None
            found = m.groupdict()  # once: each call builds a dict
            lvl = found.get("lvl") or found.get("logread_lvl") or found.get("bb_lvl")
            if lvl:
                priority = _level(lvl, priority)
            s = s[m.end() :]
        if m := _KERNEL_TAG.match(s):
            s = s[m.end() :]
        if s == before:
            break
    return Stripped(s, priority, tag, tag_pid)


# ---------------------------------------------------------------- fields

_PCI_FULL = re.compile(r"\b(?:[0-9a-fA-F]{4,8}):[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]\b")
_PCI_NVRM = re.compile(r"\bPCI:([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})\b")
_XID_PID = re.compile(r"\bpid=(?:(?P<pid>\d+)|'?<unknown>'?)")
_XID_NAME = re.compile(r"\bname=(?P<name>.+?)(?:, |,$|$)")
_PROC_PATTERNS = (
    re.compile(r"\btask (?P<name>.{1,15}?):(?P<pid>\d+) blocked for"),  # a comm may hold spaces and colons
    re.compile(r"^task:(?P<name>.{1,15}?)\s+state:\S+.*?\bpid:\s*(?P<pid>\d+)"),
    re.compile(r"\b(?:Killed|reaped) process (?P<pid>\d+) \((?P<name>[^)]*)\)"),
    re.compile(r"\btask=(?P<name>[^,]+),pid=(?P<pid>\d+)"),
    re.compile(r"soft lockup[\s.:-]{1,5}CPU#\d+ stuck for \d+s!\W{0,3}\[(?P<name>.+):(?P<pid>\d+)\]"),
    re.compile(r"^(?P<name>[^\s\[\]]+)\[(?P<pid>\d+)\]: segfault"),
    re.compile(r"\(pid (?P<pid>\d+)\)"),
)
# Where a line comes from, by the device or subsystem prefix the kernel prints it with (dev_err: "driver
# dddd:bb:dd.f: ", pr_err with pr_fmt "subsys: "): GPU, NIC, PCIe, memory and storage. Its priority, not its
# words, says whether it is a fault.
_HW_SUBSYSTEM = re.compile(
    r"(?:NVRM|nvidia\S*|nv_peer_mem|nvswitch\S*|mlx\d\S*|mlx5_ib|ib_\w+|ib\d+|rdma\S*|irdma|hfi1|bnxt\S*|i40e|ice"
    r"|igb|ixgbe|e1000e?|tg3|bond\d+|pcieport|pci|pciehp|aer|dpc|nvme\S*|sd|scsi\S*|ata\d\S*|ahci|md\S*|raid\S*"
    r"|dm-\S+|device-mapper|blk\S*|Buffer|EDAC|edac\S*|mce|MCE|ghes|GHES|APEI|BERT|EXT\d-fs|XFS|BTRFS|F2FS-fs|nfs"
    r"|NFS|lpfc|qla2xxx|megaraid\S*|mpt3sas\S*)\b"
)
_NVLINK_INTRINFO = re.compile(r"\((0x[0-9a-fA-F]+)")
_NVLINK_UNIT = re.compile(r"\):\s*1(?:4[4-9]|50),\s*([A-Z][A-Z0-9_/]+)")


def normalise_pci(text: str) -> str | None:
    """'0000:04:00', 'PCI:0000:04:00', '00000000:86:00.0', '0002:00' → '0000:04:00.0' form."""
    parts = text.lower().removeprefix("pci:").split(":")
    try:
        if len(parts) == 3:
            domain, bus, devfn = parts
        elif len(parts) == 2:
            domain, (bus, devfn) = "0", parts
        else:
            return None
        dev, _, fn = devfn.partition(".")
        return f"{int(domain, 16):04x}:{int(bus, 16):02x}:{int(dev, 16):02x}.{int(fn or '0', 16)}"
    except ValueError:
        return None


def _first_pci(message: str) -> str | None:
    if m := _PCI_FULL.search(message):
        return normalise_pci(m.group())
    if m := _PCI_NVRM.search(message):
        return normalise_pci(m.group(1))
    return None


def _process(message: str, kind: str | None, stripped: Stripped) -> tuple[int | None, str | None]:
    if kind == "xid":
        pid_m = _XID_PID.search(message)
        name_m = _XID_NAME.search(message)
        pid = _pid(pid_m["pid"]) if pid_m and pid_m["pid"] else None
        name = name_m["name"].strip() if name_m else None
        return pid, (None if name in (None, "<unknown>", "'<unknown>'") else name)
    for pattern in _PROC_PATTERNS:
        if m := pattern.search(message):
            groups = m.groupdict()
            return _pid(groups["pid"]), groups.get("name")
    if stripped.tag_pid is not None:
        return stripped.tag_pid, stripped.tag
    return None, None


def _bounded(digits: str, limit: int) -> int | None:
    """The number, or None above ``limit`` (measured first: int() refuses over 4300 digits)."""
    digits = digits.lstrip("0") or "0"
    return int(digits) if len(digits) <= len(str(limit)) and int(digits) <= limit else None


def _pid(digits: str) -> int | None:
    return _bounded(digits, MAX_PID)


def _code(digits: str | None) -> int | None:
    """An Xid/SXid code, or None for one out of range: no driver prints it, and the wire refuses it."""
    return _bounded(digits, MAX_CODE) if digits else None


@lru_cache(maxsize=4096)
def classify(line: str) -> KernelLine:
    """Classify one kernel log line, with or without its prefixes; every field, benign lines too.

    Cached: a storm repeats the same message text thousands of times a second."""
    return _classify(line, gated=True, benign_fields=True)


@lru_cache(maxsize=4096)
def fault_of(line: str) -> KernelLine | None:
    """The producer's fast path: None for a benign line, without extracting its fields."""
    found = _classify(line, gated=True, benign_fields=False)
    return found if found.kind is not None else None


@cache
def _automaton() -> tuple[ahocorasick.Automaton[int], tuple[tuple[int, ...], ...]]:
    """Every rule's anchors in one Aho-Corasick automaton, and for each anchor the rules that name it.

    One pass in C finds every anchor a line holds, overlapping and nested ones too (a line of 80 characters
    against ~900 anchors: ~1 µs, where a factored `re` alternation took 4.5 µs and missed overlaps)."""
    named: dict[str, list[int]] = {}
    for i, r in enumerate(rules()):
        for a in r.anchors:
            named.setdefault(a, []).append(i)
    automaton: ahocorasick.Automaton[int] = ahocorasick.Automaton()
    for n, a in enumerate(named):
        automaton.add_word(a, n)
    automaton.make_automaton()
    return automaton, tuple(tuple(i) for i in named.values())


def _candidates(text: str) -> tuple[int, ...]:
    """The rules, in order, that name an anchor the line holds: no other rule can match it (the anchors tests in
    tests/unit/test_kernel.py hold every rule's regex to its anchors)."""
    found = frozenset(n for _, n in _automaton()[0].iter(text))
    return _rules_of(found) if found else ()


@lru_cache(maxsize=1024)
def _rules_of(found: frozenset[int]) -> tuple[int, ...]:
    named = _automaton()[1]
    return tuple(sorted({i for n in found for i in named[n]}))


def _classify(line: str, *, gated: bool, benign_fields: bool = True) -> KernelLine:
    if len(line) > MAX_LINE:
        line = line[:MAX_LINE]
    if not (line.isascii() and line.isprintable()):
        line = line.translate(_SPACES)
    stripped = strip_prefixes(line)
    message = stripped.message
    kind: str | None = None
    groups: dict[str, str] = {}
    # A service's own log line ("nv-fabricmanager[12]: … failed") is judged with its tag, an RM line with its head.
    text = f"{stripped.tag}: {message}" if stripped.tag else message
    if _RM_FUNCTION.match(message):
        text = f"NVRM: {message}"
    every = rules()
    for i in _candidates(text) if gated else range(len(every)):
        if m := every[i].regex.search(text):
            kind, groups = every[i].kind, {k: v for k, v in m.groupdict().items() if v}
            break
    if kind is None and stripped.priority is not None and stripped.priority <= ERR and _HW_SUBSYSTEM.match(message):
        kind = "other_fault"
    elif kind == BENIGN:
        kind = None
    if kind is None and not benign_fields:
        return KernelLine(kind=None, message=message, priority=stripped.priority)
    pci = normalise_pci(groups["pci"]) if groups.get("pci") else _first_pci(message)
    pid, process = _process(message, kind, stripped)
    xid, sxid = _code(groups.get("xid")), _code(groups.get("sxid"))
    if (kind == "xid" and xid is None) or (kind == "sxid" and sxid is None):
        # A code out of range is no code: the line is still a fault, kept with its text, of no known kind.
        kind = "other_fault"
    subcode = unit = fatal = None
    if xid is not None and 144 <= xid <= 150:
        subcode, unit, fatal = _nvlink_detail(message)
    return KernelLine(
        kind=kind,
        message=message,
        priority=stripped.priority,
        xid=xid,
        sxid=sxid,
        pci_bus_id=pci,
        pid=pid,
        process=process,
        nvlink_subcode=subcode,
        nvlink_unit=unit,
        nvlink_fatal=fatal,
    )


def _nvlink_detail(message: str) -> tuple[int | None, str | None, bool | None]:
    """Xid 144-150: the unit as printed (NETIR_LINK_EVT, SAW_MVB, …), subcode = (intrinfo >> 20) & 0x3F
    (NVIDIA's Xid catalog), Fatal/Nonfatal as printed."""
    subcode = None
    if m := _NVLINK_INTRINFO.search(message):
        subcode = (int(m.group(1), 16) >> 20) & 0x3F
    unit_m = _NVLINK_UNIT.search(message)
    lowered = message.lower()
    fatal = False if "nonfatal" in lowered or "non-fatal" in lowered else (True if "fatal" in lowered else None)
    return subcode, unit_m.group(1) if unit_m else None, fatal
