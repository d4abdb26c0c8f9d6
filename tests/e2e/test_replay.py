"""gpuctl replay over what the embedded stack stored: the same rules agree, other rules differ."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.conftest import Up, gpuctl, wait_for

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
