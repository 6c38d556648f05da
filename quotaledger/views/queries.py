"""Rich rendering of ``quotaledger list`` and ``quotaledger share`` (``quotaledger.commands.queries``)."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table

from quotaledger.views.display import approx_qty, print_columns
from statemodel.timefmt import format_duration


def _opt(value: object) -> str:
    return "-" if value is None else str(value)


def print_workloads(console: Console, cluster: str, time: str, rows: list[dict]) -> None:
    """The workloads in queue order (``workload_rows``): positions, priority, queue and admission
    times, the wait so far (pending) or until admission, and a pending workload's reason; plain
    columns, as ``kubectl get`` (``print_columns``)."""
    headers = ["ClusterQueue", "pos", "LocalQueue", "lq pos", "workload", "status", "priority", "queued",
               "admitted", "wait", "reason"]
    cells = [[_opt(r["clusterQueue"]), _opt(r["positionInClusterQueue"]), r["localQueue"],
              _opt(r["positionInLocalQueue"]), r["workload"], r["status"], str(r["priority"]),
              r["queuedAt"], _opt(r["admittedAt"]),
              "-" if r["waitMs"] is None else format_duration(r["waitMs"]), _opt(r["reason"])] for r in rows]
    print_columns(console, f"cluster {cluster} at {time}: {len(rows)} workloads", headers, cells,
                  frozenset({"pos", "lq pos", "priority", "wait"}))


def _number(value: float | None, digits: int = 6) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


def print_shares(console: Console, cluster: str, time: str, rows: list[dict], weights: dict[str, float] | None) -> None:
    """The fair-sharing rows (``share_rows``): each ClusterQueue, then its LocalQueues indented, in
    the order admission fair sharing admits them; decayed usage of the resources the score weighs
    (``weights``: admission fair sharing's ``resourceWeights``; every resource when not given)."""
    resources = sorted({res for r in rows for res in r.get("consumed", {})
                        if weights is None or weights.get(res, 1.0) != 0})
    fair = any("weightedShare" in r for r in rows)
    table = Table(title=f"cluster {cluster} at {time}: fair sharing (score = weighted decayed usage / weight; "
                        "lower is admitted first)", title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("queue")
    headers = ["weight", "pending", "admitted", "score", "norm score"] + (["weighted share", "dominant"] if fair else [])
    for header in headers:
        table.add_column(header, justify="right")
    for res in resources:
        table.add_column(f"usage {res}", justify="right")
    for r in rows:
        name = r["name"] if r["kind"] == "ClusterQueue" else f"  {r['name']}"
        norm = r.get("normalizedScore")
        cells = [name, r["weight"], str(r["pending"]), str(r["admitted"]), _number(r.get("score")),
                 "-" if norm is None else f"{norm:.1%}"]
        if fair:
            cells += [_opt(r.get("weightedShare")), _opt(r.get("dominantResource"))]
        table.add_row(*cells, *(approx_qty(res, r.get("consumed", {}).get(res)) for res in resources))
    console.print(table)


def print_history(console: Console, cluster: str, end: str, rows: list[dict]) -> None:
    """The accounting records (``history_rows``), one row per workload, by submission time, in plain
    columns as ``sacct`` prints them (``print_columns``); ``adm/pre/evi``: admissions, preemptions
    and evictions."""
    headers = ["workload", "state", "CQ", "priority", "submitted", "admitted", "finished", "wait", "run", "adm/pre/evi"]
    cells = [[r["workload"], r["state"], _opt(r["clusterQueue"]), str(r["priority"]), _opt(r["submitted"]),
              _opt(r["admitted"]), _opt(r["finished"]),
              "-" if r["waitMs"] is None else format_duration(r["waitMs"]),
              "-" if r["runMs"] is None else format_duration(r["runMs"]),
              f"{r['admissions']}/{r['preemptions']}/{r['evictions']}"] for r in rows]
    print_columns(console, f"cluster {cluster}, history to {end}: {len(rows)} workloads", headers, cells,
                  frozenset({"priority", "wait", "run", "adm/pre/evi"}))
