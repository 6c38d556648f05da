"""The sshare-like tree view of ``quotaledger state`` (without ``--json``), from a file or a store.

One Rich table per cluster whose first column is the cohort tree drawn with guides — Cohorts,
their ClusterQueues, and each ClusterQueue's LocalQueues — with one row per flavor × resource:

- ``nominal``: the node's own nominalQuota (base units, shown in display units);
- ``borrowed``: ``max(0, usage − subtreeQuota)`` — what the node takes beyond its own quota (for a
  ClusterQueue the subtree quota is its nominal quota), as Kueue's ``borrowed`` in flavor usage;
- ``lent``: the part of the node's idle quota that its siblings are borrowing.  A node's idle
  quota as its parent sees it is ``(subtree − local) − max(0, usage − local)`` (``local`` =
  ``max(0, subtree − lendingLimit)``, the non-lendable part); what the parent's children borrow in
  total is covered first from their siblings' idle quota — shared among the lenders in proportion
  to their idle quota (integer floor) — and only then from the parent's own nominal quota.  This
  attribution is our convention: Kueue pools lent quota without recording who lent it;
- ``usage``: ClusterQueue: admitted usage; Cohort: the usage its children charge to it (Kueue's
  cohort usage); LocalQueue: the sum of its admitted workloads' ``resourceUsage``;
- ``decayed``: admission fair sharing's decayed consumed usage (KEP-4136, score units: cores for
  cpu; three significant digits with a unit suffix, as ``approx_qty``), per resource, on the row of the resource's first flavor; ``-`` when fair sharing is off;
- ``pending``: pending workloads (a Cohort: every ClusterQueue below it).

Cohorts on a cycle are not under any root; they are listed last, marked ``(cycle)``.

Filters (``TreeFilter``): ``cohort`` draws only that Cohort's subtree; ``queue`` only that
ClusterQueue, its LocalQueues and the Cohorts above it; ``depth`` stops after that many levels
below the top drawn (0: the top only; a Cohort's numbers already sum what is below it);
``pending_only`` keeps the nodes with pending workloads (a Cohort: below it).
"""

from __future__ import annotations

from typing import NamedTuple

from rich import box
from rich.console import Console
from rich.table import Table

from quotaledger.views.display import approx_qty, qty
from statemodel.errors import EventError
from statemodel.quantity import parse_quantity

Row = dict[str, int | None]


class TreeFilter(NamedTuple):
    """What of the tree to draw (module docstring); the defaults draw everything."""

    cohort: str | None = None
    queue: str | None = None
    depth: int | None = None
    pending_only: bool = False


def _local(q: dict, subtree: int) -> int:
    limit = q.get("lendingLimit")
    return max(0, subtree - limit) if limit is not None else 0


def _rows(resources: dict, is_cq: bool) -> dict[tuple[str, str], Row]:
    out: dict[tuple[str, str], Row] = {}
    for flavor, per_res in resources.items():
        for res, q in per_res.items():
            subtree = q.get("nominal", 0) if is_cq else q.get("subtreeQuota", 0)
            usage = q.get("usage", 0)
            local = _local(q, subtree)
            out[(flavor, res)] = {
                "nominal": q.get("nominal", 0), "usage": usage, "borrowed": max(0, usage - subtree),
                "idle": max(0, (subtree - local) - max(0, usage - local)), "lent": 0,
            }
    return out


def _attribute_lending(children: list[dict[tuple[str, str], Row]]) -> None:
    """Set ``lent`` on the rows of one parent's children (module docstring)."""
    for fr in sorted({fr for rows in children for fr in rows}):
        borrowed = sum(rows[fr]["borrowed"] or 0 for rows in children if fr in rows)
        idle = sum(rows[fr]["idle"] or 0 for rows in children if fr in rows)
        taken = min(borrowed, idle)
        if taken <= 0:
            continue
        for rows in children:
            if fr in rows:
                rows[fr]["lent"] = taken * (rows[fr]["idle"] or 0) // idle


