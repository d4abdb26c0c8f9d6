"""The test Slurm itself: five nodes that drain and resume like a real cluster's."""

from __future__ import annotations

from tests.responder.slurm import NODES, LocalSlurm


def test_five_nodes_drain_and_resume(slurm: LocalSlurm) -> None:
    assert slurm.states() == dict.fromkeys(NODES, "idle")
    slurm.drain_by_hand("n3", "a person looked at it")
    assert slurm.states()["n3"] == "drained"
    assert slurm.reason("n3") == "a person looked at it"
    slurm.reset()
    assert slurm.states()["n3"] == "idle"
