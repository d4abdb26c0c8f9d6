"""Every stage's metrics wherever deploy/ runs it: the units and the pods serve them and their probes, and the
shipped Prometheus config (judged by promtool) and PodMonitor find them."""

from __future__ import annotations

import re
import shutil
import subprocess
from typing import Any

import yaml

from tests.conftest import REPO, need

DEPLOY = REPO / "deploy"
SYSTEMD = DEPLOY / "systemd"
SCRAPE = DEPLOY / "prometheus" / "prometheus.yml"


def pod(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the pod template's metadata, its one container) of deploy/k8s/<name>.yaml"""
    [doc] = [d for d in yaml.safe_load_all((DEPLOY / "k8s" / f"{name}.yaml").read_text()) if d]
    template = doc["spec"]["template"]
    [container] = template["spec"]["containers"]
    return template["metadata"], container


def flag(args: list[str], name: str) -> str:
    return str(args[args.index(name) + 1])


def exec_start(unit: str) -> str:
    [line] = [x for x in (SYSTEMD / unit).read_text().splitlines() if x.startswith("ExecStart=")]
    return line


def test_the_shipped_scrape_config_passes_promtool() -> None:
    need(shutil.which("promtool") is not None, "promtool (Debian's prometheus package: deploy/test-deps.sh)")
    r = subprocess.run(["promtool", "check", "config", str(SCRAPE)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "WARNING" not in r.stdout + r.stderr


def test_the_units_serve_every_stages_metrics_where_the_scrape_config_looks() -> None:
    defaults = dict(re.findall(r"^(GPUHEALTH_\w+)=(\S+)$", (SYSTEMD / "gpuhealth.default").read_text(), re.M))
    for unit, var, port in (("gpuhealth-rules.service", "GPUHEALTH_RULES_METRICS_LISTEN", "9464"),
                            ("gpuhealth-sink.service", "GPUHEALTH_SINK_METRICS_LISTEN", "9465")):  # fmt: skip
        assert f"--metrics-listen ${{{var}}}" in exec_start(unit)
        assert defaults[var] == f"0.0.0.0:{port}"  # reachable by a fleet's Prometheus
    # gpuctl up as root: the rules on the flag's port, the sink on the next; the agent on its API
    assert "--metrics-listen 127.0.0.1:9464" in exec_start("gpuhealth.service")
    jobs = {j["job_name"]: j for j in yaml.safe_load(SCRAPE.read_text())["scrape_configs"]}
    targets = {job: [t for s in j["static_configs"] for t in s["targets"]] for job, j in jobs.items()}
    assert targets == {
        "gpuhealth-agent": ["127.0.0.1:15132"],
        "gpuhealth-services": ["127.0.0.1:9464", "127.0.0.1:9465"],
    }
    assert jobs["gpuhealth-agent"]["scheme"] == "https"  # the agent's API serves HTTPS unless told --api-tls off
    assert "--api-tls" not in exec_start("gpuhealth.service")


def test_the_rules_and_sink_pods_serve_metrics_and_are_probed_on_them() -> None:
    for name in ("rules", "sink"):
        meta, c = pod(name)
        [port] = [p["containerPort"] for p in c["ports"] if p["name"] == "metrics"]
        assert flag(c["args"], "--metrics-listen") == f"0.0.0.0:{port}"
        assert meta["annotations"]["prometheus.io/scrape"] == "true"
        assert (meta["annotations"]["prometheus.io/port"], meta["annotations"]["prometheus.io/path"]) == (
            str(port), "/metrics")  # fmt: skip
        assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
        assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}


def test_the_agent_pod_is_scraped_on_its_api_with_its_scheme() -> None:
    meta, c = pod("agent")
    [port] = [p["containerPort"] for p in c["ports"] if p["name"] == "api"]
    assert flag(c["args"], "--api-listen") == f"0.0.0.0:{port}"
    assert "--api-tls" not in c["args"]  # HTTPS, the default
    a = meta["annotations"]
    assert (a["prometheus.io/scrape"], a["prometheus.io/port"], a["prometheus.io/scheme"]) == (
        "true",
        str(port),
        "https",
    )


def test_the_podmonitor_selects_every_pod_on_ports_they_name() -> None:
    monitor = yaml.safe_load((DEPLOY / "prometheus" / "podmonitor.yaml").read_text())
    selector = monitor["spec"]["selector"]["matchLabels"]
    endpoints = {e["port"]: e for e in monitor["spec"]["podMetricsEndpoints"]}
    for name, port, scheme in (("agent", "api", "https"), ("rules", "metrics", "http"), ("sink", "metrics", "http")):
        meta, c = pod(name)
        assert selector.items() <= meta["labels"].items()
        assert port in {p["name"] for p in c["ports"]}
        assert endpoints[port].get("scheme", "http") == scheme


def test_compose_serves_the_services_metrics_where_the_scrape_config_looks() -> None:
    services = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]
    jobs = {j["job_name"]: j for j in yaml.safe_load(SCRAPE.read_text())["scrape_configs"]}
    scraped = {t for s in jobs["gpuhealth-services"]["static_configs"] for t in s["targets"]}
    for name in ("rules", "sink"):
        svc = services[name]
        port = flag(svc["command"], "--metrics-listen").rpartition(":")[2]
        assert svc["ports"] == [f"127.0.0.1:{port}:{port}"] and f"127.0.0.1:{port}" in scraped
        assert f"http://127.0.0.1:{port}/readyz" in " ".join(svc["healthcheck"]["test"])
    assert services["agent"]["ports"] == ["127.0.0.1:15132:15132"]
    assert [t for s in jobs["gpuhealth-agent"]["static_configs"] for t in s["targets"]] == ["127.0.0.1:15132"]
