"""The JSON Schema of every wire type, generated from the Structs in events.py.

``gpuhealth/schema/wire.schema.json`` is this output, committed for the teams
that consume gpuhealth's subjects; a test fails when it is stale. Regenerate
with ``gpuctl schema --out gpuhealth/schema/wire.schema.json``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from gpuhealth.events import FAMILIES, SCHEMA_HEADER, SCHEMA_VERSION
from gpuhealth.subjects import PREFIX


def wire_schema() -> dict[str, Any]:
    families = list(FAMILIES.items())
    (schemas, components) = msgspec.json.schema_components([t for _, t in families], ref_template="#/$defs/{name}")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "gpuhealth wire contract",
        "description": (
            f"Messages on {PREFIX}.<family>.…, msgpack-encoded, header {SCHEMA_HEADER}: {SCHEMA_VERSION}. "
            "Each family is a union tagged by the 'type' field. Times are Unix epoch nanoseconds."
        ),
        "x-schema-version": SCHEMA_VERSION,
        "properties": {name: schema for (name, _), schema in zip(families, schemas, strict=True)},
        "$defs": components,
    }


def render() -> str:
    return msgspec.json.format(msgspec.json.encode(wire_schema()), indent=2).decode() + "\n"
