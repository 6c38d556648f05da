"""``statemodel.explain``: the numbers that decide a workload, level by level (hand-computed)."""

from __future__ import annotations

import pytest

from statemodel.explain import UnknownWorkload, explain
from tests.scenario.builder import Scenario


def _tree() -> Scenario:
    # root (no quota) ⊃ team-a (cpu 4, borrowingLimit 2), team-b (cpu 4, lendingLimit 1)
    s = Scenario()
    s.flavor("default")
    s.cohort("root")
    s.cq("team-a", cohort="root", quotas={"cpu": ("4", "2", None)})
    s.cq("team-b", cohort="root", quotas={"cpu": ("4", None, "1")})
    s.lq("a/q", "team-a")
    s.lq("b/q", "team-b")
    s.submit("a/w1", "q", cpu="5")          # borrows 1 from team-b's lendable 1
    s.submit("a/w2", "q", cpu="1")          # would need 1 more: nothing left to borrow
    s.run()
    return s


def test_pending_workload_shows_every_level_of_its_tree():
    s = _tree()
    out = explain(s.engine.clusters["default"], "a/w2")
    assert out["status"] == "Pending"
    assert out["reason"] == "WaitingForQuota"
    assert out["message"].endswith("insufficient unused quota for cpu in flavor default, 1 more needed")
    assert (out["positionInClusterQueue"], out["positionInLocalQueue"]) == (0, 0)
    assert out["request"] == [{"podSet": "main", "count": 1, "total": {"cpu": 1000}}]
    cq, root = out["levels"]
    assert (cq["kind"], cq["name"], root["kind"], root["name"]) == ("ClusterQueue", "team-a", "Cohort", "root")
    a = cq["resources"]["default"]["cpu"]
    # team-a: no lending limit → local 0, all 4 cpu visible to root; usage 5 spills entirely into root.
    assert (a["nominal"], a["borrowingLimit"], a["lendingLimit"], a["usage"], a["localQuota"]) == (4000, 2000, None, 5000, 0)
    # root subtree = 4 (team-a) + min(4, lendingLimit 1) (team-b's local part 3 stays home) = 5; usage 5 → 0 left.
    r = root["resources"]["default"]["cpu"]
    assert (r["subtreeQuota"], r["usage"], r["available"]) == (5000, 5000, 0)
    # team-a may take at most nominal + borrowingLimit = 6 of the 5 the tree could ever give it.
    assert (a["available"], a["potentialAvailable"]) == (0, 5000)


def test_admitted_workload_shows_its_admission():
    s = _tree()
    out = explain(s.engine.clusters["default"], "a/w1")
    assert out["status"] == "Admitted" and out["reason"] is None
    adm = out["admission"]
    assert adm["borrowing"] == 1 and adm["observed"] is False
    assert adm["podSetAssignments"][0]["resourceUsage"] == {"cpu": "5"}
    assert [level["name"] for level in out["levels"]] == ["team-a", "root"]


def test_unknown_workload():
    with pytest.raises(UnknownWorkload):
        explain(_tree().engine.clusters["default"], "a/nope")


def test_cli_explain_as_of_a_time(tmp_path):
    """``quotaledger explain`` replays the file up to ``--at`` and explains the workload then."""
    from typer.testing import CliRunner

    from quotaledger.cli import app

    s = _tree()
    s.finish("a/w1", at=60)  # a/w2 then fits
    s.run()
    path = tmp_path / "events.ndjson"
    path.write_bytes(s.events_ndjson())
    runner = CliRunner()
    before = runner.invoke(app, ["explain", "a/w2", str(path), "--at", "2026-01-01T00:00:59Z", "--json"])
    assert before.exit_code == 0, before.output
    assert '"status": "Pending"' in before.stdout and "1 more needed" in before.stdout
    after = runner.invoke(app, ["explain", "a/w2", str(path), "--json"])
    assert '"status": "Admitted"' in after.stdout
    table = runner.invoke(app, ["explain", "a/w2", str(path), "--at", "2026-01-01T00:00:59Z"])
    assert table.exit_code == 0 and "Cohort root" in table.stdout and "WaitingForQuota" in table.stdout
    missing = runner.invoke(app, ["explain", "a/nope", str(path)])
    assert missing.exit_code == 1


# --------------------------------------------------------------------------- the binding level, holders, the wait


def _three_holders() -> Scenario:
    """root ⊃ team-a (cpu 4, borrowingLimit 2), team-b (cpu 4, lendingLimit 1).  a/w1 (5 cpu) borrows
    team-b's lendable 1; b/w3 (2 cpu) stays in team-b's non-lendable 3; a/w2 (1 cpu) waits: the
    root's shared pool (4 of team-a + 1 of team-b) is all in use."""
    s = Scenario()
    s.flavor("default", at=0)
    s.cohort("root", at=0)
    s.cq("team-a", cohort="root", quotas={"cpu": ("4", "2", None)}, at=0)
    s.cq("team-b", cohort="root", quotas={"cpu": ("4", None, "1")}, at=0)
    s.lq("a/q", "team-a", at=0)
    s.lq("b/q", "team-b", at=0)
    s.submit("a/w1", "q", cpu="5", at=1)
    s.submit("b/w3", "q", cpu="2", at=2)
    s.submit("a/w2", "q", cpu="1", at=10)
    s.tick(at=70)
    s.run()
    return s


