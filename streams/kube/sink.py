"""Where ``quotaledger watch`` sends its event lines: an NDJSON file or stdout, or the Kafka events
topic (key = the cluster, as ``quotaledger produce`` does; docs/ingest.md).

A sink takes lines with ``write`` and makes them durable with ``flush``: the watcher saves its
state file only after ``flush`` returned, so nothing the state file accounts for is lost.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import BinaryIO, Protocol

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError

from streams.admin import ensure_topics
from streams.producer import DEFAULT_MAX_MESSAGE_BYTES, ProduceError
from streams.topics import Topics


class Sink(Protocol):
    """An output of event lines (JSON without the line end)."""

    def write(self, line: bytes) -> None:
        """Queue one event line."""

    def flush(self) -> None:
        """Make every written line durable (raises on failure)."""

    def close(self) -> None:
        """Flush and release the output."""


class NdjsonSink:
    """Lines appended to a file (``fsync`` on ``flush``), or written to stdout for ``-``.

    Raises (constructor):
        OSError: the file cannot be opened for appending.
    """

    def __init__(self, path: str) -> None:
        self._own = path != "-"
        self._out: BinaryIO = open(path, "ab") if self._own else sys.stdout.buffer
        self.lines = 0

    def write(self, line: bytes) -> None:
        """Append ``line`` and a newline."""
        self._out.write(line + b"\n")
        self.lines += 1

    def flush(self) -> None:
        """Flush to the file and ``fsync`` it (stdout: flush only)."""
        self._out.flush()
        if self._own:
            os.fsync(self._out.fileno())

    def close(self) -> None:
        """Flush and close the file (stdout stays open)."""
        self.flush()
        if self._own:
            self._out.close()


class KafkaSink:
    """Lines produced to ``topics.events`` with key = ``cluster``, ``acks=all``; ``flush`` waits for
    every acknowledgement.  The topics are created when missing (``partitions`` each).

    Raises (constructor):
        TopicAdminError: the topics cannot be created.
        ProduceError: the broker cannot be reached.
    """

    def __init__(self, bootstrap: str, cluster: str, topics: Topics = Topics(), partitions: int = 3,
                 max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
        self._loop = asyncio.new_event_loop()
        self._key = cluster.encode()
        self._topic = topics.events
        self._bootstrap = bootstrap
        self._pending: list[asyncio.Future] = []
        self.lines = 0
        self._loop.run_until_complete(ensure_topics(bootstrap, topics, partitions))
        self._producer = self._loop.run_until_complete(self._start(bootstrap, max_message_bytes))

    async def _start(self, bootstrap: str, max_message_bytes: int) -> AIOKafkaProducer:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=False,
                                    linger_ms=5, max_request_size=max_message_bytes)
        try:
            await producer.start()
        except KafkaError as exc:
            await producer.stop()
            raise ProduceError(f"cannot connect to {bootstrap}: {exc!r}") from None
        return producer

    def write(self, line: bytes) -> None:
        """Send ``line`` (delivery is awaited by ``flush``)."""
        try:
            fut = self._loop.run_until_complete(self._producer.send(self._topic, value=line, key=self._key))
        except KafkaError as exc:
            raise ProduceError(f"producing to {self._topic} on {self._bootstrap} failed: {exc!r}") from None
        self._pending.append(fut)

    def flush(self) -> None:
        """Wait until every line sent is acknowledged.

        Raises:
            ProduceError: the broker did not acknowledge a line.
        """
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        try:
            self._loop.run_until_complete(asyncio.gather(*pending))
        except KafkaError as exc:
            raise ProduceError(f"producing to {self._topic} on {self._bootstrap} failed: {exc!r}") from None
        self.lines += len(pending)

    def close(self) -> None:
        """Flush, stop the producer and close its event loop."""
        try:
            self.flush()
        finally:
            self._loop.run_until_complete(self._producer.stop())
            self._loop.close()
