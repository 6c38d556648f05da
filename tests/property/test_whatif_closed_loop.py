"""Properties of the closed-loop what-if (replay/resimulate.py) on random small simulated histories:
re-simulating with an unchanged quota reproduces the stored history (no decision changes, every
archived finish regenerated), and with any quota the workload counts of both branches add up."""

from __future__ import annotations

import tempfile
from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay.sim.importers.jobs import ImportResult, Job
from replay.sim.manifests import QuotaConfig
from replay.sim.simulator import simulate
from replay.sql_sink import replay_to_db
from replay.whatif import whatif

API = "kueue.x-k8s.io/v1beta2"
T0 = 1_700_000_000_000


def _cq(cpu: int) -> dict:
    return {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": {"resourceGroups": [
        {"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": str(cpu)}]}]}]}}


job = st.tuples(st.integers(1, 20), st.integers(0, 15), st.integers(1, 4))  # submit s, run s, cpu cores


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(2, 6), st.lists(job, min_size=1, max_size=8), st.integers(1, 8))
def test_unchanged_quota_reproduces_and_counts_add_up(quota: int, jobs: list[tuple[int, int, int]], other: int) -> None:
    config = QuotaConfig([
        {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "f"}}, _cq(quota),
        {"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": "cq", "namespace": "t"},
         "spec": {"clusterQueue": "cq"}}], root="r")
    trace = [Job(f"j{i}", T0 + s * 1000, r * 1000, ("cq", "t"), 1, (("cpu", c * 1000),))
             for i, (s, r, c) in enumerate(jobs)]
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        simulate(ImportResult("lab", trace, [], T0, T0 + 20_000), config, d / "sim.ndjson", tick_ms=0)
        db = f"sqlite:///{d / 'q.db'}"
        replay_to_db(str(d / "sim.ndjson"), db)
        reports = []
        for cpu in (quota, other):
            patch = d / f"patch-{cpu}.ndjson"
            patch.write_bytes(orjson.dumps({"id": "q", "time": T0 + 500, "type": "Applied", "object": _cq(cpu)}) + b"\n")
            reports.append(whatif(db, str(patch)).to_json())
    same, changed = reports
    assert same["decisionChanges"] == []
    loop = same["closedLoop"]
    # jobs that never fit (more cpu than the quota) are never admitted and never finish
    assert loop["generatedEvents"] == loop["droppedArchivedEvents"] and loop["runningAtEnd"] == []
    for report in reports:
        for branch in report["branches"].values():
            w = branch["workloads"]
            assert w["submitted"] == len(jobs) == w["admitted"] + w["pending"] + w["neverAdmitted"]
            assert len(w["notAdmitted"]) == w["pending"] + w["neverAdmitted"]
