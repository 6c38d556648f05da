"""Rich rendering of ``statemodel.explain.explain`` output for ``quotaledger explain``."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table

from quotaledger.views.display import qty
from statemodel.timefmt import format_duration


def print_explanation(console: Console, out: dict) -> None:
    """Print a workload's status, reason, request and the numbers of every level of its tree (a
    Koordinator pod: ``print_pod_explanation``; a Volcano PodGroup: ``print_pod_group_explanation``)."""
    if out.get("kind") == "PodGroup":
        print_pod_group_explanation(console, out)
        return
    if "pod" in out:
        print_pod_explanation(console, out)
        return
    console.print(f"[bold]{out['workload']}[/bold]  {out['status']}  "
                  f"ClusterQueue {out['clusterQueue'] or '-'}  LocalQueue {out['localQueue']}  "
                  f"priority {out['priority']}  queued {out['queuedAt']}")
    if out["status"] == "Pending":
        console.print(f"  reason [bold]{out['reason']}[/bold]: {out['message']}")
        if out["positionInClusterQueue"] is not None:
            console.print(f"  position {out['positionInClusterQueue']} in its ClusterQueue, "
                          f"{out['positionInLocalQueue']} in its LocalQueue")
        _print_wait(console, out)
        for line in binding_lines(out.get("binding", [])):
            console.print(f"  binding: {line}")
        if out["shortfalls"]:
            console.print(_shortfalls_table(out["shortfalls"]))
        if out.get("placement"):
            console.print(_node_sets_table(out["placement"]))
        for held in out.get("holders", []):
            console.print(_holders_table(held))
    for ps in out["request"]:
        total = ", ".join(f"{res} {qty(res, amount)}" for res, amount in ps["total"].items())
        console.print(f"  podSet {ps['podSet']} × {ps['count']}: {total}")
    admission = out["admission"]
    if admission is not None:
        flavors = "; ".join(f"{ps['name']}: " + ", ".join(f"{r}→{f}" for r, f in ps["flavors"].items())
                            for ps in admission["podSetAssignments"])
        how = "observed" if admission["observed"] else "by the engine"
        console.print(f"  admitted {how} at {admission['admittedAt']}, borrowing height {admission['borrowing']}: {flavors}")
        for ps in admission["podSetAssignments"]:
            if "nodes" in ps:
                placed = ", ".join(f"{node} ×{pods}" for node, pods in ps["nodes"].items())
                console.print(f"  podSet {ps['name']} on nodes: {placed}")
    _print_preemption(console, out.get("preemption"))
    if out["levels"]:
        console.print(_levels_table("the numbers at every level (available = what this node could still take now)",
                                    out["levels"]))
    decision = out.get("admittedBy")
    if decision:
        console.print(f"  admitted by decision seq {decision['seq']} at {decision['time']} (caused by event "
                      f"{decision['cause']}), borrowing height {decision['borrowing']}")
        console.print(_levels_table("right after that admission (its own charge included: it fitted under every "
                                    "limit below)", decision["levels"]))


def _node_sets_table(placement: dict) -> Table:
    """The node sets a gang was tried on and why each failed (``statemodel.explain.placement_failure_json``)."""
    table = Table(title=f"placement: {placement['summary']}", box=box.SIMPLE, title_justify="left")
    for column in ("stage", "pod set", "node set", "problem"):
        table.add_column(column)
    for row in placement["nodeSets"]:
        table.add_row(row["stage"], row["podSet"] or "(gang)", row["nodeSet"], row["problem"])
    return table


def _print_wait(console: Console, out: dict) -> None:
    """How long a pending workload has waited as of the state shown and, from a store, when (and
    after how long in all) the wait ended."""
    if out.get("waitedMs") is None:
        return
    line = f"  waiting {format_duration(out['waitedMs'])} as of {out['asOf']}"
    if "admittedLater" in out:
        later = out["admittedLater"]
        if later is None:
            line += "; never admitted in the stored history"
        else:
            line += (f"; admitted at {later['time']} by decision seq {later['seq']} (caused by event "
                     f"{later['cause']}), after {format_duration(later['waitedMs'])} in all")
    console.print(line)


def binding_lines(rows: list[dict]) -> list[str]:
    """The binding level of each shortfall in words and human units (``statemodel.explain.binding``),
    e.g. ``root Cohort dlrm: 0 of 240 nvidia.com/gpu free in flavor hn; it needs 1``."""
    lines = []
    for b in rows:
        res = b["resource"]
        where = f"{'root ' if b['root'] else ''}{b['kind']} {b['name']}"
        if b["reason"] == "ExceedsMaxQuota":
            lines.append(f"{where}: at most {qty(res, b['available'])} {res} in flavor {b['flavor']} even when "
                         f"everything is released; it needs {qty(res, b['needed'])}")
        else:
            lines.append(f"{where}: {qty(res, b['available'])} of {qty(res, b['subtreeQuota'])} {res} free in flavor "
                         f"{b['flavor']} ({qty(res, b['usage'])} in use); it needs {qty(res, b['needed'])}")
    return lines


def _holders_table(held: dict) -> Table:
    """The admitted workloads holding a binding level's quota (``statemodel.explain.holders``)."""
    res = held["resource"]
    table = Table(title=f"who holds {res} in flavor {held['flavor']} under {held['kind']} {held['name']} (largest first)",
                  title_justify="left", box=box.SIMPLE_HEAD)
    for header in ("workload", "ClusterQueue", "priority", "admitted"):
        table.add_column(header)
    table.add_column("holds", justify="right")
    for w in held["workloads"]:
        table.add_row(w["workload"], w["clusterQueue"], str(w["priority"]), w["admittedAt"] or "-", qty(res, w["charge"]))
    return table


