"""The state JSON (the public CLI contract, docs/events.md): a read-only view of the engine, built on demand.

With admission fair sharing configured, LocalQueues, ClusterQueues and Cohorts carry
``admissionFairSharing`` (consumed, penalty, score, lastUpdate; a ClusterQueue sums its
LocalQueues, a Cohort the ClusterQueues below it), each cluster carries ``config`` and the top
level carries ``config`` when every cluster has the same one.  Each cluster carries ``nodes``
(its ``v1`` Nodes by name with what placed pods hold there, ``statemodel.placement.nodes.NodeLedger.view``),
``capacity`` (the allocatable summed over the schedulable ones, per resource) and, when ``Topology``
objects exist, ``topologies`` (levels and each domain's node count and free capacity,
``NodeLedger.topology_view``); a placed workload's ``podSetAssignments`` carry ``nodes``.

All quantities are integers in base units.  ``available`` is clamped at 0 as Kueue reports it;
``potentialAvailable`` ignores usage.  With fair sharing enabled (``EngineConfig.spec.fairSharing``),
ClusterQueues and Cohorts carry ``fairSharing`` (``weightedShare`` as Kueue's ``status.fairSharing``,
and the exact share behind it).  Positions are 0-based, in the queue's own order over every
pending workload (active and set aside), as Kueue's visibility API reports them.  A pending
workload that does not fit lists what it is short of in ``shortfalls`` (one row per flavor tried
and resource short, ``WorkloadRecord.shortfalls``); every other workload has ``shortfalls: []``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from statemodel.admission.flavorassigner import pending_shortfalls
from statemodel.decisions import assignments_json
from statemodel.queues.afs import CONTEXT, INFINITY, FairSharingLedgers, score, unit_divisor
from statemodel.hierarchy import Hierarchy
from statemodel.quota.protocol import CLUSTER_QUEUE, COHORT, QuotaModel
from statemodel.timefmt import format_duration, format_time
from statemodel.version import ENGINE_VERSION
from statemodel.workload import ADMITTED, PENDING

if TYPE_CHECKING:
    from collections.abc import Collection

    from statemodel.cluster import ClusterState
    from statemodel.engine import Engine


def _by_flavor(model: QuotaModel, kind: str, name: str) -> dict:
    out: dict[str, dict[str, dict]] = {}
    for row in model.entitlements(kind, name):
        view: dict = {
            "nominal": row.nominal,
            "borrowingLimit": row.borrowing_limit,
            "lendingLimit": row.lending_limit,
        }
        if kind == CLUSTER_QUEUE:
            view["usage"] = row.usage
            view["available"] = max(0, row.available)
            view["potentialAvailable"] = row.potential_available
        else:
            view["subtreeQuota"] = row.subtree_quota
            view["usage"] = row.usage
        out.setdefault(row.flavor, {})[row.resource] = view
    return out


def _afs_view(afs: FairSharingLedgers, lq_keys: list[str], weight_milli: int, now_ms: int) -> dict:
    """``admissionFairSharing`` of a LocalQueue, ClusterQueue or Cohort: numbers in Kueue's score
    units (cores for cpu, base units otherwise); ``score`` is ``null`` for a zero weight (+∞)."""
    assert afs.params is not None
    consumed, penalty, last = afs.totals(lq_keys, now_ms)
    value = score(afs.params, consumed, penalty, weight_milli)
    return {
        "consumed": {res: float(CONTEXT.divide(v, unit_divisor(res))) for res, v in consumed.items()},
        "penalty": {res: float(CONTEXT.divide(v, unit_divisor(res))) for res, v in penalty.items()},
        "score": None if value == INFINITY else float(value),
        "lastUpdate": format_time(last),
    }


def _fair_sharing_view(cluster: "ClusterState", kind: str, name: str) -> dict:
    """``fairSharing`` of a ClusterQueue or Cohort (Kueue ``status.fairSharing``): ``weightedShare``, the
    integer Kueue reports (``Share.weighted_share``), plus the exact share it rounds up
    (``"numerator/denominator"`` text, ``null`` for +∞), the dominant resource and whether it borrows."""
    share = cluster.model.share(kind, name, cluster.hierarchy.fair_weight(kind, name))
    exact = None if share.zero_weight_borrows() else str(share.precise())
    return {"weightedShare": share.weighted_share(), "share": exact, "dominantResource": share.resource or None,
            "borrowing": bool(share.borrowed)}


def _afs_config(cluster: "ClusterState") -> dict | None:
    config = cluster.config.admission_fair_sharing
    params = cluster.afs.params
    if config is None or params is None:
        return None
    return {
        "usageHalfLifeTime": format_duration(config.usage_half_life_ms),
        "usageSamplingInterval": format_duration(config.usage_sampling_interval_ms),
        "resourceWeights": {res: milli / 1000 for res, milli in config.resource_weights_milli},
        "resetInactivityPeriod": format_duration(config.reset_inactivity_period_ms),
        "alpha": float(params.alpha),
    }


def subtree_cluster_queues(hierarchy: Hierarchy, cohort: str) -> list[str]:
    """ClusterQueues below ``cohort`` along structural edges (each cohort visited once)."""
    out: list[str] = []
    seen: set[str] = set()
    stack = [cohort]
    while stack:
        name = stack.pop()
        if name in seen or name not in hierarchy.cohorts:
            continue
        seen.add(name)
        entry = hierarchy.cohorts[name]
        out.extend(entry.child_cluster_queues)
        stack.extend(entry.child_cohorts)
    return sorted(out)


def _cohorts(cluster: "ClusterState") -> dict:
    hierarchy = cluster.hierarchy
    afs_on = cluster.afs.params is not None
    out = {}
    cycles = hierarchy.cycle_status()
    for name in sorted(hierarchy.cohorts):
        entry = hierarchy.cohorts[name]
        view = {
            "parent": entry.parent_name,
            "explicit": entry.explicit,
            "active": not cycles[name],
            "resources": _by_flavor(cluster.model, COHORT, name),
        }
        if cluster.config.fair_sharing_enable:
            view["fairSharing"] = _fair_sharing_view(cluster, COHORT, name)
        if afs_on:
            lqs = [lq for cq in subtree_cluster_queues(hierarchy, name) for lq in cluster.local_queues_of(cq)]
            weight = entry.spec.fair_weight_milli if entry.spec is not None else 1000
            view["admissionFairSharing"] = _afs_view(cluster.afs, lqs, weight, cluster.clock_ms)
        out[name] = view
    return out


class WorkloadRecord(NamedTuple):
    """What the state says of one workload.  The state JSON (``workloads``) and the ``workloads``
    projection table (``replay.store.projections``) are both renderings of it.

    Attributes:
        status: a ``statemodel.workload.WorkloadStatus``.
        cluster_queue / local_queue: where it is queued or admitted (``None`` / ``namespace/name``).
        priority: the Workload's priority.
        queued_ms: event time it (last) entered the queue, epoch milliseconds.
        reason / message: Kueue ``QuotaReserved=False`` reason and message (pending only, else
            ``None`` / ``""``).
        shortfalls: what a pending workload that does not fit is short of, JSON-ready rows
            (``flavorassigner.NoFitMessage.shortfalls``); ``[]`` otherwise.
        position_in_cluster_queue / position_in_local_queue: 0-based, pending only, else ``None``.
        assignments: ``podSetAssignments`` JSON value, or ``None`` when not admitted.
        borrowing / admitted_ms / observed: admitted only, else ``None``.
        preempted_by / preemption_reason: who preempted it and why (Kueue's ``Preempted``
            condition), while it waits again or awaits its eviction; else ``None``.
        victims: the workloads it preempted for its admission (admitted or awaiting it), else ``[]``.
    """

    status: str
    cluster_queue: str | None
    local_queue: str
    priority: int
    queued_ms: int
    reason: str | None
    message: str
    shortfalls: list[dict]
    position_in_cluster_queue: int | None
    position_in_local_queue: int | None
    assignments: list[dict] | None
    borrowing: int | None
    admitted_ms: int | None
    observed: bool | None
    preempted_by: str | None = None
    preemption_reason: str | None = None
    victims: tuple[str, ...] = ()


def queue_positions(cluster: "ClusterState") -> tuple[dict[str, tuple[int, int]], dict[str, int]]:
    """``(key -> (position in ClusterQueue, position in LocalQueue), ClusterQueue -> pending count)``
    over every pending workload, in each queue's own order."""
    positions: dict[str, tuple[int, int]] = {}
    pending_by_cq: dict[str, int] = {}
    for name, queue in cluster.queues.items():
        per_lq: dict[str, int] = {}
        ordered = queue.ordered(cluster.local_queue_score)
        pending_by_cq[name] = len(ordered)
        for index, info in enumerate(ordered):
            lq_index = per_lq.get(info.local_queue, 0)
            per_lq[info.local_queue] = lq_index + 1
            positions[info.key] = (index, lq_index)
    return positions, pending_by_cq


