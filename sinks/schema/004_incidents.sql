-- gpuhealth schema v4: incidents, one row per update; the latest (highest seq) is the incident.
-- ReplacingMergeTree keeps one row per id after merges; read with FINAL (or argMax) for exact
-- figures before them. Partitioned by the incident's first time, which never changes, so every
-- update of an incident lands in the same partition and merges away.

CREATE TABLE IF NOT EXISTS {db}.incidents
(
    id          String,
    seq         UInt32,
    time        DateTime64(9, 'UTC') CODEC(Delta, ZSTD(1)),
    cluster     LowCardinality(String),
    node        LowCardinality(String),
    boot_id     LowCardinality(String),
    component   LowCardinality(String),
    entity      String,
    code        LowCardinality(String),
    severity    LowCardinality(String),
    reason      String,
    count       UInt64,
    first       DateTime64(9, 'UTC'),
    last        DateTime64(9, 'UTC'),
    event_ids   Array(String),
    gpu_uuid    LowCardinality(String),
    pci_bus_id  LowCardinality(String)
)
ENGINE = ReplacingMergeTree(seq)
PARTITION BY toYYYYMM(first)
ORDER BY (cluster, node, id);
