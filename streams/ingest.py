"""The Kafka ingest worker: events topic → engine → one SQL transaction per batch → outbox relay.

Loop (aiokafka directly: a plain ``getmany`` loop; faust-streaming measured 25× slower on this hot path):

1. ``getmany`` up to ``max_batch`` records of the assigned partitions of ``<prefix>.events``, cut
   at ``max_batch_bytes`` bytes (``_cut``: the records past the cut are the start of the next batch);
2. decode and validate each value (``streams.codec``: the file replay's decoder) and feed it to
   the driver of its cluster (``statemodel.driver``, the loop of every path; one ``Engine`` per
   cluster, restored on first sight), whose step results become the archive rows;
3. records that fail validation go to ``<prefix>.events.dlq`` (headers: reason, field path, id,
   source topic / partition / offset), acknowledged by the broker *before* the commit below, so a
   crash can repeat a dead letter in the topic but never lose one;
4. the batch's ONE SQL transaction (``replay.store.archive``, the same rows as ``quotaledger replay
   --db``): archived events (``source_position`` = Kafka offset), decisions, dead letters, the
   unpublished outbox ranges of the decisions (added by the committer), periodic snapshots, the
   changed projection rows of the clusters the batch touched, and ``ingest_offsets`` (next offset
   and last event id per partition) — computed here and handed to the committer process
   (``streams.committer``), which writes it while this process applies the next batch (at most two
   batches in flight).  A batch is applied in
   ``PARTS_PER_BATCH`` parts: the archive rows of each part but the last go to the committer as
   soon as the part is applied and are written into the batch's open transaction meanwhile; the
   last message (rest of the rows, projections, offsets) commits it;
5. after the commit the committer relays the batch's decisions to ``<prefix>.decisions`` (key =
   cluster, header ``cause``) and marks them published in its next transaction.  The engine's
   interpreter thus never spends time on SQL or on publishing.

Exactly-once effect: SQL is the only record of progress.  On start and on every partition
assignment each partition is sought to its stored ``next_offset`` (Kafka-side commits are never
made nor read), and a cluster's engine is rebuilt from its newest snapshot plus the archived tail
(``replay.store.restore.restore``) the first time one of its records arrives.  A kill -9 before the
commit loses only uncommitted work, which is consumed again from the stored offsets; after it,
nothing is consumed twice.  Records below a partition's stored offset are skipped.  When
partitions are revoked, their clusters' engines are dropped (after the batch in flight commits),
so a worker that gets them back restores what another worker added meanwhile.

Projections: after each batch the projection rows of the clusters it touched are recomputed from
their state (the queue tables whole; of the workloads, those the batch's events and decisions named
and the pending ones) and only the rows that differ from the ones last written are deleted /
inserted (``replay.store.projections.ProjectionWriter``); the first write after a cluster is (re)loaded
replaces all its rows.  So the projections always equal ``quotaledger replay --db`` of the events
committed so far.

Snapshots: every ``snapshot_every`` events of a cluster and, with ``snapshot_every_ms``, whenever
its event clock crosses a multiple of that period (both fixed by the event stream, so crashes do
not change which snapshots exist), and on shutdown for every cluster that moved since its last.

Broker reset (``streams.log_check``): on start and on every assignment the record under each
stored offset is checked against the stored digest of the record consumed there; while running, a fetch high watermark below the next offset to read is
a reset too.  Either stops the worker with ``BrokerResetError``.

SIGTERM / SIGINT finish the batch in flight, commit it, write shutdown snapshots and return.

Observers: an optional ``IngestListener`` (``streams.ingest_listener``; metrics and logs implement
it) is told of rebalances, the partitions checked, restores, dead letters, each batch applied (with
the engines of the clusters it changed and its decisions, before the next batch changes them) and
each batch committed (by the committer's acknowledgement).  Without one, nothing is collected.
"""

from __future__ import annotations

import asyncio
import gc
import signal
import threading
import time
from collections.abc import Iterator

import sqlalchemy as sa
from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
from aiokafka.structs import ConsumerRecord

