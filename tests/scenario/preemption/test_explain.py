"""``explain`` of preemption (statemodel.explain ``preemption``; docs/preemption.md "Why was my job
preempted?"): who preempted a workload, when and why, what a preemptor waits for, and which policy
keeps a pending workload from preempting.  Expected values follow Kueue's rules worked by hand
(reference/kueue.md §4)."""

from __future__ import annotations

from typer.testing import CliRunner

from quotaledger.cli import app
from statemodel.explain import explain
from tests.scenario.builder import Scenario, preempted


def _within(release_on: str | None = None, policy: str = "LowerPriority") -> Scenario:
    # one ClusterQueue of 4 cpu; low (4 cpu, priority 0) runs, then high (4 cpu, priority 10) arrives at 60 s
    s = Scenario()
    s.flavor("default")
    if release_on is not None:
        s.engine_config(afs=False, release_on=release_on)
    s.cq("a", quotas={"cpu": "4"}, preemption={"withinClusterQueue": policy})
    s.lq("ns/q", "a")
    s.submit("ns/low", "q", cpu="4", priority=0, at=0)
    s.submit("ns/high", "q", cpu="4", priority=10, at=60)
    s.run()
    return s


def _explain(s: Scenario, key: str) -> dict:
    return explain(s.engine.clusters["default"], key, s.decisions)


def test_victim_says_who_preempted_it_when_and_why():
    s = _within()
    assert preempted(s.decisions) == [("ns/low", "ns/high", "InClusterQueue")]
    out = _explain(s, "ns/low")["preemption"]
    assert (out["preemptedBy"], out["reason"], out["evicting"]) == ("ns/high", "InClusterQueue", False)
    (row,) = out["history"]
    assert row["role"] == "victim" and row["time"] == "2026-01-01T00:01:00Z"
    assert (row["victimClusterQueue"], row["preemptorClusterQueue"]) == ("a", "a")
    # the message carries the numbers: high asked for 4 cpu, the ClusterQueue had 0 left
    assert row["message"].endswith("preemptor needs cpu in flavor default: requested 4, available 0")
    # back in its queue behind high, which holds all 4 cpu: nothing preemption-related to wait for
    # (within its own ClusterQueue only lower priorities could be preempted, and high is higher)
    assert out["waitingFor"] == []


def test_preemptor_lists_its_victims_and_history():
    s = _within()
    out = _explain(s, "ns/high")
    assert out["status"] == "Admitted"
    p = out["preemption"]
    assert p["victims"] == [{"workload": "ns/low", "status": "Pending", "clusterQueue": "a", "evicting": False}]
    assert [(h["role"], h["victim"]) for h in p["history"]] == [("preemptor", "ns/low")]
    assert p["policy"] == {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Never",
                           "borrowWithinCohort": {"policy": "Never", "maxPriorityThreshold": None}}


def test_preemptor_waits_for_the_eviction_of_its_victim():
    s = _within(release_on="Eviction")
    high = _explain(s, "ns/high")
    assert high["reason"] == "WaitingForPreemptedWorkloads"
    assert high["preemption"]["waitingFor"] == [
        "the eviction of 1 preempted workload(s) still holding their quota (releaseOn: Eviction; freed at "
        "their WorkloadEvicted or WorkloadFinished): ns/low"]
    low = _explain(s, "ns/low")
    assert low["status"] == "Admitted" and low["preemption"]["evicting"] is True
    s.evict("ns/low", at=90)
    s.run()
    high = _explain(s, "ns/high")
    assert high["status"] == "Admitted" and high["preemption"]["waitingFor"] == []
    assert high["preemption"]["victims"][0]["status"] == "Pending"


def test_policy_that_forbids_preempting_is_named():
    s = _within(policy="Never")
    assert preempted(s.decisions) == []
    out = _explain(s, "ns/high")
    assert out["reason"] == "WaitingForQuota"
    assert out["preemption"]["waitingFor"] == [
        "withinClusterQueue: Never forbids preempting the 1 lower-priority workload(s) admitted in ClusterQueue a"]


def test_reclaim_never_is_named_for_quota_lent_to_the_cohort():
    # a (4 cpu) lends everything to b (0 cpu) while idle; b's job holds it; a's own job then waits,
    # since a does not reclaim (reclaimWithinCohort Never)
    s = Scenario()
    s.flavor("default")
    s.cohort("all")
    s.cq("a", cohort="all", quotas={"cpu": "4"}, preemption={"withinClusterQueue": "LowerPriority"})
    s.cq("b", cohort="all", quotas={"cpu": "0"})
    s.lq("ns/a", "a")
    s.lq("ns/b", "b")
    s.submit("ns/borrower", "b", cpu="4", at=0)
    s.submit("ns/owner", "a", cpu="4", at=10)
    s.run()
    assert _explain(s, "ns/owner")["preemption"]["waitingFor"] == [
        "reclaimWithinCohort: Never forbids reclaiming quota from the 1 workload(s) admitted in other "
        "ClusterQueues of cohort all"]


def test_cli_explain_shows_the_preemption(tmp_path):
    s = _within()
    path = tmp_path / "events.ndjson"
    path.write_bytes(s.events_ndjson())
    runner = CliRunner()
    result = runner.invoke(app, ["explain", "ns/low", str(path)])
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert "preempted by ns/high (InClusterQueue)" in text
    assert "at 2026-01-01T00:01:00Z" in text and "requested 4, available 0" in text
    as_json = runner.invoke(app, ["explain", "ns/low", str(path), "--json"])
    assert '"preemptedBy": "ns/high"' in as_json.stdout and '"role": "victim"' in as_json.stdout
