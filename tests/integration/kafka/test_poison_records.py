"""The ingest worker (``quotaledger ingest`` as a subprocess, against the dev broker) carries on after
each poison record: produced between clean events, committed as the partition's LAST record, the
worker stopped (at idle, or killed with SIGKILL) and started again — the restart reports no broker
reset (the check compares the stored digest of that record's bytes, whatever they are), every
clean event is applied, every poison is a dead letter with a reason, and the hash chain equals the
file replay of the same lines.  On SQLite and on PostgreSQL.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import orjson
import pytest
import sqlalchemy as sa

from replay.runner import run_file
from replay.verify import verify
from statemodel import sql_schema as s
from streams.devbroker import DEV_SESSION_TIMEOUT_MS
from streams.topics import Topics
from tests.ingesthelpers import produce, rows
from tests.paths import EXAMPLE

MAX_RECORD = 8192

CLEAN = [line for line in EXAMPLE.read_bytes().splitlines() if line.strip()]

WORKLOAD = (b'{"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"Workload","metadata":{"namespace":"ns","name":"%s"},'
            b'"spec":{"queueName":"lq","podSets":[{"name":"main","count":1,"requests":{"cpu":"%s"}}]}}')

POISONS = [
    ("a quantity of 4,301 digits", b'{"id":"p-digits","time":"2026-03-02T09:00:30Z","cluster":"ml-east","type":"Nope",'
     b'"object":' + WORKLOAD % (b"w-digits", b"1" * 4301) + b"}"),
    ("NUL in a name", b'{"id":"p-nul","time":"2026-03-02T09:00:30Z","cluster":"ml-east","type":"Nope","object":'
     + WORKLOAD % (b"w\\u0000", b"1") + b"}"),
    ("a 3 kB id", b'{"id":"' + b"i" * 3000 + b'","time":"2026-03-02T09:00:30Z","cluster":"ml-east","type":"Nope"}'),
    ("an empty id", b'{"id":"","time":"2026-03-02T09:00:30Z","cluster":"ml-east","type":"Tick"}'),
    ("an oversized record", b'{"id":"p-big","cluster":"ml-east","type":"Tick","pad":"' + b"x" * (2 * MAX_RECORD) + b'"}'),
    ("JSON numbers JSONB rewrites",
     b'{"id":"p-num","time":"2026-03-02T09:00:40Z","cluster":"ml-east","type":"Tick","n":1e2,"z":-0.0}'),
]
"""Poison records of the store's and the worker's defects; the last one is a valid event (applied, its
numbers archived as received).  The first three carry their hostile content (a 4,301-digit quantity,
NUL in a name, a 3 kB id) in a record the decoder rejects at ``type``: what the decoder's own
validation makes of the same content in a valid envelope is tested with the decoder."""


def _cli(bootstrap: str, url: str, prefix: str, *extra: str) -> list[str]:
    return [sys.executable, "-c", "from quotaledger.cli import app; app()", "ingest", "--bootstrap", bootstrap,
            "--db", url, "--topic-prefix", prefix, "--session-timeout-ms", str(DEV_SESSION_TIMEOUT_MS),
            "--max-record-bytes", str(MAX_RECORD), "--snapshot-every", "7", *extra]


def _progress(url: str) -> int:
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            return conn.execute(sa.select(sa.func.coalesce(sa.func.sum(s.ingest_offsets.c.next_offset), 0))
                                ).scalar_one()
    except sa.exc.SQLAlchemyError:  # the schema is not there yet
        return 0
    finally:
        engine.dispose()


@pytest.mark.parametrize("db", ["sqlite", "postgresql"], indirect=True)
def test_the_worker_carries_on_after_each_poison_record(kafka_bootstrap: str, db: str, tmp_path: Path) -> None:
    prefix = f"t{uuid.uuid4().hex[:10]}"
    topic = Topics(prefix).events
    step = len(CLEAN) // (len(POISONS) + 1)
    produced: list[bytes] = []
    for n, (what, poison) in enumerate(POISONS):
        lines = [*CLEAN[n * step:(n + 1) * step], poison]  # the poison is the last record committed
        produce(kafka_bootstrap, topic, [(b"ml-east", line) for line in lines])
        produced += lines
        if n % 2:  # killed with SIGKILL once everything is committed
            proc = subprocess.Popen(_cli(kafka_bootstrap, db, prefix), stderr=subprocess.PIPE, text=True)
            deadline = time.monotonic() + 120
            while proc.poll() is None and _progress(db) < len(produced) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert proc.poll() is None, (what, proc.communicate()[1])
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        else:  # stopped at idle
            done = subprocess.run(_cli(kafka_bootstrap, db, prefix, "--exit-when-idle", "0.5"), capture_output=True,
                                  text=True, timeout=120)
            assert done.returncode == 0, (what, done.stderr)
        assert _progress(db) == len(produced), what
    tail = CLEAN[len(POISONS) * step:]
    produce(kafka_bootstrap, topic, [(b"ml-east", line) for line in tail])
    produced += tail
    final = subprocess.run(_cli(kafka_bootstrap, db, prefix, "--exit-when-idle", "0.5"), capture_output=True,
                           text=True, timeout=120)
    assert final.returncode == 0, final.stderr
    assert "broker reset" not in final.stderr

    history = tmp_path / "history.ndjson"
    history.write_bytes(b"\n".join(produced) + b"\n")
    engine, result = run_file(str(history))
    assert result.applied == len(CLEAN) + 1 and result.rejected == len(POISONS) - 1

    events = rows(db, s.events)
    assert sorted(orjson.loads(r["payload"] if isinstance(r["payload"], str) else orjson.dumps(r["payload"]))["id"]
                  for r in events if r["status"] == "applied") == sorted(
        orjson.loads(line)["id"] for line in [*CLEAN, POISONS[-1][1]])
    dead = rows(db, s.dead_letters)
    assert [d["raw"] for d in dead] == [poison for _, poison in POISONS[:-1]]
    assert all(d["reason"] for d in dead)
    checked = verify(db)
    assert checked.ok, checked.summary()
    assert checked.hash == engine.hash
    # the JSON numbers are archived as received
    (num,) = [r for r in rows(db, s.events) if r["event_id"] == "p-num"]
    exact = sa.select(sa.cast(s.events.c.payload, sa.Text)).where(s.events.c.event_id == "p-num")
    engine_db = sa.create_engine(db, poolclass=sa.pool.NullPool)
    try:
        with engine_db.connect() as conn:
            assert conn.execute(exact).scalar_one() == POISONS[-1][1].decode()
    finally:
        engine_db.dispose()
    assert num["status"] == "applied"
