"""gpuhealth's own Prometheus metrics: one registry per process, served by the agent's API listener or by
``--metrics-listen`` on the rules and sink services (with their liveness and readiness)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

Reading = tuple[str, str, Callable[[], float]]  # (name, help, read)

# A counter's ``_created`` sample is one more series for every label set, and no dashboard reads it.
disable_created_metrics()  # type: ignore[no-untyped-call]


class Metrics:
    """One process's own instruments, on the registry it is given: a stage builds it once at its start and hands
    it to what it measures (its consumers, its publishes); whoever serves /metrics serves ``registry``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        r = self.registry = registry
        ProcessCollector(registry=r)  # CPU seconds, resident bytes, open files: each stage's cost, where it runs
        self.messages = Counter("gpuhealth_consumer_messages", "messages a stage handled, by stage and stream",
                                ["stage", "stream"], registry=r)  # fmt: skip
        self.dead_letters = Counter("gpuhealth_dead_letters", "messages a stage could not use, by stage", ["stage"],
                                    registry=r)  # fmt: skip
        self.retries = Counter("gpuhealth_consumer_retries", "batches a stage had to retry (its effect failed)",
                               ["stage"], registry=r)  # fmt: skip
        self.batch_seconds = Histogram("gpuhealth_batch_seconds", "time to handle one batch, by stage", ["stage"],
                                       buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30), registry=r)  # fmt: skip
        self.publish_seconds = Histogram("gpuhealth_publish_seconds", "time until JetStream acknowledged a batch",
                                         buckets=(0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5),
                                         registry=r)  # fmt: skip
        # A stream that has no room refuses; the publisher holds its messages and retries (gpuhealth/bus.py).
        self.stream_full = Gauge("gpuhealth_stream_full", "1 while a stream refuses this process's messages",
                                 ["stream"], registry=r)  # fmt: skip
        self.publish_refused = Counter("gpuhealth_publish_refused", "messages refused for want of room", ["stream"],
                                       registry=r)  # fmt: skip
        # The same, with the server's words, for the agent's API to show as a Degraded state (producers/api.py).
        self.no_room: dict[str, str] = {}


class Readings(Collector):
    """Values a process keeps for itself (a spool's size, lines read), read at scrape time: counters named
    ``…_total`` for what only grows, gauges for the rest."""

    def __init__(self, counters: Sequence[Reading], gauges: Sequence[Reading]) -> None:
        self.counters, self.gauges = counters, gauges

    def collect(self) -> Iterator[Metric]:
        for name, doc, read in self.counters:
            yield CounterMetricFamily(name, doc, value=float(read()))
        for name, doc, read in self.gauges:
            yield GaugeMetricFamily(name, doc, value=float(read()))


class Probes:
    """What a service's liveness and readiness say: alive while its event loop beats, ready once it serves."""

    def __init__(self, stale_after: float = 60.0) -> None:
        self.stale_after = stale_after
        self.beat = time.monotonic()
        self.ready: Callable[[], bool] = lambda: False

    def alive(self) -> bool:
        return time.monotonic() - self.beat < self.stale_after

    async def beating(self, stop: asyncio.Event, every: float = 5.0) -> None:
        """Beat from the event loop until ``stop``: a stuck loop stops beating, and says so at /healthz."""
        while not stop.is_set():
            self.beat = time.monotonic()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), every)


def serve(listen: str, registry: CollectorRegistry, probes: Probes | None = None) -> str:
    """Serve ``/metrics`` of ``registry``, and ``/healthz`` and ``/readyz`` of ``probes``, on HOST:PORT (port 0:
    any), on a thread of its own; returns the address it took."""
    host, _, port = listen.rpartition(":")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            if path == "/metrics":
                self._send(200, generate_latest(registry), CONTENT_TYPE_LATEST)
            elif path in ("/healthz", "/readyz") and probes is not None:
                ok = probes.alive() if path == "/healthz" else probes.alive() and probes.ready()
                self._send(200 if ok else 503, b"ok\n" if ok else b"not ready\n", "text/plain; charset=utf-8")
            else:
                self._send(404, b"no such path\n", "text/plain; charset=utf-8")

        def _send(self, code: int, body: bytes, kind: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # a scrape every 15 s is no news
            pass

    server = ThreadingHTTPServer((host.strip("[]") or "127.0.0.1", int(port)), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    bound_host, bound_port = server.server_address[:2]
    return f"{bound_host!s}:{bound_port}"
