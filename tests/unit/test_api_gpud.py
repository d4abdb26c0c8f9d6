"""The rest of GPUd's API as its server has it (pkg/server/handlers_components.go, client/v1): /v1/info, the
trigger endpoints, DELETE /v1/components, /v1/plugins, YAML and gzip, GPUd's event names and types, and
``Initializing`` before the first readings."""

from __future__ import annotations

import csv
import gzip
import io
import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from flow.integrations.health.gpud_v08 import build_gpu_metrics, build_system_metrics

from gpuhealth.config import NodeIdentity
from gpuhealth.events import CheckResult, GpuInfo, HealthState, Inventory, KernelEvent, MetricBatch, NvmlEvent
from producers.api import Actions, Api, View
from producers.api_http import Limits
from producers.check_spec import load_specs
from producers.gpud_events import FATAL_XIDS, INFO_XIDS
from tests.unit.test_api import AUTH, TOKEN, Recorder, T, view

XID = "accelerator-nvidia-error-xid"


@pytest.fixture
def base() -> Iterator[str]:
    rec = Recorder()
    api = Api(view(), Actions(allow_inject=True, inject=rec.inject, set_healthy=rec.set_healthy), "127.0.0.1:0",
              token=TOKEN)  # fmt: skip
    api.start()
    try:
        yield f"http://{api.address}"
    finally:
        api.close()


