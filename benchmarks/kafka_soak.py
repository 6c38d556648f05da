"""Crash soak of ``quotaledger ingest`` (20 kill -9 by default).

The same events are produced to two fresh topic prefixes.  One worker ingests the first into a
scratch PostgreSQL database without interruption.  For the second, ``--kills`` times (default 20), a
``quotaledger ingest`` subprocess is started and killed with SIGKILL at a random moment while it
works: ``--kill-after MIN,MAX`` seconds (uniform, seeded by ``--seed``) after its first commit, so
the kill lands mid-batch, mid-transaction or mid-publish rather than during start-up; a last worker
then runs to the end (``--exit-when-idle``).  The two databases are compared:

- every row of ``events``, ``decisions``, ``dead_letters`` and the projections (ids and the source
  topic name aside), and the periodic snapshots' hash chain values;
- ``verify`` of each store, and the final hash of both;
- the decisions topic of the killed run: every stored decision published at least once (a crash
  between publishing and marking the outbox may publish one again: counted and shown).

Prints the per-kill progress (records committed when each kill landed) and the verdict; exits 1 when
anything differs.

    .venv/bin/python benchmarks/kafka_soak.py                 # dev broker + local PostgreSQL
    .venv/bin/python benchmarks/kafka_soak.py --kills 20 --kill-after 0,0.4 --seed 7
"""

from __future__ import annotations

import argparse
import asyncio
import random
import subprocess
import time
from decimal import Decimal
from pathlib import Path

import orjson
import sqlalchemy as sa
from kafka_setup import add_common_arguments, broker, event_file, produce, quotaledger_exe, scratch_databases

from replay.verify import verify
from statemodel import sql_schema as s
from streams.devbroker import DEV_SESSION_TIMEOUT_MS
from streams.topics import Topics

COMPARED = (s.events, s.decisions, s.dead_letters, s.cohorts, s.cluster_queues, s.local_queues, s.quotas,
            s.workloads, s.fair_sharing)
SNAPSHOT_EVERY = 5000
"""Events of a cluster between periodic snapshots (small, so restarts restore from snapshots)."""
IGNORED_COLUMNS = {"id", "source"}
"""Autoincrement ids, and the dead letter's source (the topic name differs between the two runs)."""


def _json_default(value: object) -> str:
    if isinstance(value, Decimal):
        return str(value)
    return repr(value)


def table_rows(url: str) -> dict[str, list[bytes]]:
    """Every compared table of ``url`` as sorted canonical JSON rows.  JSON columns are compared as
    their stored text (the same database type stores the same input as the same text), so no JSON
    number is parsed: integers beyond 64 bits in a payload compare exactly, like everything else."""
    db = sa.create_engine(url, poolclass=sa.pool.NullPool)
    out: dict[str, list[bytes]] = {}
    try:
        with db.connect() as conn:
            for table in COMPARED:
                cols = [sa.cast(c, sa.Text).label(c.name) if isinstance(c.type, sa.JSON) else c
                        for c in table.c if c.name not in IGNORED_COLUMNS]
                out[table.name] = sorted(
                    orjson.dumps(dict(row._mapping), option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS,
                                 default=_json_default)
                    for row in conn.execute(sa.select(*cols)))
            snap = s.snapshots.c
            out["periodic snapshots"] = sorted(
                orjson.dumps([r.cluster, r.position, r.state_hash]) for r in conn.execute(
                    sa.select(snap.cluster, snap.position, snap.state_hash).where(snap.position % SNAPSHOT_EVERY == 0)))
    finally:
        db.dispose()
    return out


def committed(url: str) -> int:
    """Records committed so far (sum of the stored next offsets), 0 before the first commit."""
    db = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with db.connect() as conn:
            if not sa.inspect(conn).has_table("ingest_offsets"):
                return 0
            return int(conn.execute(sa.select(sa.func.coalesce(sa.func.sum(s.ingest_offsets.c.next_offset), 0))
                                    ).scalar_one())
    finally:
        db.dispose()


def published_decisions(bootstrap: str, topic: str) -> list[tuple[str, int]]:
    """``(cluster, seq)`` of every record of the decisions topic."""
    from aiokafka import AIOKafkaConsumer

    async def run() -> list[tuple[str, int]]:
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=None, auto_offset_reset="earliest",
                                    enable_auto_commit=False)
        await consumer.start()
        seen: list[tuple[str, int]] = []
        try:
            quiet = 0
            while quiet < 3:
                batch = await consumer.getmany(timeout_ms=1000, max_records=10_000)
                got = [orjson.loads(r.value) for recs in batch.values() for r in recs]
                seen += [(d["cluster"], d["seq"]) for d in got]
                quiet = 0 if got else quiet + 1
        finally:
            await consumer.stop()
        return seen

    return asyncio.run(run())


