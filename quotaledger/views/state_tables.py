"""The tables of ``quotaledger state EVENTS`` (without ``--json``): one per cluster, one row per
ClusterQueue with its flavors and resources (display units), then the engine version, time and hash."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table

from quotaledger.views.display import qty


def cluster_queue_tables(state: dict) -> list[Table]:
    """One Rich table per cluster: ClusterQueue, cohort, active, pending, admitted, then one line
    per (flavor, resource) with usage and nominal quota (display units)."""
    tables = []
    for cluster, cstate in state.get("clusters", {}).items():
        table = Table(title=f"cluster {cluster}", title_justify="left", box=box.SIMPLE_HEAD)
        for header in ("ClusterQueue", "cohort", "active"):
            table.add_column(header)
        for header in ("pending", "admitted"):
            table.add_column(header, justify="right")
        table.add_column("flavor")
        table.add_column("resource")
        table.add_column("usage", justify="right")
        table.add_column("nominal", justify="right")
        for name, cq in cstate.get("clusterQueues", {}).items():
            rows = [
                (flavor, res, qty(res, q.get("usage")), qty(res, q.get("nominal")))
                for flavor, resources in cq.get("resources", {}).items()
                for res, q in resources.items()
            ] or [("-", "-", "-", "-")]
            table.add_row(
                name,
                cq.get("cohort") or "-",
                "yes" if cq.get("active") else "no",
                str(cq.get("pending", 0)),
                str(cq.get("admitted", 0)),
                *("\n".join(col) for col in zip(*rows)),
            )
        tables.append(table)
    return tables


def print_state_tables(console: Console, state: dict) -> None:
    """``cluster_queue_tables(state)`` and the closing line with the engine version, time and hash."""
    for table in cluster_queue_tables(state):
        console.print(table)
    console.print(f"engine {state.get('engineVersion')}  time {state.get('time')}  hash {state.get('hash')}")
