-- gpuhealth schema v8: the responder's decisions, one row each: what it decided on a health state
-- (drain, resume, none), what came of it (acted, dry_run, skipped, refused, failed) and why.

CREATE TABLE IF NOT EXISTS {db}.responder_decisions
(
    id              String,
    time            DateTime64(9, 'UTC') CODEC(Delta, ZSTD(1)),
    cluster         LowCardinality(String),
    node            LowCardinality(String),
    component       LowCardinality(String),
    entity          String,
    health          LowCardinality(String),
    repair_actions  Array(LowCardinality(String)),
    action          LowCardinality(String),
    outcome         LowCardinality(String),
    why             String,
    adapter         LowCardinality(String),
    health_id       String,
    INDEX id_bf id TYPE bloom_filter(0.001) GRANULARITY 4
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(time)
ORDER BY (cluster, node, time, id);
