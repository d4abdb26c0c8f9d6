"""Every stream and bucket is bounded, by figures derived from the fleet (gpuhealth/sizing.py)."""

from __future__ import annotations

import pytest

from gpuhealth import sizing, subjects

GiB = 1 << 30
MiB = 1 << 20


def test_a_3000_node_fleet_gets_bounds_from_its_size() -> None:
    lim = sizing.limits(sizing.Fleet(nodes=3000, gpus_per_node=8, poll_interval_s=10))
    s = lim.streams
    # 1,500 B a GPU poll x 8 GPUs x 8,640 polls a day x 3,000 nodes x 6 h x 1.25
    assert s["GPUHEALTH_METRICS"] == sizing.StreamLimits(97_200_000_000, 6 * 3600, discard_new=False)
    # 8,000 B a node-day x 3,000 nodes x 7 days x 10 for storms; never dropped
    assert s["GPUHEALTH_EVENTS"] == sizing.StreamLimits(1_680_000_000, 7 * 86400, discard_new=True)
    assert s["GPUHEALTH_INVENTORY"] == sizing.StreamLimits(84_000_000, 7 * 86400, discard_new=False)
    assert s["GPUHEALTH_HEALTH"] == sizing.StreamLimits(1_680_000_000, 7 * 86400, discard_new=False)
    assert s["GPUHEALTH_INCIDENTS"] == sizing.StreamLimits(1_260_000_000, 7 * 86400, discard_new=False)
    assert s["GPUHEALTH_DLQ"] == sizing.StreamLimits(840_000_000, 14 * 86400, discard_new=False)
    assert s["GPUHEALTH_DECISIONS"] == sizing.StreamLimits(420_000_000, 7 * 86400, discard_new=False)
    assert lim.buckets == {
        "gpuhealth_health": 3000 * 256 * 1024,
        "gpuhealth_rules": 3000 * MiB,
        "gpuhealth_inventory": 3000 * 64 * 1024,
    }
    assert set(s) == {spec.name for spec in subjects.STREAMS} and set(lim.buckets) == set(subjects.KV_BUCKETS)
    # A server's store: the streams (103,164,000,000) and buckets (4,128,768,000) once, and a quarter more.
    assert sizing.store_bytes(lim) == 134_115_960_000
    assert sizing.human(sizing.store_bytes(lim)) == "125G"


def test_the_metrics_buffer_and_poll_interval_scale_the_metrics_bound() -> None:
    base = sizing.limits(sizing.Fleet(nodes=3000)).streams["GPUHEALTH_METRICS"]
    slow = sizing.limits(sizing.Fleet(nodes=3000, poll_interval_s=30)).streams["GPUHEALTH_METRICS"]
    short = sizing.limits(sizing.Fleet(nodes=3000, metrics_buffer_s=3600)).streams["GPUHEALTH_METRICS"]
    assert slow.max_bytes == 32_400_000_000 and slow.max_age_s == 6 * 3600
    assert short == sizing.StreamLimits(16_200_000_000, 3600, discard_new=False)
    assert base.max_bytes == 3 * slow.max_bytes


def test_one_node_gets_the_floors() -> None:
    lim = sizing.limits(sizing.Fleet(nodes=1))
    assert {x.max_bytes for x in lim.streams.values()} == {64 * MiB}
    assert set(lim.buckets.values()) == {16 * MiB}
    assert sizing.store_bytes(lim) == 650_117_120  # (7 x 64 MiB + 3 x 16 MiB) x 1.25


@pytest.mark.parametrize(
    "bad",
    [
        {"nodes": 0},
        {"nodes": 1, "poll_interval_s": 0},
        {"nodes": 1, "metrics_buffer_s": 0},
        {"nodes": 1, "gpus_per_node": -1},
    ],
)
def test_a_fleet_that_cannot_be_is_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        sizing.Fleet(**bad)  # type: ignore[arg-type]
