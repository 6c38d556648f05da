"""Kueue's projection tables: ``cohorts``, ``cluster_queues``, ``local_queues`` and ``quotas``
(quota per tree node × flavor × resource, base units), from the hierarchy and its quota nodes."""

from __future__ import annotations

import sqlalchemy as sa

from replay.store.projections.base import Projection, ProjectionSource
from statemodel import sql_schema as s
from statemodel.quota.kueue import QuotaNode, available, potential_available


def _quota_rows(cluster: str, kind: str, node: QuotaNode) -> list[dict]:
    """The ``quotas`` rows of one cohort or ClusterQueue (``kind``), one per flavor × resource it
    names: nominal quota and limits; usage; ``subtree_quota`` for a cohort; ``available`` (clamped at
    0, as Kueue reports it) and ``potential_available`` (ignoring usage) for a ClusterQueue."""
    cluster_queue = node.is_cluster_queue
    rows = []
    for fr in node.flavor_resources():
        flavor, resource = fr
        rows.append({
            "cluster": cluster, "node_kind": kind, "node_name": node.name, "flavor": flavor, "resource": resource,
            "nominal": node.nominal.get(fr, 0), "borrowing_limit": node.borrowing_limit.get(fr),
            "lending_limit": node.lending_limit.get(fr),
            "subtree_quota": None if cluster_queue else node.subtree.get(fr, 0),
            "usage": node.usage.get(fr, 0),
            "available": max(0, available(node, fr)) if cluster_queue else None,
            "potential_available": potential_available(node, fr) if cluster_queue else None})
    return rows


def build(source: ProjectionSource) -> dict[sa.Table, list]:
    """Rows of the cohorts (sorted by name; ``active`` false on a cycle), ClusterQueues (``active``
    when nothing keeps them from admitting; pending and admitted counts), LocalQueues and their quotas."""
    cluster, state = source.cluster, source.state
    hierarchy = state.hierarchy
    cohorts, cluster_queues, local_queues, quotas = [], [], [], []
    for name in sorted(hierarchy.cohorts):
        cohort = hierarchy.cohorts[name]
        cohorts.append({"cluster": cluster, "name": name, "parent": cohort.parent_name,
                        "explicit": cohort.explicit, "active": not hierarchy.has_cycle(name)})
        quotas += _quota_rows(cluster, "cohort", cohort.node)
    pending = source.pending_by_cluster_queue
    for name in sorted(hierarchy.cluster_queues):
        entry = hierarchy.cluster_queues[name]
        cluster_queues.append({"cluster": cluster, "name": name, "cohort": entry.cohort_name,
                               "active": state.inactive_reason(name) is None,
                               "pending_workloads": pending.get(name, 0),
                               "admitted_workloads": len(state.admitted.get(name, {}))})
        quotas += _quota_rows(cluster, "cluster_queue", entry.node)
    counts = source.local_queue_counts
    for key in sorted(state.local_queues):
        pending_lq, admitted_lq = counts.get(key, (0, 0))
        local_queues.append({"cluster": cluster, "key": key, "cluster_queue": state.local_queues[key].cluster_queue,
                             "pending_workloads": pending_lq, "admitted_workloads": admitted_lq})
    return {s.cohorts: cohorts, s.cluster_queues: cluster_queues, s.local_queues: local_queues, s.quotas: quotas}


PROJECTION = Projection((s.cohorts, s.cluster_queues, s.local_queues, s.quotas), build)
