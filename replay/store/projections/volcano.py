"""The ``volcano_queues`` projection table: the queues of a cluster running the ``volcano`` quota model
(``statemodel.quota.volcano``), read from the model's queues, amounts in base units."""

from __future__ import annotations

import sqlalchemy as sa

from replay.store.projections.base import Projection, ProjectionSource
from statemodel import sql_schema as s
from statemodel.quota.volcano import VolcanoModel


def build(source: ProjectionSource) -> dict[sa.Table, list]:
    """One row per queue, sorted by name (none unless the cluster runs the ``volcano`` model): upstream
    ``queueAttr`` numbers as JSON maps with sorted keys (with hierarchy a parent's are its subtree's),
    the exact share as a string, the PodGroups not Completed."""
    model = source.state.model
    if not isinstance(model, VolcanoModel):
        return {s.volcano_queues: []}
    cluster = source.cluster
    return {s.volcano_queues: [
        {"cluster": cluster, "name": name, "parent": q["parent"], "weight": q["weight"], "state": q["state"],
         "reclaimable": q["reclaimable"], "capability": q["capability"], "real_capability": q["realCapability"],
         "guarantee": q["guarantee"], "deserved": q["deserved"], "allocated": q["allocated"],
         "request": q["request"], "inqueue": q["inqueue"], "elastic": q["elastic"], "share": q["share"],
         "pod_groups": groups}
        for name, q, groups in model.queue_rows()]}


PROJECTION = Projection((s.volcano_queues,), build)
