"""Rows of the SQL archive, built and written one way for both writers of the store: the file
replay (``replay.sql_sink``) and the Kafka ingest worker (``streams.ingest``).

- ``ArchiveBatch`` collects the rows of one transaction: ``events`` (applied / duplicate /
  rejected, ``payload`` the received JSON text, ``position`` 0-based per cluster,
  ``source_position`` the NDJSON line or Kafka offset), ``dead_letters``, ``decisions`` (and, for
  the worker, the same decisions as ``outbox`` rows), and restorable ``snapshots``
  (``statemodel.snapshot`` of one cluster, hash-chain value as ``state_hash``).  It decides when a
  periodic snapshot is due: every ``snapshot_every`` events of a cluster (``position`` a multiple
  of it) and, optionally, whenever the cluster's event clock crosses a multiple of
  ``snapshot_every_ms`` — both are functions of the event stream only, so an interrupted and an
  uninterrupted run take the same snapshots.
- ``ProjectionWriter`` keeps the projection tables (``cohorts``, ``cluster_queues``,
  ``local_queues``, ``quotas``, ``workloads``, ``fair_sharing``) equal to a cluster's section of
  ``Engine.state()``.  The first write of a cluster replaces all its rows; later writes compare
  the new rows with the ones it wrote last (by primary key) and delete / insert only the rows that
  changed, so a worker that refreshes the projections of every batch writes only what moved.  A
  later write may also be given only some workloads (the ones touched since, plus the pending
  ones), so a long history of finished workloads is neither rendered nor compared again.

On PostgreSQL rows are inserted with ``COPY`` (from 50 rows on); elsewhere, and for fewer rows,
with SQLAlchemy Core ``executemany`` inserts.
"""

from __future__ import annotations

import operator
from collections.abc import Collection, Iterable
from decimal import Decimal

import orjson
import sqlalchemy as sa

from replay.runner import gc_paused
from replay.sql_db import RawJSON, ms_to_datetime, time_ms
from statemodel import sql_schema as s
from statemodel.decisions import Decision
from statemodel.engine import Engine
from statemodel.errors import EventError
from statemodel.event_types import Event
from statemodel.snapshot import dump as dump_snapshot
from statemodel.version import ENGINE_VERSION

STATE_ENCODING = "engine-snapshot-v1"
"""``snapshots.state_encoding`` of the blobs written here: ``statemodel.snapshot.dump`` of the one
cluster (zlib-compressed canonical JSON an engine is restored from)."""

DEFAULT_SNAPSHOT_EVERY = 50_000
"""Events of one cluster between two periodic snapshots."""

PROJECTIONS = (s.cohorts, s.cluster_queues, s.local_queues, s.quotas, s.workloads, s.fair_sharing)

_PRIMARY_KEY = {t: operator.itemgetter(*(c.name for c in t.primary_key.columns)) for t in PROJECTIONS}
"""A projection row's primary key as a tuple (every projection key has at least two columns)."""

CLUSTER_TABLES = (s.events, s.decisions, s.snapshots, s.dead_letters, s.outbox, *PROJECTIONS)
"""Every table with per-cluster rows that a replay writes or ``--replace`` clears."""

_COPY_MIN_ROWS = 50


def _dec(v: float | None) -> Decimal | None:
    return None if v is None else Decimal(repr(v))


