"""The projection tables against the engine's domain state, on SQLite and PostgreSQL.

A history with admission fair sharing (a decay whose factors have 34 significant digits, and one
whose numbers can be worked by hand), a cohort tree, LocalQueue weights (one of 0: score +inf) and
nodes (cordoned, relabelled, deleted) is replayed into the store with ``replay --db``.  Every
projection row must equal what the engine's own records say: the fair-sharing ledgers' decayed
usage and penalties and the scores the engine orders queues by (exact ``Decimal``s, no float in
between), the quota nodes, the node ledger.  SQLite and PostgreSQL must hold the same rows, value
for value.  Migration 0003 (exact fair-sharing columns) keeps rows both ways.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

import orjson
import pytest
import sqlalchemy as sa
from alembic import command

from replay.runner import run_file
from replay.sql_sink import replay_to_db
from replay.store.projections import PROJECTIONS
from statemodel import sql_schema as s
from statemodel.cluster import ClusterState
from statemodel.engine import Engine
from statemodel.queues.afs import CONTEXT, ZERO
from statemodel.quota.protocol import CLUSTER_QUEUE, COHORT
from tests.scenario.builder import START, USAGE_BASED, Scenario
from tests.sqlhelpers import alembic_config

GI = 1024**3
GPU = "nvidia.com/gpu"
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
START_MS = int((START - EPOCH) / timedelta(milliseconds=1))


def v1_node(name: str, allocatable: dict, labels: dict, taints: list | None = None, unschedulable: bool = False) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "spec": {"unschedulable": unschedulable, "taints": taints or []}, "status": {"allocatable": allocatable}}


def decaying() -> Scenario:
    """Cluster ``ml``: half-life 3 sampling intervals, so every decay factor is a 34-digit decimal."""
    s = Scenario("ml")
    s.engine_config(halfLife="3m", interval="1m", weights={"cpu": 1, GPU: 4})
    s.flavor("default")
    s.cohort("org")
    s.cohort("research", parent="org", quotas={"cpu": 2})
    s.cq("a", cohort="research", quotas={"cpu": 4, GPU: 2}, admission_mode=USAGE_BASED)
    s.cq("b", cohort="research", quotas={"cpu": 2}, admission_mode=USAGE_BASED, weight=2)
    s.lq("team/a", "a")
    s.lq("team/c", "a", weight="1.5")
    s.lq("team/b", "b", weight=0)
    s.emit("Applied", object=v1_node("gpu-1", {"cpu": "64", "memory": "512Gi", GPU: "8"}, {"pool": "gpu"},
                                     [{"key": GPU, "value": "present", "effect": "NoSchedule"}]))
    s.emit("Applied", object=v1_node("cpu-1", {"cpu": "7910m", "memory": "32Gi", "pods": "110"}, {"pool": "cpu"}))
    s.emit("Applied", object=v1_node("cpu-2", {"cpu": "8"}, {"pool": "cpu"}))
    s.submit("team/w1", "a", cpu=3, gpu=1, at=20)
    s.submit("team/w2", "b", cpu=2, at=25)
    s.submit("team/w3", "c", cpu=2, at=30)
    s.emit("Applied", object=v1_node("cpu-1", {"cpu": "7910m", "memory": "32Gi", "pods": "110"},
                                     {"pool": "cpu", "zone": "b"}, unschedulable=True), at=70)
    s.finish("team/w1", at=130)
    s.submit("team/w4", "a", cpu=1, at=135)
    s.emit("Deleted", object={"apiVersion": "v1", "kind": "Node", "metadata": {"name": "cpu-2"}}, at=140)
    s.finish("team/w2", at=190)
    s.tick(at=250)
    return s


def by_hand() -> Scenario:
    """Cluster ``half``: half-life = sampling interval = 1m, so A = 0.5.  ``team/x`` holds 2 cpu from
    t=4s to t=150s: consumed 0 → 1000m (t=60) → 1500m (t=120) → 750m (t=180) → 375m (t=240);
    the entry penalty (0.5 × 2000m) ended at t=60.  At t=250: 0.375 cores, score 0.375."""
    s = Scenario("half")
    s.engine_config(halfLife="1m", interval="1m", at=0)
    s.flavor("default", at=0)
    s.cq("x", quotas={"cpu": 4}, admission_mode=USAGE_BASED, at=0)
    s.lq("team/x", "x", at=0)  # its usage starts on the sampling grid
    s.submit("team/job", "x", cpu=2, at=4)
    s.finish("team/job", at=150)
    s.tick(at=250)
    return s


def history(tmp_path: Path) -> tuple[Path, Engine]:
    """The two clusters' events in one NDJSON file, and the engine of its replay."""
    path = tmp_path / "projections.ndjson"
    events = [e for scenario in (decaying(), by_hand()) for e in scenario.events]
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    engine, result = run_file(str(path))
    assert engine.rejected == 0
    return path, engine


