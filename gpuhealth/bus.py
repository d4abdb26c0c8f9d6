"""NATS and JetStream: connect, provision, publish, drain.

Every stage uses these few functions, so reconnects, acknowledgement and dead
letters behave the same everywhere:

- ``publish_batch`` publishes with ``Nats-Msg-Id`` = message id and returns only
  when JetStream has acknowledged every message (a repeat inside the stream's
  duplicate window is dropped by the server).
- ``gpuhealth.consumer.Consumer`` pulls batches from a durable consumer, decodes
  them with the family's decoder, dead-letters what does not decode, hands the
  rest to the stage and acknowledges only after the stage returned.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import json
import logging
import os
import re
import signal
import ssl
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import nats
import nats.errors
import nats.js.errors
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from nats.js.api import (
    DiscardPolicy,
    KeyValueConfig,
    StorageType,
    StreamConfig,
    StreamInfo,
    SubjectTransform,
)

from gpuhealth import jetstream, sizing, subjects
from gpuhealth.backoff import Backoff
from gpuhealth.errors import ConfigError
from gpuhealth.events import SCHEMA_HEADER, SCHEMA_VERSION

if TYPE_CHECKING:
    from gpuhealth.telemetry import Metrics

T = TypeVar("T")
log = logging.getLogger("gpuhealth.bus")


def redact(url: str) -> str:
    """A NATS URL without its password or token, for logs and errors."""
    return re.sub(r"://([^:/@]+):[^@/]*@", r"://\1:***@", re.sub(r"://([^:/@]+)@", r"://***@", url))


def auth_options(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Credentials and TLS from the environment (set by gpuctl's --nats-* options, or by systemd and
    Kubernetes), so every process of a deployment, the exec'd agent included, gets the same:
    GPUHEALTH_NATS_CREDS (a .creds file), _USER and _PASSWORD (or _PASSWORD_FILE), _TOKEN, _TLS_CA,
    _TLS_CERT and _TLS_KEY. A URL may carry user:password@ or token@ itself."""
    env = os.environ if env is None else env
    opts: dict[str, Any] = {}
    if creds := env.get("GPUHEALTH_NATS_CREDS"):
        opts["user_credentials"] = creds
    if user := env.get("GPUHEALTH_NATS_USER"):
        password = env.get("GPUHEALTH_NATS_PASSWORD", "")
        if path := env.get("GPUHEALTH_NATS_PASSWORD_FILE"):
            try:
                password = Path(path).read_text().strip()
            except OSError as e:
                raise ConfigError(f"cannot read the NATS password file {path}: {e.strerror or e}") from None
        opts["user"], opts["password"] = user, password
    if token := env.get("GPUHEALTH_NATS_TOKEN"):
        opts["token"] = token
    ca, cert, key = (env.get(f"GPUHEALTH_NATS_TLS_{k}") for k in ("CA", "CERT", "KEY"))
    if ca or cert:
        ctx = ssl.create_default_context(cafile=ca or None)
        if cert:
            ctx.load_cert_chain(cert, key or None)
        opts["tls"] = ctx
    return opts


