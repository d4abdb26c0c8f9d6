"""JetStream's pull and publish over core NATS, for the hot paths.

Pull: nats-py's ``PullSubscription.fetch`` takes every message off its queue with ``next_msg``, which
starts a task (named by a fresh uuid4) and a ``wait_for`` per message: about 20 µs of its 30 µs
per fetched and acked message on this project's bench. Here one subscription on an inbox of our
own collects a batch in its callback and one event wakes the fetcher per request: 11 µs.

The protocol is JetStream's own (``$JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>``): each request
asks for a batch and names its reply subject ``<inbox>.<n>``; the server delivers the messages
(each with its ack subject as reply) and, when it stops short of the batch, a status message on that
reply subject: 404 (nothing now, for ``no_wait``), 408 (the request expired), 409 (the consumer or
its leader went away), 503 (no consumer answered: it does not exist). A status for an older request
is ignored; a message that arrives after its request was given up on is kept for the next fetch,
so nothing delivered is dropped (it would be redelivered after ack_wait anyway).

Publish: nats-py's ``publish_async`` makes a random token, a future and a parsed ``PubAck`` object
per message (22 µs each here). ``publish_all`` sends a batch with one counter, one event and one
callback on a wildcard inbox that counts the server's acknowledgements: 10 µs.
"""

from __future__ import annotations

import asyncio
import itertools
import weakref
from collections.abc import Iterable

import msgspec
import nats.errors
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext


def connection_of(js: JetStreamContext) -> NATS:
    """The connection under a JetStream context (nats-py keeps it without an accessor)."""
    nc: NATS = js._nc
    return nc


class ConsumerGone(nats.errors.Error):
    """The durable consumer does not exist (503) or was deleted (409): bind it again."""


class _Next(msgspec.Struct, omit_defaults=True):
    batch: int
    expires: int = 0  # ns
    no_wait: bool = False


_NEXT = msgspec.json.Encoder()
# Sent by the server on the request's reply subject when it ends a request early.
_END = frozenset({"404", "408", "409"})


class Puller:
    """``fetch(n, timeout)``: what is there now (up to n) at once, else the first message to
    arrive within ``timeout`` with whatever came with it; an empty list when nothing did."""

    def __init__(self, nc: NATS, stream: str, durable: str) -> None:
        self.nc = nc
        self.api = f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{durable}"
        self.durable = durable
        self._inbox = ""
        self._sub: Subscription | None = None
        self._got: list[Msg] = []
        self._want = 0
        self._req = 0
        self._reply = ""
        self._done: asyncio.Event | None = None
        self._ended: list[tuple[str, str]] = []  # the status that ended the current request

    async def start(self) -> None:
        self._inbox = self.nc.new_inbox()  # under the connection's inbox prefix, which an agent's permissions name
        self._sub = await self.nc.subscribe(f"{self._inbox}.*", cb=self._on_msg)

    async def stop(self) -> None:
        if self._sub is not None:
            await self._sub.unsubscribe()
            self._sub = None

    def discard(self) -> None:
        """Drop what arrived and was not fetched (the consumer was made again: it comes again)."""
        self._got.clear()

    async def _on_msg(self, m: Msg) -> None:
        if not m.data and m.headers and "Status" in m.headers:
            if m.subject == self._reply and self._done is not None:
                self._ended.append((m.headers["Status"], m.headers.get("Description", "")))
                self._done.set()
            return  # 100 (heartbeat) or a status for a request already given up on
        self._got.append(m)
        if self._done is not None and len(self._got) >= self._want:
            self._done.set()

    async def fetch(self, n: int, timeout: float) -> list[Msg]:
        if self._sub is None:
            await self.start()
        if len(self._got) < n:
            await self._request(n, _Next(batch=n - len(self._got), no_wait=True), 2.0)
            if not self._got:
                # Nothing now: a long poll for the first message, then what came with it.
                await self._request(1, _Next(batch=1, expires=int(timeout * 1e9)), timeout + 2.0)
                if self._got and n > 1:
                    await self._request(n, _Next(batch=n - len(self._got), no_wait=True), 2.0)
        out, self._got = self._got[:n], self._got[n:]
        return out

    async def _request(self, want: int, body: _Next, wait: float) -> None:
        self._req += 1
        self._reply = f"{self._inbox}.{self._req}"
        self._want, self._ended = want, []
        self._done = done = asyncio.Event()
        try:
            await self.nc.publish(self.api, _NEXT.encode(body), reply=self._reply)
            # The server ends every request (batch, 404, 408); the guard is for a connection that went away.
            await asyncio.wait_for(done.wait(), wait)
        except TimeoutError:
            return
        finally:
            self._done = None
        if not self._ended:
            return
        code, text = self._ended[0][0], self._ended[0][1].strip()
        if code == "503" or (code == "409" and "Deleted" in text):
            raise ConsumerGone(f"consumer {self.durable}: {code} {text if code == '409' else 'no responders'}")
        if code not in _END:
            raise nats.errors.Error(f"consumer {self.durable}: unexpected status {code} {text}")


# ---------------------------------------------------------------- publish


