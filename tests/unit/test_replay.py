"""Replay: the rules over stored events beside what was published, differences first."""

from __future__ import annotations

from gpuhealth.events import KernelEvent
from rules.catalog import load
from rules.replay import Replay

XID = "accelerator-nvidia-error-xid"


def xid(i: int, node: str, code: int, pci: str) -> KernelEvent:
    return KernelEvent(id=f"x{i}", time=i * 10**9, cluster="c", node=node, boot_id="b1", source="kmsg",
                       component=XID, kind="xid", xid=code, pci_bus_id=pci, message="m")  # fmt: skip


def test_replay_sets_what_these_rules_say_beside_what_was_said_and_puts_differences_first() -> None:
    replay = Replay(load())
    replay.feed([xid(1, "n2", 79, "0000:04:00.0"), xid(2, "n1", 79, "0000:04:00.0")])
    # A second page: the nodes' states carry over (n2's second Xid 79 changes nothing).
    replay.feed([xid(3, "n1", 81, "0000:04:00.0"), xid(4, "n1", 45, "0000:05:00.0"), xid(5, "n2", 79, "0000:04:00.0")])
    replay.published(("n1", XID, "0000:04:00.0"), "Unhealthy", "Xid 79: GPU has fallen off the bus", 1)
    replay.published(("n2", XID, "0000:04:00.0"), "Unhealthy", "Xid 79: GPU has fallen off the bus", 1)
    replay.published(("n0", XID, "0000:09:00.0"), "Degraded", "said before the window", 3)

    rows = [(r.node, r.entity, r.differs, r.published.health, r.published.changes, r.replayed.health,
             r.replayed.changes, r.replayed.reason) for r in replay.result()]  # fmt: skip
    assert rows == [
        ("n0", "0000:09:00.0", True, "Degraded", 3, "-", 0, ""),
        ("n1", "0000:04:00.0", True, "Unhealthy", 1, "Unhealthy", 2, "Xid 81: VGA Subsystem Error"),
        ("n2", "0000:04:00.0", False, "Unhealthy", 1, "Unhealthy", 1, "Xid 79: GPU has fallen off the bus"),
    ]
    assert replay.events == 5
    assert sorted(replay.nodes) == ["n1", "n2"]
