"""What deploy/ ships: Kubernetes manifests valid for the API server, flags and variables the commands know,
NATS configs the real server accepts, and a Grafana dashboard whose every panel runs on the embedded store."""

from __future__ import annotations

import datetime as dt
import json
import re
import stat
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import typer.main
import yaml

from gpuhealth.cli import app
from gpuhealth.natsd import find_binary
from sinks.clickhouse import Store
from sinks.generate import expected, generate
from sinks.report import week_bounds
from tests.conftest import REPO

DEPLOY = REPO / "deploy"
K8S = DEPLOY / "k8s"
MANIFESTS = sorted(p for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml")
SOURCES = [p for d in ("gpuhealth", "producers", "rules", "sinks") for p in (REPO / d).rglob("*.py")]


def documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_kubernetes_manifests_are_valid_for_the_api_server(path: Path) -> None:
    for doc in documents(path):
        kubernetes_validate.validate(doc, "1.30.0", strict=True)  # raises, naming the field


def test_the_validator_refuses_a_misspelt_field() -> None:
    doc = documents(K8S / "agent.yaml")[0]
    doc["spec"]["template"]["spec"]["containers"][0]["volumeMount"] = []
    with pytest.raises(kubernetes_validate.ValidationError, match="volumeMount"):
        kubernetes_validate.validate(doc, "1.30.0", strict=True)


def test_the_kustomization_names_files_that_exist_or_that_nats_config_writes() -> None:
    k = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    assert {r for r in k["resources"]} == {p.name for p in MANIFESTS}
    generated = re.compile(r"^(nats/(nats-\d\.conf|auth\.conf|secrets/(rules|sink)\.password)|clickhouse\.password)$")
    for gen in k["configMapGenerator"] + k["secretGenerator"]:
        for entry in gen["files"]:
            path = entry.split("=", 1)[-1]
            assert (K8S / path).is_file() or generated.match(path), path


def containers() -> list[tuple[str, dict[str, Any]]]:
    """(where, container) of every gpuhealth container in the manifests and the compose file."""
    out = []
    for path in MANIFESTS:
        for doc in documents(path):
            for c in doc.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []):
                if c.get("command") == ["gpuctl"]:
                    out.append((f"{path.name}:{c['name']}", c))
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    for name, svc in compose["services"].items():
        if svc.get("image") == "gpuhealth:local":
            env = [{"name": k, "value": v} for k, v in svc.get("environment", {}).items()]
            out.append((f"compose.yaml:{name}", {"args": svc["command"], "env": env}))
    return out


def command_options(words: list[str]) -> tuple[str, set[str]]:
    """The gpuctl (sub)command the words name, and every option string it takes."""
    cmd: Any = typer.main.get_command(app)  # typer's own click: a group is what has commands
    path = []
    for w in words:
        if w not in getattr(cmd, "commands", {}):
            break
        cmd, path = cmd.commands[w], [*path, w]
    return " ".join(path), {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}


def test_every_flag_and_variable_the_deployments_use_exists() -> None:
    found = containers()
    assert {w.split(":")[1] for w, _ in found} >= {"agent", "rules", "sink"}
    code = "\n".join(p.read_text() for p in SOURCES)
    for where, c in found:
        args = [str(a) for a in c["args"]]
        name, options = command_options(args)
        assert name.startswith("serve "), where
        flags = {a for a in args if a.startswith("--")}
        assert flags <= options, f"{where}: {sorted(flags - options)} not in `gpuctl {name} --help`"
        for var in (e["name"] for e in c.get("env", []) if e["name"].startswith("GPUHEALTH_")):
            assert var in code, f"{where}: nothing reads {var}"


def test_nats_config_writes_configs_the_server_accepts(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    out = tmp_path / "nats"
    r = CliRunner().invoke(app, ["nats-config", "--out", str(out), "--node", "gpu-001", "--node", "gpu.002"])
    assert r.exit_code == 0, r.output
    for i in (1, 2, 3):
        check = subprocess.run([find_binary(), "-t", "-c", str(out / f"nats-{i}.conf")], capture_output=True,
                               text=True)  # fmt: skip
        assert check.returncode == 0, check.stderr
    secrets = {p.name: p for p in (out / "secrets").iterdir()}
    assert set(secrets) == {"rules.password", "sink.password", "operator.password", "system.password",
                            "agent-gpu-001.password", "agent-gpu_002.password"}  # fmt: skip
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in secrets.values())
    auth = (out / "auth.conf").read_text()
    assert all(p.read_text().strip() not in auth for p in secrets.values())  # hashes only
    before = secrets["agent-gpu-001.password"].read_text()
    r = CliRunner().invoke(app, ["nats-config", "--out", str(out), "--node", "gpu-001", "--node", "gpu-003"])
    assert r.exit_code == 0 and secrets["agent-gpu-001.password"].read_text() == before  # kept on a re-run
    assert '"user": "agent-gpu-003"' in (out / "auth.conf").read_text()
    assert CliRunner().invoke(app, ["nats-config", "--out", str(out)]).exit_code != 0  # no nodes: refused


