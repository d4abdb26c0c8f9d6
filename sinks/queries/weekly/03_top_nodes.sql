-- The nodes with the most incidents in the week (hardware-class first: Fatal, Critical, Unhealthy).
WITH
    toDateTime64({start:String}, 9, 'UTC') AS ws,
    toDateTime64({end:String}, 9, 'UTC') AS we
SELECT node,
       countIf(severity IN ('Fatal', 'Critical', 'Unhealthy')) AS serious,
       count() AS incidents,
       sum(count) AS occurrences,
       groupUniqArray(10)(code) AS codes
FROM gpuhealth.incidents FINAL
WHERE last >= ws AND first < we AND component != 'gpuhealth-fleet'  -- the responder's, not a node's
GROUP BY node
ORDER BY serious DESC, incidents DESC, node
LIMIT 20
