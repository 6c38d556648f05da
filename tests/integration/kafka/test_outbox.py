"""``streams.outbox`` against a real store (SQLite and PostgreSQL): the committer's outbox ranges,
reading back what a crash left unpublished, and marking it published."""

from __future__ import annotations

import orjson
import sqlalchemy as sa

from replay.store.archive import DECISION_COLUMNS, TupleRows, run_writes
from replay.store.db import create_db_engine, upgrade_schema
from statemodel import sql_schema as s
from streams import outbox


def _decisions(cluster: str, seqs: range) -> TupleRows:
    rows = []
    for seq in seqs:
        payload = {"seq": seq, "cause": f"{cluster}-e{seq}", "cluster": cluster, "type": "Admitted"}
        rows.append((cluster, seq, f"{cluster}-e{seq}", seq, 1_000 * seq, "Admitted", f"ns/w{seq}", "cq",
                     orjson.dumps(payload).decode()))
    return TupleRows(DECISION_COLUMNS, rows)


def _batch(db: sa.Engine, *parts: TupleRows) -> list[outbox.Unpublished]:
    writes = [("insert", s.decisions, part) for part in parts]
    published = outbox.add_unpublished(writes)
    with db.begin() as conn:
        run_writes(conn, writes)
    return published


def _ranges(db: sa.Engine) -> list[tuple]:
    with db.connect() as conn:
        o = s.outbox.c
        return [tuple(r) for r in conn.execute(sa.select(o.cluster, o.first_seq, o.last_seq, o.published)
                                               .order_by(o.cluster, o.first_seq))]


def test_ranges_unpublished_and_marks(db: str) -> None:
    upgrade_schema(db)
    engine = create_db_engine(db)
    try:
        first = _batch(engine, _decisions("a", range(1, 4)), _decisions("b", range(1, 3)))
        second = _batch(engine, _decisions("a", range(4, 8)))
        # one range per cluster and batch, in the batch's transaction, nothing published yet
        assert _ranges(engine) == [("a", 1, 3, False), ("a", 4, 7, False), ("b", 1, 2, False)]
        assert [(c, seq) for c, seq, _, _ in first] == [("a", 1), ("a", 2), ("a", 3), ("b", 1), ("b", 2)]
        assert all(cause == f"{c}-e{seq}" and orjson.loads(value)["seq"] == seq for c, seq, cause, value in first)

        # the first batch was published, the second not (a crash before its mark): only it is read back
        with engine.begin() as conn:
            outbox.mark_published(conn, [("a", 1, 3), ("b", 1, 2)])
        assert _ranges(engine) == [("a", 1, 3, True), ("a", 4, 7, False), ("b", 1, 2, True)]
        with engine.connect() as conn:
            left = outbox.unpublished(conn)
        assert [(c, seq, cause) for c, seq, cause, _ in left] == [(c, seq, cause) for c, seq, cause, _ in second]
        assert [orjson.loads(v) for *_, v in left] == [orjson.loads(v) for *_, v in second]

        # whole ranges only, at least one, within the limit
        _batch(engine, _decisions("a", range(8, 10)))
        with engine.connect() as conn:
            assert [seq for _, seq, _, _ in outbox.unpublished(conn, limit=5)] == [4, 5, 6, 7]
            assert [seq for _, seq, _, _ in outbox.unpublished(conn, limit=2)] == [4, 5, 6, 7]
            assert [seq for _, seq, _, _ in outbox.unpublished(conn, limit=6)] == [4, 5, 6, 7, 8, 9]
        # marking what publish reports for the leftovers (merged runs) covers both ranges
        with engine.begin() as conn:
            outbox.mark_published(conn, [("a", 4, 9)])
        assert all(published for *_, published in _ranges(engine))
        with engine.connect() as conn:
            assert outbox.unpublished(conn) == []
    finally:
        engine.dispose()
