from __future__ import annotations

from pathlib import Path

import pytest

from gpuhealth.config import RunInfo, default_data_dir, read_identity, read_run_info, remove_run_info, write_run_info
from sinks.clickhouse import Store, chdb_dsn


def test_data_dir_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GPUHEALTH_DATA_DIR", str(tmp_path / "x"))
    assert default_data_dir() == tmp_path / "x"
    monkeypatch.delenv("GPUHEALTH_DATA_DIR")
    monkeypatch.setattr("os.geteuid", lambda: 0)
    assert default_data_dir() == Path("/var/lib/gpuhealth")
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    assert default_data_dir() == tmp_path / ".local" / "state" / "gpuhealth"


def test_identity_from_recorded_trees(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proc, etc = tmp_path / "proc", tmp_path / "etc"
    (proc / "sys" / "kernel" / "random").mkdir(parents=True)
    (proc / "sys" / "kernel" / "random" / "boot_id").write_text("0f6b4cbb-1c4d-4a55-9b0e-6e3c1d2d1b2a\n")
    (proc / "stat").write_text("cpu  1 2 3\nbtime 1763700000\nprocesses 5\n")
    etc.mkdir()
    (etc / "machine-id").write_text("abc123\n")
    monkeypatch.delenv("GPUHEALTH_CLUSTER", raising=False)
    ident = read_identity(proc_root=proc, etc_root=etc, node="gpu-1")
    assert ident.boot_id == "0f6b4cbb-1c4d-4a55-9b0e-6e3c1d2d1b2a"
    assert ident.boot_time_ns == 1763700000 * 10**9
    assert (ident.machine_id, ident.node, ident.cluster) == ("abc123", "gpu-1", "default")


def test_missing_trees_mean_empty_not_crash(tmp_path: Path) -> None:
    ident = read_identity(proc_root=tmp_path / "none", etc_root=tmp_path / "none", node="n")
    assert (ident.boot_id, ident.machine_id, ident.boot_time_ns) == ("", "", 0)


def test_run_info_is_removed_only_by_its_owner(tmp_path: Path) -> None:
    info = RunInfo(
        pid=123,
        nats_url="nats://x",
        node="n",
        cluster="c",
        kmsg_path="/dev/kmsg",
        allow_inject=True,
        started_ns=1,
        clickhouse="chdb:///x",
    )
    write_run_info(tmp_path, info)
    assert read_run_info(tmp_path) == info
    remove_run_info(tmp_path, pid=999)
    assert read_run_info(tmp_path) == info
    remove_run_info(tmp_path, pid=123)
    assert read_run_info(tmp_path) is None


def test_the_default_store_is_the_data_dirs_clickhouse_folder_by_an_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # gpuctl up and serve sink open it, and gpuctl reads it, from wherever they were started: a relative
    # data dir must name the same folder for all of them.
    monkeypatch.chdir(tmp_path)
    target = Store(chdb_dsn(Path("state"))).target
    assert (target.kind, target.path) == ("chdb", str(tmp_path.resolve() / "state" / "clickhouse"))
