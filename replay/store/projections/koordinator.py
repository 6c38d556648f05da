"""The ``elastic_quotas`` projection table: the quota groups of a cluster running the ``koordinator``
quota model (``statemodel.quota.koordinator``), read from the model's groups, amounts in base units."""

from __future__ import annotations

import sqlalchemy as sa

from replay.store.projections.base import Projection, ProjectionSource
from statemodel import sql_schema as s
from statemodel.quota.koordinator import KoordinatorModel


def build(source: ProjectionSource) -> dict[sa.Table, list]:
    """One row per quota group, sorted by name (none unless the cluster runs the ``koordinator``
    model): upstream ``QuotaCalculateInfo`` numbers as JSON maps with sorted keys, the runtime as
    of the cluster's last event (the root's: what it shares)."""
    model = source.state.model
    if not isinstance(model, KoordinatorModel):
        return {s.elastic_quotas: []}
    cluster = source.cluster
    return {s.elastic_quotas: [
        {"cluster": cluster, "name": g.name, "parent": g.parent, "is_parent": g.is_parent,
         "allow_lent_resource": g.allow_lent, "min": dict(sorted(g.min.items())), "max": dict(sorted(g.max.items())),
         "auto_scale_min": model.auto_scale_min(g.name), "shared_weight": dict(sorted(g.weight.items())),
         "request": dict(sorted(g.request.items())), "child_request": dict(sorted(g.child_request.items())),
         "used": dict(sorted(g.used.items())), "non_preemptible_used": dict(sorted(g.np_used.items())),
         "runtime": dict(sorted(runtime.items())), "pods": len(g.pods)}
        for g, runtime in model.quota_groups()]}


PROJECTION = Projection((s.elastic_quotas,), build)
