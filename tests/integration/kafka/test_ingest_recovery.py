"""The ingest worker survives crashes and notices a broker reset (``quotaledger ingest`` as a
subprocess, as operators and the soak script run it).

- kill -9 at random moments (seeded), restart, until drained: the SQL store equals an
  uninterrupted run's — no event, decision or snapshot lost or doubled;
- a new, empty broker on the same port (the dev broker keeps its log in memory), or one whose log
  holds other records: the worker stops with the reset message and exit code 2.
"""

from __future__ import annotations

import asyncio
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import orjson
import sqlalchemy as sa

from replay.sql_sink import replay_to_db
from replay.verify import verify
from statemodel import sql_schema as s
from streams.admin import ensure_topics
from streams.devbroker import DEV_SESSION_TIMEOUT_MS, DevBroker
from streams.ingest import run_ingest
from streams.topics import Topics
from tests.ingesthelpers import (
    assert_outbox_published_every_decision,
    ON_POSTGRESQL,
    keyed,
    produce,
    read_topic,
    rows,
    store_content,
    trace_events,
    wait_for_group,
)
from tests.sqlhelpers import fresh_database
from tests.paths import ROOT

EXAMPLE = ROOT / "replay" / "examples" / "two-teams.ndjson"
SNAPSHOT_EVERY = 300
SNAPSHOT_EVERY_TIME = "6h"


def _cli(bootstrap: str, url: str, prefix: str, *extra: str) -> list[str]:
    return [sys.executable, "-c", "from quotaledger.cli import app; app()", "ingest", "--bootstrap", bootstrap,
            "--db", url, "--topic-prefix", prefix, "--session-timeout-ms", str(DEV_SESSION_TIMEOUT_MS), *extra]


def _progress(url: str) -> int:
    eng = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with eng.connect() as conn:
            return conn.execute(sa.select(sa.func.coalesce(sa.func.sum(s.ingest_offsets.c.next_offset), 0))
                                ).scalar_one()
    except sa.exc.ProgrammingError:  # the schema is not there yet
        return 0
    finally:
        eng.dispose()


@ON_POSTGRESQL
def test_kill_9_at_random_moments_loses_and_doubles_nothing(kafka_bootstrap: str, db: str, tmp_path: Path) -> None:
    lines = trace_events(tmp_path / "trace.ndjson")
    prefix = f"t{uuid.uuid4().hex[:10]}"
    produce(kafka_bootstrap, Topics(prefix).events, keyed(lines))
    options = ["--max-batch", "25", "--max-batch-bytes", "9000", "--snapshot-every", str(SNAPSHOT_EVERY), "--snapshot-every-time",
               SNAPSHOT_EVERY_TIME]

    with fresh_database("quotaledger_ref") as ref:  # the uninterrupted run, in its own consumer group and database
        reference = run_ingest(kafka_bootstrap, ref, topics=Topics(prefix), group="reference", max_batch=25,
                               snapshot_every=SNAPSHOT_EVERY, snapshot_every_ms=6 * 3_600_000, exit_when_idle=1.0,
                               session_timeout_ms=DEV_SESSION_TIMEOUT_MS, handle_signals=False, publish=False)
        expected = store_content(ref, drop_source=False)
    assert reference.consumed == len(lines)

    rng = random.Random(20261123)
    at = []
    for target in sorted(rng.sample(range(1, len(lines)), 6)):
        proc = subprocess.Popen(_cli(kafka_bootstrap, db, prefix, *options), stderr=subprocess.PIPE)
        while proc.poll() is None and _progress(db) < target:
            time.sleep(0.01)
        time.sleep(rng.uniform(0, 0.05))  # anywhere in the batch after the target: applying, committing, publishing
        if proc.poll() is None:
            proc.kill()
            at.append(_progress(db))
        proc.wait()
    assert len([p for p in at if p < len(lines)]) >= 5, at  # killed inside the stream, not after it

    final = subprocess.run(_cli(kafka_bootstrap, db, prefix, *options, "--exit-when-idle", "1"),
                           capture_output=True, text=True, timeout=120)
    assert final.returncode == 0, final.stderr
    assert "consumed" in final.stderr

    got = store_content(db, drop_source=False)
    for table in ("events", "decisions", "cohorts", "cluster_queues", "local_queues", "quotas", "workloads",
                  "fair_sharing"):
        assert got[table] == expected[table], table
    # periodic snapshots (every 300 events, every 6 h of event time) are those of the uninterrupted run;
    # a killed worker writes no shutdown snapshot, so only the final one may be missing
    assert set(got["snapshots"]) <= set(expected["snapshots"])
    last = {(c, p) for c, p, _ in expected["snapshots"] if p == len(lines)}
    assert {(c, p) for c, p, _ in expected["snapshots"]} - {(c, p) for c, p, _ in got["snapshots"]} <= last
    assert len(got["snapshots"]) > 5
    checked = verify(db)
    assert checked.ok, checked.summary()

    # decisions reach the topic at least once each, identical; repeats only from a kill before the mark
    decisions = rows(db, s.decisions)
    assert_outbox_published_every_decision(db)
    published = read_topic(kafka_bootstrap, Topics(prefix).decisions, len(decisions))
    by_seq = {(r.key.decode(), orjson.loads(r.value)["seq"]): orjson.loads(r.value) for r in published}
    assert by_seq == {(d["cluster"], d["seq"]): d["payload"] for d in decisions}


