"""Scanning of unsigned decimal numbers, shared by the quantity and Go-duration parsers."""

from __future__ import annotations

DIGITS = frozenset("0123456789")


def scan_decimal(s: str, i: int) -> tuple[str, str, int]:
    """Read ``digits[.digits]`` of ``s`` from index ``i``.

    Returns ``(integer digits, fraction digits, index after the number)``; both digit strings are
    empty when no number starts at ``i``.  Never raises.
    """
    n = len(s)
    start = i
    while i < n and s[i] in DIGITS:
        i += 1
    int_part = s[start:i]
    frac_part = ""
    if i < n and s[i] == ".":
        i += 1
        fstart = i
        while i < n and s[i] in DIGITS:
            i += 1
        frac_part = s[fstart:i]
    return int_part, frac_part, i
