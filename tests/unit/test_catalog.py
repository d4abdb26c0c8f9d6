from __future__ import annotations

import csv

import pytest

from rules.catalog import ACTION_RANK, load
from tests.conftest import SHARED, need

REF = SHARED / "reference"


def _ref_codes(name: str) -> set[int]:
    need((REF / name).exists(), f"../shared/reference/{name} (beside this checkout)")
    with (REF / name).open() as f:
        return {int(r["code"]) for r in csv.DictReader(f, delimiter="\t")}


def test_every_reference_row_is_in_the_catalogs() -> None:
    cat = load()
    assert set(cat.xid) == _ref_codes("xid_catalog.tsv")
    assert set(cat.sxid) == _ref_codes("sxid_catalog.tsv")
    assert len(cat.xid) == 173 and len(cat.sxid) == 93


def test_every_row_has_a_valid_ladder_and_a_reason_for_it() -> None:
    cat = load()
    for entry in [*cat.xid.values(), *cat.sxid.values()]:
        assert entry.ladder, entry
        assert all(a in ACTION_RANK for a in entry.ladder)
        assert entry.decided_by


@pytest.mark.parametrize(
    ("code", "first"),
    [
        (79, "REBOOT_SYSTEM"),
        (48, "REBOOT_SYSTEM"),
        (13, "CHECK_USER_APP_AND_GPU"),
        (45, "IGNORE_NO_ACTION_REQUIRED"),
        (109, "RESET_GPU"),
    ],
)
def test_known_codes(code: int, first: str) -> None:
    assert load().xid[code].ladder[0] == first
