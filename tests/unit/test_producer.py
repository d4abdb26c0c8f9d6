"""The agent's producers: each source behind one Protocol, its first items kept until the spool takes them."""

from __future__ import annotations

from pathlib import Path

from producers.poller import Item, PollState
from producers.producer import Polled

ITEM = ("gpuhealth.v1.event.n1.sysfs", "id-1", b"payload")


async def ignore(items: list[Item]) -> None:
    pass


async def test_a_pollers_first_items_stay_saved_until_the_spool_takes_them(tmp_path: Path) -> None:
    path = tmp_path / "sysfs.state"
    polled = Polled("sysfs", lambda: [ITEM], PollState(path, "boot-1"), ignore, interval=10.0)
    assert await polled.open() == [ITEM]
    assert PollState(path, "boot-1").saved.unacked == [ITEM]  # on disk before anything is sent
    await polled.after_first(taken=False)  # the spool was full: said again at the next start
    assert PollState(path, "boot-1").saved.unacked == [ITEM]
    await polled.after_first(taken=True)
    assert PollState(path, "boot-1").saved.unacked == []


async def test_what_an_earlier_run_left_unsent_is_sent_first(tmp_path: Path) -> None:
    path = tmp_path / "host.state"
    earlier = PollState(path, "boot-1")
    earlier.saved.unacked.append(("gpuhealth.v1.event.n1.host", "id-0", b"left"))
    earlier.save()
    polled = Polled("host", lambda: [ITEM], PollState(path, "boot-1"), ignore, interval=10.0)
    assert [i[1] for i in await polled.open()] == ["id-0", "id-1"]