def stored(url: str) -> dict[str, list[dict]]:
    """Every projection table's rows, sorted by primary key, times as UTC-aware datetimes."""
    db = sa.create_engine(url, poolclass=sa.pool.NullPool)
    out = {}
    try:
        with db.connect() as conn:
            for table in PROJECTIONS:
                rows = [dict(r._mapping) for r in conn.execute(sa.select(table).order_by(*table.primary_key.columns))]
                for row in rows:
                    for name, value in row.items():
                        if isinstance(value, datetime) and value.tzinfo is None:  # SQLite: naive UTC
                            row[name] = value.replace(tzinfo=timezone.utc)
                out[table.name] = rows
    finally:
        db.dispose()
    return out


def _when(ms: int) -> datetime:
    return EPOCH + timedelta(milliseconds=ms)


def expected_fair_sharing(cluster: str, state: ClusterState) -> list[dict]:
    """The ``fair_sharing`` rows the engine's ledgers give: each LocalQueue's decayed usage and live
    penalties, summed for a ClusterQueue (its LocalQueues) and a cohort (every one below it), in
    score units, with the score the engine orders by."""
    afs, now = state.afs, state.clock_ms
    params = afs.params
    assert params is not None
    last = now // params.interval_ms * params.interval_ms
    lqs = {"a": ["team/a", "team/c"], "b": ["team/b"], "x": ["team/x"]}
    cohorts = {"org": ["team/a", "team/b", "team/c"], "research": ["team/a", "team/b", "team/c"]}
    rows = []

    def add(kind: str, name: str, consumed: dict, penalty: dict, score: Decimal) -> None:
        for res in sorted(set(consumed) | set(penalty)):
            unit = Decimal(1000) if res == "cpu" else Decimal(1)
            rows.append({"cluster": cluster, "kind": kind, "name": name, "resource": res,
                         "consumed": CONTEXT.divide(consumed.get(res, ZERO), unit),
                         "penalty": CONTEXT.divide(penalty.get(res, ZERO), unit),
                         "score": None if score.is_infinite() else score,
                         "last_update": _when(last), "last_update_ms": last})

    for name in sorted(cohorts):
        if name in state.hierarchy.cohorts:
            consumed, penalty, _ = afs.totals(cohorts[name], now)
            add("cohort", name, consumed, penalty, afs.score(cohorts[name], 1000, now))
    for name in sorted(state.hierarchy.cluster_queues):
        assert state.local_queues_of(name) == lqs[name]
        consumed, penalty, _ = afs.totals(lqs[name], now)
        add("cluster_queue", name, consumed, penalty, state.cluster_queue_score(name))
    for key in sorted(state.local_queues):
        ledger = afs.ledgers[key]
        consumed, _ = ledger.consumed_at(params, now)
        add("local_queue", key, consumed, ledger.penalty_at(params, now), state.local_queue_score(key))
    return rows


