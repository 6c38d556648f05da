"""Explanations: why a workload is where it is, as data (STYLE.md: one source, rendered by the CLI).

``explain(cluster, key)`` gives a workload's status, how long it has waited as of the cluster's clock
(``waitedMs``: the time of the last event applied minus the time it was queued), Kueue reason and message, what it is short of
(``shortfalls``, the rows of the state JSON), queue positions, its request, and — for every level of
its cohort tree, from its ClusterQueue up to the root — the numbers the admission condition looks at (reference/kueue.md §1.3–1.4): nominal quota, borrowing
and lending limits, subtree quota, local (non-lendable) quota, usage, ``available`` and
``potentialAvailable``, per flavor and resource the workload asks for.  For an admitted workload
the same numbers include its own charge, and the admission (flavors, borrowing height, time) is
listed.  Quantities are integers in base units.

``preemption`` says who preempted the workload and why (the ``Preempted`` decision's preemptor,
reason and message, with its time when the caller passes the cluster's decisions), which workloads
it preempted itself, and — for a pending workload — what it is waiting for: the eviction of its
victims (``releaseOn: Eviction``, Kueue's ``WaitingForPreemptedWorkloads``), the next admission
cycle (``releaseOn: Decision``), or the ``spec.preemption`` policy of its ClusterQueue that forbids
preempting the workloads holding the quota it needs (reference/kueue.md §4.1; docs/preemption.md).

``binding`` names, for each flavor-resource a pending workload is short of, the level that binds: the
level closest to the root whose ``available`` (``WaitingForQuota``) or ``potentialAvailable``
(``ExceedsMaxQuota``) is below what the workload needs.  Availability at a level is bounded by every
level above it, so the highest level short is where the shortage comes from: the root when the whole
tree is in use, a ClusterQueue at its borrowingLimit, a Cohort whose parent's lendingLimit keeps it
out.  ``holders`` lists the admitted workloads charged to that level's subtree for that
flavor-resource — who holds the quota the workload waits for.

``placement`` (only for a workload waiting ``TopologyPlacementFailed``) says why its gang fits no
node set: KAI's summary and every NodeSet tried — its stage (``topology``: the topology plugin,
``nodes``: the flavor/affinity plugin, ``gang``: pod allocation), pod set, domain and the problem
with numbers (docs/placement.md).  An admitted placed workload's ``podSetAssignments`` carry its
``nodes``.

A unit of a model that admits its own units (a Koordinator pod) is explained by that model
(``UnitModel.explain``: its quota's runtime level by level, how each level's share was computed,
and the PreFilter shortfall).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from statemodel.admission.flavorassigner import pending_shortfalls
from statemodel.decisions import PREEMPTED, assignments_json
from statemodel.objects import BorrowWithinCohortPolicy, FlavorResource, PreemptionPolicy
from statemodel.placement.nodesets import PlacementFailure
from statemodel.quota.protocol import CLUSTER_QUEUE, QuotaModel
from statemodel.timefmt import format_time
from statemodel.reasons import WAITING_FOR_PREEMPTED_WORKLOADS
from statemodel.workload import ADMITTED, PENDING, WorkloadInfo

if TYPE_CHECKING:
    from statemodel.cluster import ClusterState
    from statemodel.objects import ClusterQueue


class UnknownWorkload(KeyError):
    """The cluster has no workload of that key."""


def _level(model: QuotaModel, kind: str, name: str, frs: list[FlavorResource]) -> dict:
    resources: dict[str, dict[str, dict]] = {}
    for row in model.entitlements(kind, name, frs):
        resources.setdefault(row.flavor, {})[row.resource] = {
            "nominal": row.nominal,
            "borrowingLimit": row.borrowing_limit,
            "lendingLimit": row.lending_limit,
            "subtreeQuota": row.subtree_quota,
            "localQuota": row.local_quota,
            "usage": row.usage,
            "available": row.available,
            "potentialAvailable": row.potential_available,
        }
    return {"kind": kind, "name": name, "resources": resources}


def explain(cluster: "ClusterState", key: str, decisions: Iterable[dict] = ()) -> dict:
    """The explanation of workload ``key`` (``ns/name``) in ``cluster`` now, JSON-ready (a pod of a
    ``koordinator`` cluster: the model's explanation, ``UnitModel.explain``).

    ``decisions``: the cluster's decisions so far as EVENTS.md JSON objects, in order (optional);
    its ``Preempted`` decisions naming ``key`` as victim or preemptor fill ``preemption.history``
    (times, reasons and messages), see :func:`preemption`.

    Raises:
        UnknownWorkload: no such workload (or unit) in the cluster.
    """
    info = cluster.workloads.get(key)
    if info is None:
        units = cluster.units
        unit = units.explain(key) if units is not None else None
        if unit is None:
            raise UnknownWorkload(key)
        return unit
    position_cq = position_lq = None
    queue = cluster.queues.get(info.cluster_queue) if info.cluster_queue and info.status == PENDING else None
    if queue is not None and key in queue.members:
        lq_index = 0
        for index, other in enumerate(queue.ordered(cluster.local_queue_score)):
            if other is info:
                position_cq, position_lq = index, lq_index
                break
            if other.local_queue == info.local_queue:
                lq_index += 1
    out: dict = {
        "workload": key,
        "status": info.status,
        "clusterQueue": info.cluster_queue,
        "localQueue": info.local_queue,
        "priority": info.obj.priority,
        "queuedAt": format_time(info.queued_ms),
        "asOf": format_time(cluster.clock_ms),
        "waitedMs": max(0, cluster.clock_ms - info.queued_ms) if info.status == PENDING else None,
        "reason": info.reason if info.status == PENDING else None,
        "message": str(info.message) if info.status == PENDING else "",
        "shortfalls": pending_shortfalls(info.message) if info.status == PENDING else [],
        "positionInClusterQueue": position_cq,
        "positionInLocalQueue": position_lq,
        "request": [{"podSet": name, "count": count, "total": dict(totals)} for name, count, totals in info.totals],
        "admission": None,
        "preemption": preemption(cluster, info, decisions),
        "levels": [],
    }
    if info.status == ADMITTED:
        out["admission"] = {
            "admittedAt": format_time(info.admitted_ms) if info.admitted_ms is not None else None,
            "borrowing": info.borrowing,
            "podSetAssignments": assignments_json(info.assignment or [], with_nodes=True),
            "observed": info.observed is not None,
            "engineAgreed": info.observed,
        }
    if info.status == PENDING and isinstance(info.message, PlacementFailure):
        out["placement"] = placement_failure_json(info.message)
    entry = cluster.hierarchy.cluster_queues.get(info.cluster_queue) if info.cluster_queue else None
    if entry is None:
        return out
    requested = {res for _, _, totals in info.totals for res, _ in totals}
    if entry.covers_pods:
        requested.add("pods")
    if info.status == ADMITTED:
        frs = sorted(info.charge)
    else:
        frs = sorted({(flavor.name, res) for group in (entry.spec.resource_groups if entry.spec else ())
                      for flavor in group.flavors for res in group.covered_resources if res in requested})
    model = cluster.model
    out["levels"] = [_level(model, kind, name, frs) for kind, name in model.path(entry.name)]
    if out["shortfalls"]:
        out["binding"] = binding(out["shortfalls"], out["levels"])
    return out


def placement_failure_json(failure: PlacementFailure) -> dict:
    """A ``PlacementFailure`` as data: ``summary`` and ``nodeSets`` (``stage``, ``podSet``,
    ``nodeSet``, ``problem``), in the order they were tried."""
    return {"summary": failure.summary,
            "nodeSets": [{"stage": a.stage, "podSet": a.pod_set, "nodeSet": a.node_set, "problem": a.problem}
                         for a in failure.attempts]}


def binding(shortfalls: list[dict], levels: list[dict]) -> list[dict]:
    """The binding level of each shortfall (module docstring), one row per flavor-resource short.

    Args:
        shortfalls: ``explain``'s ``shortfalls`` rows (``flavor``, ``resource``, ``reason``, ``needed``).
        levels: ``explain``'s ``levels``, from the ClusterQueue up to the root.

    Returns:
        ``{"flavor", "resource", "reason", "needed", "kind", "name", "root", "available",
        "subtreeQuota", "usage"}`` per shortfall, in the shortfalls' order; ``root`` is true for the top
        of the tree.  Integers in base units.  A shortfall with no level short (a podSet short of a
        resource its ClusterQueue does not cover) names the ClusterQueue with ``available`` 0.
    """
    rows: list[dict] = []
    for short in shortfalls:
        flavor, resource, needed = short["flavor"], short["resource"], short["needed"]
        field = "potentialAvailable" if short["reason"] == "ExceedsMaxQuota" else "available"
        chosen, numbers, top = levels[0], None, False
        for index in range(len(levels) - 1, -1, -1):
            q = levels[index]["resources"].get(flavor, {}).get(resource)
            if q is not None and q[field] < needed:
                chosen, numbers, top = levels[index], q, index == len(levels) - 1
                break
        rows.append({
            "flavor": flavor, "resource": resource, "reason": short["reason"], "needed": needed,
            "kind": chosen["kind"], "name": chosen["name"], "root": top,
            "available": numbers[field] if numbers is not None else 0,
            "subtreeQuota": numbers["subtreeQuota"] if numbers is not None else 0,
            "usage": numbers["usage"] if numbers is not None else 0,
        })
    return rows


def holders(cluster: "ClusterState", kind: str, name: str, flavor: str, resource: str, limit: int) -> list[dict]:
    """The admitted workloads charged to the subtree of level ``(kind, name)`` for ``flavor`` /
    ``resource`` — who holds the quota there — the ``limit`` largest first.

    Returns:
        ``{"workload", "clusterQueue", "priority", "admittedAt", "charge"}`` rows, ``charge`` in base
        units, ordered by charge (largest first), then priority (lowest first: the likeliest
        victims), then workload key.  Empty when the level is unknown or nothing is charged there.
    """
    model = cluster.model
    cq_names = sorted(cluster.hierarchy.cluster_queues)
    under = {cq for cq in cq_names if (kind, name) in model.path(cq)} if cq_names else set()
    rows: list[tuple[int, int, str, dict]] = []
    for key in sorted(cluster.workloads):
        info = cluster.workloads[key]
        if info.status != ADMITTED or info.cluster_queue not in under:
            continue
        amount = info.charge.get((flavor, resource), 0)
        if amount <= 0:
            continue
        rows.append((-amount, info.obj.priority, key, {
            "workload": key, "clusterQueue": info.cluster_queue, "priority": info.obj.priority,
            "admittedAt": format_time(info.admitted_ms) if info.admitted_ms is not None else None,
            "charge": amount,
        }))
    rows.sort(key=lambda row: (row[0], row[1], row[2]))
    return [row[3] for row in rows[:limit]]


NEVER = PreemptionPolicy.NEVER
BORROW_NEVER = BorrowWithinCohortPolicy.NEVER


def _policy(spec: "ClusterQueue | None") -> dict | None:
    """``spec.preemption`` of a ClusterQueue as Kueue spells it (``None`` for an unknown ClusterQueue)."""
    if spec is None:
        return None
    p = spec.preemption
    return {"withinClusterQueue": str(p.within_cluster_queue), "reclaimWithinCohort": str(p.reclaim_within_cohort),
            "borrowWithinCohort": {"policy": str(p.borrow_within_cohort_policy),
                                   "maxPriorityThreshold": p.borrow_within_cohort_max_priority_threshold}}


def _history(key: str, decisions: Iterable[dict]) -> list[dict]:
    """The ``Preempted`` decisions naming ``key`` as victim (``role: victim``) or preemptor
    (``role: preemptor``), in decision order."""
    out = []
    for d in decisions:
        if d.get("type") != PREEMPTED:
            continue
        if d.get("workload") == key:
            role = "victim"
        elif d.get("preemptor") == key:
            role = "preemptor"
        else:
            continue
        out.append({"role": role, "seq": d.get("seq"), "time": d.get("time"), "victim": d.get("workload"),
                    "victimClusterQueue": d.get("clusterQueue"), "preemptor": d.get("preemptor"),
                    "preemptorClusterQueue": d.get("preemptorClusterQueue"), "reason": d.get("reason"),
                    "message": d.get("message")})
    return out


def _blocked_by_policy(cluster: "ClusterState", info: WorkloadInfo, spec: "ClusterQueue") -> list[str]:
    """Why the ClusterQueue's policy keeps a pending ``info`` from preempting what holds quota now:
    one sentence per policy that forbids preempting admitted workloads that exist (in its own
    ClusterQueue: those of lower priority; in the rest of its cohort tree: any)."""
    own_cq = info.cluster_queue or ""
    priority = info.obj.priority
    p = spec.preemption
    lower_here = sum(1 for other in cluster.admitted.get(own_cq, {}).values() if other.obj.priority < priority)
    root = cluster.model.path(own_cq)[-1] if own_cq in cluster.hierarchy.cluster_queues else None
    elsewhere = 0
    if root is not None and root[0] != CLUSTER_QUEUE:
        for name, held in cluster.admitted.items():
            if name != own_cq and held and name in cluster.hierarchy.cluster_queues \
                    and cluster.model.path(name)[-1] == root:
                elsewhere += len(held)
    out = []
    if lower_here and p.within_cluster_queue == NEVER:
        out.append(f"withinClusterQueue: Never forbids preempting the {lower_here} lower-priority workload(s) "
                   f"admitted in ClusterQueue {own_cq}")
    if elsewhere and p.reclaim_within_cohort == NEVER:
        out.append(f"reclaimWithinCohort: Never forbids reclaiming quota from the {elsewhere} workload(s) admitted "
                   f"in other ClusterQueues of cohort {root[1] if root else ''}")
    return out


def _waiting_for(cluster: "ClusterState", info: WorkloadInfo, spec: "ClusterQueue | None") -> list[str]:
    """What a pending workload that could preempt is waiting for (module docstring), as sentences."""
    if info.status != PENDING:
        return []
    if info.reason == WAITING_FOR_PREEMPTED_WORKLOADS:
        holding = [v for v in info.victims if (w := cluster.workloads.get(v)) is not None and w.evicting]
        if holding:
            return [f"the eviction of {len(holding)} preempted workload(s) still holding their quota "
                    f"(releaseOn: Eviction; freed at their WorkloadEvicted or WorkloadFinished): "
                    + ", ".join(holding)]
        return [f"the next admission cycle: the quota of its {len(info.victims)} victim(s) was released "
                "(releaseOn: Decision) and it is tried first"]
    if spec is None:
        return []
    return _blocked_by_policy(cluster, info, spec)


def preemption(cluster: "ClusterState", info: WorkloadInfo, decisions: Iterable[dict] = ()) -> dict:
    """The ``preemption`` part of an explanation (reference/kueue.md §4; docs/preemption.md):

    - ``preemptedBy`` / ``reason``: the workload that preempted it and Kueue's reason
      (``InClusterQueue``, ``InCohortReclamation``, ...), while it waits again or awaits its
      eviction; ``evicting``: admitted but already chosen as a victim (``releaseOn: Eviction``);
    - ``victims``: the workloads it preempted for its current or awaited admission, each with its
      ``status``, ClusterQueue and whether it still holds its quota (``evicting``);
    - ``policy``: its ClusterQueue's ``spec.preemption``;
    - ``waitingFor``: for a pending workload, sentences saying what it waits for (see
      :func:`_waiting_for`), ``[]`` when there is nothing preemption-related to wait for;
    - ``history``: the ``Preempted`` decisions of ``decisions`` that name it (victim or preemptor).
    """
    entry = cluster.hierarchy.cluster_queues.get(info.cluster_queue) if info.cluster_queue else None
    spec = entry.spec if entry is not None else None
    victims = []
    for key in info.victims:
        victim = cluster.workloads.get(key)
        victims.append({"workload": key, "status": victim.status if victim is not None else None,
                        "clusterQueue": victim.cluster_queue if victim is not None else None,
                        "evicting": victim.evicting if victim is not None else False})
    return {"preemptedBy": info.preempted_by, "reason": info.preemption_reason, "evicting": info.evicting,
            "victims": victims, "policy": _policy(spec), "waitingFor": _waiting_for(cluster, info, spec),
            "history": _history(info.key, decisions)}