def wait_for_progress(proc: subprocess.Popen, url: str, before: int, total: int, log: Path) -> bool:
    """Wait until a restarted worker commits past ``before`` (True), or nothing is left (False)."""
    deadline = time.monotonic() + 120
    while before < total:
        if proc.poll() is not None:
            raise SystemExit(f"worker exited with {proc.returncode} before committing; log {log}")
        if committed(url) > before:
            return True
        if time.monotonic() > deadline:
            raise SystemExit(f"worker made no progress in 120 s; log {log}")
        time.sleep(0.02)
    return False


def worker_cmd(bootstrap: str, url: str, topics: Topics, args: argparse.Namespace, idle: float | None) -> list[str]:
    cmd = [quotaledger_exe(), "ingest", "--bootstrap", bootstrap, "--db", url, "--topic-prefix", topics.prefix,
           "--group", "soak", "--max-batch", str(args.max_batch), "--snapshot-every", str(SNAPSHOT_EVERY)]
    if args.bootstrap is None:
        cmd += ["--session-timeout-ms", str(DEV_SESSION_TIMEOUT_MS)]
    if idle is not None:
        cmd += ["--exit-when-idle", str(idle)]
    return cmd


def run_to_end(cmd: list[str], log: Path) -> None:
    with open(log, "ab") as out:
        done = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"worker exited with {done.returncode}; log {log}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_arguments(parser)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--kill-after", default="0,0.4",
                        help="MIN,MAX seconds after the restarted worker's first commit")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--max-batch", type=int, default=500, help="records per batch (small: more commits to land in)")
    args = parser.parse_args()
    lo, hi = (float(x) for x in args.kill_after.split(","))
    rnd = random.Random(args.seed)

    path = event_file(args)
    args.workdir.mkdir(parents=True, exist_ok=True)
    log = args.workdir / "kafka_soak.log"
    log.write_bytes(b"")
    print(f"events: {path}; worker logs: {log}")
    with broker(args.bootstrap) as bootstrap, scratch_databases(args.pg_admin, 2) as (calm_db, killed_db):
        calm_topics, n = produce(path, bootstrap, args.partitions)
        killed_topics, _ = produce(path, bootstrap, args.partitions)

        started = time.perf_counter()
        run_to_end(worker_cmd(bootstrap, calm_db, calm_topics, args, idle=3.0), log)
        print(f"uninterrupted run: {committed(calm_db)} of {n} records in {time.perf_counter() - started:.1f}s")

        mid_stream = 0
        done = 0
        for k in range(1, args.kills + 1):
            with open(log, "ab") as out:
                proc = subprocess.Popen(worker_cmd(bootstrap, killed_db, killed_topics, args, idle=None),
                                        stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
            resumed = wait_for_progress(proc, killed_db, done, n, log)
            delay = rnd.uniform(lo, hi)
            try:
                proc.wait(timeout=delay)
                raise SystemExit(f"worker exited by itself with {proc.returncode} before kill {k}; log {log}")
            except subprocess.TimeoutExpired:
                pass
            proc.kill()
            proc.wait()
            done = committed(killed_db)
            mid_stream += done < n
            print(f"kill {k:2d}: {delay:.2f}s after {'its first commit' if resumed else 'the end of the topic'}, "
                  f"{done} of {n} records committed")
        run_to_end(worker_cmd(bootstrap, killed_db, killed_topics, args, idle=3.0), log)
        print(f"after the last restart: {committed(killed_db)} of {n} records committed")

        calm, killed = table_rows(calm_db), table_rows(killed_db)
        differing = [name for name in calm if calm[name] != killed[name]]
        for name in calm:
            print(f"  {name:<20} {len(calm[name]):>8} rows  {'same' if name not in differing else 'DIFFERENT'}")
        calm_check, killed_check = verify(calm_db), verify(killed_db)
        print(f"  verify uninterrupted: {calm_check.summary()}")
        print(f"  verify killed:        {killed_check.summary()}")
        stored = len(killed["decisions"])
        published = published_decisions(bootstrap, killed_topics.decisions)
        distinct = set(published)
        print(f"  decisions topic of the killed run: {len(published)} records, {len(distinct)} distinct "
              f"(cluster, seq), {len(published) - len(distinct)} published twice, "
              f"{stored - len(distinct)} stored but never published")

    ok = (not differing and calm_check.ok and killed_check.ok and calm_check.hash == killed_check.hash
          and len(distinct) == stored)
    print(f"\n{args.kills} kill -9 ({mid_stream} while records were left), then a restart to the end: "
          + ("SAME SQL content and hash as the uninterrupted run: 0 lost, 0 duplicated" if ok else "DIFFERENT"))
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