def test_projection_rows_are_the_engine_state(db: str, tmp_path: Path) -> None:
    path, engine = history(tmp_path)
    replay_to_db(str(path), db)
    rows = stored(db)
    state = engine.state()["clusters"]

    # fair sharing: the ledgers' exact decimals
    fair = rows["fair_sharing"]
    want = [row for cluster in sorted(engine.clusters) for row in expected_fair_sharing(cluster, engine.clusters[cluster])]
    assert sorted(fair, key=lambda r: (r["cluster"], r["kind"], r["name"], r["resource"])) == \
        sorted(want, key=lambda r: (r["cluster"], r["kind"], r["name"], r["resource"]))
    long_digits = [r["consumed"] for r in fair if r["cluster"] == "ml" and r["consumed"].as_tuple().exponent < -12]
    assert long_digits, "the 3m half-life gives decimals beyond 12 places, stored whole"
    assert all(isinstance(r[c], Decimal) for r in fair for c in ("consumed", "penalty"))
    assert {r["score"] for r in fair if r["name"] == "team/b"} == {None}  # weight 0: +inf
    half = {(r["kind"], r["name"]): r for r in fair if r["cluster"] == "half"}
    assert set(half) == {("cluster_queue", "x"), ("local_queue", "team/x")}
    for row in half.values():
        assert (row["resource"], row["consumed"], row["penalty"], row["score"]) == ("cpu", Decimal("0.375"), 0, Decimal("0.375"))
        assert row["last_update_ms"] == START_MS + 240_000 and row["last_update"] == _when(START_MS + 240_000)

    # nodes: the ledger (cpu-2 deleted; cpu-1 cordoned and relabelled)
    assert rows["nodes"] == [
        {"cluster": "ml", "name": "cpu-1", "labels": {"pool": "cpu", "zone": "b"},
         "allocatable": {"cpu": 7910, "memory": 32 * GI, "pods": 110}, "unschedulable": True, "taints": [],
         "allocated": {}},
        {"cluster": "ml", "name": "gpu-1", "labels": {"pool": "gpu"},
         "allocatable": {"cpu": 64000, "memory": 512 * GI, GPU: 8}, "unschedulable": False,
         "taints": [{"key": GPU, "value": "present", "effect": "NoSchedule"}], "allocated": {}}]
    assert engine.clusters["ml"].nodes.totals() == {"cpu": 64000, "memory": 512 * GI, GPU: 8}

    # the quota tree: nominal quota as configured, usage and availability as the quota model says
    quotas = {(r["cluster"], r["node_kind"], r["node_name"], r["flavor"], r["resource"]): r for r in rows["quotas"]}
    expected_keys = set()
    for cluster in engine.clusters:
        hierarchy, model = engine.clusters[cluster].hierarchy, engine.clusters[cluster].model
        for kind, entries in (("cohort", hierarchy.cohorts), ("cluster_queue", hierarchy.cluster_queues)):
            for name in entries:
                model_kind = COHORT if kind == "cohort" else CLUSTER_QUEUE
                for flavor, resource in ((e.flavor, e.resource) for e in model.entitlements(model_kind, name)):
                    key = (cluster, kind, name, flavor, resource)
                    expected_keys.add(key)
                    view = state[cluster]["cohorts" if kind == "cohort" else "clusterQueues"][name]["resources"]
                    q = view[flavor][resource]
                    assert quotas[key]["nominal"] == q["nominal"] and quotas[key]["usage"] == q["usage"], key
                    assert quotas[key]["borrowing_limit"] == q["borrowingLimit"], key
                    assert quotas[key]["lending_limit"] == q["lendingLimit"], key
                    assert quotas[key]["subtree_quota"] == q.get("subtreeQuota"), key
                    assert quotas[key]["available"] == q.get("available"), key
                    assert quotas[key]["potential_available"] == q.get("potentialAvailable"), key
    assert set(quotas) == expected_keys
    assert quotas[("ml", "cluster_queue", "a", "default", "cpu")]["nominal"] == 4000
    assert quotas[("ml", "cohort", "research", "default", "cpu")]["subtree_quota"] == 2000 + 4000 + 2000
    assert quotas[("ml", "cluster_queue", "a", "default", "cpu")]["usage"] == 1000 + 2000  # w4 and w3

    # queues and workloads
    assert [(r["cluster"], r["name"], r["parent"], r["explicit"], r["active"]) for r in rows["cohorts"]] == [
        ("ml", "org", None, True, True), ("ml", "research", "org", True, True)]
    assert [(r["name"], r["cohort"], r["pending_workloads"], r["admitted_workloads"]) for r in rows["cluster_queues"]] \
        == [("x", None, 0, 0), ("a", "research", 0, 2), ("b", "research", 0, 0)]  # cluster half, then ml
    assert [(r["key"], r["cluster_queue"], r["admitted_workloads"]) for r in rows["local_queues"]] == [
        ("team/x", "x", 0), ("team/a", "a", 1), ("team/b", "b", 0), ("team/c", "a", 1)]
    assert {(r["cluster"], r["key"]): r["status"] for r in rows["workloads"]} == {
        (c, key): info.status for c, cs in engine.clusters.items() for key, info in cs.workloads.items()}


