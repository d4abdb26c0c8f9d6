"""Storm collapsing: the same fault, repeated, becomes one event with a count.

A GPU in trouble can print the same Xid hundreds of thousands of times. The
first occurrence of a (kind, code, device) is published at once, so detection
is never delayed; repeats inside the window are counted, and when the window
ends one summary event carries the count (the window rolls on while the storm
lasts: one event per window). The counts of all events add up to the lines
read, and ``held`` says what the open windows would publish if the process
stopped now: the reader keeps that beside its cursor, so a restart publishes
it instead of reading (and counting) those lines again.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

R = TypeVar("R")  # what is collapsed (the record and its classification)


@dataclass(slots=True)
class _Window(Generic[R]):
    opened: float
    count: int = 0
    last: R | None = None


class StormCollapser(Generic[R]):
    def __init__(self, window_s: float = 1.0, max_keys: int = 10_000) -> None:
        self.window_s = window_s
        self.max_keys = max_keys
        self._windows: dict[Hashable, _Window[R]] = {}
        self.collapsed = 0  # lines folded into summaries

    def offer(self, key: Hashable, item: R, now: float) -> list[tuple[R, int]]:
        """One fault line: what to publish now, as (item, count)."""
        out = self.expired(now)
        w = self._windows.get(key)
        if w is None:
            if len(self._windows) >= self.max_keys:
                out += self._close(next(iter(self._windows)))
            self._windows[key] = _Window(opened=now)
            return [*out, (item, 1)]
        w.count += 1
        w.last = item
        self.collapsed += 1
        return out

    def expired(self, now: float) -> list[tuple[R, int]]:
        out: list[tuple[R, int]] = []
        for key in [k for k, w in self._windows.items() if now - w.opened >= self.window_s]:
            if self._windows[key].count:
                out += self._close(key)
                self._windows[key] = _Window(opened=now)  # the storm may go on: keep collapsing
            else:
                del self._windows[key]
        return out

    def flush(self) -> list[tuple[R, int]]:
        out: list[tuple[R, int]] = []
        for key in list(self._windows):
            out += self._close(key)
        return out

    def open_windows(self) -> bool:
        return bool(self._windows)

    def held(self) -> list[tuple[R, int]]:
        """What ``flush`` would publish now, the windows left open."""
        return [(w.last, w.count) for w in self._windows.values() if w.count and w.last is not None]

    def _close(self, key: Hashable) -> list[tuple[R, int]]:
        w = self._windows.pop(key)
        return [(w.last, w.count)] if w.count and w.last is not None else []
