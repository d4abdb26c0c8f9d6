"""The rules engine's state per node: what it remembers between events, and its KV encoding.

Everything here is data (msgspec Structs); the engine's decisions are in engine.py."""

from __future__ import annotations

import msgspec

from gpuhealth.events import Health, RepairAction

RECENT_IDS = 512
MAX_BOOTS = 16


class ComponentState(msgspec.Struct, kw_only=True):
    component: str
    entity: str
    health: Health
    reason: str
    actions: list[RepairAction] = []
    since: int
    event_ids: list[str] = []
    gpu_uuid: str | None = None
    pci_bus_id: str | None = None
    cause: str = ""  # the fault or condition that set the current health


class Fault(msgspec.Struct, kw_only=True):
    """One (component, entity, code) over time: the boots it was seen on (for the ladder), the
    occurrences inside its rate window, and the incident now open: first, last, count."""

    boots: list[str] = []
    count: int = 0
    first: int = 0
    last: int = 0
    window: list[tuple[int, int]] = []  # (time, count) inside the rule's window, for rate rules
    reason: str = ""
    severity: str = ""
    pci_bus_id: str | None = None
    updates: int = 0
    published: int = 0  # the update last published: growth since then waits for the service's next flush
    event_ids: list[str] = []


class Sighting(msgspec.Struct, array_like=True):
    """Occurrences of one Xid on one GPU that one witness (the kernel log, NVML) reported and the other has not."""

    witness: str
    time: int
    left: int


class NodeState(msgspec.Struct, kw_only=True, dict=True):  # dict: room for _recent_ids's set
    node: str
    cluster: str = ""
    machine_id: str = ""
    boot_id: str = ""
    boot_time: int = 0  # when the current boot began (0: not known); it never moves backwards
    past_boots: list[str] = []
    states: dict[str, ComponentState] = {}
    faults: dict[str, Fault] = {}
    gpu_uuid_by_pci: dict[str, str] = {}
    sightings: dict[str, list[Sighting]] = {}  # "pci\x1fcode": Xids awaiting their second witness
    recent: list[str] = []  # the last RECENT_IDS event ids: a producer's re-publish (same id, new message)
    # The stream sequence of the last event applied: the node's events reach the engine in stream
    # order, so one at or below it was applied already (redelivered), however long ago.
    applied_seq: int = 0
    events_stream: str = ""  # when the stream those sequences count in was made: another starts over
    incident_window_ns: int = 3600 * 10**9
    touched: list[str] = []  # the faults the last event updated: their incidents are outputs


def _recent_ids(state: NodeState) -> set[str]:
    """The recent ids as a set, kept on the state beside its fields (never encoded): a redelivery
    check per event must not scan a list of 512."""
    ids: set[str] | None = getattr(state, "_recent_set", None)
    if ids is None:
        ids = set(state.recent)
        vars(state)["_recent_set"] = ids
    return ids


def first_time(state: NodeState, event_id: str) -> bool:
    """Record an event as applied to the state; False when it was already (within its last
    RECENT_IDS events). A short list is scanned; a long one is mirrored by a set."""
    recent = state.recent
    if len(recent) < 64:
        if event_id in recent:
            return False
        recent.append(event_id)
        return True
    ids = _recent_ids(state)
    if event_id in ids:
        return False
    recent.append(event_id)
    ids.add(event_id)
    if len(recent) > RECENT_IDS:
        for old in recent[:-RECENT_IDS]:
            ids.discard(old)
        del recent[:-RECENT_IDS]
    return True


_STATE_ENCODER = msgspec.msgpack.Encoder()
_STATE_DECODER = msgspec.msgpack.Decoder(NodeState)


def encode_state(state: NodeState) -> bytes:
    return _STATE_ENCODER.encode(state)


def decode_state(data: bytes) -> NodeState:
    return _STATE_DECODER.decode(data)


def key(*parts: str) -> str:
    return "\x1f".join(parts)
