"""Event sources for the offline commands: an NDJSON file (``replay.ndjson``) or a Kafka range.

Every source is read as one stream of ``(position, record bytes)``: for a file the 1-based line
number and the line (blank lines skipped), for a Kafka range the record's offset and its value,
unchanged.  ``replay.runner``, ``replay.sql_sink`` and ``replay.verify`` read through
``open_records`` and so accept either wherever they accept a file.

Kafka range URL (docs/ingest.md)::

    kafka://HOST:PORT[,HOST:PORT...]/TOPIC[?from=X][&to=Y][&partition=N]

- ``from`` / ``to``: an integer is an **offset** (``from`` inclusive, ``to`` exclusive, in every
  partition read); an RFC 3339 time (``2026-03-01T09:00:00Z``) or ``@`` + epoch milliseconds
  (``@1772355600000``, as kcat's ``s@``) is a **time**, compared with the record timestamps
  (``from`` <= timestamp < ``to``).  An offset bound and a time bound may be mixed.
- ``partition``: read only that partition; by default every partition of the topic, one after
  the other in partition order (each cluster lives in one partition, so each cluster's events keep
  their order).
- The end is each partition's high watermark as returned by its first fetch (the log as it was
  when the read started), or ``to`` when lower.  ``end_offsets`` / ``offsets_for_times`` are not
  used (the dev broker answers them wrongly): the partition is scanned and time bounds are applied
  record by record.
- An empty host (``kafka:///TOPIC``) means ``$QUOTALEDGER_BOOTSTRAP``.

A record value of ``None`` (a tombstone) is read as empty bytes, which the decoder rejects.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import parse_qsl, unquote, urlsplit

from replay.ndjson import Watch, lines_of, open_source
from statemodel.errors import EventError
from statemodel.timefmt import parse_time

KAFKA_SCHEME = "kafka://"
BOOTSTRAP_ENV = "QUOTALEDGER_BOOTSTRAP"
_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")
_DIGITS = re.compile(r"[0-9]+")
_PARAMS = ("from", "to", "partition")
T = TypeVar("T")


class SourceError(OSError):
    """A source cannot be read: a malformed ``kafka://`` URL (the message names the part), an
    unreachable broker, a missing topic or partition.  An ``OSError``, so every command reports it
    as it reports an unreadable file."""


def is_kafka(source: str) -> bool:
    """True when ``source`` names a Kafka range (``kafka://…``) rather than a file."""
    return source[:len(KAFKA_SCHEME)].lower() == KAFKA_SCHEME


def position_name(source: str) -> str:
    """What a position of ``source`` is, for messages: ``"offset"`` (Kafka) or ``"line"`` (file)."""
    return "offset" if is_kafka(source) else "line"


@dataclass(frozen=True, slots=True)
class KafkaRange:
    """A parsed ``kafka://`` source; see the module docstring.

    Attributes:
        bootstrap: ``host:port[,host:port…]`` for ``bootstrap_servers``.
        topic: the topic read.
        partition: the only partition read, or ``None`` for every partition.
        from_offset / to_offset: offset bounds (inclusive / exclusive), ``None`` = open.
        from_ms / to_ms: record-timestamp bounds in epoch ms (inclusive / exclusive), ``None`` = open.
    """

    bootstrap: str
    topic: str
    partition: int | None = None
    from_offset: int | None = None
    to_offset: int | None = None
    from_ms: int | None = None
    to_ms: int | None = None

    def wants(self, offset: int, timestamp: int) -> bool:
        """Whether a record at ``offset`` with ``timestamp`` (epoch ms) lies in the range (the end
        offset is checked by the reader)."""
        return ((self.from_offset is None or offset >= self.from_offset)
                and (self.from_ms is None or timestamp >= self.from_ms)
                and (self.to_ms is None or timestamp < self.to_ms))


def _bound(name: str, value: str) -> tuple[int | None, int | None]:
    """``(offset, None)`` or ``(None, epoch ms)`` for a ``from`` / ``to`` value."""
    text = value.strip()
    if _DIGITS.fullmatch(text):
        return int(text), None
    if text.startswith("@") and re.fullmatch(r"-?[0-9]+", text[1:]):
        return None, int(text[1:])
    try:
        return None, parse_time(text, name)
    except EventError as exc:
        raise SourceError(f"kafka:// URL: {name}={value!r} is not an offset (integer >= 0), an RFC 3339 time or "
                          f"@epoch-milliseconds ({exc.problem})") from None


def parse_kafka_url(url: str) -> KafkaRange:
    """Parse ``kafka://HOST:PORT/TOPIC?from=..&to=..&partition=N`` (see the module docstring).

    Raises:
        SourceError: naming the part that is wrong (host, port, topic, parameter), or an empty range
            (``from`` offset beyond ``to`` offset, ``from`` time not before ``to`` time).
    """
    if not is_kafka(url):
        raise SourceError(f"{url!r} is not a kafka:// URL")
    parts = urlsplit(url)
    if parts.fragment:
        raise SourceError(f"kafka:// URL: unexpected '#{parts.fragment}' (parameters go after '?')")
    netloc = parts.netloc or os.environ.get(BOOTSTRAP_ENV, "")
    if not netloc:
        raise SourceError(f"kafka:// URL: no broker given (kafka://HOST:PORT/TOPIC, or set ${BOOTSTRAP_ENV})")
    for server in netloc.split(","):
        host, sep, port = server.rpartition(":")
        if not sep or not host:
            raise SourceError(f"kafka:// URL: broker {server!r} must be HOST:PORT")
        if not _DIGITS.fullmatch(port) or not 0 < int(port) < 65536:
            raise SourceError(f"kafka:// URL: broker {server!r} has no valid port (1-65535)")
    topic = unquote(parts.path[1:] if parts.path.startswith("/") else parts.path)
    if not topic:
        raise SourceError("kafka:// URL: no topic (kafka://HOST:PORT/TOPIC)")
    if not _TOPIC.fullmatch(topic):
        raise SourceError(f"kafka:// URL: topic {topic!r} is not a valid Kafka topic name "
                          "(1-249 of letters, digits, '.', '_', '-')")
    try:
        pairs = parse_qsl(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query))
    except ValueError as exc:
        raise SourceError(f"kafka:// URL: malformed query string ({exc})") from None
    params: dict[str, str] = {}
    for key, value in pairs:
        if key not in _PARAMS:
            raise SourceError(f"kafka:// URL: unknown parameter {key!r} (known: {', '.join(_PARAMS)})")
        if key in params:
            raise SourceError(f"kafka:// URL: parameter {key!r} given twice")
        params[key] = value
    partition = None
    if "partition" in params:
        if not _DIGITS.fullmatch(params["partition"]):
            raise SourceError(f"kafka:// URL: partition={params['partition']!r} must be an integer >= 0")
        partition = int(params["partition"])
    from_offset, from_ms = _bound("from", params["from"]) if "from" in params else (None, None)
    to_offset, to_ms = _bound("to", params["to"]) if "to" in params else (None, None)
    if from_offset is not None and to_offset is not None and from_offset > to_offset:
        raise SourceError(f"kafka:// URL: from offset {from_offset} is after to offset {to_offset}")
    if from_ms is not None and to_ms is not None and from_ms >= to_ms:
        raise SourceError("kafka:// URL: from time is not before to time")
    return KafkaRange(netloc, topic, partition, from_offset, to_offset, from_ms, to_ms)


