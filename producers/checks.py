"""Running custom checks (``producers.check_spec``) on the node, and re-verifying it after hardware changes.

Each run is one ``CheckResult`` event under the check's name as component; the
rules judge it. A run's steps are bash scripts run in order in their own
process group: a timeout kills the whole group, and what a step left running
in the background is killed when the step ends, so a check never outlives
itself. Runs of one check never overlap: an interval tick that finds it
running skips, a trigger waits for the run in progress and then runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from gpuhealth import subjects
from gpuhealth.config import NodeIdentity
from gpuhealth.events import CheckResult, Inventory, Verification, encode, new_id, now_ns
from producers.check_spec import CheckSpec, parse_output

log = logging.getLogger("gpuhealth.checks")

SOURCE = "check"
KEEP_OUTPUT = 64 * 1024  # parsed; the rest is counted, not kept
EVENT_OUTPUT = 4096  # published with the result
VERIFY_TAG = "verify"
Item = tuple[str, str, bytes]
Publish = Callable[[list[Item]], Awaitable[None]]


@dataclass
class StepsRun:
    exit_code: int | None
    timed_out: bool
    error: str
    output: bytes
    output_bytes: int
    duration_ms: int


class _Output:
    def __init__(self) -> None:
        self.head = bytearray()
        self.total = 0

    async def drain(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(65536):
            self.total += len(chunk)
            if len(self.head) < KEEP_OUTPUT:
                self.head += chunk[: KEEP_OUTPUT - len(self.head)]


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


async def _step(script: Path, env: dict[str, str], deadline: float, out: _Output) -> tuple[int | None, bool]:
    proc = await asyncio.create_subprocess_exec(
        "bash", str(script), stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT, start_new_session=True, env=env, cwd=script.parent,
    )  # fmt: skip
    assert proc.stdout is not None
    reader = asyncio.create_task(out.drain(proc.stdout))
    timed_out = False
    try:
        await asyncio.wait_for(proc.wait(), max(0.0, deadline - time.monotonic()))
    except TimeoutError:
        timed_out = True
    finally:  # on a timeout, a cancellation or a normal end: nothing of the step stays behind
        _kill_group(proc.pid)
        await proc.wait()
        try:
            await asyncio.wait_for(reader, 2.0)
        except TimeoutError:
            reader.cancel()
    return (None if timed_out else proc.returncode), timed_out


async def run_steps(spec: CheckSpec, env: dict[str, str], work_dir: Path) -> StepsRun:
    """Run a spec's steps in order within its timeout; the first failing step ends the run."""
    out, start = _Output(), time.monotonic()
    deadline = start + spec.timeout_s
    code: int | None = 0
    timed_out, error = False, ""
    await asyncio.to_thread(work_dir.mkdir, parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"check-{spec.name[:32]}-", dir=work_dir) as tmp:
        for i, (name, script) in enumerate(spec.steps, 1):
            path = Path(tmp) / f"step{i}.sh"
            path.write_text(script)
            try:
                code, timed_out = await _step(path, env, deadline, out)
            except OSError as e:
                code, error = None, f"step {i} could not start: {e.strerror or e}"
                break
            label = f"step {i}" + (f" ({name})" if name else "")
            if timed_out:
                error = f"timed out after {spec.timeout_s:g}s in {label}"
                break
            if code != 0:
                error = f"{label} exited {code}"
                break
    return StepsRun(code, timed_out, error, bytes(out.head), out.total, round((time.monotonic() - start) * 1000))


def result_of(
    spec: CheckSpec, run: StepsRun, identity: NodeIdentity, trigger: str, verification: str = ""
) -> CheckResult:
    text = run.output.decode(errors="replace")
    parsed = parse_output(text, spec.json_paths)
    error = run.error or (f"output: {parsed.error}" if parsed.error else "")
    t = now_ns()
    return CheckResult(
        id=new_id(t), time=t, cluster=identity.cluster, node=identity.node, machine_id=identity.machine_id,
        boot_id=identity.boot_id, boot_time=identity.boot_time_ns, source=SOURCE, component=spec.name,
        plugin_type=spec.plugin_type, trigger=trigger, run_mode=spec.run_mode, tags=list(spec.tags),
        exit_code=run.exit_code, timed_out=run.timed_out, error=error, duration_ms=run.duration_ms,
        output=text[:EVENT_OUTPUT], output_bytes=run.output_bytes, fields=parsed.fields,
        expect_failed=parsed.expect_failed, suggested_actions=parsed.suggested_actions, verification=verification,
    )  # fmt: skip


