"""The agent's ``/metrics`` beyond its own counters: each GPU as dcgm-exporter shows it, and every health state.

Operators watch GPUs with NVIDIA dcgm-exporter's names (its default counters file, ``etc/default-counters.csv``,
and its Grafana dashboard, gnet 12239), so every per-GPU value the NVML poller reads is shown under the DCGM
field of the same meaning, in DCGM's unit and type, with dcgm-exporter's labels. Those are dcgm-exporter's names,
not Prometheus' conventions: a dashboard written for dcgm-exporter reads them unchanged, and ``promtool check
metrics`` says of them what it says of dcgm-exporter (uppercase counters without ``_total``, a camelCase label).

Everything is read from the agent's ``View`` at scrape time: nothing here runs between scrapes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, NamedTuple

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from gpuhealth.events import HEALTH_ORDER, GpuInfo, MetricBatch

if TYPE_CHECKING:
    from producers.api import View


class Field(NamedTuple):
    nvml: str  # the poller's value name (producers/nvml_read.py)
    dcgm: str
    type: str  # as dcgm-exporter types it
    mib: bool  # bytes from the poller, whole MiB in DCGM (NVML's bytes >> 20, as DCGM reads them)
    help: str


# The DCGM field for each value the poller reads; help and type as in dcgm-exporter's counters files.
FIELDS = (
    Field("clock_sm_mhz", "DCGM_FI_DEV_SM_CLOCK", "gauge", False, "SM clock frequency (in MHz)."),
    Field("clock_memory_mhz", "DCGM_FI_DEV_MEM_CLOCK", "gauge", False, "Memory clock frequency (in MHz)."),
    Field("clock_event_reasons", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "gauge", False, "Clock event reasons (bitmask)."),
    Field("temperature_memory_c", "DCGM_FI_DEV_MEMORY_TEMP", "gauge", False, "Memory temperature (in C)."),
    Field("temperature_gpu_c", "DCGM_FI_DEV_GPU_TEMP", "gauge", False, "GPU temperature (in C)."),
    Field("temperature_slowdown_c", "DCGM_FI_DEV_SLOWDOWN_TEMP", "gauge", False, "Slowdown temperature (in C)."),
    Field("temperature_shutdown_c", "DCGM_FI_DEV_SHUTDOWN_TEMP", "gauge", False, "Shutdown temperature (in C)."),
    Field("power_w", "DCGM_FI_DEV_POWER_USAGE", "gauge", False, "Power draw (in W)."),
    Field("power_limit_w", "DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "gauge", False, "Enforced power limit (in W)."),
    Field("energy_mj", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", False,
          "Total energy consumption since boot (in mJ)."),
    Field("pcie_replay_count", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", False, "Total number of PCIe retries."),
    Field("pcie_gen_current", "DCGM_FI_DEV_PCIE_LINK_GEN", "gauge", False, "PCIe current link generation."),
    Field("pcie_gen_max", "DCGM_FI_DEV_PCIE_MAX_LINK_GEN", "gauge", False, "PCIe maximum link generation."),
    Field("pcie_width_current", "DCGM_FI_DEV_PCIE_LINK_WIDTH", "gauge", False, "PCIe current link width."),
    Field("pcie_width_max", "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH", "gauge", False, "PCIe maximum link width."),
    Field("util_gpu_pct", "DCGM_FI_DEV_GPU_UTIL", "gauge", False, "GPU utilization (in %)."),
    Field("util_memory_pct", "DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", False, "Memory utilization (in %)."),
    Field("util_encoder_pct", "DCGM_FI_DEV_ENC_UTIL", "gauge", False, "Encoder utilization (in %)."),
    Field("util_decoder_pct", "DCGM_FI_DEV_DEC_UTIL", "gauge", False, "Decoder utilization (in %)."),
    Field("memory_used_bytes", "DCGM_FI_DEV_FB_USED", "gauge", True, "Framebuffer memory used (in MiB)."),
    Field("memory_total_bytes", "DCGM_FI_DEV_FB_TOTAL", "gauge", True, "Framebuffer memory total (in MiB)."),
    Field("ecc_sbe_volatile", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", False,
          "Total number of single-bit volatile ECC errors."),
    Field("ecc_dbe_volatile", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", False,
          "Total number of double-bit volatile ECC errors."),
    Field("ecc_sbe_aggregate", "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "counter", False,
          "Total number of single-bit persistent ECC errors."),
    Field("ecc_dbe_aggregate", "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "counter", False,
          "Total number of double-bit persistent ECC errors."),
    Field("retired_pages_sbe", "DCGM_FI_DEV_RETIRED_SBE", "counter", False,
          "Total number of retired pages due to single-bit errors."),
    Field("retired_pages_dbe", "DCGM_FI_DEV_RETIRED_DBE", "counter", False,
          "Total number of retired pages due to double-bit errors."),
    Field("retired_pages_pending", "DCGM_FI_DEV_RETIRED_PENDING", "counter", False,
          "Total number of pages pending retirement."),
    Field("remapped_rows_uncorrectable", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", False,
          "Number of remapped rows for uncorrectable errors"),
    Field("remapped_rows_correctable", "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", False,
          "Number of remapped rows for correctable errors"),
    Field("remapped_rows_failure", "DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", False,
          "Whether remapping of rows has failed"),
    Field("remapped_rows_pending", "DCGM_FI_DEV_ROW_REMAP_PENDING", "gauge", False,
          "Whether remapping of rows is pending"),
    Field("persistence_mode", "DCGM_FI_DEV_PERSISTENCE_MODE", "gauge", False, "Persistence mode (1 enabled)."),
    Field("nvlink_crc_flit_errors", "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "counter", False,
          "Total number of NVLink flow-control CRC errors."),
    Field("nvlink_crc_data_errors", "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "counter", False,
          "Total number of NVLink data CRC errors."),
    Field("nvlink_replay_errors", "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "counter", False,
          "Total number of NVLink retries."),
    Field("nvlink_recovery_errors", "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "counter", False,
          "Total number of NVLink recovery errors."),
)  # fmt: skip
FB_FREE = Field("", "DCGM_FI_DEV_FB_FREE", "gauge", True, "Framebuffer memory free (in MiB).")
XID = Field("", "DCGM_FI_DEV_XID_ERRORS", "gauge", False, "Value of the last XID error encountered.")


def dcgm_pci(pci_bus_id: str) -> str:
    """DCGM prints NVML's bus id: an 8-digit domain (``00000000:18:00.0``) where sysfs has 4."""
    domain, _, rest = pci_bus_id.partition(":")
    return f"{domain.upper():0>8}:{rest.upper()}" if rest else pci_bus_id


