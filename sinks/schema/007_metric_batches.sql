-- gpuhealth schema v7: the metric batches stored, by id, for as long as one can come again.
-- A redelivered batch was recognised by its samples in metrics, which the metrics TTL drops (at once, for a
-- batch older than the TTL when it comes), while the hourly rollup keeps what every insert fed it: the batch
-- counted again there. Its id stays here 14 days from its arrival, longer than any stream keeps a message
-- (metrics: hours; events: 7 days), whatever time the batch says.

CREATE TABLE IF NOT EXISTS {db}.metric_batches
(
    batch_id  String,
    time      DateTime64(9, 'UTC'),
    received  DateTime('UTC') DEFAULT now()
)
ENGINE = MergeTree
PARTITION BY toYYYYMMDD(received)
ORDER BY (time, batch_id)
TTL received + INTERVAL 14 DAY;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.metric_batches_mv TO {db}.metric_batches AS
SELECT batch_id, fromUnixTimestamp64Nano(time_ns) AS time
FROM {db}.metrics_in;

-- What an earlier sink stored and the stream may still redeliver.
INSERT INTO {db}.metric_batches (batch_id, time)
SELECT DISTINCT batch_id, time FROM {db}.metrics WHERE time > now() - INTERVAL 14 DAY;
