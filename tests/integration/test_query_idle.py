"""A query's engine threads are in the idle scheduling class while they work for it, and only then.

The class is what lets the writer's threads take a core the query holds (sinks/idle.py); a thread left in
it after its query would starve the inserts its pool runs next, so the test holds both sides."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from gpuhealth.errors import QueryError
from sinks.clickhouse import Store
from tests.conftest import need
from tests.integration.test_query_path import HEAVIEST


def idle_threads() -> dict[int, int]:
    """The process's threads in SCHED_IDLE, with their nice."""
    found = {}
    for name in os.listdir("/proc/self/task"):
        try:
            if os.sched_getscheduler(int(name)) == os.SCHED_IDLE:
                found[int(name)] = os.getpriority(os.PRIO_PROCESS, int(name))
        except OSError:  # exited meanwhile
            pass
    return found


def affinity(tid: int) -> set[int] | None:
    """A thread's cores, None once it has exited."""
    try:
        return os.sched_getaffinity(tid)
    except ProcessLookupError:
        return None


async def test_a_query_s_threads_are_idle_while_it_runs_and_the_writer_never(store: Store) -> None:
    need(os.geteuid() == 0, "root: the engine renices a query's threads only with CAP_SYS_NICE")
    assert idle_threads() == {}
    running = asyncio.create_task(store.reads.query(HEAVIEST, {}, 10, 4))
    seen: dict[int, int] = {}
    async with asyncio.timeout(3):
        while not seen:
            seen = idle_threads()
            await asyncio.sleep(0.02)
    assert set(seen.values()) == {19}  # the engine's reniced threads, nothing else
    writer = await store.run(threading.get_native_id)
    assert writer not in seen and os.sched_getscheduler(writer) == os.SCHED_OTHER
    with pytest.raises(QueryError, match="TIMEOUT_EXCEEDED"):
        await running
    deadline = time.monotonic() + 2
    while idle_threads() and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert idle_threads() == {}  # back in the pool, in the class inserts run in


async def test_a_query_s_threads_keep_to_the_last_half_of_the_cores(store: Store) -> None:
    """The engine ran the heaviest query on two busy threads with max_threads at 1: on 2 cores, both
    cores, and ingestion had none of its own."""
    need(os.geteuid() == 0, "root: the engine renices a query's threads only with CAP_SYS_NICE")
    cpus = sorted(os.sched_getaffinity(0))
    need(len(cpus) >= 2, "two cores: on one, a query and ingestion share it whatever is done")
    query_cpus = set(cpus[-(len(cpus) // 2) :])  # 2 cores: the second; 3: the third; 16: the last 8
    running = asyncio.create_task(store.reads.query(HEAVIEST, {}, 10, 3))
    pinned: dict[int, set[int]] = {}
    async with asyncio.timeout(2.5):
        while len(pinned) < 2:  # the reader's thread and the engine's threads working for it
            pinned |= {tid: os.sched_getaffinity(tid) for tid in idle_threads()}
            await asyncio.sleep(0.02)
    assert all(on == query_cpus for on in pinned.values()), pinned
    with pytest.raises(QueryError, match="TIMEOUT_EXCEEDED"):
        await running
    writer = await store.run(threading.get_native_id)
    assert os.sched_getaffinity(writer) == set(cpus)
    deadline = time.monotonic() + 2
    while any(affinity(tid) not in (None, set(cpus)) for tid in pinned) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert all(affinity(tid) in (None, set(cpus)) for tid in pinned)  # the pool's threads, every core again


def test_a_sink_started_at_nice_19_leaves_every_thread_as_it_is() -> None:
    """At nice 19 as a whole, its query threads look like all the others: none may be idled."""
    code = "from sinks.idle import IdleQueries; print(IdleQueries().enabled)"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    run = subprocess.run(["nice", "-n", "19", sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert run.stdout.split() == ["False"], run.stderr