@ON_POSTGRESQL
def test_broker_reset_stops_the_worker(db: str) -> None:
    lines = [line for line in EXAMPLE.read_bytes().splitlines() if line.strip()]
    prefix = "reset"
    broker = DevBroker().start()
    try:
        produce(broker.bootstrap, Topics(prefix).events, keyed(lines))
        done = subprocess.run(_cli(broker.bootstrap, db, prefix, "--exit-when-idle", "0.5"), capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        broker.stop()
        broker = DevBroker(port=broker.port).start()  # same address, empty log

        empty = subprocess.run(_cli(broker.bootstrap, db, prefix, "--exit-when-idle", "0.5"), capture_output=True,
                               text=True, timeout=120)
        assert empty.returncode == 2, empty.stderr
        assert "broker reset detected on reset.events" in empty.stderr
        assert f"applied offsets up to {len(lines) - 1}, but the partition now ends at offset 0" in empty.stderr

        # a new log that is long enough but holds other records is caught by the id under the stored offset
        other = [orjson.dumps({**orjson.loads(line), "id": f"other-{n}"}) for n, line in enumerate(lines * 2)]
        produce(broker.bootstrap, Topics(prefix).events, keyed(other))
        different = subprocess.run(_cli(broker.bootstrap, db, prefix, "--exit-when-idle", "0.5"),
                                   capture_output=True, text=True, timeout=120)
        assert different.returncode == 2, different.stderr
        assert f"has id 'other-{len(lines) - 1}' where 'e-0039' was applied" in different.stderr
    finally:
        broker.stop()
    # nothing of the new logs reached the store
    assert len(rows(db, s.events)) == len(lines)


@ON_POSTGRESQL
def test_sigterm_finishes_the_batch_commits_and_snapshots(kafka_bootstrap: str, db: str) -> None:
    lines = [line for line in EXAMPLE.read_bytes().splitlines() if line.strip()]
    prefix = f"t{uuid.uuid4().hex[:10]}"
    produce(kafka_bootstrap, Topics(prefix).events, keyed(lines))
    proc = subprocess.Popen(_cli(kafka_bootstrap, db, prefix, "--max-batch", "1"), stderr=subprocess.PIPE, text=True)
    while proc.poll() is None and _progress(db) < 10:
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "ingest: consumed" in err
    stored = _progress(db)
    assert 10 <= stored < len(lines)
    # what was consumed is committed, and a snapshot covers exactly that
    assert len(rows(db, s.events)) == stored
    assert [(r["cluster"], r["position"]) for r in rows(db, s.snapshots)] == [("ml-east", stored)]

    done = subprocess.run(_cli(kafka_bootstrap, db, prefix, "--exit-when-idle", "0.5"), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"consumed {len(lines) - stored}," in done.stderr
    checked = verify(db)
    assert checked.ok and checked.events == len(lines), checked.summary()


@ON_POSTGRESQL
def test_two_workers_split_partitions_and_hand_clusters_over(kafka_bootstrap: str, db: str, tmp_path: Path) -> None:
    """Two workers of one group share the partitions; when one stops, the other takes its partitions
    over and continues its clusters from what the first committed (snapshot + archived tail)."""
    trace = trace_events(tmp_path / "trace.ndjson")
    example = [line for line in EXAMPLE.read_bytes().splitlines() if line.strip()]
    # with the default partitioner over 4 partitions: dlrm -> 3, ml-east -> 1, ml-north -> 0, ml-south -> 2,
    # so whichever partitions a worker is assigned, it has clusters to apply
    others = [[line.replace(b'"cluster":"ml-east"', b'"cluster":"' + name + b'"') for line in example]
              for name in (b"ml-north", b"ml-south")]
    streams = [trace, example, *others]
    everything = [line for lines in streams for line in lines]
    prefix = f"t{uuid.uuid4().hex[:10]}"
    options = ["--max-batch", "50", "--snapshot-every", "200", "--group", prefix]
    first = [line for lines in streams for line in lines[:len(lines) // 2]]
    second = [line for lines in streams for line in lines[len(lines) // 2:]]

    asyncio.run(ensure_topics(kafka_bootstrap, Topics(prefix), partitions=4))
    a = subprocess.Popen(_cli(kafka_bootstrap, db, prefix, *options), stderr=subprocess.PIPE, text=True)
    b = subprocess.Popen(_cli(kafka_bootstrap, db, prefix, *options), stderr=subprocess.PIPE, text=True)
    try:
        wait_for_group(kafka_bootstrap, prefix, 2)
        time.sleep(0.5)  # the assignment callbacks ran
        produce(kafka_bootstrap, Topics(prefix).events, keyed(first))
        deadline = time.monotonic() + 60
        while _progress(db) < len(first) and time.monotonic() < deadline:
            time.sleep(0.05)
        a.send_signal(signal.SIGTERM)
        _, a_err = a.communicate(timeout=60)
        assert a.returncode == 0, a_err
        produce(kafka_bootstrap, Topics(prefix).events, keyed(second))
        while _progress(db) < len(everything) and time.monotonic() < deadline:
            time.sleep(0.05)
        b.send_signal(signal.SIGTERM)
        _, b_err = b.communicate(timeout=60)
        assert b.returncode == 0, b_err
    finally:
        for proc in (a, b):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    consumed = [int(err.split("ingest: consumed ")[1].split(",")[0]) for err in (a_err, b_err)]
    assert sum(consumed) == len(everything) and min(consumed) > 0  # both worked, B also on A's clusters

    both = tmp_path / "all.ndjson"
    both.write_bytes(b"\n".join(everything) + b"\n")
    with fresh_database("quotaledger_ref") as ref:
        replay_to_db(str(both), ref, snapshot_every=200)
        expected = store_content(ref, drop_source=True)
    got = store_content(db, drop_source=True)
    for table in ("events", "decisions", "cohorts", "cluster_queues", "local_queues", "quotas", "workloads",
                  "fair_sharing"):
        assert got[table] == expected[table], table
    assert {x for x in expected["snapshots"] if x[1] % 200 == 0} <= set(got["snapshots"])
    checked = verify(db)
    assert checked.ok, checked.summary()
