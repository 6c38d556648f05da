"""The ``elastic_quotas`` projection, docs/sql.md query 12 and ``whatif`` on SQLite and PostgreSQL, against a
``koordinator`` history worked by hand: the design doc's flat example in cpu (A min 10 max 40
asking 5, B 15/60 asking 20, C 20/50 asking 40, D 15/80 asking 70, cluster 100 cores), rounded in
millicores: floors 5,000 + 15,000 + 20,000 + 15,000 leave 45,000 for B, C, D by weights (their max)
60:50:80 -> 14,210.53 / 11,842.11 / 18,947.37: floors 14,210 / 11,842 / 18,947 and the one leftover
millicore to B (largest remainder); B needs only 5,000 and returns 9,211, shared by C:D = 50:80 ->
3,542.69 / 5,668.31: 3,542 / 5,668 and the leftover to C.  Runtimes A 5,000, B 20,000, C 20,000 +
11,842 + 3,543 = 35,385, D 15,000 + 18,947 + 5,668 = 39,615; A's and B's pods run, C's and D's wait."""

from __future__ import annotations

from fractions import Fraction
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


# --------------------------------------------------------------------------- report and explain --db

def _team_history() -> KoordScenario:
    """``team`` (parent, min 10, max 10) over ``a`` (min 6, max 10) and ``b`` (min 4, max 10) on a
    10-cpu node; pods (cpu): a/p1 8 at 10 s, b/p2 4 at 20 s, a/p3 1 at 30 s; a/p1 ends at 50 s,
    b/p2 at 100 s (the last event; the first is at 0 s).

    Worked by hand (reference/koordinator.md §2, §3, §7): at 10 team asks 8 <= its min, so it lends and
    gets 8; inside, a (floor 6, asks 8) takes the 2 left over: runtime 8, p1 admitted, a above its
    min from 10.  At 20 b asks 4 <= its min 4: runtime 4, p2 admitted; team asks min(12, max 10) =
    10 = its runtime, so a keeps only its floor 6 (used 8: over its runtime, no revoke by default).
    At 30 p3 needs used 8 + 1 <= 6: Unschedulable.  At 50 p1 ends: a asks 1 (lends), runtime 1,
    p3 admitted after 20 s.  At the end a uses 1 (runtime 1), b 0, team 1.

    Quota-only (``spec.placement.enable: false``): from 20 s the pods hold 12 cores of the 10-cpu
    node, which binding to nodes would refuse (b/p2 would wait for a/p1); the quota arithmetic of the
    report is what this history checks."""
    k = KoordScenario(capacity={"cpu": 10}, cluster="lab", placement={"enable": False})
    with k.batch(at=0):
        k.quota("team", min={"cpu": 10}, max={"cpu": 10}, is_parent=True)
        k.quota("a", min={"cpu": 6}, max={"cpu": 10}, parent="team")
        k.quota("b", min={"cpu": 4}, max={"cpu": 10}, parent="team")
    k.pod("a/p1", quota="a", cpu=8, at=10)
    k.pod("b/p2", quota="b", cpu=4, at=20)
    k.pod("a/p3", quota="a", cpu=1, at=30)
    k.finish("a/p1", at=50)
    k.finish("b/p2", at=100)
    return k


def _team_db(db: str, tmp_path: Path) -> None:
    path = tmp_path / "team.ndjson"
    path.write_bytes(_team_history().events_ndjson())
    replay_to_db(str(path), db, snapshot_every=2)


def test_report_per_quota_group_worked_by_hand(db: str, tmp_path: Path) -> None:
    from replay.reports.page import headers, table_rows
    from replay.reports.tables import build_report

    _team_db(db, tmp_path)
    report = build_report(db, "lab")
    assert report.model == "koordinator" and report.end_ms - report.start_ms == 100_000
    assert [(n.kind, n.name, n.parent, n.depth) for n in report.nodes] == [
        ("ParentQuota", "team", None, 0), ("LeafQuota", "a", "team", 1), ("LeafQuota", "b", "team", 1)]
    team, a, b = report.nodes
    # a: 8 cores over [10, 50), 1 core over [50, 100]: 8,000 m x 40 s + 1,000 m x 50 s
    assert a.usage_ms == {"cpu": 370_000_000} and a.nominal == {"cpu": 6_000}
    assert a.utilization("cpu") == Fraction(370_000, 600_000)
    assert (a.admitted, a.waits_ms, a.borrowing_ms, a.lent_ms, a.pending_peak, a.pending_at_end) == (
        2, [0, 20_000], 40_000, 0, 1, 0)
    # b: 4 cores over [20, 100]; lends its idle min while a is above its min and team's min is all given
    # to its children (10 - 6 - 4 = 0): over [10, 20)
    assert b.usage_ms == {"cpu": 320_000_000} and (b.borrowing_ms, b.lent_ms, b.waits_ms) == (0, 10_000, [0])
    # team: 8 over [10, 20), 12 over [20, 50), 5 over [50, 100]; above its min 10 over [20, 50)
    assert team.usage_ms == {"cpu": 690_000_000} and team.nominal == {"cpu": 10_000}
    assert (team.admitted, team.borrowing_ms) == (3, 30_000)
    assert (a.maximum, a.runtime, a.used) == ({"cpu": 10_000}, {"cpu": 1_000}, {"cpu": 1_000})
    assert (b.runtime, b.used, team.runtime, team.used) == ({"cpu": 0}, {}, {"cpu": 1_000}, {"cpu": 1_000})
    assert report.top == ["a", "b"] and report.limits == {"a": (6_000, 10_000), "b": (4_000, 10_000)}
    row = dict(zip(headers(report), table_rows(report)[1]))
    assert (row["node"], row["admitted"], row["cpu util"], row["borrowing"], row["min/max"], row["runtime end"]) == (
        "  a", "2", "61.7%", "40.0%", "6/10 cpu", "1")


def test_explain_db_of_a_pending_pod(db: str, tmp_path: Path) -> None:
    from quotaledger.commands.store import explain_from_db
    from tests.scenario.builder import START

    _team_db(db, tmp_path)
    t0 = int(START.timestamp() * 1000)
    p3 = explain_from_db("a/p3", db, "lab", t0 + 40_000)  # waiting: a's runtime 6, used 8 (see _team_history)
    assert (p3["status"], p3["quota"], p3["reason"]) == ("Pending", "a", "Unschedulable")
    assert p3["preFilter"] == ("Insufficient quotas, quotaName: a, runtime: map[cpu:6], used: map[cpu:8], "
                               "pod's request: map[cpu:1], exceedDimensions: [cpu]")
    assert p3["message"] == p3["preFilter"]
    assert [(s["resource"], s["needed"], s["available"], s["shortBy"]) for s in p3["shortfalls"]] == [
        ("cpu", 9_000, 6_000, 3_000)]
    a, team, root = p3["levels"]
    assert (a["quota"], a["resources"]["cpu"]["role"], a["resources"]["cpu"]["runtime"],
            a["resources"]["cpu"]["parentTotal"]) == ("a", "borrower", 6_000, 10_000)
    assert (team["quota"], team["resources"]["cpu"]["limitedRequest"], root["quota"]) == (
        "team", 10_000, "koordinator-root-quota")
    after = explain_from_db("a/p3", db, "lab", None)
    assert after["status"] == "Admitted" and after["admittedBy"]["time"] == rfc3339(50)
