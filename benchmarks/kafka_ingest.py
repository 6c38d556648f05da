"""Ingest throughput next to its two bounds, in one run on the same events (issue 5 "Must show").

1. takes ``--events FILE`` or simulates ``--trace`` (default: the closed-loop DLRM simulation,
   ``quotaledger simulate --trace dlrm``) and produces it to a fresh topic (``--partitions``);
2. times, on that topic and file:

   (a) **raw consume**: a plain aiokafka ``getmany`` loop + ``orjson.loads`` of every value;
   (b) **ingest**: ``streams.ingest.run_ingest`` into a scratch PostgreSQL database (or ``--db``):
       decode, engine, one SQL transaction per batch with events, decisions, snapshots,
       projections and offsets (events/s and batches committed, as the worker counts them);
   (c) **engine only**: ``replay.runner.run_file`` of the same file (decode + validate + apply),
       the better of two passes;

3. checks that the ingested store verifies and has the file replay's hash, and prints a table with
   the ratios: ingest / engine-only (minimum 60 %) and ingest / raw (goal 50 %).

Each rate counts from the first record to the last one handled (start-up and group join excluded).

    .venv/bin/python benchmarks/kafka_ingest.py                       # dev broker + local PostgreSQL
    .venv/bin/python benchmarks/kafka_ingest.py --bootstrap localhost:9092 --db postgresql+psycopg://…
"""

from __future__ import annotations

import argparse
import asyncio
import time

import orjson
from kafka_setup import add_common_arguments, broker, event_file, produce, scratch_databases

from replay.runner import run_file
from replay.verify import verify
from streams.devbroker import DEV_SESSION_TIMEOUT_MS
from streams.ingest import DEFAULT_MAX_BATCH, run_ingest
from streams.topics import Topics


def raw_consume(bootstrap: str, topic: str, expected: int, max_batch: int) -> float:
    """Seconds from the first record to the last of ``expected``, with a bare getmany + orjson loop."""
    from aiokafka import AIOKafkaConsumer

    async def run() -> float:
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                                    auto_offset_reset="earliest", max_partition_fetch_bytes=8 << 20,
                                    fetch_max_bytes=64 << 20)
        await consumer.start()
        try:
            seen, first = 0, None
            loads = orjson.loads
            while seen < expected:
                batch = await consumer.getmany(timeout_ms=1000, max_records=max_batch)
                if first is None and batch:
                    first = time.perf_counter()
                for records in batch.values():
                    for record in records:
                        loads(record.value)
                    seen += len(records)
            assert first is not None
            return time.perf_counter() - first
        finally:
            await consumer.stop()

    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_arguments(parser)
    parser.add_argument("--db", help="SQLAlchemy URL for the ingest (default: a scratch PostgreSQL database)")
    parser.add_argument("--max-batch", type=int, default=DEFAULT_MAX_BATCH,
                        help="records per batch / SQL transaction (default: the worker's own)")
    args = parser.parse_args()

    path = event_file(args)
    print(f"events: {path}")
    with broker(args.bootstrap) as bootstrap, scratch_databases(args.pg_admin, 0 if args.db else 1) as scratch:
        db = args.db or scratch[0]
        topics: Topics
        topics, n = produce(path, bootstrap, args.partitions)

        raw_s = raw_consume(bootstrap, topics.events, n, args.max_batch)
        print(f"  (a) raw consume + orjson: {n / raw_s:,.0f} events/s")

        dev = {} if args.bootstrap else {"session_timeout_ms": DEV_SESSION_TIMEOUT_MS}
        stats = run_ingest(bootstrap, db, topics=topics, max_batch=args.max_batch, exit_when_idle=2.0,
                           group="bench-ingest", **dev)
        print(f"  (b) ingest: {stats.summary()}")
        if stats.consumed != n:
            raise SystemExit(f"ingest consumed {stats.consumed} of {n} records")

        engine, replayed = max((run_file(str(path)) for _ in range(2)), key=lambda r: r[1].events_per_second)
        print(f"  (c) engine only (best of 2): {replayed.events_per_second:,.0f} events/s")

        checked = verify(db)
        same = checked.ok and checked.hash == engine.hash
        print(f"  store verifies and equals the file replay: {'yes' if same else 'NO: ' + checked.summary()}")

    ingest_eps, raw_eps, engine_eps = stats.events_per_second, n / raw_s, replayed.events_per_second
    print()
    print(f"{'path':<42} {'events/s':>10} {'vs engine':>10} {'vs raw':>8}")
    for name, eps in (("(a) raw aiokafka getmany + orjson", raw_eps),
                      (f"(b) ingest -> SQL ({stats.batches} batches)", ingest_eps),
                      ("(c) engine only (file replay)", engine_eps)):
        print(f"{name:<42} {eps:>10,.0f} {eps / engine_eps:>10.0%} {eps / raw_eps:>8.0%}")
    minimum = "met" if ingest_eps >= 0.6 * engine_eps else "NOT met"
    goal = "met" if ingest_eps >= 0.5 * raw_eps else "not met"
    print(f"\n{n} events, {args.partitions} partitions; ingest / engine-only = {ingest_eps / engine_eps:.0%} "
          f"(minimum 60 %: {minimum}), ingest / raw = {ingest_eps / raw_eps:.0%} (goal 50 %: {goal})")
    if not same:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
