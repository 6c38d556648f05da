"""SQL sink: replay an event source (NDJSON file or Kafka range) through the engine and archive
everything in the SQL store.

``replay_to_db(source, url)`` streams the events through the very same driver
(``statemodel.driver.Driver``) as ``replay.runner.run_file`` and writes, one transaction per batch
of ``batch_size`` input events (never one per event), the rows that ``replay.store.archive`` builds
from the driver's step results and writes (shared with the Kafka ingest worker):

- every event to ``events`` (status ``applied`` / ``duplicate`` / ``rejected`` with reason and
  field path; ``payload`` the received JSON text; ``position`` 0-based per cluster;
  ``source_position`` the 1-based line number, or the Kafka offset), rejected ones also to ``dead_letters``;
- every decision to ``decisions`` (``payload`` = ``Decision.to_json()``);
- every ``snapshot_every`` events of a cluster, with the batch that holds those events, and at
  the end, a ``snapshots`` row: the restorable engine snapshot of that cluster
  (``statemodel.snapshot``), its position, clock, last decision seq and hash-chain value (hex) as
  ``state_hash`` — what ``verify`` checks against and ``replay.store.restore`` restores from;
- at the end, in one transaction: the projections (``replay.store.projections``: ``cohorts``,
  ``cluster_queues``, ``local_queues``, ``quotas``, ``workloads``, ``fair_sharing``, ``nodes``) of
  each replayed cluster replaced from its state in the engine.

The batches are written on a writer thread: while one batch's transaction runs (sqlite3 and
psycopg release the GIL inside the database calls), the main thread applies the next batch; a
batch is handed over only once the transaction before it has committed, so transactions keep
their order, and an error of the writer surfaces at the next hand-over (or at the end) and runs
the same cleanup as any other error.

Idempotence: a cluster that already has rows in ``events`` / ``decisions`` / ``snapshots`` is
refused (``SinkError``) unless ``replace=True``, which deletes that cluster's rows in the same
transaction as its first batch, and with the first batch every dead letter of the same ``source``
(the path or URL as given; those naming no cluster too), so a rerun leaves the same rows.  When a
run fails, the rows it wrote for its clusters and its dead letters are deleted (with ``replace``,
the cluster's earlier rows are then gone too).

Rejected records: every one is a ``dead_letters`` row; one that names a cluster with state (an
event of it was applied earlier in the source) is also archived in that cluster's ``events`` as
``rejected`` (``replay.store.archive.ArchiveBatch.add_rejected``).  A record naming a cluster
without state claims nothing: no rows keyed by that name, no database round trip.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa

from replay.ndjson import Watch
from replay.runner import ReplayResult, StepCallback
from replay.sources import open_records
from replay.store.archive import DEFAULT_SNAPSHOT_EVERY, STATE_ENCODING, ArchiveBatch, Writes, run_writes
from replay.store.projections import CLUSTER_TABLES, ProjectionWriter
from replay.store.db import SinkError, create_db_engine, redacted, salvage, upgrade_schema
from statemodel import sql_schema as s
from statemodel.driver import Driver, gc_paused
from statemodel.engine import Engine
from statemodel.errors import EventError

__all__ = ["STATE_ENCODING", "DEFAULT_SNAPSHOT_EVERY", "DEFAULT_BATCH_SIZE", "SqlSink", "replay_to_db"]

DEFAULT_BATCH_SIZE = 5000

WRITER_SWITCH_INTERVAL = 0.0001
"""Seconds: CPython's GIL switch interval while a replay runs (``short_gil_switches``)."""


@contextmanager
def short_gil_switches() -> Iterator[None]:
    """Shorten the GIL switch interval (``sys.setswitchinterval``) from CPython's 5 ms to
    ``WRITER_SWITCH_INTERVAL`` for a replay; restored after.  The writer thread gives the GIL up in
    every database call and needs it back after each one, while the main thread applies events
    without pause: at 5 ms per hand-back the writer spends longer waiting for the GIL than writing
    (measured on kueue-scale-100: the main thread then waits 1.7 s for the writer; at 0.1 ms, 0.1 s)."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(min(before, WRITER_SWITCH_INTERVAL))
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def _delete_clusters(conn: sa.Connection, clusters: list[str]) -> None:
    """Delete every row of these clusters from every per-cluster table, in ``conn``'s transaction."""
    for cluster in clusters:
        for table in CLUSTER_TABLES:
            conn.execute(table.delete().where(table.c.cluster == cluster))


