"""Custom checks end to end: GPUd's example plugin file on a running gpuctl up, triggered by hand and by tag,
and the verification a replaced GPU board sets off."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.e2e.conftest import Up, assert_shape, gpuctl, gpuctl_json, running, wait_for

DATA = Path(__file__).parents[1] / "data" / "checks"


def states(up: Up) -> dict[str, tuple[str, list[str], str]]:
    _, out = gpuctl_json("status", "--all", "--data-dir", str(up.data_dir))
    assert isinstance(out, dict)
    return {s["component"]: (s["health"], s["repair_actions"], s["reason"]) for s in out["states"]}


def verify_spec(flag: Path) -> str:
    """A check tagged verify that passes once ``flag`` exists (what a burn-in after a repair decides)."""
    script = f"test -f {flag} && echo '{{\"passed\": true}}' || {{ echo '{{\"passed\": false}}'; exit 1; }}"
    return json.dumps([{"plugin_name": "burn-in", "plugin_type": "component", "run_mode": "manual",
                        "timeout": "20s", "tags": ["verify"],
                        "health_state_plugin": {"steps": [{"name": "burn", "run_bash_script": {
                            "content_type": "plaintext", "script": script}}]}}])  # fmt: skip


def test_gpud_example_plugins_run_on_the_agent_and_show_in_status(tmp_path: Path) -> None:
    flag = tmp_path / "burn-in-passes"
    (tmp_path / "verify.yaml").write_text(verify_spec(flag))  # JSON is YAML
    extra = ("--simulate-gpus", "2", "--checks", str(DATA / "gpud-example.yaml"), "--checks",
             str(tmp_path / "verify.yaml"))  # fmt: skip
    with running(tmp_path, *extra) as up:
        assert up.info.sources["checks"] == "ok: 6 checks"
        d = ("--data-dir", str(up.data_dir))
        # The init plugin ran before the agent was ready; manual ones have not run.
        wait_for(lambda: states(up).get("install-python", ("",))[0] == "Healthy")
        assert "manual-exit-1" not in states(up)

        # Triggered by name: exit 1 with a JSON line whose action the parser maps to a reboot.
        r = gpuctl("check", "run", "manual-exit-1", *d)
        assert r.returncode == 2, r.stderr
        assert "REBOOT_SYSTEM" in r.stdout and "triggered to fail with exit code 1" in r.stdout
        wait_for(lambda: states(up).get("manual-exit-1", ("",))[:2] == ("Unhealthy", ["REBOOT_SYSTEM"]))

        # Triggered by tag: the three echo plugins, in file order, all Healthy.
        code, runs = gpuctl_json("check", "run", "--tag", "echo", *d)
        assert code == 0
        assert_shape("check run", runs)
        assert isinstance(runs, list)
        assert [(x["name"], x["health"], x["output"]) for x in runs] == [
            ("echo-1", "Healthy", "1\n"), ("echo-2", "Healthy", "2\n"), ("echo-3", "Healthy", "3\n")]  # fmt: skip

        code, listed = gpuctl_json("check", "list", *d)
        assert code == 0
        assert_shape("check list", listed)
        assert isinstance(listed, list)
        last: dict[str, Any] = {c["name"]: c["last"] and c["last"]["health"] for c in listed}
        assert last == {"install-python": "Healthy", "manual-exit-1": "Unhealthy", "echo-1": "Healthy",
                        "echo-2": "Healthy", "echo-3": "Healthy", "burn-in": None}  # fmt: skip
        r = gpuctl("check", "run", "no-such-check", *d)
        assert r.returncode == 68 and "no check named no-such-check" in r.stderr

        # A GPU board replaced: its serial changes, the verify checks run, the node follows their result.
        assert gpuctl("inject-fault", "--nvml-replace", "--gpu", "1", *d).returncode == 0
        wait_for(lambda: states(up).get("verification", ("",))[:2] == ("Degraded", ["HARDWARE_INSPECTION"]))
        health, _, reason = states(up)["verification"]
        assert "verification failed (burn-in)" in reason and "GPU 0000:2a:00.0 serial" in reason
        assert states(up)["burn-in"][0] == "Unhealthy"

        flag.touch()  # fixed: the next change verifies again (the baseline only moves once verified)
        assert gpuctl("inject-fault", "--nvml-replace", "--gpu", "1", *d).returncode == 0
        wait_for(lambda: states(up).get("verification", ("",))[0] == "Healthy")
        assert states(up)["verification"][2].startswith("verified by burn-in after: GPU 0000:2a:00.0 serial")
        assert states(up)["burn-in"][0] == "Healthy"

        def stored() -> list[str]:
            return sorted(e["kind"] for e in json.loads(gpuctl("events", "--component", "verification", "--json",
                                                               *d).stdout))  # fmt: skip

        wait_for(lambda: stored() == ["verification_failed", "verification_passed", "verification_running",
                                      "verification_running"])  # fmt: skip
