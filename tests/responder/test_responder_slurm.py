"""The responder as a fleet runs it, on the real one-machine Slurm: `gpuctl serve rules` turns an injected
Xid 79 into a health state, `gpuctl serve responder` drains the Slurm node, a reboot resumes it, a
person's drain is never undone, 60% of the fleet faulting at once trips the circuit breaker, and a burst
behind one switch ends with no node of it drained by gpuhealth, every one held for a person."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from gpuhealth import bus, client, subjects
from gpuhealth.events import (
    DECISION_DECODER,
    HEALTH_DECODER,
    INCIDENT_DECODER,
    Decision,
    HealthState,
    Incident,
    Inventory,
    KernelEvent,
    encode,
    new_id,
)
from tests.e2e.conftest import GPUCTL, LOAD_SLACK, Nats, assert_shape, gpuctl
from tests.responder.slurm import LocalSlurm

HOUR = 3600 * 10**9


@dataclass
class Stack:
    nats: Nats
    nc: NATS
    tmp: Path
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    states: list[HealthState] = field(default_factory=list)

    def serve(self, name: str, *args: str) -> None:
        argv = [GPUCTL, "serve", name, "--nats", self.nats.url, *args]
        with (self.tmp / f"{name}.log").open("ab") as out:
            self.procs.append(subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT))

    def log(self, name: str) -> str:
        return (self.tmp / f"{name}.log").read_text()

    async def fault(self, node: str, boot: str = "boot-a") -> None:
        """An Xid 79 on the node's GPU, as its agent would publish it."""
        now = time.time_ns()
        boot_time = now - (2 * HOUR if boot == "boot-a" else 10**9)
        await self._publish(KernelEvent(id=new_id(), time=now, cluster="c", node=node, boot_id=boot,
                                        boot_time=boot_time, source="kmsg", component="accelerator-nvidia-error-xid",
                                        kind="xid", xid=79, pci_bus_id="0000:04:00.0",
                                        message="NVRM: Xid (PCI:0000:04:00): 79, GPU has fallen off the bus."))  # fmt: skip

    async def reboot(self, node: str) -> None:
        """A word from the node's next boot: the rules clear what a reboot clears."""
        now = time.time_ns()
        await self._publish(KernelEvent(id=new_id(), time=now, cluster="c", node=node, boot_id="boot-b",
                                        boot_time=now - 10**9, source="kmsg", component="kernel", kind=None,
                                        message="Linux version 6.1.0"))  # fmt: skip

    async def _publish(self, ev: KernelEvent) -> None:
        await bus.publish_batch(self.nc.jetstream(), [(subjects.event_subject(ev.node, "kmsg"), ev.id, encode(ev))])

    async def until(self, ok: object, what: str, timeout: float = 20.0) -> float:
        """Seconds until ``ok()`` held; fails past the deadline (stretched by the suite's load slack)."""
        start = time.monotonic()
        deadline = start + timeout * LOAD_SLACK
        while not ok():  # type: ignore[operator]
            assert time.monotonic() < deadline, f"not {what} within {timeout * LOAD_SLACK}s"
            await asyncio.sleep(0.05)
        return time.monotonic() - start

    def decided(self, node: str) -> list[tuple[str, str]]:
        return [(d.action, d.outcome) for d in self.decisions if d.node == node]


@contextlib.asynccontextmanager
async def stack(tmp: Path, slurm: LocalSlurm, *responder_args: str) -> AsyncIterator[Stack]:
    nats = Nats(tmp / "nats")
    nats.start()
    nc = await bus.connect(nats.url, "test")
    s = Stack(nats, nc, tmp)

    async def decision(m: Msg) -> None:
        s.decisions.append(DECISION_DECODER.decode(m.data))

    async def health(m: Msg) -> None:
        s.states.append(HEALTH_DECODER.decode(m.data))

    try:
        await nc.subscribe(f"{subjects.PREFIX}.decision.>", cb=decision)
        await nc.subscribe(f"{subjects.PREFIX}.health.>", cb=health)
        s.serve("rules")
        s.serve("responder", "--slurm-conf", str(slurm.conf), "--data-dir", str(tmp / "resp"), "--node",
                "resp-host", "--cluster", "c", *responder_args)  # fmt: skip
        js = nc.jetstream()

        async def bound() -> bool:
            try:
                await js.consumer_info(subjects.HEALTH.name, "responder")
            except Exception:
                return False
            return True

        deadline = time.monotonic() + 60 * LOAD_SLACK
        while not await bound():
            assert time.monotonic() < deadline, "the responder did not bind its consumer"
            assert all(p.poll() is None for p in s.procs), s.log("responder") + s.log("rules")
            await asyncio.sleep(0.1)
        yield s
    finally:
        for p in s.procs:
            p.terminate()
        codes = [p.wait(timeout=30) for p in s.procs]
        await nc.close()
        nats.stop()
    assert codes == [0] * len(codes), s.log("responder")


