-- GPUs seen on more than one machine (a GPU moved between hosts, or hosts were re-imaged): by UUID, with
-- its serial and where it has been, most recent last. Parameter: since_days (0: all time).
SELECT gpu_uuid, any(serial) AS serial, any(model) AS model,
       arrayStringConcat(arrayMap(x -> x.2, arraySort(x -> x.1, groupUniqArray((first_seen, node)))), ' -> ') AS path,
       uniqExact(machine_id) AS machines, min(first_seen) AS first, max(last_seen) AS last
FROM
(
    SELECT gpu_uuid, serial, model, node, machine_id, min(time) AS first_seen, max(time) AS last_seen
    FROM gpuhealth.inventory
    WHERE gpu_uuid != '' AND ({since_days:UInt32} = 0 OR time >= now64(9) - toIntervalDay({since_days:UInt32}))
    GROUP BY gpu_uuid, serial, model, node, machine_id
)
GROUP BY gpu_uuid
HAVING machines > 1
ORDER BY last DESC, gpu_uuid
