-- Fleet availability per node: seconds the node spent Unhealthy, Degraded and Unknown in the week,
-- the node's health at any instant being the worst of its components' (states carried in from before
-- the week count from its start; a week in progress ends now). Parameters: start, end ('YYYY-MM-DD hh:mm:ss', UTC).
WITH
    toDateTime64({start:String}, 9, 'UTC') AS ws,
    least(toDateTime64({end:String}, 9, 'UTC'), now64(9)) AS we
SELECT
    node,
    sumIf(dur, sev = 2) AS unhealthy_s,
    sumIf(dur, sev = 1) AS degraded_s,
    sumIf(dur, sev = 3) AS unknown_s,
    round(100 * (1 - sumIf(dur, sev = 2) / dateDiff('second', ws, we)), 3) AS available_pct
FROM
(
    SELECT node, t, sev,
           dateDiff('second', t, leadInFrame(t, 1, we) OVER (PARTITION BY node ORDER BY t
                    ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING)) AS dur
    FROM
    (
        SELECT g.node AS node, g.t AS t,
               max(multiIf(h.health = 'Unhealthy', 2, h.health = 'Degraded', 1, h.health = 'Unknown', 3, 0)) AS sev
        FROM
        (
            SELECT p.node AS node, p.t AS t, e.component AS component, e.entity AS entity
            FROM
            (
                SELECT DISTINCT node, greatest(time, ws) AS t FROM gpuhealth.health_states WHERE time < we
                UNION DISTINCT
                SELECT DISTINCT node, ws AS t FROM gpuhealth.health_states WHERE time < we
            ) AS p
            INNER JOIN
            (
                SELECT DISTINCT node, component, entity FROM gpuhealth.health_states WHERE time < we
            ) AS e ON p.node = e.node
        ) AS g
        ASOF LEFT JOIN
        (
            SELECT node, component, entity, time, health FROM gpuhealth.health_states WHERE time < we
        ) AS h ON g.node = h.node AND g.component = h.component AND g.entity = h.entity AND g.t >= h.time
        GROUP BY node, t
    )
)
GROUP BY node
HAVING unhealthy_s + degraded_s + unknown_s > 0
ORDER BY unhealthy_s DESC, degraded_s DESC, node