def check_env(identity: NodeIdentity, spec: CheckSpec, trigger: str) -> dict[str, str]:
    """The agent's environment without its credentials (a check needs no NATS or ClickHouse secret), plus
    GPUd's NAME and what the check is and why it runs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUHEALTH_NATS_", "GPUHEALTH_CLICKHOUSE_"))}
    return {**env, "NAME": spec.name, "GPUHEALTH_CHECK": spec.name, "GPUHEALTH_TRIGGER": trigger,
            "GPUHEALTH_NODE": identity.node, "GPUHEALTH_CLUSTER": identity.cluster}  # fmt: skip


class CheckRunner:
    """The node's checks: init ones before ready, auto ones on their intervals, any of them on request."""

    def __init__(self, specs: list[CheckSpec], identity: NodeIdentity, work_dir: Path, publish: Publish) -> None:
        self.specs = {s.name: s for s in specs}
        self.identity = identity
        self.work_dir = work_dir
        self.publish = publish
        self.last: dict[str, CheckResult] = {}
        self._locks = {name: asyncio.Lock() for name in self.specs}

    def select(self, names: list[str], tag: str | None = None) -> list[CheckSpec]:
        """The checks named, or tagged; KeyError names an unknown check."""
        unknown = [n for n in names if n not in self.specs]
        if unknown:
            raise KeyError(f"no check named {', '.join(unknown)} (this node has: {', '.join(self.specs) or 'none'})")
        chosen = [self.specs[n] for n in names]
        if tag:
            chosen += [s for s in self.specs.values() if tag in s.tags and s not in chosen]
        return chosen

    async def run(self, spec: CheckSpec, trigger: str, verification: str = "") -> CheckResult:
        async with self._locks[spec.name]:
            run = await run_steps(spec, check_env(self.identity, spec, trigger), self.work_dir)
            result = result_of(spec, run, self.identity, trigger, verification)
            await self.publish([(subjects.event_subject(self.identity.node, SOURCE), result.id, encode(result))])
        self.last[spec.name] = result
        level = logging.INFO if result.exit_code == 0 and not result.expect_failed else logging.WARNING
        log.log(level, "check %s (%s): exit %s in %d ms%s", spec.name, trigger, result.exit_code,
                result.duration_ms, f": {result.error}" if result.error else "")  # fmt: skip
        return result

    async def run_many(self, specs: list[CheckSpec], trigger: str, verification: str = "") -> list[CheckResult]:
        """One after another: checks that load the GPUs must not measure each other."""
        return [await self.run(s, trigger, verification) for s in specs]

    async def run_init(self) -> list[CheckResult]:
        return await self.run_many([s for s in self.specs.values() if s.plugin_type == "init"], "init")

    async def run_scheduled(self, stop: asyncio.Event) -> None:
        """Auto component checks: now, then every interval (once when it has none)."""
        auto = [s for s in self.specs.values() if s.plugin_type == "component" and s.run_mode == "auto"]
        await asyncio.gather(*(self._every(s, stop) for s in auto))

    async def _every(self, spec: CheckSpec, stop: asyncio.Event) -> None:
        while not stop.is_set():
            if not self._locks[spec.name].locked():
                try:
                    await self.run(spec, "interval")
                except Exception:  # one check's trouble (a full disk for its script) must not stop the others
                    log.exception("check %s failed to run", spec.name)
            if spec.interval_s <= 0:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), spec.interval_s)


# ---------------------------------------------------------------- verification after hardware changes


def inventory_changes(old: Inventory, new: Inventory) -> list[str]:
    """What differs in the hardware: GPUs by bus id (serial, UUID, appeared, gone) and the driver."""
    out = []
    before = {g.pci_bus_id: g for g in old.gpus}
    after = {g.pci_bus_id: g for g in new.gpus}
    for pci in sorted(before.keys() | after.keys()):
        a, b = before.get(pci), after.get(pci)
        if a is None:
            out.append(f"GPU {pci} appeared (serial {b.serial if b else '?'})")
        elif b is None:
            out.append(f"GPU {pci} is gone (serial {a.serial})")
        elif a.serial != b.serial and (a.serial or b.serial):
            out.append(f"GPU {pci} serial {a.serial} -> {b.serial}")
        elif a.uuid != b.uuid and a.uuid and b.uuid:
            out.append(f"GPU {pci} UUID {a.uuid} -> {b.uuid}")
    if old.driver_version and new.driver_version and old.driver_version != new.driver_version:
        out.append(f"driver {old.driver_version} -> {new.driver_version}")
    return out


