"""The driver: decode → apply → ``StepResult``, the one loop that feeds the engine.

Every path that moves an engine forward goes through a ``Driver``: the file replay
(``replay.runner``), the SQL sink (``replay.sql_sink``), the Kafka ingest worker
(``streams.ingest_store``), ``verify``, point-in-time restore (``replay.store.restore``), what-if
(``replay.whatif``), the closed-loop simulator (``replay.sim.simulator``) and the test scenario
builder.  A path supplies records (or records it decoded itself: Kafka values with their own checks,
payloads re-read from the SQL archive, event dicts) and gets back, per record, a frozen
``StepResult``: what was decoded, what the engine decided, why a record was rejected, and the state
changes the projections need.  What a path does with a step — SQL rows (``replay.store.archive``),
a decision topic, a report — is the path's own business; the driver does no I/O.

So the live and the offline paths cannot disagree on how a record is decoded, when it is rejected
or duplicate, or what it decided: that is decided here, once (DESIGN.md "Data flow").

GC note (``gc_paused``): the cyclic garbage collector is paused while a path feeds an engine.  The
engine frees almost everything by reference counting (its structures hold no cycles that become
garbage during a run), while the collector's full passes over hundreds of thousands of live
workload records cost about a fifth of a replay's time and grow with history length.  Pausing it
changes no result.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import NamedTuple

from statemodel.decisions import Decision
from statemodel.engine import Engine
from statemodel.errors import EventError
from statemodel.events.decode import decode_event
from statemodel.events.envelope import Event
from statemodel.objects import Workload

APPLIED = "applied"
DUPLICATE = "duplicate"
REJECTED = "rejected"
"""A step's ``status``: the values of the ``events.status`` column of the SQL archive."""


class StepResult(NamedTuple):
    """What one record did to the engine (built by ``Driver.step``; immutable).

    A ``NamedTuple`` rather than a frozen dataclass: one is built per event on every path, and a
    tuple is built in about a third of the time (measured: 0.5 µs against 2.2 µs); read it by name.

    Attributes:
        position: where the record was in its source: the 1-based line of an NDJSON file, the Kafka
            offset, the position in a cluster's SQL archive (the path says which).
        record: the record's bytes as received (stored verbatim in the archive), ``None`` when the
            path had no bytes (an event built in memory, a payload re-read from the archive).
        cluster: the cluster the record belongs to: the event's, or for a rejected record the one
            the path read from it (``None`` when unknown).
        event: the validated event, ``None`` when the record was rejected.
        decisions: the decisions the event caused, in ``seq`` order (empty for a duplicate).
        rejection: why the record was rejected (``EventError``: field path and problem), else ``None``.
        duplicate: the event's id had been seen in its cluster: archived, not applied.
        clock_before_ms / clock_ms: the cluster's engine clock (epoch ms) before and after the step;
            ``None`` before the cluster's first event, and both ``None`` for a rejected record.
        chain: the cluster's hash-chain value after the step (``Engine.chains``), ``None`` when
            the cluster has no state.
    """

    position: int
    record: bytes | None
    cluster: str | None
    event: Event | None
    decisions: tuple[Decision, ...]
    rejection: EventError | None
    duplicate: bool
    clock_before_ms: int | None
    clock_ms: int | None
    chain: bytes | None

    @property
    def status(self) -> str:
        """``"applied"``, ``"duplicate"`` or ``"rejected"`` (``APPLIED`` / ``DUPLICATE`` / ``REJECTED``)."""
        if self.event is None:
            return REJECTED
        return DUPLICATE if self.duplicate else APPLIED

    def workload_keys(self) -> set[str]:
        """Keys (``namespace/name``) of the workloads whose projection rows this step may have changed:
        those the event names (inner events of a ``Batch`` too) and those its decisions are about;
        empty for a rejected or duplicate record, which change nothing."""
        keys: set[str] = set()
        if self.event is None or self.duplicate:
            return keys
        _add_workload_keys(self.event, keys)
        for d in self.decisions:
            keys.add(d.workload)
        return keys