# ---------------------------------------------------------------- Grafana

WEEK = "2026-W40"


def expand(sql: str, start: dt.datetime, end: dt.datetime, database: str) -> str:
    """The macros of Grafana's ClickHouse data source, as it expands them, over our test database."""
    sql = sql.replace("$__fromTime", f"toDateTime({int(start.timestamp())})")
    sql = sql.replace("$__toTime", f"toDateTime({int(end.timestamp())})").replace("$__interval_s", "3600")
    assert "$" not in sql.replace("$KV", ""), sql
    return sql.replace("gpuhealth.", f"{database}.")


def test_every_grafana_panel_runs_on_the_embedded_store_and_shows_the_generated_week(store: Store) -> None:
    dashboard = json.loads((DEPLOY / "grafana" / "gpuhealth-fleet.json").read_text())
    generate(store, WEEK)
    truth = expected(WEEK)
    start, end, _ = week_bounds(WEEK)
    results: dict[str, list[dict[str, Any]]] = {}
    for panel in dashboard["panels"]:
        [target] = panel["targets"]
        assert target["datasource"]["type"] == "grafana-clickhouse-datasource"
        r = store.client.query(expand(target["rawSql"], start, end, store.database))
        results[panel["title"]] = [dict(zip(r.column_names, row, strict=True)) for row in r.result_rows]

    top = [(r["node"], r["serious"], r["incidents"]) for r in results["Top nodes"]]
    assert top == truth["top_nodes"]
    followed = [(r["serial"], r["nodes"].split(" -> ")) for r in results["GPUs whose faults follow their serial"]]
    assert followed == truth["followed_serial"]
    by_code = {(r["code"], r["gpu_model"]): (r["incidents"], r["occurrences"])
               for r in results["Incidents by code and GPU model"]}  # fmt: skip
    assert by_code == truth["incidents_by_code"]
    # Over time: node-steps in each health add up to the report's availability (hourly steps, ±1 at the edges).
    steps = results["Nodes not Healthy"]
    for column, key in (("Unhealthy", "unhealthy_s"), ("Degraded", "degraded_s"), ("Unknown", "unknown_s")):
        hours = sum(a[key] for a in truth["availability"].values()) / 3600
        assert abs(sum(s[column] for s in steps) - hours) <= 1, column


# ---------------------------------------------------------------- ClickHouse reader

READER_SQL = DEPLOY / "clickhouse" / "reader.sql"


def reader_statements() -> list[str]:
    body = "\n".join(line for line in READER_SQL.read_text().splitlines() if not line.startswith("--"))
    return [" ".join(s.split()) for s in body.split(";") if s.strip()]


def test_the_reader_sql_parses_in_clickhouse_and_grants_select_on_gpuhealth_only(store: Store) -> None:
    statements = reader_statements()
    for stmt in statements:  # ClickHouse's own parser, with a password in the placeholder's place
        store.client.query("EXPLAIN AST " + stmt.replace("@READER_PASSWORD@", "'secret'"))
    [user] = [s for s in statements if s.startswith("CREATE USER")]
    with pytest.raises(Exception, match="Syntax error"):  # as shipped, it cannot create a user with a known password
        store.client.query("EXPLAIN AST " + user)
    assert user.endswith("SETTINGS PROFILE 'gpuhealth_reader'")
    assert [s for s in statements if s.startswith("GRANT")] == [
        "GRANT ON CLUSTER gpuhealth SELECT ON gpuhealth.* TO gpuhealth_reader"
    ]
    assert all(s.startswith(("CREATE SETTINGS PROFILE", "CREATE USER", "GRANT")) for s in statements)


def test_the_reader_profile_has_the_limits_the_sink_enforces() -> None:
    from sinks.reads import LIMITS, session_settings

    [profile] = [s for s in reader_statements() if s.startswith("CREATE SETTINGS PROFILE")]
    setting = re.compile(
        r"(?P<name>\w+) = (?P<value>'?\w+'?)(?: MIN (?P<min>\d+))?(?: MAX (?P<max>\d+))?(?P<const> CONST)?"
    )
    found = {
        m["name"]: (m["value"].strip("'"), m["min"], m["max"], bool(m["const"]))
        for m in setting.finditer(profile.rsplit(" SETTINGS ", 1)[1])
    }
    assert found.pop("readonly") == ("2", None, None, False)
    wanted = session_settings(LIMITS, 10**12, 10**6, in_process=False)  # the caps, as the sink sets them
    assert set(found) == set(wanted)
    for name, value in wanted.items():
        if isinstance(value, str) or name == "allow_introspection_functions":
            assert found[name] == (str(value), None, None, True), name  # fixed
        else:
            assert found[name] == (str(value), "1", str(value), False), name  # 0 would mean unlimited