def _admitted_usage(workloads: dict) -> dict[str, dict[str, dict[str, int]]]:
    """LocalQueue → flavor → resource → base units admitted through it, in one pass over the workloads."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    for w in workloads.values():
        if w.get("status") != "Admitted":
            continue
        by_flavor = out.setdefault(w.get("localQueue"), {})
        for ps in w.get("podSetAssignments") or ():
            for res, amount in ps.get("resourceUsage", {}).items():
                flavor = ps.get("flavors", {}).get(res, "-")
                try:
                    value = parse_quantity(res, amount, "resourceUsage")
                except EventError:
                    continue
                per = by_flavor.setdefault(flavor, {})
                per[res] = per.get(res, 0) + value
    return out


def cluster_tree(name: str, cs: dict, only: TreeFilter = TreeFilter()) -> Table:
    """The tree table of one cluster's section of the state JSON, filtered by ``only``."""
    cohorts, cqs, lqs = cs.get("cohorts", {}), cs.get("clusterQueues", {}), cs.get("localQueues", {})
    usage_by_lq = _admitted_usage(cs.get("workloads", {}))
    rows = {("Cohort", n): _rows(c.get("resources", {}), False) for n, c in cohorts.items()}
    rows.update({("ClusterQueue", n): _rows(c.get("resources", {}), True) for n, c in cqs.items()})
    child_cohorts: dict[str | None, list[str]] = {}
    for n in sorted(cohorts):
        child_cohorts.setdefault(cohorts[n].get("parent"), []).append(n)
    child_cqs: dict[str | None, list[str]] = {}
    for n in sorted(cqs):
        child_cqs.setdefault(cqs[n].get("cohort"), []).append(n)
    for parent in cohorts:
        _attribute_lending([rows[("Cohort", c)] for c in child_cohorts.get(parent, [])]
                           + [rows[("ClusterQueue", q)] for q in child_cqs.get(parent, [])])
    lqs_of: dict[str, list[str]] = {}
    for key in sorted(lqs):
        lqs_of.setdefault(lqs[key].get("clusterQueue"), []).append(key)

    pending_below = _pending_below(cohorts, cqs, child_cohorts, child_cqs)
    allowed = _allowed(only, cohorts, cqs, lqs, pending_below)

    table = Table(title=f"cluster {name}  (time {cs.get('time')})", title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("node")
    for header in ("flavor", "resource"):
        table.add_column(header)
    for header in ("nominal", "borrowed", "lent", "usage", "decayed", "pending"):
        table.add_column(header, justify="right")

    def add(label: str, data: dict[tuple[str, str], Row], decayed: dict, pending: int) -> None:
        if not data:
            table.add_row(label, "-", "-", "-", "-", "-", "-", "-", str(pending))
            return
        shown: set[str] = set()
        for i, ((flavor, res), row) in enumerate(sorted(data.items())):
            afs = "-"
            if res not in shown and res in decayed:
                afs = approx_qty(res, decayed[res])
            shown.add(res)
            table.add_row(label if i == 0 else "", flavor, res,
                          *(qty(res, row.get(k)) for k in ("nominal", "borrowed", "lent", "usage")),
                          afs, str(pending) if i == 0 else "")

    def consumed(view: dict) -> dict:
        return (view.get("admissionFairSharing") or {}).get("consumed", {})

    def walk_cq(q: str, prefix: str, depth: int) -> None:
        add(f"{prefix}ClusterQueue {q}", rows[("ClusterQueue", q)], consumed(cqs[q]), cqs[q].get("pending", 0))
        if only.depth is not None and depth >= only.depth:
            return
        keys = [key for key in lqs_of.get(q, []) if allowed is None or ("LocalQueue", key) in allowed]
        for i, key in enumerate(keys):
            guide = "└─ " if i == len(keys) - 1 else "├─ "
            usage = usage_by_lq.get(key, {})
            data: dict[tuple[str, str], Row] = {(f, r): {"usage": v} for f, per in usage.items() for r, v in per.items()}
            add(f"{_indent(prefix)}{guide}LocalQueue {key}", data, consumed(lqs[key]), lqs[key].get("pending", 0))

    def walk_cohort(top: str, top_prefix: str, seen: set[str]) -> None:
        """Depth-first, with an explicit stack: a chain of any depth draws without Python recursion."""
        stack: list[tuple[str, str, str, int]] = [("Cohort", top, top_prefix, 0)]
        while stack:
            kind, c, prefix, depth = stack.pop()
            if kind == "ClusterQueue":
                walk_cq(c, prefix, depth)
                continue
            seen.add(c)
            add(f"{prefix}Cohort {c}", rows[("Cohort", c)], consumed(cohorts[c]), pending_below.get(c, 0))
            if only.depth is not None and depth >= only.depth:
                continue
            kids = [("Cohort", k) for k in child_cohorts.get(c, []) if k not in seen] + \
                   [("ClusterQueue", q) for q in child_cqs.get(c, [])]
            kids = [kid for kid in kids if allowed is None or kid in allowed]
            for i in range(len(kids) - 1, -1, -1):
                guide = "└─ " if i == len(kids) - 1 else "├─ "
                stack.append((kids[i][0], kids[i][1], _indent(prefix) + guide, depth + 1))

    seen: set[str] = set()
    if only.cohort is not None:
        if only.cohort in cohorts and (allowed is None or ("Cohort", only.cohort) in allowed):
            walk_cohort(only.cohort, "", seen)
        return table
    for c in child_cohorts.get(None, []):
        if allowed is None or ("Cohort", c) in allowed:
            walk_cohort(c, "", seen)
    for q in child_cqs.get(None, []):
        if allowed is None or ("ClusterQueue", q) in allowed:
            walk_cq(q, "", 0)
    for c in sorted(set(cohorts) - _under_roots(child_cohorts) - seen):
        if allowed is None or ("Cohort", c) in allowed:
            walk_cohort(c, "(cycle) ", seen)
    return table


def _under_roots(child_cohorts: dict[str | None, list[str]]) -> set[str]:
    """The Cohorts under some root (every Cohort not on a parent cycle), whatever the filter draws."""
    found: set[str] = set()
    stack = list(child_cohorts.get(None, []))
    while stack:
        c = stack.pop()
        if c not in found:
            found.add(c)
            stack.extend(child_cohorts.get(c, []))
    return found


def _allowed(only: TreeFilter, cohorts: dict, cqs: dict, lqs: dict, pending_below: dict[str, int]
             ) -> set[tuple[str, str]] | None:
    """The ``(kind, name)`` nodes the filter keeps, ``None`` for all (``cohort`` and ``depth`` act
    while walking)."""
    if only.queue is None and not only.pending_only:
        return None
    keep: set[tuple[str, str]] | None = None
    if only.queue is not None:
        keep = {("ClusterQueue", only.queue)} if only.queue in cqs else set()
        keep |= {("LocalQueue", key) for key, lq in lqs.items() if lq.get("clusterQueue") == only.queue}
        parent = cqs[only.queue].get("cohort") if only.queue in cqs else None
        while parent is not None and ("Cohort", parent) not in keep:  # the chain up (a cycle ends it)
            keep.add(("Cohort", parent))
            parent = cohorts.get(parent, {}).get("parent")
    if only.pending_only:
        pending = {("Cohort", c) for c, n in pending_below.items() if n}
        pending |= {("ClusterQueue", q) for q, view in cqs.items() if view.get("pending", 0)}
        pending |= {("LocalQueue", key) for key, lq in lqs.items() if lq.get("pending", 0)}
        keep = pending if keep is None else keep & pending
    return keep


def _pending_below(cohorts: dict, cqs: dict, child_cohorts: dict[str | None, list[str]],
                   child_cqs: dict[str | None, list[str]]) -> dict[str, int]:
    """Pending workloads of every ClusterQueue below each Cohort, in one post-order pass (iterative, so
    linear in the tree's size and free of recursion; a cohort on a cycle counts each queue once)."""
    totals: dict[str, int] = {}
    for top in sorted(cohorts):
        if top in totals:
            continue
        stack: list[tuple[str, bool]] = [(top, False)]
        while stack:
            c, children_done = stack.pop()
            if children_done:
                totals[c] = (sum(cqs[q].get("pending", 0) for q in child_cqs.get(c, []))
                             + sum(totals.get(k, 0) for k in child_cohorts.get(c, []) if k != c))
                continue
            if c in totals:
                continue
            totals[c] = 0  # visited: a cycle back to it adds nothing
            stack.append((c, True))
            for k in child_cohorts.get(c, []):
                if k not in totals:
                    stack.append((k, False))
    return totals


MAX_INDENT_LEVELS = 32
"""Deeper levels are drawn at this indentation, prefixed ``…``: the guides of a 100,000-level chain
would otherwise make the table quadratic in the depth."""


def _indent(prefix: str) -> str:
    """The continuation of a tree guide for the next level: ``├─ `` → ``│  ``, ``└─ `` → spaces; at most
    ``MAX_INDENT_LEVELS`` levels of guides are kept (``…`` marks the cut)."""
    out = prefix.replace("├─ ", "│  ").replace("└─ ", "   ").replace("(cycle) ", "")
    if len(out) > 3 * MAX_INDENT_LEVELS:
        out = "…" + out[len(out) - 3 * (MAX_INDENT_LEVELS - 1):]
    return out


def elastic_quota_tree(name: str, cs: dict) -> Table:
    """The Koordinator quota tree of one cluster (state JSON ``elasticQuotas``): groups under
    ``koordinator-root-quota`` drawn with guides, then the system and default groups; one row per
    resource of the group's ``max`` (the root: of what it shares) with ``min``, ``max``,
    ``request``, ``used``, ``runtime`` and the group's pods (pending and running)."""
    quotas = cs.get("elasticQuotas", {})
    children: dict[str | None, list[str]] = {}
    for q in sorted(quotas):
        children.setdefault(quotas[q].get("parent"), []).append(q)
    table = Table(title=f"cluster {name}  elastic quotas  (time {cs.get('time')})", title_justify="left",
                  box=box.SIMPLE_HEAD)
    table.add_column("quota")
    table.add_column("resource")
    for header in ("min", "max", "request", "used", "runtime", "pods"):
        table.add_column(header, justify="right")

    def add(label: str, q: dict) -> None:
        resources = sorted(q.get("max") or q.get("runtime") or {}) or ["-"]
        for i, res in enumerate(resources):
            cells = [qty(res, q.get(field, {}).get(res, 0)) if res != "-" else "-"
                     for field in ("min", "max", "request", "used", "runtime")]
            table.add_row(label if i == 0 else "", res, *cells, str(q.get("pods", 0)) if i == 0 else "")

    stack = [(top, "", "") for top in reversed(children.get(None, []))]
    while stack:  # depth first with an explicit stack: a parent chain of any depth draws without recursion
        q, prefix, guide = stack.pop()
        add(prefix + guide + q, quotas[q])
        kids = children.get(q, [])
        for i in range(len(kids) - 1, -1, -1):
            stack.append((kids[i], _indent(prefix + guide), "└─ " if i == len(kids) - 1 else "├─ "))
    return table


def volcano_queue_tree(name: str, cs: dict) -> Table:
    """The Volcano queue tree of one cluster (state JSON ``queues``): queues under ``root`` drawn with
    guides; one row per resource a queue has numbers for, with ``deserved``, ``realCapability``
    (``∞``: unbounded), ``allocated``, ``inqueue`` and ``request``, its state and the PodGroups by
    phase."""
    queues = cs.get("queues", {})
    groups: dict[str, dict[str, int]] = {}
    for g in cs.get("podGroups", {}).values():
        phases = groups.setdefault(g["queue"], {})
        phases[g["phase"]] = phases.get(g["phase"], 0) + 1
    table = Table(title=f"cluster {name}  volcano queues  (time {cs.get('time')})", title_justify="left",
                  box=box.SIMPLE_HEAD)
    table.add_column("queue")
    table.add_column("resource")
    for header in ("weight", "deserved", "realCap", "allocated", "inqueue", "request"):
        table.add_column(header, justify="right")
    table.add_column("state")
    table.add_column("podGroups")

    def add(label: str, qname: str, q: dict) -> None:
        resources = sorted(set(q["deserved"]) | set(q["realCapability"]) | set(q["allocated"])
                           | set(q["request"])) or ["-"]
        phases = groups.get(qname, {})
        summary = ", ".join(f"{phases[p]} {p}" for p in sorted(phases))
        for i, res in enumerate(resources):
            cells = ["-"] * 5 if res == "-" else [
                qty(res, q["deserved"].get(res, 0)),
                "∞" if res not in q["realCapability"] else qty(res, q["realCapability"][res]),
                qty(res, q["allocated"].get(res, 0)), qty(res, q["inqueue"].get(res, 0)),
                qty(res, q["request"].get(res, 0))]
            table.add_row(label if i == 0 else "", res, str(q["weight"]) if i == 0 else "", *cells,
                          q["state"] if i == 0 else "", summary if i == 0 else "")

    def walk(q: str, prefix: str, guide: str) -> None:
        add(prefix + guide + q, q, queues[q])
        kids = queues[q]["children"]
        for i, child in enumerate(kids):
            walk(child, _indent(prefix + guide), "└─ " if i == len(kids) - 1 else "├─ ")

    if "root" in queues:
        walk("root", "", "")
    return table


def print_state_tree(console: Console, state: dict, only: TreeFilter = TreeFilter()) -> None:
    """Print the tree table of every cluster of a state JSON, filtered by ``only`` (and its
    Koordinator quota tree or its Volcano queue tree when it runs one of those models), then its
    engine version, time and hash."""
    for name, cs in state.get("clusters", {}).items():
        console.print(cluster_tree(name, cs, only))
        if cs.get("elasticQuotas"):
            console.print(elastic_quota_tree(name, cs))
        if cs.get("queues"):
            console.print(volcano_queue_tree(name, cs))
    console.print(f"engine {state.get('engineVersion')}  time {state.get('time')}  hash {state.get('hash')}")
