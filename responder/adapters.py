"""The schedulers the responder acts through: one Protocol, a Slurm adapter and a command hook.

A node name or a reason reaches a scheduler only after ``node_name`` / ``slurm_reason`` checked it: the
name is one plain host name (never a Slurm hostlist such as ``n[1-500]`` or ``a,b``, never an option),
and the reason is printable text without '=' or quotes. Every command is an argv list, never a shell."""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple, Protocol

from gpuhealth.errors import SchedulerError

# RFC 1123 host names, with '_' (some sites use it): no '[' ',' or space that Slurm would expand or split,
# no leading '-' that a command would take for an option.
_NODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")
_REASON_UNSAFE = re.compile(r"[^A-Za-z0-9 _.:/()#+@-]")
REASON_MAX = 240
TIMEOUT_S = 30.0


class NodeState(NamedTuple):
    """What the scheduler says of a node now."""

    exists: bool
    drained: bool  # drained or draining: taking no new work
    reason: str = ""


class Scheduler(Protocol):
    """Where the responder takes nodes out of service and puts them back. A Kubernetes adapter maps drain
    to a cordon with a taint carrying the reason, and state to the node's taints."""

    name: str

    async def drain(self, node: str, reason: str) -> None: ...

    async def resume(self, node: str) -> None: ...

    async def state(self, node: str) -> NodeState: ...

    async def fleet(self) -> list[str]:
        """Every node the scheduler has (the circuit breaker's fleet); [] when it cannot say."""
        ...


def node_name(node: str) -> str:
    if not _NODE.fullmatch(node):
        raise SchedulerError(f"not a plain node name, refused: {node!r}")
    return node


def slurm_reason(text: str) -> str:
    """A reason Slurm stores as given: one line of plain characters, bounded."""
    return _REASON_UNSAFE.sub("_", " ".join(text.split()))[:REASON_MAX]


async def _run(argv: Sequence[str], *, stdin: bytes = b"", env: dict[str, str] | None = None) -> str:
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
    except OSError as e:
        raise SchedulerError(f"cannot run {argv[0]}: {e}") from e
    try:
        out, err = await asyncio.wait_for(proc.communicate(stdin), TIMEOUT_S)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise SchedulerError(f"{argv[0]} did not answer within {TIMEOUT_S:g}s") from None
    if proc.returncode != 0:
        said = " ".join((err or out).decode(errors="replace").split())[:300]  # scontrol says "not found" on stdout
        raise SchedulerError(f"{' '.join(argv[:3])} exited {proc.returncode}: {said}")
    return out.decode(errors="replace")


class Slurm:
    """scontrol and sinfo of the local Slurm (or of the cluster ``conf`` names)."""

    name = "slurm"

    def __init__(self, conf: Path | None = None, bindir: Path | None = None) -> None:
        self.env = {**os.environ, "SLURM_CONF": str(conf)} if conf else None
        self.bindir = bindir

    def _tool(self, name: str) -> str:
        return str(self.bindir / name) if self.bindir else name

    async def drain(self, node: str, reason: str) -> None:
        await _run([self._tool("scontrol"), "update", f"NodeName={node_name(node)}", "State=DRAIN",
                    f"Reason={slurm_reason(reason)}"], env=self.env)  # fmt: skip

    async def resume(self, node: str) -> None:
        await _run([self._tool("scontrol"), "update", f"NodeName={node_name(node)}", "State=RESUME"], env=self.env)

    async def state(self, node: str) -> NodeState:
        try:
            shown = await _run([self._tool("scontrol"), "-o", "show", "node", node_name(node)], env=self.env)
        except SchedulerError as e:
            if "not found" in str(e):
                return NodeState(exists=False, drained=False)
            raise
        state = re.search(r"(?:^| )State=(\S+)", shown)
        flags = state.group(1).split("+") if state else []
        drained = "DRAIN" in flags
        # sinfo gives the reason alone; scontrol's runs on into "[user@time]" and the next fields.
        reason = await _run([self._tool("sinfo"), "-h", "-N", "-n", node, "-o", "%E"], env=self.env) if drained else ""
        first = reason.splitlines()[0].strip() if reason.strip() else ""
        return NodeState(exists=True, drained=drained, reason="" if first == "none" else first)

    async def fleet(self) -> list[str]:
        out = await _run([self._tool("sinfo"), "-h", "-N", "-o", "%N"], env=self.env)
        return sorted({line.strip() for line in out.splitlines() if line.strip()})


class CommandHook:
    """Any executable, given one action as a JSON object on stdin: {"action": "drain", "node": ..., "reason":
    ...}, {"action": "resume", "node": ...}, {"action": "state", "node": ...} (answering {"exists": bool,
    "drained": bool, "reason": str} on stdout) or {"action": "fleet"} (answering {"nodes": [...]}).
    Exit 0 is done; anything else is a failure, its stderr the reason."""

    name = "command"

    def __init__(self, command: Path) -> None:
        self.command = command

    async def _ask(self, request: dict[str, str]) -> str:
        return await _run([str(self.command)], stdin=json.dumps(request).encode())

    async def drain(self, node: str, reason: str) -> None:
        await self._ask({"action": "drain", "node": node_name(node), "reason": slurm_reason(reason)})

    async def resume(self, node: str) -> None:
        await self._ask({"action": "resume", "node": node_name(node)})

    async def state(self, node: str) -> NodeState:
        answer = self._json(await self._ask({"action": "state", "node": node_name(node)}))
        return NodeState(
            exists=bool(answer.get("exists", True)),
            drained=bool(answer.get("drained", False)),
            reason=str(answer.get("reason", "")),
        )

    async def fleet(self) -> list[str]:
        nodes = self._json(await self._ask({"action": "fleet"})).get("nodes", [])
        if not isinstance(nodes, list):
            raise SchedulerError(f"{self.command} answered a fleet that is not a list: {nodes!r:.200}")
        return sorted(str(n) for n in nodes)

    def _json(self, out: str) -> dict[str, object]:
        try:
            answer = json.loads(out)
        except ValueError as e:
            raise SchedulerError(f"{self.command} answered no JSON object: {out[:200]!r}") from e
        if not isinstance(answer, dict):
            raise SchedulerError(f"{self.command} answered no JSON object: {out[:200]!r}")
        return answer
