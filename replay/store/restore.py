"""Point-in-time state from the SQL store: the nearest snapshot at or before a moment plus the
archived tail (DESIGN.md "Replay": rebuild from the nearest snapshot ≤ the target plus the tail).

A moment is either a time (``at_ms``: every archived event of the cluster up to the first one
later than that time, as ``replay.runner.run_file(until_ms=...)`` reads a file) or a decision
sequence number (``seq``: every event up to and including the one that caused decision ``seq``).
Both resolve to an *end position* (exclusive) in the cluster's archived event order; the restored
snapshot is the last one whose position is at most that, and the events in between are re-decoded
from their stored payloads and fed to the driver (``statemodel.driver``; rejected ones counted as
rejected, as when they arrived).
"""

from __future__ import annotations

from collections.abc import Iterator

import sqlalchemy as sa

from replay.store.db import SinkError, archived_event, create_db_engine
from replay.store.archive import STATE_ENCODING
from statemodel import sql_schema as s
from statemodel.driver import Driver, gc_paused
from statemodel.engine import Engine
from statemodel.errors import EventError
from statemodel.events.envelope import Event
from statemodel.snapshot import SnapshotError
from statemodel.snapshot import load as load_snapshot


def end_position(conn: sa.Connection, cluster: str, at_ms: int | None, seq: int | None) -> int:
    """The exclusive end position in ``cluster``'s archive for a time or a decision seq.

    Raises:
        SinkError: the cluster has no archived events, or no decision ``seq``.
    """
    total = conn.execute(sa.select(sa.func.count()).select_from(s.events).where(s.events.c.cluster == cluster)
                         ).scalar_one()
    if not total:
        raise SinkError(f"the database holds no events of cluster {cluster!r}")
    if seq is not None:
        cause = conn.execute(sa.select(s.decisions.c.cause_position).where(
            s.decisions.c.cluster == cluster, s.decisions.c.seq == seq)).scalar_one_or_none()
        if cause is None:
            raise SinkError(f"cluster {cluster!r} has no decision {seq}")
        return cause + 1
    if at_ms is not None:
        later = conn.execute(sa.select(sa.func.min(s.events.c.position)).where(
            s.events.c.cluster == cluster, s.events.c.event_time_ms > at_ms)).scalar_one()
        return total if later is None else later
    return total


def history_bounds(conn: sa.Connection, cluster: str) -> tuple[int, int]:
    """``(first, last)`` event time (epoch ms) of ``cluster``'s archived events: what a relative time
    option (``-2h``, ``7d``; ``replay.timespec``) is relative to.

    Raises:
        SinkError: the cluster has no archived events.
    """
    e = s.events.c
    first, last = conn.execute(sa.select(sa.func.min(e.event_time_ms), sa.func.max(e.event_time_ms)).where(
        e.cluster == cluster)).one()
    if first is None:
        raise SinkError(f"the database holds no events of cluster {cluster!r}")
    return int(first), int(last)


def stored_cluster(conn: sa.Connection, cluster: str | None) -> str:
    """``cluster`` itself, or — when ``None`` — the only cluster the archive holds.

    Raises:
        SinkError: ``None`` was given and the archive holds no cluster or several (their names are listed).
    """
    if cluster is not None:
        return cluster
    names = sorted(conn.execute(sa.select(s.events.c.cluster).distinct()).scalars())
    if len(names) != 1:
        listed = ", ".join(names) if names else "none"
        raise SinkError(f"give --cluster: the database holds {len(names)} clusters ({listed})")
    return names[0]


def restore(conn: sa.Connection, cluster: str, end: int) -> tuple[Engine, int]:
    """The engine of ``cluster`` after its first ``end`` archived events: the last snapshot at or
    before ``end`` that this engine can restore, plus the archived events after it.  Returns
    ``(engine, snapshot position)`` (0 when rebuilt from the first event).

    A snapshot this engine cannot read — written by another ``engine_version``, or of a format or
    component version it has no upgrade for (``statemodel.snapshot.SnapshotError``) — is passed
    over, never misread: the next older one is tried, and without any the state is rebuilt from the
    archived events alone (slower, same result).
    """
    with gc_paused():  # restoring allocates millions of objects and frees none (see statemodel.driver)
        return _restore(conn, cluster, end)


def usable_snapshot(conn: sa.Connection, cluster: str, end: int) -> tuple[Engine, int] | None:
    """The restored engine and position of the last snapshot of ``cluster`` at or before ``end`` that
    this engine can read, or ``None`` (snapshots are read newest first, one at a time)."""
    rows = conn.execute(sa.select(s.snapshots.c.id, s.snapshots.c.position).where(
        s.snapshots.c.cluster == cluster, s.snapshots.c.position <= end,
        s.snapshots.c.state_encoding == STATE_ENCODING,
    ).order_by(s.snapshots.c.position.desc(), s.snapshots.c.id.desc())).all()
    for snapshot_id, position in rows:
        blob = conn.execute(sa.select(s.snapshots.c.state).where(s.snapshots.c.id == snapshot_id)).scalar_one()
        try:
            return load_snapshot(blob), position
        except SnapshotError:
            continue
    return None


def _restore(conn: sa.Connection, cluster: str, end: int) -> tuple[Engine, int]:
    found = usable_snapshot(conn, cluster, end)
    engine, start = found if found is not None else (Engine(), 0)
    driver = Driver(engine)
    for position, (event, error, _) in enumerate(archived_events(conn, cluster, start, end), start):
        driver.step(position, error if event is None else event, cluster=cluster)  # type: ignore[arg-type]
    return engine, start


def archived_events(conn: sa.Connection, cluster: str, start: int, end: int | None = None
                    ) -> Iterator[tuple[Event | None, EventError | None, str | None]]:
    """``(event, None, id)`` or — for one rejected when it arrived — ``(None, error, id)`` for each
    archived event of ``cluster`` at positions ``start <= position < end`` (to the last when ``end``
    is ``None``), in position order, re-decoded from the stored payloads."""
    e = s.events.c
    where = [e.cluster == cluster, e.position >= start]
    if end is not None:
        where.append(e.position < end)
    rows = conn.execution_options(yield_per=2000).execute(
        sa.select(e.payload, e.reason, e.event_id).where(*where).order_by(e.position))
    for payload, reason, event_id in rows:
        event, error = archived_event(payload, reason, event_id)
        yield event, error, event_id


def engine_at(url: str, cluster: str, at_ms: int | None = None, seq: int | None = None) -> tuple[Engine, int, int]:
    """Rebuild the engine of ``cluster`` at a past moment (see the module docstring).

    Returns ``(engine, end position, position of the snapshot used)`` (0 when replayed from scratch).

    Raises:
        SinkError: unknown cluster or decision.
    """
    db = create_db_engine(url, read_only=True)
    try:
        with db.connect() as conn:
            end = end_position(conn, cluster, at_ms, seq)
            engine, start = restore(conn, cluster, end)
    finally:
        db.dispose()
    return engine, end, start