def projection_rows(cluster: str, cs: dict) -> dict[sa.Table, list[dict]]:
    """Rows of the projection tables for one cluster's section of the state JSON."""
    now_ms = time_ms(cs.get("time"))
    rows: dict[sa.Table, list[dict]] = {t: [] for t in PROJECTIONS}
    fair: list[dict] = []

    def afs(kind: str, name: str, view: dict | None) -> None:
        if not view:
            return
        last = time_ms(view.get("lastUpdate"))
        consumed, penalty = view.get("consumed") or {}, view.get("penalty") or {}
        for res in sorted(set(consumed) | set(penalty)):
            fair.append({"cluster": cluster, "kind": kind, "name": name, "resource": res,
                         "consumed": _dec(consumed.get(res, 0.0)), "penalty": _dec(penalty.get(res, 0.0)),
                         "score": _dec(view.get("score")), "last_update": ms_to_datetime(last),
                         "last_update_ms": last})

    def quotas(kind: str, name: str, resources: dict) -> None:
        for flavor, per_res in resources.items():
            for res, q in per_res.items():
                rows[s.quotas].append({
                    "cluster": cluster, "node_kind": kind, "node_name": name, "flavor": flavor, "resource": res,
                    "nominal": q.get("nominal", 0), "borrowing_limit": q.get("borrowingLimit"),
                    "lending_limit": q.get("lendingLimit"), "subtree_quota": q.get("subtreeQuota"),
                    "usage": q.get("usage", 0), "available": q.get("available"),
                    "potential_available": q.get("potentialAvailable")})

    for name, co in cs.get("cohorts", {}).items():
        rows[s.cohorts].append({"cluster": cluster, "name": name, "parent": co.get("parent"),
                                "explicit": bool(co.get("explicit")), "active": bool(co.get("active"))})
        quotas("cohort", name, co.get("resources", {}))
        afs("cohort", name, co.get("admissionFairSharing"))
    for name, cq in cs.get("clusterQueues", {}).items():
        rows[s.cluster_queues].append({"cluster": cluster, "name": name, "cohort": cq.get("cohort"),
                                       "active": bool(cq.get("active")), "pending_workloads": cq.get("pending", 0),
                                       "admitted_workloads": cq.get("admitted", 0)})
        quotas("cluster_queue", name, cq.get("resources", {}))
        afs("cluster_queue", name, cq.get("admissionFairSharing"))
    for key, lq in cs.get("localQueues", {}).items():
        rows[s.local_queues].append({"cluster": cluster, "key": key, "cluster_queue": lq.get("clusterQueue"),
                                     "pending_workloads": lq.get("pending", 0),
                                     "admitted_workloads": lq.get("admitted", 0)})
        afs("local_queue", key, lq.get("admissionFairSharing"))
    for key, w in cs.get("workloads", {}).items():
        status = w.get("status")
        queued = time_ms(w.get("queuedAt"))
        admitted = time_ms(w.get("admittedAt"))
        if status == "Admitted" and admitted is not None and queued is not None:
            wait = admitted - queued
        elif status == "Pending" and queued is not None and now_ms is not None:
            wait = now_ms - queued
        else:
            wait = None
        pending = status == "Pending"
        rows[s.workloads].append({
            "cluster": cluster, "key": key, "status": status, "cluster_queue": w.get("clusterQueue"),
            "local_queue": w.get("localQueue"), "priority": w.get("priority", 0),
            "reason": w.get("reason") if pending else None, "message": w.get("message") if pending else None,
            "position_in_cluster_queue": w.get("positionInClusterQueue"),
            "position_in_local_queue": w.get("positionInLocalQueue"),
            "queued_at": ms_to_datetime(queued), "queued_at_ms": queued,
            "admitted_at": ms_to_datetime(admitted), "admitted_at_ms": admitted,
            "borrowing": w.get("borrowing"), "admission": w.get("podSetAssignments"), "wait_ms": wait})
    rows[s.fair_sharing] = fair
    return rows


def insert_rows(conn: sa.Connection, table: sa.Table, rows: list[dict]) -> None:
    """Insert ``rows`` (dicts keyed by column name) into ``table``: ``COPY`` on PostgreSQL for 50
    rows or more, ``executemany`` otherwise.  JSON values may be ``RawJSON`` text or JSON-ready values."""
    if not rows:
        return
    if conn.dialect.name != "postgresql" or len(rows) < _COPY_MIN_ROWS:
        conn.execute(table.insert(), rows)
        return
    columns = [c for c in table.columns if c is not table.autoincrement_column]
    names = [c.name for c in columns]
    json_at = [i for i, c in enumerate(columns) if isinstance(c.type, sa.JSON)]
    listed = ", ".join(f'"{c}"' for c in names)
    cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
    try:
        with cursor.copy(f'COPY "{table.name}" ({listed}) FROM STDIN') as copy:
            write = copy.write_row
            for row in rows:
                values = [row.get(c) for c in names]
                for i in json_at:
                    v = values[i]
                    if v is not None and type(v) is not RawJSON:
                        values[i] = orjson.dumps(v).decode()
                write(values)
    finally:
        cursor.close()


def delete_keys(conn: sa.Connection, table: sa.Table, keys: list[tuple]) -> None:
    """Delete the rows of ``table`` with these primary keys (tuples of the key columns, all strings):
    on PostgreSQL as one semi-join against ``unnest`` of one array per key column (a hash join, where
    a long row-value ``IN`` list is compared row by row), elsewhere with row-value ``IN`` lists."""
    if not keys:
        return
    pk = list(table.primary_key.columns)
    if conn.dialect.name == "postgresql":
        names = ", ".join(f'"{c.name}"' for c in pk)
        arrays = ", ".join(f"CAST(:k{i} AS TEXT[])" for i in range(len(pk)))
        conn.execute(sa.text(f'DELETE FROM "{table.name}" WHERE ({names}) IN (SELECT * FROM unnest({arrays}))'),
                     {f"k{i}": list(column) for i, column in enumerate(zip(*keys))})
        return
    for i in range(0, len(keys), 500):
        conn.execute(table.delete().where(sa.tuple_(*pk).in_(keys[i:i + 500])))


