"""`serve rules --metrics-listen`: the service's own counters as Prometheus text."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from gpuhealth import bus, subjects
from gpuhealth.events import KernelEvent, encode
from tests.e2e.conftest import GPUCTL, Nats, wait_for


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def status(url: str) -> int:
    with urllib.request.urlopen(url, timeout=5) as r:
        return int(r.status)


def scrape(port: int) -> dict[str, list[tuple[dict[str, str], float]]]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    return {f.name: [(s.labels, s.value) for s in f.samples] for f in text_string_to_metric_families(text)}


async def test_the_rules_service_exports_its_counters(nats_url: str) -> None:
    port = free_port()
    rules = subprocess.Popen([GPUCTL, "serve", "rules", "--nats", nats_url, "--metrics-listen",  # noqa: ASYNC220
                              f"127.0.0.1:{port}"], stderr=subprocess.DEVNULL)  # fmt: skip
    nc = await bus.connect(nats_url, "metrics-test")
    try:
        js = nc.jetstream()
        await bus.provision(js)
        ev = KernelEvent(id="m1", time=10**18, cluster="c", node="n1", boot_id="b", source="kmsg",
                         component="accelerator-nvidia-error-xid", kind="xid", xid=79, pci_bus_id="0000:04:00.0",
                         message="m")  # fmt: skip
        await bus.publish_batch(js, [(subjects.event_subject("n1", "kmsg"), ev.id, encode(ev))])
        for _ in range(200):
            try:
                families = await asyncio.to_thread(scrape, port)
            except OSError:
                families = {}
            handled = [v for labels, v in families.get("gpuhealth_consumer_messages", [])
                       if labels.get("stage") == "rules"]  # fmt: skip
            if handled and sum(handled) >= 1:
                break
            await asyncio.sleep(0.1)
        assert sum(handled) >= 1
        assert any(n.startswith("gpuhealth_batch_seconds") for n in families)
        for probe in ("healthz", "readyz"):  # what a kubelet's probes and a unit's checks ask
            assert await asyncio.to_thread(status, f"http://127.0.0.1:{port}/{probe}") == 200
    finally:
        await nc.close()
        rules.terminate()
        await asyncio.to_thread(rules.wait, 30)


def probe(url: str) -> int:
    try:
        return status(url)
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return 0  # not listening yet


def test_the_rules_service_is_unready_while_nats_is_away_and_alive_throughout(tmp_path: Path) -> None:
    server = Nats(tmp_path)
    server.start()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    rules = subprocess.Popen([GPUCTL, "serve", "rules", "--nats", server.url, "--metrics-listen", f"127.0.0.1:{port}"],
                             stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        wait_for(lambda: probe(base + "/readyz") == 200, timeout=60)
        server.stop()
        wait_for(lambda: probe(base + "/readyz") == 503, timeout=30)
        assert probe(base + "/healthz") == 200  # away is not dead: a kubelet must not restart it for that
        server.start()
        wait_for(lambda: probe(base + "/readyz") == 200, timeout=60)
    finally:
        rules.terminate()
        rules.wait(30)
        if server.proc is not None and server.proc.poll() is None:
            server.stop()
