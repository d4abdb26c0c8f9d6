from __future__ import annotations

import msgspec
import pytest

from gpuhealth import events
from gpuhealth.events import (
    EVENT_DECODER,
    HEALTH_DECODER,
    HealthState,
    KernelEvent,
    NvlinkDetail,
    SetHealthy,
    SourceStatus,
    derived_id,
    encode,
    new_id,
)

BASE = dict(id="01J00000000000000000000000", time=1, cluster="c", node="n", source="kmsg", component="x")


def test_every_event_type_round_trips_through_the_family_decoder() -> None:
    samples = [
        KernelEvent(
            **BASE,
            kind="xid",
            message="NVRM: Xid",
            xid=79,
            pci_bus_id="0000:04:00.0",
            nvlink=NvlinkDetail(subcode=33, fatal=True),
        ),
        SourceStatus(**BASE, available=False, reason="permission denied"),
        SetHealthy(**BASE, target_component="accelerator-nvidia-error-xid", entity="0000:04:00.0", user="ops"),
    ]
    for sample in samples:
        decoded = EVENT_DECODER.decode(encode(sample))
        assert decoded == sample
        assert type(decoded) is type(sample)


def test_decoder_rejects_a_message_of_another_family() -> None:
    health = HealthState(**BASE, entity="e", health="Healthy", reason="", since=1)
    with pytest.raises(msgspec.ValidationError):
        EVENT_DECODER.decode(encode(health))
    assert HEALTH_DECODER.decode(encode(health)) == health


def test_tag_is_on_the_wire() -> None:
    wire = msgspec.msgpack.decode(encode(SourceStatus(**BASE, available=True)))
    assert wire["type"] == "source_status"


def test_new_ids_sort_by_time_and_are_unique() -> None:
    ids = [new_id(t) for t in (1_000_000, 2_000_000, 3_000_000_000)]
    assert ids == sorted(ids)
    assert len({new_id(5) for _ in range(1000)}) == 1000
    assert all(len(i) == 26 for i in ids)


def test_derived_ids_are_stable_and_distinct() -> None:
    a = derived_id(10**18, "node", "boot", 7)
    assert a == derived_id(10**18, "node", "boot", 7)
    assert a != derived_id(10**18, "node", "boot", 8)
    assert a != derived_id(10**18, "node", "boot2", 7)
    assert derived_id(10**18, "n", "b", 1) < derived_id(10**18 + 10**6, "n", "b", 0)


def test_families_cover_every_wire_type() -> None:
    assert set(events.FAMILIES) == {"event", "metric", "inventory", "health", "incident", "dlq", "decision"}


OUT_OF_RANGE = [2**40, 2**63, 2**64 - 1]


@pytest.mark.parametrize("value", OUT_OF_RANGE)
@pytest.mark.parametrize("field", ["xid", "sxid", "count", "pid"])
def test_a_kernel_event_field_the_store_cannot_hold_does_not_decode(field: str, value: int) -> None:
    wire = msgspec.msgpack.decode(encode(KernelEvent(**BASE, kind="xid", message="m")))
    wire[field] = value
    with pytest.raises(msgspec.ValidationError, match=field):
        EVENT_DECODER.decode(msgspec.msgpack.encode(wire))


@pytest.mark.parametrize("value", [2**63, 2**64 - 1])
@pytest.mark.parametrize("field", ["seq", "time", "monotonic_us"])
def test_a_number_past_int64_does_not_decode(field: str, value: int) -> None:
    # 2**40 is a valid sequence number and time (Int64 and DateTime64(9) hold it): only past Int64 is refused.
    wire = msgspec.msgpack.decode(encode(KernelEvent(**BASE, kind="xid", message="m")))
    wire[field] = value
    with pytest.raises(msgspec.ValidationError, match=field):
        EVENT_DECODER.decode(msgspec.msgpack.encode(wire))


@pytest.mark.parametrize("pci", ["0000:04:00.0\x1f", "0000:04\x1f:00.0", "0000:04:00.0\n", "x", ""])
def test_a_pci_id_not_of_its_format_does_not_decode(pci: str) -> None:
    wire = msgspec.msgpack.decode(encode(KernelEvent(**BASE, kind="xid", message="m")))
    wire["pci_bus_id"] = pci
    with pytest.raises(msgspec.ValidationError, match="pci_bus_id"):
        EVENT_DECODER.decode(msgspec.msgpack.encode(wire))


def test_names_with_control_characters_do_not_decode_and_the_extremes_that_fit_do() -> None:
    health = HealthState(**BASE, entity="GPU-1", health="Healthy", reason="", since=1)
    for field in ("component", "entity"):
        for bad in ("a\x1fb", "a\n"):  # a trailing newline too, which a regex's "$" lets through
            wire = msgspec.msgpack.decode(encode(health))
            wire[field] = bad
            with pytest.raises(msgspec.ValidationError, match=field):
                HEALTH_DECODER.decode(msgspec.msgpack.encode(wire))
    edge = KernelEvent(
        **{**BASE, "time": 2**63 - 1},
        kind="xid",
        message="m\ttab",
        xid=2**32 - 1,
        count=2**32 - 1,
        seq=2**63 - 1,
        pid=2**32 - 1,
        pci_bus_id="00000000:3B:00.7",
    )
    assert EVENT_DECODER.decode(encode(edge)) == edge
