-- gpuhealth schema v5: what reports read instead of raw rows.
-- actions: every repair action issued and every clearing (reboot, set-healthy, restored), from health_states.
-- metrics_hourly: per (node, entity, metric) and hour, min/max/avg/last/count, from metrics.
-- gpus: one row per GPU UUID with first and last seen, its serial, and the nodes and clusters it was in.

CREATE TABLE IF NOT EXISTS {db}.actions
(
    time            DateTime64(9, 'UTC') CODEC(Delta, ZSTD(1)),
    cluster         LowCardinality(String),
    node            LowCardinality(String),
    component       LowCardinality(String),
    entity          String,
    gpu_uuid        String,
    event           LowCardinality(String),
    action          LowCardinality(String),
    reason          String,
    state_id        String
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(time)
ORDER BY (cluster, node, time, state_id);

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.actions_mv TO {db}.actions AS
SELECT time, cluster, node, component, entity, gpu_uuid,
       if(length(repair_actions) > 0, 'issued', 'cleared') AS event,
       if(length(repair_actions) > 0, repair_actions[1],
          multiIf(startsWith(reason, 'set healthy by'), 'set-healthy', startsWith(reason, 'cleared by reboot'),
                  'reboot', 'restored')) AS action,
       reason, id AS state_id
FROM {db}.health_states
WHERE length(repair_actions) > 0 OR startsWith(reason, 'set healthy by') OR startsWith(reason, 'cleared by reboot')
   OR startsWith(reason, 'restored');

CREATE TABLE IF NOT EXISTS {db}.metrics_hourly
(
    hour      DateTime('UTC'),
    cluster   LowCardinality(String),
    node      LowCardinality(String),
    entity    LowCardinality(String),
    gpu_uuid  LowCardinality(String),
    name      LowCardinality(String),
    min_v     SimpleAggregateFunction(min, Float64),
    max_v     SimpleAggregateFunction(max, Float64),
    sum_v     SimpleAggregateFunction(sum, Float64),
    n         SimpleAggregateFunction(sum, UInt64),
    last_v    AggregateFunction(argMax, Float64, DateTime64(9, 'UTC'))
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(hour)
ORDER BY (cluster, node, entity, gpu_uuid, name, hour);

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.metrics_hourly_mv TO {db}.metrics_hourly AS
SELECT toStartOfHour(time) AS hour, cluster, node, entity, gpu_uuid, name, min(value) AS min_v, max(value) AS max_v,
       sum(value) AS sum_v, count() AS n, argMaxState(value, time) AS last_v
FROM {db}.metrics
GROUP BY hour, cluster, node, entity, gpu_uuid, name;

CREATE VIEW IF NOT EXISTS {db}.gpus AS
SELECT cluster, gpu_uuid, argMax(serial, time) AS serial, argMax(model, time) AS model,
       argMax(node, time) AS last_node, argMax(chassis_serial, time) AS chassis_serial,
       argMax(pci_bus_id, time) AS pci_bus_id, argMax(vbios, time) AS vbios,
       argMax(driver_version, time) AS driver_version, min(time) AS first_seen, max(time) AS last_seen,
       groupUniqArray(node) AS nodes, groupUniqArray(machine_id) AS machines
FROM {db}.inventory
WHERE gpu_uuid != ''
GROUP BY cluster, gpu_uuid;
