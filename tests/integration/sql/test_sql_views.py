"""`explain --db` and the tree view of `state --db`, from a stored history, on SQLite and PostgreSQL.

Numbers are worked out by hand from the scenario (cpu in cores as the views print it).
"""

from __future__ import annotations

import re
from pathlib import Path

import orjson
from typer.testing import CliRunner

from quotaledger.cli import app
from replay.sql_sink import replay_to_db
from tests.scenario.builder import Scenario, rfc3339
from tests.paths import DATA


def _tree(tmp_path: Path, db: str) -> Scenario:
    """org (no quota) ⊃ a (6 cpu), b (4 cpu, lendingLimit 3).  wa1 (8 cpu) borrows 2; wb1 (1 cpu) stays
    inside b's non-lendable part; wa2 (2 cpu) waits: org has 6 + 3 = 9, 8 are in use."""
    s = Scenario("lab")
    s.flavor("default", at=0)
    s.engine_config(halfLife="1m", interval="1m", at=1)
    s.cohort("org", at=2)
    s.cq("a", cohort="org", quotas={"cpu": "6"}, at=3)
    s.cq("b", cohort="org", quotas={"cpu": ("4", None, "3")}, at=4)
    s.lq("ns/a", "a", at=5)
    s.lq("ns/b", "b", at=6)
    s.submit("ns/wa1", "a", cpu="8", at=10)
    s.submit("ns/wb1", "b", cpu="1", at=20)
    s.submit("ns/wa2", "a", cpu="2", at=30)
    s.tick(at=600)
    path = tmp_path / "tree.ndjson"
    path.write_bytes(s.events_ndjson())
    replay_to_db(str(path), db, snapshot_every=4)
    return s


def _decayed(cores: int, since: float) -> str:
    """Decayed usage at 600 s of a LocalQueue applied at ``since`` that has held ``cores`` since before its
    first sample (60 s): the samples at 60, 120, ..., 600 s chain to ``1 − 0.5^((600 − since) / 60)``;
    shown with three significant digits."""
    return f"{cores * (1 - 0.5 ** ((600 - since) / 60)):.3g}"


def _row(text: str, label: str) -> list[str]:
    line = next(line for line in text.splitlines() if label in line)
    return line.split(label, 1)[1].split()


def test_state_tree_view_shows_the_hierarchy_with_hand_computed_numbers(db: str, tmp_path: Path) -> None:
    _tree(tmp_path, db)
    out = CliRunner().invoke(app, ["state", "--db", db])  # the only cluster of the store
    assert out.exit_code == 0, out.output
    text = out.output
    # columns: flavor resource nominal borrowed lent usage decayed pending
    # org: nominal 0, nothing borrowed or lent at the root; usage = what a and b charge to it: 8 (b's 1 cpu
    # stays in its local part); decayed = the sum of the LocalQueues below (ns/a since 5 s, ns/b since 6 s)
    a_decayed, b_decayed = _decayed(8, 5), _decayed(1, 6)
    org_decayed = f"{8 * (1 - 0.5 ** (595 / 60)) + (1 - 0.5 ** (594 / 60)):.3g}"
    assert _row(text, "Cohort org") == ["default", "cpu", "0", "0", "0", "8", org_decayed, "1"]
    # a: nominal 6, usage 8 → borrowed 2; idle 0 → lends nothing; wa2 pending
    assert _row(text, "├─ ClusterQueue a") == ["default", "cpu", "6", "2", "0", "8", a_decayed, "1"]
    # b: idle = (4 − local 1) − max(0, 1 − 1) = 3 ≥ the 2 a borrows → lent 2
    assert _row(text, "└─ ClusterQueue b") == ["default", "cpu", "4", "0", "2", "1", b_decayed, "0"]
    assert _row(text, "└─ LocalQueue ns/a") == ["default", "cpu", "-", "-", "-", "8", a_decayed, "1"]
    assert _row(text, "└─ LocalQueue ns/b") == ["default", "cpu", "-", "-", "-", "1", b_decayed, "0"]
    lines = text.splitlines()
    order = [i for label in ("Cohort org", "ClusterQueue a", "LocalQueue ns/a", "ClusterQueue b", "LocalQueue ns/b")
             for i, line in enumerate(lines) if label in line]
    assert order == sorted(order)
    assert "│  └─ LocalQueue ns/a" in text and "   └─ LocalQueue ns/b" in text
    # --json keeps the state JSON
    out = CliRunner().invoke(app, ["state", "--db", db, "--cluster", "lab", "--json"])
    assert orjson.loads(out.stdout)["clusters"]["lab"]["clusterQueues"]["a"]["pending"] == 1


