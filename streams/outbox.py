"""Outbox relay: decision ranges committed in the ``outbox`` table → the decisions topic → marked published.

With each batch's transaction goes one unpublished ``outbox`` row per cluster: the range of
decision seqs the batch wrote (``add_unpublished``, computed by the committer process from the
batch's ``decisions`` rows, which hold the payloads: nothing is written twice).  Only after that
commit does the relay send the decisions (key = cluster, value = the decision JSON, headers
``cause`` = the causing event id and ``seq``) and wait for the broker's acknowledgement.  The
ranges are then marked ``published`` (in the worker's next transaction).  A crash between the send
and the mark re-sends those decisions on restart (``unpublished`` reads them back from
``decisions``): delivery to Kafka is at-least-once, and ``(cluster, seq)`` — gap-free per cluster —
identifies a decision, so consumers drop repeats by keeping the highest ``seq`` seen per cluster.
"""

from __future__ import annotations

import asyncio

import orjson
import sqlalchemy as sa
from aiokafka import AIOKafkaProducer
from aiokafka.partitioner import DefaultPartitioner
from aiokafka.producer.message_accumulator import BatchBuilder

from replay.store.archive import DECISION_COLUMNS, Writes
from statemodel import sql_schema as s

Range = tuple[str, int, int]
"""``(cluster, first seq, last seq)`` of published decisions."""

Unpublished = tuple[str, int, str, bytes]
"""``(cluster, seq, cause event id, decision JSON)`` of a decision to publish."""

_CLUSTER, _SEQ, _CAUSE, _PAYLOAD = (DECISION_COLUMNS.index(c) for c in ("cluster", "seq", "cause_event_id", "payload"))


def add_unpublished(writes: Writes) -> list[Unpublished]:
    """Append to ``writes`` an insert of the unpublished ``outbox`` ranges of the inserted
    ``decisions`` rows (``replay.store.archive.TupleRows`` of ``DECISION_COLUMNS``; one range per run
    of consecutive seqs of a cluster, i.e. one per cluster and batch), so both are written in the
    same transaction; returns those decisions, in order, for ``publish``."""
    decisions = [(row[_CLUSTER], row[_SEQ], row[_CAUSE], row[_PAYLOAD].encode())
                 for op, table, items in writes if op == "insert" and table is s.decisions
                 for row in items.rows]  # type: ignore[union-attr]
    if decisions:
        writes.append(("insert", s.outbox, [{"cluster": cluster, "first_seq": first, "last_seq": last,
                                             "published": False} for cluster, first, last in _ranges(decisions)]))
    return decisions


def _ranges(rows: list[Unpublished]) -> list[Range]:
    """The runs of consecutive seqs of a cluster in ``rows``."""
    ranges: list[Range] = []
    for cluster, seq, _, _ in rows:
        if ranges and ranges[-1][0] == cluster and ranges[-1][2] + 1 == seq:
            ranges[-1] = (cluster, ranges[-1][1], seq)
        else:
            ranges.append((cluster, seq, seq))
    return ranges


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
    return _ranges(rows)


def mark_published(conn: sa.Connection, ranges: list[Range]) -> None:
    """Mark the outbox ranges within ``ranges`` (published decisions) published, in ``conn``'s transaction."""
    o = s.outbox.c
    for cluster, first, last in ranges:
        conn.execute(s.outbox.update().where(o.cluster == cluster, o.first_seq >= first, o.last_seq <= last)
                     .values(published=True))


def unpublished(conn: sa.Connection, limit: int = 10_000) -> list[Unpublished]:
    """The decisions of the unpublished outbox ranges (left by a crash), in ``(cluster, seq)`` order:
    whole ranges, as many as fit in ``limit`` decisions (at least one)."""
    o, d = s.outbox.c, s.decisions.c
    out: list[Unpublished] = []
    for r in conn.execute(sa.select(o.cluster, o.first_seq, o.last_seq).where(o.published.is_(False))
                          .order_by(o.cluster, o.first_seq)):
        if out and len(out) + r.last_seq - r.first_seq + 1 > limit:
            break
        out += [(row.cluster, row.seq, row.cause_event_id, orjson.dumps(row.payload)) for row in conn.execute(
            sa.select(d.cluster, d.seq, d.cause_event_id, d.payload).where(
                d.cluster == r.cluster, d.seq >= r.first_seq, d.seq <= r.last_seq).order_by(d.seq))]
    return out
