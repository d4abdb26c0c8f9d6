-- Incidents active in the week by component, code and GPU model: how many, how many occurrences, on how
-- many entities and nodes. An entity is (node, entity): the same PCI address on two nodes is two devices.
WITH
    toDateTime64({start:String}, 9, 'UTC') AS ws,
    toDateTime64({end:String}, 9, 'UTC') AS we
SELECT i.component AS component, i.code AS code, any(i.severity) AS severity,
       if(g.model = '', 'unknown', g.model) AS gpu_model,
       count() AS incidents, sum(i.count) AS occurrences,
       uniqExactIf((i.node, i.entity), i.entity != '') AS entities, uniqExact(i.node) AS nodes
FROM gpuhealth.incidents AS i FINAL
LEFT JOIN gpuhealth.gpus AS g ON g.gpu_uuid = i.gpu_uuid AND g.cluster = i.cluster
WHERE i.last >= ws AND i.first < we AND i.component != 'gpuhealth-fleet'  -- common causes has those
GROUP BY component, code, gpu_model
ORDER BY incidents DESC, occurrences DESC, component, code
