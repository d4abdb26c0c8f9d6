"""The responder's fixtures: one real Slurm for the session, every node back in service for each test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import need
from tests.responder.slurm import LocalSlurm, available


@pytest.fixture(scope="session")
def slurm_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalSlurm]:
    need(available(), "Slurm (slurm-wlm and munge: deploy/test-deps.sh)")
    s = LocalSlurm(Path(tmp_path_factory.mktemp("slurm")))
    try:
        s.start()
        yield s
    finally:
        s.stop()


@pytest.fixture
def slurm(slurm_session: LocalSlurm) -> LocalSlurm:
    slurm_session.reset()
    return slurm_session
