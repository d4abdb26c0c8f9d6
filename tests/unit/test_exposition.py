"""The agent's /metrics as dcgm-exporter shows a GPU: names, units, types, labels, the last Xid; no _created."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from gpuhealth.config import NodeIdentity
from gpuhealth.events import GpuInfo, Inventory, KernelEvent, MetricBatch, NvmlEvent
from producers.api import View
from producers.exposition import dcgm_text

T = 1_795_000_000_000_000_000
UUIDS = ("GPU-aaaa", "GPU-bbbb")


def node() -> View:
    v = View(NodeIdentity("c", "n1", "m", "b", T), registry=CollectorRegistry(), host={"hostname": "gpu-host-1"})
    v.inventory = Inventory(id="i", time=T, cluster="c", node="n1", source="nvml", component="inventory",
                            driver_version="570.86.15",
                            gpus=[GpuInfo(index=i, pci_bus_id=f"0000:{bus}:00.0", uuid=u, name="NVIDIA H200")
                                  for i, (u, bus) in enumerate(zip(UUIDS, ("1b", "43"), strict=True))])  # fmt: skip
    for u, bus, temp in ((UUIDS[0], "1b", 40.0), (UUIDS[1], "43", 45.0)):
        v.published_metrics(MetricBatch(id=u, time=T, cluster="c", node="n1", source="nvml", component="gpu",
                                        entity=f"0000:{bus}:00.0", gpu_uuid=u, pci_bus_id=f"0000:{bus}:00.0",
                                        values={"temperature_gpu_c": temp, "memory_used_bytes": 3 * 2**20 + 5,
                                                "memory_total_bytes": 10 * 2**20, "ecc_dbe_volatile": 2.0,
                                                "nvlink_replay_errors": 7.0, "clock_sm_mhz": 1980.0}))  # fmt: skip
    return v


def families(v: View) -> dict[str, tuple[str, dict[str, float]]]:
    """name → (type, {UUID: value})"""
    return {f.name: (f.type, {s.labels["UUID"]: s.value for s in f.samples})
            for f in text_string_to_metric_families(dcgm_text(v))}  # fmt: skip


def test_each_gpu_under_dcgm_exporters_names_units_and_types() -> None:
    got = families(node())
    assert got["DCGM_FI_DEV_GPU_TEMP"] == ("gauge", {UUIDS[0]: 40.0, UUIDS[1]: 45.0})
    assert got["DCGM_FI_DEV_FB_USED"] == ("gauge", dict.fromkeys(UUIDS, 3.0))  # whole MiB, as DCGM reads them
    assert got["DCGM_FI_DEV_FB_TOTAL"] == ("gauge", dict.fromkeys(UUIDS, 10.0))
    assert got["DCGM_FI_DEV_FB_FREE"] == ("gauge", dict.fromkeys(UUIDS, 6.0))
    assert got["DCGM_FI_DEV_SM_CLOCK"] == ("gauge", dict.fromkeys(UUIDS, 1980.0))
    assert got["DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"] == ("counter", dict.fromkeys(UUIDS, 2.0))
    assert got["DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL"] == ("counter", dict.fromkeys(UUIDS, 7.0))
    assert got["DCGM_FI_DEV_XID_ERRORS"] == ("gauge", dict.fromkeys(UUIDS, 0.0))  # no Xid yet
    assert "DCGM_FI_DEV_POWER_USAGE" not in got  # not read: no series, never a made-up zero
    text = dcgm_text(node())
    # a counter keeps DCGM's name, as dcgm-exporter prints it (prometheus_client would add _total)
    assert "# TYPE DCGM_FI_DEV_ECC_DBE_VOL_TOTAL counter\n" in text
    assert "\nDCGM_FI_DEV_ECC_DBE_VOL_TOTAL{" in text


def test_dcgm_labels() -> None:
    [first, _] = next(
        f for f in text_string_to_metric_families(dcgm_text(node())) if f.name == "DCGM_FI_DEV_GPU_TEMP"
    ).samples
    assert first.labels == {"gpu": "0", "UUID": UUIDS[0], "pci_bus_id": "00000000:1B:00.0", "device": "nvidia0",
                            "modelName": "NVIDIA H200", "Hostname": "gpu-host-1",
                            "DCGM_FI_DRIVER_VERSION": "570.86.15"}  # fmt: skip


def test_the_last_xid_of_each_gpu_from_the_kernel_log_and_from_nvml() -> None:
    v = node()
    base = {"time": T, "cluster": "c", "node": "n1", "component": "accelerator-nvidia-error-xid", "kind": "xid"}
    v.published_event(KernelEvent(id="k1", source="kmsg", xid=13, pci_bus_id="0000:1b:00.0", message="m", **base))
    v.published_event(KernelEvent(id="k2", source="kmsg", xid=79, pci_bus_id="0000:1b:00.0", message="m", **base))
    v.published_event(NvmlEvent(id="n1", source="nvml", xid=31, gpu_uuid=UUIDS[1], **base))
    assert families(v)["DCGM_FI_DEV_XID_ERRORS"] == ("gauge", {UUIDS[0]: 79.0, UUIDS[1]: 31.0})


def test_no_created_series() -> None:
    v = node()
    v.published_event(KernelEvent(id="k", time=T, cluster="c", node="n1", source="kmsg", component="x", kind="xid",
                                  xid=79, message="m"))  # fmt: skip
    text = generate_latest(v.registry).decode()
    assert "gpuhealth_agent_events_published_total" in text and "_created" not in text
