"""What every projection builder is given and what it declares (see ``replay.store.projections``)."""

from __future__ import annotations

import operator
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

import sqlalchemy as sa

from statemodel.cluster import ClusterState
from statemodel.state_view import queue_positions, workload_counts


class ProjectionSource:
    """The domain state one projection write reads, with what several builders need computed once.

    Attributes:
        cluster: the cluster's name (every row's ``cluster``).  state: its ``ClusterState``.
        only: ``None`` for every workload, else the keys whose ``workloads`` rows may have changed
            (the builders add every pending workload to them).
        positions: pending workload key -> (position in its ClusterQueue, in its LocalQueue).
        pending_by_cluster_queue: ClusterQueue -> pending workloads (active and set aside).
        local_queue_counts: LocalQueue key -> ``[pending, admitted]`` workload counts.
        pending: keys of the pending workloads.
    """

    __slots__ = ("cluster", "state", "only", "positions", "pending_by_cluster_queue", "local_queue_counts",
                 "pending")

    def __init__(self, cluster: str, state: ClusterState, only: Collection[str] | None = None) -> None:
        self.cluster = cluster
        self.state = state
        self.only = only
        self.positions, self.pending_by_cluster_queue = queue_positions(state)
        self.local_queue_counts, self.pending = workload_counts(state)


@dataclass(frozen=True, slots=True)
class Projection:
    """The projection tables of one model or concern and the builder of their rows.

    Attributes:
        tables: the tables it fills (every one keyed by ``cluster`` first).
        build: rows of each of ``tables`` from a ``ProjectionSource``: dicts keyed by column name,
            or, for a table in ``tuple_columns``, tuples of those columns.  A builder reads the
            domain records (``ClusterState`` and what it holds), never the state JSON, and lists
            rows in a deterministic order.
        tuple_columns: the tables whose rows are tuples, with their columns (``DateTime`` columns
            derived from their ``*_ms`` companions, as ``replay.store.archive.TupleRows``).
    """

    tables: tuple[sa.Table, ...]
    build: Callable[[ProjectionSource], dict[sa.Table, list]]
    tuple_columns: dict[sa.Table, tuple[str, ...]] = field(default_factory=dict)

    def primary_key(self, table: sa.Table) -> Callable[[dict | tuple], tuple]:
        """A getter of a row's primary key (a tuple: every projection key has at least two columns)."""
        names = [c.name for c in table.primary_key.columns]
        columns = self.tuple_columns.get(table)
        if columns is None:
            return operator.itemgetter(*names)
        return operator.itemgetter(*(columns.index(name) for name in names))
