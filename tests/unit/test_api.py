"""The agent's local API in process, over HTTP: GPUd's shapes, errors, and a schemathesis fuzz of its OpenAPI."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from prometheus_client.parser import text_string_to_metric_families
from schemathesis.checks import negative_data_rejection, positive_data_acceptance

from gpuhealth.config import NodeIdentity
from gpuhealth.events import GpuInfo, HealthState, Inventory, KernelEvent, MetricBatch
from producers.api import Actions, Api, View
from producers.api_doc import OPENAPI

T = 1_795_000_000_000_000_000
TOKEN = "t" * 43
AUTH = {"Authorization": f"Bearer {TOKEN}"}


class Recorder:
    def __init__(self) -> None:
        self.injected: list[tuple[str, int]] = []
        self.cleared: list[list[str]] = []

    def inject(self, message: str, priority: int) -> int:
        self.injected.append((message, priority))
        return len(self.injected)

    def set_healthy(self, components: list[str], reason: str) -> int:
        self.cleared.append(components)
        return len(components)


HOST = {
    "kernelVersion": "6.8.0",
    "operatingSystem": "linux",
    "hostname": "gpu-07",
    "osImage": "Ubuntu 24.04 LTS",
    "cpuInfo": {"architecture": "x86_64", "logicalCores": 224},
    "memoryInfo": {"totalBytes": 2 * 2**40},
}


def view() -> View:
    v = View(NodeIdentity("c", "gpu-07", "m-1", "b-1", 1_795_033_600 * 10**9), host=HOST)
    v.inventory = Inventory(id="i", time=T, cluster="c", node="gpu-07", source="nvml", component="inventory",
                            gpus=[GpuInfo(index=0, pci_bus_id="0000:18:00.0", uuid="GPU-1", serial="S1",
                                          name="NVIDIA H100 80GB HBM3")], driver_version="550.90.07")  # fmt: skip
    v.health_changed(HealthState(id="h", time=T, cluster="c", node="gpu-07", source="rules",
                                 component="accelerator-nvidia-error-xid", entity="0000:18:00.0", health="Unhealthy",
                                 reason="Xid 79: GPU has fallen off the bus", repair_actions=["REBOOT_SYSTEM"],
                                 since=T, gpu_uuid="GPU-1"))  # fmt: skip
    v.published_event(KernelEvent(id="k", time=T, cluster="c", node="gpu-07", source="kmsg",
                                  component="accelerator-nvidia-error-xid", kind="xid", xid=79, priority=3,
                                  message="NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus"))  # fmt: skip
    v.published_metrics(MetricBatch(id="m", time=T, cluster="c", node="gpu-07", source="nvml", component="gpu",
                                    entity="0000:18:00.0", gpu_uuid="GPU-1", pci_bus_id="0000:18:00.0",
                                    values={"temperature_gpu_c": 61.0, "power_w": 612.5}))  # fmt: skip
    return v


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[tuple[str, Recorder]]:
    rec = Recorder()
    allow = getattr(request, "param", True)
    api = Api(view(), Actions(allow_inject=allow, inject=rec.inject, set_healthy=rec.set_healthy,
                              default_pci="0000:18:00.0"), "127.0.0.1:0", token=TOKEN)  # fmt: skip
    api.start()
    try:
        yield f"http://{api.address}", rec
    finally:
        api.close()


def get(base: str, path: str) -> Any:
    with urllib.request.urlopen(base + path, timeout=10) as r:
        body = r.read()
        return json.loads(body) if r.headers["Content-Type"].startswith("application/json") else body.decode()


def fails(base: str, path: str) -> tuple[int, Any]:
    try:
        urllib.request.urlopen(base + path, timeout=10).close()
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())
    raise AssertionError(f"{path} did not fail")


def post(base: str, path: str, body: object) -> tuple[int, Any]:
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json", **AUTH})  # fmt: skip
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_gpud_shapes(server: tuple[str, Recorder]) -> None:
    base, _ = server
    assert get(base, "/healthz") == {"status": "ok", "version": "v1"}
    info = get(base, "/gpuhealth/v1/machine-info")  # gpuhealth's own view, beside GPUd's /machine-info
    assert (info["node"], info["gpuCount"], info["gpus"][0]["uuid"]) == ("gpu-07", 1, "GPU-1")
    # What a GPUd client reads from /v1/states: component, then each state's fields.
    comp, *details = get(base, "/v1/states")  # the rule's state, and GPUd's details from the metric batch
    assert [(d["component"], d["states"][0]["health"]) for d in details] == [
        ("accelerator-nvidia-temperature", "Healthy"), ("accelerator-nvidia-processes", "Healthy"),
        ("os", "Initializing")]  # no host reading yet  # fmt: skip
    [state] = comp["states"]
    assert comp["component"] == "accelerator-nvidia-error-xid"
    assert set(state) == {"time", "component", "name", "health", "reason", "suggested_actions"}
    assert state["health"] == "Unhealthy" and state["suggested_actions"]["repair_actions"] == ["REBOOT_SYSTEM"]
    assert fails(base, "/v1/states?components=kernel-log") == (404, {
        "code": 404, "message": "component not found: component kernel-log not found (not found)"})  # GPUd's  # fmt: skip
    assert get(base, "/v1/states?components=kernel") == []  # one it knows, with nothing to say
    [evs] = get(base, "/v1/events?startTime=2026-11-18T00:00:00Z&endTime=2026-11-20T00:00:00Z")
    assert set(evs) == {"component", "startTime", "endTime", "events"}
    assert evs["events"] == [{"component": "accelerator-nvidia-error-xid", "time": evs["events"][0]["time"],
                              "name": "error_xid", "type": "Fatal",
                              "message": "NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus"}]  # fmt: skip
    assert get(base, "/v1/events?startTime=1&endTime=2") == []
    assert get(base, "/v1/metrics") == []  # GPUd's default since is 30m: the batch is days old
    power, processes, temp = get(base, "/v1/metrics?since=240h")  # GPUd's names, units (mW), label; ms in unix_seconds
    assert processes["metrics"][0]["value"] == 0
    assert temp == {"component": "accelerator-nvidia-temperature", "metrics": [
        {"unix_seconds": T // 10**6, "name": "accelerator_nvidia_temperature_current_celsius",
         "labels": {"uuid": "GPU-1"}, "value": 61.0}]}  # fmt: skip
    assert power["metrics"][0]["name"] == "accelerator_nvidia_power_current_usage_milli_watts"
    assert power["metrics"][0]["value"] == 612_500
    assert get(base, "/v1/metrics?since=240h&components=accelerator-nvidia-power") == [power]
    [own] = get(base, "/gpuhealth/v1/metrics")  # gpuhealth's own names, the latest batch, beside GPUd's
    assert {x["name"] for x in own["metrics"]} == {"temperature_gpu_c", "power_w"}
    assert get(base, "/v1/components") == ["accelerator-nvidia-error-xid", "accelerator-nvidia-processes",
                                           "accelerator-nvidia-temperature", "os"]  # fmt: skip


def test_machine_info_in_gpuds_shape(server: tuple[str, Recorder]) -> None:
    """GPUd's api/v1 MachineInfo as its clients read it (Flow: gpuInfo.gpus[].uuid/busID), node and cluster added."""
    base, _ = server
    info = get(base, "/machine-info")
    assert info["gpuInfo"] == {"product": "NVIDIA H100 80GB HBM3", "manufacturer": "NVIDIA",
                               "gpus": [{"uuid": "GPU-1", "busID": "0000:18:00.0", "sn": "S1", "index": 0,
                                         "name": "NVIDIA H100 80GB HBM3"}]}  # fmt: skip
    assert info["gpudVersion"] == "gpuhealth-0.1.0" and info["gpuDriverVersion"] == "550.90.07"
    assert (info["machineID"], info["bootID"], info["node"], info["cluster"]) == ("m-1", "b-1", "gpu-07", "c")
    assert (info["hostname"], info["kernelVersion"], info["osImage"]) == ("gpu-07", "6.8.0", "Ubuntu 24.04 LTS")
    assert info["memoryInfo"] == {"totalBytes": 2 * 2**40} and info["cpuInfo"]["logicalCores"] == 224
    assert info["uptime"] == "2026-11-18T20:26:40Z"  # the boot time, as Go marshals metav1.Time
    assert "gpus" not in info and "gpuCount" not in info  # gpuhealth's own shape moved to its own path


