"""The one syntax of time and duration options (``replay.timespec``): the accepted forms, worked
out by hand in epoch milliseconds, and the errors that name the option."""

from __future__ import annotations

import pytest

from replay.timespec import TimeSpecError, is_relative, parse_moment, parse_span

DAY = 86_400_000
JAN26 = 1_737_849_600_000  # 2025-01-26T00:00:00Z
BOUNDS = (JAN26, JAN26 + 31 * DAY)  # a history from 2025-01-26 to 2025-02-26


@pytest.mark.parametrize(("text", "ms"), [
    ("90m", 5_400_000), ("1h30m", 5_400_000), ("1.5h", 5_400_000), ("500ms", 500), ("7d", 7 * DAY),
    ("1d12h", DAY + 43_200_000), ("1w", 7 * DAY), ("2", 2_000), ("0.25", 250), ("0", 0), ("1500us", None),
    (" 30m ", 1_800_000),
])
def test_durations(text: str, ms: int | None) -> None:
    """Go durations with days and weeks; ``None``: not a whole number of milliseconds."""
    if ms is None:
        with pytest.raises(TimeSpecError, match="not a whole number of milliseconds"):
            parse_span(text, "--tick")
    else:
        assert parse_span(text, "--tick") == ms


@pytest.mark.parametrize("text", ["", "d", "7x", "-1h", "1h-", "h1", "1e3s", "7 d"])
def test_bad_durations_name_the_option(text: str) -> None:
    with pytest.raises(TimeSpecError, match=r"^--snapshot-every-time: invalid duration"):
        parse_span(text, "--snapshot-every-time")


@pytest.mark.parametrize(("text", "ms"), [
    ("2025-01-26T17:38:22Z", JAN26 + 17 * 3_600_000 + 38 * 60_000 + 22_000),
    ("2025-01-26T17:38:22+01:00", JAN26 + 16 * 3_600_000 + 38 * 60_000 + 22_000),
    ("2025-01-26", JAN26),
    ("7d", JAN26 + 7 * DAY), ("+7d", JAN26 + 7 * DAY), ("3600", JAN26 + 3_600_000),
    ("-2h", JAN26 + 31 * DAY - 7_200_000), ("-31d", JAN26),
])
def test_moments(text: str, ms: int) -> None:
    assert parse_moment(text, "--at", BOUNDS) == ms


def test_relative_moments_ask_for_the_bounds_only_when_needed() -> None:
    calls: list[int] = []

    def bounds() -> tuple[int, int]:
        calls.append(1)
        return BOUNDS

    assert parse_moment("2025-01-26", "--at", bounds) == JAN26
    assert calls == []
    assert parse_moment("-1d", "--at", bounds) == JAN26 + 30 * DAY
    assert calls == [1]
    assert is_relative("-2h") and is_relative("7d") and is_relative("+1w") and not is_relative("2025-01-26")


@pytest.mark.parametrize(("text", "bounds", "message"), [
    ("yesterday", BOUNDS, "--at: invalid time 'yesterday'"),
    ("2025-01-26T17:38:22", BOUNDS, "--at: invalid time"),  # RFC 3339 needs the offset
    ("2025-02-30", BOUNDS, "--at: invalid time"),
    ("-2h", None, "relative to a history this command does not have"),
    ("-110000w", BOUNDS, "outside the time range of events"),  # 2,109 years before 2025: before year 1
    ("-1000000w", BOUNDS, "longer than the time range of events"),
])
def test_bad_moments(text: str, bounds, message: str) -> None:
    with pytest.raises(TimeSpecError, match=message):
        parse_moment(text, "--at", bounds)
