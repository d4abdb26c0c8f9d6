-- GPUs reported per day and cluster, by model (from inventory snapshots: each agent start and each change).
SELECT toDate(time) AS day, cluster, if(model = '', 'unknown', model) AS model, uniqExact(gpu_uuid) AS gpus,
       uniqExact(node) AS nodes
FROM gpuhealth.inventory
WHERE gpu_uuid != '' AND ({since_days:UInt32} = 0 OR time >= now64(9) - toIntervalDay({since_days:UInt32}))
GROUP BY day, cluster, model
ORDER BY day, cluster, model
