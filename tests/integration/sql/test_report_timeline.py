"""The report's time series from a real store (SQLite and PostgreSQL): admission fair sharing per
LocalQueue on a hand-worked history (``replay.reports.timeline.afs_series``), and the demo's page
and plots on the hand-made lab trace (sortable tables, wrapped SQL, no external script, every plot
written)."""

from __future__ import annotations

import json
from decimal import Decimal
from html.parser import HTMLParser
from pathlib import Path

import sqlalchemy as sa
from typer.testing import CliRunner

from quotaledger.cli import app
from replay.reports.tables import build_report
from replay.reports.timeline import afs_series, bucket_edges, leaves, share_series, wait_grid
from replay.sql_sink import replay_to_db
from tests.paths import DATA

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z, a multiple of the 5-minute sampling interval
MIN = 60_000
KUEUE = "kueue.x-k8s.io/v1beta2"
TOLERANCE = Decimal("1e-24")  # the hand-worked values below are computed in Python's default 28-digit context


def _workload(name: str, queue: str, cpu: str) -> dict:
    return {"apiVersion": KUEUE, "kind": "Workload", "metadata": {"name": name, "namespace": "t"},
            "spec": {"queueName": queue, "podSets": [{"name": "main", "count": 1, "requests": {"cpu": cpu}}]}}


def _afs_history(path: Path) -> Path:
    """AFS on (half-life 10 min, sampling every 5 min, cpu weight 1); ClusterQueue ``cq`` (8 cpu,
    usage-based admission mode, so admissions carry the entry penalty); LocalQueue ``t/a`` with
    fairSharing weight 2 and ``t/b`` with weight 1.  ``w1`` (2 cpu, ``t/a``) runs from 1 min to
    11 min; ``w2`` (1 cpu, ``t/b``) from 12 min on; a Tick at 15 min moves the clock there."""
    objects = [
        {"apiVersion": "quotaledger.io/v1alpha1", "kind": "EngineConfig", "metadata": {"name": "config"},
         "spec": {"admissionFairSharing": {"usageHalfLifeTime": "10m", "usageSamplingInterval": "5m",
                                           "resourceWeights": {"cpu": 1}}}},
        {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "std"}},
        {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": "cq"},
         "spec": {"admissionScope": {"admissionMode": "UsageBasedAdmissionFairSharing"},
                  "resourceGroups": [{"coveredResources": ["cpu"],
                                      "flavors": [{"name": "std", "resources": [{"name": "cpu", "nominalQuota": 8}]}]}]}},
        {"apiVersion": KUEUE, "kind": "LocalQueue", "metadata": {"name": "a", "namespace": "t"},
         "spec": {"clusterQueue": "cq", "fairSharing": {"weight": 2}}},
        {"apiVersion": KUEUE, "kind": "LocalQueue", "metadata": {"name": "b", "namespace": "t"},
         "spec": {"clusterQueue": "cq"}},
    ]
    events = [{"id": f"cfg-{i}", "time": T0, "cluster": "lab", "type": "Applied", "object": o}
              for i, o in enumerate(objects)]
    events += [
        {"id": "w1", "time": T0 + 1 * MIN, "cluster": "lab", "type": "Applied", "object": _workload("w1", "a", "2")},
        {"id": "w1-end", "time": T0 + 11 * MIN, "cluster": "lab", "type": "WorkloadFinished", "workload": "t/w1"},
        {"id": "w2", "time": T0 + 12 * MIN, "cluster": "lab", "type": "Applied", "object": _workload("w2", "b", "1")},
        {"id": "tick", "time": T0 + 15 * MIN, "cluster": "lab", "type": "Tick"},
    ]
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def test_afs_series_against_a_hand_worked_history(tmp_path: Path, db: str) -> None:
    replay_to_db(str(_afs_history(tmp_path / "afs.ndjson")), db)
    edges = [T0, T0 + 3 * MIN, T0 + 5 * MIN, T0 + 10 * MIN, T0 + 15 * MIN]
    series = afs_series(db, "lab", edges, T0, T0 + 15 * MIN)
    assert series is not None
    assert series.times == edges[1:]
    assert series.local_queues == ["t/a", "t/b"] and series.cluster_queue == {"t/a": "cq", "t/b": "cq"}
    assert series.weight == {"t/a": 2, "t/b": 1} and series.resource_weights == {"cpu": 1}
    # r = 0.5^(5 min / 10 min) = 1/√2 is what one sample keeps, A = 1 - r what it takes in.
    r = Decimal(2).sqrt() / 2
    a = 1 - r
    # t/a, in cores: 3 min: no sample since w1's admission at 1 min, only its entry penalty A × 2;
    # 5 min: the sample folds in 2 cores (A × 2) and the penalty ends; 10 min: (1 - A) × 2A + A × 2
    # = 2(1 - r²) = 1; 15 min: w1 ended at 11 min, so r × 1.
    expected_a = [2 * a, 2 * a, 2 * a * (2 - a), r * 2 * a * (2 - a)]
    assert abs(expected_a[2] - 1) < TOLERANCE
    # t/b: nothing until w2 (1 core) at 12 min; at 15 min the sample folds in A × 1 (its penalty ended)
    expected_b = [0, 0, 0, a]
    for got, want in zip(series.usage["t/a"], expected_a):
        assert abs(got - want) < TOLERANCE
    for got, want in zip(series.score["t/a"], expected_a):  # weight 2 halves the score
        assert abs(got - want / 2) < TOLERANCE
    for got, want in zip(series.score["t/b"], expected_b):
        assert abs(got - want) < TOLERANCE
    # the last sample is the engine's own number: the fair_sharing projection at 15 min, to every digit
    with sa.create_engine(db).connect() as conn:
        stored = dict(conn.execute(sa.text(
            "SELECT name, score FROM fair_sharing WHERE cluster = 'lab' AND kind = 'local_queue' "
            "AND resource = 'cpu'")).all())
    assert Decimal(str(stored["t/a"])) == series.score["t/a"][-1]
    assert Decimal(str(stored["t/b"])) == series.score["t/b"][-1]


