"""The state JSON (issue 2 "Public CLI contract"): a read-only view of the engine, built on demand.

All quantities are integers in base units.  ``available`` is clamped at 0 as Kueue reports it;
``potentialAvailable`` ignores usage.  Positions are 0-based, in the queue's own order over every
pending workload (active and set aside), as Kueue's visibility API reports them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from statemodel.decisions import assignments_json
from statemodel.hierarchy import Hierarchy
from statemodel.resource_node import QuotaNode, available, potential_available
from statemodel.timefmt import format_time
from statemodel.version import ENGINE_VERSION
from statemodel.workload import ADMITTED, FINISHED, PENDING

if TYPE_CHECKING:
    from statemodel.cluster import ClusterState
    from statemodel.engine import Engine


def _by_flavor(node: QuotaNode, cluster_queue: bool) -> dict:
    out: dict[str, dict[str, dict]] = {}
    for fr in node.flavor_resources():
        flavor, resource = fr
        row = {
            "nominal": node.nominal.get(fr, 0),
            "borrowingLimit": node.borrowing_limit.get(fr),
            "lendingLimit": node.lending_limit.get(fr),
        }
        if cluster_queue:
            row["usage"] = node.usage.get(fr, 0)
            row["available"] = max(0, available(node, fr))
            row["potentialAvailable"] = potential_available(node, fr)
        else:
            row["subtreeQuota"] = node.subtree.get(fr, 0)
            row["usage"] = node.usage.get(fr, 0)
        out.setdefault(flavor, {})[resource] = row
    return out


def _cohorts(hierarchy: Hierarchy) -> dict:
    out = {}
    for name in sorted(hierarchy.cohorts):
        entry = hierarchy.cohorts[name]
        out[name] = {
            "parent": entry.parent_name,
            "explicit": entry.explicit,
            "active": not hierarchy.has_cycle(name),
            "resources": _by_flavor(entry.node, False),
        }
    return out


def _cluster(cluster: "ClusterState") -> dict:
    hierarchy = cluster.hierarchy
    positions: dict[str, tuple[int, int]] = {}
    pending_by_cq: dict[str, int] = {}
    for name, queue in cluster.queues.items():
        per_lq: dict[str, int] = {}
        ordered = queue.ordered()
        pending_by_cq[name] = len(ordered)
        for index, info in enumerate(ordered):
            lq_index = per_lq.get(info.local_queue, 0)
            per_lq[info.local_queue] = lq_index + 1
            positions[info.key] = (index, lq_index)

    cluster_queues = {}
    for name in sorted(hierarchy.cluster_queues):
        entry = hierarchy.cluster_queues[name]
        cluster_queues[name] = {
            "cohort": entry.cohort_name,
            "active": cluster.inactive_reason(name) is None,
            "pending": pending_by_cq.get(name, 0),
            "admitted": len(cluster.admitted.get(name, {})),
            "resources": _by_flavor(entry.node, True),
        }

    lq_counts: dict[str, list[int]] = {}
    workloads = {}
    for key in sorted(cluster.workloads):
        info = cluster.workloads[key]
        counts = lq_counts.setdefault(info.local_queue, [0, 0])
        if info.status == ADMITTED:
            counts[1] += 1
        elif info.status == PENDING:
            counts[0] += 1
        position = positions.get(key)
        workloads[key] = {
            "status": info.status,
            "clusterQueue": info.cluster_queue,
            "localQueue": info.local_queue,
            "priority": info.obj.priority,
            "queuedAt": format_time(info.queued_ms),
            "reason": info.reason if info.status == PENDING else None,
            "message": info.message if info.status == PENDING else "",
            "positionInClusterQueue": position[0] if position else None,
            "positionInLocalQueue": position[1] if position else None,
            "podSetAssignments": assignments_json(info.assignment) if info.assignment is not None else None,
            "borrowing": info.borrowing if info.status == ADMITTED else None,
            "admittedAt": format_time(info.admitted_ms) if info.admitted_ms is not None and info.status == ADMITTED else None,
            "observedAdmissionAgreed": info.observed if info.status == ADMITTED else None,
        }

    local_queues = {}
    for key in sorted(cluster.local_queues):
        lq = cluster.local_queues[key]
        counts = lq_counts.get(key, [0, 0])
        local_queues[key] = {"clusterQueue": lq.cluster_queue, "pending": counts[0], "admitted": counts[1]}

    return {
        "time": format_time(cluster.clock_ms),
        "decisions": cluster.seq,
        "cohorts": _cohorts(hierarchy),
        "clusterQueues": cluster_queues,
        "localQueues": local_queues,
        "workloads": workloads,
    }


def render_state(engine: "Engine") -> dict:
    """The whole state JSON for ``engine``: version, hash, time, event counts and every cluster."""
    clock = max((c.clock_ms for c in engine.clusters.values()), default=0)
    clusters = {}
    for name in sorted(engine.clusters):
        view = _cluster(engine.clusters[name])
        view["hash"] = engine.chains[name].hex()
        clusters[name] = view
    return {
        "engineVersion": ENGINE_VERSION,
        "hash": engine.hash,
        "time": format_time(clock),
        "events": {"applied": engine.applied, "rejected": engine.rejected, "duplicates": engine.duplicates},
        "clusters": clusters,
    }
