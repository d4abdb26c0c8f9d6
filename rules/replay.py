"""Replay: the engine over stored events, compared with the states that were published.

Pure: the caller reads events and published states (``gpuctl replay`` reads them
from ClickHouse) and gets, per (node, component, entity), what these rules would
have said against what was said. Every node starts from a clean state at the
first event given: a state opened before the window is not known to the replay.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from gpuhealth.events import Event
from rules.catalog import Catalog
from rules.engine import apply
from rules.state import NodeState

Key = tuple[str, str, str]  # node, component, entity


@dataclass(slots=True)
class Side:
    health: str = "-"
    reason: str = ""
    changes: int = 0


@dataclass(slots=True)
class Row:
    node: str
    component: str
    entity: str
    published: Side = field(default_factory=Side)
    replayed: Side = field(default_factory=Side)

    @property
    def differs(self) -> bool:
        return (self.published.health, self.published.changes) != (self.replayed.health, self.replayed.changes)


class Replay:
    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.nodes: dict[str, NodeState] = {}
        self.rows: dict[Key, Row] = {}
        self.events = 0

    def feed(self, events: Iterable[Event]) -> None:
        """Events in stored order (per node by time); may be called once per page."""
        for ev in events:
            state, changes = apply(self.nodes.get(ev.node), ev, self.catalog)
            self.nodes[ev.node] = state
            self.events += 1
            for h in changes:
                side = self._row((h.node, h.component, h.entity)).replayed
                side.health, side.reason, side.changes = h.health, h.reason, side.changes + 1

    def published(self, key: Key, health: str, reason: str, changes: int) -> None:
        side = self._row(key).published
        side.health, side.reason, side.changes = health, reason, changes

    def _row(self, key: Key) -> Row:
        row = self.rows.get(key)
        if row is None:
            row = self.rows[key] = Row(*key)
        return row

    def result(self) -> list[Row]:
        """Differences first, then by node, component, entity."""
        return sorted(self.rows.values(), key=lambda r: (not r.differs, r.node, r.component, r.entity))
