-- Mean time between failures per GPU model over the week: observed GPU-hours over serious incidents on GPUs
-- of that model. A GPU is observed from when the inventory first saw it (or the week's start) to the week's
-- end (or now, in a week in progress): a GPU that joined on Thursday, or a fleet watched since two minutes
-- ago, does not count the hours nobody watched it. Hours to 2 decimals: a fresh week's 0.27 h is 16 min, not 18.
WITH
    toDateTime64({start:String}, 9, 'UTC') AS ws,
    toDateTime64({end:String}, 9, 'UTC') AS we,
    least(we, now64(9)) AS upto
SELECT m.model AS model, m.gpus AS gpus, round(m.seconds / 3600, 2) AS gpu_hours,
       ifNull(f.failures, 0) AS failures,
       if(ifNull(f.failures, 0) = 0, NULL, round(m.seconds / 3600 / f.failures, 2)) AS mtbf_hours
FROM
(
    SELECT model, count() AS gpus, sum(dateDiff('second', greatest(first_seen, ws), upto)) AS seconds
    FROM
    (
        -- one row a GPU, though a GPU that changed clusters has a row in gpus for each
        SELECT gpu_uuid, if(argMax(model, last_seen) = '', 'unknown', argMax(model, last_seen)) AS model,
               min(first_seen) AS first_seen
        FROM gpuhealth.gpus
        GROUP BY gpu_uuid
        HAVING first_seen < upto
    )
    GROUP BY model
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
