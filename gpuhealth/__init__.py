"""The contract every stage of gpuhealth meets through: what travels on the bus, where, and how it fails.

    events      the wire types (msgspec structs, msgpack on the wire) and their decoders
    subjects    the subject names, the streams and the KV buckets
    errors      every error a user can see, in one tree
    bus         connecting, provisioning and publishing to NATS JetStream
    consumer    the durable, in-order, poison-isolating consumer every stage reads with
    client      what gpuctl asks the running stack (states, queries, commands)
    config …    the data dir, run.json, the identities of the embedded bus (localauth), sizing
    flags       a service's options, declared once: its parser, gpuctl's command and its argv derived

The stages sit above it and never import each other: producers/ (the node agent), rules/ (the health
engine), sinks/ (ClickHouse), gpuctl/ (the command line, which wires the stages together). This
package imports none of them (tests/unit/test_quality.py holds it to that).
"""

from gpuhealth.errors import (
    ConfigError,
    EmbeddedServerError,
    GpuhealthError,
    NotRunningError,
    PermissionDeniedError,
    QueryError,
    QueryRefused,
    SourceError,
)
from gpuhealth.events import (
    SCHEMA_VERSION,
    CheckResult,
    DeadLetter,
    Event,
    GpuInfo,
    GpuProcess,
    Health,
    HealthState,
    HostEvent,
    Incident,
    Inventory,
    KernelEvent,
    MetricBatch,
    NvlinkDetail,
    NvmlEvent,
    RepairAction,
    SetHealthy,
    SourceStatus,
    Verification,
    encode,
)

__all__ = [
    "SCHEMA_VERSION",
    "CheckResult",
    "ConfigError",
    "DeadLetter",
    "EmbeddedServerError",
    "Event",
    "GpuInfo",
    "GpuProcess",
    "GpuhealthError",
    "Health",
    "HealthState",
    "HostEvent",
    "Incident",
    "Inventory",
    "KernelEvent",
    "MetricBatch",
    "NotRunningError",
    "NvlinkDetail",
    "NvmlEvent",
    "PermissionDeniedError",
    "QueryError",
    "QueryRefused",
    "RepairAction",
    "SetHealthy",
    "SourceError",
    "SourceStatus",
    "Verification",
    "encode",
]
