"""Display helpers shared by the CLI views (presentation only; data stays in base units)."""

from __future__ import annotations

from typing import Any

from rich.console import Console

_BINARY_SUFFIXES = ((1 << 40, "Ti"), (1 << 30, "Gi"), (1 << 20, "Mi"), (1 << 10, "Ki"))


def qty(resource: str, value: Any) -> str:
    """Human form of a base-unit quantity: cpu millicores as cores or ``m``, byte-sized resources with
    binary suffixes, others as counts; ``-`` for ``None``."""
    if not isinstance(value, int):
        return "-" if value is None else str(value)
    if resource == "cpu":
        return str(value // 1000) if value % 1000 == 0 else f"{value}m"
    if "memory" in resource or "storage" in resource:
        for factor, suffix in _BINARY_SUFFIXES:
            if value and value % factor == 0:
                return f"{value // factor}{suffix}"
    return str(value)


_SI_SUFFIXES = ((10**12, "T"), (10**9, "G"), (10**6, "M"), (10**3, "k"))


def approx_qty(resource: str, value: float | None) -> str:
    """Human form of an approximate amount in Kueue's score units (cpu in cores, byte-sized resources
    in bytes, others counted), three significant digits: ``2.46Pi`` bytes, ``41.3k`` cores; ``-``
    for ``None``.  For display only (decayed usage, scores): exact amounts use :func:`qty`."""
    if value is None:
        return "-"
    suffixes = ((1 << 50, "Pi"),) + _BINARY_SUFFIXES if "memory" in resource or "storage" in resource else _SI_SUFFIXES
    for factor, suffix in suffixes:
        if abs(value) >= factor:
            return _three_digits(value / factor) + suffix
    return _three_digits(value)


def _three_digits(x: float) -> str:
    """Three significant digits without an exponent (``999.7`` → ``1000``, not ``1e+03``)."""
    text = f"{x:.3g}"
    return f"{x:.0f}" if "e" in text else text


def print_columns(console: Console, title: str, headers: list[str], rows: list[list[str]],
                  right: frozenset[str] = frozenset()) -> None:
    """A title line, then ``headers`` and ``rows`` as plain space-padded columns (two spaces apart,
    the headers in ``right`` right-aligned), as ``kubectl get`` and ``sacct`` print: one line per
    row, never wrapped, so a listing of thousands of workloads prints in linear time and pipes into
    ``grep``/``awk`` cleanly.  ``rows`` hold strings, one per header."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            if len(cell) > widths[i]:
                widths[i] = len(cell)
    aligned = [(w, h in right) for w, h in zip(widths, headers)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if r else c.ljust(w) for c, (w, r) in zip(cells, aligned)).rstrip()

    out = [title, line(headers)]
    out.extend(line(row) for row in rows)
    console.file.write("\n".join(out) + "\n")
