"""The ``volcano_queues`` projection and docs/sql.md query 13 on SQLite and PostgreSQL, against a
``volcano`` history worked by hand: 12 cpu shared by the proportion plugin between a (weight 1) and b
(weight 2), each asking 4 pods of 2 cpu in one Batch: round 1 gives a 12 · 1/3 = 4 and b 8 (= its
request: met), nothing is left; deserved is the hard limit, so a binds 2 pods (4,000m) and b 4
(8,000m).  ``default`` holds no PodGroup (deserved 0); every queue's realCapability is the whole
12,000m (no guarantees)."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from replay.sql_sink import replay_to_db
from statemodel import sql_schema as s
from tests.integration.sql.test_sql_docs import queries
from tests.scenario.volcano.vbuilder import VolcanoScenario


def _history() -> VolcanoScenario:
    v = VolcanoScenario(capacity={"cpu": 12}, cluster="vc")
    v.queue("a", weight=1)
    v.queue("b", weight=2, reclaimable=False)
    with v.batch():
        for q in "ab":
            v.group(f"ns/{q}", queue=q, min_member=1)
            for i in range(4):
                v.pod(f"ns/{q}-{i}", q, cpu=2)
    return v


def _replayed(db: str, tmp_path: Path) -> sa.Engine:
    path = tmp_path / "vc.ndjson"
    path.write_bytes(_history().events_ndjson())
    replay_to_db(str(path), db, snapshot_every=2)
    return sa.create_engine(db, poolclass=sa.pool.NullPool)


def test_query_13_gives_the_hand_worked_answer(db: str, tmp_path: Path) -> None:
    engine = _replayed(db, tmp_path)
    try:
        with engine.connect() as conn:
            rows = [tuple(r) for r in conn.execute(sa.text(queries()[13][1]))]
    finally:
        engine.dispose()
    assert rows == [("vc", "a", "root", True, 4_000, 12_000, 4_000, 0),
                    ("vc", "b", "root", False, 8_000, 12_000, 8_000, 0),
                    ("vc", "default", "root", True, 0, 12_000, 0, 0)]


def test_projection_rows_equal_the_state(db: str, tmp_path: Path) -> None:
    engine = _replayed(db, tmp_path)
    v = _history()
    queues = v.state()["queues"]
    try:
        with engine.connect() as conn:
            rows = {r.name: r for r in conn.execute(sa.select(s.volcano_queues).order_by(s.volcano_queues.c.name))}
    finally:
        engine.dispose()
    assert sorted(rows) == sorted(queues) == ["a", "b", "default", "root"]
    for name, q in queues.items():
        r = rows[name]
        assert (r.parent, r.weight, r.state, r.reclaimable, r.share) == (
            q["parent"], q["weight"], q["state"], q["reclaimable"], q["share"])
        assert (r.capability, r.real_capability, r.guarantee, r.deserved, r.allocated, r.request, r.inqueue,
                r.elastic) == (q["capability"], q["realCapability"], q["guarantee"], q["deserved"], q["allocated"],
                               q["request"], q["inqueue"], q["elastic"])
    assert (rows["a"].pod_groups, rows["default"].pod_groups) == (1, 0)
