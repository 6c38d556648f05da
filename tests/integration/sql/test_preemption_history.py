"""Preemption on a simulated history, on SQLite and PostgreSQL: the ``preemptions`` table, the
report's preemptions and lost GPU-hours, ``explain --db``, and a what-if that raises (preemptions
disappear) or lowers (more preemptions) a ClusterQueue's quota.

The history (times in seconds after T0; GPUs; one flavor ``f``): Cohort ``lab`` with ClusterQueues
``prod`` (6 GPUs nominal; ``withinClusterQueue: LowerPriority``, ``reclaimWithinCohort: Any``) and
``dev`` (2 GPUs, no preemption).  Jobs, closed loop (replay.sim.simulator, releaseOn Decision):

- ``lo``  prod, submitted 1, runs 100 s, 4 GPUs, priority 0
- ``d``   dev,  submitted 5, runs 100 s, 2 GPUs, priority 0
- ``hi``  prod, submitted 10, runs 20 s, 4 GPUs, priority 100
- ``hi2`` prod, submitted 40, runs 10 s, 2 GPUs, priority 100

Worked by hand (Kueue's rules, reference/kueue.md §4): lo is admitted at 1 (prod 4 of 6) and d at 5
(dev 2 of 2).  At 10 hi needs 4 but prod has 2 left and the cohort (8) has 2 free: dev does not
borrow, so the only candidate is lo (lower priority, same ClusterQueue): lo is preempted
(``InClusterQueue``) after 9 s on 4 GPUs (36 GPU-s lost), hi is admitted.  lo waits until hi ends
(30), is admitted again and restarts its 100 s (ends at 130); hi2 at 40 fits beside it (prod 6 of 6).

What-if prod = 8 GPUs (from 0.5 s): at 10 hi fits (prod 8 of 8, cohort 10 of 10): no preemption.
What-if prod = 4 GPUs: lo is preempted at 10 as before, re-admitted at 30 when hi ends, and at 40
hi2 (2 GPUs) finds prod full (lo's 4 of 4) and the cohort full (6 of 6): lo is preempted again.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import sqlalchemy as sa

from quotaledger.commands.store import explain_from_db
from replay.reports.tables import build_report
from replay.sim.importers.jobs import ImportResult, Job
from replay.sim.manifests import QuotaConfig
from replay.sim.simulator import simulate
from replay.sql_sink import replay_to_db
from replay.whatif import whatif
from statemodel import sql_schema as s

API = "kueue.x-k8s.io/v1beta2"
GPU = "nvidia.com/gpu"
T0 = 1_700_000_000_000
S = 1000


def _cq(name: str, gpus: int, preemption: dict | None) -> dict:
    spec: dict = {"cohortName": "lab", "resourceGroups": [{"coveredResources": [GPU], "flavors": [
        {"name": "f", "resources": [{"name": GPU, "nominalQuota": str(gpus)}]}]}]}
    if preemption is not None:
        spec["preemption"] = preemption
    return {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


PROD_POLICY = {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}


def _config() -> QuotaConfig:
    return QuotaConfig([
        {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "f"}},
        {"apiVersion": API, "kind": "Cohort", "metadata": {"name": "lab"}, "spec": {}},
        _cq("prod", 6, PROD_POLICY), _cq("dev", 2, None),
        {"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": "prod", "namespace": "t"},
         "spec": {"clusterQueue": "prod"}},
        {"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": "dev", "namespace": "t"},
         "spec": {"clusterQueue": "dev"}},
    ], root="lab")


def _job(name: str, cq: str, submit_s: int, run_s: int, gpus: int, priority: int) -> Job:
    return Job(name, T0 + submit_s * S, run_s * S, (cq, "t"), 1, ((GPU, gpus),), priority=priority)


def _history(db: str, tmp_path: Path) -> None:
    jobs = [_job("lo", "prod", 1, 100, 4, 0), _job("d", "dev", 5, 100, 2, 0), _job("hi", "prod", 10, 20, 4, 100),
            _job("hi2", "prod", 40, 10, 2, 100)]
    path = tmp_path / "history.ndjson"
    result = simulate(ImportResult("lab", jobs, [], T0, T0 + 200 * S), _config(), path, tick_ms=0)
    assert (result.preempted, result.admitted) == (1, 5)
    replay_to_db(str(path), db, snapshot_every=3)


def _prod_quota(tmp_path: Path, gpus: int) -> str:
    path = tmp_path / f"prod-{gpus}.ndjson"
    path.write_bytes(orjson.dumps({"id": f"prod-{gpus}", "time": T0 + 500, "type": "Applied",
                                   "object": _cq("prod", gpus, PROD_POLICY)}) + b"\n")
    return str(path)


def test_preemptions_table_report_and_explain(db: str, tmp_path: Path) -> None:
    _history(db, tmp_path)
    engine = sa.create_engine(db, poolclass=sa.pool.NullPool)
    p = s.preemptions.c
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.select(p.preempted_at_ms, p.victim, p.victim_cluster_queue, p.preemptor,
                                          p.preemptor_cluster_queue, p.reason).where(p.cluster == "lab")
                                .order_by(p.seq)).all()
            message = conn.execute(sa.select(p.message).where(p.cluster == "lab")).scalar_one()
    finally:
        engine.dispose()
    assert [tuple(r) for r in rows] == [(T0 + 10 * S, "t/lo", "prod", "t/hi", "prod", "InClusterQueue")]
    assert message == ("Preempted to accommodate a workload (UID: t/hi) due to prioritization in the ClusterQueue; "
                       "preemptor path: /lab/prod; preemptee path: /lab/prod; preemptor needs nvidia.com/gpu in "
                       "flavor f: requested 4, available 2")

    report = build_report(db, "lab", start_ms=T0, end_ms=T0 + 200 * S)
    prod, dev, cohort = report.node("prod"), report.node("dev"), report.node("lab", "Cohort")
    assert (prod.preempted, prod.lost_gpu_ms) == (1, 4 * 9 * S)  # 4 GPUs from 1 s to 10 s
    assert (dev.preempted, dev.lost_gpu_ms) == (0, 0)
    assert (cohort.preempted, cohort.lost_gpu_ms) == (1, 4 * 9 * S)
    assert prod.admitted == 4  # lo twice, hi, hi2

    lo = explain_from_db("t/lo", db, "lab", T0 + 20 * S)  # while it waits for hi to end
    assert lo["status"] == "Pending" and lo["preemption"]["preemptedBy"] == "t/hi"
    (row,) = lo["preemption"]["history"]
    assert (row["role"], row["preemptorClusterQueue"], row["reason"]) == ("victim", "prod", "InClusterQueue")


def test_whatif_more_quota_removes_preemptions_and_less_adds_some(db: str, tmp_path: Path) -> None:
    _history(db, tmp_path)
    more = whatif(db, _prod_quota(tmp_path, 8)).to_json()
    assert more["preemptions"] == {"base": 1, "whatif": 0, "delta": -1, "clusterQueues": [
        {"name": "prod", "base": 1, "whatif": 0, "delta": -1}]}
    gone = [(c["workload"], c["type"], c["n"], c["change"]) for c in more["decisionChanges"]]
    # lo keeps its first admission; its preemption and its second admission are gone
    assert ("t/lo", "Preempted", 1, "removed") in gone and ("t/lo", "Admitted", 2, "removed") in gone

    less = whatif(db, _prod_quota(tmp_path, 4)).to_json()
    assert less["preemptions"] == {"base": 1, "whatif": 2, "delta": 1, "clusterQueues": [
        {"name": "prod", "base": 1, "whatif": 2, "delta": 1}]}
    added = next(c for c in less["decisionChanges"] if c["type"] == "Preempted" and c["change"] == "added")
    assert added["workload"] == "t/lo" and added["whatif"]["time"] == "2023-11-14T22:14:00Z"
