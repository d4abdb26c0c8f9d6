from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from producers.storm import StormCollapser


def test_first_is_immediate_repeats_are_one_summary_per_window() -> None:
    s: StormCollapser[str] = StormCollapser(window_s=1.0)
    assert s.offer("k", "a1", now=0.0) == [("a1", 1)]
    for seq in range(2, 1001):
        assert s.offer("k", f"a{seq}", now=0.5) == []
    assert s.held() == [("a1000", 999)]  # what a restart now publishes: the reader keeps it with its cursor
    assert s.expired(now=1.0) == [("a1000", 999)]
    assert s.held() == []
    # The storm goes on: the new window collapses from its first line.
    assert s.offer("k", "a1001", now=1.2) == []
    assert s.flush() == [("a1001", 1)]


def test_held_is_every_open_storm_with_lines_to_publish() -> None:
    s: StormCollapser[str] = StormCollapser(window_s=10.0)
    for line in ("a1", "b1", "b2", "c1", "a2", "a3"):
        s.offer(line[0], line, 0.0)
    assert s.held() == [("a3", 2), ("b2", 1)]  # c has published its only line


def test_different_devices_are_different_storms() -> None:
    s: StormCollapser[str] = StormCollapser()
    assert s.offer(("xid", 79, "0000:04:00.0"), "x", 0.0) == [("x", 1)]
    assert s.offer(("xid", 79, "0000:05:00.0"), "y", 0.0) == [("y", 1)]


def test_a_quiet_window_closes_without_an_event() -> None:
    s: StormCollapser[str] = StormCollapser(window_s=1.0)
    s.offer("k", "x", 0.0)
    assert s.expired(5.0) == []
    assert s.offer("k", "x2", 5.1) == [("x2", 1)]


def test_too_many_keys_close_the_oldest_instead_of_growing() -> None:
    s: StormCollapser[int] = StormCollapser(max_keys=3)
    for k in range(3):
        s.offer(k, k, 0.0)
        s.offer(k, k, 0.0)
    out = s.offer(99, 99, 0.0)
    assert out == [(0, 1), (99, 1)]
    assert len(s._windows) == 3


@given(st.lists(st.tuples(st.integers(0, 3), st.floats(0, 0.5)), max_size=300))
def test_counts_add_up_to_the_lines(lines: list[tuple[int, float]]) -> None:
    s: StormCollapser[int] = StormCollapser(window_s=1.0, max_keys=2)
    now, total = 0.0, 0
    for key, step in lines:
        now += step
        total += sum(n for _, n in s.offer(key, key, now))
    total += sum(n for _, n in s.flush())
    assert total == len(lines)
