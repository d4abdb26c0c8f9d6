"""How much each stream and KV bucket may hold, from the size of the fleet: every one is bounded.

Pure: ``limits(Fleet(nodes=3000))`` gives every stream its bytes, age and discard policy and every
bucket its bytes; ``store_bytes`` what the JetStream store of one server must allow for them
(``max_file_store``), which must itself stay below the disk's free space: a server that hits a full
disk disables JetStream until restarted, a stream that hits its limit only refuses (or drops) and
goes on by itself once there is room.

The figures per node-day come from bench/stream_disk.py (stored bytes from stream info, a node's
hour of metrics at the default poll interval and a day of plausible events).

Who reads what decides the policy:

- events: the rules and the sink. DiscardNew: what is unread is never dropped; a full stream refuses
  publishes, the agent holds its source and retries, and the refusal shows in its log and metrics.
- metrics: the sink only, so the stream is a buffer for a ClickHouse outage, not an archive:
  ``metrics_buffer_s`` (6 h by default) instead of 2 days. DiscardOld: samples are telemetry, the
  newest matter most, and refusing them would stall the agent's publishing of events behind them.
  Limits retention, not interest or work-queue: those drop what is published before the sink's
  consumer exists (a fleet's first start) and the server will not switch an existing stream to a
  work queue.
- inventory, health, incidents, dead letters: small. DiscardOld: a newer inventory supersedes an
  older one, health states live on in their KV bucket, and refusing these would stall the rules or a
  consumer's dead-lettering, which is worse than losing the oldest history.
- KV buckets (history 1): one entry a key, so bounded by the fleet; a cap keeps a bug from filling
  the store. DiscardNew, as nats-py creates them: a refused put fails the rules visibly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuhealth import subjects

HOUR = 3600.0
DAY = subjects.DAY
MiB = 1 << 20

# Stored bytes (message, subject, headers and the store's own framing), measured by bench/stream_disk.py.
METRIC_BYTES_PER_GPU_POLL = 1_500  # one MetricBatch (measured 1,505 B): a GPU's ~36 values and processes
EVENT_BYTES_PER_NODE_DAY = 8_000  # measured 7,772: 12 faults and an agent start a node-day
INVENTORY_BYTES_PER_NODE_DAY = 2_000  # measured 1,610: an inventory an agent start, one a day
HEALTH_BYTES_PER_NODE_DAY = 8_000  # measured 7,191: states change only with events
INCIDENT_BYTES_PER_NODE_DAY = 6_000  # measured 5,655
DLQ_BYTES_PER_NODE_DAY = 2_000  # none measured (nothing bad was sent): an allowance
DECISION_BYTES_PER_NODE_DAY = 2_000  # the responder's: one decision a health state, fewer than those
# Events come in storms (an Xid storm, a flapping link): room for ten times the usual day.
STORM_HEADROOM = 10
# Over the measured figures for the others (a busier day); metric batches vary only with processes.
HEADROOM = 2
METRIC_HEADROOM = 1.25
# Floors, so that one node (`gpuctl up`) still has room for a storm or a long sink outage.
MIN_STREAM_BYTES = 64 * MiB
MIN_BUCKET_BYTES = 16 * MiB
# KV bytes a node (history 1): its health states (a few dozen keys), the rules' state, its inventory.
BUCKET_BYTES_PER_NODE = {subjects.KV_HEALTH: 256 << 10, subjects.KV_RULES: 1 * MiB, subjects.KV_INVENTORY: 64 << 10}
# The store must also hold consumers' state and the file store's slack (deleted messages not yet compacted).
STORE_HEADROOM = 1.25


@dataclass(frozen=True)
class Fleet:
    nodes: int
    gpus_per_node: int = 8
    poll_interval_s: float = 10.0
    metrics_buffer_s: float = 6 * HOUR  # how long the sink may be away before the oldest samples go
    events_retention_s: float = 7 * DAY  # how long the rules (and the sink) may be away; nothing is dropped

    def __post_init__(self) -> None:
        if self.nodes < 1 or self.gpus_per_node < 0 or self.poll_interval_s <= 0:
            raise ValueError(f"a fleet needs nodes >= 1, gpus >= 0 and a poll interval > 0: {self}")
        if self.metrics_buffer_s <= 0 or self.events_retention_s <= 0:
            raise ValueError(f"retentions must be > 0: {self}")


@dataclass(frozen=True)
class StreamLimits:
    max_bytes: int
    max_age_s: float
    discard_new: bool  # refuse new messages when full (else drop the oldest)


@dataclass(frozen=True)
class Limits:
    streams: dict[str, StreamLimits]  # by stream name
    buckets: dict[str, int]  # max_bytes by bucket name


# The ages and policies a stage uses when not told the fleet (--fleet-nodes), with no bound in bytes (unsized):
# one node's floors on a fleet's streams would hold 18 s of its metrics, and a full events stream refuses
# new faults until its oldest age out. Not a large guess either: the server reserves every max_bytes.
DEFAULT_FLEET = Fleet(nodes=1)


def _bytes(per_node_day: float, fleet: Fleet, age_s: float, headroom: float) -> int:
    return max(MIN_STREAM_BYTES, math.ceil(per_node_day * fleet.nodes * age_s / DAY * headroom))


def limits(fleet: Fleet) -> Limits:
    metric_per_node_day = METRIC_BYTES_PER_GPU_POLL * max(fleet.gpus_per_node, 1) * DAY / fleet.poll_interval_s
    s = subjects
    # (stream, bytes a node-day, age, headroom, discard new)
    table = (
        (s.EVENTS, EVENT_BYTES_PER_NODE_DAY, fleet.events_retention_s, STORM_HEADROOM, True),
        (s.METRICS, metric_per_node_day, fleet.metrics_buffer_s, METRIC_HEADROOM, False),
        (s.INVENTORY, INVENTORY_BYTES_PER_NODE_DAY, s.INVENTORY.max_age_s, HEADROOM, False),
        (s.HEALTH, HEALTH_BYTES_PER_NODE_DAY, s.HEALTH.max_age_s, STORM_HEADROOM, False),
        (s.INCIDENTS, INCIDENT_BYTES_PER_NODE_DAY, s.INCIDENTS.max_age_s, STORM_HEADROOM, False),
        (s.DLQ, DLQ_BYTES_PER_NODE_DAY, s.DLQ.max_age_s, STORM_HEADROOM, False),
        (s.DECISIONS, DECISION_BYTES_PER_NODE_DAY, s.DECISIONS.max_age_s, STORM_HEADROOM, False),
    )
    streams = {
        spec.name: StreamLimits(_bytes(per_day, fleet, age, headroom), age, discard_new)
        for spec, per_day, age, headroom, discard_new in table
    }
    buckets = {b: max(MIN_BUCKET_BYTES, per_node * fleet.nodes) for b, per_node in BUCKET_BYTES_PER_NODE.items()}
    return Limits(streams, buckets)


def unsized(fleet: Fleet = DEFAULT_FLEET) -> Limits:
    """``limits(fleet)`` bounded by age alone (max_bytes -1): for a stage that does not know the fleet.
    An existing stream keeps the bound in bytes it has (provision never lowers one it is not given)."""
    lim = limits(fleet)
    streams = {name: StreamLimits(-1, x.max_age_s, x.discard_new) for name, x in lim.streams.items()}
    return Limits(streams, dict.fromkeys(lim.buckets, -1))


def store_bytes(lim: Limits) -> int:
    """What one server's JetStream store must allow (each server holds one replica of everything)."""
    return math.ceil((sum(x.max_bytes for x in lim.streams.values()) + sum(lim.buckets.values())) * STORE_HEADROOM)


def human(n: float) -> str:
    """Bytes as nats-server's config and people read them: 1.5G, 300M."""
    for unit, size in (("T", 1 << 40), ("G", 1 << 30), ("M", MiB), ("K", 1 << 10)):
        if n >= size:
            return f"{math.ceil(n / size * 10) / 10:g}{unit}"
    return f"{math.ceil(n)}"
