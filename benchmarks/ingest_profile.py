"""Where the ingest worker's time goes, per event, without broker: the split behind docs/benchmarks.md
"Kafka ingest".

Reads an event file (``--events``, default the DLRM simulation of ``kafka_ingest.py``) into Kafka-like
records in memory, then, best of ``--passes``:

- **engine only**: decode + validate + apply of every line (what ``replay.runner.run_file`` does);
- **worker**: ``streams.ingest_store.IngestStore`` as the ingest worker drives it, batches of
  ``--max-batch`` records applied in parts as the worker splits them (``streams.ingest._parts``), timed as apply
  (decode, engine, archive rows), prepare (projections, offsets) and encode (``streams.batch_codec``,
  the hand-off to the committer);
- **committer** (with ``--pg``): the encoded messages decoded and written, one transaction per
  batch, into a scratch PostgreSQL database, as ``streams.committer`` does (``outbox`` ranges
  included), with the time per table and the committer's own CPU time.

    .venv/bin/python benchmarks/ingest_profile.py
    .venv/bin/python benchmarks/ingest_profile.py --events benchmarks/out/kueue-scale-1000.ndjson --pg
"""

from __future__ import annotations

import argparse
import collections
import gc
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import sqlalchemy as sa
from aiokafka import TopicPartition
from aiokafka.structs import ConsumerRecord
from kafka_setup import PG_ADMIN_URL, event_file, scratch_databases

import replay.store.archive as sql_archive
from replay.store.archive import ArchiveBatch
from replay.store.db import create_db_engine, upgrade_schema
from statemodel.engine import Engine
from statemodel.events.decode import decode_event
from streams import batch_codec, outbox
from streams.committer import _PART, _WHOLE
from streams.ingest import DEFAULT_MAX_BATCH, PARTS_PER_BATCH, _parts
from streams.ingest_store import Commit, IngestStats, IngestStore, write_in

TP = TopicPartition("events", 0)


def engine_only(lines: list[bytes]) -> float:
    """Seconds to decode and apply every line."""
    engine = Engine()
    start = time.perf_counter()
    for line in lines:
        engine.apply(decode_event(line))
    return time.perf_counter() - start


def worker(records: list[ConsumerRecord], max_batch: int, workdir: Path) -> tuple[dict[str, float], list[bytes]]:
    """Seconds of apply / prepare / encode over the whole stream, and the encoded messages."""
    path = workdir / f"worker-{time.monotonic_ns()}.db"
    db = create_db_engine(f"sqlite:///{path}")  # only read when a cluster is first seen (empty: fresh engine)
    upgrade_schema(f"sqlite:///{path}")
    store = IngestStore(db, TP.topic, "profile", ArchiveBatch(), 1_000_000, IngestStats())
    spent = dict.fromkeys(("apply", "prepare", "encode"), 0.0)
    messages = []
    for first in range(0, len(records), max_batch):
        for part, last in _parts({TP: records[first:first + max_batch]}, -(-max_batch // PARTS_PER_BATCH)):
            start = time.perf_counter()
            store.apply(part)
            spent["apply"] += time.perf_counter() - start
            if not last:
                start = time.perf_counter()
                messages.append(batch_codec.encode(store.take_part(), [], _PART))
                spent["encode"] += time.perf_counter() - start
        start = time.perf_counter()
        commit = store.prepare({TP.partition})
        spent["prepare"] += time.perf_counter() - start
        start = time.perf_counter()
        messages.append(batch_codec.encode(commit.writes, commit.offsets, _WHOLE))
        spent["encode"] += time.perf_counter() - start
    db.dispose()
    return spent, messages


def committer(messages: list[bytes], url: str) -> collections.Counter:
    """Seconds per step of writing ``messages`` as the committer does (``cpu`` = its own CPU time)."""
    spent: collections.Counter = collections.Counter()
    insert, delete = sql_archive.insert_rows, sql_archive.delete_keys

    def timed(name: str, fn: Callable[..., None]) -> Callable[..., None]:
        def call(conn: sa.Connection, table: sa.Table, rows: object) -> None:
            start = time.perf_counter()
            fn(conn, table, rows)
            spent[f"{name} {table.name}"] += time.perf_counter() - start
        return call

    sql_archive.insert_rows, sql_archive.delete_keys = timed("insert", insert), timed("delete", delete)
    upgrade_schema(url)
    db = create_db_engine(url)
    cpu = time.process_time()
    try:
        with db.connect() as conn:
            open_batch = False
            for message in messages:
                start = time.perf_counter()
                writes, offsets = batch_codec.decode(memoryview(message)[1:])
                outbox.add_unpublished(writes)
                spent["decode"] += time.perf_counter() - start
                if not open_batch:
                    conn.begin()
                    open_batch = True
                start = time.perf_counter()
                write_in(conn, "profile", TP.topic, Commit([], writes, offsets))
                if message[:1] == _WHOLE:
                    conn.commit()
                    open_batch = False
                spent["write"] += time.perf_counter() - start
    finally:
        sql_archive.insert_rows, sql_archive.delete_keys = insert, delete
        db.dispose()
    spent["cpu"] = time.process_time() - cpu
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=Path, help="event file (default: the DLRM simulation)")
    parser.add_argument("--trace", default="dlrm")
    parser.add_argument("--until")
    parser.add_argument("--workdir", type=Path, default=Path("benchmarks/out"))
    parser.add_argument("--max-batch", type=int, default=DEFAULT_MAX_BATCH)
    parser.add_argument("--passes", type=int, default=3, help="best of this many passes (default 3)")
    parser.add_argument("--pg", action="store_true", help="also time the committer's side into PostgreSQL")
    parser.add_argument("--pg-admin", default=PG_ADMIN_URL)
    args = parser.parse_args()
    path = event_file(args)
    lines = [line for line in path.read_bytes().splitlines() if line.strip()]
    records = [ConsumerRecord(TP.topic, TP.partition, i, 0, 0, b"", line, None, 0, len(line), [])
               for i, line in enumerate(lines)]
    n = len(lines)
    gc.collect()
    gc.freeze()
    gc.disable()  # as the file replay and the worker run
    with tempfile.TemporaryDirectory() as tmp:
        engine_s = min(engine_only(lines) for _ in range(args.passes))
        runs = [worker(records, args.max_batch, Path(tmp)) for _ in range(args.passes)]
    spent = {k: min(run[0][k] for run in runs) for k in runs[0][0]}
    total = sum(spent.values())
    print(f"{path}: {n} events, batches of {args.max_batch} in {PARTS_PER_BATCH} parts, best of {args.passes}")
    print(f"  engine only (decode + validate + apply) {engine_s * 1e6 / n:6.1f} µs/event")
    for name, seconds in spent.items():
        print(f"  worker {name:<33} {seconds * 1e6 / n:6.1f} µs/event")
    print(f"  worker total                          {total * 1e6 / n:6.1f} µs/event = ceiling "
          f"{engine_s / total:.0%} of the engine-only rate")
    messages = runs[0][1]
    print(f"  to the committer: {len(messages)} messages, {sum(map(len, messages)) / n:.0f} bytes/event")
    if args.pg:
        with scratch_databases(args.pg_admin, 1) as (url,):
            steps = committer(messages, url)
        for name, seconds in sorted(steps.items(), key=lambda kv: -kv[1]):
            if seconds * 1e6 / n >= 0.1:
                print(f"  committer {name:<30} {seconds * 1e6 / n:6.1f} µs/event")


if __name__ == "__main__":
    main()