def test_prometheus_text(server: tuple[str, Recorder]) -> None:
    base, _ = server
    families = {f.name: f for f in text_string_to_metric_families(get(base, "/metrics"))}
    health = {(s.labels["node"], s.labels["component"], s.labels["entity"]): s.value
              for s in families["gpuhealth_health"].samples}  # fmt: skip
    assert health[("gpu-07", "accelerator-nvidia-error-xid", "0000:18:00.0")] == 2
    # GPUd's detail components, Healthy, have their series too: one per state the API shows
    assert health[("gpu-07", "accelerator-nvidia-temperature", "accelerator-nvidia-temperature")] == 0
    assert len(health) == sum(len(c["states"]) for c in get(base, "/v1/states"))
    assert families["gpuhealth_agent_events_published"].samples[0].value == 1
    # NVML's values under dcgm-exporter's names, units and labels
    gpu = {"gpu": "0", "UUID": "GPU-1", "pci_bus_id": "00000000:18:00.0", "device": "nvidia0",
           "modelName": "NVIDIA H100 80GB HBM3", "Hostname": "gpu-07", "DCGM_FI_DRIVER_VERSION": "550.90.07"}  # fmt: skip
    assert [(s.labels, s.value) for s in families["DCGM_FI_DEV_GPU_TEMP"].samples] == [(gpu, 61.0)]
    assert [(s.labels, s.value) for s in families["DCGM_FI_DEV_POWER_USAGE"].samples] == [(gpu, 612.5)]