def test_afs_series_is_none_without_admission_fair_sharing(tmp_path: Path) -> None:
    path = tmp_path / "plain.ndjson"
    lines = _afs_history(tmp_path / "afs.ndjson").read_text().splitlines()
    path.write_text("".join(line + "\n" for line in lines if "EngineConfig" not in line))
    url = f"sqlite:///{tmp_path / 'plain.db'}"
    replay_to_db(str(path), url)
    assert afs_series(url, "lab", [T0, T0 + 15 * MIN], T0, T0 + 15 * MIN) is None


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tables: list[dict] = []
        self.scripts: list[dict] = []
        self.cells: list[dict] = []
        self.images: list[str] = []
        self.style = ""
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        if tag == "table":
            self.tables.append(a)
        elif tag == "script":
            self.scripts.append(a)
        elif tag == "td":
            self.cells.append(a)
        elif tag == "img":
            self.images.append(a["src"])
        self._in_style = tag == "style"

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.style += data

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False


def test_lab_page_and_plots(tmp_path: Path, db: str) -> None:
    lab = DATA / "demo_lab"
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["demo", "--out", str(out), "--trace", str(lab / "jobs.csv"), "--mapping",
                                      str(lab / "mapping.yaml"), "--quota", str(lab / "quota"), "--until", "200",
                                      "--db", db])
    assert result.exit_code == 0, result.output
    # the data behind the heatmap and the share plot (hand-worked in tests/unit/test_report_timeline.py)
    report = build_report(db, "lab", start_ms=T0, end_ms=T0 + 200_000)
    edges = bucket_edges(report.start_ms, report.end_ms)
    grid = wait_grid(report.waited, leaves(report), edges)
    # team-a: a1 and a2 pending at 0 and 10 s, admitted at once; team-b: b1 (20 s) waits 40 s, b2 (30 s) 70 s
    assert grid.rows == ["team-a", "team-b"] and grid.waits == [[0, None, None, None], [70_000, None, None, None]]
    assert grid.counts == [[2, 0, 0, 0], [2, 0, 0, 0]]
    (pool,) = share_series(report, edges)
    assert pool.top == "lab" and pool.actual["team-b"][1] * 480 == 220
    for name in ("usage_vs_quota", "pending", "wait_cdf", "wait_heatmap", "fair_share"):
        png = out / f"{name}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000, name
    assert not (out / "afs_usage.png").exists()  # the lab quota has no admission fair sharing
    page = _Page()
    page.feed((out / "index.html").read_text())
    # the report table, five summary tables (no preemption happened) and the hottest heatmap cells
    assert len(page.tables) == 7 and all(t.get("class") == "sortable" for t in page.tables)
    assert page.scripts == [{}]  # one inline script, nothing loaded from elsewhere
    assert all("data-sort" in c for c in page.cells)
    assert "white-space: pre-wrap" in page.style and "overflow-x" not in page.style
    assert set(page.images) == {f"{n}.png" for n in ("usage_vs_quota", "pending", "wait_cdf", "wait_heatmap",
                                                     "fair_share")}
    text = (out / "index.html").read_text()
    assert "from 2026-01-01 00:00 UTC" in text and "Where and when workloads waited longest" in text
    # the report table's first column sorts back to the tree order; the longest-wait table has
    # team-b's cell (b1 40 s and b2 70 s became pending in the first minute) and only that one
    # (team-a's workloads never waited)
    assert [c["data-sort"] for c in page.cells[:1]] == ["0"]
    assert ('<tr><td data-sort="team-b">team-b</td><td data-sort="lab">lab</td>'
            f'<td data-sort="{T0}">2026-01-01 00:00 UTC</td><td data-sort="70000">1m10s</td>'
            '<td data-sort="2.0">2</td></tr>') in text
    hottest = text.split("<h2>Where and when workloads waited longest</h2>", 1)[1].split("</table>", 1)[0]
    assert hottest.count('<td data-sort="team-b">') == 1 and hottest.count('<td data-sort="team-a">') == 0
