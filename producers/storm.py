"""Storm collapsing: the same fault, repeated, becomes one event with a count.

A GPU in trouble can print the same Xid hundreds of thousands of times. The
first occurrence of a (kind, code, device) is published at once, so detection
is never delayed; repeats inside the window are counted, and when the window
ends one summary event carries the count (the window rolls on while the storm
lasts: one event per window). The counts of all events add up to the lines
read, and ``hold_from`` gives the position to resume after if the process
stopped now, so the reader's cursor never passes a line whose count is not
published.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

R = TypeVar("R")  # what is collapsed (the record and its classification)
P = TypeVar("P")  # a reader position


@dataclass(slots=True)
class _Window(Generic[R, P]):
    opened: float
    count: int = 0
    last: R | None = None
    held_order: int = 0  # when the first held line was read, to find the earliest
    resume: P | None = None  # where to resume to read the first held line again


class StormCollapser(Generic[R, P]):
    def __init__(self, window_s: float = 1.0, max_keys: int = 10_000) -> None:
        self.window_s = window_s
        self.max_keys = max_keys
        self._windows: dict[Hashable, _Window[R, P]] = {}
        self._order = 0
        self.collapsed = 0  # lines folded into summaries

    def offer(self, key: Hashable, item: R, now: float, resume: P | None) -> list[tuple[R, int]]:
        """One fault line, read after position ``resume``: what to publish now, as (item, count)."""
        out = self.expired(now)
        w = self._windows.get(key)
        if w is None:
            if len(self._windows) >= self.max_keys:
                out += self._close(next(iter(self._windows)))
            self._windows[key] = _Window(opened=now)
            return [*out, (item, 1)]
        if w.count == 0:
            self._order += 1
            w.held_order, w.resume = self._order, resume
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

    def holding(self) -> bool:
        return any(w.count for w in self._windows.values())

    def hold_from(self) -> P | None:
        """The position to resume after to read every line whose count is not published."""
        held = [w for w in self._windows.values() if w.count]
        return min(held, key=lambda w: w.held_order).resume if held else None

    def _close(self, key: Hashable) -> list[tuple[R, int]]:
        w = self._windows.pop(key)
        return [(w.last, w.count)] if w.count and w.last is not None else []
