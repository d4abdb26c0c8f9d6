"""The wire contract: every message gpuhealth puts on NATS.

Each subject family has a tagged union of msgspec Structs and one reusable
decoder. Messages are msgpack on the wire with the header
``Gpuhealth-Schema: 1``; a consumer that meets another version dead-letters the
message instead of guessing. ``gpuhealth/schema/<family>.schema.json`` are generated
from these types (``gpuctl schema``) and are what other teams code against.

Times are Unix epoch nanoseconds (int): exact, cheap to encode, and what
ClickHouse's DateTime64(9) stores.
"""

from __future__ import annotations

import hashlib
import os
import time as _time
from typing import Annotated, Any, Literal

import msgspec

SCHEMA_VERSION = 1
SCHEMA_HEADER = "Gpuhealth-Schema"

Health = Literal["Healthy", "Degraded", "Unhealthy", "Unknown"]
RepairAction = Literal[
    "IGNORE_NO_ACTION_REQUIRED",
    "CHECK_USER_APP_AND_GPU",
    "RESET_GPU",
    "REBOOT_SYSTEM",
    "HARDWARE_INSPECTION",
]
# Worst last: the order a node's overall health is judged in (Unknown is worst:
# a node whose state cannot be known must not take work silently).
HEALTH_ORDER: dict[str, int] = {"Healthy": 0, "Degraded": 1, "Unhealthy": 2, "Unknown": 3}

# The ranges below are what the store's columns (sinks/schema) and the consumers hold: a value outside
# them fails the consumer's decode and is dead-lettered there, instead of failing an insert forever.
_U32 = 2**32 - 1
_I64 = 2**63 - 1
# DateTime64(9) is an Int64 of nanoseconds (to 2262).
Nanos = Annotated[int, msgspec.Meta(ge=0, le=_I64, description="Unix epoch nanoseconds")]
UInt32 = Annotated[int, msgspec.Meta(ge=0, le=_U32)]
Code = Annotated[int, msgspec.Meta(ge=0, le=_U32, description="an Xid or SXid code (UInt32 in the store)")]
# gpu_processes.pid is UInt32 (NVML's unsigned int); the kernel's pid_t is narrower still.
Pid = Annotated[int, msgspec.Meta(ge=0, le=_U32)]
# Names that become parts of the rules' keys (joined with \x1f): no control characters. Only where they break
# something: msgspec runs a pattern as a Python regex, ~0.4 us a field on every decode.
# (?![\s\S]) is the very end: "$" would let one trailing newline through.
Name = Annotated[str, msgspec.Meta(pattern=r"^[^\x00-\x1f\x7f]*(?![\s\S])")]
_PCI = r"^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7](?![\s\S])"
PciId = Annotated[str, msgspec.Meta(pattern=_PCI, description="domain:bus:device.function")]


class Message(msgspec.Struct, kw_only=True, tag_field="type", omit_defaults=True):
    """Fields every message carries."""

    id: str
    time: Nanos
    cluster: str
    node: str  # subject tokens and KV keys escape what they cannot hold; the consumer checks it is the subject's
    machine_id: str = ""
    boot_id: str = ""
    # When that boot began (Unix ns, /proc/stat btime; 0: not known): the rules tell a reboot
    # from a late word of an older boot by it.
    boot_time: Nanos = 0
    source: str
    component: Name


# ---------------------------------------------------------------- events


