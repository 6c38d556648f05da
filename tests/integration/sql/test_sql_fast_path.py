"""The archive's fast write paths store exactly what plain SQLAlchemy Core inserts store.

``replay.store.archive.insert_rows`` skips Core's per-row parameter machinery: on SQLite the hot
tables go in as one ``INSERT ... SELECT FROM json_each`` per batch and other rows as one driver
``executemany``; on PostgreSQL through ``COPY``.  Each case below writes the same rows once through
``insert_rows`` (cluster ``fast``) and once through ``conn.execute(table.insert(), dicts)`` (cluster
``core``), with the datetimes of the Core rows computed here independently, and compares what
SQLAlchemy reads back (and, on SQLite, the stored values and their storage classes).  The last
tests break the database under a running replay (an SQLite trigger) and check that the writer
thread's error surfaces and the run's rows are removed as before.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import sqlalchemy as sa

from replay.runner import run_file
from replay.store.archive import (
    DECISION_COLUMNS,
    EVENT_COLUMNS,
    EVENT_COLUMNS_NO_PAYLOAD,
    ArchiveBatch,
    TupleRows,
    insert_rows,
)
from replay.store.projections import PROJECTIONS, WORKLOAD_COLUMNS, projection_rows
from replay.store.db import RawJSON, SinkError, create_db_engine, upgrade_schema
from replay.sql_sink import replay_to_db
from statemodel import sql_schema as s
from statemodel.driver import Driver
from statemodel.engine import Engine
from statemodel.timefmt import MAX_MS, MIN_MS
from tests.paths import ROOT

EXAMPLE = ROOT / "replay" / "examples" / "two-teams.ndjson"
UTC_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

EDGE_MS = [MIN_MS, MIN_MS + 1, -86_400_001, -1001, -1, 0, 1, 999, 1000, 1001, 1_767_225_600_000,
           1_767_225_600_123, 1_767_225_600_123, 4_102_444_799_999, MAX_MS - 1, MAX_MS, None]
"""Event times of the synthetic rows: both ends of the engine's range, around the epoch, repeats, none."""


def _utc(ms: int | None) -> datetime | None:
    return None if ms is None else UTC_EPOCH + timedelta(milliseconds=ms)


def _core_dicts(table: sa.Table, rows: TupleRows, cluster: str) -> list[dict]:
    """The rows as a Core insert takes them: a dict per row, each DateTime column as a datetime, each
    JSON text marked ``RawJSON`` (stored verbatim, not as a JSON string)."""
    out = []
    for row in rows.rows:
        d = dict(zip(rows.columns, row), cluster=cluster)
        for column in table.columns:
            if isinstance(column.type, sa.DateTime) and column.name not in d:
                d[column.name] = _utc(d[f"{column.name}_ms"])
            elif isinstance(column.type, sa.JSON) and d.get(column.name) is not None:
                d[column.name] = RawJSON(d[column.name])
        out.append(d)
    return out


def _recluster(rows: TupleRows, cluster: str) -> TupleRows:
    at = rows.columns.index("cluster")
    return TupleRows(rows.columns, [(*row[:at], cluster, *row[at + 1:]) for row in rows.rows])


def _synthetic_events() -> tuple[TupleRows, TupleRows, TupleRows]:
    """70 event rows with a payload (odd JSON text: escapes, unicode, nesting, spacing), 10 without,
    and 3 with a NUL character in texts (SQLite's JSON functions would cut them there)."""
    texts = ['{"a":1}', '{"s":"ü → 漢字 \\u2028 \\"q\\" \\\\ \\n"}', '{ "nested" : {"l": [1, 2.50, null, true]} }',
             '{"big":123456789012345678901234567890}', '{"e":""}']
    with_payload = []
    for i in range(70):
        ms = EDGE_MS[i % len(EDGE_MS)]
        with_payload.append(("x", i, i + 1, None if i % 9 == 0 else f"e-{i}", ms, "Applied" if i % 2 else None,
                             RawJSON(texts[i % len(texts)]), ("applied", "duplicate", "rejected")[i % 3],
                             None if i % 4 else "bad 'quote' \"here\"", None if i % 5 else "object.spec"))
    without = [("x", 70 + i, None if i % 2 else 80 + i, None, EDGE_MS[-1 - i % len(EDGE_MS)], None, "rejected",
                "not a JSON object", None) for i in range(10)]
    nul = [("x", 80 + i, None, f"id\x00{i}", 1000 * i, "Applied", RawJSON('{"id":"id\\u0000"}'), "rejected",
            "bad value 'a\x00b'", None) for i in range(3)]
    return (TupleRows(EVENT_COLUMNS, with_payload), TupleRows(EVENT_COLUMNS_NO_PAYLOAD, without),
            TupleRows(EVENT_COLUMNS, nul))


