"""Build xid.tsv, sxid.tsv and nvlink.tsv from the reference tables (``just catalogs``).

    python -m rules.catalogs.generate [REFERENCE_DIR]   (default ../shared/reference)

The generated files are committed; this script records how each row's
severity and repair-action ladder was decided, in the row itself:

- ``gpud``: GPUd's repair actions (field-proven, and what operators of GPUd
  fleets already expect);
- ``nvidia:<ACTION>``: GPUd has none, so NVIDIA's immediate action decides it,
  mapped to gpuhealth's vocabulary by ``NVIDIA_TO_ACTIONS`` below;
- ``override``: a reasoned exception, explained in the row's note.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

HERE = Path(__file__).parent

# NVIDIA's immediate actions → an escalation ladder. CONTACT_SUPPORT follows GPUd's
# own precedent for such codes (9, 12, 16, …: reboot), escalating to inspection when
# the fault survives two reboots.
NVIDIA_TO_ACTIONS = {
    "IGNORE": "IGNORE_NO_ACTION_REQUIRED",
    "RESTART_APP": "CHECK_USER_APP_AND_GPU",
    "CHECK_UVM": "CHECK_USER_APP_AND_GPU",
    "RESET_GPU": "RESET_GPU",
    "RESTART_BM": "REBOOT_SYSTEM",
    "RESTART_VM": "REBOOT_SYSTEM",
    "CONTACT_SUPPORT": "REBOOT_SYSTEM,HARDWARE_INSPECTION",
    "CHECK_MECHANICALS": "HARDWARE_INSPECTION",
    "XID_154": "RESET_GPU",
}

OVERRIDES = {
    "154": ("RESET_GPU", "the driver names the recovery it needs in the message; rules/engine.py reads it"),
    "165": ("HARDWARE_INSPECTION", "power smoothing circuitry lifetime exhausted: a part to replace"),
    "164": ("IGNORE_NO_ACTION_REQUIRED", "lifetime low, not yet exhausted: informational"),
    "162": ("IGNORE_NO_ACTION_REQUIRED", "capability re-engaged: informational"),
    "168": (
        "REBOOT_SYSTEM,HARDWARE_INSPECTION",
        "WPR errors: no action given by either catalog; treated as CONTACT_SUPPORT",
    ),
    "171": ("REBOOT_SYSTEM,HARDWARE_INSPECTION", "detail record of Xid 48: follows Xid 48's ladder"),
}

XID_SOURCE = "NVIDIA Xid catalog 2025-10-29 + r555 listing; GPUd v0.13 xid catalog"
SXID_SOURCE = "NVIDIA Fabric Manager user guide DU-09883-001 v1.3 (Oct 2023), as carried in GPUd"


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def build_xid(ref: Path) -> list[list[str]]:
    nvidia = {r["code"]: r for r in _rows(ref / "nvidia_xid_reference.tsv")}
    out = []
    for r in _rows(ref / "xid_catalog.tsv"):
        code = r["code"]
        nv = nvidia.get(code, {})
        immediate = nv.get("immediate_action", "") or ""
        severity = r["event_type"] or "Warning"
        if code in OVERRIDES:
            actions, note = OVERRIDES[code]
            decided = "override"
        elif r["repair_actions"]:
            actions, decided, note = r["repair_actions"], "gpud", ""
        elif immediate in NVIDIA_TO_ACTIONS:
            actions, decided, note = NVIDIA_TO_ACTIONS[immediate], f"nvidia:{immediate}", ""
        else:
            actions, decided = "IGNORE_NO_ACTION_REQUIRED", "default"
            note = "neither catalog gives an action; informational"
        name = nv.get("description") or r["name"]
        if name in ("", "Unused"):
            name = r["name"]
        out.append([code, name.replace("\t", " "), nv.get("mnemonic", ""), severity, actions, decided, immediate, note])
    return out


def build_sxid(ref: Path) -> list[list[str]]:
    out = []
    for r in _rows(ref / "sxid_catalog.tsv"):
        notes = dict(part.split("=", 1) for part in r["notes"].split("; ") if "=" in part)
        actions = r["repair_actions"]
        decided = "gpud"
        if not actions:
            # Non-fatal SXids: the fabric keeps running; watch the node, don't drain it.
            actions, decided = "IGNORE_NO_ACTION_REQUIRED", "fm-guide:non-fatal"
        out.append(
            [
                r["code"],
                r["name"],
                r["event_type"] or "Warning",
                actions,
                decided,
                notes.get("potential_fatal", ""),
                notes.get("always_fatal", ""),
            ]
        )
    return out


NVLINK_SOURCE = "NVIDIA Xid catalog NVLink5 decode rules (Xid 144-150), as generated in GPUd"
# NVLink resolutions → gpuhealth's action. XID_154_EVAL: the driver follows with an Xid 154
# naming the recovery it needs, and that event carries the action.
NVLINK_ACTIONS = {
    "IGNORE": "IGNORE_NO_ACTION_REQUIRED",
    "XID_154_EVAL": "IGNORE_NO_ACTION_REQUIRED",
    "RESET_GPU": "RESET_GPU",
}
_NVLINK_RANK = ["IGNORE_NO_ACTION_REQUIRED", "RESET_GPU"]


def build_nvlink(ref: Path) -> list[list[str]]:
    """(Xid, unit, fatal as printed) → the most severe action of its decode rules.

    The driver prints the unit and Fatal/Nonfatal with every NVLink Xid; the status bits
    behind finer rows are not in the message, so the strongest row decides."""
    best: dict[tuple[str, str, str], tuple[str, int]] = {}
    for r in _rows(ref / "xid_nvlink_rules.tsv"):
        fatal = "nonfatal" if r["Severity"].lower().startswith("non") else "fatal"
        action = NVLINK_ACTIONS[r["Resolution"]]
        key = (r["xid"], r["Unit"], fatal)
        prev, n = best.get(key, ("IGNORE_NO_ACTION_REQUIRED", 0))
        best[key] = (max(prev, action, key=_NVLINK_RANK.index), n + 1)
    return [[*k, a, str(n)] for k, (a, n) in sorted(best.items())]


def write(path: Path, header: list[str], rows: list[list[str]], source: str) -> None:
    with path.open("w", newline="") as f:
        f.write(f"# source: {source}\n# generated by rules/catalogs/generate.py; edit the script, not this file\n")
        w = csv.writer(f, delimiter="\t", lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


def main(argv: list[str]) -> int:
    ref = Path(argv[1]) if len(argv) > 1 else HERE.parents[1] / ".." / "shared" / "reference"
    write(
        HERE / "xid.tsv",
        ["code", "name", "mnemonic", "severity", "repair_actions", "decided_by", "nvidia_immediate", "note"],
        build_xid(ref),
        XID_SOURCE,
    )
    write(
        HERE / "sxid.tsv",
        ["code", "name", "severity", "repair_actions", "decided_by", "potential_fatal", "always_fatal"],
        build_sxid(ref),
        SXID_SOURCE,
    )
    write(HERE / "nvlink.tsv", ["xid", "unit", "printed", "action", "rules"], build_nvlink(ref), NVLINK_SOURCE)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