class NvlinkDetail(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Decoded intrinfo of NVLink Xids 144-150."""

    subcode: Annotated[int, msgspec.Meta(ge=0, le=63)]
    unit: str = ""
    fatal: bool | None = None


# KernelEvent.priority: the kernel's log levels (printk's KERN_*), 0 the most severe.
KERNEL_PRIORITIES: dict[str, int] = {
    "KERN_EMERG": 0,
    "KERN_ALERT": 1,
    "KERN_CRIT": 2,
    "KERN_ERR": 3,
    "KERN_WARNING": 4,
    "KERN_NOTICE": 5,
    "KERN_INFO": 6,
    "KERN_DEBUG": 7,
}
_LEVEL_ALIASES = {"ERROR": "ERR", "WARN": "WARNING"}


def kernel_priority(name: str) -> int | None:
    """A level's number from its name as people and tools write it (KERN_ERR, kern.err, err, ERROR,
    warn, 3); None when it is none of them."""
    t = name.strip().upper()
    if t.isdigit():
        return int(t) if int(t) <= 7 else None
    t = t.removeprefix("KERN_").removeprefix("KERN.")
    return KERNEL_PRIORITIES.get("KERN_" + _LEVEL_ALIASES.get(t, t))


class KernelEvent(Message, tag="kernel", kw_only=True):
    """One kernel log record (or a storm of identical ones, see ``count``)."""

    kind: str | None
    message: str
    seq: Annotated[int, msgspec.Meta(ge=-1, le=_I64)] = -1  # -1: the source has no sequence
    priority: Annotated[int, msgspec.Meta(ge=0, le=7)] = 6  # syslog levels
    monotonic_us: Annotated[int, msgspec.Meta(ge=0, le=_I64)] = 0
    xid: Code | None = None
    sxid: Code | None = None
    pci_bus_id: PciId | None = None
    pid: Pid | None = None
    process: str | None = None
    nvlink: NvlinkDetail | None = None
    count: UInt32 = 1


class SourceStatus(Message, tag="source_status", kw_only=True):
    """A producer says whether it can read its source. Missing data is not health."""

    available: bool
    applicable: bool = True
    reason: str = ""


class SetHealthy(Message, tag="set_healthy", kw_only=True):
    """An operator cleared a state by hand; who and why are kept."""

    target_component: Name
    entity: Name | None = None
    user: str = ""
    reason: str = ""


class NvmlEvent(Message, tag="nvml", kw_only=True):
    """What the NVIDIA driver reported through NVML, for one GPU (or the library itself).

    kind: xid | ecc_sbe | ecc_dbe | clock | power_source (from the event waiter);
    gpu_lost | remap_pending | remap_failed (from the poller, on change);
    init_failed | hung (the library itself; entity is the node)."""

    kind: str
    gpu_index: Annotated[int, msgspec.Meta(ge=0, le=2**15 - 1)] | None = None
    gpu_uuid: Name | None = None
    pci_bus_id: PciId | None = None
    xid: Code | None = None
    data: Annotated[int, msgspec.Meta(ge=0)] = 0  # NVML's unsigned long long
    message: str = ""


class HostEvent(Message, tag="host", kw_only=True):
    """What sysfs, procfs or the host's service manager says changed, for one entity.

    kind: aer | ib_errors | edac (``counts`` are increases since the previous read;
    at the first read of a boot, the values themselves: a fatal count already there
    is news, not a baseline); link | ib_port | thermal | service | module (a
    condition: ``state`` now, ``ok`` whether that is the healthy one, ``since``
    when it began; restated while it is not ok so duration rules see time pass);
    pstore (a crash record); reboot (``since``: when the previous boot was last seen)."""

    kind: str
    entity: Name
    message: str = ""
    pci_bus_id: PciId | None = None
    counts: dict[str, int] = {}
    state: str = ""
    ok: bool = True
    since: Nanos = 0
    first_read: bool = False


class CheckResult(Message, tag="check", kw_only=True):
    """One run of a custom check (a GPUd-format plugin); ``component`` is the check's name.

    Facts only: the rules judge them (a non-zero exit, a timeout or an ``expect`` that did
    not match is Unhealthy, with the suggested actions the parser matched)."""

    plugin_type: str  # init | component
    trigger: str  # init | interval | manual | tag | verify
    run_mode: str = "auto"
    tags: list[str] = []
    exit_code: int | None = None  # None: it did not finish (timed out, or could not start)
    timed_out: bool = False
    error: str = ""  # why it did not run or finish, or why its output could not be parsed
    duration_ms: int = 0
    output: str = ""  # the head of stdout and stderr together, bounded
    output_bytes: int = 0  # how much it wrote in all
    fields: dict[str, str] = {}
    expect_failed: list[str] = []  # fields whose ``expect`` did not match (or were missing)
    suggested_actions: dict[str, str] = {}  # action → the values that suggested it
    verification: str = ""  # the id of the Verification this run belongs to

    def verdict(self) -> tuple[Health, str]:
        """GPUd's judgement: a run that failed, timed out or whose output was not as expected is Unhealthy."""
        named = set(self.expect_failed) if self.exit_code == 0 and not self.timed_out else set()
        detail = ", ".join(f"{k}={v}" for k, v in self.fields.items() if k not in named)[:240]
        if self.exit_code != 0 or self.timed_out:
            why = self.error or f"exited {self.exit_code}"
        elif self.expect_failed:
            got = ", ".join(f"{f}={self.fields.get(f, '(missing)')}" for f in self.expect_failed)
            why = f"unexpected output: {got}" + (f" ({self.error})" if self.error else "")
        else:
            return "Healthy", f"ok: {detail}" if detail else "ok"
        return "Unhealthy", f"{why}: {detail}" if detail else why


class Verification(Message, tag="verification", kw_only=True):
    """The node's hardware changed since it was last verified: the checks tagged ``verify``
    are running (``status`` running) or ran (passed, failed; none: there are no such checks)."""

    changes: list[str]
    status: str  # running | passed | failed | none
    checks: dict[str, str] = {}  # check → Healthy | Unhealthy


Event = KernelEvent | SourceStatus | SetHealthy | NvmlEvent | HostEvent | CheckResult | Verification

# ---------------------------------------------------------------- metrics


class GpuProcess(msgspec.Struct, kw_only=True, omit_defaults=True):
    pid: Pid
    name: str = ""
    used_memory_bytes: Annotated[int, msgspec.Meta(ge=0)] = 0  # UInt64