async def connect(
    url: str,
    name: str,
    *,
    retry_for: float | None = None,
    inbox_prefix: str | None = None,
    credentials: Mapping[str, Any] | None = None,
) -> NATS:
    """Connect with reconnects forever once connected. ``retry_for`` seconds of
    retrying the first connection (None: forever, 0: one try). ``url`` may list a
    cluster's servers, comma-separated; ``inbox_prefix`` keeps replies under a
    subject the permissions can give to this client alone. ``credentials``
    (nats-py's options) replace those of the environment: an identity of
    ``gpuctl up``'s own server."""
    loop = asyncio.get_running_loop()
    deadline = None if retry_for is None else loop.time() + retry_for
    shown = redact(url)
    refused: list[str] = []

    async def on_error(e: Exception) -> None:
        if isinstance(e, nats.errors.AuthorizationError) or "authorization" in str(e).lower():
            refused.append(str(e) or "authorization violation")
        log.debug("nats: %s", e)

    async def on_disconnect() -> None:
        # Also called by close() and drain(); only an unplanned loss is worth a warning.
        if not nc_ref or not (nc_ref[0].is_closed or nc_ref[0].is_draining):
            log.warning("nats: disconnected from %s, reconnecting", shown)

    async def on_reconnect() -> None:
        log.info("nats: reconnected to %s", shown)

    nc_ref: list[NATS] = []
    # With reconnects forever, nats-py also retries the first connection forever:
    # a deadline has to come from outside.
    remaining = None if deadline is None else max(0.5, deadline - loop.time())
    try:
        nc = await asyncio.wait_for(
            nats.connect(
                servers=[u.strip() for u in url.split(",") if u.strip()],
                name=name,
                connect_timeout=2,
                allow_reconnect=True,
                max_reconnect_attempts=-1,
                reconnect_time_wait=0.5,
                error_cb=on_error,
                disconnected_cb=on_disconnect,
                reconnected_cb=on_reconnect,
                **({"inbox_prefix": inbox_prefix} if inbox_prefix else {}),
                **(dict(credentials) if credentials is not None else auth_options()),
            ),
            timeout=remaining,
        )
    except TimeoutError as e:
        if refused:
            why = f"NATS at {shown} refused the credentials ({refused[-1]})"
            raise ConnectionRefusedError(f"{why}: check --nats-creds, the user and password, or the token") from None
        raise ConnectionError(f"no NATS server answered at {shown} within {retry_for:.0f}s") from e
    nc_ref.append(nc)
    return nc


# The server's answer to a stream whose max_bytes it cannot reserve in its store.
NO_ROOM = 10047


async def provision(
    js: JetStreamContext, *, replicas: int = 1, missing_only: bool = False, limits: sizing.Limits | None = None
) -> None:
    """Create or update every stream and KV bucket; safe to run from every stage at once.

    ``limits``: each one's bounds (gpuhealth/sizing.py; default: ``sizing.unsized()``, by age alone, an
    existing bound in bytes kept); an existing stream or bucket whose bounds differ is updated in place,
    keeping its messages.
    ``missing_only``: only create what does not exist (an agent, whose permissions let it
    see streams but not change them: on a fleet the services create them). Retries until
    it succeeds: a stage that starts while NATS is away, or before the services, waits."""
    lim = limits or sizing.unsized()
    delays = Backoff(first=0.2, cap=5.0)
    while True:
        try:
            await _provision_once(js, replicas, missing_only, lim)
            return
        except (TimeoutError, nats.errors.Error) as e:
            if isinstance(e, nats.js.errors.APIError) and e.err_code == NO_ROOM:  # waiting would not help
                need = sizing.human(sizing.store_bytes(lim) / sizing.STORE_HEADROOM)
                raise ConfigError(
                    f"the streams' bounds ({need} in all) do not fit the NATS server's JetStream store: give it "
                    "a larger max_file_store, or size for fewer nodes or a shorter metrics buffer"
                ) from None
            log.warning("cannot provision streams yet (%s); retrying in %.1fs", e, delays.delay)
            await delays.wait()


async def _info(js: JetStreamContext, stream: str) -> StreamInfo | None:
    try:
        return await js.stream_info(stream)
    except nats.js.errors.NotFoundError:
        return None


def _kept(name: str, want: int, info: StreamInfo | None) -> int:
    """``want``, or the stream's present bound while it holds more than ``want``: a lower bound would
    delete the oldest messages at once, unread ones too. A later provision applies it."""
    if want < 0 and info is not None:  # not told a bound: keep the one it has
        return int(info.config.max_bytes or -1)
    if info is None or info.state.bytes <= want:
        return want
    log.warning("%s holds %d bytes, over its new bound of %d: not applied yet", name, info.state.bytes, want)
    return int(info.config.max_bytes or -1)


