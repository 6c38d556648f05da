"""Tests of statemodel.timefmt: RFC 3339 times and Go durations as integer milliseconds.

Hand-derived anchors: 2026-03-01 is day 20513 after 1970-01-01 (56 years, 14 leap days, + 59 days of
Jan/Feb 2026), so 2026-03-01T09:30:05Z = 20513*86400 + 34205 = 1_772_357_405 s.  2024-02-29 is day
19782 (54 years, 13 leap days, + 59).  0001-01-01 is 719162 days before the epoch.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from statemodel.errors import EventError
from statemodel.timefmt import MAX_MS, MIN_MS, format_time, parse_duration, parse_time

T0 = 1_772_357_405_000  # 2026-03-01T09:30:05Z

VALID_TIMES = [
    ("2026-03-01T09:30:05Z", T0),
    ("2026-03-01T09:30:05.123+02:00", T0 - 2 * 3_600_000 + 123),
    ("2026-03-01T04:00:05-05:30", T0),
    ("2026-03-01t09:30:05z", T0),
    ("2026-03-01T09:30:05.1Z", T0 + 100),
    ("2026-03-01T09:30:05.120Z", T0 + 120),
    ("2026-03-01T09:30:05.999999999Z", T0 + 999),  # truncated, not rounded
    ("2026-03-01T09:30:05-00:00", T0),
    ("1970-01-01T00:00:00Z", 0),
    ("1969-12-31T23:59:59.9995Z", -1),
    ("2024-02-29T00:00:00Z", 19782 * 86_400_000),
    ("0001-01-01T00:00:00Z", -719162 * 86_400_000),
    ("9999-12-31T23:59:59.999Z", MAX_MS),
    (T0, T0),
    (0, 0),
]

INVALID_TIMES = [
    ("2026-03-01T09:30:05", "invalid RFC 3339"),  # no offset
    ("2026-03-01 09:30:05Z", "invalid RFC 3339"),
    ("2026-03-01", "invalid RFC 3339"),
    ("20260301T093005Z", "invalid RFC 3339"),
    ("2026-03-01T09:30:05+0200", "invalid RFC 3339"),
    ("2026-03-01T09:30:05+02", "invalid RFC 3339"),
    ("2026-03-01T09:30:05.Z", "invalid RFC 3339"),
    ("2026-03-01T09:30:05,5Z", "invalid RFC 3339"),
    ("2026-03-01T09:30Z", "invalid RFC 3339"),
    ("2026-13-01T09:30:05Z", "invalid RFC 3339"),
    ("2023-02-29T09:30:05Z", "invalid RFC 3339"),
    ("2026-04-31T09:30:05Z", "invalid RFC 3339"),
    ("2026-03-01T24:00:00Z", "invalid RFC 3339"),
    ("2026-03-01T09:60:05Z", "invalid RFC 3339"),
    ("2026-03-01T09:30:60Z", "invalid RFC 3339"),
    ("2026-03-01T09:30:05+24:00", "invalid RFC 3339"),
    ("0000-01-01T00:00:00Z", "invalid RFC 3339"),
    ("２026-03-01T09:30:05Z", "invalid RFC 3339"),
    ("0001-01-01T00:30:00+01:00", "out of range"),
    (10**15, "out of range"),
    ("", "invalid RFC 3339"),
    (True, "must be an RFC 3339 string or integer"),
    (1.5, "must be an RFC 3339 string or integer"),
    (None, "must be an RFC 3339 string or integer"),
]


@pytest.mark.parametrize("value,expected", VALID_TIMES)
def test_parse_time(value, expected):
    assert parse_time(value, "time") == expected


@pytest.mark.parametrize("value,problem", INVALID_TIMES)
def test_parse_time_invalid(value, problem):
    with pytest.raises(EventError) as ei:
        parse_time(value, "object.metadata.creationTimestamp")
    assert ei.value.path == "object.metadata.creationTimestamp"
    assert problem in ei.value.problem


@pytest.mark.parametrize(
    "ms,text",
    [
        (T0, "2026-03-01T09:30:05Z"),
        (T0 + 120, "2026-03-01T09:30:05.120Z"),
        (T0 + 5, "2026-03-01T09:30:05.005Z"),
        (0, "1970-01-01T00:00:00Z"),
        (-1, "1969-12-31T23:59:59.999Z"),
        (19782 * 86_400_000, "2024-02-29T00:00:00Z"),
        (MIN_MS, "0001-01-01T00:00:00Z"),
        (MAX_MS, "9999-12-31T23:59:59.999Z"),
    ],
)
def test_format_time(ms, text):
    assert format_time(ms) == text


@given(st.integers(MIN_MS, MAX_MS))
def test_time_round_trip(ms):
    assert parse_time(format_time(ms), "t") == ms


@given(st.integers(MIN_MS, MAX_MS))
def test_format_time_matches_datetime(ms):
    dt = datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=ms)
    expected = f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}T{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}"
    if ms % 1000:
        expected += f".{dt.microsecond // 1000:03d}"
    assert format_time(ms) == expected + "Z"


@given(st.integers(-23 * 60 - 59, 23 * 60 + 59), st.integers(0, 10**12))
def test_offsets_shift_time(offset_min, ms):
    base = T0 - 10**12 // 2 + ms
    local = base + offset_min * 60_000
    text = format_time(local)[:-1]
    sign = "+" if offset_min >= 0 else "-"
    hh, mm = divmod(abs(offset_min), 60)
    assert parse_time(f"{text}{sign}{hh:02d}:{mm:02d}", "t") == base


def test_parse_time_ignores_local_timezone(monkeypatch):
    monkeypatch.setenv("TZ", "Pacific/Chatham")
    if hasattr(time, "tzset"):
        time.tzset()
    try:
        assert parse_time("2026-03-01T09:30:05Z", "t") == T0
        assert format_time(T0) == "2026-03-01T09:30:05Z"
    finally:
        monkeypatch.delenv("TZ")
        if hasattr(time, "tzset"):
            time.tzset()


VALID_DURATIONS = [
    ("5m", 300_000),
    ("168h", 604_800_000),
    ("1h30m", 5_400_000),
    ("300ms", 300),
    ("0s", 0),
    ("0", 0),
    ("-0s", 0),
    ("1.5h", 5_400_000),
    ("+5s", 5000),
    (".5s", 500),
    ("5.s", 5000),
    ("1000us", 1),
    ("1000µs", 1),
    ("1000μs", 1),
    ("1000000ns", 1),
    ("1h1m1s1ms", 3_661_001),
    ("2562047h", 2562047 * 3_600_000),  # just below Go's int64 ns limit (~2562047.79h)
]

INVALID_DURATIONS = [
    ("1500us", "not a whole number of milliseconds"),
    ("1.0005s", "not a whole number of milliseconds"),
    ("0.0000001s", "not a whole number of milliseconds"),
    ("1µs", "not a whole number of milliseconds"),
    ("-5m", "negative"),
    ("2562048h", "too large"),
    ("5", "invalid duration"),
    ("", "invalid duration"),
    ("5d", "invalid duration"),
    ("1h 30m", "invalid duration"),
    (".s", "invalid duration"),
    ("h", "invalid duration"),
    ("5M", "invalid duration"),
    (5, "must be a duration string"),
    (None, "must be a duration string"),
]


@pytest.mark.parametrize("value,expected", VALID_DURATIONS)
def test_parse_duration(value, expected):
    assert parse_duration(value, "d") == expected


@pytest.mark.parametrize("value,problem", INVALID_DURATIONS)
def test_parse_duration_invalid(value, problem):
    with pytest.raises(EventError) as ei:
        parse_duration(value, "object.spec.admissionFairSharing.usageHalfLifeTime")
    assert ei.value.path == "object.spec.admissionFairSharing.usageHalfLifeTime"
    assert problem in ei.value.problem


@given(st.integers(0, 2000), st.integers(0, 59), st.integers(0, 59), st.integers(0, 999))
def test_duration_components(h, m, s, ms):
    assert parse_duration(f"{h}h{m}m{s}s{ms}ms", "d") == ((h * 60 + m) * 60 + s) * 1000 + ms
