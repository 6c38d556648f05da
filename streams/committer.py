"""The committer process of the ingest worker: SQL transactions and the outbox relay, out of the
interpreter that runs the engine.

The worker (``streams.ingest``) starts it with ``Committer.start`` as ``python -m streams.committer``
and hands it each batch's ``Commit`` (``streams.ingest_store``) on a pipe
(``multiprocessing.connection`` framing: a length header, then a kind byte and the rows encoded by
``streams.batch_codec``): first, optionally, PART messages with the archive rows of the parts of
the batch applied so far (``Committer.send_part``), then one WHOLE message with the rest, the
projection rows and the offsets (``Committer.submit``).  The process:

1. relays the decisions of the outbox ranges a previous run left unpublished (``streams.outbox``),
   marking them published in their own transactions, before it reads the first message;
2. writes a batch's messages in ONE transaction (``write_in``) — opened by its first message,
   with the marks of the decisions published since the last transaction, and the unpublished
   ``outbox`` ranges of its decision rows (``outbox.add_unpublished``) — commits it with the WHOLE
   message and acknowledges it;
3. then publishes that batch's decisions to the decisions topic (key = cluster, headers ``cause``
   and ``seq``) and waits for the broker's acknowledgement; the marks go into the next
   transaction, or into a transaction of their own when no message arrives within
   ``MARK_AFTER_IDLE`` seconds and no batch is open;
4. on a ``stop`` message writes the last marks, replies with the number of decisions published and
   exits.

Crash safety.  A message is read whole or not at all (a worker dying mid-send leaves a short
message: the read ends with ``EOFError``), and only a WHOLE message commits, so a transaction
always holds a whole batch and its offsets; at end of file an open batch is rolled back.  The
process dies with the worker: on Linux the kernel kills it (``PR_SET_PDEATHSIG``) the moment its
parent ends, and everywhere it exits at end of file on its pipe, so no batch is committed after
the worker died and a restarted worker never races an orphaned committer (a transaction it had
open is rolled back when its connection drops).  SIGINT and SIGTERM are ignored here: the worker
handles them and then stops its committer in order.  Decisions committed but not yet published
when anything dies are relayed by the next run (step 1): at-least-once on the topic,
``(cluster, seq)`` identifies a decision.
"""

from __future__ import annotations

import asyncio
import collections
import ctypes
import gc
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING

from streams import batch_codec

if TYPE_CHECKING:
    import sqlalchemy as sa

    from replay.store.archive import Writes
    from streams.ingest_listener import BatchReport, IngestListener
    from streams.ingest_store import Commit, IngestStats

_STOP = b"stop"
_PART, _WHOLE = b"+", b"="
"""first byte of a message: more of the batch follows / the batch ends here (commit it)"""
MARK_AFTER_IDLE = 0.2
"""Seconds without a message after which published decisions are marked in a transaction of their own."""

_PR_SET_PDEATHSIG = 1


class CommitterError(RuntimeError):
    """The committer process failed (database or broker error) or died; the message says why."""


@dataclass(frozen=True)
class CommitterConfig:
    """What the committer process needs: the store, the progress key, and where to publish.

    Attributes:
        db_url: SQLAlchemy URL of the store.
        group / topic: ``ingest_offsets`` key of the worker's progress (consumer group, events topic).
        bootstrap: Kafka ``host:port`` list.
        decisions_topic: where decisions are published.
        publish: relay decisions (``False``: no producer, no outbox rows exist).
        max_record_bytes: the worker's record limit (sizes the producer's requests).
    """

    db_url: str
    group: str
    topic: str
    bootstrap: str
    decisions_topic: str
    publish: bool
    max_record_bytes: int


