"""The ``nodes`` projection table: the cluster's ``v1`` Nodes from its node ledger
(``statemodel.placement.nodes.NodeLedger``), allocatable in base units."""

from __future__ import annotations

import sqlalchemy as sa

from replay.store.projections.base import Projection, ProjectionSource
from statemodel import sql_schema as s


def build(source: ProjectionSource) -> dict[sa.Table, list]:
    """One row per node, sorted by name: labels and allocatable as JSON maps, taints as a JSON list
    of ``{key, value, effect}`` in the object's order, ``unschedulable``."""
    cluster = source.cluster
    return {s.nodes: [{"cluster": cluster, "name": node.name, "labels": dict(node.labels),
                       "allocatable": dict(node.allocatable), "unschedulable": node.unschedulable,
                       "taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in node.taints]}
                      for node in source.state.nodes.nodes()]}


PROJECTION = Projection((s.nodes,), build)
