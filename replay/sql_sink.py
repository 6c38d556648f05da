"""SQL sink: replay an event source (NDJSON file or Kafka range) through the engine and archive
everything in the SQL store.

``replay_to_db(source, url)`` streams the events through the very same ``Engine`` as
``replay.runner.run_file`` and writes, one transaction per batch of ``batch_size`` input events
(never one per event), with SQLAlchemy Core ``executemany`` inserts:

- every event to ``events`` (status ``applied`` / ``duplicate`` / ``rejected`` with reason and
  field path; ``payload`` the received JSON text; ``position`` 0-based per cluster;
  ``source_position`` the 1-based line number, or the Kafka offset), rejected ones also to ``dead_letters``;
- every decision to ``decisions`` (``payload`` = ``Decision.to_json()``);
- every ``snapshot_every`` events of a cluster, with the batch that holds those events, and at
  the end, a ``snapshots`` row: the restorable engine snapshot of that cluster
  (``statemodel.snapshot``), its position, clock, last decision seq and hash-chain value (hex) as
  ``state_hash`` — what ``verify`` checks against and ``replay.point_in_time`` restores from;
- at the end, in one transaction: the projections (``cohorts``, ``cluster_queues``,
  ``local_queues``, ``quotas``, ``workloads``, ``fair_sharing``) of each replayed cluster replaced
  from ``engine.state()``.

Idempotence: a cluster that already has rows in ``events`` / ``decisions`` / ``snapshots`` is
refused (``SinkError``) unless ``replace=True``, which deletes that cluster's rows in the same
transaction as its first batch.  When a run fails, the rows it wrote for its clusters are deleted
(with ``replace``, the cluster's earlier rows are then gone too).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import sqlalchemy as sa

from replay.ndjson import Watch
from replay.runner import ReplayResult, decoded_lines, gc_paused
from replay.sources import open_records
from replay.sql_db import RawJSON, SinkError, create_db_engine, ms_to_datetime, redacted, salvage, time_ms, upgrade_schema
from statemodel import sql_schema as s
from statemodel.engine import Engine
from statemodel.errors import EventError
from statemodel.snapshot import dump as dump_snapshot
from statemodel.version import ENGINE_VERSION

STATE_ENCODING = "engine-snapshot-v1"
"""``snapshots.state_encoding`` of the blobs written here: ``statemodel.snapshot.dump`` of the one
cluster (zlib-compressed canonical JSON an engine is restored from)."""

DEFAULT_SNAPSHOT_EVERY = 50_000
"""Events of one cluster between two periodic snapshots."""

DEFAULT_BATCH_SIZE = 5000

CLUSTER_TABLES = (s.events, s.decisions, s.snapshots, s.dead_letters, s.outbox, s.cohorts, s.cluster_queues,
                  s.local_queues, s.quotas, s.workloads, s.fair_sharing)
"""Every table with per-cluster rows that a replay writes or ``--replace`` clears."""

PROJECTIONS = (s.cohorts, s.cluster_queues, s.local_queues, s.quotas, s.workloads, s.fair_sharing)


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


class SqlSink:
    """Batches archive rows and writes them; see the module docstring.  Use via ``replay_to_db``."""

    def __init__(self, db: sa.Engine, source: str, replace: bool) -> None:
        self.db = db
        self.source = source
        self.replace = replace
        self.positions: dict[str, int] = {}
        self.to_clear: list[str] = []
        self.events: list[dict] = []
        self.events_no_payload: list[dict] = []
        self.decisions: list[dict] = []
        self.dead: list[dict] = []
        self.snapshots: list[dict] = []
        self.written_any = False

    def claim(self, cluster: str) -> int:
        """First sight of ``cluster`` in this run: refuse or schedule the clearing of its old rows."""
        with self.db.connect() as conn:
            held = {t.name: conn.execute(sa.select(sa.func.count()).select_from(t).where(t.c.cluster == cluster)
                                         ).scalar_one() for t in (s.events, s.decisions, s.snapshots)}
        if any(held.values()):
            if not self.replace:
                counts = ", ".join(f"{n} {t}" for t, n in held.items() if n)
                raise SinkError(
                    f"the database already holds cluster {cluster!r} ({counts}); replaying it again would "
                    "double its history. Use --replace to delete that cluster's rows first, or verify it "
                    "with `quotaledger verify`.")
            self.to_clear.append(cluster)
        self.positions[cluster] = 0
        return 0

    def flush(self) -> None:
        """Write everything buffered in one transaction."""
        if not (self.events or self.events_no_payload or self.decisions or self.dead or self.to_clear
                or self.snapshots):
            return
        with self.db.begin() as conn:
            for cluster in self.to_clear:
                for table in CLUSTER_TABLES:
                    conn.execute(table.delete().where(table.c.cluster == cluster))
            for table, rows in ((s.events, self.events), (s.events, self.events_no_payload),
                                (s.decisions, self.decisions), (s.dead_letters, self.dead),
                                (s.snapshots, self.snapshots)):
                if rows:
                    conn.execute(table.insert(), rows)
        self.written_any = True
        self.to_clear = []
        self.events, self.events_no_payload, self.decisions, self.dead = [], [], [], []
        self.snapshots = []

    def snapshot(self, engine: Engine, cluster: str, source_position: int) -> None:
        """Buffer a restorable snapshot of ``cluster`` as of now (written with the current batch, so
        it never refers to events that are not stored)."""
        state = engine.clusters[cluster]
        self.snapshots.append({
            "cluster": cluster, "position": self.positions[cluster], "event_time": ms_to_datetime(state.clock_ms),
            "event_time_ms": state.clock_ms, "decision_seq": state.seq, "engine_version": ENGINE_VERSION,
            "state_hash": engine.chains[cluster].hex(), "state_encoding": STATE_ENCODING,
            "state": _dump(engine, cluster), "created_position": source_position})

    def finish(self, engine: Engine, last_line: int, snapshotted: dict[str, int]) -> None:
        """Write the final snapshot of every cluster (unless one was just taken at the same position)
        and replace the projections of this run's clusters, in one transaction."""
        for cluster in sorted(self.positions):
            if cluster in engine.clusters and snapshotted.get(cluster) != self.positions[cluster]:
                self.snapshot(engine, cluster, last_line)
        self.flush()
        state = engine.state()
        clusters = state.get("clusters", {})
        with self.db.begin() as conn:
            for cluster in sorted(self.positions):
                for table in PROJECTIONS:
                    conn.execute(table.delete().where(table.c.cluster == cluster))
                cs = clusters.get(cluster)
                if cs is None:  # only rejected events: no engine state, no chain
                    continue
                for table, rows in projection_rows(cluster, cs).items():
                    if rows:
                        conn.execute(table.insert(), rows)

    def cleanup(self) -> None:
        """After a failed run: delete what this run wrote for its clusters."""
        if not self.written_any:
            return
        with self.db.begin() as conn:
            for cluster in self.positions:
                if cluster in self.to_clear:
                    continue  # nothing of this run was written for it yet, its old rows are intact
                for table in CLUSTER_TABLES:
                    conn.execute(table.delete().where(table.c.cluster == cluster))