async def test_an_xid_79_drains_its_slurm_node_and_a_reboot_resumes_it(tmp_path: Path, slurm: LocalSlurm) -> None:
    async with stack(tmp_path, slurm, "--act") as s:
        s.serve("sink", "--data-dir", str(tmp_path / "sink"))
        await s.fault("n2")
        took = await s.until(lambda: slurm.states()["n2"] == "drained", "n2 drained")
        print(f"Xid 79 published -> Slurm node drained: {took:.2f}s")
        assert took < 5.0 * LOAD_SLACK
        reason = slurm.reason("n2")
        assert reason.startswith("gpuhealth: REBOOT_SYSTEM accelerator-nvidia-error-xid ")
        assert "0000:04:00.0" in reason and "79" in reason
        assert {n: st for n, st in slurm.states().items() if n != "n2"} == dict.fromkeys(
            ["n1", "n3", "n4", "n5"], "idle"
        )

        await s.reboot("n2")
        await s.until(lambda: slurm.states()["n2"].rstrip("*") == "idle", "n2 resumed")
        await s.until(lambda: ("resume", "acted") in s.decided("n2"), "the resume decided")
        assert s.decided("n2") == [("drain", "acted"), ("resume", "acted")]

        query = "SELECT node, action, outcome FROM gpuhealth.responder_decisions ORDER BY time"
        rows: list[list[object]] = []

        async def stored() -> None:
            nonlocal rows
            with contextlib.suppress(Exception):
                rows = (await client.sql(s.nc, query))[1]

        deadline = time.monotonic() + 30 * LOAD_SLACK
        while len(rows) < 2:
            assert time.monotonic() < deadline, f"decisions not in ClickHouse: {rows}"
            await stored()
            await asyncio.sleep(0.2)
        assert rows == [["n2", "drain", "acted"], ["n2", "resume", "acted"]]

        await s.fault("n5")
        await s.until(lambda: slurm.states()["n5"] == "drained", "n5 drained")
        deadline = time.monotonic() + 30 * LOAD_SLACK
        while len((await client.sql(s.nc, query))[1]) < 3:
            assert time.monotonic() < deadline, "the n5 drain not in ClickHouse"
            await asyncio.sleep(0.2)
        r = await asyncio.to_thread(gpuctl, "responder", "status", "--nats", s.nats.url, "--json")
        assert r.returncode == 0, r.stderr
        assert_shape("responder status", out := json.loads(r.stdout))
        assert [d["node"] for d in out["drained"]] == ["n5"] and out["counts"] == {"acted": 3}
        assert [(d["node"], d["action"]) for d in out["decisions"]] == [("n5", "drain"), ("n2", "resume"),
                                                                         ("n2", "drain")]  # fmt: skip
        text = (await asyncio.to_thread(gpuctl, "responder", "status", "--nats", s.nats.url)).stdout
        assert text.startswith("drained by gpuhealth: 1 node(s); decisions in the last 1d: 3 acted\n")


async def test_a_node_a_person_drained_stays_drained(tmp_path: Path, slurm: LocalSlurm) -> None:
    async with stack(tmp_path, slurm, "--act") as s:
        slurm.drain_by_hand("n4", "bad fan, ticket 41")  # before any fault
        await s.fault("n3")
        await s.fault("n4")
        await s.until(lambda: slurm.states()["n3"] == "drained", "n3 drained")
        await s.until(lambda: len(s.decided("n4")) == 1, "n4 decided")
        assert s.decided("n4") == [("drain", "skipped")] and slurm.reason("n4") == "bad fan, ticket 41"
        slurm.drain_by_hand("n3", "RMA: swap the board")  # a person takes over gpuhealth's drain

        await s.reboot("n3")
        await s.reboot("n4")
        await s.until(lambda: len(s.decided("n3")) == 2 and len(s.decided("n4")) == 2, "the reboots decided")
        assert s.decided("n3") == [("drain", "acted"), ("resume", "skipped")]
        assert s.decided("n4") == [("drain", "skipped"), ("none", "skipped")]
        assert slurm.states()["n3"] == "drained" and slurm.reason("n3") == "RMA: swap the board"
        assert slurm.states()["n4"] == "drained" and slurm.reason("n4") == "bad fan, ticket 41"