async def _kept_age(js: JetStreamContext, want: float, info: StreamInfo | None) -> float:
    """``want``, or the stream's present max_age while some consumer has not acknowledged a message
    older than ``want``: a shorter age would delete it. A later provision applies it."""
    if info is None or not info.config.max_age or want >= info.config.max_age:
        return want
    name = str(info.config.name)
    consumers = [c for c in await js.consumers_info(name) if c.num_pending or c.num_ack_pending]
    unread = [max((c.ack_floor.stream_seq if c.ack_floor else 0) + 1, info.state.first_seq) for c in consumers]
    if not unread:
        return want
    nc = jetstream.connection_of(js)
    request = json.dumps({"seq": min(unread), "next_by_subj": ">"}).encode()
    reply = json.loads((await nc.request(f"$JS.API.STREAM.MSG.GET.{name}", request, timeout=5)).data)
    stored = reply.get("message", {}).get("time", "")
    if not stored:
        return want
    # RFC 3339 with nanoseconds; fromisoformat takes microseconds.
    at = dt.datetime.fromisoformat(re.sub(r"(\.\d{6})\d*", r"\1", stored).replace("Z", "+00:00"))
    if (dt.datetime.now(dt.UTC) - at).total_seconds() <= want:
        return want
    log.warning(
        "%s: a consumer has yet to read a message of %s, older than the new max_age: not applied yet", name, stored
    )
    return float(info.config.max_age)


async def _provision_once(js: JetStreamContext, replicas: int, missing_only: bool, lim: sizing.Limits) -> None:
    for spec in subjects.STREAMS:
        info = await _info(js, spec.name)
        if missing_only and info is not None:
            continue
        bound = lim.streams[spec.name]
        age = await _kept_age(js, bound.max_age_s, info)
        config = StreamConfig(
            name=spec.name,
            subjects=spec.subjects,
            max_age=age,
            max_bytes=_kept(spec.name, bound.max_bytes, info),
            discard=DiscardPolicy.NEW if bound.discard_new else DiscardPolicy.OLD,
            duplicate_window=min(spec.duplicate_window_s, age),  # the server refuses a longer one
            max_msg_size=spec.max_msg_size,
            storage=StorageType.FILE,
            num_replicas=replicas,
            subject_transform=SubjectTransform(*spec.transform) if spec.transform else None,
        )
        try:
            await js.add_stream(config)  # the same config again is a no-op; a different one is refused
        except nats.js.errors.BadRequestError:
            await js.update_stream(config)
    for bucket in subjects.KV_BUCKETS:
        name = f"KV_{bucket}"
        info = await _info(js, name)
        if info is None:
            with contextlib.suppress(nats.js.errors.BadRequestError):  # made meanwhile by another stage
                kv = KeyValueConfig(
                    bucket=bucket, history=1, storage=StorageType.FILE, replicas=replicas, max_bytes=lim.buckets[bucket]
                )
                await js.create_key_value(kv)
        elif not missing_only and info.config.max_bytes != (want := _kept(name, lim.buckets[bucket], info)):
            await js.update_stream(dataclasses.replace(info.config, max_bytes=want))


def headers_for(msg_id: str) -> dict[str, str]:
    return {"Nats-Msg-Id": msg_id, SCHEMA_HEADER: str(SCHEMA_VERSION)}


Item = tuple[str, str, bytes]  # subject, message id, payload
Message = tuple[str, bytes, dict[str, str] | None]  # subject, payload, headers


def with_id(subject: str, msg_id: str, payload: bytes) -> Message:
    """A message JetStream stores once per id (inside the stream's duplicate window)."""
    return subject, payload, headers_for(msg_id)


def kv_put(bucket: str, key: str, value: bytes) -> Message:
    """What KeyValue.put sends: a JetStream publish to the bucket's subject for the key."""
    return f"$KV.{bucket}.{key}", value, None