class MetricBatch(Message, tag="metrics", kw_only=True):
    """One poll of one entity (a GPU): name → value, and what could not be read."""

    entity: Name
    gpu_uuid: Name | None = None
    pci_bus_id: PciId | None = None
    values: dict[str, float] = {}
    processes: list[GpuProcess] = []
    errors: dict[str, str] = {}


# ---------------------------------------------------------------- inventory


class GpuInfo(msgspec.Struct, kw_only=True, omit_defaults=True):
    index: Annotated[int, msgspec.Meta(ge=-(2**15), le=2**15 - 1)]  # Int16
    pci_bus_id: PciId
    uuid: Name | None = None
    serial: str | None = None
    name: str | None = None
    board_part_number: str | None = None
    vbios: str | None = None


class Inventory(Message, tag="inventory", kw_only=True):
    gpus: list[GpuInfo] = []
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    chassis_serial: str | None = None
    nvidia_pci_devices: int | None = None  # display/3D controllers of vendor 0x10de on PCI


# ---------------------------------------------------------------- health


class HealthState(Message, tag="health", kw_only=True):
    """The current health of one (node, component, entity); published on change."""

    entity: Name
    health: Health
    reason: str
    repair_actions: list[RepairAction] = []
    since: Nanos
    event_ids: list[str] = []
    gpu_uuid: Name | None = None
    pci_bus_id: PciId | None = None


class Incident(Message, tag="incident", kw_only=True):
    """One fault on one entity over time: opened by its first occurrence, then counted.

    The same (node, entity, code) inside the rules' incident window is the same
    incident (same id) with a growing ``count``; ``seq`` orders its updates.
    ``severity`` is the catalog's (Fatal, Critical, Warning, Info) for Xids and
    SXids, ``Unknown`` for a code no catalog has, else the health it implies."""

    entity: Name
    code: Name
    severity: str
    reason: str
    count: Annotated[int, msgspec.Meta(ge=0)]  # UInt64
    first: Nanos
    last: Nanos
    seq: UInt32 = 1
    event_ids: list[str] = []
    gpu_uuid: Name | None = None
    pci_bus_id: PciId | None = None


# ---------------------------------------------------------------- the responder's decisions

ResponderAction = Literal["drain", "resume", "none"]
# acted: done on the scheduler; dry_run: what --act would have done; skipped: nothing to do, or not
# ours to do (why says which); refused: the circuit breaker or the rate limit said no; failed: the
# scheduler refused it; held: part of a fleet incident (a burst behind one switch or rack), for a person.
ResponderOutcome = Literal["acted", "dry_run", "skipped", "refused", "failed", "held"]


class Decision(Message, tag="decision", kw_only=True):
    """What the responder decided on one health state and what came of it; every decision is kept."""

    entity: Name
    health: Health
    repair_actions: list[RepairAction] = []
    action: ResponderAction
    outcome: ResponderOutcome
    why: str
    adapter: str  # slurm, command, ...
    health_id: str  # the health state decided on


# ---------------------------------------------------------------- dead letters


class DeadLetter(msgspec.Struct, kw_only=True, tag="dead_letter", tag_field="type"):
    """A message a consumer could not use, kept whole with the reason."""

    id: str
    time: Nanos
    stage: str
    subject: str
    reason: str
    headers: dict[str, str] = {}
    data: bytes = b""


FAMILIES: dict[str, Any] = {
    "event": Event,
    "metric": MetricBatch,
    "inventory": Inventory,
    "health": HealthState,
    "incident": Incident,
    "dlq": DeadLetter,
    "decision": Decision,
}

_encoder = msgspec.msgpack.Encoder()
EVENT_DECODER = msgspec.msgpack.Decoder(Event)
METRIC_DECODER = msgspec.msgpack.Decoder(MetricBatch)
INVENTORY_DECODER = msgspec.msgpack.Decoder(Inventory)
HEALTH_DECODER = msgspec.msgpack.Decoder(HealthState)
INCIDENT_DECODER = msgspec.msgpack.Decoder(Incident)
DLQ_DECODER = msgspec.msgpack.Decoder(DeadLetter)
DECISION_DECODER = msgspec.msgpack.Decoder(Decision)


def encode(msg: msgspec.Struct) -> bytes:
    return _encoder.encode(msg)


# ---------------------------------------------------------------- ids

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def _ulid(ms: int, tail80: int) -> str:
    value = ((ms & ((1 << 48) - 1)) << 80) | (tail80 & ((1 << 80) - 1))
    out = []
    for _ in range(26):
        out.append(_CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(out))


def new_id(time_ns: int | None = None) -> str:
    """A ULID: sorts by time, unique without coordination."""
    t = _time.time_ns() if time_ns is None else time_ns
    return _ulid(t // 1_000_000, int.from_bytes(os.urandom(10), "big"))


def derived_id(time_ns: int, *parts: object) -> str:
    """A ULID whose random part is a hash of ``parts``: the same fact read twice
    gets the same id, so JetStream and the sink recognise the repeat."""
    digest = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=10).digest()
    return _ulid(time_ns // 1_000_000, int.from_bytes(digest, "big"))


def now_ns() -> int:
    return _time.time_ns()
