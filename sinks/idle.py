"""A query's engine threads in the idle scheduling class, on half the cores, while they work for it.

The engine renices a query's threads to 19 (os_thread_priority, sinks/reads.py) and sets them back to 0
when they leave the query for its thread pool, which inserts use too. Under Linux's EEVDF scheduler a thread
waking on a core that a nice-19 thread holds may still wait for that thread's slice; one in SCHED_IDLE is
preempted at once. Ingestion is a chain of such wake-ups (event loop, writer thread, engine threads, NATS),
so on 2 cores it kept 0.85-0.88 of its rate alone with the query at nice 19 and 0.90-0.92 with it idle (two
alternated A/B runs of bench/query_isolation.py's rounds on a quiet machine: 0.85 vs 0.90, 0.88 vs 0.92). The engine
has no setting for the class, so this follows its renice while queries run: a thread at nice 19 becomes
SCHED_IDLE, and SCHED_OTHER again once the engine has set it back to 0. Both need CAP_SYS_NICE
(gpuctl/privsep.py keeps it for the sink); without it the engine renices nothing and there is nothing to follow.

The same threads keep to the last half of the cores. max_threads does not bound them: the engine ran the
bench's cross join on two busy threads with it at 1, one on each of 2 cores, so that every step of ingestion
(about one core's worth alone) woke on a core the query held and ran on caches it had just filled.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterable, Iterator

log = logging.getLogger("gpuhealth.sink")

QUERY_NICE = 19  # what sinks/reads.py asks the engine for; nothing else in the sink runs at it
PERIOD_S = 0.1  # a sweep reads one small file per thread: about 1 ms of CPU for a sink's threads


def _sched(tid: int) -> tuple[int, int] | None:
    """A thread's nice and scheduling policy (proc(5): fields 19 and 41), None once it has exited."""
    try:
        with open(f"/proc/self/task/{tid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return int(fields[16]), int(fields[38])


def _pin(tid: int, cpus: Iterable[int]) -> None:
    with contextlib.suppress(ProcessLookupError):  # exited since it was read
        os.sched_setaffinity(tid, cpus)


class IdleQueries:
    """`with IDLE.during():` around a query; one daemon thread sweeps the process's threads while any runs."""

    def __init__(self, period_s: float = PERIOD_S) -> None:
        self.period_s = period_s
        self._cv = threading.Condition()
        self._running = 0
        self._idled: set[int] = set()  # only the sweeping thread changes it
        self._thread: threading.Thread | None = None
        # The cores a query's threads may run on: the last half of the process's, as many as
        # sinks/reads.py's max_threads. The engine runs a query on more threads than that (a cross join on
        # two, whatever max_threads says), and on 2 cores those two left ingestion no core of its own.
        self.all_cpus = sorted(os.sched_getaffinity(0))
        self.query_cpus = set(self.all_cpus[-max(1, len(self.all_cpus) // 2) :])
        # A sink started at nice 19 as a whole has no query threads to tell apart from the writer's.
        self.enabled = hasattr(os, "SCHED_IDLE") and os.getpriority(os.PRIO_PROCESS, os.getpid()) < QUERY_NICE

    @contextlib.contextmanager
    def during(self) -> Iterator[None]:
        with self._cv:
            self._running += 1
            if self.enabled and self._thread is None:
                self._thread = threading.Thread(target=self._sweeping, name="query-idle", daemon=True)
                self._thread.start()
            self._cv.notify()
        try:
            yield
        finally:
            with self._cv:
                self._running -= 1

    def _sweeping(self) -> None:
        while self.enabled:
            with self._cv:  # asleep while no query runs and none of its threads is still idle
                self._cv.wait_for(lambda: self._running > 0 or bool(self._idled))
                querying = self._running > 0
            try:
                self.sweep(querying)
            except PermissionError as e:  # no CAP_SYS_NICE after all: every thread stays as the engine set it
                log.warning("queries keep the engine's priority only: %s", e)
                self.enabled = False
            threading.Event().wait(self.period_s)

    def sweep(self, querying: bool) -> None:
        """One pass: idle the query threads the engine reniced, give back the class of those it set back."""
        for name in os.listdir("/proc/self/task"):
            tid = int(name)
            now = _sched(tid)
            if now is None:
                self._idled.discard(tid)
            elif tid in self._idled and (now[0] != QUERY_NICE or not querying):
                os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
                _pin(tid, self.all_cpus)
                self._idled.discard(tid)
            elif querying and now[0] == QUERY_NICE and now[1] != os.SCHED_IDLE:
                _pin(tid, self.query_cpus)  # first: a thread in the class is always one of the query's cores
                os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))
                self._idled.add(tid)
        self._idled &= {int(n) for n in os.listdir("/proc/self/task")}  # threads gone between the two reads


IDLE = IdleQueries()  # one per process: the threads it sweeps are the process's