class SqlSink:
    """Batches archive rows (``replay.store.archive.ArchiveBatch``) and writes them; see the module
    docstring.  Use via ``replay_to_db``."""

    def __init__(self, db: sa.Engine, source: str, replace: bool, snapshot_every: int,
                 snapshot_every_ms: int | None = None) -> None:
        self.db = db
        self.source = source
        self.replace = replace
        self.positions: dict[str, int] = {}
        self.to_clear: list[str] = []
        self.batch = ArchiveBatch(snapshot_every=snapshot_every, snapshot_every_ms=snapshot_every_ms)
        self.written_any = False
        self.writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="quotaledger-sql-writer")
        self.in_flight: Future[None] | None = None
        self.in_flight_clear: list[str] = []
        self.clear_source = replace
        """``--replace``: the dead letters of ``source`` are still to delete (with the first transaction)"""
        with db.connect() as conn:
            self.dead_before = conn.execute(sa.select(sa.func.coalesce(sa.func.max(s.dead_letters.c.id), 0))
                                            ).scalar_one()
        """``dead_letters.id`` values above this one are this run's"""

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
        """Hand everything buffered to the writer thread as one transaction, once the transaction
        before it is committed (so transactions stay in batch order); raises that one's error."""
        if len(self.batch) or self.to_clear or self.clear_source:
            self._submit(self.batch.take())

    def _submit(self, writes: Writes) -> None:
        """Hand ``writes`` (and the clearing of newly claimed clusters) to the writer thread as one
        transaction, once the transaction before it is committed."""
        self.wait()
        clear, self.to_clear = self.to_clear, []
        source, self.clear_source = self.source if self.clear_source else None, False
        self.in_flight, self.in_flight_clear = self.writer.submit(self._write, clear, source, writes), clear

    def _write(self, clear: list[str], source: str | None, writes: Writes) -> None:
        with self.db.begin() as conn:
            _delete_clusters(conn, clear)
            if source is not None:
                conn.execute(s.dead_letters.delete().where(s.dead_letters.c.source == source))
            run_writes(conn, writes)

    def wait(self) -> None:
        """Wait until the transaction in flight is committed; raises its error (its clusters to clear
        are then still to clear: the transaction rolled back)."""
        in_flight, self.in_flight = self.in_flight, None
        if in_flight is None:
            return
        try:
            in_flight.result()
        except BaseException:
            futures.wait([in_flight])  # interrupted while waiting: the transaction still ends first
            if in_flight.exception() is not None:
                self.to_clear = self.in_flight_clear + self.to_clear
            else:
                self.written_any = True
            raise
        self.written_any = True

    def finish(self, engine: Engine, last_line: int) -> None:
        """Replace the projections of this run's clusters in one transaction (computed while the last
        batch is written), then write the final snapshot of every cluster (dumped while the
        projections are written; skipped when one was just taken at the same position)."""
        self.flush()
        projections = ProjectionWriter()
        writes: Writes = []
        for cluster in sorted(self.positions):  # a cluster with only rejected events has no state: no rows
            writes += projections.changes(engine, cluster)
        self._submit(writes)
        for cluster in sorted(self.positions):
            if cluster in engine.clusters and self.batch.last_snapshot.get(cluster) != self.positions[cluster]:
                self.batch.add_snapshot(engine, cluster, self.positions[cluster], last_line)
        self.flush()
        self.wait()

    def cleanup(self) -> None:
        """After a failed run: wait for the transaction in flight, then delete what this run wrote:
        the rows of its clusters and its dead letters (those naming no cluster too)."""
        try:
            self.wait()
        except BaseException:  # noqa: BLE001 - the run's first error is the one to report
            pass
        if not self.written_any:
            return
        with self.db.begin() as conn:
            # a cluster still to clear had nothing of this run written yet: its old rows are intact
            _delete_clusters(conn, [c for c in self.positions if c not in self.to_clear])
            d = s.dead_letters.c
            conn.execute(s.dead_letters.delete().where(d.source == self.source, d.id > self.dead_before))

    def close(self) -> None:
        """Stop the writer thread (after the transaction in flight, if any)."""
        self.writer.shutdown(wait=True)


