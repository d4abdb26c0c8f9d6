-- GPUs whose faults followed their serial across hosts: a serial with serious incidents on two or more
-- nodes up to the week's end, at least one of them in the week. (A GB200-class module carries two GPUs
-- under one serial: they are grouped by serial on purpose.)
WITH
    toDateTime64({start:String}, 9, 'UTC') AS ws,
    toDateTime64({end:String}, 9, 'UTC') AS we
SELECT g.serial AS serial, any(g.model) AS model, arraySort(groupUniqArray(i.node)) AS nodes,
       uniqExact(i.node) AS node_count, count() AS incidents, groupUniqArray(10)(i.code) AS codes,
       max(i.last) AS last
FROM gpuhealth.incidents AS i FINAL
INNER JOIN gpuhealth.gpus AS g ON g.gpu_uuid = i.gpu_uuid AND g.cluster = i.cluster
WHERE i.first < we AND g.serial != '' AND i.severity IN ('Fatal', 'Critical', 'Unhealthy')
GROUP BY serial
HAVING node_count >= 2 AND last >= ws
ORDER BY node_count DESC, incidents DESC, serial
