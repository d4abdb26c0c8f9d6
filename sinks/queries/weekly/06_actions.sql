-- Repair actions issued in the week, and how states were cleared (reboot, set-healthy, restored).
WITH
    toDateTime64({start:String}, 9, 'UTC') AS ws,
    toDateTime64({end:String}, 9, 'UTC') AS we
SELECT event, action, count() AS times, uniqExact(node) AS nodes
FROM gpuhealth.actions
WHERE time >= ws AND time < we
GROUP BY event, action
ORDER BY event DESC, times DESC, action
