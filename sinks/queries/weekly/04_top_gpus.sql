-- The GPUs with the most incidents in the week, with their serial and model.
WITH
    toDateTime64({start:String}, 9, 'UTC') AS ws,
    toDateTime64({end:String}, 9, 'UTC') AS we
SELECT i.gpu_uuid AS gpu_uuid, any(g.serial) AS serial, any(g.model) AS model, any(i.node) AS node,
       count() AS incidents, sum(i.count) AS occurrences, groupUniqArray(10)(i.code) AS codes
FROM gpuhealth.incidents AS i FINAL
LEFT JOIN gpuhealth.gpus AS g ON g.gpu_uuid = i.gpu_uuid AND g.cluster = i.cluster
WHERE i.last >= ws AND i.first < we AND i.gpu_uuid != ''
GROUP BY gpu_uuid
ORDER BY incidents DESC, occurrences DESC, gpu_uuid
LIMIT 20