class ArchiveBatch:
    """The archive rows of one transaction; see the module docstring.

    ``source`` names where records come from in ``dead_letters.source`` (a file path; the worker
    passes it per record).  ``outbox=True`` also queues every decision as an unpublished
    ``outbox`` row.  ``last_snapshot`` maps a cluster to the position of its newest snapshot (kept
    across batches, so a shutdown snapshot is skipped when one was just taken).
    """

    def __init__(self, *, snapshot_every: int = DEFAULT_SNAPSHOT_EVERY, snapshot_every_ms: int | None = None,
                 outbox: bool = False) -> None:
        self.snapshot_every = snapshot_every
        self.snapshot_every_ms = snapshot_every_ms
        self.with_outbox = outbox
        self.events: list[dict] = []
        self.events_no_payload: list[dict] = []
        self.decisions: list[dict] = []
        self.outbox: list[dict] = []
        self.dead: list[dict] = []
        self.snapshots: list[dict] = []
        self.last_snapshot: dict[str, int] = {}

    def __len__(self) -> int:
        return (len(self.events) + len(self.events_no_payload) + len(self.decisions) + len(self.dead)
                + len(self.snapshots))

    def add_rejected(self, position: int | None, line: bytes, err: EventError,
                     salvaged: tuple[str | None, RawJSON | None, int | None, str | None], source: str,
                     source_position: int) -> None:
        """A record (``line``: its bytes as received, stored verbatim) that failed validation: an ``events`` row (status ``rejected``) at ``position`` of
        its cluster when that cluster is known, and a ``dead_letters`` row with the raw bytes, reason
        and field path.  ``salvaged`` is ``replay.sql_db.salvage(line, ...)``: ``(cluster, payload,
        time_ms, type)``."""
        cluster, payload, when, etype = salvaged
        if cluster is not None and position is not None:
            row = {"cluster": cluster, "position": position, "source_position": source_position,
                   "event_id": err.event_id, "event_time": ms_to_datetime(when), "event_time_ms": when,
                   "type": etype, "status": "rejected", "reason": err.problem, "field_path": err.path or None}
            if payload is None:
                self.events_no_payload.append(row)
            else:
                row["payload"] = payload
                self.events.append(row)
        self.dead.append({"cluster": cluster if payload is not None else None, "source": source,
                          "source_position": source_position, "raw": bytes(line),
                          "reason": err.problem, "field_path": err.path or None, "received_position": position})

    def add_applied(self, engine: Engine, event: Event, position: int, line: bytes,
                    source_position: int) -> list[Decision]:
        """Apply ``event`` (at ``position`` of its cluster) to ``engine`` and queue its ``events`` row
        and decision rows; queue a snapshot of the cluster when one is due.  Returns the decisions."""
        cluster = event.cluster
        before = engine.applied
        state = engine.clusters.get(cluster)
        clock_before = state.clock_ms if state is not None else None
        out = engine.apply(event)
        ms = event.time_ms
        self.events.append({"cluster": cluster, "position": position, "source_position": source_position,
                            "event_id": event.id, "event_time": ms_to_datetime(ms), "event_time_ms": ms,
                            "type": event.type, "payload": RawJSON(line.strip().decode()),
                            "status": "applied" if engine.applied != before else "duplicate",
                            "reason": None, "field_path": None})
        if out:
            decisions, outbox = self.decisions, self.outbox
            for d in out:
                dms = d.time_ms
                payload = d.to_json()
                decisions.append({"cluster": cluster, "seq": d.seq, "cause_event_id": d.cause,
                                  "cause_position": position, "decision_time": ms_to_datetime(dms),
                                  "decision_time_ms": dms, "type": d.kind, "workload": d.workload,
                                  "cluster_queue": d.cluster_queue, "payload": payload})
                if self.with_outbox:
                    outbox.append({"cluster": cluster, "seq": d.seq, "payload": payload, "published": False})
        if (position + 1) % self.snapshot_every == 0 or self._time_due(engine, cluster, clock_before):
            self.add_snapshot(engine, cluster, position + 1, source_position)
        return out

    def _time_due(self, engine: Engine, cluster: str, clock_before: int | None) -> bool:
        every = self.snapshot_every_ms
        if every is None or clock_before is None:
            return False
        return engine.clusters[cluster].clock_ms // every != clock_before // every

    def add_snapshot(self, engine: Engine, cluster: str, position: int, source_position: int | None) -> None:
        """Queue a restorable snapshot of ``cluster`` after ``position`` of its events (written with the
        current batch, so it never refers to events that are not stored)."""
        state = engine.clusters[cluster]
        with gc_paused():  # dumping allocates a whole state's objects; the cyclic GC would triple the time
            blob = dump_snapshot(engine, [cluster])
        self.snapshots.append({
            "cluster": cluster, "position": position, "event_time": ms_to_datetime(state.clock_ms),
            "event_time_ms": state.clock_ms, "decision_seq": state.seq, "engine_version": ENGINE_VERSION,
            "state_hash": engine.chains[cluster].hex(), "state_encoding": STATE_ENCODING,
            "state": blob, "created_position": source_position})
        self.last_snapshot[cluster] = position

    def take(self) -> Writes:
        """The queued rows as writes for ``run_writes`` (the batch is empty afterwards)."""
        writes: Writes = [("insert", table, rows) for table, rows in (
            (s.events, self.events), (s.events, self.events_no_payload), (s.decisions, self.decisions),
            (s.outbox, self.outbox), (s.dead_letters, self.dead), (s.snapshots, self.snapshots)) if rows]
        self.events, self.events_no_payload, self.decisions, self.outbox = [], [], [], []
        self.dead, self.snapshots = [], []
        return writes

    def write(self, conn: sa.Connection) -> None:
        """Insert every queued row in ``conn``'s transaction, then forget them."""
        run_writes(conn, self.take())


