"""The registry of projection builders, and the rows of all of them for one cluster.

``REGISTRY`` lists one ``Projection`` per model or concern — Kueue's queue tables, admission fair
sharing, workloads, nodes, Koordinator's quota groups, Volcano's queues — in the order their tables are written.  A new quota model adds its
module beside these (a ``PROJECTION`` built from its own domain records) and one entry here.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

import sqlalchemy as sa

from replay.store.projections import afs, koordinator, kueue, nodes, volcano, workloads
from replay.store.projections.base import Projection, ProjectionSource
from statemodel import sql_schema as s
from statemodel.engine import Engine

REGISTRY: tuple[Projection, ...] = (kueue.PROJECTION, afs.PROJECTION, workloads.PROJECTION, nodes.PROJECTION,
                                    koordinator.PROJECTION, volcano.PROJECTION)

PROJECTIONS: tuple[sa.Table, ...] = tuple(table for projection in REGISTRY for table in projection.tables)
"""Every projection table, in writing order."""

CLUSTER_TABLES = (s.events, s.decisions, s.preemptions, s.snapshots, s.dead_letters, s.outbox, *PROJECTIONS)
"""Every table with per-cluster rows that a replay writes or ``--replace`` clears: the archive's
and the projections'."""

PRIMARY_KEY: dict[sa.Table, Callable[[dict | tuple], tuple]] = {
    table: projection.primary_key(table) for projection in REGISTRY for table in projection.tables}
"""A projection row's primary key as a tuple."""

TUPLE_COLUMNS: dict[sa.Table, tuple[str, ...]] = {
    table: columns for projection in REGISTRY for table, columns in projection.tuple_columns.items()}
"""The projection tables whose rows are tuples, with their columns."""


def projection_rows(engine: Engine, cluster: str, workloads: Collection[str] | None = None
                    ) -> dict[sa.Table, list]:
    """Rows of every projection table for ``cluster`` of ``engine`` (none when it has no state),
    built by the ``REGISTRY`` from its domain state: dicts, or tuples for the ``TUPLE_COLUMNS``
    tables.  ``workloads``: with it, the ``workloads`` rows are those keys' and every pending
    workload's only (the others are left out, not deleted)."""
    state = engine.clusters.get(cluster)
    if state is None:
        return {table: [] for table in PROJECTIONS}
    source = ProjectionSource(cluster, state, workloads)
    rows: dict[sa.Table, list] = {}
    for projection in REGISTRY:
        rows.update(projection.build(source))
    return rows