async def publish_messages(
    js: JetStreamContext, messages: Iterable[Message], *, timeout: float = 10.0, metrics: Metrics | None = None
) -> None:
    """Publish every message at once and wait until JetStream acknowledged all: one round trip
    for any mix of stream messages and KV puts.

    Raises TimeoutError or a NATS error when any is not acknowledged; the caller
    retries the whole batch, which the ids make harmless; timed in ``metrics`` when given."""
    with metrics.publish_seconds.time() if metrics else contextlib.nullcontext():
        await jetstream.publish_all(jetstream.connection_of(js), messages, timeout)


async def publish_batch(
    js: JetStreamContext, items: Sequence[Item], *, timeout: float = 5.0, metrics: Metrics | None = None
) -> None:
    """Publish (subject, id, payload) items with ``Nats-Msg-Id`` = id; see publish_messages."""
    await publish_messages(js, (with_id(*item) for item in items), timeout=timeout, metrics=metrics)


async def publish_until_acked(
    publish: Callable[[list[Item]], Awaitable[None]], items: list[Item], stop: asyncio.Event | None = None,
    *, what: str = "publish", metrics: Metrics | None = None,
) -> bool:  # fmt: skip
    """Retry (with back-off) until JetStream acknowledged every item; False if ``stop`` came first.

    Retrying is safe: the ids make a repeat a no-op. A producer holds its source
    meanwhile, so an outage costs latency, never data. A stream with no room (StoreFullError) is
    logged once as an error and shown in ``metrics`` (``gpuhealth_stream_full``, ``no_room``) until it takes
    messages again."""
    delays = Backoff(first=0.1, cap=5.0)
    full: list[str] = []
    while items:
        if stop is not None and stop.is_set():
            return False
        try:
            await publish(items)
        except jetstream.StoreFullError as e:
            if not full:
                why = "they go once there is room: the stream purged, its bound raised, its oldest aged out"
                log.error("%s: %d messages held, JetStream has no room (%s); %s", what, len(items), e, why)
            for stream in e.streams or ["unknown"]:
                if stream not in full:
                    full.append(stream)
                if metrics is not None:
                    metrics.stream_full.labels(stream).set(1)
                    metrics.no_room[stream] = f"{len(items)} messages held and retried by {what}: {e}"
                    metrics.publish_refused.labels(stream).inc(len(items))
            log.warning("%s: still no room in %s; retrying in %.1fs", what, ", ".join(full), delays.delay)
        except Exception as e:
            log.warning("%s: %d messages not acknowledged (%s); retrying in %.1fs", what, len(items), e, delays.delay)
        else:
            for stream in full:
                if metrics is not None:
                    metrics.stream_full.labels(stream).set(0)
                    metrics.no_room.pop(stream, None)
                log.warning("%s: %s took messages again", what, stream)
            return True
        await delays.wait(stop)
    return True


async def shutdown(nc: NATS, timeout: int = 5) -> None:
    """Flush what is still buffered (acks, replies) and close.

    Not drain(): nats-py's drain waits on pull subscriptions' internal queues and
    can hang until its 30 s timeout. Every effect here is acknowledged explicitly,
    so anything not flushed is redelivered, never lost."""
    if nc.is_closed:
        return
    with contextlib.suppress(nats.errors.Error, asyncio.TimeoutError):
        await nc.flush(timeout=timeout)
    await nc.close()


class Stopped(Exception):
    """What a step that gave way to a stop raises (``unless_stopped``)."""


async def unless_stopped(step: Awaitable[T], stop: asyncio.Event) -> T:
    """``step``'s result, or Stopped the moment ``stop`` is set first (the step cancelled): nothing that stops
    waits on a step that will not end, a long poll or a child that will not come."""
    task = asyncio.ensure_future(step)
    told = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, told}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        told.cancel()
    if task.done():
        return task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
    raise Stopped


def stop_on_signals() -> asyncio.Event:
    """An event set by SIGTERM or SIGINT: every service drains and exits on it."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    return stop
