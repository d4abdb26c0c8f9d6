-- Chassis membership: the nodes and GPUs last seen in each chassis (by chassis serial).
SELECT chassis_serial, cluster, arraySort(groupUniqArray(node)) AS nodes, uniqExact(gpu_uuid) AS gpus,
       arraySort(groupUniqArray(serial)) AS gpu_serials, max(time) AS last_seen
FROM gpuhealth.inventory
WHERE chassis_serial != '' AND ({since_days:UInt32} = 0 OR time >= now64(9) - toIntervalDay({since_days:UInt32}))
GROUP BY chassis_serial, cluster
ORDER BY cluster, chassis_serial
