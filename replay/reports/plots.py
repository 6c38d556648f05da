"""PNG plots of a demo report (matplotlib, Agg backend: no display needed).

- ``usage_vs_quota.png``: per top node (the children of the root cohort), usage of its headline
  resource over time (GPUs when its subtree has GPU quota, else cpu cores) against its subtree
  nominal quota and, when it has a ``borrowingLimit``, nominal + borrowingLimit.
- ``pending.png``: pending workloads over time, one line per top node.
- ``wait_cdf.png``: per top node, the share of admitted workloads that waited at most x, for the
  simulation and (dashed) as observed in the trace.

Times on the x axes are days since the start of the simulated span.  The numbers are the
report's exact integers, converted to display units only here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from replay.reports.tables import GPU, KOORDINATOR, VOLCANO, Report, percentile
from replay.reports.page import duration

__all__ = ["write_plots", "display_unit"]

DAY_MS = 86_400_000


def display_unit(resource: str) -> tuple[float, str]:
    """``(base units per display unit, label)``: cpu in cores, bytes in GiB, others as counts."""
    if resource == "cpu":
        return 1000.0, "cores"
    if resource == GPU:
        return 1.0, "GPUs"
    if "memory" in resource or "storage" in resource:
        return float(1 << 30), "GiB"
    return 1.0, resource


def _days(t: int, start: int) -> float:
    return (t - start) / DAY_MS


def write_plots(report: Report, out: str | Path, progress: Callable[[int, int], None] | None = None) -> list[Path]:
    """Write the plots of the module docstring into ``out``; returns the files written.  A plot with
    nothing to show (no top node, or no admitted workload for the wait CDF) is not written.

    Raises:
        OSError: a file cannot be written.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import StrMethodFormatter

    out = Path(out)
    written: list[Path] = []
    top = report.top
    step = progress or (lambda done, total: None)
    total = 3
    span_days = _days(report.end_ms, report.start_ms)
    units = {KOORDINATOR: "pods", VOLCANO: "PodGroups"}.get(report.model, "workloads")
    floor_label, ceiling_label, level = {
        KOORDINATOR: ("min of the group", "max of the group", "group"),
        VOLCANO: ("deserved of the queue", "capability of the queue", "queue"),
    }.get(report.model, ("nominal quota of the subtree", "nominal + borrowingLimit", "cohort"))
    if top:
        fig, axes = plt.subplots(len(top), 1, figsize=(13, 3.2 * len(top) + 0.6), sharex=True, squeeze=False)
        for ax, name in zip(axes[:, 0], top):
            res = report.headline[name]
            scale, unit = display_unit(res)
            pts = report.usage_series[name]
            xs = [_days(t, report.start_ms) for t, _ in pts] + [span_days]
            ys = [v / scale for _, v in pts] + [pts[-1][1] / scale]
            ax.step(xs, ys, where="post", lw=0.9, color="tab:blue", label=f"usage ({unit})")
            nominal, ceiling = report.limits[name]
            ax.axhline(nominal / scale, color="tab:green", ls="--", lw=1.2,
                       label=f"{floor_label}: {nominal / scale:,.0f} {unit}")
            if ceiling is not None:
                ax.axhline(ceiling / scale, color="tab:red", ls=":", lw=1.2,
                           label=f"{ceiling_label}: {ceiling / scale:,.0f} {unit}")
            ax.set_title(f"{name}: {res} usage vs quota", loc="left", fontsize=10)
            ax.set_ylabel(f"{res} ({unit})")
            ax.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
            ax.grid(alpha=0.3)
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, borderaxespad=0)
        axes[-1, 0].set_xlabel("time since the start of the trace (days)")
        axes[-1, 0].set_xlim(0, span_days)
        fig.suptitle(f"{report.cluster}: usage vs quota per top {level} (quota model {report.model})", fontsize=12)
        fig.tight_layout()
        written.append(_save(fig, out / "usage_vs_quota.png"))
        step(1, total)

        fig, ax = plt.subplots(figsize=(13, 4))
        for name in top:
            pts = report.pending_series[name]
            xs = [_days(t, report.start_ms) for t, _ in pts] + [span_days]
            ys = [v for _, v in pts] + [pts[-1][1]]
            ax.step(xs, ys, where="post", lw=1.2, label=name)
        ax.set_title(f"{report.cluster}: pending {units} over time (quota model "
                     f"{report.model})", loc="left", fontsize=11)
        ax.set_xlabel("time since the start of the trace (days)")
        ax.set_ylabel("pending workloads (count)")
        ax.set_xlim(0, span_days)
        ax.set_ylim(bottom=0)
        ax.yaxis.get_major_locator().set_params(integer=True)
        ax.grid(alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, borderaxespad=0)
        fig.tight_layout()
        written.append(_save(fig, out / "pending.png"))
    step(2, total)

    nodes = {n.name: n for n in report.nodes if n.name in top}
    with_waits = [name for name in top if nodes[name].waits_ms]
    if with_waits:
        fig, ax = plt.subplots(figsize=(13, 4.5))
        colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        for i, name in enumerate(with_waits):
            node = nodes[name]
            color = colors[i % len(colors)]
            for waits, style, lw, what in ((node.waits_ms, "-", 2.2, "simulated"),
                                           (node.observed_waits_ms, "--", 1.2, "observed in the trace")):
                if not waits:
                    continue
                xs = [w / 1000 for w in waits]
                ys = [(k + 1) / len(waits) for k in range(len(waits))]
                ax.step([0.0, *xs], [0.0, *ys], where="post", ls=style, color=color, lw=lw,
                        label=f"{name}, {what} (n={len(waits):,}, p95 {duration(percentile(waits, 95))})")
        ax.set_xscale("symlog", linthresh=1.0)
        ax.set_xlim(left=0)
        ax.set_ylim(0, 1.05)
        ax.set_title(f"{report.cluster}: wait-time CDF (admission − submission)", loc="left", fontsize=11)
        ax.set_xlabel("wait (seconds; linear below 1 s, logarithmic above)")
        ax.set_ylabel("share of admitted workloads waiting ≤ x")
        ax.grid(alpha=0.3, which="both")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, borderaxespad=0)
        fig.tight_layout()
        written.append(_save(fig, out / "wait_cdf.png"))
    step(3, total)
    return written


def _save(fig: object, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.savefig(path, dpi=110)  # type: ignore[attr-defined]
    plt.close(fig)  # type: ignore[arg-type]
    return path
