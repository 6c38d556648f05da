"""Times and durations as integer milliseconds (EVENTS.md "Envelope": ``time``).

Times: RFC 3339 with a mandatory offset (``Z`` or ``±HH:MM``), fractional seconds truncated to
milliseconds, or a JSON integer of milliseconds since the Unix epoch.  Durations: Go
``time.ParseDuration`` syntax (the JSON form of Kubernetes ``metav1.Duration``), as used by the
Kueue Configuration.  Parsing uses aware ``datetime`` arithmetic after an explicit shape check;
formatting is integer civil-from-days (proleptic Gregorian, after H. Hinnant).  Nothing depends on
the local timezone or on ``float``.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from functools import lru_cache

from statemodel.decimal_scan import DIGITS, scan_decimal
from statemodel.errors import EventError
from statemodel.limits import MAX_QUANTITY_CHARS

MIN_MS = -62135596800000
"""0001-01-01T00:00:00Z in ms since the epoch (smallest accepted time)."""
MAX_MS = 253402300799999
"""9999-12-31T23:59:59.999Z in ms since the epoch (largest accepted time)."""

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_ONE_MS = timedelta(milliseconds=1)


def _civil_from_days(z: int) -> tuple[int, int, int]:
    """``(year, month, day)`` of a day number counted from 1970-01-01 (proleptic Gregorian)."""
    z += 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + (3 if mp < 10 else -9)
    return y + (m <= 2), m, d


_RFC3339 = re.compile(r"\d{4}-\d\d-\d\d[Tt]\d\d:\d\d:\d\d(?:\.\d+)?(?:[Zz]|[+-]\d\d:\d\d)", re.ASCII).fullmatch
_TIMES: dict[str, int] = {}
"""Memo of valid timestamp strings → ms (bounded; cleared when full).  Streams repeat timestamps a lot."""
_TIMES_MAX = 65536


def _parse_rfc3339(s: str) -> int | str:
    """ms since epoch of an RFC 3339 timestamp with offset, or a problem string.

    The shape ``YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`` (ASCII digits) is checked by one regular
    expression, because ``datetime.fromisoformat`` alone accepts more (dates, basic format, ``,``
    fractions, other separators, naive times); the field ranges (month, day of month, hour 0..23,
    second 0..59, offset < 24h) are then checked by the C ``fromisoformat``, which also truncates
    fractions beyond microseconds.  Aware-datetime subtraction does not consult the local timezone.
    """
    ms = _TIMES.get(s)
    if ms is not None:
        return ms
    if _RFC3339(s) is None:
        return f"invalid RFC 3339 time {s!r} (need e.g. '2026-03-01T09:30:05Z')"
    try:
        dt = datetime.fromisoformat(s.upper())
    except ValueError as e:
        return f"invalid RFC 3339 time {s!r}: {e}"
    ms = (dt - _EPOCH) // _ONE_MS
    if len(_TIMES) >= _TIMES_MAX:
        _TIMES.clear()
    _TIMES[s] = ms
    return ms


def parse_time(value: object, path: str) -> int:
    """Parse an event time into integer milliseconds since the Unix epoch (UTC).

    Args:
        value: an RFC 3339 string with offset (``"2026-03-01T09:30:05Z"``,
            ``"2026-03-01T09:30:05.123+02:00"``; fractional seconds are truncated to ms; ``T``/``Z`` may be
            lower case), or a JSON integer of ms since the epoch.  ``bool``, ``float`` and timestamps without
            an offset are rejected.
        path: field path used in errors.

    Returns:
        ms since 1970-01-01T00:00:00Z, within year 0001..9999.

    Raises:
        EventError(path, problem): wrong type, longer than ``MAX_QUANTITY_CHARS``, malformed timestamp, or out
        of range.

    Semantics: RFC 3339 section 5.6 (Kubernetes ``metav1.Time`` JSON form); EVENTS.md envelope ``time``.
    """
    if type(value) is str:
        if len(value) > MAX_QUANTITY_CHARS:
            raise EventError(path, f"time too long: {len(value)} characters, at most {MAX_QUANTITY_CHARS}")
        parsed = _parse_rfc3339(value)
        if isinstance(parsed, str):
            raise EventError(path, parsed)
        ms = parsed
    elif type(value) is int:
        ms = value
    else:
        raise EventError(path, "must be an RFC 3339 string or integer milliseconds")
    if ms < MIN_MS or ms > MAX_MS:
        raise EventError(path, f"time {value!r} out of range (years 0001..9999)")
    return ms


@lru_cache(maxsize=4096)
def format_time(ms: int) -> str:
    """Format ms since the epoch as RFC 3339 UTC with ``Z``.

    Milliseconds are shown (always 3 digits) only when non-zero: ``"2026-03-01T09:30:05Z"``,
    ``"2026-03-01T09:30:05.120Z"``.  Inverse of :func:`parse_time` on ``MIN_MS..MAX_MS``.
    """
    days, rem = divmod(ms, 86_400_000)
    y, mo, d = _civil_from_days(days)
    secs, milli = divmod(rem, 1000)
    h, secs = divmod(secs, 3600)
    mi, secs = divmod(secs, 60)
    if milli:
        return f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{secs:02d}.{milli:03d}Z"
    return f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{secs:02d}Z"


# Go time.ParseDuration units, in nanoseconds.
_DURATION_UNITS = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # micro sign
    "\u03bcs": 1_000,  # Greek small letter mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_MAX_NS = 2**63 - 1


def parse_duration(value: object, path: str) -> int:
    """Parse a Go duration string (``metav1.Duration``) into integer milliseconds.

    Accepts ``"5m"``, ``"168h"``, ``"1h30m"``, ``"300ms"``, ``"0s"``, ``"0"``, ``"1.5h"``, optional leading ``+``;
    units ``ns us µs ms s m h``.

    Raises:
        EventError(path, problem): not a string, longer than ``MAX_QUANTITY_CHARS``, bad syntax, negative (Go allows it; the Kueue fields using
        durations do not), not a whole number of ms (``"1500us"``), or above Go's int64 nanosecond range.

    Semantics: Go ``time.ParseDuration``; Kueue Configuration durations (``usageHalfLifeTime``, ...).
    """
    if type(value) is not str:
        raise EventError(path, "must be a duration string (e.g. '5m')")
    if len(value) > MAX_QUANTITY_CHARS:
        raise EventError(path, f"duration too long: {len(value)} characters, at most {MAX_QUANTITY_CHARS}")
    s = value
    negative = False
    if s[:1] in ("+", "-"):
        negative = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    parsed = _duration_ns(s)
    if parsed is None:
        raise EventError(path, f"invalid duration {value!r}")
    ns, sub_ns = parsed
    if ns == 0 and not sub_ns:
        return 0
    if negative:
        raise EventError(path, f"must not be negative, got {value!r}")
    if ns > _MAX_NS:
        raise EventError(path, f"duration {value!r} too large")
    if sub_ns or ns % 1_000_000:
        raise EventError(path, f"duration {value!r} is not a whole number of milliseconds")
    return ns // 1_000_000


def _duration_ns(s: str) -> tuple[int, bool] | None:
    """``(whole nanoseconds, has a fraction of a nanosecond)`` of an unsigned Go duration, None if malformed."""
    n = len(s)
    if n == 0:
        return None
    i = 0
    total = 0
    sub_ns = False
    while i < n:
        int_part, frac_part, i = scan_decimal(s, i)
        if not int_part and not frac_part:
            return None
        ustart = i
        while i < n and s[i] not in DIGITS and s[i] != ".":
            i += 1
        unit = _DURATION_UNITS.get(s[ustart:i])
        if unit is None:
            return None
        total += int(int_part or "0") * unit
        if frac_part:
            num = int(frac_part) * unit
            scale = 10 ** len(frac_part)
            if num % scale:
                sub_ns = True
            total += num // scale
    return total, sub_ns


def format_duration(ms: int) -> str:
    """Go ``time.Duration.String`` of ``ms`` milliseconds: ``"168h0m0s"``, ``"5m0s"``, ``"1.5s"``, ``"300ms"``, ``"0s"``."""
    if ms == 0:
        return "0s"
    sign = "-" if ms < 0 else ""
    ms = abs(ms)
    if ms < 1000:
        return f"{sign}{ms}ms"
    hours, rem = divmod(ms, 3_600_000)
    minutes, rem = divmod(rem, 60_000)
    seconds, milli = divmod(rem, 1000)
    secs = f"{seconds}.{milli:03d}".rstrip("0") if milli else str(seconds)
    if hours:
        return f"{sign}{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{sign}{minutes}m{secs}s"
    return f"{sign}{secs}s"
