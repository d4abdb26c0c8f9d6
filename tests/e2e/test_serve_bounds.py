"""The services size the streams for the fleet in their environment (the lines `gpuctl nats-config` writes)."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest

from gpuhealth import bus, sizing
from gpuhealth.natsd import EmbeddedNats
from tests.e2e.conftest import GPUCTL


async def test_serve_rules_bounds_the_streams_for_the_fleet_in_its_environment(tmp_path: Path) -> None:
    server = EmbeddedNats(tmp_path, auth=None)
    url = await server.start()
    env = {**os.environ, "GPUHEALTH_FLEET_NODES": "20", "GPUHEALTH_METRICS_BUFFER_HOURS": "2"}
    rules = await asyncio.create_subprocess_exec(
        GPUCTL, "serve", "rules", "--nats", url, env=env, stderr=subprocess.DEVNULL
    )
    nc = await bus.connect(url, "t")
    try:
        js = nc.jetstream()
        async with asyncio.timeout(30):
            while True:
                try:
                    metrics = (await js.stream_info("GPUHEALTH_METRICS")).config
                    break
                except Exception:
                    await asyncio.sleep(0.2)
        # 1,500 B x 8 GPUs x 8,640 polls x 20 nodes x 2/24 day x 1.25
        assert (metrics.max_bytes, metrics.max_age) == (216_000_000, 2 * 3600)
        events = (await js.stream_info("GPUHEALTH_EVENTS")).config
        assert events.max_bytes == sizing.MIN_STREAM_BYTES  # 8,000 B x 20 x 7 x 10 = 11.2 MB: the floor
    finally:
        rules.terminate()
        await asyncio.wait_for(rules.wait(), 20)
        await nc.close()
        await server.stop()


def test_a_cluster_sized_for_one_node_is_warned_of(caplog: pytest.LogCaptureFixture) -> None:
    from gpuctl.stages import bounds

    assert bounds(sizing.Fleet(nodes=1), replicas=1) == sizing.limits(sizing.Fleet(nodes=1))
    assert not [r for r in caplog.records if r.levelname == "WARNING"]
    bounds(sizing.Fleet(nodes=1), replicas=3)
    [warning] = [r for r in caplog.records if r.levelname == "WARNING"]
    assert "--fleet-nodes" in warning.getMessage()