def _dump(engine: Engine, cluster: str) -> bytes:
    """The snapshot blob of ``cluster``, with the cyclic GC paused (it would triple the time)."""
    with gc_paused():
        return dump_snapshot(engine, [cluster])


def replay_to_db(
    source: str,
    url: str,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    snapshot_every: int = DEFAULT_SNAPSHOT_EVERY,
    replace: bool = False,
    on_decision: Callable[[Any], None] | None = None,
    on_reject: Callable[[int, EventError], None] | None = None,
    watch: Watch | None = None,
) -> tuple[Engine, ReplayResult]:
    """Replay ``source`` (NDJSON path, plain or gzip, ``-``, or a ``kafka://`` range) into the SQL store at ``url``.

    Runs ``alembic upgrade head`` first.  ``on_decision`` / ``on_reject`` are called as in
    ``replay.runner.run_file`` (so file outputs keep working next to the database), and so is ``watch``.  Every
    ``snapshot_every`` events of a cluster, and at the end, a restorable snapshot of that cluster is
    written in the same transaction as the events it covers.

    Raises:
        SinkError: schema cannot be upgraded, a cluster already in the database without
            ``replace``, or a database error while writing (the run's rows are then removed).
        OSError / EOFError: the source cannot be read (the run's rows are then removed).
    """
    if batch_size < 1:
        raise SinkError("--batch-size must be at least 1")
    if snapshot_every < 1:
        raise SinkError("--snapshot-every must be at least 1")
    snapshotted: dict[str, int] = {}
    upgrade_schema(url)
    db = create_db_engine(url)
    engine = Engine()
    sink = SqlSink(db, source, replace)
    apply = engine.apply
    positions = sink.positions
    events, no_payload, decisions, dead = sink.events, sink.events_no_payload, sink.decisions, sink.dead
    n_lines = n_decisions = line_no = pending = 0
    started = time.perf_counter()
    try:
        with gc_paused(), open_records(source, watch) as records:
            for line_no, line, event in decoded_lines(records):
                n_lines += 1
                if isinstance(event, EventError):
                    err = event
                    engine.reject(err.event_id, err)
                    cluster, payload, when, etype = salvage(line)
                    pos = positions.get(cluster)
                    if pos is None:
                        pos = sink.claim(cluster)
                    positions[cluster] = pos + 1
                    row = {"cluster": cluster, "position": pos, "source_position": line_no,
                           "event_id": err.event_id, "event_time": ms_to_datetime(when), "event_time_ms": when,
                           "type": etype, "status": "rejected", "reason": err.problem,
                           "field_path": err.path or None}
                    if payload is None:
                        no_payload.append(row)
                    else:
                        row["payload"] = payload
                        events.append(row)
                    dead.append({"cluster": cluster if payload is not None else None, "source": source,
                                 "source_position": line_no, "raw": bytes(line.rstrip(b"\r\n")),
                                 "reason": err.problem, "field_path": err.path or None, "received_position": pos})
                    if on_reject is not None:
                        on_reject(line_no, err)
                else:
                    cluster = event.cluster
                    pos = positions.get(cluster)
                    if pos is None:
                        pos = sink.claim(cluster)
                    positions[cluster] = pos + 1
                    before = engine.applied
                    out = apply(event)
                    ms = event.time_ms
                    events.append({"cluster": cluster, "position": pos, "source_position": line_no,
                                   "event_id": event.id, "event_time": ms_to_datetime(ms), "event_time_ms": ms,
                                   "type": event.type, "payload": RawJSON(line.strip().decode()),
                                   "status": "applied" if engine.applied != before else "duplicate",
                                   "reason": None, "field_path": None})
                    if out:
                        n_decisions += len(out)
                        for d in out:
                            dms = d.time_ms
                            decisions.append({"cluster": cluster, "seq": d.seq, "cause_event_id": d.cause,
                                              "cause_position": pos, "decision_time": ms_to_datetime(dms),
                                              "decision_time_ms": dms, "type": d.kind, "workload": d.workload,
                                              "cluster_queue": d.cluster_queue, "payload": d.to_json()})
                            if on_decision is not None:
                                on_decision(d)
                    if (pos + 1) % snapshot_every == 0:
                        sink.snapshot(engine, cluster, line_no)
                        snapshotted[cluster] = pos + 1
                pending += 1
                if pending >= batch_size:
                    sink.flush()
                    events, no_payload, decisions, dead = (sink.events, sink.events_no_payload, sink.decisions,
                                                           sink.dead)
                    pending = 0
        sink.flush()
        sink.finish(engine, line_no, snapshotted)
    except sa.exc.SQLAlchemyError as exc:
        _cleanup(sink)
        raise SinkError(f"database error while writing to {redacted(url)}: {str(exc).splitlines()[0]}") from None
    except BaseException:
        _cleanup(sink)
        raise
    finally:
        db.dispose()
    seconds = time.perf_counter() - started
    return engine, ReplayResult(applied=engine.applied, rejected=engine.rejected, duplicates=engine.duplicates,
                                decisions=n_decisions, seconds=seconds, lines=n_lines)


def _cleanup(sink: SqlSink) -> None:
    try:
        sink.cleanup()
    except sa.exc.SQLAlchemyError:
        pass  # the original error is the one to report
