"""Broker-reset detection: is the log under the offsets stored in SQL still the log that was applied?

For every partition with a stored ``next_offset`` N > 0, a separate consumer (no group) fetches
the record at N - 1 and compares it with what the worker stored of the record it consumed there:
the SHA-256 of its value (``record_digest``; any record has one — an empty id, a value never
parsed because it was too large or not JSON, a tombstone), so like is compared with like.  Offsets
stored before the digest existed (NULL) are compared by envelope ``id`` read the same way on both
sides (``record_id``).  The partition's high watermark is taken from that fetch response
(``end_offsets`` is not used: the dev broker answers it wrongly).  The log was reset — a new, empty
or different log sits under the stored offsets — when the high watermark is below N or the record
differs.  Continuing would silently skip or mis-apply events, so the worker stops instead
(``BrokerResetError``).
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from typing import NamedTuple

import orjson
from aiokafka import AIOKafkaConsumer, TopicPartition


class BrokerResetError(RuntimeError):
    """The Kafka log no longer holds what the SQL store says was applied; the message says where."""


TOMBSTONE_DIGEST = "tombstone"
"""``record_digest`` of a record without a value."""


class StoredOffset(NamedTuple):
    """What ``ingest_offsets`` holds of one partition: the next offset to consume, and the id
    (bounded, for people) and the value digest (``record_digest``; ``None`` in rows written before
    it existed) of the record consumed last."""

    next_offset: int
    last_event_id: str | None
    last_record_digest: str | None


def record_digest(value: bytes | None) -> str:
    """SHA-256 (hex) of a record value, ``TOMBSTONE_DIGEST`` for none."""
    return TOMBSTONE_DIGEST if value is None else hashlib.sha256(value).hexdigest()


def record_id(value: bytes | None) -> str | None:
    """The envelope ``id`` of a record value, ``None`` when it has none (not JSON, not an object...)."""
    try:
        raw = orjson.loads(value) if value is not None else None
    except orjson.JSONDecodeError:
        return None
    event_id = raw.get("id") if isinstance(raw, dict) else None
    return event_id if isinstance(event_id, str) else None


def reset_message(topic: str, partition: int, next_offset: int, why: str) -> str:
    """The error text for a reset of ``topic[partition]`` whose stored next offset is ``next_offset``."""
    return (f"broker reset detected on {topic}[{partition}]: the SQL store has applied offsets up to "
            f"{next_offset - 1}, but {why}. The log under the stored offsets is not the one that was ingested "
            "(was the broker or topic recreated?). Stopping instead of continuing in a new log; restore the "
            "topic, or point the worker at a fresh database or another consumer group.")


async def check_log(bootstrap: str, topic: str, stored: dict[int, StoredOffset], timeout: float = 15.0) -> None:
    """Check the partitions of ``stored`` (``partition -> StoredOffset``).

    Raises:
        BrokerResetError: a partition's log was reset (module docstring), or its record at
            ``next_offset - 1`` could not be read within ``timeout`` seconds.
    """
    todo = {TopicPartition(topic, p): v for p, v in stored.items() if v.next_offset > 0}
    if not todo:
        return
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="none",
                                fetch_max_wait_ms=100)
    await consumer.start()
    try:
        consumer.assign(list(todo))
        for tp, offset in todo.items():
            consumer.seek(tp, offset.next_offset - 1)
        deadline = time.monotonic() + timeout
        while todo:
            data = await consumer.getmany(*todo, timeout_ms=200, max_records=len(todo) * 50)
            for tp in list(todo):
                next_offset, last_id, digest = todo[tp]
                high = consumer.highwater(tp)
                if high is not None and high < next_offset:
                    raise BrokerResetError(reset_message(topic, tp.partition, next_offset,
                                                         f"the partition now ends at offset {high}"))
                first = next((r for r in data.get(tp, ()) if r.offset >= next_offset - 1), None)
                if first is None:
                    continue
                # (a later offset: a gap, nothing to compare)
                if first.offset == next_offset - 1 and not _same_record(first.value, last_id, digest):
                    raise BrokerResetError(reset_message(
                        topic, tp.partition, next_offset,
                        f"the record at offset {next_offset - 1} is not the one applied (it has id "
                        f"{record_id(first.value)!r} where {last_id!r} was applied)"))
                del todo[tp]
                consumer.pause(tp)
            if todo and time.monotonic() > deadline:
                tp = next(iter(todo))
                raise BrokerResetError(reset_message(topic, tp.partition, todo[tp].next_offset,
                                                     f"the record at offset {todo[tp].next_offset - 1} could not be read "
                                                     f"within {timeout:.0f} s"))
            await asyncio.sleep(0)
    finally:
        await consumer.stop()


def _same_record(value: bytes | None, last_id: str | None, digest: str | None) -> bool:
    """Is ``value`` the record stored as consumed last: by digest, or by id for rows without one."""
    if digest is not None:
        return record_digest(value) == digest
    return record_id(value) == last_id
