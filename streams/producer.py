"""``quotaledger produce``: event lines → the events topic.

The caller reads the lines (the CLI reads an NDJSON file with ``replay.ndjson``; the live path
reads no files).  Each line becomes one record, its bytes unchanged (without the line end):

- **key** = the event's ``cluster`` when the line is a JSON object whose ``cluster`` is a non-empty
  string, else ``"default"`` — the cluster the engine (``statemodel.events.decode``) and the dead-letter
  path (``replay.store.db.salvage``) give such a line.  A malformed line is produced as is; the
  ingest worker dead-letters it.
- **partition** = aiokafka's default partitioner on the key (murmur2, as the Java client), so one
  cluster's events land in one partition, in file order: aiokafka sends at most one batch per
  partition at a time, so retries cannot reorder them.
- ``acks="all"``, no idempotent producer and no transactions (the dev broker lacks them).  A line
  longer than ``max_message_bytes``, or than any event may be (the reader did not read it whole:
  ``statemodel.events.oversized.OversizedRecord``), is not sent: it is reported by line number and
  counted, and the rest is still produced.
- The three topics are created first when missing (``streams.admin.ensure_topics``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError, MessageSizeTooLargeError

from replay.store.db import salvage
from statemodel.events.oversized import OversizedRecord
from streams.admin import ensure_topics
from streams.topics import Topics

DEFAULT_PARTITIONS = 3
DEFAULT_MAX_MESSAGE_BYTES = 1 << 20
"""aiokafka's and Kafka's default ``max.request.size`` / ``message.max.bytes`` (1 MiB)."""

_CHECK_EVERY = 20_000
"""Sends between two waits for the outstanding deliveries (bounds memory, surfaces errors early)."""

ProgressCallback = Callable[[int, int], None]
"""Called with ``(records produced so far, input bytes read so far)`` every few thousand records."""


class ProduceError(RuntimeError):
    """The broker refused or lost records (the message says how many were delivered)."""


@dataclass
class ProduceResult:
    """What one ``produce`` run did.

    Attributes:
        topic: the events topic written.
        records: records delivered (acknowledged by all in-sync replicas).
        bytes: value bytes delivered.
        oversized: line numbers of lines longer than ``max_message_bytes`` or than an event may be, not
            produced.
        partitions: partition count of the events topic.
        seconds: wall time of the run.
        per_partition: records delivered per partition.
    """

    topic: str
    records: int = 0
    bytes: int = 0
    oversized: list[int] = field(default_factory=list)
    partitions: int = 0
    seconds: float = 0.0
    per_partition: dict[int, int] = field(default_factory=dict)

    def summary(self) -> str:
        """One line: counts, partitions and rate."""
        rate = self.records / self.seconds if self.seconds > 0 else 0.0
        spread = ", ".join(f"p{p}: {n}" for p, n in sorted(self.per_partition.items()))
        text = (f"produced {self.records} events ({self.bytes} bytes) to {self.topic} "
                f"({self.partitions} partitions; {spread or 'none'}) in {self.seconds:.2f}s, {rate:,.0f} events/s")
        if self.oversized:
            text += f"; {len(self.oversized)} lines over the size limit NOT produced"
        return text


def cluster_key(line: bytes) -> bytes:
    """The record key of an event line: its cluster, or ``b"default"`` (module docstring)."""
    return salvage(line)[0].encode()


async def produce_lines(lines: Iterable[tuple[int, bytes]], bootstrap: str, *, topics: Topics = Topics(),
                        partitions: int = DEFAULT_PARTITIONS, replication_factor: int = 1,
                        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
                        on_progress: ProgressCallback | None = None) -> ProduceResult:
    """Produce ``(line number, line)`` pairs to ``topics.events`` (see the module docstring).

    Raises:
        TopicAdminError: the topics cannot be created.
        ProduceError: the broker cannot be reached or did not acknowledge every record.
    """
    started = time.perf_counter()
    counts = await ensure_topics(bootstrap, topics, partitions, replication_factor)
    result = ProduceResult(topic=topics.events, partitions=counts[topics.events])
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=False, linger_ms=5,
                                max_batch_size=512 << 10, max_request_size=max_message_bytes)
    pending: list[asyncio.Future] = []
    read = 0
    per_partition = result.per_partition

    async def settle() -> None:
        for fut in pending:
            meta = await fut
            per_partition[meta.partition] = per_partition.get(meta.partition, 0) + 1
            result.records += 1
        pending.clear()

    try:
        await producer.start()
        send = producer.send
        topic = topics.events
        for line_no, line in lines:
            oversized = isinstance(line, OversizedRecord)  # a line longer than any event, not read whole
            read += (line.size if oversized else len(line)) + 1  # type: ignore[attr-defined]
            if oversized or len(line) + 512 > max_message_bytes:  # record overhead: key, headers, batch header
                result.oversized.append(line_no)
                continue
            try:
                pending.append(await send(topic, value=line, key=cluster_key(line)))
            except MessageSizeTooLargeError:
                result.oversized.append(line_no)
                continue
            result.bytes += len(line)
            if len(pending) >= _CHECK_EVERY:
                await settle()
                if on_progress is not None:
                    on_progress(result.records, read)
        await producer.flush()
        await settle()
    except KafkaError as exc:
        raise ProduceError(f"producing to {topics.events} on {bootstrap} failed after {result.records} "
                           f"acknowledged records: {exc!r}") from None
    finally:
        await producer.stop()
    if on_progress is not None:
        on_progress(result.records, read)
    result.seconds = time.perf_counter() - started
    return result


def produce(lines: Iterable[tuple[int, bytes]], bootstrap: str, **options: object) -> ProduceResult:
    """``produce_lines`` run to completion in its own event loop (for callers without one).

    ``lines`` are ``(line number, line)`` pairs, e.g. ``replay.ndjson.lines_of`` of an open file;
    ``options`` are ``produce_lines``'s keyword arguments.

    Raises:
        TopicAdminError / ProduceError: as ``produce_lines``.
        Whatever iterating ``lines`` raises (``OSError`` / ``EOFError`` of a file; records produced
            before stay produced).
    """
    return asyncio.run(produce_lines(lines, bootstrap, **options))  # type: ignore[arg-type]
