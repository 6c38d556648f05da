"""The demo report as text: table rows and example SQL queries (shared by the terminal and the web
page) and ``index.html``.

The page is a list of sections (:data:`SECTIONS`: functions returning a :class:`Section` — title,
intro, column meanings, rows), rendered by one generic :func:`render_section`; every table sorts by
a click on a header (an inline script, nothing loaded from elsewhere), times are UTC dates
(:func:`utc`), SQL wraps instead of overflowing.

Numbers are the exact integers of ``replay.reports.tables``; this module only rounds them for display:
durations to the two largest units (``3h07m``), ratios to one decimal of a percent.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING

from replay.reports import summary
from replay.reports.tables import GPU, KOORDINATOR, VOLCANO, NodeStats, Report, percentile
from replay.store.db import redacted

if TYPE_CHECKING:
    from replay.demo import DemoResult

__all__ = ["COLUMNS", "HEADERS", "KOORDINATOR_COLUMNS", "VOLCANO_COLUMNS", "PREEMPTION_COLUMNS", "SUMMARY_SECTIONS",
           "columns", "duration", "gpu_hours", "sections",
           "has_preemptions", "headers", "node_label", "percent",
           "table_rows", "example_queries", "write_index", "Section", "SECTIONS", "render_section", "sort_key",
           "utc", "report_section", "worst_waits_section", "PLOT_CAPTIONS"]

COLUMNS = {
    "node": "Cohort or ClusterQueue, indented under its parent; a Cohort's numbers cover its whole subtree",
    "kind": "Cohort or ClusterQueue",
    "admitted": "Admitted decisions of the engine during the simulation",
    "at start": "workloads already running when the trace begins (observed admissions), not counted as admitted",
    "wait p50/p95/max": "admission time minus submission time of the admitted workloads (nearest-rank percentiles)",
    "observed p50/p95/max": "the trace's own wait (scheduled minus created) of the same workloads",
    "cpu util": "time-weighted cpu usage / (nominal cpu of the subtree x span); above 100% = on borrowed quota",
    "GPU util": "the same for nvidia.com/gpu",
    "borrowing": "share of the span the subtree used more than its own nominal quota (some flavor and resource)",
    "lent": "share of the span it had unused lendable quota while its siblings borrowed beyond the parent's own quota",
    "pending peak": "most workloads pending at once",
    "pending end": "workloads still pending when the simulation stops",
}
"""Columns of :func:`table_rows` with a one-line meaning each (docs/demo.md "The demo report" has the details)."""
HEADERS = tuple(COLUMNS)

KOORDINATOR_COLUMNS = {
    "node": "ElasticQuota group, indented under its parent; a parent's numbers cover its whole subtree",
    "kind": "ParentQuota (is-parent) or LeafQuota",
    "admitted": "Admitted decisions of the engine during the simulation (pods)",
    "at start": "pods already bound to a node when the trace begins (observed), not counted as admitted",
    "wait p50/p95/max": COLUMNS["wait p50/p95/max"],
    "observed p50/p95/max": COLUMNS["observed p50/p95/max"],
    "cpu util": "time-weighted cpu used / (the group's min x span); above 100% = above its min on average",
    "GPU util": "the same for nvidia.com/gpu",
    "borrowing": "share of the span the group used more than its min (some resource)",
    "lent": "share of the span it had unused min it lends (allow-lent-resource) while its siblings used more than "
            "their mins plus the parent's min that no child holds",
    "min/max": "the group's min and max of its headline resource: GPUs (gpu) when its max has GPUs, else cpu cores",
    "runtime end": "its runtime (the water-filling's share) of that resource when the history ends",
    "used end": "what its running pods use of that resource when the history ends",
    "pending peak": "most pods pending at once",
    "pending end": "pods still pending when the simulation stops",
}
"""Columns of :func:`table_rows` under the ``koordinator`` quota model (docs/demo.md)."""

VOLCANO_COLUMNS = {
    "node": "Volcano queue, indented under its parent queue; a parent's numbers cover its whole subtree",
    "kind": "ParentQueue (has child queues) or LeafQueue (holds PodGroups)",
    "admitted": "Admitted decisions of the engine during the simulation (PodGroups)",
    "at start": "PodGroups whose pod was already bound when the trace begins (observed), not counted as admitted",
    "wait p50/p95/max": COLUMNS["wait p50/p95/max"],
    "observed p50/p95/max": COLUMNS["observed p50/p95/max"],
    "cpu util": "time-weighted cpu allocated / (the queue's deserved x span); above 100% = above deserved on average",
    "GPU util": "the same for nvidia.com/gpu",
    "borrowing": "share of the span the queue was allocated more than its deserved (some resource)",
    "lent": "share of the span it had unused deserved (a reclaimable queue) while its siblings were above their "
            "deserved plus the parent's deserved no child holds",
    "deserved/capability": "the queue's deserved and capability of its headline resource: GPUs (gpu) when its "
                           "deserved has GPUs, else cpu cores",
    "realCapability end": "its realCapability of that resource when the history ends",
    "allocated end": "what its bound pods hold of that resource when the history ends",
    "pending peak": "most PodGroups pending at once",
    "pending end": "PodGroups still pending when the simulation stops",
}
"""Columns of :func:`table_rows` under the ``volcano`` quota model (docs/demo.md)."""

PREEMPTION_COLUMNS = {
    "preempted": "Preempted decisions of its workloads (counted at the victim's ClusterQueue)",
    "lost GPU-h": "GPU-hours of the runs those preemptions ended (run time before the preemption x GPUs held)",
}
"""Columns :func:`headers` adds when the report has any preemption (docs/preemption.md)."""


def has_preemptions(report: Report) -> bool:
    """Whether any workload of the report was preempted."""
    return any(n.preempted for n in report.nodes)


def columns(report: Report) -> dict[str, str]:
    """Column → meaning of :func:`table_rows` for ``report``: :data:`COLUMNS` (the ``koordinator``
    model: :data:`KOORDINATOR_COLUMNS`), plus :data:`PREEMPTION_COLUMNS` when it has preemptions."""
    base = {KOORDINATOR: KOORDINATOR_COLUMNS, VOLCANO: VOLCANO_COLUMNS}.get(report.model, COLUMNS)
    return {**base, **PREEMPTION_COLUMNS} if has_preemptions(report) else dict(base)


def headers(report: Report) -> tuple[str, ...]:
    """The columns of :func:`table_rows` for ``report`` (:func:`columns`)."""
    return tuple(columns(report))


def node_label(report: Report) -> str:
    """What a row of the report is: ``Cohort and ClusterQueue``, ``quota group`` (``koordinator``) or
    ``Volcano queue`` (``volcano``)."""
    return {KOORDINATOR: "quota group", VOLCANO: "Volcano queue"}.get(report.model, "Cohort and ClusterQueue")


def gpu_hours(gpu_ms: int) -> str:
    """GPU × ms as GPU-hours with one decimal (``12.5``)."""
    return f"{float(Fraction(gpu_ms, 3_600_000)):,.1f}"

_UNITS = (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000))


def duration(ms: int | None) -> str:
    """``ms`` as the two largest units (``2d04h``, ``3h07m``, ``12m05s``, ``45s``, ``250ms``); ``-`` for ``None``."""
    if ms is None:
        return "-"
    if ms < 1000:
        return "0s" if ms == 0 else f"{ms}ms"
    i = next(i for i, (_, size) in enumerate(_UNITS) if ms >= size)  # ms ≥ 1 s: "s" always matches
    name, size = _UNITS[i]
    whole, rest = divmod(ms, size)
    if i + 1 == len(_UNITS):
        return f"{whole}{name}"
    sub_name, sub = _UNITS[i + 1]
    part = rest // sub
    return f"{whole}{name}{part:02d}{sub_name}" if part else f"{whole}{name}"


def percent(x: Fraction | None) -> str:
    """A ratio as a percentage with one decimal (``51.2%``); ``-`` for ``None``."""
    return "-" if x is None else f"{float(x * 100):.1f}%"


def _waits(values: list[int]) -> str:
    if not values:
        return "-"
    return "/".join(duration(percentile(values, p)) for p in (50, 95, 100))


def _row(n: NodeStats) -> tuple[str, ...]:
    return (("  " * n.depth) + n.name, n.kind, f"{n.admitted:,}", f"{n.running_at_start:,}", _waits(n.waits_ms),
            _waits(n.observed_waits_ms), percent(n.utilization("cpu")), percent(n.utilization(GPU)),
            percent(n.share(n.borrowing_ms)), percent(n.share(n.lent_ms)), f"{n.pending_peak:,}",
            f"{n.pending_at_end:,}")


def amount(resource: str, value: int | None) -> str:
    """A base-unit amount for display: cpu in cores, memory-like resources in GiB, others as
    counts; ``-`` for ``None``."""
    if value is None:
        return "-"
    if resource == "cpu":
        return f"{value / 1000:,.0f}"
    if "memory" in resource or "storage" in resource:
        return f"{value / (1 << 30):,.0f}Gi"
    return f"{value:,}"


def _row_elastic(n: NodeStats, by_guarantee: bool = False) -> tuple[str, ...]:
    """A ``koordinator`` row (headline resource: GPUs when its max has GPUs) or, ``by_guarantee``, a
    ``volcano`` row (GPUs when its deserved has GPUs: a translated queue's capability may hold the
    whole tree's GPUs although it deserves none)."""
    res = GPU if (n.nominal if by_guarantee else n.maximum).get(GPU, 0) > 0 else "cpu"
    unit = "gpu" if res == GPU else "cpu"
    return (("  " * n.depth) + n.name, n.kind, f"{n.admitted:,}", f"{n.running_at_start:,}", _waits(n.waits_ms),
            _waits(n.observed_waits_ms), percent(n.utilization("cpu")), percent(n.utilization(GPU)),
            percent(n.share(n.borrowing_ms)), percent(n.share(n.lent_ms)),
            f"{amount(res, n.nominal.get(res, 0))}/{amount(res, n.maximum.get(res))} {unit}",
            amount(res, n.runtime.get(res, 0)), amount(res, n.used.get(res, 0)),
            f"{n.pending_peak:,}", f"{n.pending_at_end:,}")


def _row_volcano(n: NodeStats) -> tuple[str, ...]:
    return _row_elastic(n, by_guarantee=True)


def table_rows(report: Report) -> list[tuple[str, ...]]:
    """One row per Cohort and ClusterQueue (``koordinator``: per quota group, ``volcano``: per queue), depth-first from the
    root (names indented by depth), columns :func:`headers`."""
    row = {KOORDINATOR: _row_elastic, VOLCANO: _row_volcano}.get(report.model, _row)
    if has_preemptions(report):
        return [row(n) + (f"{n.preempted:,}", gpu_hours(n.lost_gpu_ms)) for n in report.nodes]
    return [row(n) for n in report.nodes]


def _table(title: str, columns: dict[str, str], rows: list[tuple[str, ...]], note: str = "") -> "Section":
    """A summary table as a :class:`Section` (``note``: its intro)."""
    return Section(title, note, columns, rows)


def _ratio(x: Fraction | None) -> str:
    return "-" if x is None else f"{float(x):,.2f}"


def _q(values: tuple[int | None, ...]) -> tuple[str, ...]:
    return tuple(duration(v) for v in values)


def waits_section(report: Report, longest: list[summary.LongWait]) -> Section:
    """Waits per node: simulated p50/p95/p99/max next to the trace's own (``summary.wait_summary``)."""
    rows = []
    for w in summary.wait_summary(report):
        observed = _q(w.observed) if w.n_observed else ("no observed wait in the trace",) + ("",) * 3
        rows.append((("  " * w.node.depth) + w.node.name, f"{w.n:,}", *_q(w.simulated), f"{w.n_observed:,}",
                     *observed))
    return _table(f"Waits per {node_label(report)}: simulated and observed", {
        "node": "the row's node, indented under its parent (a parent covers its subtree)",
        "admitted": "workloads admitted in the simulation (their waits)",
        "p50": "simulated wait, nearest-rank 50th percentile", "p95": "95th percentile", "p99": "99th percentile",
        "max": "longest simulated wait",
        "observed n": "workloads of the row with a wait in the trace (scheduled - created)",
        "obs p50": "the trace's own wait, 50th percentile", "obs p95": "95th percentile",
        "obs p99": "99th percentile", "obs max": "longest wait in the trace"}, rows,
        "Simulated: admission - submission in the engine under the generated quota. Observed: what the real "
        "cluster did with the same workloads (not every trace has it).")


def priority_section(report: Report, longest: list[summary.LongWait]) -> Section:
    """Job completion time and bounded slowdown per priority class (``summary.priority_classes``)."""
    rows = []
    for st in summary.priority_classes(report):
        mean = st.mean_slowdown()
        rows.append((st.priority_class, f"{st.submitted:,}", f"{st.admitted:,}", f"{st.finished:,}",
                     *_q(tuple(percentile(st.waits_ms, p) for p in (50, 95, 99))),
                     *_q(tuple(percentile(st.jct_ms, p) for p in (50, 95, 99))),
                     _ratio(mean),
                     _ratio(percentile(st.slowdown, 95))))
    return _table("Per priority class: job completion time and bounded slowdown", {
        "priority class": "priorityClassName, else 'priority N' (spec.priority), else (none)",
        "submitted": "workloads submitted during the history", "admitted": "of those, admitted",
        "finished": "of those, finished within the history (JCT and slowdown count these)",
        "wait p50": "first submission to last admission, 50th percentile", "wait p95": "95th", "wait p99": "99th",
        "JCT p50": "job completion time = finish - submission, 50th percentile", "JCT p95": "95th",
        "JCT p99": "99th",
        "BSLD mean": "mean bounded slowdown max(1, (wait + run) / max(run, 10 s)) (Feitelson et al., JSSPP 1997)",
        "BSLD p95": "its 95th percentile"}, rows)


def stuck_section(report: Report, longest: list[summary.LongWait]) -> Section:
    """Pending demand next to idle quota per node (``NodeStats.pending_*``)."""
    rows = [(("  " * n.depth) + n.name, duration(n.pending_ms), percent(n.share(n.pending_ms)),
             duration(n.pending_room_ms), duration(n.pending_idle_ms)) for n in report.nodes]
    return _table("Pending demand next to idle quota (stuck queues)", {
        "node": "the row's node, indented under its parent",
        "pending time": "time it had at least one pending workload", "share": "that time as a share of the span",
        "pending, under nominal": "of that, time its usage was below its nominal quota in every flavor and resource "
                                  "it has nominal quota of: its guarantee had room while work waited",
        "pending, cohort idle": "of that, time its parent's subtree used less than its subtree nominal in every "
                                "such flavor and resource ('-' for a root)"}, rows,
        "A queue that waits while its own guarantee or its cohort has room is stuck on something other than quota "
        "size: a request larger than the room, a borrowing or lending limit, or quota lent out and not reclaimed.")


def fairness_section(report: Report, longest: list[summary.LongWait]) -> Section:
    """Jain's fairness index across ClusterQueues (``summary.fairness``)."""
    rows = [(scope, f"{n:,}", "-" if j is None else f"{float(j):.3f}") for scope, n, j in summary.fairness(report)]
    return _table("Jain's fairness index across ClusterQueues", {
        "scope": "all ClusterQueues, or those under one top node",
        "ClusterQueues": "counted (those with nominal quota of their headline resource)",
        "Jain's index": "(sum x)^2 / (n sum x^2) of x = time-weighted usage / nominal of the headline resource (GPUs "
                        "when it has nominal GPUs, else cpu); 1 = equal shares of their guarantees, 1/n = one alone"},
        rows)


def preemption_section(report: Report, longest: list[summary.LongWait]) -> Section | None:
    """Preemptions by reason and preemptor ClusterQueue (``summary.preemptions_by``); ``None`` without any."""
    rows = [(reason, queue, f"{count:,}", gpu_hours(gpu)) for reason, queue, count, gpu in summary.preemptions_by(report)]
    if not rows:
        return None
    return _table("Preemptions by reason and preemptor", {
        "reason": "the Preempted decision's reason (docs/preemption.md)",
        "preemptor ClusterQueue": "the ClusterQueue of the workload it was preempted for",
        "preemptions": "Preempted decisions", "lost GPU-h": PREEMPTION_COLUMNS["lost GPU-h"]}, rows)


def longest_section(report: Report, longest: list[summary.LongWait]) -> Section | None:
    """The longest waits with their binding level and the explain command (``summary.longest_waits``)."""
    if not longest:
        return None
    rows = []
    shown = 3
    for w in longest:
        bound = "; ".join(
            f"{b['kind']} {b['name']}{' (root)' if b.get('root') else ''}: {b['resource']}"
            f"{' in ' + b['flavor'] if b['flavor'] else ''}, "
            f"{amount(b['resource'], b['available'])} available of {amount(b['resource'], b['needed'])} needed"
            for b in w.binding[:shown]) or (w.reason or "-")
        if len(w.binding) > shown:
            bound += f"; and {len(w.binding) - shown} more flavor-resources (the explain command lists them)"
        rows.append((w.workload, w.cluster_queue, duration(w.wait_ms), bound, w.command))
    return _table("The longest waits and what bound them", {
        "workload": "namespace/name", "queue": "the ClusterQueue (quota group, Volcano queue) it waited in", "wait": "admission - submission",
        "binding level when submitted": "per flavor and resource it was short of, the level closest to the root "
                                        "whose available quota was below its need (statemodel.explain.binding)",
        "explain it": "the command that shows the whole explanation as of its submission"}, rows)


SUMMARY_SECTIONS = (waits_section, priority_section, stuck_section, fairness_section, preemption_section,
                    longest_section)
"""The summary tables of the report (``replay.reports.summary``), in order: each takes the report and
its longest waits and returns a :class:`Section` (``None``: nothing to show)."""


def sections(report: Report, longest: list[summary.LongWait]) -> list[Section]:
    """The :data:`SUMMARY_SECTIONS` that have something to show (the terminal shows them too)."""
    return [sec for sec in (f(report, longest) for f in SUMMARY_SECTIONS) if sec is not None]


def _of_result(make: Callable[[Report, list[summary.LongWait]], "Section | None"]
               ) -> Callable[["DemoResult"], "Section | None"]:
    """A :data:`SUMMARY_SECTIONS` function as a :data:`SECTIONS` one (it reads the demo's result)."""
    def section(result: DemoResult) -> Section | None:
        return make(result.report, result.longest)
    return section


def example_queries(cluster: str, model: str = "kueue") -> list[tuple[str, str]]:
    """Three ``(what it shows, SQL)`` queries that run on the demo's store (SQLite and PostgreSQL);
    the third reads the ``elastic_quotas`` projection under the ``koordinator`` model."""
    c = cluster.replace("'", "''")
    if model == KOORDINATOR:
        third = ("min, max, runtime and used of every quota group at the end (JSON maps, base units)",
                 "SELECT name, parent, min, max, runtime, used FROM elastic_quotas "
                 f"WHERE cluster = '{c}' ORDER BY name;")
    else:
        third = ("quota and usage of every cohort at the end, per flavor and resource (base units)",
                 "SELECT node_name, flavor, resource, nominal, borrowing_limit, lending_limit, usage FROM quotas "
                 f"WHERE cluster = '{c}' AND node_kind = 'cohort' ORDER BY node_name, flavor, resource;")
    return [
        ("admissions per ClusterQueue (koordinator: per quota)",
         f"SELECT cluster_queue, COUNT(*) AS admitted FROM decisions WHERE cluster = '{c}' AND type = 'Admitted' "
         "GROUP BY cluster_queue ORDER BY admitted DESC, cluster_queue LIMIT 10;"),
        ("the ten longest simulated waits (admission time - submission event time)",
         "SELECT d.workload, d.cluster_queue, (d.decision_time_ms - e.event_time_ms) / 1000 AS wait_s "
         "FROM decisions d JOIN events e ON e.cluster = d.cluster AND e.event_id = 'submit/' || d.workload "
         f"WHERE d.cluster = '{c}' AND d.type = 'Admitted' ORDER BY wait_s DESC, d.workload LIMIT 10;"),
        third,
    ]


def utc(ms: int) -> str:
    """Epoch ms as a UTC date and time to the minute (``2025-01-03 04:05 UTC``), as the page shows times."""
    from datetime import datetime, timezone

    return datetime.fromtimestamp(ms // 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


# --------------------------------------------------------------------------- sections of the page

Cell = str | tuple[str, "int | float | str | None"]
"""A table cell: its text, or ``(text, sort key)`` when the text does not sort by itself (``None``: sorts last)."""


@dataclass(frozen=True)
class Section:
    """One table of the page: ``title``, an ``intro`` paragraph (plain text), ``columns`` (header →
    meaning: the header's tooltip and the legend under the table) and ``rows`` (one cell per column);
    ``row_classes``: a CSS class per row (``Cohort`` rows are shaded), or empty."""

    title: str
    intro: str
    columns: dict[str, str]
    rows: list[tuple[Cell, ...]]
    row_classes: list[str] = field(default_factory=list)


_DURATION = re.compile(r"^(\d+)(ms|d|h|m|s)(?:(\d+)(d|h|m|s))?$")
_DURATION_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_NUMBER = re.compile(r"^-?[\d,]*\.?\d+")


def sort_key(text: str) -> int | float | str | None:
    """How a cell's text sorts: durations (``3h07m``) as ms, percentages and numbers (``1,234``,
    ``12.5%``, ``80Gi``) as numbers, ``p50/p95/max`` triples by their middle value, ``min/max``
    pairs by the first, ``-`` or empty as ``None`` (last), anything else as its text without the
    indentation."""
    t = text.strip()
    if t in ("", "-"):
        return None
    parts = t.split(" ", 1)[0].split("/")
    if len(parts) in (2, 3) and all(parts):
        return sort_key(parts[1] if len(parts) == 3 else parts[0])
    m = _DURATION.match(t)
    if m:
        return int(m[1]) * _DURATION_MS[m[2]] + (int(m[3]) * _DURATION_MS[m[4]] if m[3] else 0)
    m = _NUMBER.match(t)
    if m and m[0].replace(",", "").replace(".", "").lstrip("-"):
        return float(m[0].replace(",", ""))
    return t


def render_section(section: Section) -> str:
    """The HTML of one :class:`Section`: a heading, the intro, a sortable table (``class="sortable"``:
    the page's script sorts it by the clicked header; each cell's ``data-sort`` holds its
    :func:`sort_key`) and the column legend."""
    e = html.escape
    head = "".join(f'<th title="{e(meaning)}">{e(name)}</th>' for name, meaning in section.columns.items())
    body = []
    for i, row in enumerate(section.rows):
        cls = f' class="{e(section.row_classes[i])}"' if i < len(section.row_classes) else ""
        cells = []
        for cell in row:
            text, key = cell if isinstance(cell, tuple) else (cell, sort_key(cell))
            cells.append(f'<td data-sort="{e("" if key is None else str(key))}">{e(text)}</td>')
        body.append(f"<tr{cls}>{''.join(cells)}</tr>\n")
    legend = "".join(f"<dt>{e(name)}</dt><dd>{e(meaning)}</dd>" for name, meaning in section.columns.items())
    return (f"<h2>{e(section.title)}</h2>\n<p>{e(section.intro)}</p>\n"
            f'<table class="sortable"><thead><tr>{head}</tr></thead><tbody>\n{"".join(body)}</tbody></table>\n'
            f"<dl>{legend}</dl>\n")


def report_section(result: DemoResult) -> Section:
    """The report table: one row per Cohort and ClusterQueue (quota group), in tree order (sorting
    by the first column restores it)."""
    r = result.report
    guarantee = "the group's min" if r.model == KOORDINATOR else "nominal quota of the subtree"
    rows: list[tuple[Cell, ...]] = [((row[0], i),) + row[1:] for i, row in enumerate(table_rows(r))]
    return Section(
        f"Report per {node_label(r)} (quota model: {r.model})",
        "Waits are admission time − the time the workload became pending (nearest-rank percentiles); observed waits "
        "are the trace's own (scheduled − created) for the same workloads. Utilization = time-weighted usage / "
        f"({guarantee} × span); borrowing and lent are shares of the span. The section \"The demo report\" of "
        "docs/demo.md defines every column. Click a header to sort; the first column restores the tree order.",
        {h: columns(r)[h] for h in headers(r)}, rows, [n.kind for n in r.nodes])


WORST_BUCKETS = 15
"""Rows of :func:`worst_waits_section`."""


def worst_waits_section(result: DemoResult) -> Section | None:
    """The cells of the wait heatmap with the longest p95 wait: when and where workloads waited
    (``replay.reports.timeline.wait_grid`` on the plots' grid); ``None`` when nothing waited."""
    from replay.reports.timeline import bucket_edges, leaves, wait_grid

    r = result.report
    edges = bucket_edges(r.start_ms, r.end_ms)
    grid = wait_grid(r.waited, leaves(r), edges)
    cells = [(w, q, i) for q, row in zip(grid.rows, grid.waits) for i, w in enumerate(row) if w]
    if not cells:
        return None
    cells.sort(key=lambda c: (-c[0], c[1], c[2]))
    leaf = "quota group" if r.model == KOORDINATOR else "ClusterQueue"
    parents = {n.name: n.parent or "" for n in r.nodes}
    rows: list[tuple[Cell, ...]] = []
    for w, q, i in cells[:WORST_BUCKETS]:
        row = grid.rows.index(q)
        rows.append((q, parents.get(q, ""), (utc(edges[i]), edges[i]), duration(w), f"{grid.counts[row][i]:,}"))
    return Section(
        "Where and when workloads waited longest",
        f"The {len(rows)} cells of the wait heatmap (wait_heatmap.png) with the longest p95 wait: a {leaf} and a "
        f"time bucket of {duration(edges[1] - edges[0])} (UTC). quotaledger list --db URL --at TIME shows the queue "
        "at such a moment, quotaledger explain why a workload waited.",
        {leaf: "where the workloads were queued",
         "parent": "its parent (Cohort or parent quota group)",
         "bucket start (UTC)": "the bucket in which the workloads became pending",
         "p95 wait": "nearest-rank p95 of their waits (admission − became pending)",
         "workloads": "admitted workloads that became pending in the bucket"}, rows)


SECTIONS: list[Callable[["DemoResult"], "Section | None"]] = [
    report_section, *(_of_result(make) for make in SUMMARY_SECTIONS), worst_waits_section]
"""The page's tables, in order: each function returns a :class:`Section` (or ``None``: nothing to
show).  A new table is a function appended here."""

PLOT_CAPTIONS = {
    "usage_vs_quota": "Usage of each top node's headline resource over time, inside its quota band: dashed = the "
                      "guarantee, dotted = the ceiling, shaded = the borrowing range between them. The y axis starts "
                      "near the data, not at 0.",
    "pending": "Workloads waiting for admission at each moment, per top node.",
    "wait_cdf": "Share of admitted workloads that waited at most x: simulated (thick, on top) and as the real "
                "cluster did (dashed). A curve further left admits faster.",
    "wait_heatmap": "One row per ClusterQueue, one column per time bucket: the colour is the p95 wait of the workloads "
                    "that became pending in that bucket (green: none waited; grey: none became pending). Hot cells "
                    "are where and when to look.",
    "fair_share": "Per ClusterQueue, its actual share of the pool's guarantee (solid) and its fair share (dashed: own "
                  "guarantee / Σ guarantees of the ClusterQueues with demand in the bucket). Solid above dashed: it "
                  "runs on what others are entitled to.",
    "afs_usage": "Admission fair sharing (KEP-4136): each LocalQueue's score (decayed usage, weighted, over its "
                 "weight) over time; within a ClusterQueue the lowest score is admitted first. Lines: the highest "
                 "peaks; heatmap: every LocalQueue, grouped by ClusterQueue.",
}
"""One line per plot (by file stem) under it on the page (docs/demo.md "The plots" has more)."""

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 1400px; }
table { border-collapse: collapse; font-size: 13px; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; white-space: pre; }
th { background: #f0f0f0; cursor: pointer; user-select: none; }
th[data-dir=asc]::after { content: " \\25B2"; } th[data-dir=desc]::after { content: " \\25BC"; }
td:first-child, td:nth-child(2), th:first-child { text-align: left; }
tr.Cohort, tr.ParentQuota, tr.ParentQueue { background: #eef4ff; font-weight: 600; }
img { max-width: 100%; border: 1px solid #ddd; margin: 0.5em 0 0.3em; }
figure { margin: 0 0 1.5em; } figcaption { font-size: 13px; color: #444; max-width: 1100px; }
code, pre { background: #f6f6f6; padding: 2px 4px; }
pre { padding: 8px; white-space: pre-wrap; overflow-wrap: anywhere; word-break: break-word; }
dl { display: grid; grid-template-columns: max-content auto; gap: 2px 12px; font-size: 13px; }
dt { font-weight: 600; } dd { margin: 0; }
"""

_SORT_SCRIPT = """
document.querySelectorAll("table.sortable").forEach(function (table) {
  var heads = table.tHead.rows[0].cells;
  Array.prototype.forEach.call(heads, function (th, col) {
    th.addEventListener("click", function () {
      var dir = th.dataset.dir === "asc" ? "desc" : "asc";
      Array.prototype.forEach.call(heads, function (h) { delete h.dataset.dir; });
      th.dataset.dir = dir;
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      function key(row) {
        var v = row.cells[col].dataset.sort;
        if (v === "") return [2, 0];
        var n = Number(v);
        return isNaN(n) ? [1, v] : [0, n];
      }
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        if (x[0] !== y[0]) return x[0] - y[0];
        var c = x[1] < y[1] ? -1 : x[1] > y[1] ? 1 : 0;
        return dir === "asc" ? c : -c;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
"""
"""Sorts a ``table.sortable`` by the clicked header (again: the other way), by each cell's
``data-sort``; cells without a value last.  Inline: the page loads nothing from elsewhere."""

_SQL_BREAK = re.compile(r"\s+(?=(?:FROM|JOIN|WHERE|GROUP BY|ORDER BY|LIMIT)\b)")


def write_index(result: DemoResult) -> Path:
    """Write ``index.html`` into the demo's output folder: run summary, the tables of
    :data:`SECTIONS`, the plots with their captions and the example SQL queries (one clause a
    line, wrapped).  Self-contained: its only script is inline.  Returns its path.

    Raises:
        OSError: it cannot be written.
    """
    r = result.report
    e = html.escape
    sim = result.simulation
    sections = "".join(render_section(s) for s in (make(result) for make in SECTIONS) if s is not None)
    plots = "".join(f'<figure><h3>{e(p.stem.replace("_", " "))}</h3>\n<img src="{e(p.name)}" alt="{e(p.stem)}">\n'
                    f"<figcaption>{e(PLOT_CAPTIONS.get(p.stem, ''))}</figcaption></figure>\n" for p in result.pngs)
    queries = "".join(f"<p>{e(what)}:</p>\n<pre>{e(_SQL_BREAK.sub(chr(10) + '  ', sql))}</pre>\n"
                      for what, sql in example_queries(r.cluster, r.model))
    notes = "".join(f"<li>{e(n)}</li>" for n in result.config.notes)
    extra = "".join(result.html_sections)  # hook: sections of other reports (replay.reports.placement)
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>quotaledger demo: {e(r.cluster)}</title>
<style>{_CSS}</style></head><body>
<h1>quotaledger demo: {e(r.cluster)}</h1>
<p>{len(result.trace.jobs):,} jobs of the trace; {sim.events:,} events simulated
({sim.preadmitted:,} running at the start, {sim.submitted:,} submitted, {sim.admitted:,} admitted,
{sim.finished:,} finished, {sim.withdrawn:,} withdrawn, {sim.preempted:,} preempted; at the end {sim.running_at_end:,} running,
{sim.pending_at_end:,} pending) over {e(duration(r.end_ms - r.start_ms))} of trace time, from {e(utc(r.start_ms))}
to {e(utc(r.end_ms))}. Engine hash <code>{e(result.hash)}</code>.</p>
<ul>{notes}</ul>
<p>SQL store: <code>{e(redacted(result.url))}</code>; quota manifests: <code>quota/</code>; events: <code>{e(result.events.name)}</code>;
exact numbers: <code>report.json</code>.</p>
{sections}{extra}<h2>Plots</h2>
{plots}
<h2>Query the store</h2>
{queries}
<script>{_SORT_SCRIPT}</script>
</body></html>
"""
    path = result.out / "index.html"
    path.write_text(page, encoding="utf-8")
    return path