def workload_records(cluster: "ClusterState", positions: dict[str, tuple[int, int]],
                     only: "Collection[str] | None", pending_keys: list[str]) -> list[tuple[str, WorkloadRecord]]:
    """``(key, record)`` of every workload, or of the keys in ``only`` that exist and every pending
    workload (``pending_keys``); sorted by key."""
    workloads = cluster.workloads
    if only is None:
        keys = sorted(workloads)
    else:
        keys = sorted({k for k in only if k in workloads}.union(pending_keys))
    out = []
    for key in keys:
        info = workloads[key]
        pending, admitted = info.status == PENDING, info.status == ADMITTED
        position = positions.get(key)
        out.append((key, WorkloadRecord(
            info.status, info.cluster_queue, info.local_queue, info.obj.priority, info.queued_ms,
            info.reason if pending else None, str(info.message) if pending else "",
            pending_shortfalls(info.message) if pending else [],
            position[0] if position else None, position[1] if position else None,
            assignments_json(info.assignment, with_nodes=True) if info.assignment is not None else None,
            info.borrowing if admitted else None,
            info.admitted_ms if admitted else None,
            info.observed if admitted else None,
            info.preempted_by, info.preemption_reason, tuple(info.victims))))
    return out


def _workload_json(record: WorkloadRecord) -> dict:
    return {
        "status": record.status,
        "clusterQueue": record.cluster_queue,
        "localQueue": record.local_queue,
        "priority": record.priority,
        "queuedAt": format_time(record.queued_ms),
        "reason": record.reason,
        "message": record.message,
        "shortfalls": record.shortfalls,
        "positionInClusterQueue": record.position_in_cluster_queue,
        "positionInLocalQueue": record.position_in_local_queue,
        "podSetAssignments": record.assignments,
        "borrowing": record.borrowing,
        "admittedAt": format_time(record.admitted_ms) if record.admitted_ms is not None else None,
        "observedAdmissionAgreed": record.observed,
        "preemptedBy": record.preempted_by,
        "preemptionReason": record.preemption_reason,
        "preempted": list(record.victims),
    }


