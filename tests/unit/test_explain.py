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
