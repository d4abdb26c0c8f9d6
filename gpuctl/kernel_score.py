"""`gpuctl parse --score`: how well the classifier does on a labelled set of kernel lines.

A labelled set is JSONL, one object per line with at least ``line`` and ``category`` (a kind, or
``benign``), and for Xid/SXid lines the expected ``xid``/``sxid`` and ``pci_bus_id`` (null when the
driver redacted it). PCI ids are compared in their normalised form: a label may keep them as printed.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from gpuhealth.errors import ConfigError


def read_labelled(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text()
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror}") from e
    rows = []
    for n, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw)
        except json.JSONDecodeError as e:
            raise ConfigError(f"{path}:{n}: not JSON ({e.msg})") from e
        if not isinstance(row, dict) or "line" not in row or "category" not in row:
            raise ConfigError(f"{path}:{n}: a labelled line needs 'line' and 'category'")
        rows.append(row)
    return rows


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def score(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures issue #23 asks for, from the labels and what `classify` says of each line."""
    from producers.kernel import classify, normalise_pci

    def pci(label: object) -> str | None:
        return normalise_pci(str(label)) if label else None

    got = [classify(str(r["line"])) for r in rows]
    pairs = [(str(r["category"]), g.kind or "benign") for r, g in zip(rows, got, strict=True)]
    faults = [(want, have) for want, have in pairs if want != "benign"]
    xid = [(r, g) for r, g in zip(rows, got, strict=True) if r["category"] == "xid"]
    sxid = [(r, g) for r, g in zip(rows, got, strict=True) if r["category"] == "sxid"]
    labelled, predicted = Counter(w for w, _ in pairs), Counter(h for _, h in pairs)
    right = Counter(w for w, h in pairs if w == h)
    categories = {
        c: {
            "labelled": labelled[c],
            "predicted": predicted[c],
            "right": right[c],
            "precision": _rate(right[c], predicted[c]),
            "recall": _rate(right[c], labelled[c]),
        }
        for c in sorted(labelled.keys() | predicted.keys())
    }
    detected = sum(have != "benign" for _, have in faults)
    kind_right = sum(want == have for want, have in faults)
    benign_flagged = [str(r["line"]) for (want, have), r in zip(pairs, rows, strict=True) if want == "benign" != have]
    xid_right = sum(g.xid == r.get("xid") and g.pci_bus_id == pci(r.get("pci_bus_id")) for r, g in xid)
    sxid_right = sum(g.sxid == r.get("sxid") for r, g in sxid)
    return {
        "lines": len(rows),
        "fault_lines": len(faults),
        "detected": detected,
        "detection_rate": _rate(detected, len(faults)),
        "right_kind": kind_right,
        "right_kind_rate": _rate(kind_right, len(faults)),
        "benign_lines": labelled["benign"],
        "benign_flagged": len(benign_flagged),
        "xid_lines": len(xid),
        "xid_code_and_pci_right": xid_right,
        "sxid_lines": len(sxid),
        "sxid_right": sxid_right,
        "categories": categories,
        "not_as_labelled": [str(r["line"]) for (want, have), r in zip(pairs, rows, strict=True) if want != have],
        "benign_flagged_lines": benign_flagged,
    }


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def report(figures: dict[str, Any]) -> str:
    """The figures as an operator reads them: a per-category table, then the headline rates."""
    rows = [f"{'CATEGORY':20} {'LABELLED':>8} {'PREDICTED':>9} {'RIGHT':>6} {'PRECISION':>9} {'RECALL':>7}"]
    for name, c in figures["categories"].items():
        rows.append(
            f"{name:20} {c['labelled']:>8} {c['predicted']:>9} {c['right']:>6} "
            f"{_pct(c['precision']):>9} {_pct(c['recall']):>7}"
        )
    f = figures
    rows += [
        "",
        f"fault lines detected      {f['detected']}/{f['fault_lines']} ({_pct(f['detection_rate'])})",
        f"right kind                {f['right_kind']}/{f['fault_lines']} ({_pct(f['right_kind_rate'])})",
        f"benign flagged            {f['benign_flagged']}/{f['benign_lines']}",
        f"Xid code + PCI id right   {f['xid_code_and_pci_right']}/{f['xid_lines']}",
        f"SXid right                {f['sxid_right']}/{f['sxid_lines']}",
    ]
    return "\n".join(rows)
