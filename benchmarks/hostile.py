"""Hostile input at scale: about 100,000 hostile lines interleaved with a clean history, through every
channel, with the rates, the peak memory and the hash check.

The corpus is tests/hostile/corpus.py at ``BENCH_SCALE``: every category of the test corpus, about
325 rounds of the ordinary ones, the size categories once at full size (a 10 MB line, 100,000-level
nesting, a 1,000,000-event Batch, 100,000 podSets, 10,000 flavors, 1 MB ids and names, 5 MB Kafka
values), 10,000 distinct unknown clusters, and a clean history of the DLRM slice simulation in 8
clusters plus the edge section with a 100,000-deep cohort chain.

Channels, each run as a ``quotaledger`` child process, once on the clean history and once on the mix:

- ``file``: ``replay FILE --state-out``;
- ``sqlite`` / ``postgresql``: ``replay FILE --db URL --state-out`` into a fresh store;
- ``kafka/sqlite``, ``kafka/postgresql``: the records (keys, tombstones and binary values as they
  are) produced to a fresh topic, then ``ingest --exit-when-idle`` into a fresh store (its idle
  wait is not counted).

Printed per channel: lines/s of the clean run (its time less the start-up, measured by a run of
one line) and of the mix, the garbage rate (hostile lines over the extra time the mix took:
``hostile / (t_mix - t_clean)``) as a share of the clean rate (minimum 50 %), the peak RSS of the child and of the processes it starts (the ingest
committer), the largest of them (maximum 1 GB) and their largest sum (``Run``), the exit codes (0 crashes), whether the run ended
within ``--stall-after`` seconds (0 stalls) and whether the mix's state hash equals the clean
history's.  Then the table of categories x channels: the lines of each category and what each
channel did with them (``rejected`` / ``duplicate`` counts from the dead letters and the archive).

    .venv/bin/python benchmarks/hostile.py                    # dev broker, local PostgreSQL
    .venv/bin/python benchmarks/hostile.py --copies 20 --no-kafka   # a quick look
    .venv/bin/python benchmarks/hostile.py --channels file kafka/sqlite   # some channels (file always runs)
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import subprocess
import sys
import time
import uuid
from dataclasses import replace
from pathlib import Path

import orjson
import sqlalchemy as sa

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the corpus generator lives with the tests

from kafka_setup import PG_ADMIN_URL, broker, quotaledger_exe, scratch_databases  # noqa: E402

from statemodel import sql_schema as s  # noqa: E402
from streams.devbroker import DEV_SESSION_TIMEOUT_MS  # noqa: E402
from streams.topics import Topics  # noqa: E402
from tests.hostile.corpus import (  # noqa: E402
    APPLIED, BENCH_SCALE, CATEGORIES, DUPLICATE, EDGE_CATEGORIES, REJECTED, Line, build, simulation, write_file)

CHANNELS = ("file", "sqlite", "postgresql", "kafka/sqlite", "kafka/postgresql")

IDLE_S = 5.0
"""``ingest --exit-when-idle``: subtracted from the ingest's time."""


SAMPLE_S = 0.05
"""Seconds between two readings of the child processes' memory."""


def _descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (``/proc/PID/task/TID/children``), those still there."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        try:
            for tid in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{tid}/children") as children:
                    todo.extend(int(c) for c in children.read().split())
        except OSError:
            continue
    return found