def workload_counts(cluster: "ClusterState") -> tuple[dict[str, list[int]], list[str]]:
    """``(LocalQueue key -> [pending, admitted] workload counts, keys of the pending workloads)``,
    in one pass over the workloads."""
    lq_counts: dict[str, list[int]] = {}
    pending = []
    for key, info in cluster.workloads.items():
        counts = lq_counts.setdefault(info.local_queue, [0, 0])
        if info.status == ADMITTED:
            counts[1] += 1
        elif info.status == PENDING:
            counts[0] += 1
            pending.append(key)
    return lq_counts, pending


def cluster_view(cluster: "ClusterState") -> dict:
    """One cluster's section of the state JSON, without its ``hash`` (the engine keeps the hash chains)."""
    hierarchy = cluster.hierarchy
    positions, pending_by_cq = queue_positions(cluster)

    afs_on = cluster.afs.params is not None
    cluster_queues = {}
    for name in sorted(hierarchy.cluster_queues):
        entry = hierarchy.cluster_queues[name]
        cluster_queues[name] = {
            "cohort": entry.cohort_name,
            "active": cluster.inactive_reason(name) is None,
            "pending": pending_by_cq.get(name, 0),
            "admitted": len(cluster.admitted.get(name, {})),
            "resources": _by_flavor(cluster.model, CLUSTER_QUEUE, name),
        }
        if cluster.config.fair_sharing_enable:
            cluster_queues[name]["fairSharing"] = _fair_sharing_view(cluster, CLUSTER_QUEUE, name)
        if afs_on:
            weight = entry.spec.fair_weight_milli if entry.spec is not None else 1000
            cluster_queues[name]["admissionFairSharing"] = _afs_view(
                cluster.afs, cluster.local_queues_of(name), weight, cluster.clock_ms)

    lq_counts, pending = workload_counts(cluster)
    workloads = {key: _workload_json(record) for key, record in workload_records(cluster, positions, None, pending)}

    local_queues = {}
    for key in sorted(cluster.local_queues):
        lq = cluster.local_queues[key]
        counts = lq_counts.get(key, [0, 0])
        local_queues[key] = {"clusterQueue": lq.cluster_queue, "pending": counts[0], "admitted": counts[1]}
        if afs_on:
            local_queues[key]["admissionFairSharing"] = _afs_view(
                cluster.afs, [key], lq.fair_weight_milli, cluster.clock_ms)

    return {
        "time": format_time(cluster.clock_ms),
        "decisions": cluster.seq,
        "config": {"admissionFairSharing": _afs_config(cluster)},
        "cohorts": _cohorts(cluster),
        "clusterQueues": cluster_queues,
        "localQueues": local_queues,
        "workloads": workloads,
        "nodes": cluster.nodes.view(),
        "capacity": cluster.nodes.totals(),
        **({"topologies": cluster.nodes.topology_view()} if cluster.nodes.topologies else {}),
        **(cluster.units.view() if cluster.units is not None else {}),
    }


def render_cluster(engine: "Engine", name: str) -> dict:
    """One cluster's section of the state JSON (with its ``hash``).

    Raises:
        KeyError: ``name`` is not a cluster of ``engine``.
    """
    view = cluster_view(engine.clusters[name])
    view["hash"] = engine.chains[name].hex()
    return view


def render_state(engine: "Engine") -> dict:
    """The whole state JSON for ``engine``: version, hash, time, event counts and every cluster."""
    clock = max((c.clock_ms for c in engine.clusters.values()), default=0)
    clusters = {}
    for name in sorted(engine.clusters):
        clusters[name] = render_cluster(engine, name)
    configs = [view["config"] for view in clusters.values()]
    shared = configs[0] if configs and all(c == configs[0] for c in configs) else {"admissionFairSharing": None}
    return {
        "engineVersion": ENGINE_VERSION,
        "hash": engine.hash,
        "time": format_time(clock),
        "events": {"applied": engine.applied, "rejected": engine.rejected, "duplicates": engine.duplicates},
        "config": shared,
        "clusters": clusters,
    }
