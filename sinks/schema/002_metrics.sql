-- gpuhealth schema v2: polled metrics as narrow rows, and the processes on each GPU.
-- batch_id is the MetricBatch id: a redelivered batch is recognised by it.

CREATE TABLE IF NOT EXISTS {db}.metrics
(
    batch_id  String CODEC(ZSTD(1)),
    time      DateTime64(9, 'UTC') CODEC(Delta, ZSTD(1)),
    cluster   LowCardinality(String),
    node      LowCardinality(String),
    entity    LowCardinality(String),
    gpu_uuid  LowCardinality(String),
    name      LowCardinality(String),
    value     Float64 CODEC(Gorilla, ZSTD(1)),
    INDEX batch_bf batch_id TYPE bloom_filter(0.001) GRANULARITY 4
)
ENGINE = MergeTree
PARTITION BY toYYYYMMDD(time)
ORDER BY (cluster, node, entity, name, time)
TTL toDateTime(time) + INTERVAL 180 DAY;

CREATE TABLE IF NOT EXISTS {db}.gpu_processes
(
    batch_id           String,
    time               DateTime64(9, 'UTC') CODEC(Delta, ZSTD(1)),
    cluster            LowCardinality(String),
    node               LowCardinality(String),
    gpu_uuid           LowCardinality(String),
    pci_bus_id         LowCardinality(String),
    pid                UInt32,
    process            String,
    used_memory_bytes  UInt64,
    INDEX batch_bf batch_id TYPE bloom_filter(0.001) GRANULARITY 4
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(time)
ORDER BY (cluster, node, gpu_uuid, time)
TTL toDateTime(time) + INTERVAL 180 DAY;
