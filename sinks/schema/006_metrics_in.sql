-- gpuhealth schema v6: metric batches go in as they travel, one row per batch with the names and values as
-- arrays, and ClickHouse unrolls them into metrics (and so into the hourly rollup). The writer hands over a
-- few hundred bytes of JSON a batch, encoded in C; no Python loop per sample.

CREATE TABLE IF NOT EXISTS {db}.metrics_in
(
    batch_id  String,
    time_ns   Int64,
    cluster   String,
    node      String,
    entity    String,
    gpu_uuid  String,
    names     Array(String),
    values    Array(Float64)
)
ENGINE = Null;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.metrics_in_mv TO {db}.metrics AS
SELECT batch_id, fromUnixTimestamp64Nano(time_ns) AS time, cluster, node, entity, gpu_uuid, name, value
FROM {db}.metrics_in
ARRAY JOIN names AS name, values AS value;
