"""PNG plots of a demo report (matplotlib, Agg backend: no display needed).  docs/demo.md "The
plots" says how to read each one.

- ``usage_vs_quota.png``: per top node (the children of the root cohort), usage of its headline
  resource over time (GPUs when its subtree has GPU quota, else cpu cores) inside its quota band:
  the guarantee (Kueue: subtree nominal quota; Koordinator: min) dashed, the ceiling (nominal +
  borrowingLimit; max) dotted, the range between them shaded.  The y axis spans the data and the
  band (not pinned at 0), so the band is never a hairline.
- ``pending.png``: pending workloads over time, one line per top node.
- ``wait_cdf.png``: per top node, the share of admitted workloads that waited longer than x (the
  complementary CDF, log scale: a tail of a few workloads in thousands stays visible), simulated
  (thick, drawn on top) and observed in the trace (dashed); a marker at each longest wait.
- ``wait_heatmap.png``: rows = ClusterQueues, columns = time buckets, colour = p95 wait of the
  workloads that became pending in the bucket (``replay.reports.timeline.wait_grid``); a log
  colour scale when the waits span more than two orders of magnitude; zero waits and empty cells
  in their own colours.
- ``fair_share.png``: per ClusterQueue of each top node, its actual share and its fair share of
  the pool per bucket (``replay.reports.timeline.share_series``).
- ``afs_usage.png`` (admission fair sharing on): per LocalQueue, its score over time
  (``replay.reports.timeline.afs_series``): the LocalQueues with the highest scores as lines, every
  LocalQueue as a heatmap row grouped by ClusterQueue.

Time axes are dates in UTC.  The numbers are the report's exact integers (and the engine's
decimals), converted to display units only here.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from replay.reports.page import duration
from replay.reports.tables import GPU, KOORDINATOR, VOLCANO, Report, percentile
from replay.reports.timeline import (AfsSeries, ShareSeries, WaitGrid, afs_series, bucket_edges, leaves,
                                     share_series, wait_grid)

__all__ = ["write_plots", "display_unit", "model_labels"]

UTC = timezone.utc
LOG_SPAN = 100
"""The heatmaps use a log colour scale when the largest positive value exceeds the smallest by more than this factor."""
TOP_LOCAL_QUEUES = 8
"""LocalQueues drawn as lines in ``afs_usage.png`` (the highest peak scores)."""

_LABELS = {
    "kueue": ("nominal quota of the subtree", "nominal + borrowingLimit", "cohort", "workloads", "nominal quota",
              "ClusterQueue"),
    KOORDINATOR: ("min of the group", "max of the group", "group", "pods", "min", "quota group"),
    VOLCANO: ("deserved of the queue", "capability of the queue", "queue", "PodGroups", "deserved", "queue"),
}


def model_labels(model: str) -> tuple[str, str, str, str, str, str]:
    """``(guarantee, ceiling, level, unit, short guarantee, leaf)`` wording of the plots under quota
    ``model`` (Kueue's wording for a model it does not know)."""
    return _LABELS.get(model, _LABELS["kueue"])


def display_unit(resource: str) -> tuple[float, str]:
    """``(base units per display unit, label)``: cpu in cores, bytes in GiB, others as counts."""
    if resource == "cpu":
        return 1000.0, "cores"
    if resource == GPU:
        return 1.0, "GPUs"
    if "memory" in resource or "storage" in resource:
        return float(1 << 30), "GiB"
    return 1.0, resource


def _date(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def _date_axis(ax: object, report: Report, fixed: bool = False) -> None:
    """Dates (UTC) on the x axis of ``ax``, over the report's span; ``fixed``: the tick positions
    are chosen once (cheaper when many axes share them)."""
    import matplotlib.dates as mdates
    from matplotlib.ticker import FixedLocator

    start, end = _date(report.start_ms), _date(report.end_ms)
    locator = mdates.AutoDateLocator(tz=UTC)
    formatter = mdates.ConciseDateFormatter(locator, tz=UTC)
    if fixed:
        ticks = [t for t in locator.tick_values(start, end) if mdates.date2num(start) <= t <= mdates.date2num(end)]
        locator = FixedLocator(ticks)
        formatter = mdates.ConciseDateFormatter(mdates.AutoDateLocator(tz=UTC), tz=UTC)
    ax.xaxis.set_major_locator(locator)  # type: ignore[attr-defined]
    ax.xaxis.set_major_formatter(formatter)  # type: ignore[attr-defined]
    ax.set_xlim(start, end)  # type: ignore[attr-defined]


def _legend(ax: object) -> None:
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, borderaxespad=0)  # type: ignore[attr-defined]


def write_plots(report: Report, out: str | Path, progress: Callable[[int, int], None] | None = None,
                url: str | None = None) -> list[Path]:
    """Write the plots of the module docstring into ``out``; returns the files written.  A plot with
    nothing to show (no top node, no admitted workload, no ClusterQueue, admission fair sharing
    never on or no ``url`` to read it from) is not written.

    Args:
        report: the report (``replay.reports.tables.build_report``).
        out: the output folder.
        progress: called with ``(plots done, plots in all)``.
        url: the store the report was built from: ``afs_usage.png`` reads it.

    Raises:
        OSError: a file cannot be written.
        SinkError: ``url`` cannot be read.
    """
    import matplotlib

    matplotlib.use("Agg")

    out = Path(out)
    step = progress or (lambda done, total: None)
    edges = bucket_edges(report.start_ms, report.end_ms)
    makers: list[Callable[[], Path | None]] = [
        lambda: _usage_vs_quota(report, out), lambda: _pending(report, out), lambda: _wait_cdf(report, out),
        lambda: _wait_heatmap(report, wait_grid(report.waited, leaves(report), edges), out),
        lambda: _fair_share(report, share_series(report, edges), out),
        lambda: _afs(report, afs_series(url, report.cluster, edges, report.start_ms, report.end_ms)
                     if url is not None and report.model == "kueue" else None, out)]
    written: list[Path] = []
    for i, make in enumerate(makers):
        path = make()
        if path is not None:
            written.append(path)
        step(i + 1, len(makers))
    return written


def _usage_vs_quota(report: Report, out: Path) -> Path | None:
    import matplotlib.pyplot as plt
    from matplotlib.ticker import StrMethodFormatter

    top = report.top
    if not top:
        return None
    floor_label, ceiling_label, level, _, _, _ = model_labels(report.model)
    fig, axes = plt.subplots(len(top), 1, figsize=(13, 3.4 * len(top) + 0.8), sharex=True, squeeze=False)
    for ax, name in zip(axes[:, 0], top):
        res = report.headline[name]
        scale, unit = display_unit(res)
        pts = _settled(report.usage_series[name])
        xs = [_date(t) for t, _ in pts] + [_date(report.end_ms)]
        ys = [v / scale for _, v in pts] + [pts[-1][1] / scale]
        nominal, ceiling = report.limits[name]
        lo = min(min(ys), nominal / scale)
        hi = max(max(ys), (ceiling if ceiling is not None else nominal) / scale)
        if ceiling is not None and ceiling > nominal:
            ax.axhspan(nominal / scale, ceiling / scale, color="tab:orange", alpha=0.25, lw=0,
                       label=f"borrowing range ({floor_label} → {ceiling_label})")
        ax.axhline(nominal / scale, color="tab:green", ls="--", lw=1.3,
                   label=f"{floor_label}: {nominal / scale:,.0f} {unit}")
        if ceiling is not None:
            ax.axhline(ceiling / scale, color="tab:red", ls=":", lw=1.5,
                       label=f"{ceiling_label}: {ceiling / scale:,.0f} {unit}")
        ax.step(xs, ys, where="post", lw=1.1, color="tab:blue", label=f"usage, simulated ({unit})", zorder=3)
        pad = max((hi - lo) * 0.08, hi * 0.005, 1e-9)
        ax.set_ylim(max(0.0, lo - pad), hi + pad)
        ax.set_title(f"{name}: {res} usage vs quota", loc="left", fontsize=10)
        ax.set_ylabel(f"{res} ({unit})")
        ax.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
        ax.grid(alpha=0.3)
        _legend(ax)
    _date_axis(axes[-1, 0], report)
    axes[-1, 0].set_xlabel("time (UTC)")
    fig.suptitle(f"{report.cluster}: usage vs quota per top {level} (quota model {report.model}; the y axis "
                 "starts near the data, not at 0)", fontsize=11)
    fig.tight_layout()
    return _save(fig, out / "usage_vs_quota.png")


def _settled(points: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """A step series with only the last value of each instant (the series starts with ``(start, 0)``
    even when the first events at ``start`` already hold quota: that 0 never lasted)."""
    out: list[tuple[int, int]] = []
    for t, v in points:
        if out and out[-1][0] == t:
            out[-1] = (t, v)
        else:
            out.append((t, v))
    return out


def _pending(report: Report, out: Path) -> Path | None:
    import matplotlib.pyplot as plt

    if not report.top:
        return None
    _, _, _, unit, _, _ = model_labels(report.model)
    fig, ax = plt.subplots(figsize=(13, 4))
    for name in report.top:
        pts = _settled(report.pending_series[name])
        xs = [_date(t) for t, _ in pts] + [_date(report.end_ms)]
        ys = [v for _, v in pts] + [pts[-1][1]]
        ax.step(xs, ys, where="post", lw=1.2, label=name)
    ax.set_title(f"{report.cluster}: pending {unit} over time (quota model {report.model})", loc="left", fontsize=11)
    _date_axis(ax, report)
    ax.set_xlabel("time (UTC)")
    ax.set_ylabel(f"pending {unit} (count)")
    ax.set_ylim(bottom=0)
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.grid(alpha=0.3)
    _legend(ax)
    fig.tight_layout()
    return _save(fig, out / "pending.png")


def _longer_than(waits: list[int]) -> tuple[list[float], list[float]]:
    """The complementary CDF of sorted ``waits`` (ms) as a step series in seconds: at each x from
    0 through the distinct waits, the share of waits longer than x (the last point, 0, is left
    out: a log axis cannot show it)."""
    n = len(waits)
    xs = [0.0]
    ys = [(n - bisect_right(waits, 0)) / n]
    for w in sorted(set(waits)):
        longer = n - bisect_right(waits, w)
        if w > 0 and longer:
            xs.append(w / 1000)
            ys.append(longer / n)
    return xs, ys


def _wait_cdf(report: Report, out: Path) -> Path | None:
    import matplotlib.pyplot as plt

    nodes = {n.name: n for n in report.nodes if n.name in report.top}
    with_waits = [name for name in report.top if nodes[name].waits_ms]
    if not with_waits:
        return None
    fig, ax = plt.subplots(figsize=(13, 4.8))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    smallest = 1.0
    for i, name in enumerate(with_waits):
        node = nodes[name]
        color = colors[i % len(colors)]
        # observed first and thin, simulated last and thick: the simulated curve stays on top
        for waits, style, lw, z, what in ((node.observed_waits_ms, "--", 1.1, 2, "observed in the trace"),
                                          (node.waits_ms, "-", 2.4, 3, "simulated")):
            if not waits:
                continue
            xs, ys = _longer_than(waits)
            smallest = min(smallest, 1 / len(waits))
            line = ax.step(xs, ys, where="post", ls=style, color=color, lw=lw, zorder=z,
                           label=f"{name}, {what} (n={len(waits):,}, waited at all {ys[0]:.2%}, p95 "
                                 f"{duration(percentile(waits, 95))}, max {duration(waits[-1])})")
            ax.plot([waits[-1] / 1000], [1 / len(waits)], marker="o" if what == "simulated" else "x",
                    color=line[0].get_color(), ms=6, zorder=z)
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_yscale("log")
    ax.set_xlim(left=0)
    ax.set_ylim(smallest / 2, 1.5)
    ax.set_title(f"{report.cluster}: share of admitted workloads that waited longer than x (admission − the time "
                 "it became pending; the marker is the longest wait)", loc="left", fontsize=10)
    ax.set_xlabel("wait x (seconds; linear below 1 s, logarithmic above)")
    ax.set_ylabel("share waiting longer than x (log)")
    ax.grid(alpha=0.3, which="both")
    _legend(ax)
    fig.tight_layout()
    return _save(fig, out / "wait_cdf.png")


def _heat_norm(values: list[float]) -> tuple[object, bool]:
    """A colour norm for the positive ``values``: logarithmic when they span more than
    :data:`LOG_SPAN`; returns ``(norm, is_log)``."""
    from matplotlib.colors import LogNorm, Normalize

    positive = [v for v in values if v > 0]
    if not positive:
        return Normalize(vmin=0.5, vmax=1.0), False
    lo, hi = min(positive), max(positive)
    if hi > lo * LOG_SPAN:
        return LogNorm(vmin=lo, vmax=hi), True
    return Normalize(vmin=lo * 0.999, vmax=hi if hi > lo else lo * 1.001), False


def _wait_heatmap(report: Report, grid: WaitGrid, out: Path) -> Path | None:
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.patches import Patch

    if not grid.rows or not any(c for row in grid.counts for c in row):
        return None
    data = np.array([[np.nan if v is None else v / 1000 for v in row] for row in grid.waits], dtype=float)
    zero_mask = data == 0
    norm, is_log = _heat_norm([float(v) for v in data[~np.isnan(data)]])
    cmap = plt.get_cmap("YlOrRd").with_extremes(under="#cfe8cf", bad="#eeeeee")  # zero waits; no workload
    shown = np.where(zero_mask, norm.vmin * 0.5 if norm.vmin > 0 else -1.0, data)  # type: ignore[attr-defined]
    x = mdates.date2num([_date(e) for e in grid.edges])
    y = np.arange(len(grid.rows) + 1)
    fig, ax = plt.subplots(figsize=(14, 0.24 * len(grid.rows) + 2.2))
    mesh = ax.pcolormesh(x, y, np.ma.masked_invalid(shown), cmap=cmap, norm=norm, shading="flat")
    ax.set_yticks(np.arange(len(grid.rows)) + 0.5)
    ax.set_yticklabels(grid.rows, fontsize=7)
    ax.invert_yaxis()
    parents = {n.name: n.parent for n in report.nodes}
    for i in range(1, len(grid.rows)):
        if parents.get(grid.rows[i]) != parents.get(grid.rows[i - 1]):
            ax.axhline(i, color="#333333", lw=0.8)
    ax.xaxis_date(tz=UTC)
    _date_axis(ax, report)
    ax.set_xlabel(f"time (UTC) the workload became pending; buckets of {duration(grid.edges[1] - grid.edges[0])}")
    waited = bool(np.any(data > 0))
    if waited:
        bar = fig.colorbar(mesh, ax=ax, extend="min", pad=0.01, fraction=0.04)
        bar.set_label(f"{grid.statistic} wait (seconds{', log scale' if is_log else ''})")
    ax.legend(handles=[Patch(color="#cfe8cf", label="0 s: admitted at once"),
                       Patch(color="#eeeeee", label="no workload became pending")],
              loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=2, fontsize=8, frameon=False)
    leaf = model_labels(report.model)[5]
    ax.set_title(f"{report.cluster}: {grid.statistic} wait per {leaf} over time (quota model {report.model})"
                 + ("" if waited else ": no workload waited"), loc="right", fontsize=11)
    fig.tight_layout()
    return _save(fig, out / "wait_heatmap.png")


def _fair_share(report: Report, series: list[ShareSeries], out: Path) -> Path | None:
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    panels = [(sr, q) for sr in series for q in sr.queues]
    if not panels:
        return None
    _, _, _, _, short, leaf = model_labels(report.model)
    cols = 4
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(15, 1.9 * rows + 1.2), sharex=True, squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, (sr, q) in zip(axes.flat, panels):
        scale, unit = display_unit(sr.resource)
        xs = [_date(e) for e in sr.edges]
        actual = [float(v) * 100 for v in sr.actual[q]]
        fair = [float(v) * 100 for v in sr.fair[q]]
        ax.stairs(fair, xs, baseline=None, color="tab:gray", ls="--", lw=1.2, label="fair share")
        ax.stairs(actual, xs, baseline=None, color="tab:blue", lw=1.4, label="actual share", zorder=3)
        top = max(max(actual), max(fair), 1.0)
        ax.set_ylim(0, top * 1.15)
        ax.yaxis.set_major_locator(MaxNLocator(4))  # fewer ticks: 32 small panels draw faster
        ax.set_title(f"{sr.top} / {q} ({short} {sr.guarantee[q] / scale:,.0f} {unit})", fontsize=8, loc="left",
                     y=1.0)  # a fixed position: matplotlib does not measure every tick label to place it
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    for ax in axes[:, 0]:
        ax.set_ylabel("% of pool", fontsize=8)
    _date_axis(axes[0, 0], report, fixed=True)  # the axes share x: one locator and formatter for all
    handles, labels = axes.flat[0].get_legend_handles_labels()
    pools = "; ".join(f"{sr.top}: {sr.resource}, {short} {sr.capacity / display_unit(sr.resource)[0]:,.0f} "
                      f"{display_unit(sr.resource)[1]}" for sr in series)
    fig.suptitle(f"{report.cluster}: actual vs fair share of the pool per {leaf}, per "
                 f"{duration(series[0].edges[1] - series[0].edges[0])} (time UTC; {pools})\n"
                 f"actual = mean usage / the pool's {short}; fair = own {short} / Σ {short} of the {leaf}s "
                 "with demand in the bucket (docs/demo.md)", fontsize=10)
    fig.legend(handles, labels, loc="upper right", fontsize=8)
    height = fig.get_figheight()
    fig.subplots_adjust(left=0.05, right=0.99, bottom=0.5 / height, top=1 - 1.0 / height, hspace=0.45, wspace=0.18)
    return _save(fig, out / "fair_share.png")


def _afs(report: Report, series: AfsSeries | None, out: Path) -> Path | None:
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt
    import numpy as np

    if series is None or not series.local_queues:
        return None

    def value(v: object) -> float:
        return np.nan if v is None else float(v)  # type: ignore[arg-type]

    scores = np.array([[value(v) for v in series.score[lq]] for lq in series.local_queues], dtype=float)
    if np.all(np.isnan(scores)):
        return None
    peak = np.nan_to_num(np.where(np.isinf(scores), np.nan, scores), nan=-1.0).max(axis=1)
    top = [series.local_queues[i] for i in sorted(range(len(peak)), key=lambda i: (-peak[i], series.local_queues[i]))
           [:TOP_LOCAL_QUEUES] if peak[i] > 0]
    n = len(series.local_queues)
    fig, (ax_lines, ax_heat) = plt.subplots(2, 1, figsize=(14, 4.0 + 0.045 * n + 2.0),
                                            gridspec_kw={"height_ratios": [4.0, 0.045 * n + 1.0]})
    times = [_date(t) for t in series.times]
    weighted = any(series.weight[lq] != 1 for lq in series.local_queues)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, lq in enumerate(top):
        color = colors[i % len(colors)]
        ax_lines.step(times, [value(v) for v in series.score[lq]], where="post", lw=1.3, color=color,
                      label=f"{lq} (ClusterQueue {series.cluster_queue[lq]}, weight {series.weight[lq]:g})")
        if weighted:
            ax_lines.step(times, [value(v) for v in series.usage[lq]], where="post", lw=0.9, ls=":", color=color)
    ax_lines.set_title(f"{report.cluster}: admission fair sharing score of the {len(top)} LocalQueues with the "
                       "highest peak (lower score = admitted first within its ClusterQueue)", loc="left", fontsize=10)
    ax_lines.set_ylabel("score = weighted decayed usage\n/ LocalQueue weight" + ("\n(dotted: the usage)" if weighted
                        else "\n(every weight is 1: score = usage)"), fontsize=8)
    ax_lines.grid(alpha=0.3)
    _date_axis(ax_lines, report)
    _legend(ax_lines)
    finite = [float(v) for v in scores[np.isfinite(scores)]]
    norm, is_log = _heat_norm(finite)
    cmap = plt.get_cmap("viridis").with_extremes(under="#f7f7f7", bad="#dddddd")  # a score of 0; AFS off
    shown = np.where(np.isfinite(scores) & (scores <= 0), norm.vmin * 0.5 if norm.vmin > 0 else -1.0,  # type: ignore[attr-defined]
                     np.where(np.isinf(scores), np.nan, scores))
    edges = [series.times[0] - (series.times[1] - series.times[0] if len(series.times) > 1 else 1), *series.times]
    x = mdates.date2num([_date(max(report.start_ms, e)) for e in edges])
    mesh = ax_heat.pcolormesh(x, np.arange(n + 1), np.ma.masked_invalid(shown), cmap=cmap, norm=norm, shading="flat")
    ax_heat.invert_yaxis()
    groups: dict[str, list[int]] = {}
    for i, lq in enumerate(series.local_queues):
        groups.setdefault(series.cluster_queue[lq], []).append(i)
    ax_heat.set_yticks([(g[0] + g[-1] + 1) / 2 for g in groups.values()])
    ax_heat.set_yticklabels(list(groups), fontsize=7)
    for g in list(groups.values())[1:]:
        ax_heat.axhline(g[0], color="white", lw=0.6)
    ax_heat.xaxis_date(tz=UTC)
    _date_axis(ax_heat, report)
    ax_heat.set_xlabel("time (UTC)")
    ax_heat.set_ylabel("LocalQueues, grouped by ClusterQueue", fontsize=8)
    bar = fig.colorbar(mesh, ax=ax_heat, extend="min", pad=0.01, fraction=0.04)
    bar.set_label(f"score{' (log scale)' if is_log else ''}; lightest: 0")
    weights = ", ".join(f"{res} {float(w):g}" for res, w in series.resource_weights.items())
    ax_heat.set_title(f"every LocalQueue's score at the end of each bucket (resourceWeights: {weights or 'all 1'})",
                      loc="left", fontsize=9)
    fig.tight_layout()
    return _save(fig, out / "afs_usage.png")


def _save(fig: object, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.savefig(path, dpi=110)  # type: ignore[attr-defined]
    plt.close(fig)  # type: ignore[arg-type]
    return path
