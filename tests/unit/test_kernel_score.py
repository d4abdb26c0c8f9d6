"""`gpuctl parse --score`: the figures of a labelled set, counted by hand here."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from gpuctl.main import app

ROWS = [
    # right: an Xid with its code and PCI id (labelled as printed, compared normalised)
    {"line": "NVRM: Xid (PCI:0000:3b:00): 48, pid=1, name=x, DBE", "category": "xid", "xid": 48,
     "pci_bus_id": "0000:3b:00"},
    # right kind, wrong labelled code: counted as an Xid not right
    {"line": "NVRM: Xid (PCI:0000:3b:00): 13, pid=1, name=x, SM", "category": "xid", "xid": 14,
     "pci_bus_id": "0000:3b:00.0"},
    {"line": "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Non-fatal, x", "category": "sxid", "sxid": 12028},
    # detected, but labelled another kind
    {"line": "INFO: task python:1 blocked for more than 120 seconds.", "category": "soft_lockup"},
    # missed
    {"line": "a fault no rule knows", "category": "other_fault"},
    {"line": "nfs: server a OK", "category": "benign"},
    # a benign line flagged
    {"line": "Kernel panic - not syncing: (labelled benign on purpose)", "category": "benign"},
]  # fmt: skip


def test_score_counts_each_figure(tmp_path: Path) -> None:
    labelled = tmp_path / "set.jsonl"
    labelled.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    r = CliRunner().invoke(app, ["parse", "--score", str(labelled), "--json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.output)
    assert (got["lines"], got["fault_lines"], got["detected"], got["right_kind"]) == (7, 5, 4, 3)
    assert (got["benign_lines"], got["benign_flagged"]) == (2, 1)
    assert (got["xid_lines"], got["xid_code_and_pci_right"], got["sxid_lines"], got["sxid_right"]) == (2, 1, 1, 1)
    assert got["categories"]["xid"] == {"labelled": 2, "predicted": 2, "right": 2, "precision": 1.0, "recall": 1.0}
    assert got["categories"]["other_fault"] == {
        "labelled": 1, "predicted": 1, "right": 0, "precision": 0.0, "recall": 0.0,
    }  # fmt: skip
    assert got["categories"]["hung_task"]["precision"] == 0.0
    assert got["categories"]["soft_lockup"]["recall"] == 0.0


def test_score_prints_a_table(tmp_path: Path) -> None:
    labelled = tmp_path / "set.jsonl"
    labelled.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    r = CliRunner().invoke(app, ["parse", "--score", str(labelled)])
    assert r.exit_code == 0, r.output
    assert "fault lines detected      4/5 (80.0%)" in r.output
    assert "Xid code + PCI id right   1/2" in r.output


def test_a_line_without_its_label_is_refused(tmp_path: Path) -> None:
    labelled = tmp_path / "set.jsonl"
    labelled.write_text('{"line": "x"}\n')
    r = CliRunner().invoke(app, ["parse", "--score", str(labelled)])
    assert r.exit_code != 0
    assert "needs 'line' and 'category'" in str(r.exception)