def _example_batch() -> tuple[ArchiveBatch, Engine]:
    """An ArchiveBatch after the example's events (with its events and decisions) and the engine."""
    batch = ArchiveBatch()
    engine_result = run_file(str(EXAMPLE))[0]
    driver = Driver()
    engine = driver.engine
    for position, line in enumerate(EXAMPLE.read_bytes().splitlines()):
        batch.add_step(driver.feed(position + 1, line), position)  # no periodic snapshot within 39 events
    assert engine.hash == engine_result.hash
    return batch, engine


def _read(url: str, table: sa.Table, cluster: str) -> list[dict]:
    db = create_db_engine(url)
    try:
        with db.connect() as conn:
            order = [c for c in table.primary_key.columns]
            rows = conn.execute(sa.select(table).where(table.c.cluster == cluster).order_by(*order)).mappings()
            return [{k: v for k, v in r.items() if k not in ("cluster", "id")} for r in rows]
    finally:
        db.dispose()


def _stored(path: str, table: sa.Table, cluster: str) -> list[tuple]:
    """What SQLite holds, value and storage class, without SQLAlchemy in between."""
    names = [c.name for c in table.columns if c.name not in ("cluster", "id")]
    picks = ", ".join(f'"{n}", typeof("{n}")' for n in names)
    keys = ", ".join(f'"{c.name}"' for c in table.primary_key.columns)
    with sqlite3.connect(path) as con:
        return con.execute(f'SELECT {picks} FROM "{table.name}" WHERE cluster = ? ORDER BY {keys}', (cluster,)).fetchall()


def _write_both(url: str, table: sa.Table, fast: list | TupleRows, core: list[dict]) -> None:
    db = create_db_engine(url)
    try:
        with db.begin() as conn:
            insert_rows(conn, table, fast)
            conn.execute(table.insert(), core)
    finally:
        db.dispose()


def _assert_same(url: str, table: sa.Table, expected_rows: int) -> None:
    fast, core = _read(url, table, "fast"), _read(url, table, "core")
    assert len(fast) == expected_rows
    assert fast == core
    if url.startswith("sqlite"):
        path = sa.engine.make_url(url).database
        assert _stored(path, table, "fast") == _stored(path, table, "core")


def test_tuple_rows_read_back_as_core_rows(db: str) -> None:
    """events (with and without payload, every edge time, NULLs) and decisions of a real replay."""
    upgrade_schema(db)
    sets = _synthetic_events() if db.startswith("sqlite") else _synthetic_events()[:2]  # PostgreSQL refuses NULs
    for rows in sets:
        _write_both(db, s.events, _recluster(rows, "fast"), _core_dicts(s.events, rows, "core"))
    _assert_same(db, s.events, sum(len(rows) for rows in sets))
    batch, _ = _example_batch()
    writes = {(op, table.name, getattr(rows, "columns", None)): rows for op, table, rows in batch.take()}
    decisions = writes[("insert", "decisions", DECISION_COLUMNS)]
    events = writes[("insert", "events", EVENT_COLUMNS)]
    assert len(decisions) > 0 and len(events) == 39
    _write_both(db, s.decisions, _recluster(decisions, "fast"), _core_dicts(s.decisions, decisions, "core"))
    _assert_same(db, s.decisions, len(decisions))


