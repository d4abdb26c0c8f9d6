-- The ClickHouse user gpuctl's reads should use with --clickhouse (gpuctl sql, events, incidents, report,
-- inventory): SELECT on the gpuhealth database and nothing else, so no file(), url(), s3(), remote() or
-- other database is within its reach, under a settings profile with the limits the sink puts on its own
-- queries (sinks/reads.py, Limits; tests/unit/test_deploy.py keeps the two equal). readonly = 2 lets
-- gpuctl set a query's own timeout and row cap, inside the MIN and MAX below and never past them.
--
-- Run once, with the reader's password in the place of @READER_PASSWORD@ (quoted); run as it is, it
-- fails rather than create a user with a known password:
--   sed "s/@READER_PASSWORD@/'$(cat reader.password)'/" deploy/clickhouse/reader.sql | clickhouse-client --multiquery

CREATE SETTINGS PROFILE IF NOT EXISTS gpuhealth_reader ON CLUSTER gpuhealth SETTINGS
    readonly = 2,
    max_execution_time = 120 MIN 1 MAX 120,
    max_memory_usage = 1073741824 MIN 1 MAX 1073741824,
    max_result_rows = 100000 MIN 1 MAX 100000,
    max_result_bytes = 33554432 MIN 1 MAX 33554432,
    result_overflow_mode = 'throw' CONST,
    max_rows_to_read = 2000000000 MIN 1 MAX 2000000000,
    read_overflow_mode = 'throw' CONST,
    allow_introspection_functions = 0 CONST;

CREATE USER IF NOT EXISTS gpuhealth_reader ON CLUSTER gpuhealth
    IDENTIFIED WITH sha256_password BY @READER_PASSWORD@
    SETTINGS PROFILE 'gpuhealth_reader';

GRANT ON CLUSTER gpuhealth SELECT ON gpuhealth.* TO gpuhealth_reader;
