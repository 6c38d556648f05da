"""A 5,000-level Cohort chain through every path that walks the tree: the state tree view, explain,
the report, snapshots written by the store and engine snapshot dump/load — none recurses on the depth
(Python's default limit is 1,000 frames)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from quotaledger.cli import app
from replay.reports.tables import build_report
from replay.sql_sink import replay_to_db
from statemodel import snapshot
from tests.scenario.builder import Scenario, admitted

DEPTH = 5_000


def _chain() -> Scenario:
    """c0 (2 cpu) <- c1 <- ... <- c4999 <- ClusterQueue leaf (0 cpu); w1 (1 cpu) borrows from c0."""
    s = Scenario("deep")
    s.flavor("default")
    s.cohort("c0", quotas={"cpu": "2"})
    for i in range(1, DEPTH):
        s.cohort(f"c{i}", parent=f"c{i - 1}")
    s.cq("leaf", cohort=f"c{DEPTH - 1}", quotas={"cpu": "0"})
    s.lq("ns/q", "leaf")
    s.submit("ns/w1", "q", cpu="1")
    s.submit("ns/w2", "q", cpu="2")
    return s


@pytest.mark.slow
def test_deep_chain_through_views_reports_and_snapshots(db: str, tmp_path: Path) -> None:
    s = _chain()
    assert admitted(s.run()) == ["ns/w1"]
    engine = snapshot.load(snapshot.dump(s.engine))
    assert engine.state() == s.engine.state()

    path = tmp_path / "deep.ndjson"
    path.write_bytes(s.events_ndjson())
    replay_to_db(str(path), db, snapshot_every=DEPTH // 2)
    runner = CliRunner()

    out = runner.invoke(app, ["state", "--db", db])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert any(" Cohort c0 " in f"{line} " for line in lines)
    # every level is drawn, the deep ones at a capped indentation; w2 (pending) counts at every level
    assert sum(1 for line in lines if f"Cohort c{DEPTH - 1} " in f"{line} ") == 1
    assert max(len(line) for line in lines) < 400

    out = runner.invoke(app, ["explain", "ns/w2", "--db", db, "--json"])
    assert out.exit_code == 0, out.output

    report = build_report(db, "deep")
    assert len(report.nodes) == DEPTH + 1
    assert report.node("leaf").depth == DEPTH
    assert report.node("c0").admitted == 1