class Committer:
    """The worker's handle on its committer process (module docstring).

    ``submit`` sends a batch's transaction without waiting for it; at most ``depth`` messages are
    unacknowledged at a time (so at most that many batches are held in memory beyond the one
    being applied).  Counters land in ``stats`` (``streams.ingest_store.IngestStats``): ``batches``
    and ``seconds`` / ``cpu_seconds`` per acknowledged batch, ``published`` as reported by the
    process.  A batch submitted with a ``BatchReport`` is passed to ``listener.batch_committed``
    when acknowledged.
    """

    def __init__(self, config: CommitterConfig, stats: IngestStats, depth: int = 2,
                 listener: IngestListener | None = None) -> None:
        self.config = config
        self.stats = stats
        self.depth = depth
        self.listener = listener
        self.proc: subprocess.Popen | None = None
        self.to_child: Connection | None = None
        self.from_child: Connection | None = None
        self.waiting: collections.deque[tuple[tuple[float, float] | None, BatchReport | None, float]] = \
            collections.deque()
        """per unacknowledged message: when the run started (monotonic and process CPU time) when it
        holds a batch (else None), its report (if any) and when it was submitted (monotonic)"""
        self.sending: asyncio.Future | None = None
        self.sender = ThreadPoolExecutor(1, thread_name_prefix="committer-send")
        """not the loop's default executor: a send blocked on a stuck committer must not hold up the
        end of ``asyncio.run`` (``abandon`` unblocks it by ending the process)"""

    def start(self) -> None:
        """Start the process (call it from the thread that lives as long as the worker: on Linux the
        process is killed when that thread ends)."""
        down_r, down_w = os.pipe()
        up_r, up_w = os.pipe()
        self.proc = subprocess.Popen([sys.executable, "-m", "streams.committer", str(os.getpid()),
                                      str(down_r), str(up_w)], pass_fds=(down_r, up_w))
        os.close(down_r)
        os.close(up_w)
        self.to_child = Connection(down_w, readable=False)
        self.from_child = Connection(up_r, writable=False)
        self.to_child.send(self.config)

    async def submit(self, commit: Commit, started: tuple[float, float] | None,
                     report: BatchReport | None = None) -> None:
        """Queue ``commit`` (``streams.ingest_store.Commit``; its decisions are published after it
        is committed); ``started`` (``time.monotonic()`` and ``time.process_time()`` at the run's
        first record) marks a batch for the counters; ``report`` goes to the listener once
        committed, with ``commit_seconds`` = submit to acknowledgement.  Waits while ``depth``
        messages are unacknowledged.

        Raises:
            CommitterError: the process failed or died.
        """
        while len(self.waiting) >= self.depth:
            await self._receive()
        await self._sent()
        # encoded here, not in the sending thread: there it would contend for the GIL with the next batch
        data = batch_codec.encode(commit.writes, commit.offsets, _WHOLE)
        self.waiting.append((started, report, time.monotonic()))
        self.sending = asyncio.get_running_loop().run_in_executor(
            self.sender, self.to_child.send_bytes, data)  # type: ignore[union-attr]

    async def send_part(self, writes: Writes) -> None:
        """Send rows of the batch being applied ahead of its ``submit`` (written in the batch's
        transaction meanwhile; nothing is committed before ``submit``)."""
        await self._sent()
        data = batch_codec.encode(writes, [], _PART)
        self.sending = asyncio.get_running_loop().run_in_executor(
            self.sender, self.to_child.send_bytes, data)  # type: ignore[union-attr]

    async def settle(self) -> None:
        """Wait until every submitted transaction is committed.

        Raises:
            CommitterError: the process failed or died.
        """
        while self.waiting:
            await self._receive()

    async def close(self) -> None:
        """Ask the process to finish publishing and exit; wait for it.

        Raises:
            CommitterError: the process failed or died.
        """
        await self.settle()
        await self._sent()
        self.to_child.send_bytes(_STOP)  # type: ignore[union-attr]
        reply = await self._reply()
        self.stats.published = reply[1]
        await asyncio.to_thread(self.proc.wait)  # type: ignore[union-attr]

    def abandon(self) -> None:
        """End of a run (after ``close``, or instead of it after a failure): close the pipe (the
        process exits at end of file, committing nothing more than the messages it already read
        whole) and reap it, killing it after 10 s."""
        for conn in (self.to_child, self.from_child):
            if conn is not None and not conn.closed:
                conn.close()
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.sender.shutdown(wait=False)

    async def _sent(self) -> None:
        sending, self.sending = self.sending, None
        if sending is not None:
            try:
                await sending
            except OSError:
                raise CommitterError(self._died()) from None

    async def _receive(self) -> None:
        reply = await self._reply()
        started, report, submitted = self.waiting.popleft()
        self.stats.published = reply[1]
        if started is not None:
            self.stats.batches += 1
            self.stats.seconds = reply[2] - started[0]
            self.stats.cpu_seconds = time.process_time() - started[1]
        if report is not None and self.listener is not None:
            report.commit_seconds = reply[2] - submitted
            self.listener.batch_committed(report)

    async def _reply(self) -> tuple:
        try:
            reply = await asyncio.to_thread(self.from_child.recv)  # type: ignore[union-attr]
        except (EOFError, OSError):
            raise CommitterError(self._died()) from None
        if reply[0] == "error":
            raise CommitterError(reply[1])
        return reply

    def _died(self) -> str:
        code = self.proc.wait() if self.proc is not None else None
        return f"the committer process died (exit code {code})"