def call(base: str, path: str, method: str = "GET", **headers: str) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(
        base + path, method=method, headers={k.replace("_", "-"): v for k, v in headers.items()}
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def test_info_is_states_events_and_metrics_per_component(base: str) -> None:
    status, _, body = call(base, f"/v1/info?components={XID},accelerator-nvidia-power&since=240h&startTime=1")
    xid, power = json.loads(body)
    assert status == 200 and set(xid) == {"component", "startTime", "endTime", "info"}
    assert xid["component"] == XID and xid["startTime"] == "1970-01-01T00:00:01.000Z"
    assert [s["health"] for s in xid["info"]["states"]] == ["Unhealthy"]
    assert [e["name"] for e in xid["info"]["events"]] == ["error_xid"] and xid["info"]["metrics"] is None
    assert power["info"]["metrics"][0]["value"] == 612_500 and power["info"]["events"] is None
    assert call(base, "/v1/info?components=nope")[0] == 404


def test_trigger_and_delete_need_the_token(base: str) -> None:
    """They run work or change what is registered: the same bearer token as set-healthy, refused before routing."""
    for path, method in ((f"/v1/components/trigger-check?componentName={XID}", "GET"),
                         ("/v1/components/trigger-tag?tagName=accelerator", "GET"),
                         (f"/v1/components?componentName={XID}", "DELETE")):  # fmt: skip
        status, headers, _ = call(base, path, method)
        assert status == 401 and headers["WWW-Authenticate"].startswith("Bearer"), path
        assert call(base, path, method, Authorization="Bearer wrong")[0] == 403, path


def test_trigger_answers_as_gpuds(base: str) -> None:
    status, _, body = call(base, f"/v1/components/trigger-check?componentName={XID}", **AUTH)
    [xid] = json.loads(body)  # GPUd's GPUdComponentHealthStates of the component
    assert status == 200 and xid["component"] == XID and xid["states"][0]["health"] == "Unhealthy"
    assert call(base, "/v1/components/trigger-check?componentName=nope", **AUTH)[0] == 404
    assert json.loads(call(base, "/v1/components/trigger-check", **AUTH)[2]) == {
        "code": 400, "message": "component or tag name is required"}  # fmt: skip
    status, _, body = call(base, "/v1/components/trigger-tag?tagName=accelerator", **AUTH)
    assert (status, json.loads(body)) == (200, {"components": [], "exit": 0, "success": True})


def test_delete_refuses_what_cannot_be_deregistered(base: str) -> None:
    assert call(base, f"/v1/components?componentName={XID}", "DELETE", **AUTH)[:3:2] == (
        400, b'{"code":400,"message":"component is not deregisterable"}')  # fmt: skip
    assert call(base, "/v1/components?componentName=nope", "DELETE", **AUTH)[0] == 404
    assert call(base, "/v1/components", "DELETE", **AUTH)[0] == 400
    assert XID in json.loads(call(base, "/v1/components")[2])  # still there


def test_plugins_are_served(base: str) -> None:
    assert call(base, "/v1/plugins")[:3:2] == (200, b"[]")


def test_yaml_indent_and_gzip_as_gpud_negotiates_them(base: str) -> None:
    """GPUd reads the request's Content-Type (its client sets it), json-indent, and gzips /v1/ on Accept-Encoding."""
    plain = untimed(json.loads(call(base, "/v1/states")[2]))
    status, headers, body = call(base, "/v1/states", Content_Type="application/yaml")
    assert status == 200 and headers["Content-Type"] == "text/plain; charset=utf-8"
    assert untimed(yaml.safe_load(body)) == plain  # read back by a real YAML parser
    assert body.index(b"component:") < body.index(b"states:")  # keys sorted, as Go's sigs.k8s.io/yaml writes them
    status, headers, body = call(base, "/v1/states", json_indent="true")
    assert untimed(json.loads(body)) == plain and body.startswith(b'[\n    {\n        "component"')
    status, headers, body = call(base, "/v1/states", Accept_Encoding="gzip")
    assert headers["Content-Encoding"] == "gzip" and untimed(json.loads(gzip.decompress(body))) == plain
    _, headers, body = call(base, "/v1/states", Accept_Encoding="gzip", Content_Type="application/yaml")
    assert untimed(yaml.safe_load(gzip.decompress(body))) == plain
    _, headers, _ = call(base, "/healthz", Accept_Encoding="gzip")
    assert "Content-Encoding" not in headers  # only /v1/ is behind GPUd's gzip middleware
    assert call(base, "/v1/states", Content_Type="application/json; charset=utf-8")[0] == 200
    assert call(base, "/v1/states", Content_Type="text/csv")[:3:2] == (
        400, b'{"code":400,"message":"invalid content type"}')  # fmt: skip


def untimed(states: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A detail component's state is as of the request: its time is not the answer's format."""
    return [c | {"states": [{k: v for k, v in s.items() if k != "time"} for s in c["states"]]} for c in states]


def test_yaml_of_awkward_strings() -> None:
    """What a kernel line may hold survives the YAML answer."""
    from producers.gpud_wire import to_yaml

    nasty = ["yes", "null", "- x", "a: b", "#c", "'q'", '"d"', "tab\there", "nel\x85", "ls\u2028", "",
             "0x1F", "1e3", "~", "\x00bin", "ünï", "😀", "multi\nline"]  # fmt: skip
    doc = {"states": [{"message": m, "n": i, "f": i / 3, "ok": i % 2 == 0, "none": None} for i, m in enumerate(nasty)]}
    assert yaml.safe_load(to_yaml(doc)) == doc


def test_xid_events_are_gpuds_error_xid_typed_as_its_table(base: str) -> None:
    v = view()
    v.published_event(NvmlEvent(id="n", time=T + 1, cluster="c", node="gpu-07", source="nvml", component="nvml",
                                kind="xid", gpu_uuid="GPU-1", xid=48, data=48))  # fmt: skip
    v.published_event(KernelEvent(id="w", time=T + 2, cluster="c", node="gpu-07", source="kmsg", component=XID,
                                  kind="xid", xid=13, priority=3, message="NVRM: Xid (PCI:0000:18:00): 13, …"))  # fmt: skip
    [xids] = v.events_json(T, T + 10, {XID})
    assert [(e["name"], e["type"]) for e in xids["events"]] == [
        ("error_xid", "Fatal"), ("error_xid", "Fatal"), ("error_xid", "Warning")]  # fmt: skip
    assert xids["events"][1]["message"] == "NVML: Xid 48 on GPU-1"  # NVML's own Xids, with their code


def test_gpud_xid_types_agree_with_the_rules_catalog() -> None:
    """The agent keeps GPUd's Xid types (a producer imports no rules); the rules' catalog has the same severities."""
    text = (Path(__file__).parents[2] / "rules" / "catalogs" / "xid.tsv").read_text()
    rows = csv.DictReader(io.StringIO("\n".join(x for x in text.splitlines() if not x.startswith("#"))), delimiter="\t")
    severity = {int(r["code"]): r["severity"] for r in rows}
    assert {c for c, s in severity.items() if s == "Fatal"} == FATAL_XIDS
    assert {c for c, s in severity.items() if s == "Info"} == INFO_XIDS


def test_initializing_until_the_first_readings() -> None:
    """GPUd's Initializing while a detail component's first reading is pending, in a shape Flow's parser takes."""
    v = View(NodeIdentity("c", "gpu-07", "m-1", "b-1", 0))
    assert health(v) == {"os": "Initializing"}  # no host reading yet; no GPU known
    v.inventory = Inventory(id="i", time=T, cluster="c", node="gpu-07", source="nvml", component="inventory",
                            gpus=[GpuInfo(index=0, pci_bus_id="0000:18:00.0", uuid="GPU-1")])  # fmt: skip
    assert health(v)["accelerator-nvidia-temperature"] == health(v)["accelerator-nvidia-power"] == "Initializing"
    [temperature] = v.states_json({"accelerator-nvidia-temperature"})
    assert json.loads(temperature["states"][0]["extra_info"]["data"]) == {"temperatures": []}  # none read yet
    gpus, system = build_gpu_metrics(v.states_json(None), v.machine_info()), build_system_metrics(v.states_json(None))
    assert [g.temperature_c for g in gpus] == [0] and system.cpu_usage_pct == 0  # Flow reads it without error
    v.published_metrics(MetricBatch(id="m", time=T, cluster="c", node="gpu-07", source="nvml", component="gpu",
                                    entity="0000:18:00.0", gpu_uuid="GPU-1", values={"power_w": 1.0,
                                                                                     "power_limit_w": 2.0}))  # fmt: skip
    assert health(v)["accelerator-nvidia-power"] == "Healthy" and "accelerator-nvidia-temperature" not in health(v)
    v.published_metrics(MetricBatch(id="h", time=T, cluster="c", node="gpu-07", source="host", component="os",
                                    entity="gpu-07", values={"uptime_s": 100.0}))  # fmt: skip
    assert health(v)["os"] == "Healthy"


def health(v: View) -> dict[str, str]:
    return {c["component"]: c["states"][0]["health"] for c in v.states_json(None)}


def test_plugins_and_tags_are_the_custom_checks() -> None:
    """GPUd's /v1/plugins lists its custom plugins' specs; ours are the --checks specs, in GPUd's fields, less the
    scripts (open reads must not hand a private check file's commands to every local user)."""
    [spec] = load_specs([{"plugin_name": "nvidia-smi-ok", "tags": ["gpu", "smoke"], "timeout": "1m", "interval": "90s",
                          "health_state_plugin": {"steps": [{"run_bash_script": {"script": "echo secret"}}]}}], "t")  # fmt: skip
    v = view()
    v.plugins = [spec.gpud_spec()]
    v.health_changed(HealthState(id="h2", time=T, cluster="c", node="gpu-07", source="rules",
                                 component="nvidia-smi-ok", entity="nvidia-smi-ok", health="Unhealthy", reason="rc 1",
                                 since=T))  # fmt: skip
    rec = Recorder()
    api = Api(v, Actions(allow_inject=False, inject=rec.inject, set_healthy=rec.set_healthy), "127.0.0.1:0",
              token=TOKEN)  # fmt: skip
    api.start()
    try:
        base = f"http://{api.address}"
        status, _, body = call(base, "/v1/plugins")
        assert (status, json.loads(body)) == (200, [{"plugin_name": "nvidia-smi-ok", "plugin_type": "component",
                                                     "run_mode": "auto", "tags": ["gpu", "smoke"], "timeout": "1m0s",
                                                     "interval": "1m30s"}])  # fmt: skip
        assert b"secret" not in body
        status, _, body = call(base, "/v1/components/trigger-tag?tagName=smoke", **AUTH)
        assert json.loads(body) == {"components": ["nvidia-smi-ok"], "exit": 1, "success": False}  # it is Unhealthy
        [states] = json.loads(call(base, "/v1/components/trigger-check?tagName=gpu", **AUTH)[2])
        assert states["component"] == "nvidia-smi-ok" and states["states"][0]["reason"] == "rc 1"
        assert (states["states"][0]["component_type"], states["states"][0]["run_mode"]) == ("custom-plugin", "auto")
        assert json.loads(call(base, "/v1/components/trigger-tag?tagName=none", **AUTH)[2])["success"] is True
    finally:
        api.close()


def test_trigger_runs_the_custom_checks_now() -> None:
    """With the agent's check runner given, trigger-check and trigger-tag run the checks, as GPUd runs Check()."""
    ran: list[tuple[list[str], str | None]] = []

    def run_checks(names: list[str], tag: str | None) -> list[CheckResult]:
        ran.append((names, tag))
        if "gone" in names:
            raise KeyError("no check named gone")
        return [CheckResult(id=n, time=T, cluster="c", node="gpu-07", source="checks", component=n,
                            plugin_type="component", trigger="manual", exit_code=0 if n == "a" else 1,
                            error="" if n == "a" else "exited 1") for n in names]  # fmt: skip

    v = view()
    v.plugins = [{"plugin_name": "a", "tags": ["t"]}, {"plugin_name": "b", "tags": ["t"]}]
    rec = Recorder()
    api = Api(v, Actions(allow_inject=False, inject=rec.inject, set_healthy=rec.set_healthy, run_checks=run_checks),
              "127.0.0.1:0", token=TOKEN)  # fmt: skip
    api.start()
    try:
        base = f"http://{api.address}"
        [a] = json.loads(call(base, "/v1/components/trigger-check?componentName=a", **AUTH)[2])
        assert (a["component"], a["states"][0]["health"], a["states"][0]["reason"]) == ("a", "Healthy", "ok")
        body = json.loads(call(base, "/v1/components/trigger-tag?tagName=t", **AUTH)[2])
        assert body == {"components": ["a", "b"], "exit": 1, "success": False}  # b exits 1
        [xid] = json.loads(call(base, f"/v1/components/trigger-check?componentName={XID}", **AUTH)[2])
        assert xid["states"][0]["health"] == "Unhealthy"  # not a check: its latest state, nothing run
        assert ran == [(["a"], None), (["a", "b"], None)]
    finally:
        api.close()


def test_a_check_may_run_longer_than_a_request_may_take_to_arrive() -> None:
    """The connection's deadline covers the check's own timeout, not only the request's read time."""

    def slow(names: list[str], tag: str | None) -> list[CheckResult]:
        time.sleep(1.5)  # three read timeouts
        return [CheckResult(id="s", time=T, cluster="c", node="gpu-07", source="checks", component="slow",
                            plugin_type="component", trigger="manual", exit_code=0)]  # fmt: skip

    v = view()
    v.plugins = [{"plugin_name": "slow", "timeout": "5s"}]
    rec = Recorder()
    api = Api(v, Actions(allow_inject=False, inject=rec.inject, set_healthy=rec.set_healthy, run_checks=slow),
              "127.0.0.1:0", token=TOKEN, limits=Limits(read_timeout=0.5))  # fmt: skip
    api.start()
    try:
        status, _, body = call(f"http://{api.address}", "/v1/components/trigger-check?componentName=slow", **AUTH)
        assert status == 200 and json.loads(body)[0]["states"][0]["health"] == "Healthy"
    finally:
        api.close()
