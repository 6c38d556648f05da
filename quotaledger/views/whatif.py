"""Rich rendering of a what-if report (``replay.whatif.WhatIfReport.to_json()``) for
``quotaledger whatif``: the decisions that changed, how the branch was run and its workload
counts, wait times, utilization, preemptions."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table

from quotaledger.views.display import qty


def _ms(value: int | None) -> str:
    """Milliseconds as a duration for a table cell (``2d04h``, ``45s``; ``-`` for none)."""
    from replay.reports.page import duration

    return duration(value)


def _delta(value: int | None) -> str:
    """A signed difference of durations (``+3h07m``, ``-45s``, ``0s``; ``-`` for none)."""
    if value is None:
        return "-"
    return ("+" if value > 0 else "-" if value < 0 else "") + _ms(abs(value))


def _mean(resource: str, value: int) -> str:
    """A time-weighted mean for display: exact when ``qty`` can say it exactly, else rounded (cores, GiB)."""
    text = qty(resource, value)
    if resource == "cpu" and text.endswith("m") and value >= 1000:
        return f"{value / 1000:.1f}"
    if ("memory" in resource or "storage" in resource) and text.isdigit() and value >= 1 << 30:
        return f"{value / (1 << 30):.1f}Gi"
    return text


LISTED = 20
"""Rows of the never-admitted and held-fixed lists shown on the terminal (``--json`` has them all)."""
CHANGES_LISTED = 50
"""Rows of the changed-decisions table shown on the terminal (``--json`` has them all)."""


def print_closed_loop(console: Console, report: dict) -> None:
    """How the what-if branch was run (re-simulated or finishes held fixed), the workload counts of
    both branches (``submitted = admitted + pending + never admitted``) and the first ``LISTED``
    workloads the what-if branch never admitted."""
    loop = report.get("closedLoop") or {}
    held = loop.get("heldFixed") or []
    if loop.get("mode") == "resimulated":
        console.print(f"closed loop: {loop['runTimes']} workloads have a recorded run time; in the what-if branch "
                      f"they finish their run time after their admission ({loop['droppedArchivedEvents']} archived "
                      f"finishes/evictions replaced by {loop['generatedEvents']} re-simulated ones; "
                      f"{len(loop['runningAtEnd'])} still running at the end)")
    else:
        console.print("observed history (no recorded run times): finishes are held fixed at their recorded times")
    if held:
        shown = ", ".join(f"{h['workload']} at {h['time']}" for h in held[:LISTED])
        more = f" and {len(held) - LISTED} more" if len(held) > LISTED else ""
        console.print(f"{len(held)} finishes held fixed (no run time): {shown}{more}", highlight=False)
    counts = Table(title="workloads that waited after the fork (submitted = admitted + pending + never admitted)",
                   title_justify="left", box=box.SIMPLE_HEAD)
    for header in ("branch", "submitted", "admitted", "pending at the end", "never admitted"):
        counts.add_column(header, justify="left" if header == "branch" else "right")
    for label, branch in report["branches"].items():
        w = branch.get("workloads")
        if w is not None:
            counts.add_row(label, str(w["submitted"]), str(w["admitted"]), str(w["pending"]), str(w["neverAdmitted"]))
    console.print(counts)
    missing = (report["branches"].get("whatif", {}).get("workloads") or {}).get("notAdmitted") or []
    if missing:
        table = Table(title=f"not admitted in the what-if branch ({len(missing)}; first {min(LISTED, len(missing))})",
                      title_justify="left", box=box.SIMPLE_HEAD)
        for header in ("workload", "ClusterQueue", "LocalQueue", "queued at", "state"):
            table.add_column(header)
        for row in missing[:LISTED]:
            table.add_row(row["workload"], row["clusterQueue"], row["localQueue"], row["queuedAt"], row["state"])
        console.print(table)


def print_whatif(console: Console, report: dict) -> None:
    """Rich rendering of ``WhatIfReport.to_json()``: changed decisions, wait times, utilization and,
    when either branch preempted, the preemptions per ClusterQueue."""
    from replay.reports.page import percent

    fork = report["fork"]
    console.print(f"[bold]what-if[/bold] cluster {report['cluster']}: fork at "
                  f"{fork['from'] or 'the start'} (position {fork['position']}, snapshot at {fork['snapshotPosition']}), "
                  f"{report['patchEvents']} patch events merged into {report['archivedEvents']} archived events; "
                  f"window {report['window']['start']} .. {report['window']['end']}")
    all_changes = report["decisionChanges"]
    shown = all_changes[:CHANGES_LISTED]
    more = f"; first {len(shown)}, --json for all" if len(shown) < len(all_changes) else ""
    changes = Table(title=f"decisions that changed ({len(all_changes)}{more})", title_justify="left",
                    box=box.SIMPLE_HEAD)
    for header in ("workload", "decision", "change", "base", "what-if", "Δ time"):
        changes.add_column(header, justify="right" if header == "Δ time" else "left")

    def side(view: dict | None) -> str:
        if view is None:
            return "-"
        extra = (", ".join(f"{r}→{f}" for ps in view["flavors"] for r, f in ps.items())
                 if "flavors" in view else view.get("reason") or "")
        return f"{view['time']} {view['clusterQueue'] or '-'} {extra}".rstrip()

    for row in shown:
        changes.add_row(row["workload"], f"{row['type']} #{row['n']}", row["change"], side(row["base"]),
                        side(row["whatif"]), _delta(row["deltaMs"]))
    console.print(changes)
    print_closed_loop(console, report)
    for title, rows in (("ClusterQueue", report["waitTimes"]["clusterQueues"]),
                        ("LocalQueue", report["waitTimes"]["localQueues"])):
        table = Table(title=f"wait times per {title} (base → what-if; pending = still waiting at the end)",
                      title_justify="left", box=box.SIMPLE_HEAD)
        table.add_column(title)
        for header in ("waits", "pending", "p50", "p95", "max", "Δ p50", "Δ p95", "Δ max"):
            table.add_column(header, justify="right")
        for row in rows:
            b, w, d = row["base"], row["whatif"], row["delta"]
            table.add_row(row["name"], f"{b['count']} → {w['count']}", f"{b['pending']} → {w['pending']}",
                          *(f"{_ms(b[k])} → {_ms(w[k])}" for k in ("p50Ms", "p95Ms", "maxMs")),
                          *(_delta(d[k]) for k in ("p50Ms", "p95Ms", "maxMs")))
        console.print(table)
    table = Table(title="utilization: time-weighted usage / nominal quota", title_justify="left", box=box.SIMPLE_HEAD)
    for header in ("ClusterQueue", "flavor", "resource"):
        table.add_column(header)
    for header in ("mean usage", "mean nominal", "base", "what-if", "Δ"):
        table.add_column(header, justify="right")
    for row in report["utilization"]:
        res, b, w = row["resource"], row["base"], row["whatif"]
        delta = "-" if row["delta"] is None else f"{row['delta'] * 100:+.1f} pts"
        table.add_row(row["clusterQueue"], row["flavor"], res,
                      f"{_mean(res, b['meanUsage'])} → {_mean(res, w['meanUsage'])}",
                      f"{_mean(res, b['meanNominal'])} → {_mean(res, w['meanNominal'])}",
                      percent(b["utilization"]), percent(w["utilization"]), delta)
    console.print(table)
    pre = report.get("preemptions") or {}
    if pre.get("base") or pre.get("whatif"):
        table = Table(title=f"preemptions per ClusterQueue of the victim: {pre['base']} → {pre['whatif']} "
                            f"({pre['delta']:+d})", title_justify="left", box=box.SIMPLE_HEAD)
        table.add_column("ClusterQueue")
        for header in ("base", "what-if", "Δ"):
            table.add_column(header, justify="right")
        for row in pre["clusterQueues"]:
            table.add_row(row["name"], str(row["base"]), str(row["whatif"]), f"{row['delta']:+d}")
        console.print(table)
    for label, branch in report["branches"].items():
        console.print(f"{label}: {branch['decisions']} decisions after the fork, ends {branch['end']}, "
                      f"hash {branch['hash']}")