def test_explain_from_the_database_matches_the_file_and_shows_the_admission(db: str, tmp_path: Path) -> None:
    _tree(tmp_path, db)
    path = str(tmp_path / "tree.ndjson")
    runner = CliRunner()
    from_db = runner.invoke(app, ["explain", "ns/wa2", "--db", db, "--json"])
    from_file = runner.invoke(app, ["explain", "ns/wa2", path, "--cluster", "lab", "--json"])
    assert from_db.exit_code == 0 and from_file.exit_code == 0, from_db.output + from_file.output
    pending = orjson.loads(from_db.stdout)
    # the store also knows what comes later: ns/wa2 is never admitted in this history
    assert pending.pop("admittedLater") is None
    assert pending == orjson.loads(from_file.stdout)
    assert pending["reason"] == "WaitingForQuota" and pending["positionInClusterQueue"] == 0

    out = runner.invoke(app, ["explain", "ns/wa1", "--db", db, "--json"])
    wa1 = orjson.loads(out.stdout)
    decision = wa1["admittedBy"]
    # wa1 was the first decision, caused by its own arrival at 10 s; it borrows from org (height 1)
    assert (decision["seq"], decision["cause"], decision["time"], decision["borrowing"]) == (
        1, "e-00008", rfc3339(10), 1)
    assert decision["podSetAssignments"][0]["flavors"] == {"cpu": "default"}
    a_then, org_then = decision["levels"]
    # right after it: a holds 8 of nominal 6; org 8 of 9 (wb1 had not arrived yet)
    assert a_then["resources"]["default"]["cpu"]["usage"] == 8000
    assert (org_then["resources"]["default"]["cpu"]["subtreeQuota"], org_then["resources"]["default"]["cpu"]["usage"],
            org_then["resources"]["default"]["cpu"]["available"]) == (9000, 8000, 1000)

    # --at before wa2 arrived: it does not exist yet; rendered view names the admitting decision
    early = runner.invoke(app, ["explain", "ns/wa2", "--db", db, "--at", rfc3339(25)])
    assert early.exit_code == 1 and "no workload ns/wa2 in cluster lab" in early.output
    text = runner.invoke(app, ["explain", "ns/wa1", "--db", db]).output
    assert "admitted by decision seq 1 at 2026-01-01T00:00:10Z (caused by event e-00008)" in text
    assert re.search(r"Cohort org\s+default\s+cpu\s+0\s+-\s+-\s+9\s+0\s+8\s+1\s+9", text)


def test_explain_needs_events_or_db() -> None:
    out = CliRunner().invoke(app, ["explain", "ns/w"])
    assert out.exit_code == 2 and "give an EVENTS file or --db" in out.output


def test_cluster_must_be_named_when_the_store_holds_several(db: str) -> None:
    replay_to_db(str(DATA / "verify" / "good.ndjson"), db)  # edge and lab
    for args in (["state", "--db", db], ["explain", "alpha/train-1", "--db", db]):
        out = CliRunner().invoke(app, args)
        assert out.exit_code == 1 and "give --cluster: the database holds 2 clusters (edge, lab)" in out.output
    out = CliRunner().invoke(app, ["explain", "beta/eval-1", "--db", db, "--cluster", "lab", "--json"])
    assert out.exit_code == 0 and orjson.loads(out.stdout)["admittedBy"]["seq"] == 4
