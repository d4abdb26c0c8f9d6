"""The first slice, as an operator sees it."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import msgspec
import psutil
import pytest

from gpuhealth import client, subjects
from gpuhealth.config import read_run_info
from tests.e2e.conftest import GPUCTL, Up, gpuctl, gpuctl_json, start_up, wait_for


def test_injected_xid_79_makes_the_gpu_unhealthy_and_lands_in_clickhouse(up_stack: Up) -> None:
    code, status = gpuctl_json("status", "--data-dir", str(up_stack.data_dir))
    assert code == 0, status
    assert isinstance(status, dict) and set(status) == {"states", "gpus"}

    r = gpuctl("inject-fault", "--xid", "79", "--pci", "0000:04:00.0", "--kmsg-path", str(up_stack.kmsg))
    assert r.returncode == 0, r.stderr
    assert "NVRM: Xid (PCI:0000:04:00): 79" in up_stack.kmsg.read_text()

    def unhealthy() -> bool:
        return gpuctl("status", "--data-dir", str(up_stack.data_dir)).returncode == 2

    wait_for(unhealthy, timeout=20)
    code, status = gpuctl_json("status", "--data-dir", str(up_stack.data_dir))
    assert code == 2
    assert isinstance(status, dict)
    (gpu_state,) = [s for s in status["states"] if s["component"] == "accelerator-nvidia-error-xid"]
    assert gpu_state["pci_bus_id"] == "0000:04:00.0" and gpu_state["entity"] == "0000:04:00.0"
    assert gpu_state["health"] == "Unhealthy" and gpu_state["repair_actions"] == ["REBOOT_SYSTEM"]
    assert gpu_state["node"] == "e2e-node" and gpu_state["event_ids"]
    assert set(gpu_state) >= {
        "node",
        "component",
        "entity",
        "gpu_uuid",
        "pci_bus_id",
        "health",
        "reason",
        "repair_actions",
        "since",
        "event_ids",
    }

    def stored() -> list[dict[str, Any]]:
        code, rows = gpuctl_json("events", "--since", "1h", "--data-dir", str(up_stack.data_dir))
        assert code == 0
        assert isinstance(rows, list)
        return [r for r in rows if r["kind"] == "xid"]

    wait_for(lambda: stored(), timeout=20)
    (event,) = stored()
    assert (event["xid"], event["pci_bus_id"], event["node"]) == (79, "0000:04:00.0", "e2e-node")
    assert event["id"] in gpu_state["event_ids"]


def test_ctrl_c_drains_and_removes_the_run_file(tmp_path: Path) -> None:
    kmsg = tmp_path / "kmsg"
    kmsg.touch()
    up = start_up(tmp_path / "data", kmsg)
    assert up.stop() == 0
    assert read_run_info(tmp_path / "data") is None
    assert "gpuhealth stopped" in up.log.read_text()
    assert gpuctl("status", "--data-dir", str(tmp_path / "data")).returncode == 69


def test_status_exits_69_with_nothing_on_stdout_when_nothing_runs(tmp_path: Path) -> None:
    r = gpuctl("status", "--json", "--data-dir", str(tmp_path))
    assert r.returncode == 69 and r.stdout == "" and "no running gpuhealth" in r.stderr
    r = gpuctl("status", "--nats", "nats://127.0.0.1:1")
    assert r.returncode == 69 and r.stdout == ""


def test_no_kernel_log_still_starts_and_says_so(tmp_path: Path) -> None:
    up = start_up(tmp_path / "data", tmp_path / "no-such-dir" / "kmsg")  # a file in a dir up does not make
    try:
        assert "unavailable" in up.info.sources["kmsg"]
        wait_for(lambda: gpuctl("status", "--data-dir", str(up.data_dir)).returncode == 3, timeout=20)
        code, status = gpuctl_json("status", "--data-dir", str(up.data_dir))
        assert isinstance(status, dict)
        (kernel_log,) = [s for s in status["states"] if s["component"] == "kernel-log"]
        assert kernel_log["health"] == "Unknown" and "cannot read" in kernel_log["reason"]
    finally:
        up.stop()


def _count_xid_events(up: Up) -> tuple[int, int, int]:
    async def q() -> tuple[int, int, int]:
        nc = await up.connect()
        try:
            _, rows = await client.sql(
                nc, "SELECT count(), uniqExact(id), sum(count) FROM gpuhealth.events WHERE kind = 'xid'"
            )
        finally:
            await nc.close()
        return int(rows[0][0]), int(rows[0][1]), int(rows[0][2])

    return asyncio.run(q())


def test_sigkill_mid_stream_then_restart_stores_every_record_exactly_once(tmp_path: Path) -> None:
    kmsg, data = tmp_path / "kmsg", tmp_path / "data"
    kmsg.touch()
    total = 3000
    up = start_up(data, kmsg)
    written = threading.Event()

    def writer() -> None:
        with kmsg.open("a") as f:
            for seq in range(1, total + 1):
                # A device of its own per record: no storm collapsing, every record must be its own row.
                bus, dev = seq % 256, seq // 256
                f.write(f"3,{seq},{seq * 100},-;NVRM: Xid (PCI:0000:{bus:02x}:{dev:02x}): 79, GPU has fallen off\n")
                if seq % 100 == 0:
                    f.flush()
                    time.sleep(0.02)
        written.set()

    t = threading.Thread(target=writer)
    t.start()
    wait_for(lambda: _count_xid_events(up)[0] > 0, timeout=30, every=0.1)
    up.kill_group()  # gpuctl up, its agent and nats-server, mid-stream
    t.join()
    assert written.is_set()
    up = start_up(data, kmsg)
    try:
        wait_for(lambda: _count_xid_events(up)[0] >= total, timeout=90, every=0.5)
        time.sleep(1)  # anything duplicated would arrive now
        assert _count_xid_events(up) == (total, total, total)
    finally:
        up.stop()


def test_garbage_on_an_event_subject_is_dead_lettered_and_the_pipeline_keeps_going(up_stack: Up) -> None:
    async def publish_garbage() -> None:
        nc = await up_stack.connect("agent-e2e-node")  # a buggy agent, on its own subjects
        js = nc.jetstream()
        await js.publish(subjects.event_subject("e2e-node", "kmsg"), b"\x00garbage\xff", headers={"Nats-Msg-Id": "g"})
        await js.publish(subjects.event_subject("e2e-node", "kmsg"), msgspec.msgpack.encode({"type": "kernel"}))
        await nc.close()

    asyncio.run(publish_garbage())
    gpuctl("inject-fault", "--xid", "48", "--pci", "0000:05:00.0", "--kmsg-path", str(up_stack.kmsg))

    def dead_letters() -> list[list[Any]]:
        async def q() -> list[list[Any]]:
            nc = await up_stack.connect()
            try:
                _, rows = await client.sql(
                    nc, "SELECT stage, subject, reason FROM gpuhealth.dead_letters ORDER BY stage"
                )
            finally:
                await nc.close()
            return rows

        return asyncio.run(q())

    # Both consumers of the event stream (rules and sink) dead-letter both bad messages.
    wait_for(lambda: len(dead_letters()) >= 4, timeout=30)
    rows = dead_letters()
    assert sorted(r[0] for r in rows) == ["rules", "rules", "sink", "sink"]
    # The subject as stored: the event stream appends the node's partition token.
    assert all(r[1].startswith("gpuhealth.v1.event.e2e-node.kmsg.") and r[2].startswith("undecodable") for r in rows)
    # … and the real fault behind them still went through.
    wait_for(lambda: gpuctl("status", "--data-dir", str(up_stack.data_dir)).returncode == 2, timeout=20)
    assert os.path.exists(up_stack.data_dir / "run.json")


def test_simulated_8_gpu_node_and_an_nvml_xid_on_gpu_3(simulated_stack: Up) -> None:
    data = str(simulated_stack.data_dir)
    code, status = gpuctl_json("status", "--data-dir", data)
    assert code == 0 and isinstance(status, dict)
    gpus = status["gpus"]
    assert [g["index"] for g in gpus] == list(range(8))
    assert all(g["uuid"].startswith("GPU-") and g["serial"] and g["name"] and g["pci_bus_id"] for g in gpus)
    assert len({g["uuid"] for g in gpus}) == 8

    started = time.monotonic()
    r = gpuctl("inject-fault", "--nvml-xid", "48", "--gpu", "3", "--data-dir", data)
    assert r.returncode == 0, r.stderr
    wait_for(lambda: gpuctl("status", "--data-dir", data).returncode == 2, timeout=20, every=0.1)
    assert time.monotonic() - started < 10
    _, status = gpuctl_json("status", "--data-dir", data)
    assert isinstance(status, dict)
    unhealthy = [s for s in status["states"] if s["health"] != "Healthy"]
    assert [(s["gpu_uuid"], s["pci_bus_id"], s["repair_actions"]) for s in unhealthy] == [
        (gpus[3]["uuid"], gpus[3]["pci_bus_id"], ["REBOOT_SYSTEM"])
    ], "GPU 3 and only GPU 3"

    r = gpuctl("inject-fault", "--nvml-gpu-lost", "--gpu", "5", "--data-dir", data)
    assert r.returncode == 0, r.stderr

    def gpu5_lost() -> bool:
        _, st = gpuctl_json("status", "--data-dir", data)
        return isinstance(st, dict) and any(
            s["component"] == "accelerator-nvidia-gpu" and s["gpu_uuid"] == gpus[5]["uuid"] for s in st["states"]
        )

    wait_for(gpu5_lost, timeout=20)
    r = gpuctl("inject-fault", "--nvml-xid", "48", "--gpu", "9", "--data-dir", data)
    assert r.returncode == 68 and "no GPU 9" in r.stderr


def test_set_healthy_clears_a_hardware_state_and_is_recorded(up_stack: Up) -> None:
    data = str(up_stack.data_dir)
    assert (
        gpuctl("inject-fault", "--xid", "81", "--pci", "0000:07:00.0", "--kmsg-path", str(up_stack.kmsg)).returncode
        == 0
    )
    wait_for(lambda: gpuctl("status", "--data-dir", data).returncode == 2, timeout=20)
    _, status = gpuctl_json("status", "--data-dir", data)
    assert isinstance(status, dict)
    assert [s["repair_actions"] for s in status["states"] if s["health"] == "Unhealthy"] == [["HARDWARE_INSPECTION"]]
    r = gpuctl("set-healthy", "--component", "accelerator-nvidia-error-xid", "--entity", "0000:07:00.0",
               "--reason", "GPU replaced, RMA 1234", "--data-dir", data)  # fmt: skip
    assert r.returncode == 0, r.stderr
    wait_for(lambda: gpuctl("status", "--data-dir", data).returncode == 0, timeout=20)
    _, status = gpuctl_json("status", "--data-dir", data)
    assert isinstance(status, dict)
    (cleared,) = [s for s in status["states"] if s["component"] == "accelerator-nvidia-error-xid"]
    assert cleared["health"] == "Healthy" and "GPU replaced, RMA 1234" in cleared["reason"]

    def recorded() -> bool:
        _, rows = gpuctl_json("events", "--data-dir", data)
        return isinstance(rows, list) and any(r["kind"] == "set_healthy" and "RMA 1234" in r["message"] for r in rows)

    wait_for(recorded, timeout=20)
    r = gpuctl("set-healthy", "--component", "x", "--reason", " ", "--data-dir", data)
    assert r.returncode == 64 and "--reason" in r.stderr


def test_status_filters_and_watch_on_a_simulated_node(simulated_stack: Up) -> None:
    data = str(simulated_stack.data_dir)
    watcher = subprocess.Popen([GPUCTL, "watch", "--json", "--data-dir", data], stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(1.0)  # subscribed before the fault
        _, status = gpuctl_json("status", "--data-dir", data)
        assert isinstance(status, dict)
        gpu2 = status["gpus"][2]
        assert gpuctl("inject-fault", "--nvml-ecc-dbe", "--gpu", "2", "--data-dir", data).returncode == 0
        wait_for(lambda: gpuctl("status", "--data-dir", data).returncode == 2, timeout=20)

        for selector in ("2", gpu2["uuid"], gpu2["pci_bus_id"]):
            code, only = gpuctl_json("status", "--gpu", selector, "--data-dir", data)
            assert code == 2 and isinstance(only, dict)
            assert [(s["component"], s["gpu_uuid"]) for s in only["states"]] == [
                ("accelerator-nvidia-ecc", gpu2["uuid"])
            ]
            assert [g["index"] for g in only["gpus"]] == [2]
        assert gpuctl("status", "--gpu", "1", "--data-dir", data).returncode == 0
        assert gpuctl("status", "--component", "kernel-log", "--data-dir", data).returncode == 0
        # A filter that matches nothing is an error of its own (68), never a verdict: not 0, which reads Healthy.
        for flags, named in ((["--node", "elsewhere"], "no node 'elsewhere'"), (["--gpu", "99"], "no GPU '99'"),
                             (["--component", "nope"], "no state of component 'nope'")):  # fmt: skip
            r = gpuctl("status", *flags, "--json", "--data-dir", data)
            assert (r.returncode, r.stdout) == (68, ""), (flags, r.returncode, r.stdout[:200])
            assert r.stderr.startswith(f"gpuctl: {named}") and r.stderr.count("\n") == 1, r.stderr

        line = ""
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and "accelerator-nvidia-ecc" not in line:
            line = watcher.stdout.readline() if watcher.stdout else ""
        change = json.loads(line)
        assert (change["component"], change["health"], change["gpu_uuid"]) == (
            "accelerator-nvidia-ecc",
            "Unhealthy",
            gpu2["uuid"],
        )
    finally:
        watcher.send_signal(signal.SIGINT)
        assert watcher.wait(timeout=10) == 0
        if watcher.stdout:
            watcher.stdout.close()


def test_sql_answers_read_only_queries_and_inventory_is_stored(simulated_stack: Up) -> None:
    data = str(simulated_stack.data_dir)
    query = "SELECT count() AS gpus, uniqExact(gpu_uuid) AS uuids, any(model) AS model FROM gpuhealth.inventory"

    def stored() -> list[dict[str, Any]]:
        r = gpuctl("sql", query, "--json", "--data-dir", data)
        assert r.returncode == 0, r.stderr
        rows: list[dict[str, Any]] = json.loads(r.stdout)
        return rows

    wait_for(lambda: stored()[0]["gpus"] == 8, timeout=20)
    assert stored() == [{"gpus": 8, "uuids": 8, "model": "NVIDIA H100 80GB HBM3"}]
    # Metric batches are stored every 30 s at most (sinks/service.py METRICS_LINGER_S).
    metrics = "SELECT name, count() FROM gpuhealth.metrics GROUP BY name ORDER BY name LIMIT 3"
    wait_for(lambda: gpuctl("sql", metrics, "--data-dir", data).stdout.startswith("name"), timeout=60, every=2)
    r = gpuctl("sql", "DROP TABLE gpuhealth.events", "--data-dir", data)
    assert r.returncode == 65 and "refused: DROP is not a read" in r.stderr and "Traceback" not in r.stderr


def test_fleet_view_scores_nodes_and_gpus(simulated_stack: Up) -> None:
    data = str(simulated_stack.data_dir)
    code, view = gpuctl_json("fleet", "--data-dir", data)
    assert code == 0 and isinstance(view, dict)
    (node,) = view["nodes"]
    assert (node["node"], node["score"], node["band"], len(node["gpus"])) == ("e2e-node", 100, "Healthy", 8)
    assert gpuctl("inject-fault", "--nvml-xid", "79", "--gpu", "1", "--data-dir", data).returncode == 0
    wait_for(lambda: gpuctl("status", "--data-dir", data).returncode == 2, timeout=20)
    code, view = gpuctl_json("fleet", "--data-dir", data)
    assert code == 0 and isinstance(view, dict)
    (node,) = view["nodes"]
    assert (node["score"], node["band"]) == (55, "Critical")
    assert [g["score"] for g in node["gpus"]] == [100, 55, 100, 100, 100, 100, 100, 100]
    assert node["oldest_open"]["component"] == "accelerator-nvidia-error-xid"
    r = gpuctl("fleet", "--data-dir", data)
    assert r.returncode == 0 and "Critical" in r.stdout and "1/8" in r.stdout


def test_a_repeated_fault_is_one_incident_with_its_count(up_stack: Up) -> None:
    for _ in range(3):
        r = gpuctl("inject-fault", "--xid", "31", "--pci", "0000:07:00.0", "--kmsg-path", str(up_stack.kmsg))
        assert r.returncode == 0, r.stderr

    def incidents() -> list[dict[str, Any]]:
        code, out = gpuctl_json("incidents", "--data-dir", str(up_stack.data_dir))
        return list(out) if code == 0 and isinstance(out, list) else []

    wait_for(lambda: [i["count"] for i in incidents()] == [3], timeout=30)
    [inc] = incidents()
    assert (inc["code"], inc["entity"], inc["component"]) == ("xid:31", "0000:07:00.0", "accelerator-nvidia-error-xid")
    assert inc["severity"] and inc["first"] <= inc["last"]
    table = gpuctl("incidents", "--data-dir", str(up_stack.data_dir))
    assert table.returncode == 0 and "xid:31" in table.stdout


def test_up_makes_the_kernel_log_file_it_is_pointed_at(tmp_path: Path) -> None:
    """The README's first example, `gpuctl up --kmsg-path /tmp/kmsg` on a machine with no such file: the kernel
    log was Unknown and inject-fault said "no such file" until up restarted."""
    kmsg = tmp_path / "kmsg"
    up = start_up(tmp_path / "data", kmsg)
    try:
        info = read_run_info(tmp_path / "data")
        assert kmsg.is_file() and info is not None and "reading" in json.dumps(info.sources), info
        data = str(up.data_dir)
        r = gpuctl("inject-fault", "--xid", "79", "--pci", "0000:04:00.0", "--data-dir", data)
        assert r.returncode == 0 and str(kmsg) in r.stdout, r.stderr
        wait_for(lambda: gpuctl("status", "--data-dir", data).returncode == 2, timeout=30)
    finally:
        up.stop()


def up_argv(data: Path, kmsg: Path) -> list[str]:
    return [GPUCTL, "up", "--data-dir", str(data), "--kmsg-path", str(kmsg), "--node", "e2e-node",
            "--api-listen", "127.0.0.1:0"]  # fmt: skip


def hung_says_where(proc: subprocess.Popen[bytes], log: Path, i: int) -> int:
    """proc's exit code; if it is still running 20 s on, a failure that holds every thread's stack (gpuctl dumps them
    on SIGUSR1) and its log: a hang seen once in a CI run must say where it was."""
    try:
        return proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGUSR1)
        time.sleep(2)
        children = [p.cmdline() for p in psutil.Process(proc.pid).children(recursive=True)]
        pytest.fail(f"iteration {i}: no exit 20 s after SIGINT; children {children}; log:\n{log.read_text()[-6000:]}")


def test_ctrl_c_at_any_instant_of_start_up_stops_everything_within_3_s(tmp_path: Path) -> None:
    """Issue #20: Ctrl-C (SIGINT to the terminal's process group) 0.5-1.0 s after start hung up 7 times in 7: the
    embedded nats-server died at once and start-up waited for it; only kill -9 ended it."""
    kmsg = tmp_path / "kmsg"
    kmsg.touch()
    for i in range(20):
        data = tmp_path / f"data{i}"
        log = (tmp_path / f"up{i}.log").open("w")
        proc = subprocess.Popen(up_argv(data, kmsg), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        group = set()
        try:
            time.sleep(0.3 + 0.1 * i)  # 0.3 to 2.2 s (before, the interpreter starts): every phase of start-up
            group = {p.pid for p in psutil.Process(proc.pid).children(recursive=True)}
            sent = time.monotonic()
            os.killpg(proc.pid, signal.SIGINT)
            code = hung_says_where(proc, tmp_path / f"up{i}.log", i)
            took = time.monotonic() - sent
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            log.close()
        assert took < 3.0, (i, took, (tmp_path / f"up{i}.log").read_text()[-2000:])
        assert code in (0, 130), (i, code, (tmp_path / f"up{i}.log").read_text()[-2000:])
        _, alive = psutil.wait_procs([psutil.Process(p) for p in group if psutil.pid_exists(p)], timeout=5)
        assert alive == [], (i, [p.cmdline() for p in alive])
        assert read_run_info(data) is None
        said = (tmp_path / f"up{i}.log").read_text()
        assert "Traceback" not in said, i
        # Stopped in order, NATS last: no stage saw its bus go first ("disconnected, reconnecting" once did).
        assert "reconnect" not in said.lower() and "disconnected" not in said.lower(), (i, said[-2000:])


def test_ctrl_c_early_stops_up_even_when_it_was_started_with_sigint_ignored(tmp_path: Path) -> None:
    """A shell starts a background job with SIGINT ignored, and Python keeps an ignored SIGINT ignored: a SIGINT in
    the first second of up (before its own handler) was lost and up ran on, until the test's 20 s (seen twice, in CI
    runs started with '&'). gpuctl now honours SIGINT from its first instant, as it does once started."""
    kmsg = tmp_path / "kmsg"
    kmsg.touch()
    for i, delay in enumerate((0.3, 0.6)):
        log = tmp_path / f"up{i}.log"
        with log.open("w") as out:
            proc = subprocess.Popen(up_argv(tmp_path / f"data{i}", kmsg), stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True, preexec_fn=ignore_sigint)  # fmt: skip
        try:
            time.sleep(delay)
            os.killpg(proc.pid, signal.SIGINT)
            code = hung_says_where(proc, log, i)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        assert code in (0, 130), (i, code, log.read_text()[-2000:])


def ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_sigusr1_writes_every_thread_s_stack_to_the_log_and_up_keeps_running(up_stack: Up) -> None:
    """An operator (or a test) facing a hung gpuctl asks it where it is: kill -USR1 dumps, and nothing stops."""
    before = up_stack.log.read_text()
    os.kill(up_stack.proc.pid, signal.SIGUSR1)
    wait_for(lambda: "most recent call first" in up_stack.log.read_text()[len(before) :], timeout=10, every=0.05)
    dumped = up_stack.log.read_text()[len(before) :]
    assert "Current thread" in dumped or "Thread 0x" in dumped, dumped
    assert "run_up" in dumped or "_watch" in dumped or "asyncio" in dumped, dumped  # up's own frames
    time.sleep(0.5)
    assert up_stack.proc.poll() is None
    assert read_run_info(up_stack.data_dir) is not None


def test_a_second_up_on_one_data_dir_says_who_runs_it_and_status_says_it_starts(tmp_path: Path) -> None:
    """Issue #20: two ups on one data dir both started a nats-server on the same store, and the second died with
    'unexpected error: ProgrammingError(Unable to open the chdb engine)'; status said 'start it with gpuctl up'."""
    kmsg = tmp_path / "kmsg"
    kmsg.touch()
    data = tmp_path / "data"
    first = subprocess.Popen(up_argv(data, kmsg), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)  # fmt: skip
    try:
        wait_for(lambda: (data / "up.lock").exists(), timeout=10, every=0.01)
        r = gpuctl("status", "--data-dir", str(data))
        if read_run_info(data) is None:  # still starting: it says so, and who
            assert r.returncode == 69 and f"starting (pid {first.pid}," in r.stderr, r.stderr
        second = gpuctl("up", "--data-dir", str(data), "--kmsg-path", str(kmsg), "--api-listen", "127.0.0.1:0")
        assert second.returncode == 64, second.stderr
        assert f"already running or starting here (pid {first.pid}" in second.stderr, second.stderr
        assert "unexpected" not in second.stderr and second.stderr.count("\n") == 1
        wait_for(lambda: read_run_info(data) is not None, timeout=60)
        assert gpuctl("status", "--data-dir", str(data)).returncode in (0, 1, 2, 3)
    finally:
        os.killpg(first.pid, signal.SIGINT)
        assert first.wait(timeout=20) in (0, 130)
