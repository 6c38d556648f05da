"""Kueue's projection tables: ``cohorts``, ``cluster_queues``, ``local_queues`` and ``quotas``
(quota per tree node × flavor × resource, base units), from the hierarchy and the quota model's
entitlement rows."""

from __future__ import annotations

import sqlalchemy as sa

from replay.store.projections.base import Projection, ProjectionSource
from statemodel import sql_schema as s
from statemodel.quota.protocol import CLUSTER_QUEUE, COHORT, QuotaModel


def _quota_rows(cluster: str, model: QuotaModel, kind: str, name: str) -> list[dict]:
    """The ``quotas`` rows of one cohort or ClusterQueue, one per flavor × resource it names, from the
    model's entitlement rows: nominal quota and limits; usage; ``subtree_quota`` for a cohort;
    ``available`` (clamped at 0, as Kueue reports it) and ``potential_available`` (ignoring usage)
    for a ClusterQueue."""
    cluster_queue = kind == CLUSTER_QUEUE
    node_kind = "cluster_queue" if cluster_queue else "cohort"
    return [{"cluster": cluster, "node_kind": node_kind, "node_name": name, "flavor": row.flavor,
             "resource": row.resource, "nominal": row.nominal, "borrowing_limit": row.borrowing_limit,
             "lending_limit": row.lending_limit,
             "subtree_quota": None if cluster_queue else row.subtree_quota,
             "usage": row.usage,
             "available": max(0, row.available) if cluster_queue else None,
             "potential_available": row.potential_available if cluster_queue else None}
            for row in model.entitlements(kind, name)]


def _weighted_share(state, kind: str, name: str) -> int | None:
    """Kueue's ``weightedShare`` of the node, or ``None`` when the cluster does not run fair sharing."""
    if not state.config.fair_sharing_enable:
        return None
    return state.model.share(kind, name, state.hierarchy.fair_weight(kind, name)).weighted_share()


def build(source: ProjectionSource) -> dict[sa.Table, list]:
    """Rows of the cohorts (sorted by name; ``active`` false on a cycle), ClusterQueues (``active``
    when nothing keeps them from admitting; pending and admitted counts), both with their fair-sharing
    ``weighted_share``, LocalQueues and their quotas.  Linear in the tree's size, whatever its depth
    (a 100,000-level chain took a quarter of an hour while each cohort walked its chain for cycles)."""
    cluster, state = source.cluster, source.state
    hierarchy = state.hierarchy
    cohorts, cluster_queues, local_queues, quotas = [], [], [], []
    cycles = hierarchy.cycle_status()  # every cohort's verdict in O(cohorts), not a chain walk per cohort
    for name in sorted(hierarchy.cohorts):
        cohort = hierarchy.cohorts[name]
        cohorts.append({"cluster": cluster, "name": name, "parent": cohort.parent_name,
                        "explicit": cohort.explicit, "active": not cycles[name],
                        "weighted_share": _weighted_share(state, COHORT, name)})
        quotas += _quota_rows(cluster, state.model, COHORT, name)
    pending = source.pending_by_cluster_queue
    for name in sorted(hierarchy.cluster_queues):
        entry = hierarchy.cluster_queues[name]
        cluster_queues.append({"cluster": cluster, "name": name, "cohort": entry.cohort_name,
                               "active": state.inactive_reason(name) is None,
                               "pending_workloads": pending.get(name, 0),
                               "admitted_workloads": len(state.admitted.get(name, {})),
                               "weighted_share": _weighted_share(state, CLUSTER_QUEUE, name)})
        quotas += _quota_rows(cluster, state.model, CLUSTER_QUEUE, name)
    counts = source.local_queue_counts
    for key in sorted(state.local_queues):
        pending_lq, admitted_lq = counts.get(key, (0, 0))
        local_queues.append({"cluster": cluster, "key": key, "cluster_queue": state.local_queues[key].cluster_queue,
                             "pending_workloads": pending_lq, "admitted_workloads": admitted_lq})
    return {s.cohorts: cohorts, s.cluster_queues: cluster_queues, s.local_queues: local_queues, s.quotas: quotas}


PROJECTION = Projection((s.cohorts, s.cluster_queues, s.local_queues, s.quotas), build)