def _die_with_parent(parent: int) -> None:
    """Have the kernel kill this process when its parent ends (Linux); exit now if it already has."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


async def _serve(inbox: Connection, reply: Connection, config: CommitterConfig) -> None:
    """Steps 1-4 of the module docstring."""
    import time

    from replay.store.db import create_db_engine
    from streams import outbox
    from streams.ingest_store import Commit, write_commit, write_in

    db = create_db_engine(config.db_url)
    producer = None
    published = 0
    marks: list[outbox.Range] = []
    open_batch: sa.Connection | None = None
    """the connection whose transaction holds the parts of the batch being received"""
    rows: list[outbox.Unpublished] = []

    def commit(c: Commit) -> None:
        write_commit(db, config.group, config.topic, c)

    try:
        if config.publish:
            producer = outbox.decisions_producer(config.bootstrap, config.max_record_bytes)
            await producer.start()
            while True:
                with db.connect() as conn:
                    leftovers = outbox.unpublished(conn)
                if not leftovers:
                    break
                commit(Commit(await outbox.publish(producer, config.decisions_topic, leftovers), [], []))
                published += len(leftovers)
        while True:
            if marks and open_batch is None and not await asyncio.to_thread(inbox.poll, MARK_AFTER_IDLE):
                marks, done = [], marks
                commit(Commit(done, [], []))
                continue
            try:
                message = await asyncio.to_thread(inbox.recv_bytes)
            except EOFError:
                return  # the worker is gone: whatever it had not sent whole is not committed
            if message == _STOP:
                if marks:
                    commit(Commit(marks, [], []))
                reply.send(("done", published))
                return
            writes, offsets = batch_codec.decode(memoryview(message)[1:])
            whole = message[:1] == _WHOLE
            del message
            if producer is not None:
                rows += outbox.add_unpublished(writes)
            if open_batch is None:
                if whole:
                    commit(Commit(marks, writes, offsets))
                else:
                    open_batch = db.connect()
                    open_batch.begin()
                    write_in(open_batch, config.group, config.topic, Commit(marks, writes, offsets))
            else:
                write_in(open_batch, config.group, config.topic, Commit(marks, writes, offsets))
                if whole:
                    open_batch.commit()
                    open_batch.close()
                    open_batch = None
            marks = []
            del writes
            if not whole:
                continue
            reply.send(("ack", published, time.monotonic()))
            gc.collect(0)  # what the producer and the drivers leave in cycles; the rows are gone already
            if rows and producer is not None:
                marks.extend(await outbox.publish(producer, config.decisions_topic, rows))
                published += len(rows)
            rows = []
    except Exception as exc:  # noqa: BLE001 - reported to the worker, which exits non-zero
        reply.send(("error", _describe(exc, config.bootstrap)))
        raise SystemExit(1) from None
    finally:
        if open_batch is not None:
            open_batch.close()  # rolls the incomplete batch back
        if producer is not None:
            await producer.stop()
        db.dispose()


def _describe(exc: Exception, bootstrap: str) -> str:
    import sqlalchemy as sa
    from aiokafka.errors import KafkaError

    if isinstance(exc, sa.exc.SQLAlchemyError):
        return f"database error: {str(exc).splitlines()[0]}"
    if isinstance(exc, (KafkaError, OSError)):
        return f"Kafka error ({bootstrap}): {type(exc).__name__}: {exc}"
    return f"committer failed: {type(exc).__name__}: {exc}"


def main(argv: list[str]) -> None:
    """Entry point: ``python -m streams.committer PARENT_PID READ_FD WRITE_FD`` (started by ``Committer.start``)."""
    parent, read_fd, write_fd = (int(a) for a in argv[1:4])
    _die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    inbox = Connection(read_fd, writable=False)
    reply = Connection(write_fd, readable=False)
    config = inbox.recv()
    gc.freeze()  # the modules just imported are never garbage
    gc.disable()  # a batch's rows hold no cycles: freed by reference counting, see _serve
    asyncio.run(_serve(inbox, reply, config))


if __name__ == "__main__":
    main(sys.argv)
