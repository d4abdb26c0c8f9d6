"""One JSON Schema per message family, generated from the Structs in events.py.

``gpuhealth/schema/<family>.schema.json`` is this output, committed for the
teams that consume gpuhealth's subjects in any language; a test fails when it
is stale. Regenerate with ``gpuctl schema --dir gpuhealth/schema``.

Each file validates on its own with a stock validator (draft-07: Ajv's
default class, Python's jsonschema, Go's and Rust's): its root rejects what is
not a message of its family, and a union family dispatches on the ``type``
tag with ``if``/``then``, so a message missing one field gets that one error
rather than one per union member. Only standard keywords: the contract's
version is in ``$id`` and ``$comment``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from gpuhealth.events import FAMILIES, SCHEMA_HEADER, SCHEMA_VERSION
from gpuhealth.subjects import PREFIX

DRAFT = "http://json-schema.org/draft-07/schema#"
_REFS = "#/definitions/{name}"
_SAFE_INT = 2**53 - 1  # JavaScript's Number.MAX_SAFE_INTEGER

TIME_NOTE = (
    "Unix epoch nanoseconds (UTC), a msgpack integer. It exceeds 2^53: decode as 64-bit integers "
    "(@msgpack/msgpack: useBigInt64: true; Go: int64) and encode as an integer, never a float "
    "(a float time is dead-lettered)."
)
WIDE_NOTE = (
    "A msgpack integer that may exceed 2^53: decode as 64-bit integers (@msgpack/msgpack: useBigInt64: true) "
    "and encode as an integer, never a float."
)
BYTES_NOTE = (
    "Raw bytes: a msgpack bin on the wire (a Uint8Array from @msgpack/msgpack, bytes in Python, []byte in Go). "
    "JSON Schema has no binary type, so this field is not type-checked; where a message is shown as JSON, "
    "these bytes are a base64 string."
)


def family_schema(family: str) -> dict[str, Any]:
    """The standalone schema of one family's messages (a key of events.FAMILIES)."""
    (root,), definitions = msgspec.json.schema_components([FAMILIES[family]], ref_template=_REFS)
    for definition in definitions.values():
        _annotate(definition)
    return {
        "$schema": DRAFT,
        "$id": f"urn:gpuhealth:wire:v{SCHEMA_VERSION}:{family}",
        "$comment": f"gpuhealth wire contract version {SCHEMA_VERSION}; generated from gpuhealth/events.py",
        "title": f"gpuhealth {family} message",
        "description": (
            f"A message on {PREFIX}.{family}.…: msgpack, header {SCHEMA_HEADER}: {SCHEMA_VERSION}. "
            "Validate the decoded map; the 'type' field names the message's type."
        ),
        **_root(root, definitions),
        "definitions": definitions,
    }


def _root(root: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    """Dispatch on the tag first, each branch applying only to its own type: a message of another family, or
    none, is one error about its tag, and a bad message is judged by its own type alone."""
    names = [ref["$ref"].rsplit("/", 1)[1] for ref in root.get("anyOf", [root])]
    tags = [definitions[name]["properties"]["type"]["enum"][0] for name in names]
    return {
        "type": "object",
        "required": ["type"],
        "properties": {"type": {"enum": tags}},
        "allOf": [
            {
                "if": {"type": "object", "properties": {"type": {"const": tag}}, "required": ["type"]},
                "then": {"$ref": _REFS.format(name=name)},
            }
            for tag, name in zip(tags, names, strict=True)
        ],
    }


def _annotate(node: Any) -> None:
    """Say, on each field, what its JSON Schema type cannot: 64-bit integers, and bytes."""
    if isinstance(node, list):
        for item in node:
            _annotate(item)
        return
    if not isinstance(node, dict):
        return
    if node.get("contentEncoding") == "base64":  # msgspec's JSON view of bytes; msgpack carries a bin
        for keyword in ("type", "contentEncoding", "default"):
            node.pop(keyword, None)
        node["description"] = BYTES_NOTE
    elif node.get("type") == "integer" and node.get("maximum", _SAFE_INT + 1) > _SAFE_INT:
        node["description"] = TIME_NOTE if node.get("description") == "Unix epoch nanoseconds" else WIDE_NOTE
    for value in node.values():
        _annotate(value)


def files() -> dict[str, str]:
    """File name → text of every family's schema, as committed under gpuhealth/schema/."""
    return {f"{family}.schema.json": _render(family_schema(family)) for family in FAMILIES}


def _render(schema: dict[str, Any]) -> str:
    return msgspec.json.format(msgspec.json.encode(schema), indent=2).decode() + "\n"