def _print_preemption(console: Console, p: dict | None) -> None:
    """Who preempted the workload and why, whom it preempted, what it waits for, and every
    ``Preempted`` decision naming it (time, reason, message)."""
    if not p:
        return
    if p["preemptedBy"]:
        state = " (admitted, awaiting its eviction)" if p["evicting"] else ""
        console.print(f"  preempted by [bold]{p['preemptedBy']}[/bold] ({p['reason']}){state}")
    if p["victims"]:
        console.print("  preempted for its admission: " + ", ".join(
            f"{v['workload']} ({v['status']}{', still holding its quota' if v['evicting'] else ''})"
            for v in p["victims"]))
    for line in p["waitingFor"]:
        console.print(f"  waiting for {line}" if line.startswith("the ") else f"  {line}")
    for h in p["history"]:
        who = (f"preempted by {h['preemptor']} ({h['preemptorClusterQueue'] or '-'})" if h["role"] == "victim"
               else f"preempted {h['victim']} ({h['victimClusterQueue'] or '-'})")
        console.print(f"  decision seq {h['seq']} at {h['time']}: {who}, {h['reason']}: {h['message']}")


def _shortfalls_table(shortfalls: list[dict]) -> Table:
    """What a pending workload is short of, one row per flavor tried and resource: ``level`` is the
    node whose limit binds, ``short by`` = needed - available."""
    table = Table(title="what it is short of (needed includes earlier podSets of the workload)",
                  title_justify="left", box=box.SIMPLE_HEAD)
    for header in ("podSet", "flavor", "resource", "level", "reason"):
        table.add_column(header)
    for header in ("needed", "available", "short by"):
        table.add_column(header, justify="right")
    for row in shortfalls:
        res = row["resource"]
        table.add_row(row["podSet"], row["flavor"] or "-", res, row["node"], row["reason"], qty(res, row["needed"]),
                      qty(res, row["available"]), qty(res, row["needed"] - row["available"]))
    return table


def _levels_table(title: str, levels: list[dict]) -> Table:
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
    for header in ("level", "flavor", "resource"):
        table.add_column(header)
    for header in ("nominal", "borrowLimit", "lendLimit", "subtree", "local", "usage", "available", "maxAvail"):
        table.add_column(header, justify="right")
    for level in levels:
        first = True
        for flavor, resources in level["resources"].items():
            for res, row in resources.items():
                table.add_row(f"{level['kind']} {level['name']}" if first else "", flavor, res,
                              *(qty(res, row[k]) for k in ("nominal", "borrowingLimit", "lendingLimit", "subtreeQuota",
                                                           "localQuota", "usage", "available", "potentialAvailable")))
                first = False
    return table


