-- Mean time between failures per GPU model over the week: GPU-hours (every GPU the inventory has seen
-- by the week's end, counted for the whole week) over serious incidents on GPUs of that model.
WITH
    toDateTime64({start:String}, 9, 'UTC') AS ws,
    toDateTime64({end:String}, 9, 'UTC') AS we
SELECT m.model AS model, m.gpus AS gpus, m.gpus * dateDiff('hour', ws, we) AS gpu_hours,
       ifNull(f.failures, 0) AS failures,
       if(ifNull(f.failures, 0) = 0, NULL, round(gpu_hours / f.failures, 1)) AS mtbf_hours
FROM
(
    SELECT if(model = '', 'unknown', model) AS model, uniqExact(gpu_uuid) AS gpus
    FROM gpuhealth.gpus WHERE first_seen < we GROUP BY model
) AS m
LEFT JOIN
(
    SELECT if(g.model = '', 'unknown', g.model) AS model, count() AS failures
    FROM gpuhealth.incidents AS i FINAL
    INNER JOIN gpuhealth.gpus AS g ON g.gpu_uuid = i.gpu_uuid AND g.cluster = i.cluster
    WHERE i.first >= ws AND i.first < we AND i.severity IN ('Fatal', 'Critical', 'Unhealthy')
    GROUP BY model
) AS f ON f.model = m.model
ORDER BY model
