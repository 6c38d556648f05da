"""``ProjectionWriter``: keeps the projection tables equal to a cluster's state, writing only what changed."""

from __future__ import annotations

from collections.abc import Collection, Iterable

import sqlalchemy as sa

from replay.store.archive import TupleRows, Writes, run_writes
from replay.store.projections.registry import PRIMARY_KEY, PROJECTIONS, TUPLE_COLUMNS, projection_rows
from replay.store.projections.workloads import STATUS
from statemodel import sql_schema as s
from statemodel.engine import Engine
from statemodel.workload import PENDING


class ProjectionWriter:
    """Keeps the projection tables equal to the state of the clusters it is given.

    The first write of a cluster replaces all its rows; later writes compare the new rows with the
    ones it wrote last (by primary key) and delete / insert only the rows that changed, so a worker
    that refreshes the projections of every batch writes only what moved.  A later write may also
    be given only some workloads (the ones touched since, plus the pending ones), so a long history
    of finished workloads is neither rendered nor compared again.
    """

    def __init__(self) -> None:
        self._written: dict[str, dict[sa.Table, dict[tuple, dict | tuple]]] = {}
        self._pending: dict[str, set[str]] = {}
        """cluster -> keys of the workloads last written as pending"""

    def forget(self, clusters: Iterable[str]) -> None:
        """Drop what is known about these clusters' rows (their next write replaces them all)."""
        for cluster in clusters:
            self._written.pop(cluster, None)
            self._pending.pop(cluster, None)

    def write(self, conn: sa.Connection, engine: Engine, cluster: str, touched: Collection[str] | None = None) -> None:
        """Make ``cluster``'s projection rows those of its state in ``engine``, in ``conn``'s
        transaction; see ``changes``."""
        run_writes(conn, self.changes(engine, cluster, touched))

    def changes(self, engine: Engine, cluster: str, touched: Collection[str] | None = None) -> Writes:
        """The writes that make ``cluster``'s projection rows those of its state in ``engine`` (no
        rows when it has none); from then on they are taken as written.

        The first write of a cluster (or the first after ``forget``) deletes its rows and inserts
        them all.  Later ones compare the new rows with the ones written last, by primary key, and
        delete / insert only those that differ.  ``touched``: keys of the workloads an event or a
        decision named since the last write; then only those and the workloads last written as
        pending (whose position and wait move with any event) are rendered and compared, the others
        keep their rows.  Ignored on a first write.
        """
        written = self._written.get(cluster)
        only = None if written is None or touched is None else self._pending[cluster].union(touched)
        rows = projection_rows(engine, cluster, only)
        new = {t: {PRIMARY_KEY[t](r): r for r in rows[t]} for t in PROJECTIONS}
        writes: Writes = []
        if written is None:
            for table in PROJECTIONS:
                writes.append(("delete_cluster", table, [cluster]))
                writes.append(("insert", table, _insertable(table, list(new[table].values()))))
            self._written[cluster] = new
            self._pending[cluster] = {row[1] for row in rows[s.workloads] if row[STATUS] == PENDING}
            return writes
        now_pending = self._pending[cluster]
        for table in PROJECTIONS:
            cached, after = written[table], new[table]
            if table is s.workloads and only is not None:
                keys = {(cluster, k) for k in only}
                keys.update(after)
            else:
                keys = set(cached)
                keys.update(after)
            gone, fresh = [], []
            for k in keys:
                before, row = cached.get(k), after.get(k)
                if row == before:
                    continue
                if before is not None:
                    gone.append(k)
                if row is None:
                    del cached[k]
                else:
                    fresh.append(row)
                    cached[k] = row
                if table is s.workloads:
                    if row is not None and row[STATUS] == PENDING:  # type: ignore[index]
                        now_pending.add(k[1])
                    else:
                        now_pending.discard(k[1])
            if gone:
                writes.append(("delete_keys", table, gone))
            if fresh:
                writes.append(("insert", table, _insertable(table, fresh)))
        return writes


def _insertable(table: sa.Table, rows: list) -> list | TupleRows:
    """Projection rows as ``run_writes`` inserts them: tuple rows as ``TupleRows``."""
    columns = TUPLE_COLUMNS.get(table)
    return rows if columns is None else TupleRows(columns, rows)