@pytest.mark.parametrize("count", [10, 39])
def test_tuple_rows_from_the_pipe_store_json_text_verbatim(db: str, count: int) -> None:
    """Rows as ``streams.batch_codec.decode`` hands them to the committer (lists) store what Core
    stores for the worker's own rows (tuples), JSON text verbatim, in a batch small enough for
    Core's ``executemany`` (``count`` 10 on PostgreSQL) and through the fast paths."""
    upgrade_schema(db)
    batch, _ = _example_batch()
    events = {table.name: rows for op, table, rows in batch.take() if table is s.events}["events"]
    worker = TupleRows(events.columns, events.rows[:count])
    piped = TupleRows(events.columns, [list(row) for row in worker.rows])
    assert any(type(v) is str and v.startswith("{") for row in piped.rows for v in row)
    _write_both(db, s.events, _recluster(piped, "fast"), _core_dicts(s.events, worker, "core"))
    _assert_same(db, s.events, count)


def test_projection_rows_read_back_as_core_rows(db: str) -> None:
    """Projection rows (booleans, decimals, JSON values and JSON null, datetimes; ``workloads`` as
    tuples with derived datetimes) of a real state."""
    upgrade_schema(db)
    _, engine = _example_batch()
    rows = projection_rows(engine, "ml-east")
    written = [table for table in PROJECTIONS if rows[table]]
    for table in written:
        if table is s.workloads:
            tuples = TupleRows(WORKLOAD_COLUMNS, rows[table])
            _write_both(db, table, _recluster(tuples, "fast"), _core_dicts(table, tuples, "core"))
        else:
            _write_both(db, table, [{**r, "cluster": "fast"} for r in rows[table]],
                        [{**r, "cluster": "core"} for r in rows[table]])
        _assert_same(db, table, len(rows[table]))
    assert {s.workloads, s.quotas, s.cluster_queues} <= set(written)
    admissions = {r[WORKLOAD_COLUMNS.index("status")]: r[WORKLOAD_COLUMNS.index("admission")] for r in rows[s.workloads]}
    assert admissions.keys() >= {"Admitted", "Pending"} and admissions["Pending"] == "null"


def _with_trigger(url: str, cluster: str, position: int) -> None:
    with sqlite3.connect(sa.engine.make_url(url).database) as con:
        con.execute(f"CREATE TRIGGER boom BEFORE INSERT ON events WHEN NEW.cluster = '{cluster}' "
                    f"AND NEW.position = {position} BEGIN SELECT RAISE(ABORT, 'boom at {position}'); END")


def _counts(url: str) -> dict[str, int]:
    with sqlite3.connect(sa.engine.make_url(url).database) as con:
        return {t.name: con.execute(f'SELECT count(*) FROM "{t.name}"').fetchone()[0]
                for t in (s.events, s.decisions, s.snapshots, s.workloads)}


def test_writer_error_surfaces_and_the_run_is_removed(tmp_path: Path) -> None:
    """A batch failing on the writer thread (third of ten batches) fails the replay with the
    database's message, and the batches committed before it are deleted."""
    url = f"sqlite:///{tmp_path / 'q.db'}"
    upgrade_schema(url)
    _with_trigger(url, "ml-east", 10)
    with pytest.raises(SinkError, match="boom at 10"):
        replay_to_db(str(EXAMPLE), url, batch_size=4)
    assert _counts(url) == {"events": 0, "decisions": 0, "snapshots": 0, "workloads": 0}


def test_writer_error_with_replace_keeps_or_removes_old_rows_as_documented(tmp_path: Path) -> None:
    """``replace``: failing in the first batch (the one that clears the cluster) leaves the old rows
    intact; failing later removes the cluster's rows (the old ones were cleared by the first batch)."""
    url = f"sqlite:///{tmp_path / 'q.db'}"
    replay_to_db(str(EXAMPLE), url)
    before = _counts(url)
    assert before["events"] == 39 and before["decisions"] > 0
    _with_trigger(url, "ml-east", 1)
    with pytest.raises(SinkError, match="boom at 1"):
        replay_to_db(str(EXAMPLE), url, batch_size=4, replace=True)
    assert _counts(url) == before
    with sqlite3.connect(sa.engine.make_url(url).database) as con:
        con.execute("DROP TRIGGER boom")
    _with_trigger(url, "ml-east", 30)
    with pytest.raises(SinkError, match="boom at 30"):
        replay_to_db(str(EXAMPLE), url, batch_size=4, replace=True)
    assert _counts(url) == {"events": 0, "decisions": 0, "snapshots": 0, "workloads": 0}
