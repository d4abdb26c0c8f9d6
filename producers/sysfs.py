"""The sysfs poller: PCIe AER and link health, InfiniBand ports, EDAC, temperatures.

What it reads is found by producers/sysfs_tree.py, over a ``sysfs_root`` that tests give as a recorded tree. Formats
are the kernel's (Documentation/ABI/testing/sysfs-bus-pci, sysfs-class-
infiniband, sysfs-devices-edac, sysfs-class-thermal, hwmon/sysfs-interface).

Cost: devices are discovered once (and again every ``rediscover_s``), their
file paths kept as strings; a poll opens only those files. On an 8-GPU node
with NVSwitches and 8 IB ports that is a few hundred small reads.

A PCIe link is judged by its width only: GPUs lower their link *speed* when
idle to save power (an H100 at rest trains at 2.5 GT/s), so a slower link is
normal while a narrower one (x8 on an x16 slot) is a fault.
"""

from __future__ import annotations

import time
from pathlib import Path

from gpuhealth import subjects
from gpuhealth.config import NodeIdentity
from gpuhealth.events import HostEvent, MetricBatch, encode, new_id, now_ns
from producers.poller import Item, PollState, read_int, read_text
from producers.sysfs_tree import Discovered, PciWatch, aer_total, discover, ib_state, parse_counter_table, read_link

SOURCE = "sysfs"
PCI_COMPONENT = "pci"
IB_COMPONENT = "accelerator-nvidia-infiniband"
EDAC_COMPONENT = "edac"
THERMAL_COMPONENT = "thermal"

AER_FILES = {"correctable": "aer_dev_correctable", "nonfatal": "aer_dev_nonfatal", "fatal": "aer_dev_fatal"}
IB_ERROR_COUNTERS = (
    "symbol_error",
    "link_downed",
    "link_error_recovery",
    "port_rcv_errors",
    "excessive_buffer_overrun_errors",
)
IB_ACTIVE = "ACTIVE"


# ---------------------------------------------------------------- the poller


