-- gpuhealth schema v3: inventory snapshots, one row per GPU per snapshot.
-- A GPU is keyed by UUID and grouped by serial (GB200-class modules carry two GPUs under
-- one serial); first and last seen are min(time) and max(time) per UUID.

CREATE TABLE IF NOT EXISTS {db}.inventory
(
    id                   String,
    time                 DateTime64(9, 'UTC') CODEC(Delta, ZSTD(1)),
    cluster              LowCardinality(String),
    node                 LowCardinality(String),
    machine_id           LowCardinality(String),
    boot_id              LowCardinality(String),
    source               LowCardinality(String),
    gpu_index            Int16,
    gpu_uuid             String,
    serial               String,
    chassis_serial       LowCardinality(String),
    pci_bus_id           LowCardinality(String),
    model                LowCardinality(String),
    board_part_number    LowCardinality(String),
    vbios                LowCardinality(String),
    driver_version       LowCardinality(String),
    cuda_driver_version  LowCardinality(String),
    INDEX id_bf id TYPE bloom_filter(0.001) GRANULARITY 4
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(time)
ORDER BY (cluster, gpu_uuid, time);
