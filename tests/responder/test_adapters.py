"""The adapters against what they drive: Slurm's own scontrol and sinfo, and a real executable hook."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuhealth.errors import SchedulerError
from responder.adapters import CommandHook, NodeState, Slurm
from tests.responder.slurm import NODES, LocalSlurm


async def test_slurm_drains_reads_and_resumes_a_node(slurm: LocalSlurm) -> None:
    adapter = Slurm(slurm.conf)
    assert await adapter.fleet() == NODES
    await adapter.drain("n2", "gpuhealth: REBOOT_SYSTEM GPU-1: Xid 79")
    assert slurm.states()["n2"] == "drained"
    assert await adapter.state("n2") == NodeState(True, True, "gpuhealth: REBOOT_SYSTEM GPU-1: Xid 79")
    assert await adapter.state("n1") == NodeState(True, False, "")
    await adapter.resume("n2")
    assert slurm.states()["n2"].rstrip("*") == "idle"  # '*': not responding, until slurmctld pings it again
    assert await adapter.state("n9") == NodeState(False, False, "")


@pytest.mark.parametrize("forged", ["n[1-5]", "n1,n2", "ALL n1", "-h", "n1 State=RESUME"])
async def test_slurm_never_sees_a_forged_node_name(slurm: LocalSlurm, forged: str) -> None:
    with pytest.raises(SchedulerError, match="not a plain node name"):
        await Slurm(slurm.conf).drain(forged, "gpuhealth: x")
    assert set(slurm.states().values()) == {"idle"}


async def test_a_reason_cannot_carry_another_argument(slurm: LocalSlurm) -> None:
    adapter = Slurm(slurm.conf)
    await adapter.drain("n3", "gpuhealth: x\nState=RESUME Weight=9")
    assert slurm.states()["n3"] == "drained"
    assert slurm.reason("n3") == "gpuhealth: x State_RESUME Weight_9"
    assert "Weight=1" in slurm.run("scontrol", "-o", "show", "node", "n3").stdout


HOOK = """#!/bin/sh
# A site's own tooling: keeps every request, answers state and fleet.
read -r request
printf '%s\\n' "$request" >> "{log}"
case "$request" in
  *'"state"'*) echo '{{"exists": true, "drained": true, "reason": "held by the hook"}}' ;;
  *'"fleet"'*) echo '{{"nodes": ["b", "a"]}}' ;;
  *'"fail"'*) echo "no such queue" >&2; exit 3 ;;
esac
"""


async def test_the_command_hook_gets_each_action_as_json_on_stdin(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    hook = tmp_path / "hook.sh"
    hook.write_text(HOOK.format(log=log))
    hook.chmod(0o755)
    adapter = CommandHook(hook)
    await adapter.drain("gpu-7", "gpuhealth: RESET_GPU GPU-1: Xid 48")
    await adapter.resume("gpu-7")
    assert await adapter.state("gpu-7") == NodeState(True, True, "held by the hook")
    assert await adapter.fleet() == ["a", "b"]
    assert [json.loads(line) for line in log.read_text().splitlines()] == [
        {"action": "drain", "node": "gpu-7", "reason": "gpuhealth: RESET_GPU GPU-1: Xid 48"},
        {"action": "resume", "node": "gpu-7"},
        {"action": "state", "node": "gpu-7"},
        {"action": "fleet"},
    ]
    with pytest.raises(SchedulerError, match="exited 3: no such queue"):
        await adapter.drain("fail", "x")
    with pytest.raises(SchedulerError, match="not a plain node name"):
        await adapter.drain("a;b", "x")
