"""The report's time series (``replay.reports.timeline``) on hand-worked inputs: the bucket grid,
the wait heatmap's cells, actual vs fair share, and the page's generic sections and sort keys
(``replay.reports.page``)."""

from __future__ import annotations

from fractions import Fraction
from html.parser import HTMLParser

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replay.reports.page import Section, render_section, sort_key, utc
from replay.reports.tables import NodeStats, Report
from replay.reports.timeline import BUCKET_SIZES, bucket_edges, leaves, share_series, wait_grid

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
S = 1000
MIN = 60 * S
HOUR = 60 * MIN


def test_bucket_edges_are_epoch_aligned_and_cover_the_span() -> None:
    # 31 days into at most 150 buckets: 6 h is the smallest size that fits (124 buckets); 3 h would need 248
    edges = bucket_edges(T0 + 5 * MIN, T0 + 31 * 24 * HOUR, 150)
    assert edges[1] - edges[0] == 6 * HOUR and len(edges) == 125
    assert edges[0] == T0 and edges[-1] == T0 + 31 * 24 * HOUR
    # a span of 200 s: one-minute buckets from the minute before
    assert bucket_edges(T0 + 30 * S, T0 + 230 * S) == [T0, T0 + MIN, T0 + 2 * MIN, T0 + 3 * MIN, T0 + 4 * MIN]
    assert bucket_edges(T0, T0) == [T0, T0 + MIN]  # an empty span still has one bucket
    with pytest.raises(ValueError):
        bucket_edges(T0 + 1, T0)


@given(st.integers(0, 10**13), st.integers(0, 10**11), st.integers(1, 300))
def test_bucket_edges_property(start: int, length: int, target: int) -> None:
    edges = bucket_edges(start, start + length, target)
    size = edges[1] - edges[0]
    assert size in BUCKET_SIZES and edges[0] % size == 0
    assert all(b - a == size for a, b in zip(edges, edges[1:]))
    assert edges[0] <= start and edges[-1] >= start + length and edges[-2] < max(start + length, edges[0] + 1)
    assert len(edges) - 1 <= target or size == BUCKET_SIZES[-1]


def test_wait_grid_three_workloads_in_two_cluster_queues() -> None:
    # cq-a: one workload pending at 10 s, admitted at once; one pending at 70 s, admitted at 100 s (30 s)
    # cq-b: one pending at 20 s, admitted at 25 s (5 s); buckets [0, 60 s), [60 s, 120 s)
    waited = {"cq-a": [(T0 + 10 * S, 0), (T0 + 70 * S, 30 * S)], "cq-b": [(T0 + 20 * S, 5 * S)]}
    edges = [T0, T0 + MIN, T0 + 2 * MIN]
    grid = wait_grid(waited, ["cq-a", "cq-b"], edges)
    assert grid.waits == [[0, 30 * S], [5 * S, None]]
    assert grid.counts == [[1, 1], [1, 0]]
    # a row without history is all empty; a time before the grid goes to the first bucket
    grid = wait_grid({"cq-a": [(T0 - 5 * S, 7 * S), (T0 + 1, 1 * S), (T0 + 2, 2 * S), (T0 + 3, 9 * S)]},
                     ["cq-a", "cq-c"], edges, "mean")
    assert grid.waits == [[round(Fraction(19 * S, 4)), None], [None, None]]
    assert grid.waits[0][0] == 4750
    # p95 is nearest-rank: of 20 waits 1..20 s, the 19th smallest
    grid = wait_grid({"q": [(T0, k * S) for k in range(20, 0, -1)]}, ["q"], edges)
    assert grid.waits == [[19 * S, None]]
    with pytest.raises(ValueError):
        wait_grid(waited, ["cq-a"], edges, "p99")


def _lab_report() -> Report:
    """The hand-made history of tests/integration/sql/test_demo.py: cohort lab (no own quota),
    ClusterQueues team-a and team-b with 4 cpu each, span 0-200 s:
    a1 team-a 4 cpu 0-100 s; a2 team-a 4 cpu 10-60 s; b1 team-b 4 cpu pending 20 s, runs 60-110 s;
    b2 team-b 2 cpu pending 30 s, runs 100-110 s."""
    cpu = ("std", "cpu")
    pend = ("", "")
    nodes = [NodeStats("Cohort", "lab", None, 0, nominal={"cpu": 8000}),
             NodeStats("ClusterQueue", "team-a", "lab", 1, nominal={"cpu": 4000}),
             NodeStats("ClusterQueue", "team-b", "lab", 1, nominal={"cpu": 4000})]
    changes = {
        "team-a": [(T0, cpu, 4000), (T0 + 10 * S, cpu, 4000), (T0 + 60 * S, cpu, -4000), (T0 + 100 * S, cpu, -4000)],
        "team-b": [(T0 + 20 * S, pend, 1), (T0 + 30 * S, pend, 1), (T0 + 60 * S, pend, -1), (T0 + 60 * S, cpu, 4000),
                   (T0 + 100 * S, pend, -1), (T0 + 100 * S, cpu, 2000), (T0 + 110 * S, cpu, -6000)],
    }
    return Report("lab", T0, T0 + 200 * S, nodes, top=["team-a", "team-b"],
                  headline={"team-a": "cpu", "team-b": "cpu"}, changes=changes)


