"""GPUd's ``/v1/metrics``: its metric names, labels and units, and a bounded history read with ``since``.

GPUd scrapes its Prometheus registry once a minute into SQLite and keeps three hours; ``/v1/metrics`` answers
every sample since ``now - since`` (Go duration, default 30m), per component, oldest first, each
``{"unix_seconds", "name", "labels", "value"}``. Its ``unix_seconds`` carries Unix *milliseconds* (its scraper
stores ``UnixMilli`` and the API copies it over): kept as GPUd has it, since its clients read GPUd's wire.
The names are GPUd's ``<component subsystem>_<name>`` (components/*/metrics.go), labels ``uuid`` for a GPU,
``load_duration`` for the CPU's load averages. Here the samples come from the agent's own metric batches,
one kept per entity a minute, in two flat arrays per series: 3 hours of 8 GPUs is well under a megabyte.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gpuhealth.events import MetricBatch

Values = dict[str, float]
Sample = tuple[str, str, tuple[tuple[str, str], ...], float]  # component, name, labels, value
DEFAULT_SINCE_NS = 30 * 60 * 10**9  # GPUd's DefaultQuerySince
RETAIN_NS = 3 * 3600 * 10**9  # GPUd's DefaultMetricsRetentionPeriod
EVERY_NS = 60 * 10**9  # GPUd's scrape interval
MAX_SERIES = 4096


def _pct(part: float, whole: float) -> float:
    return 100 * part / whole if whole else 0.0


def _gpu_values(v: Values, processes: int) -> list[tuple[str, str, float]]:
    """(component, GPUd's metric name, value) of one GPU's batch in GPUd's units; what NVML did not give is left out."""
    out: list[tuple[str, str, float]] = []

    def put(component: str, name: str, value: float | None) -> None:
        if value is not None:
            out.append((component, name, float(value)))

    t, m, p = "accelerator-nvidia-temperature", "accelerator-nvidia-memory", "accelerator-nvidia-power"
    put(t, "accelerator_nvidia_temperature_current_celsius", v.get("temperature_gpu_c"))
    put(t, "accelerator_nvidia_temperature_current_hbm_celsius", v.get("temperature_memory_c"))
    put(t, "accelerator_nvidia_temperature_slowdown_threshold_celsius", v.get("temperature_slowdown_c"))
    if "temperature_gpu_c" in v and v.get("temperature_slowdown_c"):
        put(t, "accelerator_nvidia_temperature_slowdown_used_percent",
            _pct(v["temperature_gpu_c"], v["temperature_slowdown_c"]))  # fmt: skip
    if "memory_total_bytes" in v and "memory_used_bytes" in v:
        total, used = v["memory_total_bytes"], v["memory_used_bytes"]
        put(m, "accelerator_nvidia_memory_total_bytes", total)
        put(m, "accelerator_nvidia_memory_used_bytes", used)
        put(m, "accelerator_nvidia_memory_free_bytes", total - used)
        put(m, "accelerator_nvidia_memory_used_percent", _pct(used, total))
    u = "accelerator-nvidia-utilization"
    put(u, "accelerator_nvidia_utilization_gpu_util_percent", v.get("util_gpu_pct"))
    put(u, "accelerator_nvidia_utilization_memory_util_percent", v.get("util_memory_pct"))
    if "power_w" in v:
        put(p, "accelerator_nvidia_power_current_usage_milli_watts", round(v["power_w"] * 1000))
    if "power_limit_w" in v:
        put(p, "accelerator_nvidia_power_enforced_limit_milli_watts", round(v["power_limit_w"] * 1000))
        if "power_w" in v:
            put(p, "accelerator_nvidia_power_used_percent", _pct(v["power_w"], v["power_limit_w"]))
    c = "accelerator-nvidia-clock-speed"
    put(c, "accelerator_nvidia_clock_speed_graphics_mhz", v.get("clock_graphics_mhz"))
    put(c, "accelerator_nvidia_clock_speed_memory_mhz", v.get("clock_memory_mhz"))
    for ours, theirs in (("sbe", "corrected"), ("dbe", "uncorrected")):
        for kind in ("aggregate", "volatile"):
            put("accelerator-nvidia-ecc", f"accelerator_nvidia_ecc_{kind}_total_{theirs}", v.get(f"ecc_{ours}_{kind}"))
    h = "accelerator-nvidia-hw-slowdown"  # GPUd's subsystem for it is accelerator_nvidia_clock
    put(h, "accelerator_nvidia_clock_hw_slowdown", v.get("hw_slowdown"))
    put(h, "accelerator_nvidia_clock_hw_slowdown_thermal", v.get("hw_thermal_slowdown"))
    put(h, "accelerator_nvidia_clock_hw_slowdown_power_brake", v.get("hw_power_brake_slowdown"))
    if "nvlink_links_active" in v:
        n = "accelerator-nvidia-nvlink"
        put(n, "accelerator_nvidia_nvlink_supported", 1)
        put(n, "accelerator_nvidia_nvlink_feature_enabled", 1 if v["nvlink_links_active"] > 0 else 0)
        put(n, "accelerator_nvidia_nvlink_replay_errors", v.get("nvlink_replay_errors", 0))
        put(n, "accelerator_nvidia_nvlink_recovery_errors", v.get("nvlink_recovery_errors", 0))
        put(n, "accelerator_nvidia_nvlink_crc_errors",
            v.get("nvlink_crc_flit_errors", 0) + v.get("nvlink_crc_data_errors", 0))  # fmt: skip
    r = "accelerator-nvidia-remapped-rows"
    put(r, "accelerator_nvidia_remapped_rows_due_to_uncorrectable_errors", v.get("remapped_rows_uncorrectable"))
    put(r, "accelerator_nvidia_remapped_rows_remapping_pending", v.get("remapped_rows_pending"))
    put(r, "accelerator_nvidia_remapped_rows_remapping_failed", v.get("remapped_rows_failure"))
    put("accelerator-nvidia-processes", "accelerator_nvidia_processes_running_total", processes)
    return out


def _host_samples(v: Values, memory_total: int | None) -> list[Sample]:
    out: list[Sample] = []
    if "cpu_percent" in v:
        out.append(("cpu", "cpu_used_percent", (), v["cpu_percent"]))
    for key, duration in (("load1", "1m0s"), ("load5", "5m0s"), ("load15", "15m0s")):  # Go's Duration.String()
        if key in v:
            out.append(("cpu", "cpu_load_average", (("load_duration", duration),), v[key]))
    if "memory_available_bytes" in v:
        available = v["memory_available_bytes"]
        out.append(("memory", "memory_available_bytes", (), available))
        if memory_total:
            out.append(("memory", "memory_total_bytes", (), float(memory_total)))
            out.append(("memory", "memory_used_bytes", (), memory_total - available))
    if "memory_used_percent" in v:
        out.append(("memory", "memory_used_percent", (), v["memory_used_percent"]))
    os_names = {"fd_used": "os_fd_allocated_file_handles", "fd_max": "os_fd_limit",
                "procs_zombie": "os_zombie_processes", "procs_dstate": "os_blocked_processes"}  # fmt: skip
    for ours, theirs in os_names.items():
        if ours in v:
            out.append(("os", theirs, (), v[ours]))
    return out


def samples(b: MetricBatch, host_component: str, memory_total: int | None) -> list[Sample]:
    """GPUd's samples of one of our metric batches: a GPU's, or the host's (the component named host_component)."""
    if b.gpu_uuid:
        labels = (("uuid", b.gpu_uuid),)
        return [(c, name, labels, value) for c, name, value in _gpu_values(b.values, len(b.processes))]
    if b.component == host_component:
        return _host_samples(b.values, memory_total)
    return []


# What the API takes as ``since`` (empty: the default), for its OpenAPI document
DURATION_PATTERN = r"^([+-]?(0|((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+))?$"
_DURATION = re.compile(r"((?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|µs|μs|ms|s|m|h))")
_UNIT_NS = {"ns": 1, "us": 10**3, "µs": 10**3, "μs": 10**3, "ms": 10**6, "s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9}


def parse_duration(text: str) -> int:
    """Go's time.ParseDuration ("30m", "1h30m", "1.5h", "0"), in nanoseconds; ValueError when it is not one.
    Past ~292 years it is clamped, where Go refuses: either way it means "everything kept"."""
    body = text[1:] if text[:1] in "+-" else text
    if body == "0":
        return 0
    parts = _DURATION.findall(body)
    if not body or "".join(parts) != body:
        raise ValueError(f"invalid duration {text!r}")
    total = 0.0
    for part in parts:
        unit = part.lstrip("0123456789.")
        total += float(part[: len(part) - len(unit)]) * _UNIT_NS[unit]
    total = min(total, 2**63 - 1)
    return -int(total) if text.startswith("-") else int(total)


def format_duration(seconds: float) -> str:
    """Go's Duration.String() of whole or fractional seconds: 0s, 1m30s, 1h0m0s, 1.5s."""
    if seconds <= 0:
        return "0s"
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    text = f"{s:.9f}".rstrip("0").rstrip(".") + "s"
    if h:
        return f"{int(h)}h{int(m)}m{text}"
    return f"{int(m)}m{text}" if m else text


@dataclass
class History:
    """The samples of the last ``retain_ns``, one a series each ``every_ns`` at most (times are the batches')."""

    retain_ns: int = RETAIN_NS
    every_ns: int = EVERY_NS
    max_series: int = MAX_SERIES
    _series: dict[tuple[str, str, tuple[tuple[str, str], ...]], tuple[array[int], array[float]]] = field(
        default_factory=dict
    )
    _last: dict[str, int] = field(default_factory=dict)  # entity → when its batch was last kept

    def record(self, b: MetricBatch, sampled: Callable[[MetricBatch], list[Sample]]) -> None:
        last = self._last.get(b.entity)
        if last is not None and b.time - last < self.every_ns:
            return
        self._last[b.entity] = b.time
        ms, horizon = b.time // 10**6, (b.time - self.retain_ns) // 10**6
        for component, name, labels, value in sampled(b):
            key = (component, name, labels)
            series = self._series.get(key)
            if series is None:
                if len(self._series) >= self.max_series:
                    continue  # bounded whatever the batches name
                series = self._series[key] = (array("q"), array("d"))
            times, values = series
            times.append(ms)
            values.append(value)
            old = next((i for i, t in enumerate(times) if t >= horizon), len(times))
            if old:
                del times[:old], values[:old]

    def read(self, since_ns: int, components: set[str] | None) -> list[dict[str, Any]]:
        """GPUd's GPUdComponentMetrics: per component, its samples since ``since_ns``, oldest first."""
        since_ms = since_ns // 10**6
        grouped: dict[str, list[tuple[int, dict[str, Any]]]] = {}
        for (component, name, labels), (times, values) in self._series.items():
            if components and component not in components:
                continue
            rows = grouped.setdefault(component, [])
            for t, value in zip(times, values, strict=True):
                if t >= since_ms:
                    row: dict[str, Any] = {"unix_seconds": t, "name": name}
                    if labels:  # GPUd's labels are omitempty
                        row["labels"] = dict(labels)
                    row["value"] = value
                    rows.append((t, row))
        return [{"component": c, "metrics": [r for _, r in sorted(rows, key=lambda x: x[0])]}
                for c, rows in sorted(grouped.items()) if rows]  # fmt: skip
