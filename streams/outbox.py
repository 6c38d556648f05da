"""Outbox relay: decisions committed in the ``outbox`` table → the decisions topic → marked published.

Each decision is written as an unpublished ``outbox`` row in the same transaction as the events
that caused it (``add_unpublished``: the committer process derives those rows from the batch's
``decisions`` rows, so the engine's interpreter builds and sends each decision once); only after
that commit does the relay send it (key = cluster, value = the
decision JSON, headers ``cause`` = the causing event id and ``seq``) and wait for the broker's
acknowledgement.  The rows are then marked ``published`` (by ``(cluster, seq)`` ranges, in the
worker's next transaction).  A crash between the send and the mark re-sends those decisions on
restart: delivery to Kafka is at-least-once, and ``(cluster, seq)`` — gap-free per cluster —
identifies a decision, so consumers drop repeats by keeping the highest ``seq`` seen per cluster.
"""

from __future__ import annotations

import asyncio

import orjson
import sqlalchemy as sa
from aiokafka import AIOKafkaProducer
from aiokafka.partitioner import DefaultPartitioner
from aiokafka.producer.message_accumulator import BatchBuilder

from replay.sql_archive import DECISION_COLUMNS, TupleRows, Writes
from statemodel import sql_schema as s

Range = tuple[str, int, int]
"""``(cluster, first seq, last seq)`` of published decisions."""

Unpublished = tuple[str, int, str, bytes]
"""``(cluster, seq, cause event id, decision JSON)`` of a decision to publish."""

OUTBOX_COLUMNS = ("cluster", "seq", "payload", "published")
_CLUSTER, _SEQ, _CAUSE, _PAYLOAD = (DECISION_COLUMNS.index(c) for c in ("cluster", "seq", "cause_event_id", "payload"))


def add_unpublished(writes: Writes) -> list[Unpublished]:
    """Append to ``writes`` an insert of one unpublished ``outbox`` row per inserted ``decisions`` row
    (``replay.sql_archive.TupleRows`` of ``DECISION_COLUMNS``, payload ``RawJSON``), so both are
    written in the same transaction; returns those decisions, in order, for ``publish``."""
    decisions = [row for op, table, items in writes if op == "insert" and table is s.decisions
                 for row in items.rows]  # type: ignore[union-attr]
    if decisions:
        writes.append(("insert", s.outbox, TupleRows(OUTBOX_COLUMNS, [
            (row[_CLUSTER], row[_SEQ], row[_PAYLOAD], False) for row in decisions])))
    return [(row[_CLUSTER], row[_SEQ], row[_CAUSE], row[_PAYLOAD].encode()) for row in decisions]


def decisions_producer(bootstrap: str, max_record_bytes: int) -> AIOKafkaProducer:
    """The producer of the decisions (and dead-letter) topics: ``acks=all`` without the idempotent
    producer (the dev broker lacks it; ``(cluster, seq)`` identifies a repeated decision), batches of
    up to 1 MiB, requests big enough for a dead letter of ``max_record_bytes`` (bytes).  Not started."""
    return AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=False, acks="all", linger_ms=5,
                            max_batch_size=1_048_576, max_request_size=max(1_048_576, 2 * max_record_bytes))


async def publish(producer: AIOKafkaProducer, topic: str, rows: list[Unpublished]) -> list[Range]:
    """Send ``rows`` (in seq order per cluster) and wait for every acknowledgement; returns the
    ranges to mark published.

    Records are packed into producer batches per partition (the partition ``send`` would choose for
    the key, so one cluster's decisions share a partition and keep their order).

    Raises:
        aiokafka.errors.KafkaError: a send failed (nothing is marked; the rows are sent again later).
    """
    if not rows:
        return []
    partitions = sorted(await producer.partitions_for(topic))
    choose = DefaultPartitioner()
    sent = []
    batches: dict[int, BatchBuilder] = {}
    for cluster, seq, cause, value in rows:
        key = cluster.encode()
        partition = choose(key, partitions, partitions)
        record = {"timestamp": None, "key": key, "value": value,
                  "headers": [("cause", cause.encode()), ("seq", str(seq).encode())]}
        batch = batches.get(partition)
        if batch is None or batch.append(**record) is None:
            if batch is not None:
                sent.append(await producer.send_batch(batch, topic, partition=partition))
            batch = batches[partition] = producer.create_batch()
            batch.append(**record)
    for partition, batch in batches.items():
        sent.append(await producer.send_batch(batch, topic, partition=partition))
    await asyncio.gather(*sent)
    ranges: list[Range] = []
    for cluster, seq, _, _ in rows:
        if ranges and ranges[-1][0] == cluster and ranges[-1][2] + 1 == seq:
            ranges[-1] = (cluster, ranges[-1][1], seq)
        else:
            ranges.append((cluster, seq, seq))
    return ranges


def mark_published(conn: sa.Connection, ranges: list[Range]) -> None:
    """Mark the outbox rows of ``ranges`` published, in ``conn``'s transaction."""
    o = s.outbox.c
    for cluster, first, last in ranges:
        conn.execute(s.outbox.update().where(o.cluster == cluster, o.seq >= first, o.seq <= last)
                     .values(published=True))


def unpublished(conn: sa.Connection, limit: int = 10_000) -> list[Unpublished]:
    """Up to ``limit`` unpublished outbox rows, in ``(cluster, seq)`` order (left by a crash)."""
    o = s.outbox.c
    rows = conn.execute(sa.select(o.cluster, o.seq, o.payload).where(o.published.is_(False))
                        .order_by(o.cluster, o.seq).limit(limit))
    return [(r.cluster, r.seq, r.payload["cause"], orjson.dumps(r.payload)) for r in rows]
