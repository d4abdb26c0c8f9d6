"""Every --json output against its documented schema, from a running stack; exit codes alongside."""

from __future__ import annotations

import json
from pathlib import Path

from gpuctl.schema import render
from tests.conftest import REPO
from tests.e2e.conftest import Up, assert_shape, gpuctl, gpuctl_json, wait_for


def test_the_committed_output_schema_is_current() -> None:
    committed = (REPO / "gpuhealth" / "schema" / "cli.schema.json").read_text()
    assert committed == render(), "regenerate: gpuctl schema --outputs --out gpuhealth/schema/cli.schema.json"


def test_outputs_match_their_schema(up_stack: Up, tmp_path: Path) -> None:
    d = str(up_stack.data_dir)
    code, status = gpuctl_json("status", "--data-dir", d)
    assert code == 0
    assert_shape("status", status)
    r = gpuctl("inject-fault", "--xid", "79", "--pci", "0000:04:00.0", "--kmsg-path", str(up_stack.kmsg))
    assert r.returncode == 0, r.stderr
    wait_for(lambda: gpuctl("status", "--data-dir", d).returncode == 2)
    wait_for(lambda: len(gpuctl_json("incidents", "--data-dir", d)[1] or []) == 1)  # type: ignore[arg-type]

    code, status = gpuctl_json("status", "--data-dir", d)
    assert code == 2 and any(s["health"] == "Unhealthy" for s in status["states"])  # type: ignore[index]
    assert_shape("status", status)
    code, fleet = gpuctl_json("fleet", "--data-dir", d)
    assert code == 0  # fleet exits 0 whenever it could print, however bad the fleet is
    assert_shape("fleet", fleet)
    for command in ("events", "incidents"):
        code, out = gpuctl_json(command, "--data-dir", d)
        assert code == 0 and out
        assert_shape(command, out)
    code, replay = gpuctl_json("replay", "--data-dir", d, "--since", "1h", "--all")
    assert code == 0 and replay["rows"]  # type: ignore[index]
    assert_shape("replay", replay)
    rules = tmp_path / "rules.toml"
    rules.write_text("[infiniband]\ndown_s = 60\n")
    r = gpuctl("rules", "check", str(rules), "--json")
    assert r.returncode == 0
    assert_shape("rules check", json.loads(r.stdout))
    code, version = gpuctl_json("version")
    assert code == 0
    assert_shape("version", version)


def test_nothing_running_is_exit_69_with_one_line(tmp_path: Path) -> None:
    for command in (["status"], ["fleet"], ["events"], ["incidents"], ["sql", "SELECT 1"]):
        r = gpuctl(*command, "--data-dir", str(tmp_path / "nothing"))
        assert r.returncode == 69, (command, r.returncode, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, command


def test_events_filters_and_an_injected_sxid(up_stack: Up) -> None:
    d = str(up_stack.data_dir)
    r = gpuctl("inject-fault", "--sxid", "12028", "--pci", "0000:05:00.0", "--kmsg-path", str(up_stack.kmsg))
    assert r.returncode == 0, r.stderr
    r = gpuctl("inject-fault", "--xid", "13", "--pci", "0000:04:00.0", "--kmsg-path", str(up_stack.kmsg))
    assert r.returncode == 0, r.stderr

    def events(*args: str) -> list[dict[str, object]]:
        code, out = gpuctl_json("events", "--data-dir", d, *args)
        assert code == 0
        return list(out)  # type: ignore[call-overload]

    wait_for(lambda: len(events("--kind", "sxid")) == 1 and len(events("--kind", "xid")) == 1, timeout=30)
    [sx] = events("--kind", "sxid")
    assert (sx["sxid"], sx["pci_bus_id"], sx["component"]) == (12028, "0000:05:00.0", "accelerator-nvidia-error-sxid")
    assert [e["kind"] for e in events("--component", "accelerator-nvidia-error-xid")] == ["xid"]
    assert events("--node", "another-node") == []
    assert events("--until", "1h") == []  # nothing is older than an hour
    assert len(events("--kind", "source_status")) >= 1