class _PubAckError(msgspec.Struct):
    code: int = 0
    err_code: int = 0
    description: str = ""


class _PubAck(msgspec.Struct):
    error: _PubAckError | None = None
    stream: str = ""


_PUBACK = msgspec.json.Decoder(_PubAck)


class PublishError(nats.errors.Error):
    """JetStream refused a message (e.g. no stream for its subject, the stream full or read-only)."""


class StreamUnavailableError(PublishError):
    """No stream answered for the subject (503): none takes it yet, or its leader is being elected (a
    server of a cluster went away). The bus's state, not the message's: publishing again succeeds later."""


class StoreFullError(PublishError):
    """JetStream refused a message for want of room: its stream at its limit (with DiscardNew), or the
    server's or account's store full. Publishing again succeeds once there is room, with no restart."""

    def __init__(self, message: str, streams: list[str]) -> None:
        super().__init__(message)
        self.streams = streams  # the full ones, by name (empty when the server did not say)


# The server's codes for "no room": a stream's store refused it (10077: "maximum bytes exceeded",
# "maximum messages exceeded"), or the server or account is out of storage (10023, 10047).
_FULL_CODES = frozenset({10023, 10047})


def _is_full(error: _PubAckError) -> bool:
    return error.err_code in _FULL_CODES or (error.err_code == 10077 and "exceeded" in error.description)


class _Batch:
    __slots__ = ("done", "errors", "full", "left", "unavailable")

    def __init__(self, left: int) -> None:
        self.left = left
        self.errors: list[str] = []
        self.full: list[str] = []  # streams that refused for want of room
        self.unavailable = False  # some message found no stream to answer (503)
        self.done = asyncio.Event()


class _Acks:
    """One connection's acknowledgement inbox: reply ``<inbox>.<n>`` belongs to the batch at ``n``."""

    def __init__(self, nc: NATS) -> None:
        self.nc = nc
        self.inbox = ""
        self.ids = itertools.count(1)
        self.waiting: dict[str, _Batch] = {}
        self.ready: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.inbox = self.nc.new_inbox()
        await self.nc.subscribe(f"{self.inbox}.*", cb=self.on_ack)

    async def on_ack(self, m: Msg) -> None:
        batch = self.waiting.pop(m.subject, None)
        if batch is None:
            return  # a batch already given up on
        if not m.data:  # a status instead of an acknowledgement: 503 when no stream takes the subject
            status = (m.headers or {}).get("Status", "")
            batch.errors.append("no stream for the subject" if status == "503" else f"status {status}")
            batch.unavailable = batch.unavailable or status == "503"
        else:
            try:
                ack = _PUBACK.decode(m.data)
            except msgspec.DecodeError:
                ack = _PubAck(_PubAckError(description=f"unreadable acknowledgement {m.data[:80]!r}"))
            if (error := ack.error) is not None:
                stream = ack.stream
                where = f"stream {stream}: " if stream else ""
                batch.errors.append(f"{where}{error.description} ({error.err_code or error.code})")
                if _is_full(error) and stream not in batch.full:
                    batch.full.append(stream)
        batch.left -= 1
        if batch.left == 0:
            batch.done.set()


_ACKS: weakref.WeakKeyDictionary[NATS, _Acks] = weakref.WeakKeyDictionary()


async def _acks_of(nc: NATS) -> _Acks:
    acks = _ACKS.get(nc)
    if acks is None or acks.ready is None or _failed(acks.ready):  # a failed subscribe is tried again
        acks = _ACKS[nc] = _Acks(nc)
        acks.ready = asyncio.ensure_future(acks.start())
    await asyncio.shield(acks.ready)  # the first caller subscribes; concurrent first callers wait for it
    return acks


def _failed(task: asyncio.Task[None]) -> bool:
    return task.done() and (task.cancelled() or task.exception() is not None)


async def publish_all(nc: NATS, messages: Iterable[tuple[str, bytes, dict[str, str] | None]], timeout: float) -> None:
    """Publish (subject, payload, headers) messages to JetStream and return once every one is
    acknowledged. Raises TimeoutError when some were not within ``timeout``, PublishError (naming
    the first reason) when JetStream refused any; the caller retries the batch, and message ids make
    a repeat harmless."""
    acks = await _acks_of(nc)
    replies: list[str] = []
    batch = _Batch(0)
    try:
        for subject, payload, headers in messages:
            reply = f"{acks.inbox}.{next(acks.ids)}"
            acks.waiting[reply] = batch
            replies.append(reply)
            batch.left += 1
            await nc.publish(subject, payload, reply=reply, headers=headers)
        if batch.left:
            async with asyncio.timeout(timeout):
                await batch.done.wait()
    finally:
        for reply in replies:
            acks.waiting.pop(reply, None)
    if batch.errors:
        what = f"JetStream refused {len(batch.errors)} of {len(replies)} messages: {batch.errors[0]}"
        if batch.full:
            raise StoreFullError(f"{what}: no room for them", [s for s in batch.full if s])
        if batch.unavailable:
            raise StreamUnavailableError(what)
        raise PublishError(what)