def test_sqlite_and_postgresql_hold_the_same_rows(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    path, _ = history(tmp_path)
    sqlite = f"sqlite:///{tmp_path / 'same.db'}"
    postgres = request.getfixturevalue("postgres_url")
    command.downgrade(alembic_config(postgres), "base")  # the run's database is shared by the tests: start empty
    replay_to_db(str(path), sqlite)
    replay_to_db(str(path), postgres)
    lite, pg = stored(sqlite), stored(postgres)
    assert sum(len(rows) for rows in lite.values()) > 30
    assert lite == pg
    for a, b in zip(lite["fair_sharing"], pg["fair_sharing"]):  # the same digits, not only equal values
        assert [repr(a[c]) for c in ("consumed", "penalty", "score")] == [repr(b[c]) for c in ("consumed", "penalty", "score")]


def test_exact_fair_sharing_migration(db: str) -> None:
    """0003 keeps the rows 0002 stored and stores 34 significant digits exactly; the downgrade keeps
    the rows (rounded to the old 12 places)."""
    cfg = alembic_config(db)
    command.upgrade(cfg, "0002")
    table = sa.table("fair_sharing", *(sa.column(c) for c in ("cluster", "kind", "name", "resource", "consumed",
                                                             "penalty", "score")))
    db_engine = sa.create_engine(db, poolclass=sa.pool.NullPool)
    exact = Decimal("12345.67890123456789012345678901234")
    key = {"cluster": "c", "kind": "local_queue", "resource": "cpu"}
    try:
        with db_engine.begin() as conn:
            conn.execute(table.insert().values(**key, name="old", consumed=1.5, penalty=0, score=None))
        command.upgrade(cfg, "0003")
        with db_engine.begin() as conn:
            conn.execute(s.fair_sharing.insert().values(**key, name="new", consumed=exact, penalty=Decimal("1E-30"),
                                                        score=exact))
            got = {r.name: r for r in conn.execute(sa.select(s.fair_sharing))}
        assert (got["old"].consumed, got["old"].penalty, got["old"].score) == (Decimal("1.5"), 0, None)
        assert (got["new"].consumed, got["new"].penalty, got["new"].score) == (exact, Decimal("1E-30"), exact)
        command.downgrade(cfg, "0002")
        with db_engine.connect() as conn:
            back = {r.name: Decimal(str(r.consumed)) for r in conn.execute(sa.select(table))}
        assert back["old"] == Decimal("1.5")
        assert abs(back["new"] - exact) < Decimal("1E-9")
    finally:
        db_engine.dispose()
