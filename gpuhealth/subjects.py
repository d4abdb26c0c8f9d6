"""Subject names, JetStream streams and KV buckets: the bus's address book.

gpuhealth.v1.event.<node>.<source>        facts a producer saw (stored with a partition token appended)
gpuhealth.v1.inventory.<node>             what hardware a node has (likewise)
gpuhealth.v1.health.<node>.<component>    derived states, on change only
gpuhealth.v1.incident.<node>.<component>  faults over time, one id per incident, updated as it grows
gpuhealth.v1.dlq.<node>.<stage>           messages a consumer could not use
gpuhealth.v1.decision.<node>              what the responder decided for a node, and what came of it
gpuhealth.v1.cmd.<node>.<verb>            request/reply to one node's agent
gpuhealth.v1.query.sql                    read-only SQL, answered by the sink
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

PREFIX = "gpuhealth.v1"

_UNSAFE = re.compile(r"[^A-Za-z0-9_\-]")


def token(name: str) -> str:
    """One subject token from any name: dots, spaces and wildcards become '_'."""
    return _UNSAFE.sub("_", name) or "_"


def event_subject(node: str, source: str) -> str:
    return f"{PREFIX}.event.{token(node)}.{token(source)}"


def metric_subject(node: str, source: str) -> str:
    return f"{PREFIX}.metric.{token(node)}.{token(source)}"


def inventory_subject(node: str) -> str:
    return f"{PREFIX}.inventory.{token(node)}"


def health_subject(node: str, component: str) -> str:
    return f"{PREFIX}.health.{token(node)}.{token(component)}"


def node_health_subjects(node: str) -> str:
    """Every health subject of one node (a wildcard; health_subject would sanitise the '*')."""
    return f"{PREFIX}.health.{token(node)}.*"


def incident_subject(node: str, component: str) -> str:
    return f"{PREFIX}.incident.{token(node)}.{token(component)}"


def dlq_subject(node_token: str, stage: str) -> str:
    return f"{PREFIX}.dlq.{node_token}.{token(stage)}"


def decision_subject(node: str) -> str:
    return f"{PREFIX}.decision.{token(node)}"


def cmd_subject(node: str, verb: str) -> str:
    return f"{PREFIX}.cmd.{token(node)}.{token(verb)}"


def node_token_of(subject: str) -> str:
    """The node token of a family subject, or '_' when there is none."""
    parts = subject.split(".")
    return parts[3] if len(parts) > 3 and subject.startswith(PREFIX + ".") else "_"


QUERY_SUBJECT = f"{PREFIX}.query.sql"


@dataclass(frozen=True)
class StreamSpec:
    name: str
    subjects: list[str]
    max_age_s: float
    duplicate_window_s: float = 600.0
    max_msg_size: int = 1 << 20
    extra: dict[str, object] = field(default_factory=dict)
    # (src, dest) of the stream's subject transform: how stored subjects differ from published ones
    transform: tuple[str, str] | None = None


# Events and inventory are stored with a last token that is a hash of the node: rules instances
# share the work by taking disjoint sets of partitions, and each node's messages stay in order on
# one instance. Fixed: changing it would move nodes between instances with state in flight.
PARTITIONS = 16


DAY = 86400.0
EVENTS = StreamSpec(
    "GPUHEALTH_EVENTS", [f"{PREFIX}.event.>"], 7 * DAY,
    transform=(f"{PREFIX}.event.*.*", f"{PREFIX}.event.{{{{wildcard(1)}}}}.{{{{wildcard(2)}}}}"
                                      f".{{{{partition({PARTITIONS},1)}}}}"),
)  # fmt: skip
METRICS = StreamSpec("GPUHEALTH_METRICS", [f"{PREFIX}.metric.>"], 2 * DAY, duplicate_window_s=120.0)
INVENTORY = StreamSpec(
    "GPUHEALTH_INVENTORY", [f"{PREFIX}.inventory.>"], 7 * DAY,
    transform=(f"{PREFIX}.inventory.*", f"{PREFIX}.inventory.{{{{wildcard(1)}}}}.{{{{partition({PARTITIONS},1)}}}}"),
)  # fmt: skip
HEALTH = StreamSpec("GPUHEALTH_HEALTH", [f"{PREFIX}.health.>"], 7 * DAY)
INCIDENTS = StreamSpec("GPUHEALTH_INCIDENTS", [f"{PREFIX}.incident.>"], 7 * DAY)
DLQ = StreamSpec("GPUHEALTH_DLQ", [f"{PREFIX}.dlq.>"], 14 * DAY, duplicate_window_s=120.0)
DECISIONS = StreamSpec("GPUHEALTH_DECISIONS", [f"{PREFIX}.decision.>"], 7 * DAY)
STREAMS = (EVENTS, METRICS, INVENTORY, HEALTH, INCIDENTS, DLQ, DECISIONS)


def partitions_of(instance: int, instances: int) -> list[int]:
    """The partitions one of ``instances`` rules instances owns."""
    if not 0 <= instance < instances <= PARTITIONS:
        raise ValueError(f"instance {instance} of {instances}: need 0 <= instance < instances <= {PARTITIONS}")
    return [p for p in range(PARTITIONS) if p % instances == instance]


def partition_of(node: str) -> int:
    """The partition the server's transform gives a node: FNV-1a (32 bit) of its subject token."""
    h = 0x811C9DC5
    for b in token(node).encode():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h % PARTITIONS


def partition_filter(spec: StreamSpec, partition: int) -> str:
    """The stored subjects of one partition: the transform's source with the partition token added."""
    assert spec.transform is not None
    return f"{spec.transform[0]}.{partition}"


# Current health per (node, component, entity); the rules' own per-node state;
# the latest inventory per node.
KV_HEALTH = "gpuhealth_health"
KV_RULES = "gpuhealth_rules"
KV_INVENTORY = "gpuhealth_inventory"
KV_BUCKETS = (KV_HEALTH, KV_RULES, KV_INVENTORY)

_KV_UNSAFE = re.compile(r"[^A-Za-z0-9_\-/]")


def kv_escape(part: str) -> str:
    """A reversible KV key part: '=XX' escapes what KV keys may not hold ('.' separates parts)."""
    return _KV_UNSAFE.sub(lambda m: "".join(f"={b:02X}" for b in m.group().encode()), part) or "="


def kv_unescape(part: str) -> str:
    if part == "=":
        return ""
    return re.sub(
        r"(?:=[0-9A-F]{2})+",
        lambda m: bytes.fromhex(m.group().replace("=", "")).decode(),
        part,
    )


def health_key(node: str, component: str, entity: str) -> str:
    return ".".join(kv_escape(p) for p in (node, component, entity))
