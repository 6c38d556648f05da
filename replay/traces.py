"""Finding and importing a trace by name (``dlrm``, ``openb``) or path, and reading ``--until``."""

from __future__ import annotations

import os
import re
from pathlib import Path

from replay.importers.dlrm import FILE as DLRM_FILE
from replay.importers.dlrm import import_dlrm
from replay.importers.jobs import ImportResult, TraceImportError
from replay.importers.mapping import import_csv, parse_iso_ms
from replay.importers.openb import PODS_FILE as OPENB_FILE
from replay.importers.openb import import_openb

__all__ = ["SHIPPED", "trace_root", "load_trace", "parse_until"]

SHIPPED = {"dlrm": "alibaba-gpu-v2025-dlrm", "openb": "alibaba-gpu-v2023-openb"}
"""Trace names → folder under the shared traces directory."""


def trace_root() -> Path:
    """The shared traces directory: ``$QUOTALEDGER_TRACES`` when set, else the first
    ``shared/data/traces`` found next to an ancestor of the working directory or of this package
    (the repository sits beside ``shared/``).

    Raises:
        TraceImportError: not found.
    """
    env = os.environ.get("QUOTALEDGER_TRACES")
    if env:
        return Path(env)
    for base in (Path.cwd().resolve(), Path(__file__).resolve().parent):
        for a in (base, *base.parents):
            candidate = a / "shared" / "data" / "traces"
            if candidate.is_dir():
                return candidate
    raise TraceImportError("cannot find the shared traces directory (shared/data/traces); set QUOTALEDGER_TRACES")


def load_trace(spec: str, mapping: str | Path | None = None) -> ImportResult:
    """Import a trace.

    Args:
        spec: ``dlrm`` or ``openb`` (the shipped traces, see :data:`SHIPPED`), or a path: a CSV
            file (read with ``mapping``), or a folder / file of one of the two Alibaba layouts.
        mapping: a mapping YAML (``replay.importers.mapping``); required for other CSV files.
            With a shipped name it replaces the dedicated importer (same jobs, no nodes).

    Raises:
        TraceImportError: the trace cannot be found or read; MappingError: invalid mapping.
    """
    path = trace_root() / SHIPPED[spec] if spec in SHIPPED else Path(spec)
    if not path.exists():
        raise TraceImportError(f"no such trace: {spec}")
    if mapping is not None:
        if path.is_dir():
            files = [p for p in (path / DLRM_FILE, path / OPENB_FILE) if p.exists()]
            if not files:
                raise TraceImportError(f"{path} is a folder: give the CSV file to read with --mapping")
            path = files[0]
        return import_csv(path, mapping)
    if (path.is_dir() and (path / DLRM_FILE).exists()) or path.name == DLRM_FILE:
        return import_dlrm(path)
    if (path.is_dir() and (path / OPENB_FILE).exists()) or path.name == OPENB_FILE:
        return import_openb(path)
    raise TraceImportError(f"{path}: not a known trace layout; give --mapping FILE to read it")


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|d|h|m|s)")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_until(text: str, start_ms: int) -> int:
    """``--until`` → epoch ms: a plain number is seconds after the trace start; a duration
    (``7d``, ``36h``, ``1d12h``, ``90m``, ``500ms``) is after the trace start; anything else is
    read as an RFC 3339 / ISO 8601 time.

    Raises:
        ValueError: none of these.
    """
    s = text.strip()
    try:
        return start_ms + round(float(s) * 1000)
    except ValueError:
        pass
    pos, total = 0, 0.0
    for m in _DURATION.finditer(s):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNIT_MS[m.group(2)]
        pos = m.end()
    if s and pos == len(s):
        return start_ms + round(total)
    return parse_iso_ms(s)
