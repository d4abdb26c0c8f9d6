-- GPUs that moved across clusters: by UUID, the clusters in the order they were seen.
SELECT gpu_uuid, any(serial) AS serial,
       arrayStringConcat(arrayMap(x -> x.2, arraySort(x -> x.1, groupUniqArray((seen, cluster)))), ' -> ') AS clusters,
       uniqExact(cluster) AS cluster_count, max(seen) AS last_seen
FROM
(
    SELECT gpu_uuid, serial, cluster, min(time) AS seen
    FROM gpuhealth.inventory
    WHERE gpu_uuid != '' AND ({since_days:UInt32} = 0 OR time >= now64(9) - toIntervalDay({since_days:UInt32}))
    GROUP BY gpu_uuid, serial, cluster
)
GROUP BY gpu_uuid
HAVING cluster_count > 1
ORDER BY last_seen DESC, gpu_uuid
