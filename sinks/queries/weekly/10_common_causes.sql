-- Common causes: fleet incidents the responder raised, one fault type on many nodes sharing a switch or
-- a rack within minutes (their drains held for a person). The group is the entity (kind:name).
WITH
    toDateTime64({start:String}, 9, 'UTC') AS ws,
    toDateTime64({end:String}, 9, 'UTC') AS we
SELECT entity AS shared, code AS fault, count AS nodes, first, reason
FROM gpuhealth.incidents FINAL
WHERE component = 'gpuhealth-fleet' AND last >= ws AND first < we
ORDER BY first, shared
