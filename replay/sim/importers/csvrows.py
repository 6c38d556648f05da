"""CSV reading shared by the importers: rows as dicts with their physical line numbers."""

from __future__ import annotations

import csv
import gzip
from collections.abc import Iterator
from pathlib import Path

from collections.abc import Callable

from replay.sim.importers.jobs import BadRow, Job, TraceImportError, bad_row_summary, slug


def iter_rows(path: str | Path, required: tuple[str, ...] = (), delimiter: str = ",") -> Iterator[tuple[int, dict[str, str]]]:
    """Yield ``(line, row)`` for every data row of a CSV file with a header line (gzip-compressed
    when the name ends in ``.gz``).

    ``line`` is the 1-based physical line where the row ends (the header is line 1, so the first
    data row is line 2; a quoted field spanning lines counts every line).  Values are the raw
    strings; a row with fewer fields than the header has ``""`` for the missing ones.

    Raises:
        TraceImportError: the file cannot be opened, is empty, or its header lacks a ``required``
            column.
    """
    try:
        if str(path).endswith(".gz"):
            f = gzip.open(path, "rt", newline="", encoding="utf-8")
        else:
            f = open(path, newline="", encoding="utf-8")
    except OSError as exc:
        raise TraceImportError(f"cannot read {path}: {exc}") from exc
    with f:
        reader = csv.reader(f, delimiter=delimiter)
        header = next(reader, None)
        if not header:
            raise TraceImportError(f"{path}: empty file (no header line)")
        header = [h.strip() for h in header]
        missing = [c for c in required if c not in header]
        if missing:
            raise TraceImportError(f"{path}: header has no column {', '.join(missing)}")
        width = len(header)
        for values in reader:
            if not values:
                continue
            if len(values) < width:
                values = values + [""] * (width - len(values))
            yield reader.line_num, dict(zip(header, values))


def read_jobs(path: str | Path, required: tuple[str, ...], read_row: Callable[[int, dict[str, str]], Job],
              id_column: str) -> tuple[list[Job], list[BadRow]]:
    """Read every row of a trace CSV into jobs with ``read_row(line, row)``.

    A row ``read_row`` rejects (``ValueError``) or whose id repeats an earlier one becomes a
    ``BadRow`` with its line number — reported, never silently dropped.

    Raises:
        TraceImportError: unreadable file, missing column, or no readable row at all.
    """
    jobs: list[Job] = []
    bad: list[BadRow] = []
    seen: dict[str, int] = {}
    for line, row in iter_rows(path, required):
        try:
            job = read_row(line, row)
            key = slug(job.id)
        except ValueError as exc:
            bad.append(BadRow(line, str(exc)))
            continue
        if key in seen:
            bad.append(BadRow(line, f"{id_column}: duplicate id {job.id!r} (first on line {seen[key]})"))
            continue
        seen[key] = line
        jobs.append(job)
    if not jobs:
        raise TraceImportError(f"{path}: no readable row: {bad_row_summary(bad)}")
    return jobs, bad
