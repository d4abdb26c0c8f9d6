"""A real GPUd client against gpuctl up: Flow Compute's (PyPI flow-compute, a test extra) GPUd v0.8 client, over
HTTPS with its default settings (no certificate check, as GPUd's certificate is self-signed), on a simulated
8-GPU node. Its values are checked against what the fake NVML (producers/fake_nvml.py) gives each GPU."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import need
from tests.e2e.conftest import Up, gpuctl, gpuctl_json, running, wait_for

try:
    from flow.adapters.integrations.health.gpud_v08_adapter import GPUdV08Client
    from flow.domain.models.health import NodeHealthSnapshot
    from flow.integrations.health.scoring import calculate_health_score, score_to_status
    from flow.integrations.health.ssh_diagnosis import _fetch_gpu_metrics
except ImportError:  # the test extra is not installed: need() says so, a failure under CI=true
    GPUdV08Client = None

XID = "accelerator-nvidia-error-xid"


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Up]:
    need(GPUdV08Client is not None, "flow-compute (pip install -e '.[test]')")
    tmp = tmp_path_factory.mktemp("gpud")
    with running(tmp, "--simulate-gpus", "8", "--nvml-poll-interval", "1", "--host-interval", "1") as up:
        yield up


def client(up: Up) -> Any:
    return GPUdV08Client(base_url=up.info.sources["api"].removeprefix("ok: "))


def complete(up: Up) -> Any:
    """collect_all() once every detail is in: 8 GPUs read and the host's CPU figure (its second poll)."""
    found: list[Any] = []

    def ready() -> bool:
        with client(up) as c:
            found[:] = c.collect_all()
        gpus, system, _, _ = found
        return len(gpus) == 8 and all(g.temperature_c for g in gpus) and system is not None and system.cpu_usage_pct > 0

    wait_for(ready, timeout=30)
    return found


def test_flow_collects_the_fake_nvmls_values_over_https(node: Up) -> None:
    assert node.info.sources["api"].startswith("ok: https://")
    gpus, system, states, _ = complete(node)
    _, status = gpuctl_json("status", "--data-dir", str(node.data_dir))
    assert isinstance(status, dict)
    assert [g.uuid for g in gpus] == [g["uuid"] for g in status["gpus"]]  # GPUd's gpuInfo.gpus, in order
    for g in gpus:  # the fake's idle H100 (FakeGpu's defaults)
        assert (g.name, g.temperature_c, g.power_draw_w, g.power_limit_w) == ("NVIDIA H100 80GB HBM3", 34, 71, 700)
        assert (g.memory_used_mb, g.memory_total_mb) == (555_745_280 // 2**20, 81_559_420_928 // 2**20)
        assert (g.clock_mhz, g.gpu_utilization_pct, g.ecc_errors, g.nvlink_status) == (345, 0, 0, "healthy")
        assert g.processes == []  # the fake runs none
    assert system.memory_total_gb > 0 and 0 < system.memory_used_gb < system.memory_total_gb
    assert 0 < system.disk_usage_pct <= 100 and 0 < system.cpu_usage_pct <= 100
    assert {s.component for s in states} >= {"accelerator-nvidia-temperature", "cpu", "memory", "disk"}


def test_flows_metrics_reader_takes_gpuds_v1_metrics(node: Up) -> None:
    """Flow's other path to a node (its ssh diagnosis) reads /v1/metrics by GPUd's metric names and units."""
    complete(node)
    warnings: list[dict[str, str]] = []
    with httpx.Client(verify=False) as h:  # as Flow's clients reach GPUd's self-signed HTTPS
        gpus = _fetch_gpu_metrics(h, node.info.sources["api"].removeprefix("ok: "), 10, warnings)
    assert len(gpus) == 8 and warnings == []
    for g in gpus:  # the fake's idle H100, as above
        assert (g.temperature_c, g.power_draw_w, g.power_limit_w, g.clock_mhz) == (34, 71, 700, 345)
        assert (g.memory_used_mb, g.memory_total_mb) == (555_745_280 // 2**20, 81_559_420_928 // 2**20)


def test_flow_rates_a_clean_simulated_node_healthy(node: Up) -> None:
    gpus, system, states, events = complete(node)
    with client(node) as c:
        network = c.get_network_health()
        info = c.get_machine_info()
    snapshot = NodeHealthSnapshot(task_id="t", task_name="t", instance_id="i", instance_type="8xh100",
                                  timestamp=states[0].timestamp, gpud_healthy=True, machine_info=info,
                                  gpu_metrics=gpus, system_metrics=system, health_states=states, events=events,
                                  **network)  # fmt: skip
    breakdown = calculate_health_score(snapshot)
    print(f"Flow's score of a clean simulated node: {breakdown}")
    assert score_to_status(breakdown.overall).name == "HEALTHY", breakdown


def test_flow_sees_an_injected_xid_79_on_that_gpus_component(node: Up) -> None:
    pci = "0000:2a:00"  # the fake's GPU 1
    r = gpuctl("inject-fault", "--xid", "79", "--pci", pci, "--kmsg-path", str(node.kmsg))
    assert r.returncode == 0, r.stderr

    def xid_unhealthy() -> bool:
        with client(node) as c:
            c.collect_all()
            return any(s.component == XID and s.health.name == "UNHEALTHY" for s in c.get_health_states())

    wait_for(xid_unhealthy, timeout=30)
    with client(node) as c:
        _, _, states, events = c.collect_all()
    [bad] = [s for s in states if s.component == XID and s.health.name != "HEALTHY"]
    assert "79" in bad.message
    assert any(e.component == XID and "79" in e.message and e.level == "error" for e in events)


def test_flows_parsers_accept_the_ecc_component_after_a_double_bit_error(node: Up) -> None:
    r = gpuctl("inject-fault", "--nvml-ecc-dbe", "--gpu", "2", "--data-dir", str(node.data_dir))
    assert r.returncode == 0, r.stderr

    def counted() -> bool:
        with client(node) as c:
            gpus, _, _, _ = c.collect_all()  # raised ValueError: accelerator-nvidia-ecc ... data is required
        return [g.ecc_errors > 0 for g in gpus] == [i == 2 for i in range(8)]

    wait_for(counted, timeout=30)


def test_a_client_can_verify_the_certificate_the_agent_keeps(node: Up) -> None:
    cert = node.data_dir / "agent" / "api-cert.pem"
    with httpx.Client(verify=ssl.create_default_context(cafile=cert)) as h:  # Flow's HTTP client, verifying
        r = h.get(node.info.sources["api"].removeprefix("ok: ") + "/machine-info")
    assert r.status_code == 200 and len(r.json()["gpuInfo"]["gpus"]) == 8
