"""``cohorts.weighted_share`` / ``cluster_queues.weighted_share`` on SQLite and PostgreSQL (Kueue's
``status.fairSharing.weightedShare``; the numbers are worked in tests/scenario/fair_sharing/test_drs.py)."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from replay.sql_sink import replay_to_db
from statemodel import sql_schema as s
from tests.scenario.builder import GPU, Scenario

MAX_INT64 = 9223372036854775807


def _story(fair: bool) -> Scenario:
    """root (gpu 45) ── child-cohort (weight 2) ─┬─ cq (gpu 5), holds 10
                                                 └─ zero (gpu 0, weight 0), holds 1"""
    s_ = Scenario()
    s_.flavor("default")
    if fair:
        s_.engine_config(afs=False, fair_sharing=True)
    s_.cohort("root", quotas={GPU: "45"})
    s_.cohort("child-cohort", parent="root", weight="2")
    s_.cq("cq", cohort="child-cohort", quotas={GPU: "5"})
    s_.cq("zero", cohort="child-cohort", quotas={GPU: "0"}, weight="0")
    for cq, amount in (("cq", "10"), ("zero", "1")):
        s_.lq(f"ns/q-{cq}", cq)
        s_.submit(f"ns/{cq}", f"q-{cq}", requests={GPU: amount})
        s_.observe_admission(f"ns/{cq}", cq, gpu=amount)
    return s_


def _rows(db: str, tmp_path: Path, fair: bool) -> tuple[list, list]:
    path = tmp_path / "events.ndjson"
    path.write_bytes(_story(fair).events_ndjson())
    replay_to_db(str(path), db, snapshot_every=4)
    engine = sa.create_engine(db, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            cohorts = conn.execute(sa.select(s.cohorts.c.name, s.cohorts.c.weighted_share)
                                   .order_by(s.cohorts.c.name)).all()
            cqs = conn.execute(sa.select(s.cluster_queues.c.name, s.cluster_queues.c.weighted_share)
                               .order_by(s.cluster_queues.c.name)).all()
    finally:
        engine.dispose()
    return [tuple(r) for r in cohorts], [tuple(r) for r in cqs]


def test_weighted_share_rows(db: str, tmp_path: Path) -> None:
    cohorts, cqs = _rows(db, tmp_path, fair=True)
    # child-cohort: usage 11 over subtree 5 -> 6 * 1000 / 50 = 120, / 2 = 60; cq: 5 * 1000 / 50 = 100
    assert cohorts == [("child-cohort", 60), ("root", 0)]
    assert cqs == [("cq", 100), ("zero", MAX_INT64)]


def test_weighted_share_is_null_without_fair_sharing(db: str, tmp_path: Path) -> None:
    cohorts, cqs = _rows(db, tmp_path, fair=False)
    assert cohorts == [("child-cohort", None), ("root", None)]
    assert cqs == [("cq", None), ("zero", None)]
