"""GPUd's /v1/metrics: its names, labels and units, a bounded history, ``since`` as Go parses it; read back by
Flow's own parser of GPUd's metrics (flow-compute's ssh diagnosis)."""

from __future__ import annotations

import re

import pytest
from flow.integrations.health.ssh_diagnosis import _extract_system_metrics_from_v051, _parse_metrics_response

from gpuhealth.events import GpuProcess, MetricBatch
from producers.gpud_metrics import DURATION_PATTERN, History, format_duration, parse_duration, samples

T = 1_795_000_000 * 10**9
GPU = {"temperature_gpu_c": 61.0, "temperature_slowdown_c": 87.0, "power_w": 612.5, "power_limit_w": 700.0,
       "memory_total_bytes": 80 * 2**30, "memory_used_bytes": 20 * 2**30, "util_gpu_pct": 93.0,
       "util_memory_pct": 41.0, "clock_graphics_mhz": 1980.0, "clock_memory_mhz": 2619.0, "ecc_dbe_aggregate": 2.0,
       "ecc_sbe_aggregate": 5.0, "nvlink_links_active": 18.0, "nvlink_replay_errors": 3.0,
       "remapped_rows_uncorrectable": 1.0, "remapped_rows_pending": 0.0, "hw_slowdown": 0.0}  # fmt: skip
HOST = {"cpu_percent": 12.5, "load1": 3.25, "load5": 2.0, "memory_available_bytes": 1.5 * 2**40,
        "memory_used_percent": 25.0, "fd_used": 4096.0, "fd_max": 9_223_372_036_854_775_807.0}  # fmt: skip


def gpu(t: int, uuid: str = "GPU-1", **values: float) -> MetricBatch:
    return MetricBatch(id="m", time=t, cluster="c", node="n", source="nvml", component="gpu", entity=uuid,
                       gpu_uuid=uuid, pci_bus_id="0000:18:00.0", values=GPU | values,
                       processes=[GpuProcess(pid=7, name="python", used_memory_bytes=2**30)])  # fmt: skip


def host(t: int) -> MetricBatch:
    return MetricBatch(id="h", time=t, cluster="c", node="n", source="host", component="os", entity="n", values=HOST)


def sampled(b: MetricBatch) -> list[tuple[str, str, tuple[tuple[str, str], ...], float]]:
    return samples(b, "os", 2 * 2**40)


def test_gpud_names_labels_and_units() -> None:
    h = History()
    h.record(gpu(T), sampled)
    h.record(host(T), sampled)
    by = {(c["component"], m["name"]): m for c in h.read(T - 1, None) for m in c["metrics"]}
    power = by[("accelerator-nvidia-power", "accelerator_nvidia_power_current_usage_milli_watts")]
    assert power == {
        "unix_seconds": T // 10**6,
        "name": "accelerator_nvidia_power_current_usage_milli_watts",
        "labels": {"uuid": "GPU-1"},
        "value": 612_500.0,
    }  # GPUd's field carries milliseconds
    assert by[("accelerator-nvidia-power", "accelerator_nvidia_power_enforced_limit_milli_watts")]["value"] == 700_000
    assert by[("accelerator-nvidia-temperature", "accelerator_nvidia_temperature_current_celsius")]["value"] == 61
    assert by[("accelerator-nvidia-memory", "accelerator_nvidia_memory_free_bytes")]["value"] == 60 * 2**30
    assert by[("accelerator-nvidia-ecc", "accelerator_nvidia_ecc_aggregate_total_uncorrected")]["value"] == 2
    assert by[("accelerator-nvidia-processes", "accelerator_nvidia_processes_running_total")]["value"] == 1
    assert by[("accelerator-nvidia-remapped-rows",
               "accelerator_nvidia_remapped_rows_due_to_uncorrectable_errors")]["value"] == 1  # fmt: skip
    assert by[("cpu", "cpu_used_percent")] == {"unix_seconds": T // 10**6, "name": "cpu_used_percent", "value": 12.5}
    [cpu] = h.read(T - 1, {"cpu"})
    loads = cpu["metrics"]
    assert {m["labels"]["load_duration"]: m["value"] for m in loads if "labels" in m} == {"1m0s": 3.25, "5m0s": 2.0}
    assert by[("memory", "memory_used_bytes")]["value"] == 0.5 * 2**40
    assert by[("os", "os_fd_allocated_file_handles")]["value"] == 4096


def test_flows_parsers_read_them() -> None:
    """Flow reads GPUd's /v1/metrics by these names (its path over ssh): the values must come out as NVML gave them."""
    h = History()
    h.record(gpu(T), sampled)
    h.record(host(T), sampled)
    [m] = _parse_metrics_response(h.read(T - 1, None))
    assert (m.uuid, m.temperature_c, m.power_draw_w, m.power_limit_w) == ("GPU-1", 61, 612.5, 700)
    assert (m.memory_used_mb, m.memory_total_mb, m.gpu_utilization_pct, m.clock_mhz) == (20480, 81920, 93, 1980)
    assert (m.ecc_errors, m.nvlink_status) == (2, "degraded")  # 3 replay errors
    system = _extract_system_metrics_from_v051(h.read(T - 1, None))
    assert system is not None and (system.cpu_usage_pct, system.memory_total_gb) == (12.5, 2048)


def test_history_since_and_bounds() -> None:
    h = History(retain_ns=3 * 3600 * 10**9, every_ns=60 * 10**9, max_series=64)
    for minute, temp in ((0, 50.0), (0.5, 51.0), (1, 52.0), (2, 53.0)):  # the one half a minute on is not kept
        h.record(gpu(T + int(minute * 60) * 10**9, temperature_gpu_c=temp), sampled)

    def temps(since: int) -> list[float]:
        [c] = h.read(since, {"accelerator-nvidia-temperature"})
        return [m["value"] for m in c["metrics"] if m["name"].endswith("current_celsius")]

    assert temps(T) == [50, 52, 53]  # a history, oldest first
    assert temps(T + 61 * 10**9) == [53]
    h.record(gpu(T + 3 * 3600 * 10**9 + 90 * 10**9, temperature_gpu_c=60.0), sampled)  # 3 h on: the first two age out
    assert temps(0) == [53, 60]
    for i in range(100):  # new series beyond max_series are dropped, never grown without bound
        h.record(gpu(T, uuid=f"GPU-x{i}"), sampled)
    assert sum(len(c["metrics"]) for c in h.read(0, None)) < 64 * 3


@pytest.mark.parametrize(("text", "ns"), [("30m", 1800 * 10**9), ("1h30m", 5400 * 10**9), ("1.5h", 5400 * 10**9),
                                          ("0", 0), ("300ms", 3 * 10**8), ("2h45m30.5s", 9930_500_000_000),
                                          ("-1h", -3600 * 10**9), ("99999999999999h", 2**63 - 1)])  # fmt: skip
def test_go_durations(text: str, ns: int) -> None:
    assert parse_duration(text) == ns and re.fullmatch(DURATION_PATTERN, text)


@pytest.mark.parametrize("text", ["30", "m", "1d", "1h 30m", "h1", "1e3s", "1h-30m"])
def test_not_go_durations(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)
    assert not re.fullmatch(DURATION_PATTERN, text)  # the API's document says the same


@pytest.mark.parametrize(("seconds", "text"), [(0, "0s"), (1.5, "1.5s"), (60, "1m0s"), (90, "1m30s"),
                                               (3600, "1h0m0s"), (3725.25, "1h2m5.25s")])  # fmt: skip
def test_go_duration_strings(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text and parse_duration(text) == seconds * 10**9
