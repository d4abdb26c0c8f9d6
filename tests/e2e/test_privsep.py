"""gpuctl up as root runs the rules service and the sink as its service user: each in a process of its own,
with that user's uid and gid and no other group, holding the embedded store that up no longer holds; restarted
when killed, gone with up. ``nobody`` (65534, group ``nogroup``) stands in for ``gpuhealth``: tests cannot make
users. Without a service user, up runs both inside itself as root, as before, and says so once."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from gpuhealth import client
from gpuhealth.errors import NotRunningError
from tests.e2e.conftest import GPUCTL, Up, gpuctl, gpuctl_json, reachable_dir, running, start_up, wait_for

NOBODY = 65534
AS_NOBODY = ("--service-user", "nobody")
AS_ROOT_WARNING = "the rules service and the sink run as root"


def stages(up: Up) -> dict[str, psutil.Process]:
    """up's children running ``gpuctl serve rules|sink``, by stage."""
    found = {}
    for p in psutil.Process(up.proc.pid).children():
        argv = p.cmdline()
        if argv[3:4] == ["serve"]:
            found[argv[4]] = p
    return found


def status(pid: int) -> dict[str, str]:
    """The fields of /proc/<pid>/status: what the kernel says this process is."""
    text = Path(f"/proc/{pid}/status").read_text()
    return {k: v.strip() for k, v in (line.split(":", 1) for line in text.splitlines())}


def open_under(pid: int, directory: Path) -> list[str]:
    fds = Path(f"/proc/{pid}/fd")
    links = [os.readlink(fd) for fd in fds.iterdir() if fd.is_symlink()]
    return [link for link in links if link.startswith(f"{directory}/") or link == str(directory)]


def read_as(uid: int, gid: int, path: Path) -> subprocess.CompletedProcess[str]:
    """``cat path`` by a process with this uid and gid and no supplementary group: what the kernel lets it read."""
    argv = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "cat", str(path)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=30)


def xid_events(up: Up) -> tuple[int, int]:
    """Stored Xid events: rows and distinct ids (a duplicate would tell them apart); none while no sink answers."""

    async def q() -> tuple[int, int]:
        nc = await up.connect()
        try:
            _, rows = await client.sql(nc, "SELECT count(), uniqExact(id) FROM gpuhealth.events WHERE kind = 'xid'")
        except NotRunningError:
            return 0, 0
        finally:
            await nc.close()
        return int(rows[0][0]), int(rows[0][1])

    return asyncio.run(q())


def inject(up: Up, bus: int) -> None:
    r = gpuctl("inject-fault", "--xid", "79", "--pci", f"0000:{bus:02x}:00.0", "--kmsg-path", str(up.kmsg))
    assert r.returncode == 0, r.stderr


@pytest.fixture(scope="module")
def dropped() -> Iterator[Up]:
    with reachable_dir() as base, running(base, *AS_NOBODY) as up:
        yield up


def test_the_rules_and_the_sink_run_as_the_service_user_and_up_holds_no_store(dropped: Up) -> None:
    procs = stages(dropped)
    assert sorted(procs) == ["rules", "sink"]
    for p in procs.values():
        st = status(p.pid)
        assert (st["Uid"].split(), st["Gid"].split(), st["Groups"]) == (["65534"] * 4, ["65534"] * 4, ""), p
    store = dropped.data_dir / "clickhouse"
    assert (store.stat().st_uid, store.stat().st_gid) == (NOBODY, NOBODY)
    assert open_under(procs["sink"].pid, store), "the sink holds the embedded store"
    assert open_under(dropped.proc.pid, store) == []
    assert "_chdb" not in Path(f"/proc/{dropped.proc.pid}/maps").read_text()  # nor the engine at all
    assert status(dropped.proc.pid)["Uid"].split() == ["0"] * 4  # up itself stays root, for its agent
    operator = read_as(NOBODY, NOBODY, dropped.data_dir / "secrets" / "operator.password")
    assert operator.returncode != 0 and "Permission denied" in operator.stderr


def test_as_the_sinks_uid_a_root_only_file_is_unreadable(dropped: Up, tmp_path: Path) -> None:
    st = status(stages(dropped)["sink"].pid)
    uid, gid = int(st["Uid"].split()[0]), int(st["Gid"].split()[0])
    base = dropped.data_dir.parent
    root_only = base / "root-only"
    root_only.write_text("root's\n")
    root_only.chmod(0o600)
    own = base / "its-own"
    own.write_text("its own\n")
    os.chown(own, uid, gid)
    own.chmod(0o600)
    # What root's sink could read (every file on the machine), the dropped one cannot; its own file it can.
    denied = read_as(uid, gid, root_only)
    assert (denied.returncode, denied.stdout) == (1, "") and "Permission denied" in denied.stderr
    assert read_as(uid, gid, own).stdout == "its own\n"


def test_an_injected_fault_becomes_a_state_and_is_stored_under_the_service_user(dropped: Up) -> None:
    data = str(dropped.data_dir)
    inject(dropped, 0x04)
    wait_for(lambda: gpuctl("status", "--data-dir", data).returncode == 2, timeout=20)
    _, st = gpuctl_json("status", "--data-dir", data)
    assert isinstance(st, dict)
    assert [(s["component"], s["entity"]) for s in st["states"] if s["health"] == "Unhealthy"] == [
        ("accelerator-nvidia-error-xid", "0000:04:00.0")
    ]
    wait_for(lambda: xid_events(dropped) == (1, 1), timeout=20)
    code, rows = gpuctl_json("events", "--since", "1h", "--data-dir", data)
    assert code == 0 and isinstance(rows, list)
    assert [(r["xid"], r["pci_bus_id"]) for r in rows if r["kind"] == "xid"] == [(79, "0000:04:00.0")]


