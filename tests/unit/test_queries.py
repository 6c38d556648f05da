"""``quotaledger list`` and ``quotaledger share`` through the real entry point, on hand-made
histories whose queue orders, waits and fair-sharing scores are worked out by hand."""

from __future__ import annotations

from pathlib import Path

import orjson
from typer.testing import CliRunner

from quotaledger.cli import app
from tests.scenario.builder import Scenario


def _run(args: list[str]) -> dict:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, (args, result.output, result.exception)
    return orjson.loads(result.stdout)


def _queue(tmp_path: Path, then=None) -> Path:
    """ClusterQueue q (1 cpu) with LocalQueues ns/a and ns/b: ns/w0 holds the cpu from t=1; then
    a/w1 (priority 0, t=2), b/w2 (priority 5, t=3), a/w3 (priority 0, t=4) wait; a tick at t=10.
    Kueue's order (BestEffortFIFO): priority first, then queue time: b/w2, a/w1, a/w3.  ``then``:
    called with the scenario to add later events."""
    s = Scenario()
    s.flavor("default", at=0)
    s.cq("q", quotas={"cpu": "1"}, at=0)
    s.lq("ns/a", "q", at=0)
    s.lq("ns/b", "q", at=0)
    s.submit("ns/w0", "a", cpu="1", at=1)
    s.submit("ns/w1", "a", cpu="1", at=2)
    s.submit("ns/w2", "b", cpu="1", priority=5, at=3)
    s.submit("ns/w3", "a", cpu="1", at=4)
    s.tick(at=10)
    if then is not None:
        then(s)
    path = tmp_path / "queue.ndjson"
    path.write_bytes(s.events_ndjson())
    return path


def test_list_shows_pending_workloads_in_queue_order_with_their_positions(tmp_path: Path) -> None:
    events = str(_queue(tmp_path))
    out = _run(["list", events, "--json"])
    assert (out["cluster"], out["time"]) == ("default", "2026-01-01T00:00:10Z")
    got = [(w["workload"], w["positionInClusterQueue"], w["localQueue"], w["positionInLocalQueue"], w["waitMs"])
           for w in out["workloads"]]
    assert got == [("ns/w2", 0, "ns/b", 0, 7_000), ("ns/w1", 1, "ns/a", 0, 8_000), ("ns/w3", 2, "ns/a", 1, 6_000)]
    only_a = _run(["list", events, "--local-queue", "ns/a", "--json"])["workloads"]
    assert [w["workload"] for w in only_a] == ["ns/w1", "ns/w3"]
    admitted = _run(["list", events, "--status", "admitted", "--json"])["workloads"]
    assert [(w["workload"], w["admittedAt"], w["waitMs"]) for w in admitted] == [("ns/w0", "2026-01-01T00:00:01Z", 0)]
    everything = _run(["list", events, "--status", "all", "--json"])["workloads"]
    assert [w["workload"] for w in everything] == ["ns/w2", "ns/w1", "ns/w3", "ns/w0"]
    # as of t=3: w1 and w2 wait, w2 already ahead of w1 by priority
    earlier = _run(["list", events, "--at", "2026-01-01T00:00:03Z", "--json"])["workloads"]
    assert [(w["workload"], w["positionInClusterQueue"]) for w in earlier] == [("ns/w2", 0), ("ns/w1", 1)]
    assert _run(["list", events, "--namespace", "other", "--json"])["workloads"] == []
    assert [w["workload"] for w in _run(["list", events, "--limit", "1", "--json"])["workloads"]] == ["ns/w2"]


def test_list_from_a_store_equals_list_from_the_file(tmp_path: Path) -> None:
    events = str(_queue(tmp_path))
    url = f"sqlite:///{tmp_path}/s.db"
    assert CliRunner().invoke(app, ["replay", events, "--db", url]).exit_code == 0
    for at in ("2026-01-01T00:00:03Z", "-1s"):
        assert _run(["list", "--db", url, "--at", at, "--json"]) == _run(["list", events, "--at", at, "--json"])
    table = CliRunner().invoke(app, ["list", "--db", url])
    assert table.exit_code == 0 and "ns/w2" in table.stdout and "WaitingForQuota" in table.stdout


def test_list_rejects_an_unknown_status(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["list", str(_queue(tmp_path)), "--status", "running"])
    assert result.exit_code == 2
    assert "--status must be one of pending, admitted, finished, all" in result.stderr