def replay_to_db(
    source: str,
    url: str,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    snapshot_every: int = DEFAULT_SNAPSHOT_EVERY,
    snapshot_every_ms: int | None = None,
    replace: bool = False,
    on_decision: Callable[[Any], None] | None = None,
    on_reject: Callable[[int, EventError], None] | None = None,
    watch: Watch | None = None,
    on_step: StepCallback | None = None,
) -> tuple[Engine, ReplayResult]:
    """Replay ``source`` (NDJSON path, plain or gzip, ``-``, or a ``kafka://`` range) into the SQL store at ``url``.

    Runs ``alembic upgrade head`` first.  ``on_decision`` / ``on_reject`` are called as in
    ``replay.runner.run_file`` (so file outputs keep working next to the database), and so are ``watch`` and
    ``on_step``.  Every
    ``snapshot_every`` events of a cluster — and, with ``snapshot_every_ms``, whenever the cluster's
    event clock crosses a multiple of that many milliseconds — a restorable snapshot of that cluster
    is written in the same transaction as the events it covers; at the end, one more after the
    projections.

    Raises:
        SinkError: schema cannot be upgraded, a cluster already in the database without
            ``replace``, or a database error while writing (the run's rows are then removed).
        OSError / EOFError: the source cannot be read (the run's rows are then removed).
    """
    if batch_size < 1:
        raise SinkError("--batch-size must be at least 1")
    if snapshot_every < 1:
        raise SinkError("--snapshot-every must be at least 1")
    upgrade_schema(url)
    db = create_db_engine(url)
    driver = Driver()
    engine = driver.engine
    sink = SqlSink(db, source, replace, snapshot_every, snapshot_every_ms)
    batch = sink.batch
    add_step, add_rejected = batch.add_step, batch.add_rejected
    positions = sink.positions
    n_lines = n_decisions = line_no = pending = 0
    started = time.perf_counter()
    try:
        with gc_paused(), short_gil_switches(), open_records(source, watch) as records:
            for step in driver.run(records):
                n_lines += 1
                line_no = step.position
                err = step.rejection
                if err is not None:
                    salvaged = salvage(step.record)
                    pos = positions.get(salvaged[0]) if salvaged[0] in engine.clusters else None
                    if pos is not None:
                        positions[salvaged[0]] = pos + 1
                    add_rejected(pos, step.record.rstrip(b"\r\n"), err, salvaged, source, line_no)
                    if on_reject is not None:
                        on_reject(line_no, err)
                else:
                    cluster = step.cluster
                    pos = positions.get(cluster)
                    if pos is None:
                        pos = sink.claim(cluster)
                    positions[cluster] = pos + 1
                    if add_step(step, pos):
                        batch.add_snapshot(engine, cluster, pos + 1, line_no)
                    out = step.decisions
                    if out:
                        n_decisions += len(out)
                        if on_decision is not None:
                            for d in out:
                                on_decision(d)
                if on_step is not None:
                    on_step(step)
                pending += 1
                if pending >= batch_size:
                    sink.flush()
                    pending = 0
            sink.finish(engine, line_no)
    except sa.exc.SQLAlchemyError as exc:
        _cleanup(sink)
        raise SinkError(f"database error while writing to {redacted(url)}: {str(exc).splitlines()[0]}") from None
    except BaseException:
        _cleanup(sink)
        raise
    finally:
        sink.close()
        db.dispose()
    seconds = time.perf_counter() - started
    return engine, ReplayResult(applied=engine.applied, rejected=engine.rejected, duplicates=engine.duplicates,
                                decisions=n_decisions, seconds=seconds, lines=n_lines)


def _cleanup(sink: SqlSink) -> None:
    try:
        sink.cleanup()
    except sa.exc.SQLAlchemyError:
        pass  # the original error is the one to report
