-- ECC and remapped-row counters per day, from the hourly rollup: the fleet-wide sum of each GPU's
-- highest value that day, and how many GPUs had any.
WITH
    toDateTime64({start:String}, 9, 'UTC') AS ws,
    toDateTime64({end:String}, 9, 'UTC') AS we
SELECT day, name, sum(v) AS total, countIf(v > 0) AS gpus_with_any
FROM
(
    SELECT toDate(hour) AS day, name, cluster, node, entity, max(max_v) AS v
    FROM gpuhealth.metrics_hourly
    WHERE hour >= ws AND hour < we
      AND name IN ('ecc_sbe_aggregate', 'ecc_dbe_aggregate', 'ecc_sbe_volatile', 'ecc_dbe_volatile',
                   'remapped_rows_correctable', 'remapped_rows_uncorrectable', 'remapped_rows_pending',
                   'remapped_rows_failure')
    GROUP BY day, name, cluster, node, entity
)
GROUP BY day, name
ORDER BY day, name