def print_pod_explanation(console: Console, out: dict) -> None:
    """Print a Koordinator pod's status, PreFilter reason and shortfalls, request, and how its quota's
    runtime comes about level by level (``KoordinatorModel.explain``)."""
    console.print(f"[bold]{out['pod']}[/bold]  {out['status']}  quota {out['quota']}  priority {out['priority']}"
                  f"{'' if out['preemptible'] else '  non-preemptible'}")
    if out["reason"]:
        console.print(f"  last attempt [bold]{out['reason']}[/bold]: {out['message']}")
    if out["preFilter"]:
        console.print(f"  PreFilter now: {out['preFilter']}")
    if out["shortfalls"]:
        table = Table(title="what it is short of (PreFilter: used + request <= runtime)", title_justify="left",
                      box=box.SIMPLE_HEAD)
        for header in ("quota", "resource", "reason"):
            table.add_column(header)
        for header in ("needed", "available", "short by"):
            table.add_column(header, justify="right")
        for row in out["shortfalls"]:
            res = row["resource"]
            table.add_row(row["quota"], res, row["reason"], qty(res, row["needed"]), qty(res, row["available"]),
                          qty(res, row["shortBy"]))
        console.print(table)
    console.print("  request: " + ", ".join(f"{res} {qty(res, amount)}" for res, amount in out["request"].items()))
    table = Table(title="runtime level by level (each level's share of what its parent shares)",
                  title_justify="left", box=box.SIMPLE_HEAD)
    for header in ("quota", "resource", "role"):
        table.add_column(header)
    for header in ("parent shares", "min", "autoScaleMin", "max", "weight", "request", "limited", "used", "runtime"):
        table.add_column(header, justify="right")
    for level in out["levels"]:
        for res, n in level["resources"].items():
            table.add_row(level["quota"], res, n["role"], qty(res, n["parentTotal"]), qty(res, n["min"]),
                          qty(res, n["autoScaleMin"]), "-" if n["max"] is None else qty(res, n["max"]),
                          str(n["sharedWeight"]), qty(res, n["request"]), qty(res, n["limitedRequest"]),
                          qty(res, n["used"]), qty(res, n["runtime"]))
    console.print(table)


def print_pod_group_explanation(console: Console, out: dict) -> None:
    """Print a Volcano PodGroup's phase, last message and shortfalls, what binding its pending pods
    would meet now, and its queue's numbers level by level (``VolcanoModel.explain``)."""
    via = f" (asked for pod {out['pod']})" if out["pod"] else ""
    console.print(f"[bold]{out['key']}[/bold]{via}  {out['phase']}  queue {out['queue']}  plugin {out['plugin']}"
                  f"{' with hierarchy' if out['hierarchy'] else ''}")
    if out["reason"]:
        console.print(f"  last attempt [bold]{out['reason']}[/bold]: {out['message']}")
    if out["pendingRequest"]:
        console.print("  pending pods ask: " + ", ".join(f"{res} {qty(res, amount)}"
                                                        for res, amount in out["pendingRequest"].items()))
    for title, rows in (("what its last attempt was short of", out["shortfalls"]),
                        ("what binding its pending pods would meet now (allocatable check)", out["allocatableNow"])):
        if not rows:
            continue
        table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
        for header in ("queue", "resource"):
            table.add_column(header)
        for header in ("needed", "available"):
            table.add_column(header, justify="right")
        for row in rows:
            res = row["resource"]
            table.add_row(row["queue"], res, qty(res, row["needed"]), qty(res, row["available"]))
        console.print(table)
    table = Table(title="its queue level by level (deserved, realCapability: what may be allocated)",
                  title_justify="left", box=box.SIMPLE_HEAD)
    for header in ("queue", "resource"):
        table.add_column(header)
    for header in ("weight", "guarantee", "deserved", "capability", "realCapability", "allocated", "inqueue",
                   "elastic", "request", "share"):
        table.add_column(header, justify="right")
    for level in out["levels"]:
        resources = sorted(set(level["deserved"]) | set(level["realCapability"]) | set(level["allocated"])
                           | set(level["request"])) or ["-"]
        for i, res in enumerate(resources):
            def cell(field: str) -> str:
                if res == "-":
                    return "-"
                value = level[field].get(res)
                if value is None:
                    return "∞" if field in ("capability", "realCapability") else qty(res, 0)
                return qty(res, value)
            table.add_row(level["queue"] if i == 0 else "", res, str(level["weight"]) if i == 0 else "",
                          *(cell(f) for f in ("guarantee", "deserved", "capability", "realCapability", "allocated",
                                              "inqueue", "elastic", "request")),
                          level["share"] if i == 0 else "")
    console.print(table)