async def test_60_percent_of_the_fleet_faulting_at_once_trips_the_breaker(tmp_path: Path, slurm: LocalSlurm) -> None:
    async with stack(tmp_path, slurm, "--act") as s:
        for node in ("n1", "n2", "n3"):
            await s.fault(node)
        await s.until(lambda: sum(len(s.decided(n)) for n in ("n1", "n2", "n3")) == 3, "three decisions")
        outcomes = sorted(d.outcome for d in s.decisions)
        assert outcomes == ["acted", "acted", "refused"]
        refused = next(d for d in s.decisions if d.outcome == "refused")
        assert refused.why.startswith("circuit breaker: 2 of 5 nodes drained")
        states = slurm.states()
        assert sorted(states.values()) == ["drained", "drained", "idle", "idle", "idle"]
        assert states[refused.node] == "idle", "the refused node was not drained"
        await s.until(lambda: any(h.component == "gpuhealth-responder" for h in s.states), "the breaker's state")
        breaker = next(h for h in s.states if h.component == "gpuhealth-responder")
        assert (breaker.node, breaker.entity, breaker.health) == ("resp-host", "circuit-breaker", "Unhealthy")
        kv = await s.nc.jetstream().key_value(subjects.KV_HEALTH)
        entry = await kv.get(subjects.health_key("resp-host", "gpuhealth-responder", "circuit-breaker"))
        assert HEALTH_DECODER.decode(entry.value or b"").health == "Unhealthy", "gpuctl status shows it"


async def test_dry_run_is_the_default_and_touches_no_node(tmp_path: Path, slurm: LocalSlurm) -> None:
    async with stack(tmp_path, slurm) as s:
        await s.fault("n5")
        await s.until(lambda: len(s.decided("n5")) == 1, "n5 decided")
        assert s.decided("n5") == [("drain", "dry_run")]
        assert s.decisions[0].why.startswith("gpuhealth: REBOOT_SYSTEM")
        await s.reboot("n5")
        await s.until(lambda: len(s.decided("n5")) == 2, "the reboot decided")
        assert s.decided("n5")[1] == ("resume", "dry_run")
        assert set(slurm.states().values()) == {"idle"}


async def test_what_gpuhealth_drained_is_still_its_own_after_a_restart(tmp_path: Path, slurm: LocalSlurm) -> None:
    async with stack(tmp_path, slurm, "--act") as s:
        await s.fault("n1")
        await s.until(lambda: slurm.states()["n1"] == "drained", "n1 drained")
        await s.until(lambda: len(s.decided("n1")) == 1, "n1 decided")
        responder = s.procs.pop()
        responder.terminate()
        assert responder.wait(timeout=30) == 0
        s.serve("responder", "--slurm-conf", str(slurm.conf), "--data-dir", str(tmp_path / "resp"), "--act")
        await s.reboot("n1")
        await s.until(lambda: slurm.states()["n1"].rstrip("*") == "idle", "n1 resumed by the new process")
        await s.until(lambda: len(s.decided("n1")) == 2, "the resume decided")
        assert s.decided("n1") == [("drain", "acted"), ("resume", "acted")]


HOOK = """#!/bin/sh
# A site's own tooling: a file per drained node, holding the reason.
read -r request
echo "$request" >> "{dir}/requests.jsonl"
node=$(echo "$request" | sed -n 's/.*"node": *"\\([^"]*\\)".*/\\1/p')
case "$request" in
  *'"action": "drain"'*|*'"action":"drain"'*) echo "$request" | sed -n 's/.*"reason": *"\\([^"]*\\)".*/\\1/p' > "{dir}/$node" ;;
  *'"action": "resume"'*|*'"action":"resume"'*) rm -f "{dir}/$node" ;;
  *'"action": "state"'*|*'"action":"state"'*)
    if [ -f "{dir}/$node" ]; then printf '{{"exists": true, "drained": true, "reason": "%s"}}' "$(cat "{dir}/$node")";
    else echo '{{"exists": true, "drained": false}}'; fi ;;
  *) echo '{{"nodes": ["gpu-1", "gpu-2", "gpu-3", "gpu-4"]}}' ;;
esac
"""