def test_a_killed_sink_is_restarted_and_loses_nothing_and_up_killed_takes_its_children(reachable: Path) -> None:
    kmsg = reachable / "kmsg"
    kmsg.touch()
    up = start_up(reachable / "data", kmsg, *AS_NOBODY)
    try:
        inject(up, 0x01)
        wait_for(lambda: xid_events(up) == (1, 1), timeout=20)
        sink = stages(up)["sink"]
        sink.send_signal(signal.SIGKILL)
        for bus in (0x02, 0x03):  # while it is down, or as it comes back
            inject(up, bus)
        wait_for(lambda: "sink exited with -9; restarting it" in up.log.read_text(), timeout=30)
        wait_for(lambda: xid_events(up)[0] >= 3, timeout=30)
        assert xid_events(up) == (3, 3)
        again = stages(up)["sink"]
        assert again.pid != sink.pid and status(again.pid)["Uid"].split() == ["65534"] * 4
        assert up.log.read_text().count("restarting it") == 1
        children = psutil.Process(up.proc.pid).children()
        up.proc.kill()  # up alone: the kernel must end its children (the drop had cleared PR_SET_PDEATHSIG)
        up.proc.wait(timeout=30)
        _, alive = psutil.wait_procs(children, timeout=30)
        assert alive == []
    finally:
        up.stop()


def test_a_stage_that_cannot_start_fails_up_with_its_reason_in_one_line(tmp_path: Path) -> None:
    """pytest's own tmp dir is root's 0700: nobody cannot reach a store inside it."""
    kmsg = tmp_path / "kmsg"
    kmsg.touch()
    with pytest.raises(AssertionError, match="exited with 70") as failed:  # gpuhealth failed (errors.py)
        start_up(tmp_path / "data", kmsg, *AS_NOBODY)
    last = str(failed.value).strip().splitlines()[-1]
    assert last.startswith("gpuctl: the sink could not start: ") and "Permission denied" in last, last


def test_without_a_service_user_both_run_inside_up_as_before_and_it_says_so_once(tmp_path: Path) -> None:
    with running(tmp_path, "--service-user", "no-such-user") as up:
        assert stages(up) == {}
        warnings = [line for line in up.log.read_text().splitlines() if AS_ROOT_WARNING in line]
        assert len(warnings) == 1 and "no user 'no-such-user' (create it: useradd" in warnings[0]
        inject(up, 0x04)
        wait_for(lambda: xid_events(up) == (1, 1), timeout=20)


def test_a_store_an_older_run_left_to_root_is_given_to_the_service_user_and_kept(reachable: Path) -> None:
    kmsg = reachable / "kmsg"
    kmsg.touch()
    data = reachable / "data"
    up = start_up(data, kmsg, "--service-user", "root")  # as before: the sink inside up, its files root's
    try:
        assert "run as root, inside up: --service-user root" in up.log.read_text()
        inject(up, 0x01)
        wait_for(lambda: xid_events(up) == (1, 1), timeout=20)
    finally:
        assert up.stop() == 0
    assert (data / "clickhouse").stat().st_uid == 0
    up = start_up(data, kmsg, *AS_NOBODY)
    try:
        owners = {p.lstat().st_uid for p in [data / "clickhouse", *(data / "clickhouse").rglob("*")]}
        assert owners == {NOBODY}
        inject(up, 0x02)
        wait_for(lambda: xid_events(up) == (2, 2), timeout=20)
        children = psutil.Process(up.proc.pid).children()
        up.proc.send_signal(signal.SIGTERM)  # up alone, as systemd stops it: it stops its children, which drain
        assert up.proc.wait(timeout=60) == 0
        _, alive = psutil.wait_procs(children, timeout=30)
        assert alive == []
        log = up.log.read_text()
        assert "gpuhealth stopped" in log and "unexpected error" not in log and "restarting" not in log
    finally:
        up.stop()


def nice_of(pid: int, tid: int) -> int | None:
    """A thread's nice value (field 19 of /proc/<pid>/task/<tid>/stat), None once it is gone."""
    try:
        return int(Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()[16])
    except OSError:
        return None


def test_a_dropped_sink_still_renices_its_queries_and_sets_them_back(dropped: Up) -> None:
    """The sink keeps CAP_SYS_NICE alone: without it chDB runs a query at ingestion's priority (the heaviest query
    took ingestion to 0.36-0.46 of its rate alone on 2 cores, against 0.8-1.0 reniced)."""
    sink = stages(dropped)["sink"]
    assert int(status(sink.pid)["CapEff"], 16) == 1 << 23  # CAP_SYS_NICE, and nothing else
    heavy = subprocess.Popen(
        [GPUCTL, "sql", "SELECT count() FROM numbers(20000) AS a, numbers(20000) AS b, numbers(200) AS c",
         "--data-dir", str(dropped.data_dir)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    reniced: set[int] = set()
    try:
        for _ in range(200):
            for task in Path(f"/proc/{sink.pid}/task").iterdir():
                with contextlib.suppress(OSError):
                    if nice_of(sink.pid, int(task.name)) == 19:
                        reniced.add(int(task.name))
            if reniced:
                break
            time.sleep(0.05)
    finally:
        heavy.kill()
        heavy.wait(timeout=30)
    assert reniced, "no thread of the sink ran at nice 19 during the query"
    wait_for(lambda: all(nice_of(sink.pid, t) in (0, None) for t in reniced), timeout=150)  # the query's own limit
    assert sink.is_running() and stages(dropped)["sink"].pid == sink.pid  # set back, not aborted
