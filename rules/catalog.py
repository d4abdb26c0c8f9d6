"""The Xid and SXid catalogs, read from the data files in ``rules/catalogs/``."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from functools import cache
from importlib import resources

from gpuhealth.events import RepairAction
from rules import limits as limits_mod
from rules.limits import Limits

ACTION_RANK: dict[str, int] = {
    "IGNORE_NO_ACTION_REQUIRED": 0,
    "CHECK_USER_APP_AND_GPU": 1,
    "RESET_GPU": 2,
    "REBOOT_SYSTEM": 3,
    "HARDWARE_INSPECTION": 4,
}
REBOOT_CLEARS = frozenset({"CHECK_USER_APP_AND_GPU", "RESET_GPU", "REBOOT_SYSTEM"})
# Faults caused by the application, not the GPU: they never escalate to hardware.
APPLICATION_XIDS = frozenset({13, 31, 43, 45})


@dataclass(frozen=True, slots=True)
class Entry:
    code: int
    name: str
    severity: str
    ladder: tuple[RepairAction, ...]
    decided_by: str


@dataclass(frozen=True, slots=True)
class Catalog:
    """Everything the engine reads as data: the Xid and SXid tables and the rules' limits."""

    xid: dict[int, Entry]
    sxid: dict[int, Entry]
    limits: Limits
    # NVLink Xids 144-150: (xid, unit as printed, printed fatal) → action
    nvlink: dict[tuple[int, str, bool], RepairAction]


def _parse(text: str) -> dict[int, Entry]:
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    out: dict[int, Entry] = {}
    for row in csv.DictReader(io.StringIO("\n".join(lines)), delimiter="\t"):
        ladder = tuple(a for a in row["repair_actions"].split(",") if a)
        for a in ladder:
            if a not in ACTION_RANK:
                raise ValueError(f"catalog code {row['code']}: unknown repair action {a!r}")
        code = int(row["code"])
        out[code] = Entry(code, row["name"], row["severity"], ladder, row["decided_by"])  # type: ignore[arg-type]
    return out


def _parse_nvlink(text: str) -> dict[tuple[int, str, bool], RepairAction]:
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    out: dict[tuple[int, str, bool], RepairAction] = {}
    for row in csv.DictReader(io.StringIO("\n".join(lines)), delimiter="\t"):
        action = row["action"]
        if action not in ACTION_RANK:
            raise ValueError(f"nvlink.tsv: unknown repair action {action!r}")
        for unit in row["unit"].split("/"):  # "NETIR_LINK_EVT/NETIR_LINK_DOWN": either may be printed
            key = (int(row["xid"]), unit, row["printed"] == "fatal")
            if ACTION_RANK[action] >= ACTION_RANK[out.get(key, "IGNORE_NO_ACTION_REQUIRED")]:
                out[key] = action  # type: ignore[assignment]
    return out


@cache
def load() -> Catalog:
    files = resources.files("rules").joinpath("catalogs")
    return Catalog(
        xid=_parse(files.joinpath("xid.tsv").read_text()),
        sxid=_parse(files.joinpath("sxid.tsv").read_text()),
        limits=limits_mod.default(),
        nvlink=_parse_nvlink(files.joinpath("nvlink.tsv").read_text()),
    )