def test_share_series_of_the_lab_history() -> None:
    report = _lab_report()
    assert leaves(report) == ["team-a", "team-b"]
    edges = bucket_edges(report.start_ms, report.end_ms)  # 1 min: [0, 60), [60, 120), [120, 180), [180, 200]
    (pool,) = share_series(report, edges)
    # the top nodes are ClusterQueues themselves: the pool is their cohort, 8 cpu
    assert (pool.top, pool.resource, pool.capacity, pool.queues) == ("lab", "cpu", 8000, ["team-a", "team-b"])
    # team-a: 0-60 s a1 4 x 60 + a2 4 x 50 = 440 cpu-s of 8 x 60; 60-120 s a1 4 x 40 = 160 of 480
    assert pool.actual["team-a"] == [Fraction(440, 480), Fraction(160, 480), 0, 0]
    # team-b: nothing held 0-60 s (pending from 20 s); 60-120 s b1 4 x 50 + b2 2 x 10 = 220 of 480
    assert pool.actual["team-b"] == [0, Fraction(220, 480), 0, 0]
    # both have demand in the first two minutes (team-b: pending), neither later; equal nominal: 1/2 each
    assert pool.active["team-a"] == pool.active["team-b"] == [True, True, False, False]
    assert pool.fair["team-a"] == pool.fair["team-b"] == [Fraction(1, 2), Fraction(1, 2), 0, 0]


def test_fair_share_follows_the_guarantees_of_the_active_queues() -> None:
    report = _lab_report()
    report.node("team-a").nominal["cpu"] = 1000  # 1 : 4 when both want quota; team-b alone later
    report.changes["team-b"].append((T0 + 150 * S, ("", ""), 1))  # pending again from 150 s to the end
    (pool,) = share_series(report, bucket_edges(report.start_ms, report.end_ms))
    assert pool.fair["team-a"] == [Fraction(1, 5), Fraction(1, 5), 0, 0]
    assert pool.fair["team-b"] == [Fraction(4, 5), Fraction(4, 5), 1, 1]
    for q in ("team-a", "team-b"):  # zero guarantees share equally
        report.node(q).nominal["cpu"] = 0
    (pool,) = share_series(report, bucket_edges(report.start_ms, report.end_ms))
    assert pool.fair["team-a"][:2] == [Fraction(1, 2)] * 2 and pool.fair["team-b"][2:] == [1, 1]


@pytest.mark.parametrize("text, key", [
    ("3h07m", 3 * HOUR + 7 * MIN), ("2d04h", 52 * HOUR), ("250ms", 250), ("45s", 45 * S), ("0s", 0),
    ("51.2%", 51.2), ("1,234", 1234.0), ("80Gi", 80.0), ("-", None), ("", None),
    ("0s/1m10s/2h", 70 * S), ("8/16 gpu", 8.0), ("  cn-g00", "cn-g00"), ("ClusterQueue", "ClusterQueue"),
])
def test_sort_keys(text: str, key: object) -> None:
    assert sort_key(text) == key


class _Tables(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tables: list[dict] = []
        self.cells: list[dict] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "table":
            self.tables.append(dict(attrs))
        elif tag == "td":
            self.cells.append(dict(attrs))


def test_a_section_renders_as_a_sortable_table_with_sort_keys() -> None:
    section = Section("Waits", "intro <b>", {"queue": "where", "wait": "how long", "since": "when"},
                      [("q1", "3h07m", (utc(T0), T0)), ("q2", "-", (utc(T0 + HOUR), T0 + HOUR))], ["Cohort"])
    text = render_section(section)
    parser = _Tables()
    parser.feed(text)
    assert parser.tables == [{"class": "sortable"}]
    assert [c["data-sort"] for c in parser.cells] == ["q1", str(3 * HOUR + 7 * MIN), str(T0), "q2", "", str(T0 + HOUR)]
    assert "2026-01-01 00:00 UTC" in text and "intro &lt;b&gt;" in text and '<tr class="Cohort">' in text
    assert '<th title="how long">wait</th>' in text


_FAKE_DOM = """
function cell(v) { return {dataset: v === null ? {} : {sort: v}}; }
function Table(keys) {
  var handlers = [];
  var heads = [0, 1].map(function (i) {
    return {dataset: {}, addEventListener: function (ev, f) { handlers[i] = f; }};
  });
  var rows = keys.map(function (k, i) { return {id: i, cells: [cell(k[0]), cell(k[1])]}; });
  var body = {rows: rows, appendChild: function (r) {
    this.rows = this.rows.filter(function (x) { return x !== r; }).concat([r]); }};
  return {tHead: {rows: [{cells: heads}]}, tBodies: [body], click: function (i) { handlers[i](); },
          order: function () { return body.rows.map(function (r) { return r.id; }); }, heads: heads};
}
var table = Table(KEYS);
var document = {querySelectorAll: function () { return [table]; }};
SCRIPT
var out = [];
table.click(1); out.push(table.order(), table.heads[1].dataset.dir);
table.click(1); out.push(table.order(), table.heads[1].dataset.dir);
table.click(0); out.push(table.order(), table.heads[1].dataset.dir === undefined);
console.log(JSON.stringify(out));
"""


def test_the_sort_script_sorts_by_value_and_puts_missing_values_last() -> None:
    """The page's inline script, run by node against a minimal stand-in for the DOM."""
    import json
    import shutil
    import subprocess

    from replay.reports.page import _SORT_SCRIPT

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    # rows: (name, wait ms): "10" must sort after "9" (numbers, not text); "" (a "-") always last
    keys = [["b", "10"], ["a", ""], ["c", "9"], ["aa", "100"]]
    js = _FAKE_DOM.replace("KEYS", json.dumps(keys)).replace("SCRIPT", _SORT_SCRIPT)
    result = subprocess.run([node, "-e", js], capture_output=True, text=True, timeout=30, check=True)
    assert json.loads(result.stdout) == [[2, 0, 3, 1], "asc", [3, 0, 2, 1], "desc", [1, 3, 0, 2], True]
