"""The ``nodes.allocated`` column and the ``placements`` table on SQLite and PostgreSQL, against a
placement history worked by hand: two 8-cpu nodes; ``ns/a`` (2 pods × 3 cpu) is bin-packed on n1
(6 cpu), ``ns/b`` (1 pod × 4 cpu) does not fit n1's 2 free cpu and goes to n2; ``ns/c`` (2 × 4 cpu)
fits nowhere and waits; then ``ns/a`` finishes and ``ns/c`` is bin-packed again: n2 (4 free of 8)
is fuller than n1 (8 free), so one pod goes to n2 and the other to n1."""

from __future__ import annotations

from pathlib import Path

import orjson
import sqlalchemy as sa

from replay.sql_sink import replay_to_db
from statemodel import sql_schema as s
from tests.scenario.builder import Scenario
from tests.scenario.placement.helpers import gang, node, placement_on, quota_cluster


def _history() -> Scenario:
    s_ = Scenario()
    placement_on(s_)
    s_.flavor("default")
    quota_cluster(s_)
    node(s_, "n1")
    node(s_, "n2")
    gang(s_, "ns/a", "q", [{"count": 2, "requests": {"cpu": "3"}}])
    gang(s_, "ns/b", "q", [{"count": 1, "requests": {"cpu": "4"}}])
    gang(s_, "ns/c", "q", [{"count": 2, "requests": {"cpu": "4"}}])
    s_.finish("ns/a")
    return s_


def _rows(db: str, tmp_path: Path) -> tuple[list, list]:
    path = tmp_path / "placement.ndjson"
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in _history().events))
    replay_to_db(str(path), db, snapshot_every=3)
    engine = sa.create_engine(db, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            nodes = [(r.name, r.allocated) for r in conn.execute(sa.select(s.nodes).order_by(s.nodes.c.name))]
            placements = [(r.workload, r.pod_set, r.node, r.pods, r.allocated)
                          for r in conn.execute(sa.select(s.placements).order_by(s.placements.c.workload))]
    finally:
        engine.dispose()
    return nodes, placements


def test_nodes_and_placements_rows(db: str, tmp_path: Path) -> None:
    nodes, placements = _rows(db, tmp_path)
    assert nodes == [("n1", {"cpu": 4000}), ("n2", {"cpu": 8000})]
    assert sorted(placements) == [("ns/b", "main", "n2", 1, {"cpu": 4000}), ("ns/c", "main", "n1", 1, {"cpu": 4000}),
                                  ("ns/c", "main", "n2", 1, {"cpu": 4000})]
