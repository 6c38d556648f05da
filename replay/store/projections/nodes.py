"""The ``nodes`` and ``placements`` projection tables: the cluster's ``v1`` Nodes from its node ledger
(``statemodel.placement.nodes.NodeLedger``), allocatable and allocated in base units, and where the
pods of every placed workload are (``WorkloadInfo.nodes``, per pod set from its assignment) and of
every pod a pod-scheduling model bound (``ClusterState.pod_nodes``: the pod's key, pod set ``main``)."""

from __future__ import annotations

import sqlalchemy as sa

from replay.store.projections.base import Projection, ProjectionSource
from statemodel import sql_schema as s


def build(source: ProjectionSource) -> dict[sa.Table, list]:
    """``nodes``: one row per node, sorted by name: labels, allocatable and allocated as JSON maps,
    taints as a JSON list of ``{key, value, effect}`` in the object's order, ``unschedulable``.
    ``placements``: one row per (workload, pod set, node) of the admitted workloads holding nodes and
    per bound pod of a pod-scheduling model,
    sorted by those keys: the pods there and what they hold (per-pod request × pods)."""
    cluster = source.cluster
    state = source.state
    ledger = state.nodes
    placements = []
    for key in sorted(state.workloads):
        info = state.workloads[key]
        if not info.nodes or info.assignment is None:
            continue
        per_pod = {ps.name: ps.requests for ps in info.obj.pod_sets}
        for psa in info.assignment:
            for node, pods in psa.nodes or ():
                placements.append({"cluster": cluster, "workload": key, "pod_set": psa.name, "node": node,
                                   "pods": pods, "allocated": {res: amount * pods for res, amount
                                                               in per_pod.get(psa.name, ()) if amount}})
    for key, (node, amounts) in state.pod_nodes.held.items():  # pods of the pod-scheduling models
        placements.append({"cluster": cluster, "workload": key, "pod_set": "main", "node": node, "pods": 1,
                           "allocated": dict(sorted(amounts.items()))})
    placements.sort(key=lambda r: (r["workload"], r["pod_set"], r["node"]))
    return {s.nodes: [{"cluster": cluster, "name": node.name, "labels": dict(node.labels),
                       "allocatable": dict(node.allocatable), "unschedulable": node.unschedulable,
                       "taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in node.taints],
                       "allocated": dict(sorted(ledger.allocated(node.name).items()))}
                      for node in ledger.nodes()],
            s.placements: placements}


PROJECTION = Projection((s.nodes, s.placements), build)