def test_the_binding_level_is_the_highest_level_short():
    """The root's pool is used up (subtree 5 = 4 of team-a + team-b's lendable 1; usage 5): team-a
    alone could still borrow 1 (4 + borrowingLimit 2 > 5), so the root binds, not the ClusterQueue."""
    from statemodel.explain import holders

    cluster = _three_holders().engine.clusters["default"]
    out = explain(cluster, "a/w2")
    assert out["binding"] == [{
        "flavor": "default", "resource": "cpu", "reason": "WaitingForQuota", "needed": 1000,
        "kind": "Cohort", "name": "root", "root": True, "available": 0, "subtreeQuota": 5000, "usage": 5000}]
    # queued at 10 s, the last event (the tick) at 70 s
    assert (out["asOf"], out["waitedMs"]) == ("2026-01-01T00:01:10Z", 60_000)
    # every admitted workload under root holding cpu, the largest charge first
    assert holders(cluster, "Cohort", "root", "default", "cpu", 10) == [
        {"workload": "a/w1", "clusterQueue": "team-a", "priority": 0, "admittedAt": "2026-01-01T00:00:01Z",
         "charge": 5000},
        {"workload": "b/w3", "clusterQueue": "team-b", "priority": 0, "admittedAt": "2026-01-01T00:00:02Z",
         "charge": 2000}]
    assert [h["workload"] for h in holders(cluster, "ClusterQueue", "team-b", "default", "cpu", 10)] == ["b/w3"]
    assert holders(cluster, "Cohort", "root", "default", "cpu", 1)[0]["workload"] == "a/w1"
    assert holders(cluster, "Cohort", "root", "default", "memory", 10) == []


def test_a_clusterqueue_at_its_borrowing_limit_binds_when_the_root_has_room():
    """team-a (cpu 4, borrowingLimit 1) borrows its 1 with a/w1 (5 cpu); the root still has team-b's
    3 idle cpu, so team-a's own limit is the binding level for a/w2."""
    s = Scenario()
    s.flavor("default")
    s.cohort("root")
    s.cq("team-a", cohort="root", quotas={"cpu": ("4", "1", None)})
    s.cq("team-b", cohort="root", quotas={"cpu": "4"})
    s.lq("a/q", "team-a")
    s.submit("a/w1", "q", cpu="5")
    s.submit("a/w2", "q", cpu="1")
    s.run()
    (row,) = explain(s.engine.clusters["default"], "a/w2")["binding"]
    assert (row["kind"], row["name"], row["root"], row["available"], row["subtreeQuota"], row["usage"]) == (
        "ClusterQueue", "team-a", False, 0, 4000, 5000)


def test_cli_explain_from_a_store_says_when_the_wait_ended_and_who_held_the_quota(tmp_path):
    """From a store, a pending workload's explanation names the admission that ended its wait (the
    finish of a/w1 at 100 s admits a/w2, queued at 10 s: 1m30s in all), the binding level in words
    and, with ``--holders``, the workloads holding that level's quota."""
    import orjson
    from typer.testing import CliRunner

    from quotaledger.cli import app

    s = _three_holders()
    s.submit("a/w9", "q", cpu="100", at=70)  # more than the tree could ever give team-a
    finish = s.finish("a/w1", at=100)
    path = tmp_path / "events.ndjson"
    path.write_bytes(s.events_ndjson())
    url = f"sqlite:///{tmp_path}/s.db"
    runner = CliRunner()
    assert runner.invoke(app, ["replay", str(path), "--db", url]).exit_code == 0
    out = runner.invoke(app, ["explain", "a/w2", "--db", url, "--at", "2026-01-01T00:01:10Z", "--holders", "5",
                              "--json"])
    assert out.exit_code == 0, out.output
    got = orjson.loads(out.stdout)
    assert got["admittedLater"]["cause"] == finish["id"]
    assert (got["admittedLater"]["time"], got["admittedLater"]["waitedMs"]) == ("2026-01-01T00:01:40Z", 90_000)
    assert [w["workload"] for w in got["holders"][0]["workloads"]] == ["a/w1", "b/w3"]
    text = runner.invoke(app, ["explain", "a/w2", "--db", url, "--at", "2026-01-01T00:01:10Z", "--holders", "5"])
    assert "waiting 1m0s as of 2026-01-01T00:01:10Z; admitted at 2026-01-01T00:01:40Z" in text.stdout
    assert "after 1m30s in all" in text.stdout
    assert "binding: root Cohort root: 0 of 5 cpu free in flavor default (5 in use); it needs 1" in text.stdout
    assert "who holds cpu in flavor default under Cohort root" in text.stdout
    never = runner.invoke(app, ["explain", "a/w9", "--db", url])
    assert never.exit_code == 0, never.output
    assert "waiting 30s as of 2026-01-01T00:01:40Z; never admitted in the stored history" in never.stdout
    # team-a could hold at most the root's 5 (its own 4 + team-b's lendable 1): the root binds
    assert ("binding: root Cohort root: at most 5 cpu in flavor default even when everything is released; "
            "it needs 100") in never.stdout