class KafkaRangeReader:
    """Reads a ``KafkaRange`` synchronously (aiokafka on a private event loop, no consumer group,
    nothing committed).  Use as a context manager; iterate for ``(offset, value)``.

    Args:
        rng: the range.
        max_records: records per fetch round.
        timeout: seconds to wait for the broker's first answer per partition, and for progress
            while records are still expected.

    Raises (on enter or while iterating):
        SourceError: the broker cannot be reached, the topic or partition does not exist, or no
            progress within ``timeout``.
    """

    def __init__(self, rng: KafkaRange, max_records: int = 5000, timeout: float = 30.0) -> None:
        self.rng = rng
        self.max_records = max_records
        self.timeout = timeout
        self.loop: asyncio.AbstractEventLoop | None = None
        self.consumer: Any = None
        self.partitions: list[int] = []

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        assert self.loop is not None
        return self.loop.run_until_complete(coro)

    def __enter__(self) -> KafkaRangeReader:
        from aiokafka import AIOKafkaConsumer
        from aiokafka.errors import KafkaError

        rng = self.rng
        self.loop = asyncio.new_event_loop()
        try:
            async def make() -> Any:
                return AIOKafkaConsumer(bootstrap_servers=rng.bootstrap, group_id=None, enable_auto_commit=False,
                                        auto_offset_reset="earliest", request_timeout_ms=int(self.timeout * 1000),
                                        max_partition_fetch_bytes=8 << 20, fetch_max_bytes=64 << 20,
                                        fetch_max_wait_ms=50)

            self.consumer = self._run(make())
            self._run(self.consumer.start())
            topics = self._run(self.consumer.topics())
        except KafkaError as exc:
            self.__exit__(None, None, None)
            raise SourceError(f"cannot read Kafka at {rng.bootstrap}: {exc}") from None
        if rng.topic not in topics:
            self.__exit__(None, None, None)
            raise SourceError(f"topic {rng.topic!r} does not exist on {rng.bootstrap}")
        known = sorted(self.consumer.partitions_for_topic(rng.topic) or ())
        if rng.partition is not None and rng.partition not in known:
            self.__exit__(None, None, None)
            raise SourceError(f"topic {rng.topic!r} has no partition {rng.partition} "
                              f"(partitions {', '.join(map(str, known)) or 'none'})")
        self.partitions = known if rng.partition is None else [rng.partition]
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        loop, self.loop = self.loop, None
        if loop is None:
            return
        try:
            if self.consumer is not None:
                loop.run_until_complete(self.consumer.stop())
        finally:
            self.consumer = None
            loop.close()

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        for partition in self.partitions:
            yield from self._partition(partition)

    def _partition(self, partition: int) -> Iterator[tuple[int, bytes]]:
        from aiokafka import TopicPartition
        from aiokafka.errors import KafkaError

        rng, consumer = self.rng, self.consumer
        tp = TopicPartition(rng.topic, partition)

        async def assign() -> None:  # aiokafka wants its running loop here
            consumer.assign([tp])
            consumer.seek(tp, rng.from_offset or 0)

        self._run(assign())
        end: int | None = None
        wants = rng.wants
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                batch = self._run(consumer.getmany(tp, timeout_ms=200, max_records=self.max_records))
                if end is None:
                    high = consumer.highwater(tp)
                    if high is None:
                        if time.monotonic() > deadline:
                            raise SourceError(f"no fetch answer for {rng.topic}[{partition}] from {rng.bootstrap} "
                                              f"within {self.timeout:.0f} s")
                        continue
                    end = high if rng.to_offset is None else min(high, rng.to_offset)
                for record in batch.get(tp, ()):
                    if record.offset >= end:
                        return
                    if wants(record.offset, record.timestamp):
                        yield record.offset, record.value if record.value is not None else b""
                if batch:
                    deadline = time.monotonic() + self.timeout
                elif time.monotonic() > deadline:
                    raise SourceError(f"{rng.topic}[{partition}] on {rng.bootstrap}: no records for "
                                      f"{self.timeout:.0f} s before the end offset {end}")
                if self._run(consumer.position(tp)) >= end:
                    return
            except KafkaError as exc:
                raise SourceError(f"reading {rng.topic}[{partition}] from {rng.bootstrap}: {exc}") from None


@contextmanager
def open_records(source: str, watch: Watch | None = None) -> Iterator[Iterator[tuple[int, bytes]]]:
    """Open any event source; yields an iterator of ``(position, record bytes)``.

    Args:
        source: an NDJSON path (plain or gzip), ``"-"`` for stdin, or a ``kafka://`` URL.
        watch: for a file, a wrapper of its line stream (progress display,
            ``replay.ndjson.open_source``); not used for Kafka.

    Yields:
        for a file, ``(line number, line)`` for every non-blank line (``replay.ndjson.lines_of``);
        for Kafka, ``(offset, value)`` for every record of the range (module docstring).

    Raises:
        OSError (``SourceError`` for Kafka, with the reason) / gzip errors: the source cannot be read.
    """
    if is_kafka(source):
        with KafkaRangeReader(parse_kafka_url(source)) as reader:
            yield iter(reader)
    else:
        with open_source(source, watch) as stream:
            yield lines_of(stream)
