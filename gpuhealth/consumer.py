"""A stage's durable pull consumer: fetch a batch, decode it (dead-lettering what cannot be used),
run the stage's effect until it succeeds, then acknowledge. Nothing is acknowledged before its
effect is done, so a crash anywhere redelivers, and every stage is idempotent by message id.

An effect that fails because the store or the bus is away (``is_outage``) is retried with back-off
for as long as it takes: every message is held. One that keeps failing for any other reason is
split in halves, in order, until the message that fails alone is found: that one is dead-lettered
with the error, the rest are handled, and the stage moves on (one poison message never stalls it)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Generic, NamedTuple, TypeVar

import msgspec
import nats.errors
import nats.js.errors
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from prometheus_client import CollectorRegistry

from gpuhealth import subjects
from gpuhealth.backoff import Backoff
from gpuhealth.bus import Stopped, publish_batch, unless_stopped
from gpuhealth.events import SCHEMA_HEADER, SCHEMA_VERSION, DeadLetter, derived_id, encode, now_ns
from gpuhealth.jetstream import ConsumerGone, Puller, StoreFullError, StreamUnavailableError, connection_of
from gpuhealth.telemetry import Metrics

# An idle consumer's long poll: a message ends it at once, so this is no latency, only how often an idle stage
# asks (each ask costs it and nats-server a little CPU: at 0.5 s, about 14 millicores for up's rules and sink).
IDLE_POLL_S = 5.0

log = logging.getLogger("gpuhealth.bus")
T = TypeVar("T")
_VERSION = str(SCHEMA_VERSION)


class _Refused(NamedTuple):
    reason: str


# Connection-level failures: the other side is away or slow, and the message is not at fault.
_AWAY: tuple[type[BaseException], ...] = (
    OSError,  # ConnectionRefusedError, ConnectionResetError, socket timeouts
    TimeoutError,
    nats.errors.TimeoutError,
    nats.errors.NoRespondersError,
    nats.errors.ConnectionClosedError,
    nats.errors.ConnectionDrainingError,
    nats.errors.ConnectionReconnectingError,
    nats.errors.StaleConnectionError,
    nats.errors.NoServersError,
    nats.errors.OutboundBufferLimitError,
    nats.js.errors.ServiceUnavailableError,  # JetStream without quorum
    # A stage's own output refused for want of a stream (none answered: a leader being elected, found with
    # a cluster's server killed) or of room: dead-lettering the input for it would lose real faults.
    StreamUnavailableError,
    StoreFullError,
)


def is_outage(error: BaseException) -> bool:
    """The store or the bus being away, anywhere in the chain of causes (a driver wraps the socket's error)."""
    seen: set[int] = set()
    e: BaseException | None = error
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, _AWAY):
            return True
        e = e.__cause__ or e.__context__
    return False


