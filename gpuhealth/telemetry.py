"""gpuhealth's own Prometheus metrics: one registry per process, served by the agent's API listener or by
``--metrics-listen`` on the rules and sink services."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

REGISTRY = CollectorRegistry()

MESSAGES = Counter("gpuhealth_consumer_messages", "messages a stage handled, by stage and stream",
                   ["stage", "stream"], registry=REGISTRY)  # fmt: skip
DEAD_LETTERS = Counter("gpuhealth_dead_letters", "messages a stage could not use, by stage", ["stage"],
                       registry=REGISTRY)  # fmt: skip
RETRIES = Counter("gpuhealth_consumer_retries", "batches a stage had to retry (its effect failed)", ["stage"],
                  registry=REGISTRY)  # fmt: skip
BATCH_SECONDS = Histogram("gpuhealth_batch_seconds", "time to handle one batch, by stage", ["stage"],
                          buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30), registry=REGISTRY)  # fmt: skip
PUBLISH_SECONDS = Histogram("gpuhealth_publish_seconds", "time until JetStream acknowledged a batch",
                            buckets=(0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5), registry=REGISTRY)  # fmt: skip

# A stream that has no room refuses; the publisher holds its messages and retries (gpuhealth/bus.py).
STREAM_FULL = Gauge(
    "gpuhealth_stream_full", "1 while a stream refuses this process's messages", ["stream"], registry=REGISTRY
)
# The same, with the server's words, for the agent's API to show as a Degraded state (producers/api.py).
NO_ROOM: dict[str, str] = {}
PUBLISH_REFUSED = Counter(
    "gpuhealth_publish_refused", "messages refused for want of room", ["stream"], registry=REGISTRY
)


def serve(listen: str) -> str:
    """Serve /metrics on HOST:PORT (port 0: any); returns the address it took."""
    host, _, port = listen.rpartition(":")
    server, _ = start_http_server(int(port), addr=host or "127.0.0.1", registry=REGISTRY)
    bound_host, bound_port = server.server_address[:2]
    return f"{bound_host!s}:{bound_port}"
