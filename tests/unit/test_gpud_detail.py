"""GPUd's detail components from our metric batches: GPUd's field names and units, on every state Flow reads."""

from __future__ import annotations

import json
from typing import Any

from gpuhealth.events import GpuProcess, HealthState, MetricBatch
from producers.gpud_detail import gpu_payloads, host_payloads, os_payload
from tests.unit.test_api import T, view

BUSY = {"temperature_gpu_c": 61.0, "temperature_memory_c": 70.0, "temperature_slowdown_c": 87.0,
        "power_w": 612.5, "power_limit_w": 700.0, "memory_used_bytes": 2.0 * 2**30, "memory_total_bytes": 8.0 * 2**30,
        "util_gpu_pct": 97.0, "util_memory_pct": 40.0, "clock_graphics_mhz": 1980.0, "clock_memory_mhz": 2619.0,
        "clock_event_reasons": 8.0, "hw_slowdown": 1.0, "hw_thermal_slowdown": 0.0,
        "ecc_sbe_aggregate": 5.0, "ecc_dbe_aggregate": 2.0, "ecc_dbe_volatile": 1.0,
        "nvlink_links_active": 2.0, "nvlink1_crc_flit_errors": 3.0, "nvlink1_crc_data_errors": 1.0}  # fmt: skip


def batch(values: dict[str, float], uuid: str | None = "GPU-1", entity: str = "0000:18:00.0",
          component: str = "gpu", processes: list[GpuProcess] | None = None) -> MetricBatch:  # fmt: skip
    return MetricBatch(id="m", time=T, cluster="c", node="gpu-07", source="nvml", component=component, entity=entity,
                       gpu_uuid=uuid, pci_bus_id=entity if uuid else None, values=values,
                       processes=processes or [])  # fmt: skip


def test_gpu_payloads_in_gpuds_names_and_units() -> None:
    p = gpu_payloads([batch(BUSY)])
    gpu = {"uuid": "GPU-1", "bus_id": "0000:18:00.0"}
    assert p["accelerator-nvidia-power"] == {"powers": [gpu | {
        "usage_milli_watts": 612_500, "enforced_limit_milli_watts": 700_000, "used_percent": "87.50",
        "get_power_usage_supported": True, "get_power_limit_supported": True}]}  # fmt: skip
    assert p["accelerator-nvidia-temperature"]["temperatures"][0] == gpu | {
        "current_celsius_gpu_core": 61, "current_celsius_hbm": 70, "hbm_temperature_supported": True,
        "threshold_celsius_slowdown": 87}  # fmt: skip
    assert p["accelerator-nvidia-memory"]["memories"][0] == gpu | {
        "total_bytes": 8 * 2**30, "used_bytes": 2 * 2**30, "free_bytes": 6 * 2**30, "used_percent": "25.00",
        "supported": True}  # fmt: skip
    assert p["accelerator-nvidia-utilization"]["utilizations"][0]["gpu_used_percent"] == 97
    assert p["accelerator-nvidia-clock-speed"]["clock_speeds"][0]["graphics_mhz"] == 1980
    assert p["accelerator-nvidia-hw-slowdown"]["clock_events"][0]["hw_slowdown"] is True
    assert p["accelerator-nvidia-ecc"]["ecc_errors"][0]["aggregate"] == {"total": {"corrected": 5, "uncorrected": 2}}
    links = p["accelerator-nvidia-nvlink"]["nvlinks"][0]["states"]
    assert [(s["link"], s["crc_errors"], s["replay_errors"]) for s in links] == [(0, 0, 0), (1, 4, 0)]


def test_processes_in_gpuds_names_and_flows() -> None:
    p = gpu_payloads([batch({}, processes=[GpuProcess(pid=4242, name="python", used_memory_bytes=3 * 2**30)])])
    [row] = p["accelerator-nvidia-processes"]["processes"]
    assert row["running_processes"] == [{"pid": 4242, "gpu_used_memory_bytes": 3 * 2**30}]  # GPUd's
    assert row["processes"] == [{"pid": 4242, "name": "python", "used_gpu_memory_bytes": 3 * 2**30}]  # Flow reads


