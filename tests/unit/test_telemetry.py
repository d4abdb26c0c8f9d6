"""gpuhealth's own metrics: a registry each process passes in (none global), and the services' probes."""

from __future__ import annotations

import time
import urllib.error
import urllib.request

from prometheus_client import CollectorRegistry
from prometheus_client.metrics import MetricWrapperBase

from gpuhealth import telemetry


def test_the_registry_is_passed_in_never_a_global() -> None:
    globals_ = [n for n, v in vars(telemetry).items() if isinstance(v, CollectorRegistry | MetricWrapperBase)]
    assert globals_ == []
    rules, other = telemetry.Metrics(CollectorRegistry()), telemetry.Metrics(CollectorRegistry())
    rules.messages.labels("rules", "GPUHEALTH_EVENTS").inc(3)
    rules.no_room["GPUHEALTH_EVENTS"] = "full"
    labels = {"stage": "rules", "stream": "GPUHEALTH_EVENTS"}
    assert rules.registry.get_sample_value("gpuhealth_consumer_messages_total", labels) == 3
    assert other.registry.get_sample_value("gpuhealth_consumer_messages_total", labels) is None
    assert other.no_room == {}
    # with each process's cost beside its own counters, and no _created series
    assert rules.registry.get_sample_value("process_cpu_seconds_total") is not None
    assert rules.registry.get_sample_value("gpuhealth_consumer_messages_created", labels) is None


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return int(r.status), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_metrics_liveness_and_readiness_on_one_listener() -> None:
    measured, probes = telemetry.Metrics(CollectorRegistry()), telemetry.Probes(stale_after=60)
    base = "http://" + telemetry.serve("127.0.0.1:0", measured.registry, probes)
    measured.retries.labels("sink").inc()
    code, text = get(base + "/metrics")
    assert code == 200 and 'gpuhealth_consumer_retries_total{stage="sink"} 1.0' in text
    assert get(base + "/healthz")[0] == 200
    assert get(base + "/readyz")[0] == 503  # not connected yet
    probes.ready = lambda: True
    assert get(base + "/readyz")[0] == 200
    probes.beat = time.monotonic() - 61  # an event loop that stopped beating a minute ago
    assert (get(base + "/healthz")[0], get(base + "/readyz")[0]) == (503, 503)
    assert get(base + "/nothing")[0] == 404
