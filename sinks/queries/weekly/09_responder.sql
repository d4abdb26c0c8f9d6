-- What the responder decided in the week: drains and resumes by outcome (acted, dry_run, skipped,
-- refused by the circuit breaker or the rate limit, held in a fleet incident, failed), on how many nodes.
WITH
    toDateTime64({start:String}, 9, 'UTC') AS ws,
    toDateTime64({end:String}, 9, 'UTC') AS we
SELECT action, outcome, count() AS decisions, uniqExact(node) AS nodes
FROM gpuhealth.responder_decisions
WHERE time >= ws AND time < we AND action != 'none'
GROUP BY action, outcome
ORDER BY action, decisions DESC, outcome