class Verifier:
    """Runs the checks tagged ``verify`` when the inventory differs from the last verified one.

    The baseline (a file in the agent's data dir) moves only when verification passes, so an
    agent restarted or a node rebooted before it passed verifies again."""

    def __init__(self, runner: CheckRunner, identity: NodeIdentity, baseline: Path, publish: Publish) -> None:
        self.runner = runner
        self.identity = identity
        self.baseline = baseline
        self.publish = publish
        self._lock = asyncio.Lock()

    def _load(self) -> Inventory | None:
        try:
            return msgspec.json.decode(self.baseline.read_bytes(), type=Inventory)
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            return None

    def _save(self, inventory: Inventory) -> None:
        try:
            tmp = self.baseline.with_suffix(".tmp")
            tmp.write_bytes(msgspec.json.encode(inventory))
            os.replace(tmp, self.baseline)
        except OSError as e:  # the data dir read-only or full: the baseline stays where it was, verified again later
            log.error("cannot save the verified inventory %s: %s", self.baseline, e)

    async def inventory_seen(self, inventory: Inventory) -> Verification | None:
        """Verify if the hardware changed: the final Verification, or None when nothing changed."""
        async with self._lock:
            base = await asyncio.to_thread(self._load)
            if base is None:  # the first inventory this node ever had is the baseline
                await asyncio.to_thread(self._save, inventory)
                return None
            changes = inventory_changes(base, inventory)
            if not changes:
                return None
            log.warning("hardware changed since last verified: %s", "; ".join(changes))
            specs = self.runner.select([], VERIFY_TAG)
            first = await self._publish(new_id(), changes, "running" if specs else "none", {})
            results = await self.runner.run_many(specs, "verify", first.id)
            verdicts: dict[str, str] = {r.component: r.verdict()[0] for r in results}
            status = "none" if not specs else "passed" if all(v == "Healthy" for v in verdicts.values()) else "failed"
            final = await self._publish(new_id(), changes, status, verdicts) if specs else first
            if status != "failed":
                await asyncio.to_thread(self._save, inventory)
            return final

    async def _publish(self, vid: str, changes: list[str], status: str, checks: dict[str, str]) -> Verification:
        v = Verification(id=vid, time=now_ns(), cluster=self.identity.cluster, node=self.identity.node,
                         machine_id=self.identity.machine_id, boot_id=self.identity.boot_id,
                         boot_time=self.identity.boot_time_ns, source=SOURCE, component="verification",
                         changes=changes, status=status, checks=checks)  # fmt: skip
        await self.publish([(subjects.event_subject(self.identity.node, SOURCE), v.id, encode(v))])
        return v


# ---------------------------------------------------------------- on request, over NATS


class CheckRequest(msgspec.Struct, kw_only=True):
    names: list[str] = []
    tag: str = ""
    describe: bool = False  # list the checks and their last results instead of running any


async def serve_requests(nc: NATS, identity: NodeIdentity, runner: CheckRunner) -> None:
    """Answer ``cmd.<node>.check``: run checks now (by name or tag) or list them. Each request runs in
    its own task: a long check must not hold up a ``list`` or another check."""
    running: set[asyncio.Task[None]] = set()

    async def answer(msg: Msg) -> None:
        try:
            req = msgspec.json.decode(msg.data, type=CheckRequest)
            if req.describe:
                body: dict[str, Any] = {"checks": [{**s.describe(), "last": _json(runner.last.get(s.name))}
                                                   for s in runner.specs.values()]}  # fmt: skip
            else:
                specs = runner.select(req.names, req.tag or None)
                if not specs:
                    raise KeyError(f"no check is tagged {req.tag!r}" if req.tag else "name a check or a tag")
                trigger = "tag" if req.tag and not req.names else "manual"
                body = {"results": [_json(r) for r in await runner.run_many(specs, trigger)]}
        except (msgspec.DecodeError, msgspec.ValidationError) as e:
            body = {"error": f"bad request: {e}"}
        except KeyError as e:
            body = {"error": str(e.args[0]), "code": "not_found"}
        except Exception as e:  # the asker gets an answer, not a timeout
            log.exception("check request failed")
            body = {"error": f"{type(e).__name__}: {e}"}
        await msg.respond(json.dumps(body).encode())

    async def handle(msg: Msg) -> None:
        task = asyncio.create_task(answer(msg))
        running.add(task)
        task.add_done_callback(running.discard)

    await nc.subscribe(subjects.cmd_subject(identity.node, "check"), cb=handle)


def _json(r: CheckResult | None) -> Any:
    return None if r is None else msgspec.to_builtins(r)