from replay.store.archive import DEFAULT_SNAPSHOT_EVERY, ArchiveBatch
from replay.store.db import create_db_engine, upgrade_schema
from statemodel.driver import gc_paused
from streams import outbox
from streams.codec import DEFAULT_MAX_RECORD_BYTES
from streams.committer import Committer, CommitterConfig, CommitterError
from streams.ingest_listener import BatchReport, DeadLetter, IngestListener, PartitionProgress
from streams.ingest_store import IngestStats, IngestStore
from streams.log_check import BrokerResetError, StoredOffset, check_log, reset_message
from streams.topics import Topics

__all__ = ["IngestStats", "IngestError", "BrokerResetError", "run_ingest", "DEFAULT_SESSION_TIMEOUT_MS",
           "DEFAULT_GROUP", "DEFAULT_MAX_BATCH", "DEFAULT_MAX_BATCH_BYTES"]

DEFAULT_SESSION_TIMEOUT_MS = 10_000
"""Consumer-group session timeout; use ``streams.devbroker.DEV_SESSION_TIMEOUT_MS`` with Tansu."""

DEFAULT_GROUP = "quotaledger-ingest"
FULL_COLLECTION_EVERY = 60.0
"""Seconds between full garbage collections while idle, ten times that while busy (``_Worker._collect_garbage``)."""
PARTS_PER_BATCH = 8
"""A full batch is applied in this many parts; after each but the last, its rows go to the committer,
which writes them in the batch's transaction while the next part is applied (so the transaction of
the last batch before idle waits for one part's rows, not the whole batch's: 2,500 records at the
default batch)."""
DEFAULT_MAX_BATCH = 20_000
"""Records per batch: the per-batch costs (every queue's projection rows rendered and compared, the
transaction) are spread over more events; a batch still reaches the committer in parts as it is
applied (``PARTS_PER_BATCH``)."""
DLQ_KEYS = 10_000
"""Dead-letter keys whose partition is remembered at most (a flood of distinct unknown clusters
clears the memory rather than growing it)."""
DEFAULT_MAX_BATCH_BYTES = 32 * 1024 * 1024
"""Bytes of record keys and values per batch (32 MiB): a batch ends at ``max_batch`` records or at
this many bytes, whichever comes first (a single larger record is a batch of its own).  What a batch
holds while it is applied and written is a small multiple of its bytes (the records, their archive
rows, the message to the committer; at most two batches wait for their commit), so this bounds the
worker's memory whatever the records' sizes: 20,000 records of up to 4 MiB each would otherwise be
one batch.  Ordinary events (about 0.5 kB) fill a batch by count long before this."""


class IngestError(RuntimeError):
    """The worker cannot go on (database or broker failure); the message says why."""


class _Rebalance(ConsumerRebalanceListener):
    """Seeks assigned partitions to the offsets stored in SQL; drops revoked partitions' state."""

    def __init__(self, worker: _Worker) -> None:
        self.worker = worker

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        async with self.worker.lock:  # the batch being applied and the one being written commit first
            await self.worker.settle()
            self.worker.ready -= revoked
            self.worker.drop_carried(revoked)
            partitions = {tp.partition for tp in revoked}
            listener = self.worker.listener
            if listener is not None and partitions:  # the group's first join revokes nothing
                store = self.worker.store
                listener.partitions_revoked(sorted(partitions),
                                            sorted(c for c, p in store.partition_of.items() if p in partitions))
            self.worker.store.drop_partitions(partitions)

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.worker.assigned(assigned)