class SysfsPoller:
    """Reads the discovered files and returns what changed, as events and metrics.

    ``poll`` is synchronous (the agent runs it on a worker thread) and never
    raises for what a tree may hold: missing files, permission errors, half-
    written or non-numeric values skip that reading until the next poll."""

    def __init__(
        self, sysfs_root: Path, identity: NodeIdentity, state: PollState, *, rediscover_s: float = 300.0
    ) -> None:
        self.root = sysfs_root
        self.identity = identity
        self.state = state
        self.rediscover_s = rediscover_s
        self.found = Discovered()
        self._discovered_at = -1e18
        self._aer_text: dict[str, list[str | None]] = {}
        self.polls = 0

    def poll(self, now: int | None = None) -> list[Item]:
        if time.monotonic() - self._discovered_at >= self.rediscover_s:
            self.found = discover(self.root)
            self._discovered_at = time.monotonic()
        t = now_ns() if now is None else now
        events: list[HostEvent] = []
        for dev in self.found.pci:
            events += self._aer(dev, t)
            events += self._link(dev, t)
        for name, port in self.found.ib_ports:
            events += self._ib(name, port, t)
        for name, mc in self.found.edac:
            events += self._edac(name, mc, t)
        temps = self._sensors(t, events)
        self.polls += 1
        node = self.identity.node
        items = [(subjects.event_subject(node, SOURCE), e.id, encode(e)) for e in events]
        if temps:
            batch = MetricBatch(
                id=new_id(t), time=t, cluster=self.identity.cluster, node=node,
                machine_id=self.identity.machine_id, boot_id=self.identity.boot_id, source=SOURCE,
                component=THERMAL_COMPONENT, entity=node, values=temps,
            )  # fmt: skip
            items.append((subjects.metric_subject(node, SOURCE), batch.id, encode(batch)))
        return items

    def _event(self, t: int, component: str, kind: str, entity: str, **fields: object) -> HostEvent:
        i = self.identity
        return HostEvent(
            id=new_id(t), time=t, cluster=i.cluster, node=i.node, machine_id=i.machine_id, boot_id=i.boot_id,
            boot_time=i.boot_time_ns, source=SOURCE, component=component, kind=kind, entity=entity,
            **fields,  # type: ignore[arg-type]
        )  # fmt: skip

    def _counters(self, prefix: str, values: dict[str, int]) -> tuple[dict[str, int], bool]:
        first = any(self.state.first_read(f"{prefix}/{k}") for k in values)
        deltas = {k: d for k, v in values.items() if (d := self.state.delta(f"{prefix}/{k}", v)) > 0}
        return deltas, first

    def _aer(self, dev: PciWatch, t: int) -> list[HostEvent]:
        texts = [read_text(f"{dev.path}/{fname}") for fname in AER_FILES.values()]
        if self._aer_text.get(dev.bdf) == texts:
            return []  # the usual case: nothing moved, nothing to parse
        self._aer_text[dev.bdf] = texts
        totals: dict[str, int] = {}
        detail: dict[str, int] = {}
        for severity, text in zip(AER_FILES, texts, strict=True):
            table = parse_counter_table(text) if text is not None else None
            if table is None:
                continue  # no AER capability, or unreadable this time
            totals[severity] = aer_total(table)
            detail.update({f"{severity}.{k}": v for k, v in table.items() if not k.startswith("TOTAL")})
        if not totals:
            return []
        deltas, first = self._counters(f"aer/{dev.bdf}", totals | detail)
        if not any(k in deltas for k in AER_FILES):
            return []
        named = ", ".join(f"{k} +{v}" for k, v in deltas.items() if "." in k)
        message = ", ".join(f"{s} +{deltas[s]}" for s in AER_FILES if s in deltas) + (f" ({named})" if named else "")
        return [self._event(t, PCI_COMPONENT, "aer", dev.bdf, pci_bus_id=dev.bdf, counts=deltas,
                            message=f"PCIe AER on {dev.role} {dev.bdf}: {message}", first_read=first)]  # fmt: skip

    def _link(self, dev: PciWatch, t: int) -> list[HostEvent]:
        link = read_link(dev.path)
        if link is None:
            return []
        state = f"x{link.width}/x{link.max_width}"
        cond = self.state.condition(f"link/{dev.bdf}", state, not link.downtrained, t, restate=False)
        if cond is None:
            return []
        what = "downtrained" if link.downtrained else "at full width"
        message = f"PCIe link of {dev.role} {dev.bdf} {what}: {link.describe()}"
        return [self._event(t, PCI_COMPONENT, "link", dev.bdf, pci_bus_id=dev.bdf, state=state, ok=cond.ok,
                            since=cond.since, message=message)]  # fmt: skip

    def _ib(self, name: str, port: str, t: int) -> list[HostEvent]:
        out = []
        counters: dict[str, int] = {}
        for c in IB_ERROR_COUNTERS:
            v = read_int(f"{port}/counters/{c}")
            if v is not None:
                counters[c] = v
        deltas, first = self._counters(f"ib/{name}", counters)
        if deltas:
            message = ", ".join(f"{k} +{v}" for k, v in deltas.items())
            out.append(self._event(t, IB_COMPONENT, "ib_errors", name, counts=deltas, first_read=first,
                                   message=f"InfiniBand port {name}: {message}"))  # fmt: skip
        state = ib_state(read_text(f"{port}/state", 64))
        phys = (read_text(f"{port}/phys_state", 64) or "?").split(":", 1)[-1].strip()
        previous = self.state.saved.conditions.get(f"ib/{name}")
        cond = self.state.condition(f"ib/{name}", state, state == IB_ACTIVE, t)
        # A port can go down and up between two polls: the link_downed counter still counts it.
        downs = 0 if first else deltas.get("link_downed", 0)
        if previous is not None and previous.ok and state != IB_ACTIVE:
            downs = max(downs, 1)
        if cond is None and downs == 0:
            return out
        cur = self.state.saved.conditions[f"ib/{name}"]
        rate = read_text(f"{port}/rate", 64) or "?"
        out.append(self._event(t, IB_COMPONENT, "ib_port", name, state=state, ok=cur.ok, since=cur.since,
                               counts={"downs": downs} if downs else {},
                               message=f"InfiniBand port {name} {state} ({phys}), {rate}"))  # fmt: skip
        return out

    def _edac(self, name: str, mc: str, t: int) -> list[HostEvent]:
        counters = {k: v for k in ("ce", "ue") if (v := read_int(f"{mc}/{k}_count")) is not None}
        deltas, first = self._counters(f"edac/{name}", counters)
        if not deltas:
            return []
        message = ", ".join(f"{'un' if k == 'ue' else ''}corrected +{v}" for k, v in deltas.items())
        return [self._event(t, EDAC_COMPONENT, "edac", name, counts=deltas, first_read=first,
                            message=f"EDAC memory controller {name}: {message}")]  # fmt: skip

    def _sensors(self, t: int, events: list[HostEvent]) -> dict[str, float]:
        temps = {}
        for s in self.found.sensors:
            raw = read_int(s.input)
            if raw is None:
                continue
            c = raw / s.scale
            temps[f"temp_c.{s.name}"] = c
            if s.limit is None:
                continue
            ok = c < s.limit
            key = f"temp/{s.name}"
            known = key in self.state.saved.conditions
            cond = self.state.condition(key, "ok" if ok else "over limit", ok, t, restate=False)
            # A sensor that is fine at its first read is not worth a state of its own.
            if cond is not None and (known or not ok):
                message = f"{s.name} at {c:.1f} C (limit {s.limit:.1f} C)"
                events.append(self._event(t, THERMAL_COMPONENT, "thermal", s.name, state=f"{c:.1f} C", ok=ok,
                                          since=cond.since, message=message))  # fmt: skip
        return temps
