"""Replay runner: event source (NDJSON file or Kafka range) → ``decode_event`` → ``Engine.apply`` → decisions.

The offline path runs the very same ``statemodel.engine.Engine`` as the live
Kafka path, so a replay and a live run cannot disagree.  The loop is kept
tight (it is what the benchmarks measure): bound methods are hoisted out of the
loop and the decision callback is only called when one is given.

GC note: the cyclic garbage collector is paused while a replay runs.  The engine
frees almost everything by reference counting (its structures hold no cycles that
become garbage during a run), while the collector's full passes over hundreds of
thousands of live workload records cost about a fifth of the run time and grow
with history length.  It is re-enabled when the replay ends.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from replay.ndjson import Watch
from replay.sources import open_records
from statemodel.engine import Engine
from statemodel.errors import EventError
from statemodel.events.envelope import Event
from statemodel.events.decode import decode_event

DecisionCallback = Callable[[Any], None]
"""Called with each ``statemodel.engine.Decision``, in ``seq`` order."""

RejectCallback = Callable[[int, EventError], None]
"""Called with ``(position, error)`` for each record that fails validation (line number or Kafka offset)."""


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """Counters of one replay run.

    Attributes:
        applied: events applied by the engine during this run (engine's own count,
            ``state()["events"]["applied"]`` delta).
        rejected: events rejected by validation during this run.
        duplicates: events ignored as duplicates (repeated ``id``) during this run.
        decisions: decisions emitted during this run.
        seconds: wall time of the run in seconds (reporting only; never enters state).
        lines: non-blank input lines read.
    """

    applied: int
    rejected: int
    duplicates: int
    decisions: int
    seconds: float
    lines: int = 0

    @property
    def events_per_second(self) -> float:
        """Input lines processed per wall-clock second (``0.0`` for an empty or instant run)."""
        return self.lines / self.seconds if self.seconds > 0 else 0.0


def _event_counts(engine: Engine) -> tuple[int, int, int]:
    """``(applied, rejected, duplicates)`` so far: the engine's counters, else its state JSON."""
    try:
        return engine.applied, engine.rejected, engine.duplicates  # type: ignore[attr-defined]
    except AttributeError:
        ev = engine.state()["events"]
        return ev["applied"], ev["rejected"], ev["duplicates"]


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for a replay (see the GC note above); restores it after."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def decoded_lines(records: Iterable[tuple[int, bytes]]) -> Iterator[tuple[int, bytes, Event | EventError]]:
    """``(position, raw record, event or the EventError that rejects it)`` for every record of a
    source (``replay.sources.open_records``: line numbers of a file, offsets of a Kafka range)."""
    decode = decode_event
    for position, line in records:
        try:
            yield position, line, decode(line)
        except EventError as err:
            yield position, line, err


def run_file(
    source: str,
    engine: Engine | None = None,
    on_decision: DecisionCallback | None = None,
    on_reject: RejectCallback | None = None,
    until_ms: int | None = None,
    watch: Watch | None = None,
) -> tuple[Engine, ReplayResult]:
    """Replay an NDJSON event source through an engine (up to the first event later than
    ``until_ms``, epoch ms, when given: the state as of that moment).

    Each non-blank line is decoded with ``statemodel.events.decode_event``.  A line
    that raises ``EventError`` is counted with ``engine.reject(error.event_id, error)``
    and reported to ``on_reject``; it changes nothing else and the run continues.
    Every other event goes to ``engine.apply``; its decisions go, in order, to
    ``on_decision``.

    Args:
        source: NDJSON path (plain or gzip), ``"-"`` for stdin, or a ``kafka://`` range; see
            ``replay.sources``.
        engine: the engine to continue from; a fresh ``Engine()`` when ``None``.
        on_decision: optional callback, called once per decision.
        on_reject: optional callback ``(position, error)``: 1-based line number, or Kafka offset.
        watch: optional wrapper of a file's line stream (progress display), see ``replay.ndjson.open_source``.

    Returns:
        ``(engine, result)``: the engine after the last event and the run's counters.

    Raises:
        OSError / gzip errors: the source cannot be read (the engine keeps what it
            applied so far, but no result is returned).
        Any exception from ``Engine.apply`` propagates: an engine failure is a bug,
        not a rejected event.
    """
    if engine is None:
        engine = Engine()
    applied0, rejected0, duplicates0 = _event_counts(engine)
    apply = engine.apply
    reject = engine.reject
    n_decisions = 0
    n_lines = 0
    started = time.perf_counter()
    with gc_paused(), open_records(source, watch) as records:
        for line_no, _, item in decoded_lines(records):
            n_lines += 1
            if isinstance(item, EventError):
                reject(item.event_id, item)
                if on_reject is not None:
                    on_reject(line_no, item)
                continue
            if until_ms is not None and item.time_ms > until_ms:
                break
            decisions = apply(item)
            if decisions:
                n_decisions += len(decisions)
                if on_decision is not None:
                    for d in decisions:
                        on_decision(d)
    seconds = time.perf_counter() - started
    applied1, rejected1, duplicates1 = _event_counts(engine)
    return engine, ReplayResult(
        applied=applied1 - applied0,
        rejected=rejected1 - rejected0,
        duplicates=duplicates1 - duplicates0,
        decisions=n_decisions,
        seconds=seconds,
        lines=n_lines,
    )
