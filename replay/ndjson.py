"""NDJSON event sources: one event per line, from a file (plain or gzip) or stdin.

Lines are handed out as raw ``bytes`` (``orjson`` decodes bytes directly), with
their 1-based line number in the source, so a rejected event can be reported as
"line N".  Blank lines (only whitespace) are skipped but still counted.
"""

from __future__ import annotations

import gzip
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import BinaryIO

Watch = Callable[[BinaryIO, BinaryIO], Iterable[bytes]]
"""``watch(lines, raw)`` → the lines to read instead: a progress display wraps the line stream and
reads the position of ``raw`` (the file itself, before any gzip decoding)."""

GZIP_MAGIC = b"\x1f\x8b"


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


@contextmanager
def open_source(source: str, watch: Watch | None = None) -> Iterator[BinaryIO]:
    """Open an NDJSON source for binary, line-wise reading (gzip-aware); closes it on exit.

    Args:
        source: a file path, or ``"-"`` for standard input.  Gzip is detected by the
            ``.gz`` suffix or the magic bytes ``1f 8b`` (stdin: when it can be peeked).

    Yields:
        a binary stream; iterating it yields raw lines including their ``\\n``.
        Standard input itself is never closed.  With ``watch`` (files only), what it returns
        for ``(stream, file)`` instead.

    Raises:
        OSError: the file cannot be opened.
    """
    stream, to_close = _open(source)
    try:
        yield watch(stream, to_close[-1]) if watch is not None and source != "-" else stream  # type: ignore[misc]
    finally:
        for s in to_close:
            s.close()


def lines_of(stream: Iterable[bytes]) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line_number, line)`` for every non-blank line of an open NDJSON stream.

    ``line_number`` is 1-based and counts every line, blank ones included; ``line`` is the raw
    bytes with the trailing ``\\n`` / ``\\r\\n`` removed.  Lines that are empty or only whitespace
    are skipped.
    """
    n = 0
    for line in stream:
        n += 1
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