class _Worker:
    """The asynchronous side: consumer, dead-letter producer, rebalances, hand-off to the committer, stop and idle."""

    def __init__(self, bootstrap: str, store: IngestStore, committer: Committer, topics: Topics, group: str,
                 max_batch: int, max_batch_bytes: int, exit_when_idle: float | None, session_timeout_ms: int,
                 max_record_bytes: int, listener: IngestListener | None = None) -> None:
        self.bootstrap = bootstrap
        self.listener = listener
        """told what the worker does (``streams.ingest_listener``): metrics and logs"""
        self.store = store
        self.committer = committer
        self.topics = topics
        self.max_batch = max_batch
        self.max_batch_bytes = max_batch_bytes
        self.carried: dict[TopicPartition, list[ConsumerRecord]] = {}
        """records fetched past the byte bound of the last batch: the start of the next one"""
        self.exit_when_idle = exit_when_idle
        self.lock = asyncio.Lock()
        self.stop = asyncio.Event()
        self.to_check: set[TopicPartition] = set()
        self.ready: set[TopicPartition] = set()
        """assigned partitions sought to their stored offsets"""
        self.stored: dict[int, StoredOffset] = {}
        self.assigned_once = False
        self.full_collection = time.monotonic()
        self.join_grace = session_timeout_ms / 1000
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False, auto_offset_reset="earliest",
            session_timeout_ms=session_timeout_ms, heartbeat_interval_ms=max(100, session_timeout_ms // 4),
            max_partition_fetch_bytes=max(8_388_608, max_record_bytes + 1024),
            fetch_max_bytes=max(52_428_800, max_record_bytes + 1024))
        self.producer = outbox.decisions_producer(bootstrap, max_record_bytes)
        self.dlq_partition_of: dict[bytes | None, int] = {}
        """Dead-letter key → its partition of the dead-letter topic (the producer's default
        partitioner, remembered: most keys are a few cluster names); cleared past ``DLQ_KEYS``."""

    def assigned(self, assigned: set[TopicPartition]) -> None:
        """Seek to the stored offsets (offset 0 when none; the consumer moves to the log start when that
        is out of range); check the log under them next.  Records of a partition are only applied once
        it was sought here.  Synchronous on purpose: no fetch can complete between assignment and seek.
        (Should a stored offset be out of range, the consumer falls back to the log start: those records
        are below the stored offset and skipped, and the high watermark check reports the reset.)"""
        self.stored = self.store.stored_offsets()
        self.drop_carried(assigned)  # they are fetched again from the offset sought
        for tp in assigned:
            stored = self.stored.get(tp.partition)
            self.consumer.seek(tp, 0 if stored is None else stored.next_offset)
            if stored is not None:
                self.store.next_offsets[tp.partition] = stored.next_offset
                self.store.last_ids[tp.partition] = stored.last_event_id
                if stored.last_record_digest is not None:
                    self.store.last_digests[tp.partition] = stored.last_record_digest
        self.ready |= assigned
        self.to_check |= assigned
        self.assigned_once = True
        if self.listener is not None:
            self.listener.partitions_assigned(sorted(tp.partition for tp in assigned))
            if not self.to_check:  # nothing to check: consuming (nothing) already
                self.listener.partitions_checked([])

    def drop_carried(self, partitions: set[TopicPartition]) -> None:
        """Forget the carried records of ``partitions`` (revoked, or sought again): never applied, so
        never committed; whoever reads the partition next fetches them again from the stored offset."""
        self.carried = {tp: recs for tp, recs in self.carried.items() if tp not in partitions}

    async def _send_dead_letters(self, dlq: list[tuple[bytes | None, bytes | None, list]]) -> None:
        """Send a batch's dead letters: grouped by partition into the producer's record batches, as
        ``send`` would place them (key hash), in their order within each partition.  One ``send``
        per record cost more than the rejection itself (a garbage flood ran at half the clean rate)."""
        from aiokafka.partitioner import DefaultPartitioner

        topic = self.topics.dlq
        partitions = sorted(await self.producer.partitions_for(topic))
        partition_of = self.dlq_partition_of
        by_partition: dict[int, list[tuple[bytes | None, bytes | None, list]]] = {}
        for key, value, headers in dlq:
            partition = partition_of.get(key) if key is not None else None
            if partition is None:
                partition = DefaultPartitioner()(key, partitions, partitions)
                if key is not None:
                    if len(partition_of) >= DLQ_KEYS:
                        partition_of.clear()
                    partition_of[key] = partition
            by_partition.setdefault(partition, []).append((key, value, headers))
        sent = []
        for partition, records in by_partition.items():
            batch = self.producer.create_batch()
            for key, value, headers in records:
                if batch.append(timestamp=None, key=key, value=value, headers=headers) is None:  # full
                    sent.append(await self.producer.send_batch(batch, topic, partition=partition))
                    batch = self.producer.create_batch()
                    batch.append(timestamp=None, key=key, value=value, headers=headers)  # the first always fits
            sent.append(await self.producer.send_batch(batch, topic, partition=partition))
        await asyncio.gather(*sent)

    def _check_watermarks(self) -> None:
        for tp in self.consumer.assignment():
            high = self.consumer.highwater(tp)
            expected = self.store.next_offsets.get(tp.partition)
            if high is not None and expected is not None and high < expected:
                raise BrokerResetError(reset_message(tp.topic, tp.partition, expected,
                                                     f"the partition now ends at offset {high}"))

    async def run(self) -> None:
        """Check the log, consume until stopped or idle, then leave the group, write the shutdown
        snapshots and let the committer finish publishing.  The clients are closed whatever happens."""
        store = self.store
        try:
            await self.producer.start()
            await check_log(self.bootstrap, self.topics.events, await asyncio.to_thread(store.stored_offsets))
            self.consumer.subscribe([self.topics.events], listener=_Rebalance(self))
            await self.consumer.start()
            await self._loop(store)
            await self.settle()
            await self.consumer.stop()
            await self.committer.submit(await asyncio.to_thread(store.shutdown_commit), None)
            await self.committer.close()
        finally:
            await self.consumer.stop()
            await self.producer.stop()

    async def settle(self) -> None:
        """Wait until every batch handed to the committer is committed; re-raise its failure."""
        await self.committer.settle()

    async def _loop(self, store: IngestStore) -> None:
        first: tuple[float, float] | None = None
        """monotonic and process CPU time at the run's first record"""
        started = last_activity = time.monotonic()
        while not self.stop.is_set():
            if self.carried:  # the rest of the last fetch first, so each partition stays in order
                data, self.carried = self.carried, {}
            else:
                data = await self.consumer.getmany(timeout_ms=200, max_records=self.max_batch)
            if self.to_check:
                checking, self.to_check = self.to_check, set()
                await check_log(self.bootstrap, self.topics.events,
                                {tp.partition: self.stored[tp.partition] for tp in checking
                                 if tp.partition in self.stored})
                last_activity = time.monotonic()
                if self.listener is not None and not self.to_check:
                    self.listener.partitions_checked(sorted(tp.partition for tp in self.consumer.assignment()))
            async with self.lock:
                data = {tp: recs for tp, recs in data.items() if tp in self.ready and recs}
                data, self.carried = _cut(data, self.max_batch_bytes)
                self._check_watermarks()
                if not data:
                    await self.settle()
                    self._collect_garbage(idle=True)
                    if self._idle_done(started, last_activity):
                        return
                    continue
                if first is None:
                    first = (time.monotonic(), time.process_time())
                fetched = time.monotonic()
                before = (store.stats.consumed, store.stats.decisions)
                dlq = []
                # the committer writes a part's rows while the next part is applied
                for part, last in _parts(data, -(-self.max_batch // PARTS_PER_BATCH)):
                    dlq += await asyncio.to_thread(store.apply, part)
                    if not last:
                        await self.committer.send_part(store.take_part())
                touched = store.dirty  # prepare starts a new dict: these are the batch's
                commit = await asyncio.to_thread(store.prepare, {tp.partition for tp in data})
                if dlq:
                    await self._send_dead_letters(dlq)
                report = None if self.listener is None else self._report(data, touched, dlq, before, fetched)
                await self.committer.submit(commit, first, report)  # in batch order, applied meanwhile
                self._collect_garbage(idle=False)
                last_activity = time.monotonic()

    def _report(self, data: dict[TopicPartition, list[ConsumerRecord]], touched: dict[str, set[str]],
                dlq: list[tuple[bytes | None, bytes | None, list]], before: tuple[int, int],
                fetched: float) -> BatchReport:
        """Tell the listener of the batch just applied (its dead letters, then the engines as it left
        them) and return its report, to be passed on when committed."""
        listener, store = self.listener, self.store
        assert listener is not None
        for _key, _value, headers in dlq:
            h = dict(headers)
            listener.dead_letter(DeadLetter(int(h["source_partition"]), int(h["source_offset"]),
                                            h["reason"].decode(errors="replace"),
                                            h["field_path"].decode(errors="replace")))
        progress = {}
        for tp in data:
            p = tp.partition
            next_offset = store.next_offsets[p]
            high = self.consumer.highwater(tp)
            progress[p] = PartitionProgress(next_offset, max(0, high - next_offset) if high is not None else 0,
                                            store.last_times.get(p))
        report = BatchReport(store.stats.consumed - before[0], store.stats.decisions - before[1], len(dlq),
                             progress, time.monotonic() - fetched)
        drivers = store.drivers
        states = {}
        for cluster in sorted(touched):
            engine = drivers[cluster].engine
            if cluster in engine.clusters:
                states[cluster] = engine.clusters[cluster]
        listener.batch_applied(report, states, store.take_decisions(), touched)
        return report

    def _collect_garbage(self, idle: bool) -> None:
        """The automatic cyclic GC is paused for the run, as in every path of the driver
        (``statemodel.driver`` "GC note": its full passes over the engine's live objects cost a fifth
        of the time).  A worker
        runs for days, though, so cycles are still collected: everything once a minute when idle and
        every ten minutes when busy.  Not after every batch: a batch's engine work leaves no cyclic
        garbage (its rows are freed by reference counting), yet a young-generation pass still walks
        every object the batch allocated that survives in the engine: 0.1-0.2 s per 20,000-event
        batch (DLRM trace), a tenth of the worker's time."""
        now = time.monotonic()
        if now - self.full_collection >= FULL_COLLECTION_EVERY * (1 if idle else 10):
            gc.collect()
            self.full_collection = now

    def _idle_done(self, started: float, last_activity: float) -> bool:
        """``--exit-when-idle``: nothing arrived for that long, every assigned partition is drained, and
        the group was joined (or could not be within the session timeout)."""
        if self.exit_when_idle is None:
            return False
        now = time.monotonic()
        if now - last_activity < self.exit_when_idle:
            return False
        if not self.assigned_once and now - started < self.exit_when_idle + self.join_grace:
            return False
        for tp in self.consumer.assignment():
            high = self.consumer.highwater(tp)
            if high is not None and self.store.next_offsets.get(tp.partition, 0) < high:
                return False
        return True


def _cut(data: dict[TopicPartition, list[ConsumerRecord]], max_bytes: int
         ) -> tuple[dict[TopicPartition, list[ConsumerRecord]], dict[TopicPartition, list[ConsumerRecord]]]:
    """``(batch, rest)``: the records of ``data`` (per partition, in partition order) up to ``max_bytes``
    bytes of keys and values — at least one record — and the records after them, to be applied next
    (each partition's records stay in offset order: the rest of a partition follows its batch part)."""
    batch: dict[TopicPartition, list[ConsumerRecord]] = {}
    rest: dict[TopicPartition, list[ConsumerRecord]] = {}
    size = 0
    for tp, recs in data.items():
        if rest:
            rest[tp] = recs
            continue
        for i, rec in enumerate(recs):
            size += len(rec.value or b"") + len(rec.key or b"")
            if size > max_bytes and (batch or i):
                if i:
                    batch[tp] = recs[:i]
                rest[tp] = recs[i:]
                break
        else:
            batch[tp] = recs
    return batch, rest


def _parts(data: dict[TopicPartition, list], size: int) -> Iterator[tuple[dict[TopicPartition, list], bool]]:
    """``data`` (records per partition) in parts of at most ``size`` records, each with whether it
    is the last one."""
    parts = [{tp: recs[i:i + size]} for tp, recs in data.items() for i in range(0, len(recs), size)]
    for i, part in enumerate(parts):
        yield part, i == len(parts) - 1


def run_ingest(bootstrap: str, db_url: str, *, topics: Topics = Topics(), group: str = DEFAULT_GROUP,
               max_batch: int = DEFAULT_MAX_BATCH, max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
               exit_when_idle: float | None = None,
               snapshot_every: int = DEFAULT_SNAPSHOT_EVERY, snapshot_every_ms: int | None = None,
               publish: bool = True, session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS,
               max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES, handle_signals: bool = True,
               listener: IngestListener | None = None) -> IngestStats:
    """Run the ingest worker (module docstring) until SIGTERM / SIGINT or, with ``exit_when_idle``
    (seconds), until every assigned partition is drained and nothing arrived for that long.

    Args:
        bootstrap: Kafka ``host:port`` list.
        db_url: SQLAlchemy URL of the store (schema upgraded first).
        topics: topic names (``streams.topics``); events are read from ``topics.events``.
        group: consumer group (progress in ``ingest_offsets`` is kept per group).
        max_batch: most records per batch (and per SQL transaction).
        max_batch_bytes: most bytes of record keys and values per batch (a larger single record is a
            batch of its own; ``DEFAULT_MAX_BATCH_BYTES``).
        snapshot_every / snapshot_every_ms: snapshot period in events of a cluster / ms of its event time.
        publish: relay decisions to ``topics.decisions`` (when False no outbox rows are written).
        session_timeout_ms: consumer-group session timeout (Tansu holds a join for half of it).
        max_record_bytes: larger record values are dead-lettered unread.
        handle_signals: stop on SIGTERM / SIGINT (when called from the main thread).
        listener: observer of the run (``streams.ingest_listener``; metrics, logs), none by default.

    Returns:
        the run's counters.

    Raises:
        BrokerResetError: the log under the stored offsets is not the one that was applied.
        IngestError: bad options, or the database or the broker failed (committed work is kept;
            a restart resumes from it).
    """
    if (max_batch < 1 or max_batch_bytes < 1 or snapshot_every < 1
            or (snapshot_every_ms is not None and snapshot_every_ms < 1)):
        raise IngestError("--max-batch, --max-batch-bytes, --snapshot-every and --snapshot-every-time must be positive")
    from replay.store.db import SinkError

    try:
        upgrade_schema(db_url)  # workers started together take turns (a lock; see upgrade_schema)
    except SinkError as exc:
        raise IngestError(str(exc)) from None
    stats = IngestStats()
    db = create_db_engine(db_url)
    batch = ArchiveBatch(snapshot_every=snapshot_every, snapshot_every_ms=snapshot_every_ms)
    store = IngestStore(db, topics.events, group, batch, max_record_bytes, stats, listener)
    committer = Committer(CommitterConfig(db_url, group, topics.events, bootstrap, topics.decisions, publish,
                                          max_record_bytes), stats, listener=listener)

    async def main() -> None:
        worker = _Worker(bootstrap, store, committer, topics, group, max_batch, max_batch_bytes, exit_when_idle,
                         session_timeout_ms, max_record_bytes, listener)
        if handle_signals and threading.current_thread() is threading.main_thread():
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, worker.stop.set)
        await worker.run()

    try:
        committer.start()
        with gc_paused():  # see _collect_garbage
            asyncio.run(main())
    except CommitterError as exc:
        raise IngestError(str(exc)) from None
    except sa.exc.SQLAlchemyError as exc:
        raise IngestError(f"database error: {str(exc).splitlines()[0]}") from None
    except BrokerResetError:
        raise
    except Exception as exc:  # noqa: BLE001 - aiokafka errors and the like: report, exit non-zero
        from aiokafka.errors import KafkaError

        if isinstance(exc, (KafkaError, OSError)):
            raise IngestError(f"Kafka error ({bootstrap}): {type(exc).__name__}: {exc}") from None
        raise
    finally:
        committer.abandon()
        db.dispose()
    return stats