async def test_the_command_hook_drains_and_resumes_through_the_service(tmp_path: Path, slurm: LocalSlurm) -> None:
    held = tmp_path / "held"
    held.mkdir()
    hook = tmp_path / "hook.sh"
    hook.write_text(HOOK.format(dir=held))
    hook.chmod(0o755)
    async with stack(tmp_path, slurm, "--act", "--adapter", "command", "--command", str(hook)) as s:
        await s.fault("gpu-2")
        await s.until(lambda: (held / "gpu-2").exists(), "gpu-2 drained by the hook")
        assert (held / "gpu-2").read_text().startswith("gpuhealth: REBOOT_SYSTEM accelerator-nvidia-error-xid")
        await s.reboot("gpu-2")
        await s.until(lambda: not (held / "gpu-2").exists(), "gpu-2 resumed by the hook")
        await s.until(lambda: len(s.decided("gpu-2")) == 2, "the resume decided")
        assert s.decided("gpu-2") == [("drain", "acted"), ("resume", "acted")]
        assert set(slurm.states().values()) == {"idle"}, "Slurm is not the hook"


async def test_a_burst_behind_one_switch_is_one_fleet_incident_and_its_drains_are_held(
    tmp_path: Path, slurm: LocalSlurm
) -> None:
    topology = tmp_path / "topology.toml"
    topology.write_text('[switch]\nleaf-1 = ["n1", "n2", "n3", "n4"]\nleaf-2 = ["n5"]\n')
    async with stack(tmp_path, slurm, "--act", "--topology", str(topology), "--breaker-fraction", "1") as s:
        s.serve("sink", "--data-dir", str(tmp_path / "sink"))
        incidents: list[Incident] = []

        async def incident(m: Msg) -> None:
            incidents.append(INCIDENT_DECODER.decode(m.data))

        await s.nc.subscribe(subjects.incident_subject("resp-host", "gpuhealth-fleet"), cb=incident)
        for node in ("n1", "n2", "n3", "n4"):
            await s.fault(node)
        # n1 and n2 drained before the burst was one, then released at n3: two decisions each.
        await s.until(lambda: len(s.decisions) == 6, "six decisions")
        assert {n: s.decided(n) for n in ("n1", "n2", "n3", "n4")} == {
            "n1": [("drain", "acted"), ("resume", "held")], "n2": [("drain", "acted"), ("resume", "held")],
            "n3": [("drain", "held")], "n4": [("drain", "held")]}  # fmt: skip
        last = {d.node: d for d in s.decisions}
        assert all("sharing switch leaf-1" in last[n].why for n in ("n1", "n2", "n3", "n4"))
        states = {n: st.rstrip("*") for n, st in slurm.states().items()}  # '*': not answering just after a resume
        assert states == dict.fromkeys(["n1", "n2", "n3", "n4", "n5"], "idle"), "none drained by gpuhealth"
        await s.until(lambda: len(incidents) >= 2, "the fleet incident, and its update")
        assert {i.id for i in incidents} == {incidents[0].id}, "one incident"
        inc = max(incidents, key=lambda i: i.seq)
        assert (inc.node, inc.component, inc.entity, inc.code) == (
            "resp-host", "gpuhealth-fleet", "switch:leaf-1", "accelerator-nvidia-error-xid")  # fmt: skip
        assert inc.count == 4 and "sharing switch leaf-1" in inc.reason and "held for a person" in inc.reason

        status: dict[str, object] = {}

        async def stored() -> bool:
            nonlocal status
            r = await asyncio.to_thread(gpuctl, "responder", "status", "--nats", s.nats.url, "--json")
            status = json.loads(r.stdout) if r.returncode == 0 else {}
            return status.get("counts") == {"acted": 2, "held": 4}

        deadline = time.monotonic() + 30 * LOAD_SLACK
        while not await stored():
            assert time.monotonic() < deadline, f"the held decisions not in ClickHouse: {status}"
            await asyncio.sleep(0.2)
        assert status["drained"] == [], "released drains are not gpuhealth's any more"


