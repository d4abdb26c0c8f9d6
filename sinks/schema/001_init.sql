-- gpuhealth schema v1: events, health state changes and dead letters.
-- {db} is replaced by the database name. Each statement ends with ';' on its own line end.

CREATE TABLE IF NOT EXISTS {db}.events
(
    id          String,
    time        DateTime64(9, 'UTC') CODEC(Delta, ZSTD(1)),
    cluster     LowCardinality(String),
    node        LowCardinality(String),
    machine_id  LowCardinality(String),
    boot_id     LowCardinality(String),
    source      LowCardinality(String),
    component   LowCardinality(String),
    type        LowCardinality(String),
    kind        LowCardinality(String),
    xid         Nullable(UInt32),
    sxid        Nullable(UInt32),
    pci_bus_id  LowCardinality(String),
    pid         Nullable(Int64),
    process     String,
    message     String CODEC(ZSTD(3)),
    count       UInt32,
    seq         Int64,
    payload     String CODEC(ZSTD(3)),
    INDEX id_bf id TYPE bloom_filter(0.001) GRANULARITY 4
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(time)
ORDER BY (cluster, node, time, id);

CREATE TABLE IF NOT EXISTS {db}.health_states
(
    id              String,
    time            DateTime64(9, 'UTC') CODEC(Delta, ZSTD(1)),
    cluster         LowCardinality(String),
    node            LowCardinality(String),
    boot_id         LowCardinality(String),
    component       LowCardinality(String),
    entity          String,
    health          LowCardinality(String),
    reason          String,
    repair_actions  Array(LowCardinality(String)),
    since           DateTime64(9, 'UTC'),
    event_ids       Array(String),
    gpu_uuid        String,
    pci_bus_id      LowCardinality(String),
    INDEX id_bf id TYPE bloom_filter(0.001) GRANULARITY 4
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(time)
ORDER BY (cluster, node, component, entity, time, id);

CREATE TABLE IF NOT EXISTS {db}.dead_letters
(
    id       String,
    time     DateTime64(9, 'UTC'),
    stage    LowCardinality(String),
    subject  String,
    reason   String,
    headers  Map(String, String),
    data     String CODEC(ZSTD(3))
)
ENGINE = MergeTree
ORDER BY (time, id);
