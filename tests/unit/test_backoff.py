"""The one back-off every retry loop uses."""

from __future__ import annotations

import asyncio
import time

from gpuhealth.backoff import Backoff


async def test_the_delay_doubles_up_to_its_cap_and_a_success_starts_it_short_again() -> None:
    b = Backoff(first=0.001, cap=0.004)
    seen = []
    for _ in range(4):
        seen.append(b.delay)
        assert await b.wait() is False
    assert seen == [0.001, 0.002, 0.004, 0.004]
    b.reset()
    assert b.delay == 0.001


async def test_a_stop_ends_the_wait_at_once_and_says_so() -> None:
    b, stop = Backoff(first=30.0, cap=60.0), asyncio.Event()
    asyncio.get_running_loop().call_later(0.05, stop.set)
    start = time.monotonic()
    assert await b.wait(stop) is True
    assert time.monotonic() - start < 5


async def test_without_a_stop_the_wait_is_the_whole_delay() -> None:
    stop = asyncio.Event()
    start = time.monotonic()
    assert await Backoff(first=0.05).wait(stop) is False
    assert time.monotonic() - start >= 0.05