class Consumer(Generic[T]):
    """A durable pull consumer over one stream, for one stage."""

    def __init__(
        self,
        js: JetStreamContext,
        *,
        stream: str,
        durable: str,
        filter_subject: str,
        decoder: msgspec.msgpack.Decoder[T],
        stage: str,
        handle: Callable[[list[T]], Awaitable[None]],
        batch: int = 1000,
        ack_wait_s: float = 15.0,
        start_seq: int | None = None,
        linger_s: float = 0.0,
        outage: Callable[[BaseException], bool] = is_outage,
        poison_tries: int = 3,
        in_order: Callable[[list[T], list[int]], Awaitable[None]] | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self.js = js
        # The stage's instruments (its process serves their registry); none given: counted where no one reads.
        self.metrics = metrics or Metrics(CollectorRegistry())
        self.stream = stream
        self.durable = durable
        self.filter_subject = filter_subject
        self.decoder = decoder
        self.stage = stage
        self.handle = handle
        self.batch = batch
        self.ack_wait_s = ack_wait_s
        self.start_seq = start_seq  # where a consumer created now starts (None: the stream's beginning)
        # Wait up to this long for a batch to fill: a store wants few large inserts, a rules
        # engine wants every event at once (0).
        self.linger_s = linger_s
        self.outage = outage  # the stage's store may have failures of its own that mean "away"
        # A batch failing this often (not for an outage) is split; a message failing alone this often is poison.
        self.poison_tries = poison_tries
        # With ``in_order`` (which then replaces ``handle``, and is given each item's stream
        # sequence), items reach the stage in stream order even across a crash or lost deliveries.
        self.in_order = in_order
        self._next_delivery = 1  # the consumer sequence the next delivery must have, in order
        self.processed = 0
        self.dead_lettered = 0

    async def run(self, stop: asyncio.Event) -> None:
        puller = Puller(connection_of(self.js), self.stream, self.durable)
        try:
            await self._bind(stop)
            await self._loop(puller, stop)
        finally:
            with contextlib.suppress(nats.errors.Error):
                await puller.stop()

    async def _loop(self, puller: Puller, stop: asyncio.Event) -> None:
        delays = Backoff(first=0.2, cap=2.0)
        while not stop.is_set():
            try:
                msgs = await unless_stopped(puller.fetch(self.batch, timeout=IDLE_POLL_S), stop)
            except (Stopped, nats.errors.ConnectionClosedError, nats.errors.ConnectionDrainingError):
                return
            except nats.errors.Error as e:
                # While a cluster elects the consumer's new leader every fetch fails at once: back off
                # (and say so once a step, not fifty times a second).
                log.warning("%s: fetch failed (%s); retrying in %.1fs", self.stage, e, delays.delay)
                await delays.wait()
                if isinstance(e, ConsumerGone):  # deleted, or the stream was: make it again
                    await self._bind(stop)
                continue
            if not msgs:
                continue
            delays.reset()
            if self.linger_s and len(msgs) < self.batch:
                msgs += await self._linger(puller, msgs, stop)
            if self.in_order is not None:
                ordered = self._delivered_in_order(msgs)
                if ordered is None:
                    puller.discard()
                    await self._bind(stop, restart=True)
                if not ordered:
                    continue
                msgs = ordered
            good: list[tuple[Msg, T]] = []
            for m in msgs:
                item = self._decode(m)
                if isinstance(item, _Refused):
                    await self.dead_letter(m, item.reason)
                else:
                    good.append((m, item))
            if not await self._handle_until_done(good, msgs, stop):
                # Stopping with the batch unhandled: hand it back now rather than after ack_wait.
                for m in msgs:
                    with contextlib.suppress(nats.errors.Error):
                        await m.nak()
                return
            self.metrics.messages.labels(self.stage, self.stream).inc(len(msgs))
            for m in msgs:
                await _ack(m)

    async def _linger(self, puller: Puller, msgs: list[Msg], stop: asyncio.Event) -> list[Msg]:
        """More of the batch, until it is full, linger_s has passed since its first message, or the stage
        stops (what it has is then handled at once). A linger longer than the ack wait (the sink's metrics)
        keeps what it holds with in_progress, so JetStream does not deliver it again meanwhile."""
        more: list[Msg] = []
        deadline = time.monotonic() + self.linger_s
        kept = time.monotonic()  # when JetStream's ack wait last started again for what we hold
        while len(msgs) + len(more) < self.batch and (left := deadline - time.monotonic()) > 0.01:
            if time.monotonic() - kept > self.ack_wait_s / 2:
                kept = time.monotonic()
                for m in (*msgs, *more):
                    with contextlib.suppress(nats.errors.Error):
                        await m.in_progress()
            want = self.batch - len(msgs) - len(more)
            try:
                more += await unless_stopped(puller.fetch(want, timeout=min(left, self.ack_wait_s / 2)), stop)
            except (Stopped, nats.errors.Error):
                break  # what we have is handled now; the loop deals with the connection or the stop
        return more

    def _delivered_in_order(self, msgs: list[Msg]) -> list[Msg] | None:
        """The batch, unless a delivery before it was lost (then None: the consumer must start
        again from its ack floor, or the lost ones would come back after newer ones were handled).
        A delivery of the consumer's previous making, still on its way, is dropped."""
        out = []
        for m in msgs:
            delivery = _sequences(m.reply)[1]
            if delivery > self._next_delivery:
                lost = f"{self._next_delivery} to {delivery - 1}"
                log.warning("%s: deliveries %s were lost; starting again from the ack floor", self.stage, lost)
                return None
            if delivery == self._next_delivery:
                out.append(m)
                self._next_delivery += 1
        return out

    async def _bind(self, stop: asyncio.Event, *, restart: bool = False) -> None:
        """Create the durable consumer unless it exists (a changed config is not applied to an existing one).

        In order, a consumer with deliveries not acknowledged (left by a process that died, or
        lost on the way; ``restart``) is made again from its ack floor: JetStream would deliver
        newer messages before it delivers those again, after their ack wait."""
        # Explicit acks, one per message. Not AckPolicy.ALL: acking message N would also acknowledge
        # earlier ones delivered to a process that died before handling them (they would never be
        # redelivered); the SIGKILL exactly-once test caught exactly that.
        start = self.start_seq  # where it starts if made now: after a delete, the old one's floor
        delays = Backoff(first=0.5, cap=5.0)
        while True:
            try:
                try:
                    info = await self.js.consumer_info(self.stream, self.durable)
                except nats.js.errors.NotFoundError:
                    info = await self.js.add_consumer(self.stream, self._config(start))
                if self.in_order is not None and (restart or info.num_ack_pending):
                    floor = info.ack_floor.stream_seq if info.ack_floor else 0
                    start = floor + 1 if floor else info.config.opt_start_seq
                    await self.js.delete_consumer(self.stream, self.durable)
                    info = await self.js.add_consumer(self.stream, self._config(start))
                    restart = False
                self._next_delivery = (info.delivered.consumer_seq if info.delivered else 0) + 1
                return
            except (TimeoutError, nats.errors.Error) as e:
                if stop.is_set():
                    raise
                log.warning(
                    "%s: cannot bind consumer %s (%s); retrying in %.1fs", self.stage, self.durable, e, delays.delay
                )
                await delays.wait()

    def _config(self, start_seq: int | None) -> ConsumerConfig:
        return ConsumerConfig(
            durable_name=self.durable,
            filter_subject=self.filter_subject,
            ack_policy=AckPolicy.EXPLICIT,
            ack_wait=self.ack_wait_s,
            max_ack_pending=self.batch * 4,
            deliver_policy=DeliverPolicy.ALL if start_seq is None else DeliverPolicy.BY_START_SEQUENCE,
            opt_start_seq=start_seq,
        )

    def _decode(self, m: Msg) -> T | _Refused:
        """The message's item, or why it cannot be used (not a coroutine: this runs for every message)."""
        version = (m.headers or {}).get(SCHEMA_HEADER, _VERSION)
        if version != _VERSION:
            return _Refused(f"unknown schema version {version!r} (this consumer reads {SCHEMA_VERSION})")
        try:
            item = self.decoder.decode(m.data)
        except (msgspec.DecodeError, msgspec.ValidationError) as e:
            return _Refused(f"undecodable: {e}")
        # Permissions let an agent publish only under its own node's subjects; a payload that names
        # another node would still speak for it. The subject is what the server vouched for.
        node = getattr(item, "node", None)
        if node is None or subjects.token(node) == subjects.node_token_of(m.subject):
            return item
        return _Refused(f"the message names node {node!r} but came on {m.subject}: not trusted")

    async def dead_letter(self, m: Msg, reason: str) -> None:
        self.dead_lettered += 1
        self.metrics.dead_letters.labels(self.stage).inc()
        seq = m.metadata.sequence.stream if m.reply else 0
        # The message's place in its stream makes the letter: a redelivered message dead-lettered again
        # is the same letter (same id and time), which JetStream and the sink store once.
        at = int(m.metadata.timestamp.timestamp() * 1e9) if m.reply and m.metadata.timestamp else now_ns()
        letter = DeadLetter(
            id=derived_id(at, self.stage, self.stream, seq),
            time=at,
            stage=self.stage,
            subject=m.subject,
            reason=reason,
            headers={k: str(v) for k, v in (m.headers or {}).items()},
            data=m.data[: 256 * 1024],
        )
        log.warning("%s: dead-lettered a message on %s: %s", self.stage, m.subject, reason)
        subject = subjects.dlq_subject(subjects.node_token_of(m.subject), self.stage)
        delays = Backoff(first=0.5, cap=5.0)
        while True:
            try:
                await publish_batch(
                    self.js, [(subject, f"{self.stage}:{self.stream}:{seq}", encode(letter))], metrics=self.metrics
                )
                return
            except (TimeoutError, nats.errors.Error) as e:
                log.warning("%s: dead-letter publish failed (%s); retrying in %.1fs", self.stage, e, delays.delay)
                await delays.wait()

    async def _handle_until_done(self, good: list[tuple[Msg, T]], msgs: list[Msg], stop: asyncio.Event) -> bool:
        """Run the stage's effect on the batch until it is done; False when stopped first."""
        return await self._settle(good, msgs, stop, tries_before_split=self.poison_tries)

    async def _settle(
        self, part: list[tuple[Msg, T]], msgs: list[Msg], stop: asyncio.Event, *, tries_before_split: int
    ) -> bool:
        """Handle ``part``, retrying with back-off through an outage. After ``tries_before_split`` other
        failures it is split in halves, handled in order (the rules depend on it), each split again on its
        first failure; a message that fails alone ``poison_tries`` times is dead-lettered with the error."""
        delays, failed = Backoff(first=0.2, cap=10.0), 0
        while True:
            error = await self._attempt(part)
            if error is None:
                return True
            self.metrics.retries.labels(self.stage).inc()
            away = self.outage(error)
            if away:
                failed = 0  # not the messages' fault: hold them all, for as long as it takes
            else:
                failed += 1
                if len(part) > 1 and failed >= tries_before_split:
                    half = len(part) // 2
                    first = await self._settle(part[:half], msgs, stop, tries_before_split=1)
                    return first and await self._settle(part[half:], msgs, stop, tries_before_split=1)
                if len(part) == 1 and failed >= self.poison_tries:
                    reason = f"{self.stage} failed on this message alone {failed} times: {_one_line(error)}"
                    await self.dead_letter(part[0][0], reason)
                    return True
            # Said for the batch; the search for the poison in it is quiet until the dead letter says what it found.
            level = logging.WARNING if away or tries_before_split > 1 else logging.DEBUG
            why = _one_line(error)
            log.log(
                level,
                "%s: handling %d messages failed (%s); retrying in %.1fs",
                self.stage,
                len(part),
                why,
                delays.delay,
            )
            # Keep the messages ours while we wait, so JetStream does not hand them to another worker.
            for m in msgs:
                with contextlib.suppress(nats.errors.Error):
                    await m.in_progress()
            if await delays.wait(stop):
                return False

    async def _attempt(self, part: list[tuple[Msg, T]]) -> Exception | None:
        items = [item for _, item in part]
        try:
            with self.metrics.batch_seconds.labels(self.stage).time():
                if self.in_order is None:
                    await self.handle(items)
                else:
                    await self.in_order(items, [_sequences(m.reply)[0] for m, _ in part])
        except Exception as e:
            return e
        self.processed += len(items)
        return None


def _one_line(error: BaseException) -> str:
    return " ".join(f"{type(error).__name__}: {error}".split())[:500]


def _sequences(reply: str) -> tuple[int, int]:
    """(stream, consumer) sequence of a delivered message, from its ack subject: ``$JS.ACK.<stream>.
    <consumer>.<delivered>.<sseq>.<dseq>.…``, or with ``<domain>.<account hash>`` after ``ACK``."""
    t = reply.split(".")
    i = 5 if len(t) == 9 else 7
    return int(t[i]), int(t[i + 1])


async def _ack(m: Msg) -> None:
    try:
        await m.ack()
    except nats.errors.Error as e:
        # The message will be redelivered; every stage is idempotent by id.
        log.debug("ack failed: %s", e)
