"""NDJSON event sources: one event per line, from a file (plain or gzip) or stdin.

Lines are handed out as raw ``bytes`` (``orjson`` decodes bytes directly), with
their 1-based line number in the source, so a rejected event can be reported as
"line N".  Blank lines (only whitespace) are skipped but still counted.

No line is held whole when it is longer than an event may be (``statemodel.limits.MAX_EVENT_BYTES``,
4 MiB, not counting the line break): at most that many bytes plus one are read at a time
(``bounded_lines``); of a longer line only the first ``replay.store.sanitize.OVERSIZED_RAW_BYTES``
are kept, the rest is skipped in chunks of ``SKIP_CHUNK`` bytes up to the next newline, counted,
and the line is handed on as a ``statemodel.events.oversized.OversizedRecord`` (those first bytes
and the full size), which the decoder rejects as too large and ``dead_letters.raw`` stores as is.
So reading a file costs at most about 4 MiB whatever its lines, and the run carries on with the
next line.
"""

from __future__ import annotations

import gzip
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import BinaryIO

from replay.store.sanitize import OVERSIZED_RAW_BYTES
from statemodel.events.oversized import OversizedRecord
from statemodel.limits import MAX_EVENT_BYTES

Watch = Callable[[Iterable[bytes], BinaryIO], Iterable[bytes]]
"""``watch(lines, raw)`` → the lines to read instead: a progress display wraps the line stream and
reads the position of ``raw`` (the file itself, before any gzip decoding)."""

GZIP_MAGIC = b"\x1f\x8b"
SKIP_CHUNK = 1 << 20
"""Bytes read at a time while skipping the rest of an over-long line."""
_BREAKS = b"\r\n"


def _open(source: str) -> tuple[BinaryIO, list[BinaryIO]]:
    """Open ``source`` for binary reading; returns ``(stream, streams_to_close)`` (the last one is
    the file itself for a path)."""
    if source == "-":
        stdin: BinaryIO = sys.stdin.buffer
        head = stdin.peek(2)[:2] if hasattr(stdin, "peek") else b""
        if head == GZIP_MAGIC:
            gz = gzip.GzipFile(fileobj=stdin, mode="rb")
            return gz, [gz]  # type: ignore[list-item,return-value]
        return stdin, []
    raw = open(source, "rb")
    try:
        head = raw.read(2)
        raw.seek(0)
    except BaseException:
        raw.close()
        raise
    if source.endswith(".gz") or head == GZIP_MAGIC:
        gz = gzip.GzipFile(fileobj=raw, mode="rb")
        return gz, [gz, raw]  # type: ignore[list-item,return-value]
    return raw, [raw]


def bounded_lines(stream: BinaryIO, limit: int = MAX_EVENT_BYTES) -> Iterator[bytes]:
    """The raw lines of ``stream`` (with their ``\\n``, as iterating it would give), none held whole
    when longer than ``limit`` bytes without its line break (module docstring).

    Such a line is yielded as an ``OversizedRecord``: its first ``OVERSIZED_RAW_BYTES`` bytes and its
    size without the trailing ``\\r`` / ``\\n`` characters (the size the decoder would have
    measured on the whole line).  Two long lines are what they would be read whole: one whose first
    ``limit + 1`` bytes are followed only by line break characters is no longer than ``limit`` once
    stripped (yielded stripped), one of only whitespace is blank (yielded as ``b"\\n"``).

    Raises:
        OSError / gzip errors: reading ``stream`` failed.
    """
    readline = stream.readline
    while True:
        line = readline(limit + 1)
        if len(line) <= limit or line[-1:] == b"\n":
            if not line:
                return
            yield line
            continue
        size = len(line)
        breaks = size - len(line.rstrip(_BREAKS))  # trailing line break characters so far
        blank = line.isspace()
        ended = False
        while not ended:
            chunk = readline(SKIP_CHUNK)
            if not chunk:
                break
            size += len(chunk)
            kept = len(chunk.rstrip(_BREAKS))
            breaks = breaks + len(chunk) if kept == 0 else len(chunk) - kept
            blank = blank and chunk.isspace()
            ended = chunk[-1:] == b"\n"
        content = size - breaks
        if blank:
            yield b"\n"  # only whitespace: a blank line, skipped by ``lines_of`` as any other
        elif content <= limit:
            yield line[:content]
        else:
            yield OversizedRecord(line[:OVERSIZED_RAW_BYTES], content)


@contextmanager
def open_source(source: str, watch: Watch | None = None) -> Iterator[Iterable[bytes]]:
    """Open an NDJSON source for binary, line-wise reading (gzip-aware); closes it on exit.

    Args:
        source: a file path, or ``"-"`` for standard input.  Gzip is detected by the
            ``.gz`` suffix or the magic bytes ``1f 8b`` (stdin: when it can be peeked).

    Yields:
        the raw lines, including their ``\\n``, none held whole when longer than an event may be
        (``bounded_lines``).  Standard input itself is never closed.  With ``watch`` (files only),
        what it returns for ``(lines, file)`` instead.

    Raises:
        OSError: the file cannot be opened.
    """
    stream, to_close = _open(source)
    try:
        lines = bounded_lines(stream)
        yield watch(lines, to_close[-1]) if watch is not None and source != "-" else lines
    finally:
        for s in to_close:
            s.close()


def lines_of(stream: Iterable[bytes]) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line_number, line)`` for every non-blank line of an open NDJSON stream.

    ``line_number`` is 1-based and counts every line, blank ones included; ``line`` is the raw
    bytes with the trailing ``\\n`` / ``\\r\\n`` removed (an ``OversizedRecord`` of
    ``bounded_lines`` is passed on as it is).  Lines that are empty or only whitespace are skipped.
    """
    n = 0
    for line in stream:
        n += 1
        if type(line) is OversizedRecord:
            yield n, line
            continue
        line = line.rstrip(b"\r\n")
        if not line or line.isspace():
            continue
        yield n, line


def iter_lines(source: str) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line_number, line)`` for every non-blank line of an NDJSON source (``lines_of``).

    Args:
        source: a file path, or ``"-"`` for standard input (read as binary).  A file
            is read as gzip when its name ends with ``.gz`` or its content starts
            with the gzip magic bytes ``1f 8b`` (stdin too, when it can be peeked).

    Raises:
        OSError: the file cannot be opened or read (``FileNotFoundError`` …).
        gzip.BadGzipFile / EOFError: a gzip stream is corrupt or truncated.
    """
    with open_source(source) as stream:
        yield from lines_of(stream)
