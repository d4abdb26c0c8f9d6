from __future__ import annotations

import csv

import msgspec
import pytest

from gpuhealth.events import KernelEvent, NvlinkDetail
from rules.catalog import ACTION_RANK, _parse_nvlink, load
from rules.engine import apply, apply_all
from tests.conftest import SHARED, need

REF = SHARED / "reference"


def xid(code: int, pci: str) -> KernelEvent:
    return KernelEvent(id=f"e-{code}", time=10**18, cluster="c", node="n", boot_id="b1", source="kmsg",
                       component="accelerator-nvidia-error-xid", kind="xid", xid=code, pci_bus_id=pci,
                       message=f"NVRM: Xid (PCI:{pci[:-2]}): {code}, test")  # fmt: skip


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


def test_an_xid_incident_has_the_severity_its_catalog_row_gives() -> None:
    events = [xid(48, "0000:04:00.0"), xid(13, "0000:05:00.0"), xid(999, "0000:06:00.0")]
    state, opened = None, []
    for ev in events:
        state, _, more = apply_all(state, ev, load())  # loaded here: a cached catalog would hide a mutant
        opened += more
    assert [(i.code, i.severity) for i in opened] == [
        ("xid:48", "Fatal"),
        ("xid:13", "Warning"),
        ("xid:999", "Unknown"),
    ]


RESET = [["RESET_GPU"]]  # the first rung of its ladder (then HARDWARE_INSPECTION, if it comes back)


@pytest.mark.parametrize(
    ("unit", "printed", "actions"),
    [
        ("NETIR_MFDE_EVENT", "Fatal", RESET),  # a unit with a rule for either fatality: the one printed
        ("NETIR_MFDE_EVENT", "Nonfatal", []),  # nothing to do: the GPU's state does not change
        ("NETIR_LINK_DOWN", "Fatal", RESET),  # the second name of NETIR_LINK_EVT/NETIR_LINK_DOWN
    ],
)
def test_an_nvlink_xid_takes_the_action_of_the_unit_and_fatality_printed(
    unit: str, printed: str, actions: list[list[str]]
) -> None:
    detail = NvlinkDetail(subcode=33, unit=unit, fatal=printed == "Fatal")
    ev = msgspec.structs.replace(xid(149, "0000:04:00.0"), nvlink=detail)
    _, states = apply(None, ev, load())
    assert [s.repair_actions for s in states] == actions


def test_the_nvlink_table_reads_each_unit_of_a_row_and_keeps_a_keys_highest_action() -> None:
    tsv = """# generated
xid\tunit\tprinted\taction\trules
149\tNETIR_LINK_EVT/NETIR_LINK_DOWN\tfatal\tRESET_GPU\t21
147\tTREX\tnonfatal\tIGNORE_NO_ACTION_REQUIRED\t2
146\tTLW_RX\tfatal\tREBOOT_SYSTEM\t1
146\tTLW_RX\tfatal\tRESET_GPU\t1
146\tTLW_RX\tnonfatal\tIGNORE_NO_ACTION_REQUIRED\t3
"""
    assert _parse_nvlink(tsv) == {
        (149, "NETIR_LINK_EVT", True): "RESET_GPU",
        (149, "NETIR_LINK_DOWN", True): "RESET_GPU",
        (147, "TREX", False): "IGNORE_NO_ACTION_REQUIRED",
        (146, "TLW_RX", True): "REBOOT_SYSTEM",
        (146, "TLW_RX", False): "IGNORE_NO_ACTION_REQUIRED",
    }