def test_a_value_nvml_did_not_give_leaves_its_row_out() -> None:
    p = gpu_payloads([batch({"temperature_gpu_c": 40.0})])
    assert list(p) == ["accelerator-nvidia-temperature", "accelerator-nvidia-processes"]  # no power row of 0 W


def test_host_payloads_from_the_hosts_batch() -> None:
    values = {"cpu_percent": 12.345, "memory_available_bytes": 6.0 * 2**30, "disk_used_percent./": 40.0,
              "disk_used_percent./data": 71.5}  # fmt: skip
    p = host_payloads(batch(values, uuid=None, entity="gpu-07", component="os"), 8 * 2**30)
    assert p["cpu"]["usage_percent"] == 12.35
    assert p["memory"] == {"total_bytes": 8 * 2**30, "available_bytes": 6 * 2**30, "used_bytes": 2 * 2**30,
                           "used_percent": "25.00"}  # fmt: skip
    assert p["disk"]["usage_percent"] == 71.5  # the fullest mount
    assert "cpu" not in host_payloads(batch({}, uuid=None, entity="gpu-07", component="os"), None)


def states_of(v: Any, component: str) -> list[dict[str, Any]]:
    return [s for c in v.states_json(None) if c["component"] == component for s in c["states"]]


def test_every_state_of_a_detail_component_carries_its_data() -> None:
    v = view()
    v.published_metrics(batch(BUSY))
    v.health_changed(HealthState(id="h2", time=T, cluster="c", node="gpu-07", source="rules",
                                 component="accelerator-nvidia-ecc", entity="0000:18:00.0", health="Unhealthy",
                                 reason="2 uncorrectable ECC errors", since=T, gpu_uuid="GPU-1"))  # fmt: skip
    [ecc] = states_of(v, "accelerator-nvidia-ecc")  # the rule's own state, per GPU, kept, with GPUd's data
    assert (ecc["name"], ecc["health"]) == ("0000:18:00.0", "Unhealthy")
    assert json.loads(ecc["extra_info"]["data"])["ecc_errors"][0]["aggregate"]["total"]["uncorrected"] == 2
    [power] = states_of(v, "accelerator-nvidia-power")  # no rule state: GPUd's one state, named after it
    assert (power["name"], power["health"], power["extra_info"]["encoding"]) == (
        "accelerator-nvidia-power",
        "Healthy",
        "json",
    )
    assert json.loads(power["extra_info"]["data"])["powers"][0]["usage_milli_watts"] == 612_500
    assert [c["component"] for c in v.states_json({"accelerator-nvidia-power"})] == ["accelerator-nvidia-power"]


def test_remapped_rows_and_os_in_gpuds_fields() -> None:
    rows = {"remapped_rows_correctable": 3.0, "remapped_rows_uncorrectable": 1.0, "remapped_rows_pending": 1.0,
            "remapped_rows_failure": 0.0}  # fmt: skip
    assert gpu_payloads([batch(rows)])["accelerator-nvidia-remapped-rows"] == {"remapped_rows": [{
        "uuid": "GPU-1", "bus_id": "0000:18:00.0", "remapped_due_to_correctable_errors": 3,
        "remapped_due_to_uncorrectable_errors": 1, "remapping_pending": True, "remapping_failed": False,
        "supported": True}]}  # fmt: skip
    host = batch({"uptime_s": 3600.0, "procs_zombie": 2.0, "fd_used": 1000.0, "fd_max": 4000.0}, uuid=None,
                 entity="gpu-07", component="os")  # fmt: skip
    assert os_payload(host, {"kernelVersion": "6.8.0", "cpuInfo": {"architecture": "x86_64"}}) == {
        "kernel": {"arch": "x86_64", "version": "6.8.0"},
        "uptimes": {"seconds": 3600, "boot_time_unix_seconds": T // 10**9 - 3600}, "zombie_processes": 2,
        "file_descriptors": {"allocated_file_handles": 1000, "limit": 4000, "allocated_file_handles_percent": "25.00",
                             "file_handles_supported": True, "fd_limit_supported": True}}  # fmt: skip
