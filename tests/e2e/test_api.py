"""The agent's GPUd-compatible API on a running gpuctl up: what a GPUd client reads, and /metrics."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.conftest import Up, running, wait_for


def api(up: Up) -> str:
    return up.info.sources["api"].removeprefix("ok: ")


def tls(up: Up) -> ssl.SSLContext:
    """HTTPS, verified against the certificate the agent made in its data dir."""
    return ssl.create_default_context(cafile=up.data_dir / "agent" / "api-cert.pem")


def get(up: Up, path: str) -> Any:
    with urllib.request.urlopen(api(up) + path, timeout=10, context=tls(up)) as r:
        body = r.read()
        return json.loads(body) if r.headers["Content-Type"].startswith("application/json") else body.decode()


def post(up: Up, path: str, body: object) -> Any:
    token = (up.data_dir / "agent" / "api-token").read_text().strip()  # writes need it; root can read it
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    req = urllib.request.Request(api(up) + path, data=json.dumps(body).encode(), method="POST", headers=headers)
    with urllib.request.urlopen(req, timeout=10, context=tls(up)) as r:
        return json.loads(r.read())


def gpud_states(up: Up) -> dict[tuple[str, str], tuple[str, list[str]]]:
    """As a client of GPUd's /v1/states reads it: component → states with health and suggested actions."""
    return {(c["component"], s["name"]): (s["health"], s["suggested_actions"]["repair_actions"])
            for c in get(up, "/v1/states") for s in c["states"]}  # fmt: skip


def test_the_api_serves_the_nodes_states_events_and_metrics(up_stack: Up) -> None:
    assert api(up_stack).startswith("https://127.0.0.1:")  # HTTPS by default, as GPUd serves it
    assert get(up_stack, "/healthz") == {"status": "ok", "version": "v1"}
    assert get(up_stack, "/machine-info")["node"] == "e2e-node"
    # An Xid injected through the API, GPUd's way, goes through the whole pipeline and comes back as a state.
    assert post(up_stack, "/inject-fault", {"kernel_message": {"priority": "KERN_ERR", "message":
                "NVRM: Xid (PCI:0000:04:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."}})["ok"]  # fmt: skip
    wait_for(lambda: gpud_states(up_stack).get(("accelerator-nvidia-error-xid", "0000:04:00.0"))
             == ("Unhealthy", ["REBOOT_SYSTEM"]), timeout=30)  # fmt: skip
    events = get(up_stack, "/v1/events?startTime=2000-01-01T00:00:00Z")
    xids = [e for c in events if c["component"] == "accelerator-nvidia-error-xid" for e in c["events"]]
    assert [(e["name"], e["type"]) for e in xids] == [("error_xid", "Fatal")]  # GPUd's name, its Xid table's type
    assert "accelerator-nvidia-error-xid" in get(up_stack, "/v1/components")
    metrics = {m["name"] for c in get(up_stack, "/v1/metrics") for m in c["metrics"]}  # the host's, GPUd's names
    assert {"memory_used_bytes", "cpu_load_average"} <= metrics
    families = {f.name: f for f in text_string_to_metric_families(get(up_stack, "/metrics"))}
    states = {(s.labels["component"], s.labels["entity"]): s.value for s in families["gpuhealth_health"].samples}
    assert states[("accelerator-nvidia-error-xid", "0000:04:00.0")] == 2

    post(up_stack, "/v1/health-states/set-healthy?components=accelerator-nvidia-error-xid", {"reason": "replaced"})
    wait_for(lambda: gpud_states(up_stack)[("accelerator-nvidia-error-xid", "0000:04:00.0")][0] == "Healthy")


def test_api_tls_off_serves_plain_http(tmp_path: Path) -> None:
    with running(tmp_path, "--api-tls", "off") as up:
        assert api(up).startswith("http://127.0.0.1:")
        with urllib.request.urlopen(api(up) + "/healthz", timeout=10) as r:
            assert json.loads(r.read()) == {"status": "ok", "version": "v1"}
        assert not (up.data_dir / "agent" / "api-cert.pem").exists()  # no certificate made that nothing uses


def test_gpuds_trigger_endpoints_run_its_example_plugins(tmp_path: Path) -> None:
    """GPUd's own example plugin file: /v1/plugins lists it, trigger-check runs a check now and answers its state,
    trigger-tag runs the tagged ones and sums them up, as GPUd's handlers do; both need the token."""
    example = Path(__file__).parents[1] / "data" / "checks" / "gpud-example.yaml"
    with running(tmp_path, "--checks", str(example)) as up:
        plugins = get(up, "/v1/plugins")
        assert [p["plugin_name"] for p in plugins] == ["install-python", "manual-exit-1", "echo-1", "echo-2", "echo-3"]
        assert plugins[2]["tags"] == ["echo"] and plugins[2]["timeout"] == "1m0s"
        [state] = call(up, "/v1/components/trigger-check?componentName=manual-exit-1")
        assert state["component"] == "manual-exit-1" and state["states"][0]["health"] == "Unhealthy"
        assert call(up, "/v1/components/trigger-tag?tagName=echo") == {
            "components": ["echo-1", "echo-2", "echo-3"], "exit": 0, "success": True}  # fmt: skip
        ran = call(up, "/v1/components/trigger-check?tagName=echo")
        assert [(c["component"], c["states"][0]["health"]) for c in ran] == [
            ("echo-1", "Healthy"), ("echo-2", "Healthy"), ("echo-3", "Healthy")]  # fmt: skip
        try:
            urllib.request.urlopen(api(up) + "/v1/components/trigger-tag?tagName=echo", timeout=10, context=tls(up))
        except urllib.error.HTTPError as e:
            assert e.code == 401
        else:
            raise AssertionError("a trigger ran without the token")


def call(up: Up, path: str) -> Any:
    token = (up.data_dir / "agent" / "api-token").read_text().strip()
    req = urllib.request.Request(api(up) + path, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=90, context=tls(up)) as r:
        return json.loads(r.read())