def test_share_orders_local_queues_by_their_admission_fair_sharing_score(tmp_path: Path) -> None:
    """Admission fair sharing on; persisted usage at t=0 and nothing later, so nothing decays:
    t/a used 4 cpu (weight 1: score 4), t/b 2 cpu (weight 2: score 1), t/c nothing (score 0).
    The ClusterQueue sums its LocalQueues' usage: 6 cpu, weight 1, score 6.  Normalized scores
    over the ClusterQueue's 5: 0, 0.2, 0.8."""
    s = Scenario()
    s.engine_config(at=0)
    s.flavor("default", at=0)
    s.cq("q", quotas={"cpu": "8"}, at=0)
    s.lq("t/a", "q", afs_status=({"cpu": "4"}, 0), at=0)
    s.lq("t/b", "q", weight="2", afs_status=({"cpu": "2"}, 0), at=0)
    s.lq("t/c", "q", at=0)
    path = tmp_path / "afs.ndjson"
    path.write_bytes(s.events_ndjson())
    rows = _run(["share", str(path), "--json"])["queues"]
    assert [(r["kind"], r["name"], r["weight"], r["score"]) for r in rows] == [
        ("ClusterQueue", "q", "1", 6.0), ("LocalQueue", "t/c", "1", 0.0), ("LocalQueue", "t/b", "2", 1.0),
        ("LocalQueue", "t/a", "1", 4.0)]
    assert [r.get("normalizedScore") for r in rows[1:]] == [0.0, 0.2, 0.8]
    assert rows[3]["consumed"] == {"cpu": 4.0}
    table = CliRunner().invoke(app, ["share", str(path)])
    assert table.exit_code == 0 and "t/b" in table.stdout and "20.0%" in table.stdout


def _lifecycle(tmp_path: Path) -> Path:
    """The queue of ``_queue`` run on: w0 finishes at 12 (w2, priority 5, is admitted), w2 at 20
    (w1 is admitted); w3 still waits at the end (t=20)."""
    def finishes(s: Scenario) -> None:
        s.finish("ns/w0", at=12)
        s.finish("ns/w2", at=20)

    return _queue(tmp_path, finishes)


def test_history_lists_every_workload_with_its_times(tmp_path: Path) -> None:
    events = str(_lifecycle(tmp_path))
    out = _run(["history", events, "--json"])
    assert out["end"] == "2026-01-01T00:00:20Z"
    got = {w["workload"]: (w["state"], w["submitted"][-3:], w["admitted"] and w["admitted"][-3:],
                           w["finished"] and w["finished"][-3:], w["waitMs"], w["runMs"], w["admissions"])
           for w in out["workloads"]}
    assert got == {
        "ns/w0": ("Finished", "01Z", "01Z", "12Z", 0, 11_000, 1),
        "ns/w1": ("Admitted", "02Z", "20Z", None, 18_000, 0, 1),
        "ns/w2": ("Finished", "03Z", "12Z", "20Z", 9_000, 8_000, 1),
        "ns/w3": ("Pending", "04Z", None, None, 16_000, None, 0),  # waited to the end: a lower bound
    }
    assert [w["workload"] for w in out["workloads"]] == ["ns/w0", "ns/w1", "ns/w2", "ns/w3"]  # by submission
    # w0 lived 1..12: not in a window from 13; w2 and w3 were submitted after 2
    assert [w["workload"] for w in _run(["history", events, "--since", "2026-01-01T00:00:13Z", "--json"])["workloads"]] \
        == ["ns/w1", "ns/w2", "ns/w3"]
    assert [w["workload"] for w in _run(["history", events, "--until", "2026-01-01T00:00:02Z", "--json"])["workloads"]] \
        == ["ns/w0", "ns/w1"]
    assert [w["workload"] for w in _run(["history", events, "--state", "pending", "--json"])["workloads"]] == ["ns/w3"]

    url = f"sqlite:///{tmp_path}/s.db"
    assert CliRunner().invoke(app, ["replay", events, "--db", url]).exit_code == 0
    assert _run(["history", "--db", url, "--json"]) == out
    table = CliRunner().invoke(app, ["history", "--db", url])
    assert table.exit_code == 0 and "ns/w3" in table.stdout and "1/0/0" in table.stdout


def test_history_counts_a_preemption_and_the_observed_eviction(tmp_path: Path) -> None:
    """withinClusterQueue LowerPriority, releaseOn Eviction: hi (priority 10, t=5) preempts lo
    (admitted at 1), which keeps its quota until its eviction is observed at 6; hi is admitted then."""
    s = Scenario()
    s.engine_config(afs=False, release_on="Eviction", at=0)
    s.flavor("default", at=0)
    s.cq("p", quotas={"cpu": "1"}, preemption={"withinClusterQueue": "LowerPriority"}, at=0)
    s.lq("ns/q", "p", at=0)
    s.submit("ns/lo", "q", cpu="1", at=1)
    s.submit("ns/hi", "q", cpu="1", priority=10, at=5)
    s.evict("ns/lo", at=6)
    path = tmp_path / "preempt.ndjson"
    path.write_bytes(s.events_ndjson())
    rows = {w["workload"]: w for w in _run(["history", str(path), "--json"])["workloads"]}
    lo, hi = rows["ns/lo"], rows["ns/hi"]
    assert (lo["state"], lo["admissions"], lo["preemptions"], lo["evictions"]) == ("Pending", 1, 1, 1)
    assert (hi["state"], hi["admitted"], hi["waitMs"]) == ("Admitted", "2026-01-01T00:00:06Z", 1_000)
    preempted = _run(["history", str(path), "--state", "preempted", "--json"])["workloads"]
    assert [w["workload"] for w in preempted] == ["ns/lo"]
