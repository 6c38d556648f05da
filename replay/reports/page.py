"""The demo report as text: table rows and example SQL queries (shared by the terminal and the web
page) and ``index.html``.

Numbers are the exact integers of ``replay.reports.tables``; this module only rounds them for display:
durations to the two largest units (``3h07m``), ratios to one decimal of a percent.
"""

from __future__ import annotations

import html
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING

from replay.reports.tables import GPU, KOORDINATOR, NodeStats, Report, percentile
from replay.store.db import redacted

if TYPE_CHECKING:
    from replay.demo import DemoResult

__all__ = ["COLUMNS", "HEADERS", "KOORDINATOR_COLUMNS", "PREEMPTION_COLUMNS", "columns", "duration", "gpu_hours",
           "has_preemptions", "headers", "node_label", "percent",
           "table_rows", "example_queries", "write_index"]

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
    base = KOORDINATOR_COLUMNS if report.model == KOORDINATOR else COLUMNS
    return {**base, **PREEMPTION_COLUMNS} if has_preemptions(report) else dict(base)


def headers(report: Report) -> tuple[str, ...]:
    """The columns of :func:`table_rows` for ``report`` (:func:`columns`)."""
    return tuple(columns(report))


def node_label(report: Report) -> str:
    """What a row of the report is: ``Cohort and ClusterQueue``, or ``quota group`` (``koordinator``)."""
    return "quota group" if report.model == KOORDINATOR else "Cohort and ClusterQueue"


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


def _row_elastic(n: NodeStats) -> tuple[str, ...]:
    res = GPU if n.maximum.get(GPU, 0) > 0 else "cpu"
    unit = "gpu" if res == GPU else "cpu"
    return (("  " * n.depth) + n.name, n.kind, f"{n.admitted:,}", f"{n.running_at_start:,}", _waits(n.waits_ms),
            _waits(n.observed_waits_ms), percent(n.utilization("cpu")), percent(n.utilization(GPU)),
            percent(n.share(n.borrowing_ms)), percent(n.share(n.lent_ms)),
            f"{amount(res, n.nominal.get(res, 0))}/{amount(res, n.maximum.get(res))} {unit}",
            amount(res, n.runtime.get(res, 0)), amount(res, n.used.get(res, 0)),
            f"{n.pending_peak:,}", f"{n.pending_at_end:,}")


def table_rows(report: Report) -> list[tuple[str, ...]]:
    """One row per Cohort and ClusterQueue (``koordinator``: per quota group), depth-first from the
    root (names indented by depth), columns :func:`headers`."""
    row = _row_elastic if report.model == KOORDINATOR else _row
    if has_preemptions(report):
        return [row(n) + (f"{n.preempted:,}", gpu_hours(n.lost_gpu_ms)) for n in report.nodes]
    return [row(n) for n in report.nodes]


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


_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 1400px; }
table { border-collapse: collapse; font-size: 13px; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; white-space: pre; }
th { background: #f0f0f0; }
td:first-child, td:nth-child(2), th:first-child { text-align: left; }
tr.Cohort, tr.ParentQuota { background: #eef4ff; font-weight: 600; }
img { max-width: 100%; border: 1px solid #ddd; margin: 0.5em 0 1.5em; }
code, pre { background: #f6f6f6; padding: 2px 4px; }
pre { padding: 8px; overflow-x: auto; }
dl { display: grid; grid-template-columns: max-content auto; gap: 2px 12px; font-size: 13px; }
dt { font-weight: 600; } dd { margin: 0; }
"""


def write_index(result: DemoResult) -> Path:
    """Write ``index.html`` into the demo's output folder: run summary, the report table, the
    plots and the example SQL queries.  Returns its path.

    Raises:
        OSError: it cannot be written.
    """
    r = result.report
    e = html.escape
    sim = result.simulation
    meanings = columns(r)
    head = "".join(f'<th title="{e(meanings[h])}">{e(h)}</th>' for h in headers(r))
    legend = "".join(f"<dt>{e(h)}</dt><dd>{e(meanings[h])}</dd>" for h in headers(r))
    body = "".join(
        f'<tr class="{e(n.kind)}">' + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>\n"
        for n, row in zip(r.nodes, table_rows(r)))
    plots = "".join(f'<h3>{e(p.stem.replace("_", " "))}</h3>\n<img src="{e(p.name)}" alt="{e(p.stem)}">\n'
                    for p in result.pngs)
    queries = "".join(f"<p>{e(what)}:</p>\n<pre>{e(sql)}</pre>\n"
                      for what, sql in example_queries(r.cluster, r.model))
    notes = "".join(f"<li>{e(n)}</li>" for n in result.config.notes)
    guarantee = "the group's min" if r.model == KOORDINATOR else "nominal quota of the subtree"
    extra = "".join(result.html_sections)  # hook: sections of other reports (replay.reports.placement)
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>quotaledger demo: {e(r.cluster)}</title>
<style>{_CSS}</style></head><body>
<h1>quotaledger demo: {e(r.cluster)}</h1>
<p>{len(result.trace.jobs):,} jobs of the trace; {sim.events:,} events simulated
({sim.preadmitted:,} running at the start, {sim.submitted:,} submitted, {sim.admitted:,} admitted,
{sim.finished:,} finished, {sim.withdrawn:,} withdrawn, {sim.preempted:,} preempted; at the end {sim.running_at_end:,} running,
{sim.pending_at_end:,} pending) over {e(duration(r.end_ms - r.start_ms))} of trace time.
Engine hash <code>{e(result.hash)}</code>.</p>
<ul>{notes}</ul>
<p>SQL store: <code>{e(redacted(result.url))}</code>; quota manifests: <code>quota/</code>; events: <code>{e(result.events.name)}</code>;
exact numbers: <code>report.json</code>.</p>
<h2>Report per {e(node_label(r))} (quota model: {e(r.model)})</h2>
<p>Waits are admission time − submission time (nearest-rank percentiles); observed waits are the trace's own
(scheduled − created) for the same workloads. Utilization = time-weighted usage / ({e(guarantee)} × span);
borrowing and lent are shares of the span. The section "The demo report" of docs/demo.md defines every column.</p>
<table><thead><tr>{head}</tr></thead><tbody>
{body}</tbody></table>
<dl>{legend}</dl>
{extra}
<h2>Plots</h2>
{plots}
<h2>Query the store</h2>
{queries}
</body></html>
"""
    path = result.out / "index.html"
    path.write_text(page, encoding="utf-8")
    return path
