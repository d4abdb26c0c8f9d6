"""The shapes of gpuctl's --json output, as types: the JSON Schema scripts can rely on.

``gpuhealth/schema/cli.schema.json`` is generated from these (``gpuctl schema
--outputs``); tests validate what the commands print against it, and fail when
the committed file is stale. Times are ISO 8601 UTC strings ending in Z.

Every --json output goes through ``dump``, which converts it to its type first:
a field missing, added or of another type fails there, so what a command prints
and what the schema says cannot drift apart.
"""

from __future__ import annotations

from typing import Any

import msgspec

Health = str  # Healthy | Degraded | Unhealthy | Unknown


class _Out(msgspec.Struct, forbid_unknown_fields=True):
    """Closed objects: a key added to an output changes the schema, visibly."""


class State(_Out):
    node: str
    cluster: str
    component: str
    entity: str
    gpu_uuid: str | None
    pci_bus_id: str | None
    health: Health
    reason: str
    repair_actions: list[str]
    since: str
    event_ids: list[str]


class Gpu(_Out):
    node: str
    index: int
    uuid: str | None
    pci_bus_id: str
    serial: str | None
    name: str | None


class Status(_Out):
    """gpuctl status --json (exit 0/1/2/3: the worst health shown; 4: nothing answers)."""

    states: list[State]
    gpus: list[Gpu]


class FleetGpu(_Out):
    index: int
    uuid: str | None
    pci_bus_id: str
    score: int
    band: str


class OpenState(_Out):
    component: str
    entity: str
    health: Health
    reason: str
    since: str


class FleetNode(_Out):
    node: str
    cluster: str
    score: int
    band: str  # Healthy (80-100) | Degraded (60-79) | Critical (< 60)
    counts: dict[str, int]
    gpus: list[FleetGpu]
    oldest_open: OpenState | None


class Fleet(_Out):
    """gpuctl fleet --json: worst score first."""

    nodes: list[FleetNode]


class Event(_Out):
    """One element of gpuctl events --json (newest first)."""

    id: str
    time: str
    time_ns: int
    cluster: str
    node: str
    boot_id: str
    source: str
    component: str
    type: str
    kind: str
    xid: int | None
    sxid: int | None
    pci_bus_id: str
    pid: int | None
    process: str
    message: str
    count: int


class Incident(_Out):
    """One element of gpuctl incidents --json (most recent first)."""

    id: str
    node: str
    component: str
    entity: str
    code: str
    severity: str
    reason: str
    count: int
    first: str
    last: str
    gpu_uuid: str
    pci_bus_id: str


class ReplaySide(_Out):
    health: str
    reason: str
    changes: int


class ReplayRow(_Out):
    node: str
    component: str
    entity: str
    published: ReplaySide
    replayed: ReplaySide
    differs: bool


class Replay(_Out):
    """gpuctl replay --json."""

    events: int
    entities: int
    differ: int
    rows: list[ReplayRow]


class RulesChange(_Out):
    """One element of gpuctl rules check --json."""

    key: str
    default: Any
    value: Any


class Report(_Out):
    """gpuctl report weekly --format json: each section's rows as objects keyed by the SQL's columns."""

    week: str
    start: str
    end: str
    sections: dict[str, list[dict[str, Any]]]


class Version(_Out):
    """gpuctl version --json."""

    gpuctl: str
    wire_schema: int


class CheckRun(_Out):
    """One element of gpuctl check run --json and check validate --run --json: a check's run, judged."""

    name: str
    node: str
    type: str
    trigger: str
    health: Health
    reason: str
    repair_actions: list[str]
    exit_code: int | None
    timed_out: bool
    duration_ms: int
    fields: dict[str, str]
    suggested_actions: dict[str, str]
    output: str


class CheckSpec(_Out):
    """One element of gpuctl check list --json and check validate --json."""

    name: str
    type: str
    run_mode: str
    timeout_s: float
    interval_s: float
    tags: list[str]
    steps: int
    fields: list[str]
    source: str
    last: CheckRun | None


class ResponderDrained(_Out):
    node: str
    why: str  # the reason gpuhealth drained it with
    since: str


class ResponderDecision(_Out):
    time: str
    node: str
    component: str
    entity: str
    action: str  # drain, resume, none
    outcome: str  # acted, dry_run (pending --act), skipped, refused, failed
    why: str
    adapter: str


class ResponderStatus(_Out):
    """gpuctl responder status --json: the nodes gpuhealth holds drained, and its recent decisions."""

    since: str
    drained: list[ResponderDrained]
    counts: dict[str, int]  # decisions in the window, by outcome
    decisions: list[ResponderDecision]


OUTPUTS: dict[str, Any] = {
    "status": Status,
    "fleet": Fleet,
    "events": list[Event],
    "incidents": list[Incident],
    "replay": Replay,
    "rules check": list[RulesChange],
    "check run": list[CheckRun],
    "check list": list[CheckSpec],
    "report weekly": Report,
    "responder status": ResponderStatus,
    "version": Version,
}


def dump(typ: Any, value: Any, *, indent: int = 2) -> str:
    """value as JSON, after converting it to typ (a type above, or a list of one); indent=0: one line."""
    raw = msgspec.json.encode(msgspec.convert(value, typ))
    return msgspec.json.format(raw, indent=indent).decode() if indent else raw.decode()


def output_schema() -> dict[str, Any]:
    names = list(OUTPUTS)
    schemas, components = msgspec.json.schema_components([OUTPUTS[n] for n in names], ref_template="#/$defs/{name}")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "gpuctl --json output",
        "description": "What each gpuctl command prints with --json (report weekly: --format json).",
        "properties": dict(zip(names, schemas, strict=True)),
        "$defs": components,
    }


def render() -> str:
    return msgspec.json.format(msgspec.json.encode(output_schema()), indent=2).decode() + "\n"
