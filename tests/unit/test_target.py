"""The ClickHouse server path's own logic: URLs, credentials, redaction, DDL for a database and a cluster.

No ClickHouse server runs on the build machines; the embedded engine runs the same SQL (tests/integration)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from gpuhealth.errors import ConfigError
from sinks import clickhouse, cluster_ddl
from sinks.target import parse


def test_chdb_and_server_urls() -> None:
    t = parse("chdb:///var/lib/gpuhealth/clickhouse", env={})
    assert (t.kind, t.path, t.database) == ("chdb", "/var/lib/gpuhealth/clickhouse", "gpuhealth")
    # The engine's own settings go with every handle: the first one opened starts the engine with them.
    assert t.client_kwargs() == {
        "dsn": "chdb:///var/lib/gpuhealth/clickhouse",
        "chdb_options": {"memory_worker_period_ms": "1000"},
    }
    s = parse("https://ingest@ch.example.net/fleet", env={})
    assert (s.host, s.port, s.secure, s.username, s.database) == ("ch.example.net", 8443, True, "ingest", "fleet")
    h = parse("http://10.0.0.5", env={})
    assert (h.port, h.secure, h.username, h.database) == (8123, False, "default", "gpuhealth")


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("mysql://h", "unsupported ClickHouse URL"),
        ("https://:8443", "has no host"),
        ("https://h:99999", "bad port"),
        ("chdb://relative/dir", "absolute path"),
        ("https://h/bad-name", "bad ClickHouse database name"),
    ],
)
def test_bad_urls_are_one_clear_error(url: str, says: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse(url, env={})
    assert says in str(e.value)


def test_password_from_the_environment_or_a_file_and_never_shown(tmp_path: Path) -> None:
    assert parse("https://u@h", env={"GPUHEALTH_CLICKHOUSE_PASSWORD": "s3cret"}).password == "s3cret"
    secret = tmp_path / "pw"
    secret.write_text("from-file\n")
    assert parse("https://u@h", env={}, password_file=secret).password == "from-file"
    assert parse("https://u@h", env={"GPUHEALTH_CLICKHOUSE_PASSWORD_FILE": str(secret)}).password == "from-file"
    t = parse("https://u:in%40url@h", env={"GPUHEALTH_CLICKHOUSE_CA": "/etc/ca.pem"})
    assert t.password == "in@url" and t.client_kwargs()["ca_cert"] == "/etc/ca.pem"
    for shown in (t.redacted(), repr(t), str(t)):
        assert "in@url" not in shown and "***" in shown
    with pytest.raises(ConfigError, match="cannot read the ClickHouse password file"):
        parse("https://u@h", env={}, password_file=tmp_path / "missing")
    with pytest.raises(ConfigError) as e:
        parse("mysql://u:hunter2@h", env={})
    assert "hunter2" not in str(e.value)


async def test_an_unreachable_server_is_logged_without_its_password(caplog: pytest.LogCaptureFixture) -> None:
    store = clickhouse.Store("http://u:hunter2@127.0.0.1:1/gpuhealth")
    with caplog.at_level(logging.WARNING), pytest.raises(Exception):  # noqa: B017
        await store.run(store.connect)
    assert store.client is None  # nothing half-open: the next attempt starts over
    assert "hunter2" not in caplog.text
    store.close()


def test_ddl_renders_for_any_database() -> None:
    for version, sql in clickhouse.migrations():
        statements = clickhouse.split_statements(sql.replace("{db}", "fleet_a"))
        assert statements, version
        assert all("{db}" not in s for s in statements)
        assert all("fleet_a." in s for s in statements if s.startswith("CREATE"))


def test_cluster_ddl_is_replicated_and_distributed_and_committed() -> None:
    text = cluster_ddl.render("gpufleet")
    for table in ("events", "health_states", "metrics", "incidents", "inventory"):
        assert f"CREATE TABLE IF NOT EXISTS gpuhealth.{table}_local ON CLUSTER gpufleet" in text
        assert f"ENGINE = Distributed(gpufleet, gpuhealth, {table}_local" in text
    assert (
        "ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/gpuhealth/incidents_local', '{replica}', seq)" in text
    )
    assert "ENGINE = MergeTree" not in text
    committed = (Path(cluster_ddl.__file__).parents[1] / "deploy" / "clickhouse" / "cluster.sql").read_text()
    assert committed == cluster_ddl.render(), "regenerate: python -m sinks.cluster_ddl > deploy/clickhouse/cluster.sql"
