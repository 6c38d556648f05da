"""Ingest throughput next to its two bounds, in one run on the same events.

1. takes ``--events FILE`` or simulates ``--trace`` (default: the closed-loop DLRM simulation,
   ``quotaledger simulate --trace dlrm``) and produces it to a fresh topic (``--partitions``);
2. times, on that topic and file, in ``--rounds`` rounds (default 3):

   (a) **raw consume**: a plain aiokafka ``getmany`` loop + ``orjson.loads`` of every value;
   (b) **ingest**: ``streams.ingest.run_ingest`` into a scratch PostgreSQL database of its own per
       round (or ``--db`` with one round): decode, engine, one SQL transaction per batch with
       events, decisions, outbox, snapshots, projections and offsets (events/s and batches
       committed, as the worker counts them);
   (c) **engine only**: ``replay.runner.run_file`` of the same file (decode + validate + apply),
       once right before and once right after the round's ingest;

3. checks that every ingested store verifies and has the file replay's hash, and prints each
   round and the medians: ingest / engine-only (minimum 60 %), where a round's engine-only rate is
   the mean of its two passes (the machine's speed drifts by ±20 % over minutes on a shared 2-core
   VM: comparing passes made seconds apart keeps the drift out of the ratio), and ingest / raw
   (goal 50 %).

With ``--metrics`` every round runs the ingest four times, each into a scratch database of its own,
in the order without, with, with, without (the next round: with, without, without, with) — with
= the metrics and logs of ``quotaledger ingest --metrics-port --log-format json`` on
(``streams.ingest_metrics`` served on a local port and scraped by another process, as Prometheus does,
every ``--scrape-every`` seconds — default 15, deploy/prometheus/prometheus.yml's interval —,
``streams.ingest_log`` lines written to a file).  The symmetric order cancels the drift of the machine and the cost of
running second (measured: a pair's second run was 10 % slower whichever it was).  The speed
compared is the worker process's **CPU time per event** (``IngestStats.cpu_seconds``: every thread
of the process — engine, event loop, the metrics server answering the scrapes — from the first record to
the last commit; the committer process is the same in both): a run's wall time on a shared 2-core
VM moves by up to 45 % with what else runs, its CPU time much less.  A round's speed ratio is
mean CPU µs/event without / mean with; the verdict is the median of the rounds' ratios (minimum
95 %).  The wall-clock ratio (events/s with / without) is printed beside it for comparison.

Each rate counts from the first record to the last one handled (start-up and group join excluded).

    .venv/bin/python benchmarks/kafka_ingest.py                       # dev broker + local PostgreSQL
    .venv/bin/python benchmarks/kafka_ingest.py --bootstrap localhost:9092 --db postgresql+psycopg://… --rounds 1
    .venv/bin/python benchmarks/kafka_ingest.py --metrics                # also with metrics and logs on, paired
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
from kafka_setup import add_common_arguments, broker, event_file, produce, scratch_databases

from replay.runner import run_file
from replay.verify import verify
from streams.devbroker import DEV_SESSION_TIMEOUT_MS
from streams.ingest import DEFAULT_MAX_BATCH, run_ingest
from streams.ingest_listener import IngestListener, Listeners
from streams.ingest_log import IngestLog, configure
from streams.ingest_metrics import IngestMetrics, MetricsServer
from streams.topics import Topics

SCRAPE_EVERY = 15.0
"""Default seconds between scrapes of /metrics in a ``--metrics`` run: the ``scrape_interval`` of
deploy/prometheus/prometheus.yml (Prometheus' own default too)."""


class Timed(Listeners):
    """``Listeners`` that add up the CPU time the worker's threads spend in their calls (``spent``, seconds;
    ``time.thread_time`` of the calling thread: the serving of ``/metrics`` is not in it, only in the run's
    CPU time)."""

    def __init__(self, listeners: list[IngestListener]) -> None:
        super().__init__(listeners)
        self.spent = 0.0
        for name in ("partitions_assigned", "partitions_revoked", "partitions_checked", "restored", "dead_letter",
                     "batch_applied", "batch_committed"):
            setattr(self, name, self._timed(getattr(self, name)))

    def _timed(self, call):  # noqa: ANN001, ANN202 - a wrapper of any of the listener's methods
        def timed(*args: object) -> None:
            began = time.thread_time()
            try:
                call(*args)
            finally:
                self.spent += time.thread_time() - began
        return timed


SCRAPER = """
import sys, time, urllib.request
url, every = sys.argv[1], float(sys.argv[2])
while True:
    time.sleep(every)
    with urllib.request.urlopen(url, timeout=5) as response:
        response.read()
"""
"""The scraper: a process of its own, as Prometheus is (its side of a scrape is not the worker's cost)."""


@contextlib.contextmanager
def observed(log_path: Path, scrape_every: float) -> Iterator[Timed]:
    """The observers of ``quotaledger ingest --metrics-port 0 --log-format json``, the metrics served on
    a local port and scraped every ``scrape_every`` seconds meanwhile by another process, the log lines
    into ``log_path``."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    metrics = IngestMetrics()
    with log_path.open("w") as out:
        server = MetricsServer(metrics, "127.0.0.1", 0)
        server.start()
        scraper = subprocess.Popen([sys.executable, "-c", SCRAPER, f"http://127.0.0.1:{server.port}/metrics",
                                    str(scrape_every)])
        try:
            yield Timed([IngestLog(configure("json", out)), metrics])
        finally:
            scraper.terminate()
            scraper.wait()
            server.close()


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
    parser.add_argument("--db", help="SQLAlchemy URL for the ingest (default: a scratch PostgreSQL database per round)")
    parser.add_argument("--max-batch", type=int, default=DEFAULT_MAX_BATCH,
                        help="records per batch / SQL transaction (default: the worker's own)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of (engine, ingest, engine, raw) (default 3)")
    parser.add_argument("--metrics", action="store_true",
                        help="every round also ingests with metrics and logs on (paired, alternating order)")
    parser.add_argument("--scrape-every", type=float, default=SCRAPE_EVERY,
                        help=f"seconds between scrapes of /metrics with --metrics (default {SCRAPE_EVERY:g}: "
                             "the shipped Prometheus configuration's)")
    args = parser.parse_args()
    if args.db and args.rounds != 1:
        parser.error("--db takes --rounds 1 (every round needs an empty database)")
    if args.db and args.metrics:
        parser.error("--metrics needs two scratch databases per round: leave --db out")

    path = event_file(args)
    print(f"events: {path}")
    rounds: list[tuple[float, float, float, int]] = []
    """per round: (raw, ingest, engine-only) events/s and batches"""
    spent: list[float] = []
    """per ingest with metrics and logs: the share of its CPU time spent in the listeners' calls"""
    paired: list[float] = []
    """per round with ``--metrics``: CPU µs per event without / with metrics and logs (means of two each)"""
    paired_wall: list[float] = []
    """per round with ``--metrics``: ingest events/s with metrics and logs / without (means of two each)"""
    per_round = 4 if args.metrics else 1
    with (broker(args.bootstrap) as bootstrap,
          scratch_databases(args.pg_admin, 0 if args.db else args.rounds * per_round) as dbs):
        topics: Topics
        topics, n = produce(path, bootstrap, args.partitions)
        dev = {} if args.bootstrap else {"session_timeout_ms": DEV_SESSION_TIMEOUT_MS}
        all_dbs = dbs or [args.db]
        for i in range(len(all_dbs) // per_round):
            before = run_file(str(path))[1].events_per_second
            results: dict[bool, list] = {False: [], True: []}
            kinds = [False, True, True, False] if args.metrics else [False]
            for j, with_metrics in enumerate(kinds if i % 2 == 0 else [not k for k in kinds]):
                db = all_dbs[i * per_round + j]
                with (observed(args.workdir / f"kafka_ingest-round{i + 1}.log", args.scrape_every) if with_metrics
                      else contextlib.nullcontext()) as listener:
                    stats = run_ingest(bootstrap, db, topics=topics, max_batch=args.max_batch, exit_when_idle=2.0,
                                       group=f"bench-ingest-{i}-{int(with_metrics)}", listener=listener, **dev)
                if stats.consumed != n:
                    raise SystemExit(f"ingest consumed {stats.consumed} of {n} records")
                if listener is not None:
                    spent.append(listener.spent / stats.cpu_seconds)
                results[with_metrics].append((stats, db))
            engine, replayed = run_file(str(path))
            for stats, db in results[False] + results[True]:
                checked = verify(db)
                if not (checked.ok and checked.hash == engine.hash):
                    raise SystemExit(f"round {i + 1}: the store does not equal the file replay: {checked.summary()}")
            stats = results[False][0][0]
            if args.metrics:
                on, off = ([r[0].cpu_us_per_event for r in results[k]] for k in (True, False))
                paired.append(statistics.mean(off) / statistics.mean(on))
                on_wall, off_wall = ([r[0].events_per_second for r in results[k]] for k in (True, False))
                paired_wall.append(statistics.mean(on_wall) / statistics.mean(off_wall))
                print(f"  round {i + 1}: CPU per event with metrics and logs {' / '.join(f'{c:.1f}' for c in on)} µs, "
                      f"without {' / '.join(f'{c:.1f}' for c in off)} µs: speed {paired[-1]:.1%}; wall clock "
                      f"{' / '.join(f'{e:,.0f}' for e in on_wall)} against {' / '.join(f'{e:,.0f}' for e in off_wall)}"
                      f" events/s: {paired_wall[-1]:.1%}")
            raw = n / raw_consume(bootstrap, topics.events, n, args.max_batch)
            engine_eps = (before + replayed.events_per_second) / 2
            rounds.append((raw, stats.events_per_second, engine_eps, stats.batches))
            print(f"  round {i + 1}: (a) raw {raw:,.0f} events/s; (b) ingest {stats.summary()}; (c) engine only "
                  f"{before:,.0f} / {replayed.events_per_second:,.0f} events/s; ingest / engine-only "
                  f"{stats.events_per_second / engine_eps:.0%}; store verifies, same hash")

    raw_eps, ingest_eps, engine_eps = (statistics.median(r[k] for r in rounds) for k in range(3))
    ratio = statistics.median(r[1] / r[2] for r in rounds)
    print()
    print(f"{'path (median of ' + str(len(rounds)) + ' rounds)':<42} {'events/s':>10} {'vs engine':>10} {'vs raw':>8}")
    for name, eps in (("(a) raw aiokafka getmany + orjson", raw_eps),
                      (f"(b) ingest -> SQL ({rounds[0][3]} batches)", ingest_eps),
                      ("(c) engine only (file replay)", engine_eps)):
        print(f"{name:<42} {eps:>10,.0f} {eps / engine_eps:>10.0%} {eps / raw_eps:>8.0%}")
    minimum = "met" if ratio >= 0.6 else "NOT met"
    goal = "met" if ingest_eps >= 0.5 * raw_eps else "not met"
    if paired:
        verdict = "met" if statistics.median(paired) >= 0.95 else "NOT met"
        print(f"\ningest speed with metrics and logs / without, by CPU time per event: "
              f"{', '.join(f'{r:.1%}' for r in paired)}; median {statistics.median(paired):.1%} (minimum 95 %: "
              f"{verdict}); by wall clock: {', '.join(f'{r:.1%}' for r in paired_wall)}, median "
              f"{statistics.median(paired_wall):.1%}; the listeners' calls took "
              f"{', '.join(f'{s:.1%}' for s in spent)} of the CPU time of the runs with them")
    print(f"\n{n} events, {args.partitions} partitions; ingest / engine-only = {ratio:.0%} (median of the rounds' "
          f"ratios; minimum 60 %: {minimum}), ingest / raw = {ingest_eps / raw_eps:.0%} (goal 50 %: {goal})")


if __name__ == "__main__":
    main()
