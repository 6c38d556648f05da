"""The admission fair-sharing projection table ``fair_sharing``: decayed consumed usage, entry
penalty and score per LocalQueue, ClusterQueue (its LocalQueues summed) and cohort (the
ClusterQueues below it) × resource, read from the cluster's fair-sharing ledgers as the engine's
exact decimals (no float in between), in Kueue's score units (cores for cpu, base units otherwise)."""

from __future__ import annotations

import sqlalchemy as sa

from replay.store.db import ms_to_datetime
from replay.store.projections.base import Projection, ProjectionSource
from statemodel import sql_schema as s
from statemodel.queues.afs import CONTEXT, INFINITY, ZERO, FairSharingLedgers, score, unit_divisor
from statemodel.state_view import subtree_cluster_queues

_DEFAULT_WEIGHT_MILLI = 1000
"""fairSharing weight × 1000 of a queue without a spec (Kueue's default weight 1)."""


def _rows(out: list[dict], cluster: str, kind: str, name: str, afs: FairSharingLedgers, lq_keys: list[str],
          weight_milli: int, now_ms: int) -> None:
    """Append the rows of one node: one per resource its LocalQueues consumed or were penalized
    for, sorted; ``score`` is the node's (the same on each row), ``None`` for +∞ (weight 0).
    Values are exact, without trailing zeros (``Decimal.normalize``: the same number, in the
    fewest digits, so both databases hold the same text)."""
    assert afs.params is not None
    consumed, penalty, last = afs.totals(lq_keys, now_ms)
    value = score(afs.params, consumed, penalty, weight_milli)
    node_score = None if value == INFINITY else value.normalize(CONTEXT)
    when = ms_to_datetime(last)
    for resource in sorted(set(consumed) | set(penalty)):
        divisor = unit_divisor(resource)
        out.append({"cluster": cluster, "kind": kind, "name": name, "resource": resource,
                    "consumed": CONTEXT.divide(consumed.get(resource, ZERO), divisor).normalize(CONTEXT),
                    "penalty": CONTEXT.divide(penalty.get(resource, ZERO), divisor).normalize(CONTEXT),
                    "score": node_score, "last_update": when, "last_update_ms": last})


def build(source: ProjectionSource) -> dict[sa.Table, list]:
    """``fair_sharing`` rows of every cohort, ClusterQueue and LocalQueue (each kind sorted by
    name) while admission fair sharing is configured; none otherwise."""
    cluster, state = source.cluster, source.state
    afs = state.afs
    rows: list[dict] = []
    if afs.params is not None:
        hierarchy, now_ms = state.hierarchy, state.clock_ms
        for name in sorted(hierarchy.cohorts):
            spec = hierarchy.cohorts[name].spec
            lq_keys = [lq for cq in subtree_cluster_queues(hierarchy, name) for lq in state.local_queues_of(cq)]
            _rows(rows, cluster, "cohort", name, afs, lq_keys,
                  spec.fair_weight_milli if spec is not None else _DEFAULT_WEIGHT_MILLI, now_ms)
        for name in sorted(hierarchy.cluster_queues):
            cq_spec = hierarchy.cluster_queues[name].spec
            _rows(rows, cluster, "cluster_queue", name, afs, state.local_queues_of(name),
                  cq_spec.fair_weight_milli if cq_spec is not None else _DEFAULT_WEIGHT_MILLI, now_ms)
        for key in sorted(state.local_queues):
            _rows(rows, cluster, "local_queue", key, afs, [key], state.local_queues[key].fair_weight_milli, now_ms)
    return {s.fair_sharing: rows}


PROJECTION = Projection((s.fair_sharing,), build)
