"""Shared fixtures: a real nats-server per test, the real ClickHouse engine per session.

Nothing of NATS or ClickHouse is mocked. chDB allows one data path per process,
so in-process tests share one path and each gets its own database.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from nats.aio.client import Client as NATS

from gpuhealth import bus
from gpuhealth.config import NodeIdentity
from gpuhealth.natsd import EmbeddedNats
from producers import kernel
from rules import catalog, limits
from sinks.clickhouse import Store

REPO = Path(__file__).resolve().parents[1]
# `just mutate` runs the tests from a copy (mutants/) and names the shared tree where it really is.
SHARED = Path(os.environ.get("GPUHEALTH_SHARED") or REPO.parent / "shared")


def need(ok: bool, what: str) -> None:
    """A prerequisite of a test: missing on a workstation is a skip, missing in CI (CI=true) a failure,
    because a test that quietly skips in CI is a hole (a fresh clone without ../shared ran no corpus test)."""
    if ok:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{what} is missing in CI")
    pytest.skip(f"{what} is missing (under CI=true this fails)")


@pytest.fixture(autouse=True)
def _environment_as_it_was() -> Iterator[None]:
    """gpuctl's root callback puts --nats-user and friends in os.environ for the agent it may exec; run
    in-process by CliRunner, it would leave them to every later test of the session."""
    saved = dict(os.environ)
    yield
    if os.environ != saved:
        os.environ.clear()
        os.environ.update(saved)


# Under `just mutate` a test's first example may compile every cache anew (see below), or run a slowed
# mutant: a deadline there says nothing about the code.
settings.register_profile("mutmut", deadline=None)
if os.environ.get("MUTANT_UNDER_TEST"):
    settings.load_profile("mutmut")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under `just mutate`, a mutant's tests run fastest first, as timed in mutmut's stats run: mutmut hands
    them over sorted by name and stops at the first failure, so a rules mutant that a unit test kills in
    milliseconds first sat through every integration test (tests/integration sorts before tests/unit)."""
    if os.environ.get("MUTANT_UNDER_TEST") in (None, "", "stats"):
        return
    try:
        took = json.loads(Path("mutmut-stats.json").read_text())["duration_by_test"]
    except (OSError, ValueError, KeyError):
        return
    # unit tests first whatever their time: the stats time a test's call, not its fixtures (a nats-server, chDB)
    items.sort(key=lambda item: ("/unit/" not in item.nodeid, took.get(item.nodeid, float("inf"))))


_uncollected: list[str] = []  # test modules that failed to import


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:
        _uncollected.append(report.nodeid)


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> object:
    """Under `just mutate`, a mutant that breaks a test module's import (its catalog is loaded at import:
    ``CAT = load()``) leaves pytest unable to find the node ids mutmut named: a usage error (exit 4), which
    mutmut's harness raises on and files as "timeout". Tests failed: say so (exit 1, killed)."""
    try:
        return (yield)
    except pytest.UsageError:
        if os.environ.get("MUTANT_UNDER_TEST") in (None, "", "stats") or not _uncollected:
            raise
        raise session.Failed(f"cannot import {', '.join(_uncollected)}") from None


@pytest.fixture(autouse=True)
def _uncached_under_mutmut_stats() -> None:
    """`just mutate` runs a mutant against the tests that called its function when mutmut collected which
    test calls what: a cached result (the catalogs, the kernel patterns) is computed once, for one test,
    and the tests that read it from the cache would be left out. Under that collection only, start each
    test with those caches empty."""
    if os.environ.get("MUTANT_UNDER_TEST") != "stats":
        return
    # Every cache of those modules, found rather than named: a renamed one broke this collection unnoticed.
    for module in (catalog, limits, kernel):
        for cached in vars(module).values():
            if callable(getattr(cached, "cache_clear", None)):
                cached.cache_clear()


@pytest.fixture
async def nats_url(tmp_path: Path) -> AsyncIterator[str]:
    server = EmbeddedNats(tmp_path, auth=None)  # integration tests: a server that lets anyone in
    url = await server.start()
    try:
        yield url
    finally:
        await server.stop()


@pytest.fixture(scope="session")
def chdb_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("chdb") / "clickhouse"


@pytest.fixture
def store(chdb_path: Path) -> Iterator[Store]:
    s = Store(f"chdb://{chdb_path}", database=f"t_{uuid.uuid4().hex[:12]}")
    s.connect()
    try:
        yield s
    finally:
        s.client.command(f"DROP DATABASE IF EXISTS {s.database}")
        s.close()


@pytest.fixture
def identity() -> NodeIdentity:
    return NodeIdentity(
        cluster="test", node="node-1", machine_id="m" * 32, boot_id="boot-a", boot_time_ns=1_700_000_000_000_000_000
    )


@pytest.fixture
async def nc(nats_url: str) -> AsyncIterator[NATS]:
    """A client of the test's own nats-server, with gpuhealth's streams and buckets provisioned."""
    client = await bus.connect(nats_url, "test")
    await bus.provision(client.jetstream())
    try:
        yield client
    finally:
        await client.close()
