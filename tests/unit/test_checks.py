"""Custom checks: GPUd's spec format read and refused, its output parser, the runner's process handling,
the rules' judgement, and verification after hardware changes."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import time
from pathlib import Path

import pytest

from gpuhealth.config import NodeIdentity, parse_duration
from gpuhealth.events import EVENT_DECODER, CheckResult, GpuInfo, Inventory, Verification
from producers import check_spec
from producers.check_spec import SpecError, load_file, load_specs, parse_output
from producers.checks import EVENT_OUTPUT, KEEP_OUTPUT, CheckRunner, Verifier, inventory_changes
from rules.catalog import load
from rules.engine import apply
from rules.state import NodeState
from tests.conftest import REPO

DATA = REPO / "tests" / "data" / "checks"
ID = NodeIdentity("c", "n1", "m", "boot-1", 0)


def spec(script: str, name: str = "c", **extra: object) -> check_spec.CheckSpec:
    doc = {"plugin_name": name, "health_state_plugin": {"steps": [{"run_bash_script": {"script": script}}]}, **extra}
    return load_specs([doc], "test")[0]


class Published:
    def __init__(self) -> None:
        self.events: list[CheckResult | Verification] = []

    async def __call__(self, items: list[tuple[str, str, bytes]]) -> None:
        for _, _, payload in items:
            ev = EVENT_DECODER.decode(payload)
            assert isinstance(ev, CheckResult | Verification)
            self.events.append(ev)


def runner(tmp_path: Path, *specs: check_spec.CheckSpec) -> tuple[CheckRunner, Published]:
    out = Published()
    return CheckRunner(list(specs), ID, tmp_path / "work", out), out


# ---------------------------------------------------------------- the spec


def test_gpuds_example_file_reads_unchanged() -> None:
    specs = load_file(DATA / "gpud-example.yaml")
    assert [(s.name, s.plugin_type, s.run_mode, s.tags) for s in specs] == [
        ("install-python", "init", "auto", ()),
        ("manual-exit-1", "component", "manual", ()),
        ("echo-1", "component", "manual", ("echo",)),
        ("echo-2", "component", "manual", ("echo",)),
        ("echo-3", "component", "manual", ("echo",)),
    ]
    assert len(specs[0].steps) == 2 and specs[0].timeout_s == 60
    assert specs[3].steps[0][1] == "echo 2\n"  # base64 decoded
    assert [p.field for p in specs[1].json_paths] == ["description", "action"]
    regex = load_file(DATA / "regex.yaml")  # the old 'type:' key and run_mode ""
    assert [(s.name, s.run_mode, s.interval_s) for s in regex][:2] == [("test-healthy", "auto", 600),
                                                                       ("test-unhealthy", "auto", 600)]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("1m", 60), ("1h30m", 5400), ("500ms", 0.5), ("1m0s", 60), ("0", 0), ("", 0), (90, 90), ("2.5s", 2.5)],
)
def test_go_durations(text: object, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["1 minute", "5x", "m", "1m junk", True])
def test_bad_durations_are_refused(text: object) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"plugin_name": ""}, "plugin_name is required"),
        ({"plugin_name": "x" * 129}, "longer than 128"),
        ({"plugin_name": "gpu\tburn"}, "has a control character"),
        ({"component_list": ["a"]}, "component_list is not supported"),
        ({"type": "component_list"}, "component_list is not supported"),
        ({"plugin_type": "daemon"}, "must be init or component"),
        ({"run_mode": "once"}, "run_mode must be auto or manual"),
        ({"timeout": "soon"}, "not a duration"),
        ({"interval": "100ms"}, "under a second"),
        ({"tags": "verify"}, "tags must be a list"),
        ({"colour": "blue"}, "unknown key 'colour'"),
        ({"health_state_plugin": {"steps": []}}, "steps is empty"),
        ({"health_state_plugin": {"steps": [{"run_container": {}}]}}, "needs run_bash_script"),
        ({"health_state_plugin": {"steps": [{"run_bash_script": {"script": "%%", "content_type": "base64"}}]}},
         "not base64"),
        ({"health_state_plugin": {"steps": [{"run_bash_script": {"script": "x", "content_type": "gzip"}}]}},
         "content_type must be"),
        ({"health_state_plugin": {"steps": [{"run_bash_script": {"script": "x"}}],
                                  "parser": {"json_paths": [{"query": "name"}]}}}, "does not start with"),
        ({"health_state_plugin": {"steps": [{"run_bash_script": {"script": "x"}}],
                                  "parser": {"json_paths": [{"query": "$..deep"}]}}}, "unsupported at"),
        ({"health_state_plugin": {"steps": [{"run_bash_script": {"script": "x"}}],
                                  "parser": {"json_paths": [{"query": "$.a", "expect": {"regex": "("}}]}}},
         "bad regex"),
        ({"health_state_plugin": {"steps": [{"run_bash_script": {"script": "x"}}],
                                  "parser": {"log_path": "/tmp/x", "json_paths": []}}}, "log_path is not supported"),
    ],
)  # fmt: skip
def test_invalid_specs_name_the_check_and_the_problem(change: dict[str, object], message: str) -> None:
    doc = {"plugin_name": "broken", "health_state_plugin": {"steps": [{"run_bash_script": {"script": "true"}}]}}
    with pytest.raises(SpecError, match=message) as e:
        load_specs([{**doc, **change}], "f.yaml")
    assert str(e.value).startswith("f.yaml: spec 1")


def test_files_that_are_not_spec_lists_and_duplicate_names(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("- plugin_name: x\n  health_state_plugin: {steps: [{run_bash_script: "
                                     "{script: 'true'}}]}\n")  # fmt: skip
    with pytest.raises(SpecError, match="also defined in"):
        check_spec.load_files([tmp_path / "a.yaml", tmp_path / "a.yaml"])
    (tmp_path / "b.yaml").write_text("[unclosed")
    with pytest.raises(SpecError, match="not YAML"):
        load_file(tmp_path / "b.yaml")
    (tmp_path / "c.yaml").write_text("just a string")
    with pytest.raises(SpecError, match="expected a list"):
        load_file(tmp_path / "c.yaml")
    with pytest.raises(SpecError, match="cannot read"):
        load_file(tmp_path / "missing.yaml")
    assert load_file(tmp_path / "a.yaml")[0].name == "x"


# ---------------------------------------------------------------- the parser


def paths(*specs: dict[str, object]) -> tuple[check_spec.JsonPath, ...]:
    doc = {"plugin_name": "p", "health_state_plugin": {"steps": [{"run_bash_script": {"script": "x"}}],
                                                       "parser": {"json_paths": list(specs)}}}  # fmt: skip
    return load_specs([doc], "t")[0].json_paths


def test_the_first_json_object_is_parsed_among_other_lines() -> None:
    out = 'starting {not json\n{"a": {"b": [1, 2.0, 3.5]}, "ok": true, "n": null}\n{"a": "second"}\ndone'
    p = parse_output(out, paths({"query": "$.a.b[1]", "field": "b1"}, {"query": "$.a.b[-1]", "field": "last"},
                                {"query": "$['ok']", "field": "ok"}, {"query": "$.a.b", "field": "all"},
                                {"query": "$.a.b[*]", "field": "each"}, {"query": "$.n", "field": "n"},
                                {"query": "$.a.c", "field": "c"}))  # fmt: skip
    assert p.fields == {"b1": "2", "last": "3.5", "ok": "true", "all": "[1,2.0,3.5]", "each": "[1,2.0,3.5]"}
    assert p.expect_failed == [] and p.error == ""


def test_expect_and_suggested_actions() -> None:
    ps = paths({"query": "$.passed", "field": "passed", "expect": {"regex": "(?i)^true$"}},
               {"query": "$.missing", "field": "missing", "expect": {"regex": "x"}},
               {"query": "$.action", "field": "action", "suggested_actions": {
                   "REBOOT_SYSTEM": {"regex": "(?i)reboot"}, "RESET_GPU": {"regex": "reset"}}},
               {"query": "$.hint", "field": "hint", "suggested_actions": {"REBOOT_SYSTEM": {"regex": "reboot"}}})  # fmt: skip
    p = parse_output('{"passed": "TRUE", "action": "please Reboot", "hint": "reboot soon"}', ps)
    assert p.expect_failed == ["missing"]
    assert p.suggested_actions == {"REBOOT_SYSTEM": "please Reboot, reboot soon"}
    none = parse_output("no json here at all", ps)
    assert none.error == "no JSON object in the output" and none.expect_failed == ["passed", "missing"]
    assert parse_output("plain text", paths({"query": "$.a"})).error == ""  # nothing expected: nothing wrong


# ---------------------------------------------------------------- the runner


async def test_a_run_is_published_with_its_exit_code_fields_and_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUHEALTH_NATS_PASSWORD", "agent-secret")  # the agent's, not the check's
    s = spec('echo "{\\"who\\": \\"$GPUHEALTH_NODE/$GPUHEALTH_CHECK/$GPUHEALTH_TRIGGER\\"}"; exit 3', name="env",
             health_state_plugin={"steps": [{"run_bash_script": {"script": 'echo "{\\"who\\": \\"$GPUHEALTH_NODE/'
                                  '$GPUHEALTH_CHECK/$GPUHEALTH_TRIGGER\\"}"; exit 3'}}],
                                  "parser": {"json_paths": [{"query": "$.who", "field": "who"}]}})  # fmt: skip
    r, out = runner(tmp_path, s)
    result = await r.run(s, "manual")
    assert out.events == [result]
    assert (result.exit_code, result.fields, result.error) == (3, {"who": "n1/env/manual"}, "step 1 exited 3")
    assert result.verdict() == ("Unhealthy", "step 1 exited 3: who=n1/env/manual")
    leak = spec("env | grep -c GPUHEALTH_NATS_ || true", name="leak")
    assert (await runner(tmp_path, leak)[0].run(leak, "manual")).output == "0\n"


async def test_steps_stop_at_the_first_failure(tmp_path: Path) -> None:
    s = load_specs([{"plugin_name": "s", "health_state_plugin": {"steps": [
        {"name": "one", "run_bash_script": {"script": "echo one"}},
        {"name": "two", "run_bash_script": {"script": "echo two; exit 7"}},
        {"name": "three", "run_bash_script": {"script": "echo three"}}]}}], "t")[0]  # fmt: skip
    result = await runner(tmp_path, s)[0].run(s, "manual")
    assert (result.output, result.exit_code, result.error) == ("one\ntwo\n", 7, "step 2 (two) exited 7")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie is dead too
        return f.read().split(") ")[-1][0] != "Z"


async def gone(pid: int, within: float = 5.0) -> bool:
    """Whether the process is dead (or a zombie) within ``within`` seconds: killing is asynchronous."""
    deadline = time.monotonic() + within
    while alive(pid) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    return not alive(pid)


async def test_a_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    s = spec(f"sleep 300 & echo $! > {pidfile}; echo started; wait", timeout="1s")
    start = time.monotonic()
    result = await runner(tmp_path, s)[0].run(s, "manual")
    assert time.monotonic() - start < 10
    assert (result.exit_code, result.timed_out, result.output) == (None, True, "started\n")
    assert result.error == "timed out after 1s in step 1"
    assert result.verdict()[0] == "Unhealthy"
    assert await gone(int(pidfile.read_text()))


async def test_background_processes_do_not_outlive_a_finished_check(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    s = spec(f"sleep 300 >/dev/null 2>&1 & echo $! > {pidfile}; echo done")
    start = time.monotonic()
    result = await runner(tmp_path, s)[0].run(s, "manual")
    assert time.monotonic() - start < 10 and result.exit_code == 0
    assert await gone(int(pidfile.read_text()))


async def test_output_is_bounded_and_counted(tmp_path: Path) -> None:
    s = spec("head -c 1000000 /dev/zero | tr '\\0' x; echo; echo '{\"late\": 1}'")
    result = await runner(tmp_path, s)[0].run(s, "manual")
    assert result.output_bytes == 1_000_000 + 1 + 12
    assert len(result.output) == EVENT_OUTPUT and result.output_bytes > KEEP_OUTPUT
    assert result.exit_code == 0


async def test_binary_output_and_a_missing_interpreter_are_handled(tmp_path: Path) -> None:
    s = spec("printf '\\xff\\xfe{\"a\": 1}'", health_state_plugin={"steps": [{"run_bash_script": {
        "script": "printf '\\xff\\xfe{\"a\": 1}'"}}], "parser": {"json_paths": [{"query": "$.a", "field": "a"}]}})  # fmt: skip
    result = await runner(tmp_path, s)[0].run(s, "manual")
    assert result.fields == {"a": "1"} and result.output.startswith("\ufffd")
    r, _ = runner(tmp_path, s)
    env_path = os.environ["PATH"]
    os.environ["PATH"] = str(tmp_path / "nothing")
    try:
        result = await r.run(s, "manual")
    finally:
        os.environ["PATH"] = env_path
    assert result.exit_code is None and "could not start" in result.error


async def test_runs_of_one_check_never_overlap(tmp_path: Path) -> None:
    log = tmp_path / "log"
    s = spec(f"echo start >> {log}; sleep 0.3; echo end >> {log}")
    r, out = runner(tmp_path, s)
    await asyncio.gather(r.run(s, "manual"), r.run(s, "manual"), r.run(s, "tag"))
    assert log.read_text().split() == ["start", "end"] * 3
    assert len(out.events) == 3


async def test_the_schedule_runs_auto_checks_and_skips_a_busy_one(tmp_path: Path) -> None:
    log = tmp_path / "log"
    auto = spec(f"echo auto >> {log}", name="auto", interval="1s")
    once = spec(f"echo once >> {log}", name="once")
    manual = spec(f"echo manual >> {log}", name="manual", run_mode="manual")
    init = spec(f"echo init >> {log}", name="init", plugin_type="init")
    r, out = runner(tmp_path, auto, once, manual, init)
    assert [x.component for x in await r.run_init()] == ["init"]
    stop = asyncio.Event()
    task = asyncio.create_task(r.run_scheduled(stop))
    await asyncio.sleep(2.5)
    stop.set()
    await asyncio.wait_for(task, 5)
    lines = log.read_text().split()
    assert lines.count("init") == 1 and lines.count("once") == 1 and "manual" not in lines
    assert 2 <= lines.count("auto") <= 4
    assert {e.component: e.trigger for e in out.events if isinstance(e, CheckResult)}["auto"] == "interval"


def test_tags_and_names_select_checks() -> None:
    a, b, c = spec("true", name="a", tags=["x"]), spec("true", name="b", tags=["x", "y"]), spec("true", name="c")
    r = CheckRunner([a, b, c], ID, Path("/nonexistent"), Published())
    assert [s.name for s in r.select([], "x")] == ["a", "b"]
    assert [s.name for s in r.select(["c"], "y")] == ["c", "b"]
    with pytest.raises(KeyError, match="no check named zz"):
        r.select(["zz"])


# ---------------------------------------------------------------- the rules


def result(**kw: object) -> CheckResult:
    base: dict[str, object] = {"id": f"r{time.monotonic_ns()}", "time": 10**18, "cluster": "c", "node": "n1",
                               "boot_id": "boot-1", "source": "check", "component": "nccl", "plugin_type": "component",
                               "trigger": "manual", "exit_code": 0}  # fmt: skip
    return CheckResult(**{**base, **kw})  # type: ignore[arg-type]


def test_the_rules_judge_a_check_like_gpud() -> None:
    catalog = load()
    state, changes = apply(NodeState(node="n1"), result(), catalog)
    assert [(h.component, h.entity, h.health, h.reason) for h in changes] == [("nccl", "n1", "Healthy", "ok")]
    assert apply(state, result(), catalog)[1] == []  # the same verdict again: no change
    failed = result(
        exit_code=1,
        error="step 1 exited 1",
        fields={"bw": "3"},
        suggested_actions={"REBOOT_SYSTEM": "x", "HARDWARE_INSPECTION": "y", "XREBOOT": "z"},
    )
    state, changes = apply(state, failed, catalog)
    assert [(h.health, h.repair_actions) for h in changes] == [("Unhealthy", ["HARDWARE_INSPECTION", "REBOOT_SYSTEM"])]
    assert changes[0].reason == ("step 1 exited 1: bw=3 (suggested XREBOOT: not a repair action gpuhealth knows)")
    state, changes = apply(state, result(exit_code=0, expect_failed=["passed"], fields={"passed": "false"}), catalog)
    assert [(h.health, h.reason) for h in changes] == [("Unhealthy", "unexpected output: passed=false")]
    state, changes = apply(state, result(exit_code=None, timed_out=True, error="timed out after 5s in step 1"),
                           catalog)  # fmt: skip
    assert [h.reason for h in changes] == ["timed out after 5s in step 1"]
    state, changes = apply(state, result(), catalog)
    assert [h.health for h in changes] == ["Healthy"]
    _, changes = apply(state, result(plugin_type="init", component="setup", exit_code=2, error="step 1 exited 2"),
                       catalog)  # fmt: skip
    assert [(h.component, h.reason) for h in changes] == [("setup", "init check: step 1 exited 2")]


def test_a_check_publishes_a_change_of_health_or_of_an_unhealthy_reason_only() -> None:
    catalog = load()
    state, changes = apply(None, result(fields={"bw": "5"}, suggested_actions={"REBOOT_SYSTEM": "x"}), catalog)
    assert [(h.health, h.repair_actions, h.reason) for h in changes] == [("Healthy", [], "ok: bw=5")]
    assert apply(state, result(fields={"bw": "6"}), catalog)[1] == [], "a passing run's numbers are not news"
    failed = result(exit_code=1, error="step 1 exited 1", suggested_actions={"XREBOOT": "z", "XDRAIN": "y"})
    state, changes = apply(state, failed, catalog)
    why = "step 1 exited 1 (suggested XDRAIN, XREBOOT: not a repair action gpuhealth knows)"
    assert [(h.health, h.reason) for h in changes] == [("Unhealthy", why)]
    again = result(exit_code=1, error="step 1 exited 1", suggested_actions={"XREBOOT": "z", "XDRAIN": "y"})
    assert apply(state, again, catalog)[1] == [], "the same failure again"
    _, changes = apply(state, result(exit_code=1, error="step 2 exited 1"), catalog)
    assert [(h.health, h.reason) for h in changes] == [("Unhealthy", "step 2 exited 1")]


def test_a_verification_names_every_change_and_every_check() -> None:
    changes = ["GPU 0000:18:00.0 serial 1 -> 2", "driver 550 -> 555"]
    run = Verification(id="v1", time=10**18, cluster="c", node="n1", boot_id="boot-1", source="check",
                       component="verification", changes=changes, status="failed",
                       checks={"nccl": "Unhealthy", "burn": "Unhealthy", "dcgm": "Healthy"})  # fmt: skip
    state, out = apply(None, run, load())
    assert [h.reason for h in out] == [
        "verification failed (burn, nccl) after: GPU 0000:18:00.0 serial 1 -> 2; driver 550 -> 555"
    ]
    passed = Verification(id="v2", time=10**18 + 1, cluster="c", node="n1", boot_id="boot-1", source="check",
                          component="verification", changes=changes, status="passed",
                          checks={"nccl": "Healthy", "burn": "Healthy"})  # fmt: skip
    _, out = apply(state, passed, load())
    assert [h.reason for h in out] == [
        "verified by burn, nccl after: GPU 0000:18:00.0 serial 1 -> 2; driver 550 -> 555"
    ]


def verification(status: str, checks: dict[str, str] | None = None, boot: str = "boot-1") -> Verification:
    return Verification(id=f"v{time.monotonic_ns()}", time=10**18, cluster="c", node="n1", boot_id=boot,
                        source="check", component="verification", changes=["GPU 0000:18:00.0 serial 1 -> 2"],
                        status=status, checks=checks or {})  # fmt: skip


def test_verification_keeps_the_node_degraded_until_it_passes_even_across_a_reboot() -> None:
    catalog = load()
    state, changes = apply(None, verification("running"), catalog)
    assert [(h.health, h.reason) for h in changes] == [
        ("Degraded", "hardware changed (GPU 0000:18:00.0 serial 1 -> 2): verifying")
    ]
    state, changes = apply(state, verification("failed", {"burn": "Unhealthy", "nccl": "Healthy"}), catalog)
    assert [(h.health, h.repair_actions, h.reason) for h in changes] == [
        ("Degraded", ["HARDWARE_INSPECTION"], "verification failed (burn) after: GPU 0000:18:00.0 serial 1 -> 2")
    ]
    state, changes = apply(state, result(boot_id="boot-2", component="other"), catalog)  # a reboot
    assert all(h.component != "verification" for h in changes)
    state, changes = apply(state, verification("passed", {"burn": "Healthy"}, boot="boot-2"), catalog)
    assert [(h.health, h.reason) for h in changes] == [
        ("Healthy", "verified by burn after: GPU 0000:18:00.0 serial 1 -> 2")
    ]
    _, changes = apply(None, verification("none"), catalog)
    assert [h.health for h in changes] == ["Healthy"] and "no checks tagged verify" in changes[0].reason


# ---------------------------------------------------------------- verification


def inventory(serials: dict[str, str], driver: str = "550.90.07") -> Inventory:
    gpus = [GpuInfo(index=i, pci_bus_id=pci, serial=s, uuid=f"GPU-{s}") for i, (pci, s) in enumerate(serials.items())]
    return Inventory(id="i", time=1, cluster="c", node="n1", source="nvml", component="inventory", gpus=gpus,
                     driver_version=driver)  # fmt: skip


def test_inventory_changes_name_what_differs() -> None:
    old = inventory({"0000:18:00.0": "A", "0000:2a:00.0": "B", "0000:3a:00.0": "C"})
    new = inventory({"0000:18:00.0": "A", "0000:2a:00.0": "X", "0000:5d:00.0": "D"}, driver="560.28.03")
    assert inventory_changes(old, new) == ["GPU 0000:2a:00.0 serial B -> X", "GPU 0000:3a:00.0 is gone (serial C)",
                                           "GPU 0000:5d:00.0 appeared (serial D)", "driver 550.90.07 -> 560.28.03"]  # fmt: skip
    assert inventory_changes(old, old) == []


async def test_the_baseline_moves_only_when_verification_passes(tmp_path: Path) -> None:
    flag = tmp_path / "ok"
    check = spec(f"test -f {flag}", name="burn", tags=["verify"], run_mode="manual")
    r, out = runner(tmp_path, check)
    v = Verifier(r, ID, tmp_path / "verified.json", out)
    first, swapped = inventory({"0000:18:00.0": "A"}), inventory({"0000:18:00.0": "Z"})
    assert await v.inventory_seen(first) is None  # the first inventory is the baseline
    assert out.events == []
    failed = await v.inventory_seen(swapped)
    assert failed is not None and (failed.status, failed.checks) == ("failed", {"burn": "Unhealthy"})
    running = out.events[0]
    assert isinstance(running, Verification) and running.status == "running"
    run = out.events[1]
    assert isinstance(run, CheckResult) and (run.trigger, run.verification) == ("verify", running.id)
    # A restarted agent (a new Verifier over the same file) still sees the change: it was never verified.
    again = Verifier(r, ID, tmp_path / "verified.json", out)
    flag.touch()
    passed = await again.inventory_seen(swapped)
    assert passed is not None and passed.status == "passed"
    assert await again.inventory_seen(swapped) is None
    assert json.loads((tmp_path / "verified.json").read_text())["gpus"][0]["serial"] == "Z"


async def test_with_no_verify_checks_a_change_is_recorded_and_accepted(tmp_path: Path) -> None:
    r, out = runner(tmp_path, spec("true", name="other"))
    v = Verifier(r, ID, tmp_path / "verified.json", out)
    await v.inventory_seen(inventory({"0000:18:00.0": "A"}))
    final = await v.inventory_seen(inventory({"0000:18:00.0": "B"}))
    assert final is not None and final.status == "none" and len(out.events) == 1
    assert await v.inventory_seen(inventory({"0000:18:00.0": "B"})) is None


def test_base64_scripts_round_trip() -> None:
    script = "echo 'quotes \" and $vars'\n"
    s = load_specs([{"plugin_name": "b", "health_state_plugin": {"steps": [{"run_bash_script": {
        "content_type": "base64", "script": base64.b64encode(script.encode()).decode()}}]}}], "t")[0]  # fmt: skip
    assert s.steps[0][1] == script
