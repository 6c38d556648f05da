"""Display helpers shared by the CLI views (presentation only; data stays in base units)."""

from __future__ import annotations

from typing import Any

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
