"""gpuctl replay over what the embedded stack stored: the same rules agree, other rules differ."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.conftest import Up, gpuctl, running, wait_for

HUNG = "INFO: task python:4242 blocked for more than 120 seconds."


def test_replay_agrees_with_the_live_rules_and_shows_what_a_new_threshold_changes(up_stack: Up, tmp_path: Path) -> None:
    d = str(up_stack.data_dir)
    for args in (["--xid", "79", "--pci", "0000:04:00.0"], ["--kernel-message", HUNG, "--priority", "KERN_ERR"]):
        r = gpuctl("inject-fault", *args, "--kmsg-path", str(up_stack.kmsg))
        assert r.returncode == 0, r.stderr

    def stored() -> bool:
        r = gpuctl("sql", "--data-dir", d, "SELECT count() FROM gpuhealth.health_states WHERE health != 'Healthy'")
        return r.returncode == 0 and r.stdout.split()[-1] == "2"

    wait_for(stored, timeout=30)
    same = gpuctl("replay", "--data-dir", d, "--since", "1h", "--json")
    assert same.returncode == 0, same.stderr
    result = json.loads(same.stdout)
    assert result["differ"] == 0 and result["events"] >= 2

    stricter = tmp_path / "rules.toml"
    stricter.write_text("[kernel]\nhung_task = { threshold = 5, window_s = 3600 }\n")
    other = gpuctl("replay", "--data-dir", d, "--since", "1h", "--rules", str(stricter), "--json")
    assert other.returncode == 0, other.stderr
    [row] = json.loads(other.stdout)["rows"]
    assert (row["component"], row["published"]["health"], row["replayed"]["health"]) == ("os", "Degraded", "-")
    table = gpuctl("replay", "--data-dir", d, "--since", "1h", "--rules", str(stricter))
    assert table.returncode == 0 and "1 would differ" in table.stdout and "Degraded" in table.stdout


def test_a_stopped_stores_data_is_read_straight_from_its_directory(tmp_path: Path) -> None:
    with running(tmp_path) as up:
        r = gpuctl("inject-fault", "--xid", "79", "--pci", "0000:04:00.0", "--kmsg-path", str(up.kmsg))
        assert r.returncode == 0, r.stderr
        wait_for(lambda: gpuctl("status", "--data-dir", str(up.data_dir)).returncode == 2, timeout=30)
        wait_for(lambda: gpuctl("incidents", "--data-dir", str(up.data_dir), "--json").stdout.count("xid:79") == 1)
    store = f"chdb://{up.data_dir / 'clickhouse'}"
    r = gpuctl("sql", "--clickhouse", store, "--json", "SELECT xid FROM gpuhealth.events WHERE kind = 'xid'")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == [{"xid": 79}]
    r = gpuctl("incidents", "--clickhouse", store, "--json")
    assert r.returncode == 0 and json.loads(r.stdout)[0]["code"] == "xid:79"
