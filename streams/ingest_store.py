"""The synchronous side of the ingest worker (``streams.ingest``): one engine per cluster, restored
from SQL on first sight, the archive rows of a batch and its transaction.

``IngestStore.apply`` decodes a batch of records and feeds them to the driver of their cluster
(``statemodel.driver``; run in a worker thread), and turns each step into archive rows
(``replay.store.archive.ArchiveBatch.add_step``);
``prepare`` computes the batch's transaction (rows, changed projection rows, offsets) before the
next batch changes the engines; ``write`` runs it, possibly while the next batch is applied.
See ``streams.ingest`` for the guarantees these give.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import sqlalchemy as sa
from aiokafka import TopicPartition
from aiokafka.structs import ConsumerRecord

from replay.store.restore import restore
from replay.store.archive import ArchiveBatch, Writes, run_writes
from replay.store.db import salvage
from replay.store.sanitize import key_text
from replay.store.projections import ProjectionWriter
from statemodel import sql_schema as s
from statemodel.decisions import Decision
from statemodel.driver import Driver
from statemodel.engine import Engine
from statemodel.errors import EventError
from streams import outbox
from streams.codec import dead_letter, decode_record, key_cluster
from streams.ingest_listener import IngestListener
from streams.log_check import StoredOffset, record_digest


@dataclass
class IngestStats:
    """Counters of one worker run.

    Attributes:
        consumed: records read from the events topic (each once, skipped repeats excluded).
        applied: events applied by the engine.
        rejected: records that failed validation (each is a dead letter).
        duplicates: events with an id seen before in their cluster (archived, not applied).
        dead_letters: records sent to the dead-letter topic and ``dead_letters``.
        decisions: decisions emitted (and written to ``decisions``).
        batches: SQL transactions committed with consumed records.
        seconds: wall time from the first record consumed to the commit of the last batch.
        cpu_seconds: CPU time of the worker's process (every thread of it: the engine, the event
            loop, observers such as the metrics server; not the committer process) over the same
            span as ``seconds`` (``time.process_time``): what a run costs, whatever else the
            machine is doing meanwhile.
        published: decisions published to the decisions topic.
        snapshots: snapshots written (periodic and shutdown).
    """

    consumed: int = 0
    applied: int = 0
    rejected: int = 0
    duplicates: int = 0
    dead_letters: int = 0
    decisions: int = 0
    batches: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    published: int = 0
    snapshots: int = 0

    @property
    def events_per_second(self) -> float:
        """Consumed records per second of ``seconds`` (``0.0`` when nothing was consumed)."""
        return self.consumed / self.seconds if self.seconds > 0 else 0.0

    @property
    def cpu_us_per_event(self) -> float:
        """Microseconds of the worker's CPU time per consumed record (``0.0`` when nothing was consumed)."""
        return self.cpu_seconds * 1e6 / self.consumed if self.consumed else 0.0

    def summary(self) -> str:
        """One line: every counter and the rate."""
        return (f"consumed {self.consumed}, applied {self.applied}, rejected {self.rejected}, "
                f"duplicates {self.duplicates}, dead letters {self.dead_letters}, decisions {self.decisions} "
                f"({self.published} published), {self.batches} batches, {self.snapshots} snapshots, "
                f"{self.events_per_second:,.0f} events/s ({self.seconds:.3f}s, {self.cpu_seconds:.3f}s CPU)")


