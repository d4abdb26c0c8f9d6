"""Every stage's /metrics under ``gpuctl up``, as Prometheus and dcgm-exporter's users read it, judged by promtool."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import REPO, need
from tests.e2e.conftest import Up, free_port, reachable_dir, running, wait_for

# The fake NVML's idle GPU (producers/fake_nvml.py, FakeGpu), in DCGM's units: MiB, W, MHz, C.
IDLE = {
    "DCGM_FI_DEV_GPU_TEMP": 34.0,
    "DCGM_FI_DEV_MEMORY_TEMP": 41.0,
    "DCGM_FI_DEV_SLOWDOWN_TEMP": 89.0,
    "DCGM_FI_DEV_SHUTDOWN_TEMP": 92.0,
    "DCGM_FI_DEV_POWER_USAGE": 71.0,  # 71,000 mW
    "DCGM_FI_DEV_ENFORCED_POWER_LIMIT": 700.0,
    "DCGM_FI_DEV_SM_CLOCK": 345.0,
    "DCGM_FI_DEV_MEM_CLOCK": 2619.0,
    "DCGM_FI_DEV_GPU_UTIL": 0.0,
    "DCGM_FI_DEV_MEM_COPY_UTIL": 0.0,
    "DCGM_FI_DEV_ENC_UTIL": 0.0,
    "DCGM_FI_DEV_DEC_UTIL": 0.0,
    "DCGM_FI_DEV_FB_USED": 530.0,  # 555,745,280 bytes
    "DCGM_FI_DEV_FB_TOTAL": 77781.0,  # 81,559,420,928 bytes
    "DCGM_FI_DEV_FB_FREE": 77251.0,
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": 0.0,
    "DCGM_FI_DEV_PCIE_LINK_GEN": 5.0,
    "DCGM_FI_DEV_PCIE_LINK_WIDTH": 16.0,
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": 0.0,
    "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL": 0.0,
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": 0.0,
    "DCGM_FI_DEV_ROW_REMAP_FAILURE": 0.0,
    "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": 1.0,  # GPU idle
    "DCGM_FI_DEV_XID_ERRORS": 0.0,
}
COUNTERS = {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
            "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS"}  # fmt: skip
# What promtool says of dcgm-exporter's own names, which dashboards need as they are; nothing else is allowed.
DCGM_FINDINGS = (
    "label names should be written in 'snake_case' not 'camelCase'",  # modelName
    'counter metrics should have "_total" suffix',
    "metric name should not include type 'counter'",  # DCGM_FI_DEV_PCIE_REPLAY_COUNTER
)


def text(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as r:
        return str(r.read().decode())


def status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return e.code


def dcgm(api: str) -> dict[str, dict[str, tuple[str, dict[str, str], float]]]:
    """name → gpu index → (type, labels, value)"""
    return {f.name: {s.labels["gpu"]: (f.type, s.labels, s.value) for s in f.samples}
            for f in text_string_to_metric_families(text(api + "/metrics")) if f.name.startswith("DCGM_")}  # fmt: skip


def promtool_findings(exposition: str) -> list[str]:
    r = subprocess.run(["promtool", "check", "metrics"], input=exposition, capture_output=True, text=True, timeout=60)
    assert r.returncode in (0, 3), r.stderr  # 3: lint findings, listed on stderr
    return [line for line in r.stderr.splitlines() if line.strip()]


def assert_the_dashboard_reads(exposition: str) -> None:
    """Every metric deploy/grafana/gpuhealth-gpus.json queries is on the agent's /metrics, with the labels the
    query groups and filters by."""
    labels: dict[str, set[str]] = {}
    for f in text_string_to_metric_families(exposition):
        for s in f.samples:
            labels.setdefault(f.name, set()).update(s.labels)
    dashboard = json.loads((REPO / "deploy" / "grafana" / "gpuhealth-gpus.json").read_text())
    queries = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    queries += [v["query"]["query"] for v in dashboard["templating"]["list"] if v["type"] == "query"]
    assert len(queries) > 10
    for q in queries:
        names = set(re.findall(r"\b(DCGM_FI_[A-Z0-9_]+|gpuhealth_[a-z_]+)\b", q))
        used = {x.strip() for g in re.findall(r"by \(([^)]*)\)", q) for x in g.split(",")}
        used |= set(re.findall(r"(\w+)=~", q)) | set(re.findall(r", (\w+)\)$", q))  # label_values(m, label)
        assert names, q
        for name in names:
            assert name in labels, f"{name} (in {q}) is not on the agent's /metrics"
            assert used <= labels[name], f"{q}: {sorted(used - labels[name])} not labels of {name}"


def inject(up: Up, api: str, message: str) -> None:
    token = (up.data_dir / "agent" / "api-token").read_text().strip()
    body = json.dumps({"kernel_message": {"priority": "KERN_ERR", "message": message}}).encode()
    req = urllib.request.Request(api + "/inject-fault", data=body, method="POST",
                                 headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})  # fmt: skip
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status == 200


def test_every_stage_scrapeable_and_each_gpu_as_dcgm_exporter_shows_it(tmp_path: Path) -> None:
    need(shutil.which("promtool") is not None, "promtool (Debian's prometheus package: deploy/test-deps.sh)")
    port = free_port()
    with running(tmp_path, "--simulate-gpus", "2", "--nvml-poll-interval", "1", "--api-tls", "off",
                 "--metrics-listen", f"127.0.0.1:{port}") as up:  # fmt: skip
        api = up.info.sources["api"].removeprefix("ok: ")
        wait_for(lambda: len(dcgm(api).get("DCGM_FI_DEV_GPU_TEMP", {})) == 2, timeout=60)
        got = dcgm(api)
        bus_ids = {g["busID"]: g["uuid"] for g in json.loads(text(api + "/machine-info"))["gpuInfo"]["gpus"]}
        for gpu, pci in (("0", "00000000:18:00.0"), ("1", "00000000:2A:00.0")):
            for name, value in IDLE.items():
                kind, labels, seen = got[name][gpu]
                assert (name, seen, kind) == (name, value, "counter" if name in COUNTERS else "gauge")
            assert labels == {"gpu": gpu, "UUID": bus_ids[pci.removeprefix("0000").lower()], "pci_bus_id": pci,
                              "device": f"nvidia{gpu}", "modelName": "NVIDIA H100 80GB HBM3",
                              "Hostname": socket.gethostname(), "DCGM_FI_DRIVER_VERSION": "550.90.07"}  # fmt: skip
        # energy since the driver loaded, in mJ: a counter that grows as the GPUs draw their 71 W
        first = [got["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"][gpu] for gpu in ("0", "1")]
        assert [(kind, value > 0) for kind, _, value in first] == [("counter", True)] * 2
        wait_for(lambda: all(dcgm(api)["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"][gpu][2] > first[int(gpu)][2]
                             for gpu in ("0", "1")), timeout=30)  # fmt: skip
        # an Xid on GPU 1 is its DCGM_FI_DEV_XID_ERRORS; GPU 0 stays at 0
        inject(up, api, "NVRM: Xid (PCI:0000:2a:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.")
        wait_for(lambda: dcgm(api)["DCGM_FI_DEV_XID_ERRORS"]["1"][2] == 79.0, timeout=30)
        assert dcgm(api)["DCGM_FI_DEV_XID_ERRORS"]["0"][2] == 0.0

        # the rules' and the sink's metrics, liveness and readiness on the one flag's address
        services = f"http://127.0.0.1:{port}"
        assert (status(services + "/healthz"), status(services + "/readyz")) == (200, 200)

        def handled() -> set[tuple[str, str]]:
            return {(s.labels["stage"], s.labels["stream"]) for f in text_string_to_metric_families(
                text(services + "/metrics")) if f.name == "gpuhealth_consumer_messages" for s in f.samples}  # fmt: skip

        wait_for(lambda: {("rules", "GPUHEALTH_EVENTS"), ("sink", "GPUHEALTH_METRICS")} <= handled(), timeout=60)

        # promtool: nothing on gpuhealth's own names; on dcgm-exporter's, only what it says of dcgm-exporter
        agent = promtool_findings(text(api + "/metrics"))
        assert [f for f in agent if not f.startswith("DCGM_FI_")] == []
        assert {f.split(" ", 1)[1] for f in agent} <= set(DCGM_FINDINGS)
        assert promtool_findings(text(services + "/metrics")) == []
        assert_the_dashboard_reads(text(api + "/metrics"))


def test_prometheus_scrapes_every_stage_with_the_shipped_config(tmp_path: Path) -> None:
    """Debian's Prometheus, given deploy/prometheus/prometheus.yml with only this stack's ports (and a 1 s
    interval) put in, scrapes the agent over its self-signed HTTPS and the services, and answers dcgm queries."""
    need(shutil.which("prometheus") is not None, "prometheus (Debian's prometheus package: deploy/test-deps.sh)")
    port, web = free_port(), free_port()
    with running(tmp_path, "--simulate-gpus", "2", "--nvml-poll-interval", "1", "--metrics-listen",
                 f"127.0.0.1:{port}") as up:  # fmt: skip
        api = up.info.sources["api"].removeprefix("ok: ")
        assert api.startswith("https://")  # the default, as shipped
        config = yaml.safe_load((REPO / "deploy" / "prometheus" / "prometheus.yml").read_text())
        config["global"]["scrape_interval"] = "1s"
        for job in config["scrape_configs"]:
            ours = [api.removeprefix("https://")] if job["job_name"] == "gpuhealth-agent" else [f"127.0.0.1:{port}"]
            job["static_configs"] = [{"targets": ours}]
        (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
        argv = ["prometheus", f"--config.file={tmp_path / 'prometheus.yml'}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{web}"]  # fmt: skip
        with (tmp_path / "prometheus.log").open("w") as log:
            prometheus = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        try:

            def query(q: str) -> list[dict[str, object]]:
                url = f"http://127.0.0.1:{web}/api/v1/query?" + urllib.parse.urlencode({"query": q})
                try:
                    return list(json.loads(text(url))["data"]["result"])
                except OSError:
                    return []

            wait_for(lambda: len(query('up{job=~"gpuhealth-.*"} == 1')) == 2, timeout=60)
            wait_for(lambda: len(query("DCGM_FI_DEV_GPU_TEMP == 34")) == 2, timeout=60)
            wait_for(lambda: len(query('gpuhealth_consumer_messages_total{stage="sink"}')) > 0, timeout=60)
        finally:
            prometheus.terminate()
            prometheus.wait(timeout=30)


def two_free_ports() -> int:
    """A port whose next one is free too (up as root gives the sink the rules' port + 1)."""
    for _ in range(50):
        port = free_port()
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port + 1)) != 0:
                return port
    raise AssertionError("no two free ports in a row")


def stages_on(url: str) -> set[str]:
    """The stages whose consumers counted messages on this /metrics (the sink's dead letters: stage sink-dlq)."""
    try:
        exposition = text(url + "/metrics")
    except OSError:
        return set()
    return {s.labels["stage"].removesuffix("-dlq") for f in text_string_to_metric_families(exposition)
            if f.name == "gpuhealth_consumer_messages" for s in f.samples}  # fmt: skip


def test_as_root_with_a_service_user_the_rules_and_the_sink_serve_theirs_on_two_ports() -> None:
    port = two_free_ports()
    rules, sink = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{port + 1}"
    with reachable_dir() as base, running(base, "--service-user", "nobody", "--metrics-listen", f"127.0.0.1:{port}"):
        try:
            wait_for(lambda: stages_on(rules) == {"rules"} and stages_on(sink) == {"sink"}, timeout=60)
        except AssertionError as e:
            raise AssertionError(f"{e}: rules' port {stages_on(rules)}, sink's {stages_on(sink)}") from None
        for url in (rules, sink):
            assert (status(url + "/healthz"), status(url + "/readyz")) == (200, 200)