def _labels(gpu: GpuInfo | None, batch: MetricBatch, hostname: str, driver: str) -> dict[str, str]:
    pci = (gpu.pci_bus_id if gpu else None) or batch.pci_bus_id or ""
    index = str(gpu.index) if gpu else ""
    return {"gpu": index, "UUID": batch.gpu_uuid or "", "pci_bus_id": dcgm_pci(pci),
            "device": f"nvidia{index}" if gpu else "", "modelName": (gpu.name if gpu else None) or "",
            "Hostname": hostname, "DCGM_FI_DRIVER_VERSION": driver}  # fmt: skip


def _sample(name: str, labels: dict[str, str], value: float) -> str:
    text = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
    return f"{name}{{{text}}} {float(value)!r}\n"  # NVML gives finite numbers


def _escape(v: str) -> str:
    return v.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def dcgm_text(view: View) -> str:
    """dcgm-exporter's series for every GPU the poller reported, in Prometheus text format 0.0.4.

    Written here rather than through prometheus_client, which names every counter ``…_total``."""
    with view.lock:
        batches = sorted((b for b in view.metrics.values() if b.gpu_uuid), key=lambda b: b.entity)
        xids = dict(view.last_xid)
    inv = view.inventory
    gpus = {g.uuid: g for g in (inv.gpus if inv else []) if g.uuid}
    hostname = str(view.host.get("hostname") or view.identity.node)
    driver = (inv.driver_version if inv else None) or ""
    rows = [(b, _labels(gpus.get(b.gpu_uuid or ""), b, hostname, driver)) for b in batches]
    out: list[str] = []
    for f in FIELDS:
        samples = [_sample(f.dcgm, labels, _unit(f, b.values[f.nvml])) for b, labels in rows if f.nvml in b.values]
        out += _family(f, samples)
    # NVML's free is total less used (and reserved, which the poller does not read)
    free = [_sample(FB_FREE.dcgm, labels, _unit(FB_FREE, v["memory_total_bytes"] - v["memory_used_bytes"]))
            for b, labels in rows if {"memory_total_bytes", "memory_used_bytes"} <= (v := b.values).keys()]  # fmt: skip
    out += _family(FB_FREE, free)
    # DCGM's value is the last Xid its GPU reported, 0 before any: so is ours, by UUID or PCI id.
    last = [_sample(XID.dcgm, labels, xids.get(b.gpu_uuid or "", xids.get(labels["pci_bus_id"], 0)))
            for b, labels in rows]  # fmt: skip
    out += _family(XID, last)
    return "".join(out)


def _unit(f: Field, value: float) -> float:
    return float(int(value) >> 20) if f.mib else value


def _family(f: Field, samples: list[str]) -> list[str]:
    return [f"# HELP {f.dcgm} {f.help}\n# TYPE {f.dcgm} {f.type}\n", *samples] if samples else []


class HealthCollector(Collector):
    """``gpuhealth_health``: one series per (node, component, entity) the agent's API shows, Healthy included."""

    def __init__(self, view: View) -> None:
        self.view = view

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily("gpuhealth_health", "0 Healthy, 1 Degraded, 2 Unhealthy, 3 Unknown",
                                   labels=["node", "component", "entity"])  # fmt: skip
        for component in self.view.states_json(None):
            for s in component["states"]:
                # GPUd's Initializing (a detail component before its first reading) is what Unknown says here.
                value = HEALTH_ORDER.get(s["health"], HEALTH_ORDER["Unknown"])
                family.add_metric([self.view.identity.node, s["component"], s["name"]], value)
        yield family