def _add_workload_keys(event: Event, keys: set[str]) -> None:
    """Add to ``keys`` the workload keys ``event`` names (its workload, its object, its reference)."""
    if event.workload is not None:
        keys.add(event.workload)
    obj = event.obj
    if type(obj) is Workload:
        keys.add(obj.key)
    ref = event.ref
    if ref is not None and ref.kind == "Workload":
        keys.add(f"{ref.namespace}/{ref.name}")
    for inner in event.events:
        _add_workload_keys(inner, keys)


def decode_line(record: bytes) -> Event | EventError:
    """The event of one JSON text (an NDJSON line, a Kafka value), or the ``EventError`` that rejects
    it (``statemodel.events.decode.decode_event``, returned instead of raised)."""
    try:
        return decode_event(record)
    except EventError as err:
        return err.detached()


def decoded_lines(records: Iterable[tuple[int, bytes]]) -> Iterator[tuple[int, bytes, Event | EventError]]:
    """``(position, record, event or the EventError that rejects it)`` for every ``(position, record)``
    of a source (``decode_line``), without applying anything."""
    for position, record in records:
        yield position, record, decode_line(record)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while an engine is fed, dumped or restored (module
    docstring); it is re-enabled on exit when it was enabled on entry."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class Driver:
    """Feeds one ``Engine`` (any number of clusters) and reports each step as a ``StepResult``.

    ``engine``: the engine to continue from (a restored snapshot, a fork); a fresh one when ``None``.
    The driver holds no other state: a path may drop it and build another on the same engine.
    """

    def __init__(self, engine: Engine | None = None) -> None:
        self.engine = engine if engine is not None else Engine()

    def step(self, position: int, item: Event | EventError, record: bytes | None = None,
             cluster: str | None = None) -> StepResult:
        """Apply one decoded record: an ``Event`` goes to ``Engine.apply``, an ``EventError`` is counted
        with ``Engine.reject`` (it changes nothing else).

        Args:
            position: the record's position in its source (``StepResult.position``).
            item: the decoded event, or the error that rejects the record.
            record: the record's bytes as received, when the path has them.
            cluster: for a rejected record, the cluster the path read from it (ignored for an event:
                the event names its own).

        Raises:
            Any exception of ``Engine.apply`` but ``EventError`` (a rejection by the cluster's state)
            propagates: an engine failure is a bug, not a rejected record.
        """
        engine = self.engine
        if isinstance(item, EventError):
            engine.reject(item.event_id, item)
            return StepResult(position, record, cluster, None, (), item, False, None, None, None)
        name = item.cluster
        state = engine.clusters.get(name)
        clock_before = state.clock_ms if state is not None else None
        applied = engine.applied
        try:
            decisions = engine.apply(item)
        except EventError as err:  # refused by the cluster's state (a webhook rule): a rejection
            err = err.detached()
            err.event_id = item.id
            engine.reject(item.id, err)
            return StepResult(position, record, name, None, (), err, False, None, None, None)
        if state is None:
            state = engine.clusters[name]
        return StepResult(position, record, name, item, tuple(decisions) if decisions else (), None,
                          engine.applied == applied, clock_before, state.clock_ms, engine.chains[name])

    def feed(self, position: int, record: bytes) -> StepResult:
        """Decode one record (``decode_line``) and ``step`` it."""
        return self.step(position, decode_line(record), record)

    def run(self, records: Iterable[tuple[int, bytes]], until_ms: int | None = None) -> Iterator[StepResult]:
        """``feed`` every ``(position, record)`` of a source, in order, yielding each step.

        ``until_ms`` (epoch ms): stop before the first valid event later than that time (the state as
        of that moment; records rejected before it are still counted).
        """
        step = self.step
        decode = decode_event
        for position, record in records:
            try:
                item = decode(record)
            except EventError as err:
                yield step(position, err.detached(), record)
                continue
            if until_ms is not None and item.time_ms > until_ms:
                return
            yield step(position, item, record)
