"""The plot of a what-if report: wait times per ClusterQueue, base next to what-if.

One horizontal bar group per ClusterQueue (sorted by name, top to bottom): p50 and p95 (bars) and
the maximum (a tick on the p95 bar's line) of the wait — admission time minus queue time, and for a workload still pending at the end the end minus
its queue time (a lower bound) — of the base branch and of the what-if branch, in seconds,
minutes or hours (``UNITS``), on a log axis when the waits span more than two decades (else linear).  Values come from
``WhatIfReport.to_json()["waitTimes"]["clusterQueues"]`` (``replay.whatif``).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["plot_waits"]

UNITS = ((3_600_000, "hours"), (60_000, "minutes"), (1000, "seconds"))
"""Display units of the wait axis: the largest unit the longest wait spans at least twice."""


def _unit(longest_ms: int) -> tuple[int, str]:
    for size, name in UNITS:
        if longest_ms >= 2 * size:
            return size, name
    return UNITS[-1]


def plot_waits(report: dict, path: str | Path, only: list[str] | None = None) -> Path:
    """Write the wait plot of ``report`` (a ``WhatIfReport.to_json()``) to ``path`` (the format from
    its suffix: ``.png``, ``.svg``, ``.pdf``); ``only``: the ClusterQueues to show (default all).

    Raises:
        OSError: the file cannot be written.
        ValueError: matplotlib cannot write that format.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in report["waitTimes"]["clusterQueues"] if only is None or r["name"] in only]
    names = [r["name"] for r in rows]
    series = [("base p50", "base", "p50Ms", "#9ecae1"), ("base p95", "base", "p95Ms", "#3182bd"),
              ("what-if p50", "whatif", "p50Ms", "#fdae6b"), ("what-if p95", "whatif", "p95Ms", "#e6550d")]
    size, unit = _unit(max([(r[side][key] or 0) for r in rows for side in ("base", "whatif")
                            for key in ("p50Ms", "p95Ms", "maxMs")], default=0))
    height = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(10, max(2.5, 0.6 * len(names) + 1.5)))
    values = []
    for i, (label, side, key, colour) in enumerate(series):
        waits = [(r[side][key] or 0) / size for r in rows]
        values += [w for w in waits if w > 0]
        ys = [n + (i - (len(series) - 1) / 2) * height for n in range(len(names))]
        ax.barh(ys, waits, height=height, color=colour, label=label)
    for i, (label, side, colour) in ((1, ("base max", "base", "#08519c")), (3, ("what-if max", "whatif", "#a63603"))):
        maxima = [(r[side]["maxMs"] or 0) / size for r in rows]
        values += [m for m in maxima if m > 0]
        ys = [n + (i - (len(series) - 1) / 2) * height for n in range(len(names))]
        shown = [(m, y) for m, y in zip(maxima, ys) if m > 0]
        ax.scatter([m for m, _ in shown], [y for _, y in shown], marker="|", s=160, linewidths=2, color=colour,
                   label=label, zorder=3)
    ax.set_yticks(range(len(names)), labels=names)
    ax.invert_yaxis()
    if values and max(values) / min(values) > 100:
        ax.set_xscale("log")
    ax.set_xlabel(f"wait ({unit}; a workload pending at the end counts its wait to the end)")
    ax.set_title(f"what-if on cluster {report['cluster']}: wait per ClusterQueue, base vs what-if")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
