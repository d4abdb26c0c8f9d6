"""What the sysfs and host pollers share: counter deltas, conditions, saved state, the loop.

A poll is a plain function over files that returns facts; this module turns
successive polls into events and keeps the agent honest across restarts:

- counters become increases: a value lower than the last one is a reset (the
  device was reset or the driver reloaded), and the new value is what
  accumulated since; at the first read of a boot the value itself is the
  increase, so a fatal count that was there before the agent started is news;
- conditions (a link's width, a port's state, a service) are published when
  they change, and restated every ``restate_s`` while they are not ok, so a
  rule such as "port down for 4 minutes" sees time pass on the event stream
  without a clock of its own;
- the last values and the events not yet acknowledged are saved in the data
  dir before publishing (write-ahead), so an agent restarted within a boot
  neither re-reports old counts nor loses what it had read.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import msgspec

log = logging.getLogger("gpuhealth.poller")

# Held while NATS is away: at 10 s polls of a busy node, hours of events. Past it the
# oldest go (counted in the log): the agent must not grow without bound.
MAX_UNACKED = 20_000

Item = tuple[str, str, bytes]
Publish = Callable[[list[Item]], Awaitable[None]]


def read_text(path: str, limit: int = 65536) -> str | None:
    """A sysfs/procfs file's content, or None when it is missing or unreadable."""
    try:  # os.open/os.read: a third of the cost of open() on a hot path of hundreds of small files
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return os.read(fd, limit).decode("utf-8", "replace").strip()
    except OSError:
        return None
    finally:
        os.close(fd)


def read_int(path: str) -> int | None:
    text = read_text(path, 64)
    if text is None:
        return None
    try:
        value = int(text.split()[0], 0) if text else None
    except ValueError:
        return None
    return value if value is None or -(2**63) < value < 2**63 else None  # garbage, not a counter


class Condition(msgspec.Struct):
    state: str
    ok: bool
    since: int
    emitted: int


class Saved(msgspec.Struct, kw_only=True):
    """A poller's memory within one boot."""

    boot_id: str = ""
    counters: dict[str, int] = {}
    conditions: dict[str, Condition] = {}
    extra: dict[str, str] = {}
    unacked: list[tuple[str, str, bytes]] = []


class PollState:
    def __init__(self, path: Path | None, boot_id: str, *, restate_s: float = 60.0) -> None:
        self.path = path
        self.restate_ns = int(restate_s * 1e9)
        self.cannot_persist = False  # the last save failed (logged once)
        saved = self._load()
        if saved.boot_id != boot_id:  # a new boot: counters and conditions start again
            saved = Saved(boot_id=boot_id, extra=saved.extra, unacked=saved.unacked)
        self.saved = saved

    def _load(self) -> Saved:
        if self.path is None:
            return Saved()
        try:
            return msgspec.msgpack.decode(self.path.read_bytes(), type=Saved)
        except FileNotFoundError:
            return Saved()
        except (OSError, msgspec.DecodeError, msgspec.ValidationError) as e:
            log.warning("ignoring unreadable poller state %s: %s", self.path, e)
            return Saved()

    def save(self) -> None:
        if self.path is None:
            return
        try:
            tmp = self.path.with_suffix(".tmp")
            tmp.write_bytes(msgspec.msgpack.encode(self.saved))
            os.replace(tmp, self.path)
        except OSError as e:  # the data dir read-only or full: polls go on, what is unsent stays in memory
            if not self.cannot_persist:
                log.error("cannot save %s: %s; a restart may report counts and conditions again", self.path, e)
            self.cannot_persist = True
        else:
            self.cannot_persist = False

    def delta(self, key: str, value: int) -> int:
        """The increase of a counter since its last read (see the module docstring)."""
        last = self.saved.counters.get(key, 0)
        self.saved.counters[key] = value
        return value - last if value >= last else value

    def first_read(self, key: str) -> bool:
        return key not in self.saved.counters

    def condition(self, key: str, state: str, ok: bool, now: int, *, restate: bool = True) -> Condition | None:
        """The condition to publish now, or None: on change, and again every restate_s while not ok."""
        cur = self.saved.conditions.get(key)
        if cur is None or cur.state != state or cur.ok != ok:
            cur = self.saved.conditions[key] = Condition(state, ok, now, now)
            return cur
        if restate and not ok and now - cur.emitted >= self.restate_ns:
            cur.emitted = now
            return cur
        return None


async def run_loop(
    name: str,
    poll: Callable[[], list[Item]],
    state: PollState,
    publish: Publish,
    interval: float,
    stop: asyncio.Event,
    *,
    first_wait: bool = False,
) -> None:
    """Poll on a worker thread every ``interval`` and publish; a failed poll is logged and
    retried next time, a failed publish keeps its items (saved) for the next round."""
    if first_wait:  # the caller has just polled
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), interval)
    while not stop.is_set():
        started = time.monotonic()
        try:
            items = await asyncio.to_thread(poll)
        except Exception:
            log.exception("%s poll failed; trying again in %.0fs", name, interval)
            items = []
        await flush(state, publish, items)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), max(0.0, interval - (time.monotonic() - started)))


async def flush(state: PollState, publish: Publish, items: list[Item]) -> None:
    """Write ahead, publish, then forget: a crash in between republishes with the same ids."""
    state.saved.unacked.extend(items)
    if (over := len(state.saved.unacked) - MAX_UNACKED) > 0:
        log.error("NATS has been away too long: dropping the %d oldest unpublished items", over)
        del state.saved.unacked[:over]
    if not state.saved.unacked:
        state.save()
        return
    state.save()
    try:
        await publish(list(state.saved.unacked))
    except Exception as e:  # NATS away: the items stay saved and go out with the next poll
        log.warning("publish failed (%s); %d items kept for the next poll", e, len(state.saved.unacked))
        return
    state.saved.unacked.clear()
    state.save()