def _memory(pid: int) -> tuple[int, int]:
    """``(VmHWM, VmRSS)`` of ``pid`` in bytes (``(0, 0)`` once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            fields = dict(line.split(":", 1) for line in status if line.startswith(("VmHWM", "VmRSS")))
        return int(fields["VmHWM"].split()[0]) * 1024, int(fields["VmRSS"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        return 0, 0


class Run:
    """One child process: its exit code, seconds, peak RSS (bytes), whether it stalled, and its stderr.

    ``rss`` is the largest peak (``VmHWM``) of the child and of the processes it started (the ingest
    committer), read every ``SAMPLE_S`` seconds while they run; ``tree_rss`` the largest sum of their
    resident sets at one reading.  Not ``ru_maxrss``: Linux keeps in it the peak of the address
    space an ``exec`` replaced, and ``subprocess`` starts a child by ``vfork`` + ``exec``, so a
    child's ``ru_maxrss`` is at least this benchmark's own peak (the corpus in memory, over 1 GB at
    full scale): a ``python -c pass`` started by a process holding 800 MiB reports 813 MiB.
    """

    def __init__(self, cmd: list[str], stall_after: float, idle: float = 0.0) -> None:
        err_path = Path(f"/tmp/quotaledger-hostile-{uuid.uuid4().hex[:8]}.err")
        self.rss = self.tree_rss = 0
        with err_path.open("wb") as err:
            started = time.perf_counter()
            child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
            self.stalled = False
            while True:
                readings = [_memory(p) for p in _descendants(child.pid)]
                self.rss = max([self.rss, *(hwm for hwm, _ in readings)])
                self.tree_rss = max(self.tree_rss, sum(rss for _, rss in readings))
                pid, status, _ = os.wait4(child.pid, os.WNOHANG)
                if pid:
                    break
                if time.perf_counter() - started > stall_after:
                    self.stalled = True
                    child.kill()
                    pid, status, _ = os.wait4(child.pid, 0)
                    break
                time.sleep(SAMPLE_S)
            self.seconds = max(time.perf_counter() - started - idle, 1e-9)
        self.code = os.waitstatus_to_exitcode(status)
        self.stderr = err_path.read_text(errors="replace")
        err_path.unlink()


def _hash(state_out: Path) -> str | None:
    try:
        return orjson.loads(state_out.read_bytes())["hash"]
    except (OSError, orjson.JSONDecodeError, KeyError):
        return None


def _store_hash(url: str) -> str | None:
    from replay.verify import verify

    result = verify(url)
    return result.hash if result.ok else None


def _outcomes(url: str, where: dict) -> collections.Counter:
    """``(category, outcome)`` counts from a store: dead letters, duplicate events."""
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    got: collections.Counter = collections.Counter()
    try:
        with engine.connect() as conn:
            for source, position in conn.execute(sa.select(s.dead_letters.c.source, s.dead_letters.c.source_position)):
                got[(where.get((source, position), ("?", ""))[0], REJECTED)] += 1
            for cluster, position in conn.execute(sa.select(s.events.c.cluster, s.events.c.source_position)
                                                  .where(s.events.c.status == DUPLICATE)):
                got[(where.get((cluster, position), ("?", ""))[0], DUPLICATE)] += 1
    finally:
        engine.dispose()
    return got


def _produce(bootstrap: str, topic: str, lines: list[Line]) -> list[tuple[int, int]]:
    from aiokafka import AIOKafkaProducer

    async def main() -> list[tuple[int, int]]:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=False, linger_ms=20,
                                    max_request_size=BENCH_SCALE.kafka_max + 2**20)
        await producer.start()
        try:
            sent = [await producer.send(topic, key=line.key, value=line.value) for line in lines]
            return [(meta.partition, meta.offset) for meta in await asyncio.gather(*sent)]
        finally:
            await producer.stop()

    return asyncio.run(main())


def _ingest(exe: str, bootstrap: str, lines: list[Line], url: str, stall_after: float
            ) -> tuple[Run, Topics, list[tuple[int, int]]]:
    """Produce ``lines`` to a fresh topic and ingest it into ``url``; the run, the topics, each line's
    ``(partition, offset)``."""
    topics = Topics(f"hostile{uuid.uuid4().hex[:8]}")
    positions = _produce(bootstrap, topics.events, lines)
    run = Run([exe, "ingest", "--bootstrap", bootstrap, "--db", url, "--topic-prefix", topics.prefix,
               "--session-timeout-ms", str(DEV_SESSION_TIMEOUT_MS), "--exit-when-idle", str(IDLE_S)], stall_after, IDLE_S)
    return run, topics, positions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=BENCH_SCALE.copies, help="rounds of the ordinary categories")
    parser.add_argument("--chain-depth", type=int, default=BENCH_SCALE.chain_depth,
                        help="depth of the edge section's cohort chain")
    parser.add_argument("--bootstrap", help="Kafka HOST:PORT (default: start the dev broker)")
    parser.add_argument("--pg-admin", default=PG_ADMIN_URL, help="PostgreSQL URL allowed to CREATE DATABASE")
    parser.add_argument("--no-kafka", action="store_true", help="leave the Kafka channels out")
    parser.add_argument("--channels", nargs="+", choices=CHANNELS, default=list(CHANNELS),
                        help="the channels to run (default: all)")
    parser.add_argument("--stall-after", type=float, default=900.0, help="seconds after which a run counts as stalled")
    parser.add_argument("--workdir", type=Path, default=Path("benchmarks/out/hostile"))
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    exe = quotaledger_exe()

    scale = replace(BENCH_SCALE, copies=args.copies, chain_depth=args.chain_depth)
    corpus = build(scale, simulation(args.workdir / "simulation.ndjson"))
    clean_path, mix_path = args.workdir / "clean.ndjson", args.workdir / "mix.ndjson"
    clean_lines = write_file(corpus.clean, clean_path)
    mix_lines = write_file(corpus.mix, mix_path)
    hostile_file = sum(1 for line in mix_lines if line.outcome != APPLIED)
    print(f"corpus: clean {len(clean_lines):,} lines, mix {len(mix_lines):,} lines in the file "
          f"({hostile_file:,} hostile, {mix_path.stat().st_size / 2**20:.0f} MiB), "
          f"{sum(1 for x in corpus.mix if x.kafka):,} records for Kafka")

    expected: collections.Counter = collections.Counter()
    for line in corpus.mix:
        if line.outcome != APPLIED:
            expected[line.category] += 1
    where_file = {(str(mix_path), n): (line.category, line.outcome) for n, line in enumerate(mix_lines, 1)}
    where_file.update({(line.key.decode(), n): (line.category, line.outcome) for n, line in enumerate(mix_lines, 1)
                       if line.outcome == DUPLICATE and line.key})

    one_path = args.workdir / "one.ndjson"
    write_file(corpus.clean[:1], one_path)
    results: list[tuple[str, float, Run, Run, int, bool]] = []
    table: dict[str, collections.Counter] = {}

    def report(name: str, startup: Run, clean: Run, mix: Run, hostile: int, same: bool) -> None:
        results.append((name, startup.seconds, clean, mix, hostile, same))
        print(f"  {name}: start-up {startup.seconds:.1f} s, clean {clean.seconds:.1f} s, mix {mix.seconds:.1f} s, "
              f"exit {clean.code}/{mix.code}, rss clean {clean.rss / 2**20:.0f} MiB, mix {mix.rss / 2**20:.0f} MiB "
              f"(process tree {max(clean.tree_rss, mix.tree_rss) / 2**20:.0f} MiB), "
              f"hash {'same' if same else 'DIFFERENT'}", flush=True)
        for run in (startup, clean, mix):
            if run.code or run.stalled:
                print("    " + "\n    ".join(run.stderr.splitlines()[-8:]), flush=True)

    print("file", flush=True)  # always: its run gives the clean history's hash
    startup = Run([exe, "replay", str(one_path)], args.stall_after)
    clean = Run([exe, "replay", str(clean_path), "--state-out", str(args.workdir / "clean.json")], args.stall_after)
    clean_hash = _hash(args.workdir / "clean.json")
    mix = Run([exe, "replay", str(mix_path), "--state-out", str(args.workdir / "mix.json")], args.stall_after)
    rejected = {int(x.split()[2]) for x in mix.stderr.splitlines() if x.startswith("rejected line ")}
    table["file"] = collections.Counter((mix_lines[n - 1].category, REJECTED) for n in rejected)
    duplicated = next(c.name for c in CATEGORIES if c.outcome == DUPLICATE)  # the only category of duplicates
    table["file"][(duplicated, DUPLICATE)] = orjson.loads((args.workdir / "mix.json").read_bytes())[
        "events"]["duplicates"] if mix.code == 0 else 0
    report("file", startup, clean, mix, hostile_file,
           clean_hash is not None and _hash(args.workdir / "mix.json") == clean_hash)

    with scratch_databases(args.pg_admin, 6) as pg:
        stores = {"sqlite": [f"sqlite:///{args.workdir / f'{k}-{uuid.uuid4().hex[:6]}.db'}" for k in "abcdef"],
                  "postgresql": pg}
        for kind, urls in stores.items():
            if kind not in args.channels:
                continue
            print(kind, flush=True)
            startup = Run([exe, "replay", str(one_path), "--db", urls[4]], args.stall_after)
            clean = Run([exe, "replay", str(clean_path), "--db", urls[0]], args.stall_after)
            mix = Run([exe, "replay", str(mix_path), "--db", urls[1]], args.stall_after)
            table[kind] = _outcomes(urls[1], where_file)
            report(kind, startup, clean, mix, hostile_file, _store_hash(urls[1]) == clean_hash)
        if not args.no_kafka and any(c.startswith("kafka/") for c in args.channels):
            with broker(args.bootstrap) as bootstrap:
                kafka_mix = [line for line in corpus.mix if line.kafka]
                for kind, urls in stores.items():
                    name = f"kafka/{kind}"
                    if name not in args.channels:
                        continue
                    print(name, flush=True)
                    startup, _, _ = _ingest(exe, bootstrap, corpus.clean[:1], urls[5], args.stall_after)
                    clean, _, _ = _ingest(exe, bootstrap, [x for x in corpus.clean if x.kafka], urls[2],
                                          args.stall_after)
                    mix, topics, positions = _ingest(exe, bootstrap, kafka_mix, urls[3], args.stall_after)
                    where = {(f"{topics.events}/{p}", o): (line.category, line.outcome)
                             for (p, o), line in zip(positions, kafka_mix)}
                    where.update({(line.key.decode(), o): (line.category, line.outcome)
                                  for (_, o), line in zip(positions, kafka_mix) if line.outcome == DUPLICATE and line.key})
                    table[name] = _outcomes(urls[3], where)
                    report(name, startup, clean, mix, sum(1 for x in kafka_mix if x.outcome != APPLIED),
                           _store_hash(urls[3]) == clean_hash)

    print("\n| channel | clean lines/s | mix lines/s | garbage lines/s | garbage / clean | peak RSS | process tree "
          "| exit codes | stalled | hash = clean |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- |")
    for name, startup_s, clean, mix, hostile, same in results:
        lines_clean = len(clean_lines)
        clean_rate = lines_clean / max(clean.seconds - startup_s, 1e-9)
        extra = mix.seconds - clean.seconds
        garbage = hostile / extra if extra > 0 else float("inf")
        print(f"| {name} | {clean_rate:,.0f} | {(lines_clean + hostile) / mix.seconds:,.0f} | {garbage:,.0f} | "
              f"{garbage / clean_rate:.0%} | {max(clean.rss, mix.rss) / 2**20:,.0f} MiB | "
              f"{max(clean.tree_rss, mix.tree_rss) / 2**20:,.0f} MiB | {clean.code}, {mix.code} | "
              f"{'yes' if clean.stalled or mix.stalled else 'no'} | {'yes' if same else 'NO'} |")

    channels = list(table)
    print("\n| category | lines | " + " | ".join(channels) + " |")
    print("| --- | ---: |" + " --- |" * len(channels))
    for category in [c.name for c in CATEGORIES]:
        outcome = next(c.outcome for c in CATEGORIES if c.name == category)
        cells = []
        for channel in channels:
            kafka = channel.startswith("kafka")
            want = sum(1 for x in corpus.mix if x.category == category and (x.kafka if kafka else x.file))
            got = table[channel][(category, outcome)]
            cells.append("n/a" if want == 0 else f"{outcome} {got}/{want}" + ("" if got == want else " MISMATCH"))
        print(f"| {category} | {expected[category]:,} | " + " | ".join(cells) + " |")
    for category in EDGE_CATEGORIES:
        print(f"| {category}: in the clean history | "
              f"{sum(1 for x in corpus.clean if x.category == category):,} | " + " | ".join(
                  "applied (hash = clean)" for _ in channels) + " |")


if __name__ == "__main__":
    main()
