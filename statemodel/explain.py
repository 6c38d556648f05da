"""Explanations: why a workload is where it is, as data (STYLE.md: one source, rendered by the CLI).

``explain(cluster, key)`` gives a workload's status, Kueue reason and message, what it is short of
(``shortfalls``, the rows of the state JSON), queue positions, its request, and — for every level of
its cohort tree, from its ClusterQueue up to the root — the numbers the admission condition looks at (reference/kueue.md §1.3–1.4): nominal quota, borrowing
and lending limits, subtree quota, local (non-lendable) quota, usage, ``available`` and
``potentialAvailable``, per flavor and resource the workload asks for.  For an admitted workload
the same numbers include its own charge, and the admission (flavors, borrowing height, time) is
listed.  Quantities are integers in base units.  A unit of a model that admits its own units (a
Koordinator pod) is explained by that model (``UnitModel.explain``: its quota's runtime level by
level, how each level's share was computed, and the PreFilter shortfall).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from statemodel.admission.flavorassigner import pending_shortfalls
from statemodel.decisions import assignments_json
from statemodel.quota.protocol import QuotaModel
from statemodel.timefmt import format_time
from statemodel.workload import ADMITTED, PENDING

if TYPE_CHECKING:
    from statemodel.cluster import ClusterState


class UnknownWorkload(KeyError):
    """The cluster has no workload of that key."""


def _level(model: QuotaModel, kind: str, name: str, frs: list[tuple[str, str]]) -> dict:
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


def explain(cluster: "ClusterState", key: str) -> dict:
    """The explanation of workload ``key`` (``ns/name``) in ``cluster`` now, JSON-ready (a pod of a
    ``koordinator`` cluster: the model's explanation, ``UnitModel.explain``).

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
        "reason": info.reason if info.status == PENDING else None,
        "message": str(info.message) if info.status == PENDING else "",
        "shortfalls": pending_shortfalls(info.message) if info.status == PENDING else [],
        "positionInClusterQueue": position_cq,
        "positionInLocalQueue": position_lq,
        "request": [{"podSet": name, "count": count, "total": dict(totals)} for name, count, totals in info.totals],
        "admission": None,
        "levels": [],
    }
    if info.status == ADMITTED:
        out["admission"] = {
            "admittedAt": format_time(info.admitted_ms) if info.admitted_ms is not None else None,
            "borrowing": info.borrowing,
            "podSetAssignments": assignments_json(info.assignment or []),
            "observed": info.observed is not None,
            "engineAgreed": info.observed,
        }
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
    return out
