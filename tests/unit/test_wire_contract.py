"""The published wire contract: one JSON Schema a family, usable with stock validators in any language."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import jsonschema
import msgspec
import pytest

from gpuhealth.events import (
    FAMILIES,
    DeadLetter,
    Decision,
    HealthState,
    Incident,
    Inventory,
    KernelEvent,
    MetricBatch,
    SourceStatus,
    encode,
)
from gpuhealth.wire_schema import files
from tests.conftest import REPO, need

SCHEMAS = REPO / "gpuhealth" / "schema"
JS = REPO / "examples" / "js"
T = 1_763_000_000_123_456_789  # a real time in ns: past 2^53, odd in its last digits
BASE: dict[str, Any] = dict(id="01J00000000000000000000000", time=T, cluster="c", node="n", source="s", component="x")
SAMPLES: dict[str, msgspec.Struct] = {
    "event": KernelEvent(**BASE, kind="xid", message="NVRM: Xid 79", xid=79, pci_bus_id="0000:04:00.0"),
    "metric": MetricBatch(**BASE, entity="GPU-1", values={"power_w": 301.5}),
    "inventory": Inventory(**BASE, driver_version="550.54"),
    "health": HealthState(**BASE, entity="GPU-1", health="Unhealthy", reason="Xid 79", since=T),
    "incident": Incident(**BASE, entity="GPU-1", code="79", severity="Fatal", reason="r", count=1, first=T, last=T),
    "dlq": DeadLetter(id="d", time=T, stage="rules", subject="gpuhealth.v1.event.n.s", reason="bad", data=b"\x00\xff"),
    "decision": Decision(
        **BASE,
        entity="GPU-1",
        health="Unhealthy",
        repair_actions=["REBOOT_SYSTEM"],
        action="drain",
        outcome="dry_run",
        why="Xid 79",
        adapter="slurm",
        health_id="h",
    ),
}
STANDARD_DRAFT7 = set(jsonschema.Draft7Validator.VALIDATORS) | {
    "then", "else", "$schema", "$id", "$comment", "title", "description", "default", "definitions",
}  # fmt: skip


def schema(family: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SCHEMAS / f"{family}.schema.json").read_text())
    return loaded


def errors(family: str, instance: object) -> list[str]:
    s = schema(family)
    return [e.message for e in jsonschema.validators.validator_for(s)(s).iter_errors(instance)]


def wire(message: msgspec.Struct) -> Any:
    """What any msgpack decoder gives: the map on the wire, bytes as bytes."""
    return msgspec.msgpack.decode(encode(message))


def test_committed_schemas_are_current() -> None:
    for name, text in files().items():
        assert (SCHEMAS / name).read_text() == text, "regenerate: gpuctl schema --dir gpuhealth/schema"
    assert not (SCHEMAS / "wire.schema.json").exists(), "the one schema of every family is gone"


@pytest.mark.parametrize("family", list(FAMILIES))
def test_a_family_schema_accepts_its_messages_and_rejects_anything_else(family: str) -> None:
    assert errors(family, wire(SAMPLES[family])) == []
    assert errors(family, {}) == ["'type' is a required property"]
    assert errors(family, 42) == ["42 is not of type 'object'"]
    for other, sample in SAMPLES.items():
        if other != family:
            assert errors(family, wire(sample)), f"a {other} message passed as a {family} message"


def test_a_missing_field_is_one_error_naming_it() -> None:
    event = wire(SAMPLES["event"])
    del event["message"]
    assert errors("event", event) == ["'message' is a required property"]
    event = wire(SAMPLES["event"]) | {"type": "kernal"}
    assert len(errors("event", event)) == 1 and "'kernal' is not one of" in errors("event", event)[0]


def test_a_dead_letter_with_its_binary_data_validates() -> None:
    letter = wire(SAMPLES["dlq"])
    assert letter["data"] == b"\x00\xff"  # msgpack bin: bytes, not a base64 string
    assert errors("dlq", letter) == []


@pytest.mark.parametrize("family", list(FAMILIES))
def test_only_standard_keywords_and_stock_validators_load_it(family: str) -> None:
    s = schema(family)
    jsonschema.Draft7Validator.check_schema(s)
    assert s["$schema"] == "http://json-schema.org/draft-07/schema#" and s["$id"] == f"urn:gpuhealth:wire:v1:{family}"

    def keywords(node: object, in_properties: bool = False) -> set[str]:
        if isinstance(node, list):
            return set().union(*(keywords(n) for n in node))
        if not isinstance(node, dict):
            return set()
        own = set() if in_properties else set(node)
        return own.union(*(keywords(v, k in ("properties", "definitions")) for k, v in node.items()))

    assert keywords(s) <= STANDARD_DRAFT7


def test_every_time_field_says_its_unit_and_how_to_decode_it() -> None:
    times = {"time", "boot_time", "since", "first", "last"}
    for family in FAMILIES:
        for name, definition in schema(family)["definitions"].items():
            for field, prop in definition["properties"].items():
                if field in times:
                    assert "Unix epoch nanoseconds" in prop["description"], (family, name, field)
                    assert "2^53" in prop["description"] and "useBigInt64" in prop["description"]


def node_validate(messages: list[tuple[str, bytes]]) -> list[list[dict[str, Any]]]:
    """Each message's errors from Ajv, as examples/js validates (default Ajv, @msgpack/msgpack decoding)."""
    node = shutil.which("node")
    need(node is not None and (JS / "node_modules").is_dir(), "node and examples/js/node_modules (deploy/test-deps.sh)")
    assert node is not None
    out = subprocess.run(
        [node, str(JS / "validate.mjs")], input=msgspec.msgpack.encode(messages), capture_output=True, timeout=60
    )
    assert out.returncode == 0, out.stderr.decode()
    return [json.loads(line) for line in out.stdout.decode().splitlines()]


def test_javascript_validates_what_gpuhealth_puts_on_the_wire() -> None:
    missing = wire(SAMPLES["event"])
    del missing["message"]
    results = node_validate(
        [
            *((family, encode(sample)) for family, sample in SAMPLES.items()),
            ("event", encode(SourceStatus(**BASE, available=False, reason="no NVML"))),
            ("event", msgspec.msgpack.encode(missing)),
            ("event", msgspec.msgpack.encode({})),
            ("event", msgspec.msgpack.encode(42)),
            ("health", encode(SAMPLES["event"])),
        ]
    )
    good = len(SAMPLES) + 1  # every family's sample and the status event
    assert results[:good] == [[]] * good  # the dead letter's Uint8Array data and the times past 2^53 too
    missing_field, not_a_message, not_an_object, wrong_family = results[good:]
    assert [e["message"] for e in missing_field] == ["must have required property 'message'"]
    assert [e["message"] for e in not_a_message] == ["must have required property 'type'"]
    assert [e["message"] for e in not_an_object] == ["must be object"]
    assert [e["params"] for e in wrong_family] == [{"allowedValues": ["health"]}]  # an event is no health state
