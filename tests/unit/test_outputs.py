"""--json output goes through its type: what a command prints cannot drift from the published schema."""

from __future__ import annotations

import json

import msgspec
import pytest

from gpuctl import schema


def test_an_output_is_printed_as_its_type_says() -> None:
    assert json.loads(schema.dump(schema.Version, {"gpuctl": "1.0", "wire_schema": 1})) == {
        "gpuctl": "1.0",
        "wire_schema": 1,
    }
    assert "\n" not in schema.dump(schema.Version, {"gpuctl": "1.0", "wire_schema": 1}, indent=0)


@pytest.mark.parametrize(
    "value",
    [
        {"gpuctl": "1.0", "wire_schema": 1, "build": "x"},  # a key the schema does not have
        {"gpuctl": "1.0"},  # a key it promises, missing
        {"gpuctl": "1.0", "wire_schema": "1"},  # another type
    ],
)
def test_an_output_that_drifts_from_its_type_is_an_error_not_a_print(value: dict[str, object]) -> None:
    with pytest.raises(msgspec.ValidationError):
        schema.dump(schema.Version, value)