def test_inject_and_set_healthy(server: tuple[str, Recorder]) -> None:
    base, rec = server
    assert post(base, "/inject-fault", {"kernel_message": {"priority": "KERN_WARNING", "message": "hello"}})[0] == 200
    code, body = post(base, "/inject-fault", {"xid": {"id": 48}})
    assert code == 200 and "NVRM: Xid (PCI:0000:18:00): 48" in body["message"]
    assert rec.injected == [("hello", 4), (body["message"], 3)]
    req = urllib.request.Request(
        base + "/inject-fault",
        method="POST",
        data=b'{"xid": {"id": 13}}',
        headers={"Content-Type": "text/plain", **AUTH},
    )  # a write binds JSON regardless
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status == 200 and len(rec.injected) == 3
    rec.injected.pop()
    for priority, level in (("kern.err", 3), ("kern.warn", 4), ("KERN_DEFAULT", 4), ("kern.debug", 7)):  # GPUd's names
        assert post(base, "/inject-fault", {"kernel_message": {"priority": priority, "message": "m"}})[0] == 200
        assert rec.injected[-1] == ("m", level)
    assert post(base, "/inject-fault", {"xid": {"id": "x"}})[0] == 400
    code, body = post(base, "/v1/health-states/set-healthy?components=accelerator-nvidia-error-xid", {})
    assert code == 200 and rec.cleared == [["accelerator-nvidia-error-xid"]]
    # None named: every component the rules hold a state for, as GPUd sets all; its answer's shape
    code, body = post(base, "/v1/health-states/set-healthy", {})
    assert code == 200 and rec.cleared[1] == ["accelerator-nvidia-error-xid"]
    assert (body["code"], body["message"], body["successful"]) == (200, "set healthy states completed",
                                                                    ["accelerator-nvidia-error-xid"])  # fmt: skip
    code, body = post(base, "/v1/health-states/set-healthy?components=no-such", {})
    assert code == 404 and body["code"] == 404 and len(rec.cleared) == 2


@pytest.mark.parametrize("server", [False], indirect=True)
def test_injection_refused_unless_allowed(server: tuple[str, Recorder]) -> None:
    base, rec = server
    code, body = post(base, "/inject-fault", {"xid": {"id": 79}})
    assert code == 403 and "not allowed" in body["message"] and rec.injected == []


schema = schemathesis.openapi.from_dict(OPENAPI)


@schema.auth()
class AgentToken:
    """Writes carry the token; schemathesis still sends some without it, or with another, and checks the refusal."""

    def get(self, case: Any, ctx: Any) -> str:
        return TOKEN

    def set(self, case: Any, data: str, ctx: Any) -> None:
        case.headers = {**(case.headers or {}), "Authorization": f"Bearer {data}"}


@pytest.fixture(scope="module")
def fuzz_base() -> Iterator[str]:
    rec = Recorder()
    api = Api(
        view(), Actions(allow_inject=True, inject=rec.inject, set_healthy=rec.set_healthy), "127.0.0.1:0", token=TOKEN
    )
    api.start()
    try:
        yield f"http://{api.address}"
    finally:
        api.close()


@schema.parametrize()
def test_fuzz_against_the_openapi_document(case: Any, fuzz_base: str) -> None:
    """Whatever schemathesis sends: no 5xx, and every answer matches the document. trigger-check wants one of
    its two parameters (an empty one is absent, as Go's c.Query reads it), which OpenAPI 3.0 cannot say: its 400 for
    neither is GPUd's, not a schema's."""
    either = case.operation.path == "/v1/components/trigger-check"
    excluded = [positive_data_acceptance, negative_data_rejection] if either else None
    case.call_and_validate(base_url=fuzz_base, excluded_checks=excluded)
