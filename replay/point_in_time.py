"""Point-in-time state from the SQL store: the nearest snapshot at or before a moment plus the
archived tail (DESIGN.md "Replay": rebuild from the nearest snapshot ≤ the target plus the tail).

A moment is either a time (``at_ms``: every archived event of the cluster up to the first one
later than that time, as ``replay.runner.run_file(until_ms=...)`` reads a file) or a decision
sequence number (``seq``: every event up to and including the one that caused decision ``seq``).
Both resolve to an *end position* (exclusive) in the cluster's archived event order; the restored
snapshot is the last one whose position is at most that, and the events in between are re-decoded
from their stored payloads and applied (rejected ones counted as rejected, as when they arrived).
"""

from __future__ import annotations

import sqlalchemy as sa

from replay.sql_db import SinkError, archived_event, create_db_engine
from replay.sql_archive import STATE_ENCODING
from statemodel import sql_schema as s
from statemodel.engine import Engine
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


def restore(conn: sa.Connection, cluster: str, end: int) -> tuple[Engine, int]:
    """The engine of ``cluster`` after its first ``end`` archived events: the newest snapshot at or
    before ``end`` plus the archived events after it.  Returns ``(engine, position of the snapshot
    used)`` (0 when replayed from scratch).

    Raises:
        SinkError: a stored snapshot this engine cannot restore.
    """
    snap = conn.execute(sa.select(s.snapshots.c.position, s.snapshots.c.state).where(
        s.snapshots.c.cluster == cluster, s.snapshots.c.position <= end,
        s.snapshots.c.state_encoding == STATE_ENCODING,
    ).order_by(s.snapshots.c.position.desc(), s.snapshots.c.id.desc()).limit(1)).first()
    start = 0
    engine = Engine()
    if snap is not None:
        try:
            engine = load_snapshot(snap.state)
        except SnapshotError as exc:
            raise SinkError(f"snapshot at position {snap.position} of {cluster!r}: {exc}") from None
        start = snap.position
    e = s.events.c
    rows = conn.execute(sa.select(e.payload, e.reason, e.event_id).where(
        e.cluster == cluster, e.position >= start, e.position < end).order_by(e.position))
    for payload, reason, event_id in rows:
        event, error = archived_event(payload, reason, event_id)
        if event is None:
            engine.reject(event_id, error)
        else:
            engine.apply(event)
    return engine, start


def engine_at(url: str, cluster: str, at_ms: int | None = None, seq: int | None = None) -> tuple[Engine, int, int]:
    """Rebuild the engine of ``cluster`` at a past moment (see the module docstring).

    Returns ``(engine, end position, position of the snapshot used)`` (0 when replayed from scratch).

    Raises:
        SinkError: unknown cluster or decision, or a stored snapshot this engine cannot restore.
    """
    db = create_db_engine(url)
    try:
        with db.connect() as conn:
            end = end_position(conn, cluster, at_ms, seq)
            engine, start = restore(conn, cluster, end)
    finally:
        db.dispose()
    return engine, end, start