Writes = list[tuple[str, sa.Table, list]]
"""SQL work computed ahead of its transaction: ``("insert", table, rows)``, ``("delete_keys", table,
primary keys)`` or ``("delete_cluster", table, [cluster])``; see ``run_writes``."""


def writes_by_name(writes: Writes) -> list[tuple[str, str, list]]:
    """``writes`` with table names instead of ``sa.Table`` objects (picklable, for another process);
    ``writes_from_names`` turns them back."""
    return [(op, str(table.name), items) for op, table, items in writes]


def writes_from_names(named: list[tuple[str, str, list]]) -> Writes:
    """The ``Writes`` of ``writes_by_name`` output (tables looked up in ``statemodel.sql_schema``).

    Raises:
        KeyError: a name is not a table of the schema.
    """
    return [(op, s.metadata.tables[name], items) for op, name, items in named]


def run_writes(conn: sa.Connection, writes: Writes) -> None:
    """Execute ``writes`` in order in ``conn``'s transaction."""
    for op, table, items in writes:
        if op == "insert":
            insert_rows(conn, table, items)
        elif op == "delete_keys":
            delete_keys(conn, table, items)
        else:
            conn.execute(table.delete().where(table.c.cluster == items[0]))


class ProjectionWriter:
    """Keeps the projection tables equal to the state of the clusters it is given (module docstring)."""

    def __init__(self) -> None:
        self._written: dict[str, dict[sa.Table, dict[tuple, dict]]] = {}

    def forget(self, clusters: Iterable[str]) -> None:
        """Drop what is known about these clusters' rows (their next write replaces them all)."""
        for cluster in clusters:
            self._written.pop(cluster, None)

    def pending_workloads(self, cluster: str) -> set[str] | None:
        """Keys of the workloads last written as pending (``None``: nothing written yet, the next
        write must be given the whole state)."""
        written = self._written.get(cluster)
        if written is None:
            return None
        return {row["key"] for row in written[s.workloads].values() if row["status"] == "Pending"}

    def write(self, conn: sa.Connection, cluster: str, cs: dict | None,
              workloads: Collection[str] | None = None) -> None:
        """Make ``cluster``'s projection rows those of ``cs`` (its section of the state JSON; ``None``:
        no state, no rows), in ``conn``'s transaction; see ``changes``."""
        run_writes(conn, self.changes(cluster, cs, workloads))

    def changes(self, cluster: str, cs: dict | None, workloads: Collection[str] | None = None) -> Writes:
        """The writes that make ``cluster``'s projection rows those of ``cs``; from then on they are
        taken as written.

        ``workloads``: ``cs`` holds only these workloads (``statemodel.state_view.render_cluster``
        with the touched keys and ``pending_workloads``); the others keep their rows.  Only allowed
        after a first write of the whole state.

        Raises:
            ValueError: ``workloads`` given for a cluster whose rows were never written here.
        """
        rows = projection_rows(cluster, cs) if cs is not None else {t: [] for t in PROJECTIONS}
        new = {t: {_PRIMARY_KEY[t](r): r for r in rows[t]} for t in PROJECTIONS}
        written = self._written.get(cluster)
        writes: Writes = []
        if written is None:
            if workloads is not None:
                raise ValueError(f"the first projection write of {cluster!r} needs the whole state")
            for table in PROJECTIONS:
                writes.append(("delete_cluster", table, [cluster]))
                writes.append(("insert", table, list(new[table].values())))
            self._written[cluster] = new
            return writes
        for table in PROJECTIONS:
            cached, after = written[table], new[table]
            if table is s.workloads and workloads is not None:
                keys = {(cluster, k) for k in workloads}
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
            if gone:
                writes.append(("delete_keys", table, gone))
            if fresh:
                writes.append(("insert", table, fresh))
        return writes
