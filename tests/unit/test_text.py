from __future__ import annotations

import pytest

from gpuhealth.text import clip, plural


def test_a_count_says_its_noun_in_the_right_number() -> None:
    assert [plural(n, "state") for n in (0, 1, 2)] == ["0 states", "1 state", "2 states"]
    assert plural(1, "entity", "entities") == "1 entity" and plural(3, "entity", "entities") == "3 entities"


@pytest.mark.parametrize(
    ("text", "width", "clipped"),
    [
        ("GSP firmware error: timeout waiting for RPC", 100, "GSP firmware error: timeout waiting for RPC"),
        ("GSP firmware error: timeout waiting for RPC", 30, "GSP firmware error: timeout…"),
        ("a  line\n with   its\tspaces", 40, "a line with its spaces"),
        ("x" * 50, 20, "x" * 19 + "…"),
    ],
)
def test_a_message_is_cut_between_words_and_says_so(text: str, width: int, clipped: str) -> None:
    assert clip(text, width) == clipped
    assert len(clip(text, width)) <= width
