"""Fleet correlation: one fault type on many nodes that share a switch, a rack (any group a site file
names) or, asked for, a driver version or GPU model (from the nodes' inventories) within a short window
is one fleet incident with a shared cause, not many broken nodes. From the node that makes it a burst
on, drains in that group are held for a person, and the drains made before it was known as one are
released (responder/decide.py): draining forty nodes behind one failing leaf switch is the worst
response there is.

The site file (TOML) maps each kind of group to its groups and their nodes:

    [switch]
    leaf-3 = ["gpu-001", "gpu-002", "gpu-003"]
    [rack]
    r12 = ["gpu-001", "gpu-017"]
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec

from gpuhealth.errors import ConfigError
from gpuhealth.events import Inventory

Groups = Callable[[str], list[tuple[str, str]]]  # node -> the (kind, name) groups it is in
INVENTORY_KINDS = ("driver", "gpu-model")


class Topology(msgspec.Struct, frozen=True):
    groups: dict[str, dict[str, list[str]]] = {}  # kind -> group -> nodes

    def groups_of(self, node: str) -> list[tuple[str, str]]:
        return [(kind, name) for kind, named in sorted(self.groups.items()) for name, nodes in sorted(named.items())
                if node in nodes]  # fmt: skip


def load(path: Path) -> Topology:
    try:
        return msgspec.convert({"groups": tomllib.loads(path.read_text())}, Topology)
    except (OSError, tomllib.TOMLDecodeError, msgspec.ValidationError) as e:
        raise ConfigError(f"{path}: not a topology file ([kind] group = [nodes]): {e}") from e


def inventory_groups(inv: Inventory, kinds: Sequence[str]) -> list[tuple[str, str]]:
    """The groups a node's inventory puts it in: its driver version, its (first) GPU's model."""
    out = []
    if "driver" in kinds and inv.driver_version:
        out.append(("driver", inv.driver_version))
    models = sorted({g.name for g in inv.gpus if g.name})
    if "gpu-model" in kinds and models:
        out.append(("gpu-model", models[0]))
    return out


class FleetIncident(msgspec.Struct, kw_only=True):
    kind: str  # switch, rack, ...
    group: str
    fault: str  # the component the nodes report
    first: float
    last: float
    nodes: list[str]

    def key(self) -> str:
        return f"{self.kind}:{self.group}:{self.fault}"

    def describe(self, window_s: float) -> str:
        return (
            f"fleet incident: {len(self.nodes)} nodes sharing {self.kind} {self.group} report {self.fault} "
            f"within {window_s:g}s, a shared cause: drains held for a person ({', '.join(self.nodes)})"
        )


def burst(
    recent: list[tuple[float, str, str]],
    incidents: dict[str, FleetIncident],
    groups_of: Groups,
    node: str,
    fault: str,
    now: float,
    *,
    nodes: int,
    window_s: float,
) -> FleetIncident | None:
    """The fleet incident a drain-class fault on ``node`` belongs to, if its group now has ``nodes`` or
    more nodes with the same fault inside the window (``recent`` and ``incidents`` are updated)."""
    recent[:] = [r for r in recent if r[0] > now - window_s]
    recent.append((now, node, fault))
    for key in [k for k, inc in incidents.items() if inc.last <= now - window_s]:
        del incidents[key]  # a burst that ended: a later one is a new incident
    if nodes <= 0:
        return None
    for kind, name in groups_of(node):
        hit = sorted({n for _, n, f in recent if f == fault and (kind, name) in groups_of(n)})
        if len(hit) < nodes:
            continue
        found = incidents.get(f"{kind}:{name}:{fault}")
        if found is None:
            found = FleetIncident(kind=kind, group=name, fault=fault, first=now, last=now, nodes=hit)
            incidents[found.key()] = found
        found.last, found.nodes = now, sorted(set(found.nodes) | set(hit))
        return found
    return None
