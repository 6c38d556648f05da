"""The one syntax of every time and duration option of the command line.

Durations (``--tick``, ``--snapshot-every-time``, and the relative forms below): Go durations as
Kueue writes them (``90m``, ``1h30m``, ``1.5h``, ``500ms``) plus ``d`` (24 h) and ``w`` (7 d), as
in ``7d`` or ``1d12h``; a plain number is seconds.  The value must be a whole number of milliseconds.

Moments (``--at``, ``--from``, ``--until``), one of:

- an RFC 3339 time, ``2025-01-26T17:38:22Z`` (an offset is required, as in every event);
- a date, ``2025-01-26``: its midnight UTC;
- a duration after the start of the history, ``7d`` or ``+7d`` (a plain number: seconds);
- a duration before its end, ``-2h``.

"The history" is what the command reads: the stored cluster's archived events, an event file, or the
simulated trace.  A relative moment needs it, so the caller passes the first and last event times
(``start_ms`` / ``end_ms``), or a callable that finds them only when a relative moment is given.

The result is epoch milliseconds.  Errors are ``TimeSpecError`` naming the option and the accepted
forms (the command line maps it to exit code 2).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from fractions import Fraction

from statemodel.errors import EventError
from statemodel.timefmt import MAX_MS, MIN_MS, parse_time

__all__ = ["TimeSpecError", "is_relative", "parse_moment", "parse_span"]

_UNIT_MS = {
    "ns": Fraction(1, 1_000_000), "us": Fraction(1, 1_000), "\u00b5s": Fraction(1, 1_000),
    "\u03bcs": Fraction(1, 1_000), "ms": Fraction(1), "s": Fraction(1_000), "m": Fraction(60_000),
    "h": Fraction(3_600_000), "d": Fraction(86_400_000), "w": Fraction(604_800_000),
}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h|d|w)")
_NUMBER = re.compile(r"\d+(?:\.\d*)?|\.\d+")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_MAX_CHARS = 128

MOMENT_FORMS = "an RFC 3339 time (2025-01-26T17:38:22Z), a date (2025-01-26), 7d after the start or -2h before the end"
SPAN_FORMS = "a duration such as 90m, 1h30m, 7d, 1w or a number of seconds"


class TimeSpecError(ValueError):
    """A time or duration option that none of the accepted forms reads.

    Attributes:
        option: the option's name, e.g. ``--at``.
    """

    def __init__(self, option: str, problem: str) -> None:
        super().__init__(f"{option}: {problem}")
        self.option = option


def _span_ms(text: str) -> Fraction | None:
    """The exact length of an unsigned duration in ms, or ``None`` when ``text`` is not one."""
    if _NUMBER.fullmatch(text):
        return Fraction(text) * 1000
    total, pos = Fraction(0), 0
    for match in _PART.finditer(text):
        if match.start() != pos:
            return None
        total += Fraction(match.group(1)) * _UNIT_MS[match.group(2)]
        pos = match.end()
    return total if text and pos == len(text) else None


def parse_span(text: str, option: str) -> int:
    """A duration option in milliseconds (≥ 0).

    Raises:
        TimeSpecError: not a duration (module docstring), negative, not a whole number of ms, or
            beyond the time range of events (year 1 to 9999).
    """
    s = text.strip()
    ms = _span_ms(s) if len(s) <= _MAX_CHARS else None
    if ms is None:
        raise TimeSpecError(option, f"invalid duration {text!r}: give {SPAN_FORMS}")
    if ms.denominator != 1:
        raise TimeSpecError(option, f"duration {text!r} is not a whole number of milliseconds")
    if ms > MAX_MS - MIN_MS:
        raise TimeSpecError(option, f"duration {text!r} is longer than the time range of events")
    return int(ms)


def is_relative(text: str) -> bool:
    """Whether the moment ``text`` is relative to the history (a duration, signed or not)."""
    s = text.strip()
    return _span_ms(s[1:] if s[:1] in "+-" else s) is not None if s else False


def parse_moment(text: str, option: str, bounds: tuple[int, int] | Callable[[], tuple[int, int]] | None = None
                 ) -> int:
    """A moment option in epoch milliseconds.

    Args:
        text: the option's value (module docstring for the forms).
        option: its name, for messages.
        bounds: ``(first, last)`` event time of the history in epoch ms, or a callable returning
            them (called only for a relative moment), or ``None`` when the command has no history
            to be relative to (then only absolute forms are accepted).

    Raises:
        TimeSpecError: none of the forms, a relative moment without a history, or a result outside
            the time range of events.
        Whatever ``bounds`` raises when it is called.
    """
    s = text.strip()
    if _DATE.fullmatch(s):
        s += "T00:00:00Z"
    if is_relative(s):
        if bounds is None:
            raise TimeSpecError(option, f"{text!r} is relative to a history this command does not have: "
                                        "give an RFC 3339 time or a date")
        first, last = bounds() if callable(bounds) else bounds
        if s.startswith("-"):
            at = last - parse_span(s[1:], option)
        else:
            at = first + parse_span(s.lstrip("+"), option)
        if not MIN_MS <= at <= MAX_MS:
            raise TimeSpecError(option, f"{text!r} falls outside the time range of events")
        return at
    try:
        return parse_time(s, option)
    except EventError:
        raise TimeSpecError(option, f"invalid time {text!r}: give {MOMENT_FORMS}") from None
