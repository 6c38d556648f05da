"""Replay runner: event source (NDJSON file or Kafka range) → ``statemodel.driver.Driver`` → decisions.

The offline path runs the very same driver and engine as the live Kafka path, so a replay and a
live run cannot disagree.  The loop is kept tight (it is what the benchmarks measure): callbacks
are only called when given, and the cyclic garbage collector is paused while the replay runs
(``statemodel.driver.gc_paused``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from replay.ndjson import Watch
from replay.sources import open_records
from statemodel.driver import Driver, StepResult, gc_paused
from statemodel.engine import Engine
from statemodel.errors import EventError

DecisionCallback = Callable[[Any], None]
"""Called with each ``statemodel.engine.Decision``, in ``seq`` order."""

RejectCallback = Callable[[int, EventError], None]
"""Called with ``(position, error)`` for each record that fails validation (line number or Kafka offset)."""


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """Counters of one replay run.

    Attributes:
        applied: events applied by the engine during this run (the delta of ``Engine.applied``).
        rejected: events rejected by validation during this run.
        duplicates: events ignored as duplicates (repeated ``id``) during this run.
        decisions: decisions emitted during this run.
        seconds: wall time of the run in seconds (reporting only; never enters state).
        lines: non-blank input lines replayed (the event later than ``until_ms`` that ends a run is
            not one of them).
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
    """``(applied, rejected, duplicates)`` so far: the engine's counters."""
    return engine.applied, engine.rejected, engine.duplicates


StepCallback = Callable[[StepResult], None]
"""Called with each ``statemodel.driver.StepResult``, in source order."""


def run_file(
    source: str,
    engine: Engine | None = None,
    on_decision: DecisionCallback | None = None,
    on_reject: RejectCallback | None = None,
    until_ms: int | None = None,
    watch: Watch | None = None,
    on_step: StepCallback | None = None,
) -> tuple[Engine, ReplayResult]:
    """Replay an NDJSON event source through an engine (up to the first event later than
    ``until_ms``, epoch ms, when given: the state as of that moment).

    Each non-blank line goes through ``statemodel.driver.Driver.run``: a line that fails validation
    is counted by the engine as rejected and reported to ``on_reject``; it changes nothing else and
    the run continues.  Every other event is applied; its decisions go, in order, to
    ``on_decision``, and every step to ``on_step``.

    Args:
        source: NDJSON path (plain or gzip), ``"-"`` for stdin, or a ``kafka://`` range; see
            ``replay.sources``.
        engine: the engine to continue from; a fresh ``Engine()`` when ``None``.
        on_decision: optional callback, called once per decision.
        on_reject: optional callback ``(position, error)``: 1-based line number, or Kafka offset.
        watch: optional wrapper of a file's line stream (progress display), see ``replay.ndjson.open_source``.
        on_step: optional callback, called once per line with its ``StepResult``.

    Returns:
        ``(engine, result)``: the engine after the last event and the run's counters.

    Raises:
        OSError / gzip errors: the source cannot be read (the engine keeps what it
            applied so far, but no result is returned).
        Any exception from ``Engine.apply`` propagates: an engine failure is a bug,
        not a rejected event.
    """
    driver = Driver(engine)
    engine = driver.engine
    applied0, rejected0, duplicates0 = _event_counts(engine)
    n_decisions = 0
    n_lines = 0
    started = time.perf_counter()
    with gc_paused(), open_records(source, watch) as records:
        for step in driver.run(records, until_ms):
            n_lines += 1
            if on_step is not None:
                on_step(step)
            decisions = step.decisions
            if decisions:
                n_decisions += len(decisions)
                if on_decision is not None:
                    for d in decisions:
                        on_decision(d)
            elif step.rejection is not None and on_reject is not None:
                on_reject(step.position, step.rejection)
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


def event_time_bounds(source: str, cluster: str | None = None) -> tuple[int, int]:
    """``(first, last)`` event time (epoch ms) of the records of ``source`` whose ``time`` is valid
    — of ``cluster``'s records only when it is given (a record without ``cluster`` belongs to
    ``default``) — read without applying anything: what a relative time option (``-2h``, ``7d``,
    ``replay.timespec``) is relative to.  Reads the source once more; standard input cannot be.

    Raises:
        ValueError: ``source`` is standard input, or holds no record with a valid time.
        OSError / ``SourceError``: the source cannot be read.
    """
    import orjson

    from statemodel.timefmt import parse_time

    if source == "-":
        raise ValueError("a relative time needs the history's bounds: standard input cannot be read twice")
    first: int | None = None
    last: int | None = None
    with open_records(source) as records:
        for _, raw in records:
            try:
                record = orjson.loads(raw)
                if cluster is not None and record.get("cluster", "default") != cluster:
                    continue
                at = parse_time(record["time"], "time")
            except (orjson.JSONDecodeError, AttributeError, KeyError, TypeError, EventError):
                continue
            first = at if first is None or at < first else first
            last = at if last is None or at > last else last
    if first is None or last is None:
        raise ValueError(f"{source} holds no event with a valid time")
    return first, last
