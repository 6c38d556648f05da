"""Where command output goes: the Rich consoles, JSON on stdout, binary output files, and the
line that reports a rejected event."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any

import orjson
from rich.console import Console


def console() -> Console:
    """Rich console on stdout; piped output is not squeezed into 80 columns."""
    out = Console()
    return out if out.is_terminal else Console(width=160)


def err_console() -> Console:
    """Rich console on stderr (progress bars, notes); piped output gets 200 columns."""
    err = Console(stderr=True)
    return err if err.is_terminal else Console(stderr=True, width=200)


def dump_json(doc: dict) -> bytes:
    """A JSON document as the CLI prints it: indent 2, the producer's key order, trailing newline."""
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)


def print_json(doc: dict) -> None:
    """``dump_json(doc)`` on stdout."""
    sys.stdout.flush()
    sys.stdout.buffer.write(dump_json(doc))
    sys.stdout.buffer.flush()


@contextmanager
def binary_out(target: str | None) -> Iterator[IO[bytes] | None]:
    """Open ``target`` for binary writing: ``None`` → no output, ``"-"`` → stdout."""
    if target is None:
        yield None
    elif target == "-":
        sys.stdout.flush()
        out = sys.stdout.buffer
        try:
            yield out
        finally:
            out.flush()
    else:
        with open(target, "wb") as f:
            yield f


def format_reject(position: int, err: Any, unit: str = "line") -> str:
    """``rejected line N (id X): path: problem`` for an ``EventError`` (``id -`` when the id could
    not be read; ``offset N`` for a Kafka source)."""
    where = f"{err.path}: {err.problem}" if err.path else err.problem
    event_id = err.event_id if err.event_id is not None else "-"
    return f"rejected {unit} {position} (id {event_id}): {where}"


def reject_printer(source: str) -> Callable[[int, Any], Any]:
    """The ``on_reject`` callback of a replay of ``source``: prints ``format_reject`` lines on stderr."""
    from replay.sources import position_name

    unit = position_name(source)
    return lambda position, err: sys.stderr.write(format_reject(position, err, unit) + "\n")