async def test_a_burst_in_dry_run_decides_the_same_and_touches_no_node(tmp_path: Path, slurm: LocalSlurm) -> None:
    topology = tmp_path / "topology.toml"
    topology.write_text('[switch]\nleaf-1 = ["n1", "n2", "n3", "n4"]\n')
    async with stack(tmp_path, slurm, "--topology", str(topology), "--breaker-fraction", "1") as s:
        for node in ("n1", "n2", "n3", "n4"):
            await s.fault(node)
        await s.until(lambda: len(s.decisions) == 6, "six decisions")
        assert {n: s.decided(n) for n in ("n1", "n2", "n3", "n4")} == {
            "n1": [("drain", "dry_run"), ("resume", "held")], "n2": [("drain", "dry_run"), ("resume", "held")],
            "n3": [("drain", "held")], "n4": [("drain", "held")]}  # fmt: skip
        assert set(slurm.states().values()) == {"idle"}


async def test_a_burst_leaves_a_node_a_person_drained_drained(tmp_path: Path, slurm: LocalSlurm) -> None:
    topology = tmp_path / "topology.toml"
    topology.write_text('[switch]\nleaf-1 = ["n1", "n2", "n3", "n4", "n5"]\n')
    async with stack(tmp_path, slurm, "--act", "--topology", str(topology), "--breaker-fraction", "1") as s:
        slurm.drain_by_hand("n5", "bad fan, ticket 41")  # before any fault
        for node in ("n1", "n2"):
            await s.fault(node)
        await s.until(lambda: slurm.states()["n1"] == slurm.states()["n2"] == "drained", "n1 and n2 drained")
        slurm.drain_by_hand("n1", "RMA: swap the board")  # a person takes over gpuhealth's drain
        for node in ("n5", "n3"):
            await s.fault(node)
        await s.until(lambda: len(s.decisions) == 6, "six decisions")
        assert s.decided("n1") == [("drain", "acted"), ("resume", "skipped")]
        assert s.decided("n2") == [("drain", "acted"), ("resume", "held")]
        assert s.decided("n3") == [("drain", "held")] and s.decided("n5") == [("drain", "skipped")]
        states = slurm.states()
        assert (states["n1"], slurm.reason("n1")) == ("drained", "RMA: swap the board")
        assert (states["n5"], slurm.reason("n5")) == ("drained", "bad fan, ticket 41")
        assert (states["n2"].rstrip("*"), states["n3"]) == ("idle", "idle")


async def test_with_slurm_away_the_responder_holds_and_resumes_once_it_answers(
    tmp_path: Path, slurm: LocalSlurm
) -> None:
    async with stack(tmp_path, slurm, "--act") as s:
        await s.fault("n4")
        await s.until(lambda: slurm.states()["n4"] == "drained", "n4 drained")
        slurm.pause_controller()
        try:
            await s.reboot("n4")
            await s.until(lambda: "failed (SchedulerError" in s.log("responder"), "the responder retrying")
            assert s.decided("n4") == [("drain", "acted")], "nothing decided blind"
        finally:
            slurm.continue_controller()
        await s.until(lambda: slurm.states().get("n4", "").rstrip("*") == "idle", "n4 resumed", timeout=60)
        await s.until(lambda: len(s.decided("n4")) == 2, "the resume decided")
        assert s.decided("n4") == [("drain", "acted"), ("resume", "acted")]


FLAKY = """#!/bin/sh
# Refuses the first two drains (a controller that has just restarted), then takes them.
read -r request
case "$request" in
  *'"fleet"'*) echo '{"nodes": ["gpu-1", "gpu-2", "gpu-3", "gpu-4"]}' ;;
  *'"state"'*) echo '{"exists": true, "drained": false}' ;;
  *'"drain"'*) echo x >> "$0.tries"; [ "$(wc -l < "$0.tries")" -gt 2 ] || { echo "not yet" >&2; exit 1; } ;;
esac
"""


async def test_a_refused_drain_is_tried_again_before_it_is_called_failed(tmp_path: Path, slurm: LocalSlurm) -> None:
    hook = tmp_path / "flaky.sh"
    hook.write_text(FLAKY)
    hook.chmod(0o755)
    async with stack(tmp_path, slurm, "--act", "--adapter", "command", "--command", str(hook)) as s:
        await s.fault("gpu-3")
        await s.until(lambda: len(s.decided("gpu-3")) == 1, "gpu-3 decided")
        assert s.decided("gpu-3") == [("drain", "acted")]
        assert (tmp_path / "flaky.sh.tries").read_text().count("x") == 3


