"""The ``elastic_quotas`` projection, docs/sql.md query 12 and ``whatif`` on SQLite and PostgreSQL, against a
``koordinator`` history worked by hand: the design doc's flat example in cpu (A min 10 max 40
asking 5, B 15/60 asking 20, C 20/50 asking 40, D 15/80 asking 70, cluster 100 cores), rounded in
millicores: floors 5,000 + 15,000 + 20,000 + 15,000 leave 45,000 for B, C, D by weights (their max)
60:50:80 -> 14,210.53 / 11,842.11 / 18,947.37: floors 14,210 / 11,842 / 18,947 and the one leftover
millicore to B (largest remainder); B needs only 5,000 and returns 9,211, shared by C:D = 50:80 ->
3,542.69 / 5,668.31: 3,542 / 5,668 and the leftover to C.  Runtimes A 5,000, B 20,000, C 20,000 +
11,842 + 3,543 = 35,385, D 15,000 + 18,947 + 5,668 = 39,615; A's and B's pods run, C's and D's wait."""

from __future__ import annotations

from pathlib import Path

import orjson
import sqlalchemy as sa

from replay.sql_sink import replay_to_db
from replay.whatif import whatif
from statemodel import sql_schema as s
from tests.integration.sql.test_sql_docs import queries
from tests.scenario.builder import rfc3339
from tests.scenario.koordinator.kbuilder import KoordScenario


def _history() -> KoordScenario:
    k = KoordScenario(capacity={"cpu": 100}, cluster="koord")
    with k.batch():
        for name, mn, mx in (("a", 10, 40), ("b", 15, 60), ("c", 20, 50), ("d", 15, 80)):
            k.quota(name, min={"cpu": mn}, max={"cpu": mx})
        for name, req in (("a", 5), ("b", 20), ("c", 40), ("d", 70)):
            k.pod(f"ns/{name}", quota=name, cpu=req)
    return k


def _replayed(db: str, tmp_path: Path) -> sa.Engine:
    k = _history()
    path = tmp_path / "koord.ndjson"
    path.write_bytes(k.events_ndjson())
    replay_to_db(str(path), db, snapshot_every=2)
    return sa.create_engine(db, poolclass=sa.pool.NullPool)


def test_query_12_gives_the_hand_worked_answer(db: str, tmp_path: Path) -> None:
    engine = _replayed(db, tmp_path)
    try:
        with engine.connect() as conn:
            rows = [tuple(r) for r in conn.execute(sa.text(queries()[12][1]))]
    finally:
        engine.dispose()
    root = "koordinator-root-quota"
    assert rows == [("koord", "a", root, 10_000, 5_000, 5_000, -5_000),
                    ("koord", "b", root, 15_000, 20_000, 20_000, 5_000),
                    ("koord", "c", root, 20_000, 35_385, 0, -20_000),
                    ("koord", "d", root, 15_000, 39_615, 0, -15_000)]


def test_projection_rows_equal_the_state(db: str, tmp_path: Path) -> None:
    engine = _replayed(db, tmp_path)
    state = _history()
    state.run()
    quotas = state.engine.state()["clusters"]["koord"]["elasticQuotas"]
    try:
        with engine.connect() as conn:
            rows = {r.name: r for r in conn.execute(sa.select(s.elastic_quotas).order_by(s.elastic_quotas.c.name))}
    finally:
        engine.dispose()
    assert sorted(rows) == sorted(quotas)
    for name, q in quotas.items():
        r = rows[name]
        assert (r.parent, r.is_parent, r.allow_lent_resource, r.pods) == (
            q["parent"], q["isParent"], q["allowLentResource"], q["pods"])
        assert (r.min, r.max, r.auto_scale_min, r.shared_weight, r.request, r.child_request, r.used,
                r.non_preemptible_used, r.runtime) == (
            q["min"], q["max"], q["autoScaleMin"], q["sharedWeight"], q["request"], q["childRequest"], q["used"],
            q["nonPreemptibleUsed"], q["runtime"])
    assert rows["koordinator-root-quota"].runtime == {"cpu": 100_000}


def test_whatif_on_a_koordinator_history(db: str, tmp_path: Path) -> None:
    # team (min 4, max 10) on a 4-cpu cluster: p1 (4 cpu) runs 10..100, p2 (2 cpu) waits from 20 and is
    # admitted at 100.  What if a 2-cpu node had joined at 50: the root shares 6, team's runtime is
    # min(request 6, max 10, 6) = 6 and p2 fits at 50
    k = KoordScenario(capacity={"cpu": 4}, cluster="lab")
    k.quota("team", min={"cpu": 4}, max={"cpu": 10}, at=5)
    k.pod("team/p1", cpu=4, at=10)
    k.pod("team/p2", cpu=2, at=20)
    k.finish("team/p1", at=100)
    k.finish("team/p2", at=200)
    path = tmp_path / "history.ndjson"
    path.write_bytes(k.events_ndjson())
    replay_to_db(str(path), db, batch_size=3, snapshot_every=2)
    extra = KoordScenario(cluster="unused")
    node = extra.node("n2", {"cpu": 2}, at=50)
    del node["cluster"]
    patch = tmp_path / "patch.ndjson"
    patch.write_bytes(orjson.dumps(dict(node, id="more-nodes")) + b"\n")
    report = whatif(db, str(patch), from_ms=None).to_json()
    (change,) = report["decisionChanges"]
    assert (change["workload"], change["type"], change["change"]) == ("team/p2", "Admitted", "changed")
    assert change["base"]["time"] == rfc3339(100) and change["whatif"]["time"] == rfc3339(50)
    assert change["deltaMs"] == -50_000