class IngestStore:
    """The synchronous side of the worker: engines, archive rows and SQL transactions (run in a thread)."""

    def __init__(self, db: sa.Engine, topic: str, group: str, batch: ArchiveBatch, max_record_bytes: int,
                 stats: IngestStats, listener: IngestListener | None = None) -> None:
        self.db = db
        self.topic = topic
        self.group = group
        self.batch = batch
        self.max_record_bytes = max_record_bytes
        self.stats = stats
        self.projections = ProjectionWriter()
        self.drivers: dict[str, Driver] = {}
        """cluster -> the driver of its engine (``Driver.engine``)"""
        self.positions: dict[str, int] = {}
        self.partition_of: dict[str, int] = {}
        self.next_offsets: dict[int, int] = {}
        self.last_ids: dict[int, str | None] = {}
        self.last_digests: dict[int, str] = {}
        self.dirty: dict[str, set[str]] = {}
        """cluster -> keys of the workloads an applied event or a decision of this batch named"""
        self.listener = listener
        """told of restores (``IngestListener.restored``); with one, the batch's decisions are kept"""
        self.decisions: list[Decision] = []
        """the decisions of the batch so far, in order (kept only with a listener; ``take_decisions``)"""
        self.last_times: dict[int, int] = {}
        """partition -> ``time`` (epoch ms) of the last valid event read from it"""

    def stored_offsets(self) -> dict[int, StoredOffset]:
        """``partition -> StoredOffset`` stored for this group and topic."""
        o = s.ingest_offsets.c
        with self.db.connect() as conn:
            rows = conn.execute(sa.select(o.topic_partition, o.next_offset, o.last_event_id, o.last_record_digest
                                          ).where(o.consumer_group == self.group, o.topic == self.topic))
            return {r.topic_partition: StoredOffset(r.next_offset, r.last_event_id, r.last_record_digest)
                    for r in rows}

    def driver_for(self, cluster: str, partition: int) -> Driver:
        """The driver of ``cluster``'s engine: in memory, else restored from SQL (snapshot + archived
        tail; the end of the archive read from the primary key, not counted)."""
        driver = self.drivers.get(cluster)
        if driver is not None:
            return driver
        began = time.monotonic()
        with self.db.connect() as conn:
            end = conn.execute(sa.select(sa.func.coalesce(sa.func.max(s.events.c.position) + 1, 0)).where(
                s.events.c.cluster == cluster)).scalar_one()
            engine, start = restore(conn, cluster, end) if end else (Engine(), 0)
            if start:
                self.batch.last_snapshot[cluster] = start
        driver = self.drivers[cluster] = Driver(engine)
        self.positions[cluster] = end
        self.partition_of[cluster] = partition
        if end and self.listener is not None:
            self.listener.restored(cluster, partition, end, time.monotonic() - began)
        return driver

    def drop_partitions(self, partitions: set[int]) -> None:
        """Forget everything held for these partitions and their clusters (they were revoked)."""
        for cluster in [c for c, p in self.partition_of.items() if p in partitions]:
            for held in (self.drivers, self.positions, self.partition_of, self.batch.last_snapshot):
                held.pop(cluster, None)
            self.projections.forget([cluster])
            self.dirty.pop(cluster, None)
        for p in partitions:
            self.next_offsets.pop(p, None)
            self.last_ids.pop(p, None)
            self.last_digests.pop(p, None)
            self.last_times.pop(p, None)

    def stored_clusters(self, names: list[str]) -> set[str]:
        """Which of ``names`` have archived events (one indexed look-up per name, 500 names a query;
        a name with a NUL cannot be stored, so it is not asked about)."""
        names = sorted({n for n in names if "\x00" not in n})
        found: set[str] = set()
        if not names:
            return found
        e = s.events.c
        with self.db.connect() as conn:
            for i in range(0, len(names), 500):
                found.update(conn.execute(sa.select(e.cluster).where(e.cluster.in_(names[i:i + 500])).distinct()
                                          ).scalars())
        return found

    def apply(self, records: dict[TopicPartition, list[ConsumerRecord]]
              ) -> list[tuple[bytes | None, bytes | None, list]]:
        """Decode and apply one batch; returns its dead-letter messages.

        A rejected record joins the stream of the cluster it names (envelope, else record key) only
        when that cluster has state: its engine is held here, or its events are archived (asked once
        per call for all such names, ``stored_clusters``).  Otherwise it is a dead letter only and
        costs no restore, no engine and no row keyed by the name (``replay.sql_sink`` "Rejected
        records": the same rule)."""
        stats, batch, positions, drivers = self.stats, self.batch, self.positions, self.drivers
        dlq: list[tuple[bytes | None, bytes | None, list]] = []
        dirty = self.dirty
        max_bytes = self.max_record_bytes
        kept = self.decisions if self.listener is not None else None
        for tp, recs in records.items():
            p = tp.partition
            next_offset = self.next_offsets.get(p, -1)
            fresh = [rec for rec in recs if rec.offset >= next_offset]  # below: already in SQL (a repeated fetch)
            if not fresh:
                continue
            decoded = []
            asked: list[str] = []
            for rec in fresh:
                item = decode_record(rec.value, max_bytes)
                salvaged = None
                if isinstance(item, EventError):
                    value, fallback = rec.value, key_cluster(rec.key)
                    salvaged = (salvage(value, fallback) if value is not None and len(value) <= max_bytes
                                else (fallback, None, None, None))
                    if salvaged[0] is not None and salvaged[0] not in drivers:
                        asked.append(salvaged[0])
                decoded.append((rec, item, salvaged))
            stored = self.stored_clusters(asked) if asked else set()
            last_id = self.last_ids.get(p)
            last_time = self.last_times.get(p)
            for rec, item, salvaged in decoded:
                stats.consumed += 1
                value = rec.value
                if salvaged is not None:
                    cluster = salvaged[0]
                    pos = None
                    if cluster is not None and (cluster in drivers or cluster in stored):
                        self.driver_for(cluster, p).step(rec.offset, item, value, cluster)
                        pos = positions[cluster]
                        positions[cluster] = pos + 1
                    batch.add_rejected(pos, value or b"", item, salvaged, f"{tp.topic}/{p}", rec.offset)
                    dlq.append((rec.key, *dead_letter(value, item, tp.topic, p, rec.offset)))
                    stats.rejected += 1
                    last_id = item.event_id
                else:
                    cluster = item.cluster
                    step = self.driver_for(cluster, p).step(rec.offset, item, value)
                    pos = positions[cluster]
                    positions[cluster] = pos + 1
                    if batch.add_step(step, pos):
                        batch.add_snapshot(drivers[cluster].engine, cluster, pos + 1, rec.offset)
                    if step.duplicate:
                        stats.duplicates += 1
                    else:
                        stats.applied += 1
                        workloads = dirty.get(cluster)
                        if workloads is None:
                            workloads = dirty[cluster] = set()
                        workloads.update(step.workload_keys())
                    stats.decisions += len(step.decisions)
                    if kept is not None and step.decisions:
                        kept += step.decisions
                    last_id = item.id
                    last_time = item.time_ms
            last = fresh[-1]
            self.next_offsets[p] = last.offset + 1
            self.last_ids[p] = key_text(last_id)
            self.last_digests[p] = record_digest(last.value)
            if last_time is not None:
                self.last_times[p] = last_time
        stats.dead_letters += len(dlq)
        return dlq

    def take_decisions(self) -> list[Decision]:
        """The decisions kept since the last call (empty without a listener), in order."""
        kept, self.decisions = self.decisions, []
        return kept

    def take_part(self) -> Writes:
        """The archive rows of the batch so far (events, decisions, dead letters, snapshots),
        to be written ahead of the rest of the batch in the same transaction; ``prepare`` gives the
        rest with the projections and the offsets."""
        self.stats.snapshots += len(self.batch.snapshots)
        return self.batch.take()

    def prepare(self, partitions: set[int]) -> Commit:
        """The transaction of the batch just applied: its rows, the changed projection rows of the
        clusters it changed and the offsets of ``partitions`` (the marks of published decisions are
        the committer's to add).  Computed before the next batch is applied (it reads the engines),
        written by ``write``."""
        writes = self.take_part()
        dirty, self.dirty = self.dirty, {}
        for cluster in sorted(dirty):
            writes += self.projections.changes(self.drivers[cluster].engine, cluster, dirty[cluster])
        offsets = [{"consumer_group": self.group, "topic": self.topic, "topic_partition": p,
                    "next_offset": self.next_offsets[p], "last_event_id": self.last_ids.get(p),
                    "last_record_digest": self.last_digests.get(p)}
                   for p in sorted(partitions)]
        return Commit([], writes, offsets)

    def write(self, commit: Commit) -> None:
        """ONE transaction with everything of ``commit`` (``write_commit``)."""
        write_commit(self.db, self.group, self.topic, commit)

    def shutdown_commit(self) -> Commit:
        """The last transaction of a run: a snapshot of every cluster that moved since its newest one."""
        for cluster in sorted(self.drivers):
            engine, position = self.drivers[cluster].engine, self.positions[cluster]
            if cluster in engine.clusters and self.batch.last_snapshot.get(cluster) != position:
                offset = self.next_offsets.get(self.partition_of[cluster])
                self.batch.add_snapshot(engine, cluster, position, None if offset is None else offset - 1)
        return self.prepare(set())


def write_commit(db: sa.Engine, group: str, topic: str, commit: Commit) -> None:
    """ONE transaction with everything of ``commit`` (``write_in``)."""
    with db.begin() as conn:
        write_in(conn, group, topic, commit)


def write_in(conn: sa.Connection, group: str, topic: str, commit: Commit) -> None:
    """Everything of ``commit`` in ``conn``'s transaction: the ``marks`` of published decisions, the
    ``writes`` and the ``offsets`` of ``group`` on ``topic``."""
    outbox.mark_published(conn, commit.marks)
    run_writes(conn, commit.writes)
    if commit.offsets:
        o = s.ingest_offsets.c
        conn.execute(s.ingest_offsets.delete().where(
            o.consumer_group == group, o.topic == topic,
            o.topic_partition.in_([r["topic_partition"] for r in commit.offsets])))
        conn.execute(s.ingest_offsets.insert(), commit.offsets)


@dataclass
class Commit:
    """What one transaction writes (``IngestStore.prepare``)."""

    marks: list[outbox.Range]
    writes: Writes
    offsets: list[dict]
