"""One back-off for every retry loop: a delay that doubles from ``first`` up to ``cap``, waited out
unless the stage is told to stop first.

    delays = Backoff(first=0.2, cap=5.0)
    while not done:
        ...
        if await delays.wait(stop):   # True: stopped while waiting
            return
    delays.reset()                    # after a success: the next outage starts short again

The caps differ by what is waited for (a bus back in seconds, a crashed producer not restarted in a tight
loop), the shape does not.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field


@dataclass
class Backoff:
    first: float = 0.2
    cap: float = 5.0
    delay: float = field(init=False)  # what the next wait will be

    def __post_init__(self) -> None:
        self.delay = self.first

    def reset(self) -> None:
        self.delay = self.first

    async def wait(self, stop: asyncio.Event | None = None) -> bool:
        """Wait the current delay (or until ``stop``), then double it; True when stopped."""
        delay, self.delay = self.delay, min(self.delay * 2, self.cap)
        if stop is None:
            await asyncio.sleep(delay)
            return False
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), delay)
        return stop.is_set()
