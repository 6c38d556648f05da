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

AT = "2026-03-02T09:00:30Z"
"""Within the example's time range, so a record that were accepted would change the hash."""


def _event(eid: str, obj: dict | None = None, etype: str = "Applied", cluster: str = "ml-east") -> bytes:
    event: dict = {"id": eid, "time": AT, "cluster": cluster, "type": etype}
    if obj is not None:
        event["object"] = obj
    return orjson.dumps(event)


def _workload(name: str, cpu: str) -> dict:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": {"namespace": "ns", "name": name},
            "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "requests": {"cpu": cpu}}]}}


def _cluster_queue(name: str, quota: str = "1", **spec: object) -> dict:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": {"resourceGroups": [{"coveredResources": ["memory"], "flavors": [
                {"name": "on-demand", "resources": [{"name": "memory", "nominalQuota": quota}]}]}], **spec}}


CONFIG = {"apiVersion": "quotaledger.io/v1alpha1", "kind": "EngineConfig", "metadata": {"name": "config"},
          "spec": {"admissionFairSharing": {"usageHalfLifeTime": "1" * 5000 + "h"}}}

POISONS: list[tuple[str, list[bytes]]] = [
    ("1: numbers of more than 4,300 digits", [
        _event("p-cpu", _workload("w-digits", "1" * 4301)),
        _event("p-mem", _cluster_queue("q-zeros", "0" * 4400 + "1")),
        _event("p-exp", _workload("w-exp", "1e" + "0" * 4400 + "1")),
        _event("p-weight", _cluster_queue("q-weight", fairSharing={"weight": "1" * 4301})),
        _event("p-half-life", CONFIG)]),
    ("2: NUL characters", [
        _event("p-nul-name", _workload("w\x00", "1")),
        _event("p-nul-id\x00"),
        _event("p-nul-type", etype="Ap\x00plied"),
        b'{"id":"p-nul-raw\x00","cluster":"ml-east"}']),
    ("3: long keys", [
        _event("i" * 3000),
        _event("p-long-cluster", etype="Tick", cluster="c" * 3000),
        _event("p-long-name", _workload("n" * 2700, "1"))]),
    ("4: an empty id, last committed", [_event("", etype="Tick")]),
    ("4: an oversized record, never parsed, last committed",
     [b'{"id":"p-big","cluster":"ml-east","type":"Tick","pad":"' + b"x" * (2 * MAX_RECORD) + b'"}']),
    ("5: 8,000 rejected records naming 8,000 unknown clusters",
     [_event(f"p-flood-{n}", etype="Nope", cluster=f"unknown-{n}") for n in range(8000)]),
    ("6: JSON numbers JSONB rewrites, in a valid event", [
        b'{"id":"p-num","time":"2026-03-02T09:00:40Z","cluster":"ml-east","type":"Tick","n":1e2,"z":-0.0}']),
]
"""Poison records of the store's and the worker's defects (the defect's number first), each group produced
as the last records before a restart: rejected with a reason naming the field (1: the quantity, weight or
duration; 2, 3: the name, id, cluster or type), or for 6 a valid event, applied with its numbers archived
as received."""
VALID = POISONS[-1][1]
REJECTED = [record for _, group in POISONS[:-1] for record in group]


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
        lines = [*CLEAN[n * step:(n + 1) * step], *poison]  # the poison is the last committed
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
    assert result.applied == len(CLEAN) + 1 and result.rejected == len(REJECTED)

    events = rows(db, s.events)
    assert sorted(orjson.loads(r["payload"] if isinstance(r["payload"], str) else orjson.dumps(r["payload"]))["id"]
                  for r in events if r["status"] == "applied") == sorted(
        orjson.loads(line)["id"] for line in [*CLEAN, *VALID])
    dead = rows(db, s.dead_letters)
    assert [d["raw"] for d in dead] == REJECTED
    assert all(d["reason"] for d in dead)
    reasons = {d["raw"]: (d["field_path"], d["reason"]) for d in dead}
    assert [reasons[r][0] for r in POISONS[0][1]] == [
        "object.spec.podSets[0].requests[cpu]", "object.spec.resourceGroups[0].flavors[0].resources[0].nominalQuota",
        "object.spec.podSets[0].requests[cpu]", "object.spec.fairSharing.weight",
        "object.spec.admissionFairSharing.usageHalfLifeTime"]
    assert [reasons[r][0] for r in POISONS[1][1]] == ["object.metadata.name", "id", "type", None]
    assert [reasons[r][0] for r in POISONS[2][1]] == ["id", "cluster", "object.metadata.name"]
    assert reasons[POISONS[3][1][0]][0] == "id"
    assert reasons[POISONS[4][1][0]][1] == f"event too large: {len(POISONS[4][1][0])} bytes, at most {MAX_RECORD}"
    assert {reasons[r][0] for r in POISONS[5][1]} == {"type"}
    checked = verify(db)
    assert checked.ok, checked.summary()
    assert checked.hash == engine.hash
    # the JSON numbers are archived as received
    (num,) = [r for r in rows(db, s.events) if r["event_id"] == "p-num"]
    exact = sa.select(sa.cast(s.events.c.payload, sa.Text)).where(s.events.c.event_id == "p-num")
    engine_db = sa.create_engine(db, poolclass=sa.pool.NullPool)
    try:
        with engine_db.connect() as conn:
            assert conn.execute(exact).scalar_one() == VALID[0].decode()
    finally:
        engine_db.dispose()
    assert num["status"] == "applied"
