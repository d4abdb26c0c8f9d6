"""ISO weeks for reports."""

from __future__ import annotations

import datetime as dt

import pytest

from gpuhealth.errors import ConfigError
from sinks.report import week_bounds


def test_an_iso_week_is_monday_to_monday_utc() -> None:
    start, end, label = week_bounds("2026-W01")
    assert (start.isoformat(), end.isoformat(), label) == ("2025-12-29T00:00:00+00:00", "2026-01-05T00:00:00+00:00",
                                                           "2026-W01")  # fmt: skip


def test_the_default_is_the_last_complete_week() -> None:
    start, end, label = week_bounds(None, today=dt.date(2026, 11, 21))  # a Saturday in W47
    assert (start.date(), end.date(), label) == (dt.date(2026, 11, 9), dt.date(2026, 11, 16), "2026-W46")
    assert week_bounds(None, today=dt.date(2026, 11, 16))[2] == "2026-W46"  # Monday: the week just ended
    assert week_bounds("this", today=dt.date(2026, 11, 21))[2] == "2026-W47"


@pytest.mark.parametrize("bad", ["2026-47", "W47", "2026-W54", "2026-W00"])
def test_a_bad_week_is_a_clear_error(bad: str) -> None:
    with pytest.raises(ConfigError):
        week_bounds(bad)