async def test_a_burst_on_one_driver_version_from_the_inventories_is_held(tmp_path: Path, slurm: LocalSlurm) -> None:
    async with stack(tmp_path, slurm, "--act", "--group-by-inventory", "driver", "--breaker-fraction", "1") as s:
        js = s.nc.jetstream()
        for node, driver in (("n1", "550.54"), ("n2", "550.54"), ("n3", "550.54"), ("n5", "560.28")):
            inv = Inventory(id=new_id(), time=time.time_ns(), cluster="c", node=node, source="nvml",
                            component="inventory", driver_version=driver)  # fmt: skip
            await bus.publish_batch(js, [(subjects.inventory_subject(node), inv.id, encode(inv))])
        kv = await js.key_value(subjects.KV_INVENTORY)

        async def stored() -> int:
            return (await kv.status()).values

        deadline = time.monotonic() + 30 * LOAD_SLACK
        while await stored() < 4:
            assert time.monotonic() < deadline, "the rules did not keep the inventories"
            await asyncio.sleep(0.1)
        for node in ("n5", "n1", "n2", "n3"):
            await s.fault(node)
        # Two of the 550.54 nodes drained before the burst was one, then released: six decisions.
        await s.until(lambda: len(s.decisions) == 6, "six decisions")
        last = {d.node: d for d in s.decisions}
        assert {n: (d.outcome, "sharing driver 550.54" in d.why) for n, d in last.items()} == {
            "n1": ("held", True), "n2": ("held", True), "n3": ("held", True), "n5": ("acted", False)}  # fmt: skip
        states = {n: st.rstrip("*") for n, st in slurm.states().items()}
        assert states == {"n1": "idle", "n2": "idle", "n3": "idle", "n4": "idle", "n5": "drained"}


AWAY_AT_RELEASE = """#!/bin/sh
# Holds drains in files; the scheduler is away once, when the burst asks what gpu-1 is before releasing it.
read -r request
node=$(echo "$request" | sed -n 's/.*"node": *"\\([^"]*\\)".*/\\1/p')
case "$request" in
  *'"fleet"'*) echo '{"nodes": ["gpu-1", "gpu-2", "gpu-3", "gpu-4"]}' ;;
  *'"drain"'*) echo "$request" | sed -n 's/.*"reason": *"\\([^"]*\\)".*/\\1/p' > "DIR/$node" ;;
  *'"resume"'*) rm -f "DIR/$node" ;;
  *'"state"'*)
    echo x >> "DIR/$node.asked"
    if [ "$node" = gpu-1 ] && [ "$(wc -l < "DIR/$node.asked")" -eq 2 ]; then echo "away" >&2; exit 1; fi
    if [ -f "DIR/$node" ]; then printf '{"exists": true, "drained": true, "reason": "%s"}' "$(cat "DIR/$node")";
    else echo '{"exists": true, "drained": false}'; fi ;;
esac
"""


async def test_a_burst_whose_release_meets_the_scheduler_away_releases_on_the_retry(
    tmp_path: Path, slurm: LocalSlurm
) -> None:
    held = tmp_path / "held"
    held.mkdir()
    hook = tmp_path / "hook.sh"
    hook.write_text(AWAY_AT_RELEASE.replace("DIR", str(held)))
    hook.chmod(0o755)
    topology = tmp_path / "topology.toml"
    topology.write_text('[switch]\nleaf-1 = ["gpu-1", "gpu-2", "gpu-3", "gpu-4"]\n')
    args = ("--act", "--adapter", "command", "--command", str(hook), "--topology", str(topology))
    async with stack(tmp_path, slurm, *args, "--breaker-fraction", "1") as s:
        for node in ("gpu-1", "gpu-2"):
            await s.fault(node)
        await s.until(lambda: (held / "gpu-1").exists() and (held / "gpu-2").exists(), "gpu-1 and gpu-2 drained")
        await s.fault("gpu-3")
        await s.until(lambda: len(s.decisions) == 5, "five decisions", timeout=30)
        assert s.decided("gpu-1") == [("drain", "acted"), ("resume", "held")]
        assert s.decided("gpu-2") == [("drain", "acted"), ("resume", "held")]
        third = next(d for d in s.decisions if d.node == "gpu-3")
        assert (third.action, third.outcome) == ("drain", "held") and "sharing switch leaf-1" in third.why
        assert not (held / "gpu-1").exists() and not (held / "gpu-2").exists(), "both released"
        assert (held / "gpu-1.asked").read_text().count("x") == 3, "asked at its drain, away once, asked again"
