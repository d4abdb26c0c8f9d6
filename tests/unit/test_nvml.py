"""The NVML producer against the fake NVML: poll fields, events, and every failure the field has taught."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import msgspec

from gpuhealth.config import NodeIdentity
from gpuhealth.events import EVENT_DECODER, INVENTORY_DECODER, METRIC_DECODER, MetricBatch, NvmlEvent, SourceStatus
from producers.fake_nvml import FakeNvml, with_h100_load
from producers.nvml import NvmlProducer
from rules.catalog import load
from rules.engine import apply
from tests.conftest import REPO

H100_TREE = REPO / "tests" / "data" / "sysfs" / "h100-8gpu"
EMPTY_TREE = Path("/nonexistent-sysfs")

POLL_FIELDS = {
    "temperature_gpu_c", "temperature_memory_c", "temperature_slowdown_c", "temperature_shutdown_c", "power_w",
    "power_limit_w", "util_gpu_pct", "util_memory_pct", "memory_used_bytes", "memory_total_bytes",
    "ecc_sbe_volatile", "ecc_dbe_volatile", "ecc_sbe_aggregate", "ecc_dbe_aggregate", "remapped_rows_correctable",
    "remapped_rows_uncorrectable", "remapped_rows_pending", "remapped_rows_failure", "clock_event_reasons",
    "hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown", "nvlink_links_active",
    "nvlink_replay_errors", "nvlink_recovery_errors", "nvlink_crc_flit_errors", "nvlink_crc_data_errors",
    "pcie_replay_count", "pcie_gen_current", "pcie_gen_max", "pcie_width_current", "pcie_width_max",
    "persistence_mode", "fabric_state", "fabric_status",
}  # fmt: skip


class Sink:
    def __init__(self) -> None:
        self.items: list[tuple[str, str, bytes]] = []

    async def __call__(self, items: list[tuple[str, str, bytes]]) -> None:
        self.items += items

    def events(self) -> list[NvmlEvent | SourceStatus]:
        out = []
        for subject, _, payload in self.items:
            if ".event." in subject:
                ev = EVENT_DECODER.decode(payload)
                assert isinstance(ev, NvmlEvent | SourceStatus)
                out.append(ev)
        return out


def producer(nvml: object, identity: NodeIdentity, sink: Sink, tree: Path = EMPTY_TREE, **kw: float) -> NvmlProducer:
    return NvmlProducer(
        nvml, identity, tree, sink, poll_interval=kw.get("poll", 10.0), deadline=kw.get("deadline", 2.0)
    )


def decode_all(items: list[tuple[str, str, bytes]]) -> list[msgspec.Struct]:
    out: list[msgspec.Struct] = []
    for subject, _, payload in items:
        decoder = (
            METRIC_DECODER
            if ".metric." in subject
            else INVENTORY_DECODER
            if ".inventory." in subject
            else EVENT_DECODER
        )
        out.append(decoder.decode(payload))
    return out


async def test_inventory_of_an_8_gpu_node(identity: NodeIdentity) -> None:
    p = producer(FakeNvml(8, seed="n1"), identity, Sink(), H100_TREE)
    first = decode_all(await p.open())
    status, inventory = first[0], first[1]
    assert isinstance(status, SourceStatus) and status.available and "8 GPUs" in status.reason
    assert inventory.gpus and len(inventory.gpus) == 8  # type: ignore[attr-defined]
    g3 = inventory.gpus[3]  # type: ignore[attr-defined]
    assert g3.uuid.startswith("GPU-") and g3.serial and g3.name == "NVIDIA H100 80GB HBM3" and g3.vbios
    assert g3.pci_bus_id == "0000:5d:00.0" and g3.board_part_number
    assert (inventory.driver_version, inventory.cuda_driver_version, inventory.nvidia_pci_devices) == (  # type: ignore[attr-defined]
        "550.90.07",
        "12.4",
        8,
    )
    assert len(first) == 2, "NVML sees every GPU the PCI bus has: no count event"
    p.close()


async def test_a_poll_reads_every_field_and_skips_what_is_not_supported(identity: NodeIdentity) -> None:
    nvml = with_h100_load(FakeNvml(2))
    p = producer(nvml, identity, Sink())
    await p.open()
    batches = [b for b in decode_all(await p.poll_once()) if isinstance(b, MetricBatch)]
    assert len(batches) == 2
    b = batches[0]
    assert set(b.values) >= POLL_FIELDS
    assert "retired_pages_sbe" not in b.values and b.errors == {}, "NOT_SUPPORTED is skipped, never an error"
    assert b.values["power_w"] == 612.0 and b.values["nvlink_links_active"] == 18
    assert b.values["temperature_memory_c"] == 41 and b.values["fabric_state"] == 3
    assert [(pr.pid, pr.name, pr.used_memory_bytes) for pr in b.processes] == [(41000, "python3", 70_000_000_000)]
    assert b.gpu_uuid == nvml.gpus[0].uuid and b.entity == "0000:18:00.0"
    calls = len(nvml.calls)
    await p.poll_once()
    assert "nvmlDeviceGetRetiredPages" not in list(nvml.calls)[calls:], "an unsupported call is not asked again"
    p.close()


async def test_events_from_the_waiter_thread(identity: NodeIdentity) -> None:
    nvml, sink = FakeNvml(4), Sink()
    p = producer(nvml, identity, sink, poll=60)
    await p.open()
    stop = asyncio.Event()
    task = asyncio.create_task(p.run(stop))
    nvml.inject_xid(2, 79)
    nvml.inject_ecc(1, double_bit=True)
    nvml.inject_ecc(1, double_bit=False)
    nvml.inject_event(0, nvml.nvmlEventTypePowerSourceChange, 1)  # not registered: the GPU does not support it
    async with asyncio.timeout(10):
        while len([e for e in sink.events() if isinstance(e, NvmlEvent)]) < 3:
            await asyncio.sleep(0.05)
    stop.set()
    await task
    got = {(e.kind, e.gpu_index, e.xid) for e in sink.events() if isinstance(e, NvmlEvent)}
    assert got == {("xid", 2, 79), ("ecc_dbe", 1, None), ("ecc_sbe", 1, None)}
    p.close()


async def test_clock_changes_are_not_events(identity: NodeIdentity) -> None:
    """A real H100 under matrix products raised 11 clock events a second (bench/real_gpu.py): on an 8-GPU
    node, 7.6 million events a day of no health meaning. The poller reads the clocks and their reasons."""
    nvml, sink = FakeNvml(1), Sink()
    p = producer(nvml, identity, sink, poll=60)
    await p.open()
    stop = asyncio.Event()
    task = asyncio.create_task(p.run(stop))
    for mhz in range(200):
        nvml.inject_event(0, nvml.nvmlEventTypeClock, 1200 + mhz)
    nvml.inject_xid(0, 31)  # after them on the same waiter: once it is out, the clocks were passed over
    async with asyncio.timeout(10):
        while not [e for e in sink.events() if isinstance(e, NvmlEvent)]:
            await asyncio.sleep(0.05)
    stop.set()
    await task
    assert [(e.kind, e.xid) for e in sink.events() if isinstance(e, NvmlEvent)] == [("xid", 31)]
    p.close()


async def test_lost_gpu_and_row_remapping_are_reported_once(identity: NodeIdentity) -> None:
    nvml = FakeNvml(3)
    p = producer(nvml, identity, Sink())
    await p.open()
    nvml.lose_gpu(1)
    nvml.remap_rows(2, pending=True)
    first = [e for e in decode_all(await p.poll_once()) if isinstance(e, NvmlEvent)]
    assert {(e.kind, e.gpu_index) for e in first} == {("gpu_lost", 1), ("remap_pending", 2)}
    again = [e for e in decode_all(await p.poll_once()) if isinstance(e, NvmlEvent)]
    assert again == []
    nvml.remap_rows(2, failed=True)
    assert [e.kind for e in decode_all(await p.poll_once()) if isinstance(e, NvmlEvent)] == ["remap_failed"]
    p.close()


async def test_a_hung_call_is_named_and_stalls_nothing_else(identity: NodeIdentity) -> None:
    nvml = FakeNvml(2)
    p = producer(nvml, identity, Sink(), deadline=0.5)
    await p.open()
    nvml.hang("nvmlDeviceGetPowerUsage", 2.0)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.05)
            ticks += 1

    t = asyncio.create_task(ticker())
    started = time.monotonic()
    hung = [e for e in decode_all(await p.poll_once()) if isinstance(e, NvmlEvent)]
    assert time.monotonic() - started < 1.5
    assert [(e.kind, e.message) for e in hung] == [("hung", "nvmlDeviceGetPowerUsage")]
    assert ticks >= 5, "the event loop kept running while NVML hung"
    assert await p.poll_once() == [], "the stuck poll is not stacked on, nor reported twice"
    t.cancel()
    p.close()


async def test_no_nvidia_device_is_not_applicable_and_healthy(identity: NodeIdentity) -> None:
    for nvml in (None, FakeNvml(0, init_error=9)):
        p = producer(nvml, identity, Sink(), EMPTY_TREE)
        (status,) = decode_all(await p.open())
        assert isinstance(status, SourceStatus) and not status.applicable
        _, out = apply(None, status, load())
        assert out[0].health == "Healthy" and out[0].reason.startswith("not applicable")


async def test_nvidia_devices_without_a_working_nvml_make_the_node_unhealthy(identity: NodeIdentity) -> None:
    for nvml, why in ((None, "not installed"), (FakeNvml(8, init_error=9), "Driver Not Loaded")):
        p = producer(nvml, identity, Sink(), H100_TREE)
        p.load_error = "nvidia-ml-py is not installed" if nvml is None else ""
        (event,) = decode_all(await p.open())
        assert isinstance(event, NvmlEvent) and event.kind == "init_failed" and why in event.message
        _, out = apply(None, event, load())
        assert (out[0].component, out[0].health, out[0].repair_actions) == (
            "accelerator-nvidia-nvml",
            "Unhealthy",
            ["REBOOT_SYSTEM"],
        )


async def test_fewer_gpus_in_nvml_than_on_pci(identity: NodeIdentity) -> None:
    p = producer(FakeNvml(7), identity, Sink(), H100_TREE)
    events = [e for e in decode_all(await p.open()) if isinstance(e, NvmlEvent)]
    assert [(e.kind, e.data) for e in events] == [("gpu_count", 7)]
    _, out = apply(None, events[0], load())
    assert (out[0].health, out[0].repair_actions) == ("Unhealthy", ["HARDWARE_INSPECTION"])


async def test_unsupported_event_types_are_skipped_not_fatal(identity: NodeIdentity) -> None:
    nvml = FakeNvml(1)  # no power-source events on a datacenter GPU
    p = producer(nvml, identity, Sink())
    await p.open()
    assert p.working
    registered = [c for c in nvml.calls if c == "nvmlDeviceRegisterEvents"]
    assert len(registered) == 3, "Xid, SBE and DBE: power source is not supported, clocks are not asked for"


def test_rules_for_nvml_facts(identity: NodeIdentity) -> None:
    cases = {
        "ecc_dbe": ("accelerator-nvidia-ecc", "Unhealthy", ["REBOOT_SYSTEM"]),
        "gpu_lost": ("accelerator-nvidia-gpu", "Unhealthy", ["REBOOT_SYSTEM"]),
        "remap_pending": ("accelerator-nvidia-remapped-rows", "Unhealthy", ["REBOOT_SYSTEM"]),
        "remap_failed": ("accelerator-nvidia-remapped-rows", "Unhealthy", ["HARDWARE_INSPECTION"]),
        "hung": ("accelerator-nvidia-nvml", "Unhealthy", ["REBOOT_SYSTEM"]),
    }
    for kind, want in cases.items():
        ev = NvmlEvent(id=kind, time=1, cluster="c", node="n", boot_id="b", source="nvml", component="nvml",
                       kind=kind, gpu_index=0, pci_bus_id="0000:18:00.0", message="nvmlDeviceGetPowerUsage")  # fmt: skip
        _, out = apply(None, ev, load())
        assert (out[0].component, out[0].health, out[0].repair_actions) == want, kind
    _, out = apply(None, NvmlEvent(id="s", time=1, cluster="c", node="n", source="nvml", component="nvml",
                                   kind="ecc_sbe"), load())  # fmt: skip
    assert out == []
