"""The Kafka ingest worker (``quotaledger ingest``, streams/ingest.py) against the real broker and
the real PostgreSQL: end to end, bad input, and the restore path.

Fixtures ``kafka_bootstrap`` and ``postgres_url`` come from conftest.py; each test uses its own
topic prefix.  The broker is Tansu in dev runs, so the consumer group uses its short session timeout.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson

from replay.runner import run_file
from replay.sql_sink import replay_to_db
from replay.verify import verify
from statemodel import sql_schema as s
from streams.devbroker import DEV_SESSION_TIMEOUT_MS
from streams.ingest import IngestStats, run_ingest
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
)
from tests.sqlhelpers import fresh_database
from tests.paths import ROOT

EXAMPLE = ROOT / "replay" / "examples" / "two-teams.ndjson"


def _topics() -> Topics:
    return Topics(f"t{uuid.uuid4().hex[:10]}")


def _ingest(bootstrap: str, url: str, topics: Topics, **kw) -> IngestStats:
    kw.setdefault("exit_when_idle", 1.0)
    return run_ingest(bootstrap, url, topics=topics, session_timeout_ms=DEV_SESSION_TIMEOUT_MS,
                      handle_signals=False, **kw)


def _interleave(a: list, b: list) -> list:
    out = []
    for i in range(max(len(a), len(b))):
        out.extend(x[i] for x in (a, b) if i < len(x))
    return out


@contextmanager
def _reference_db(url: str, tmp_path: Path) -> Iterator[str]:
    """An empty database of the same kind as ``url`` for the reference run."""
    if url.startswith("sqlite"):
        yield f"sqlite:///{tmp_path / 'reference.db'}"
    else:
        with fresh_database("quotaledger_ref") as ref:
            yield ref


def test_trace_through_kafka_equals_file_replay(kafka_bootstrap: str, db: str, tmp_path: Path) -> None:
    trace = trace_events(tmp_path / "trace.ndjson")
    example = [line for line in EXAMPLE.read_bytes().splitlines() if line.strip()]
    both = tmp_path / "both.ndjson"
    both.write_bytes(b"\n".join(trace + example) + b"\n")
    topics = _topics()
    produce(kafka_bootstrap, topics.events, _interleave(keyed(trace), keyed(example)))

    # batches end at 97 records or 30,000 bytes (about 60 of these events), the rest of a fetch carried over
    stats = _ingest(kafka_bootstrap, db, topics, max_batch=97, max_batch_bytes=30_000, snapshot_every=400)
    engine, result = run_file(str(both))
    assert (stats.consumed, stats.applied, stats.rejected, stats.decisions) == (
        result.lines, result.applied, 0, result.decisions)
    assert stats.batches >= result.lines // 97

    with _reference_db(db, tmp_path) as ref:
        replay_to_db(str(both), ref, snapshot_every=400)
        expected = store_content(ref, drop_source=True)
    got = store_content(db, drop_source=True)
    for table in expected:
        assert got[table] == expected[table], table
    assert {(cluster, position) for cluster, position, _ in got["snapshots"]} >= {
        ("dlrm", 400), ("dlrm", 800), ("dlrm", 1200)}  # periodic ones, not only the final one
    checked = verify(db)
    assert checked.ok, checked.summary()
    assert checked.hash == engine.hash

    # source positions are the Kafka offsets; the outbox went out to the decisions topic, once each
    offsets = {r["source_position"] for r in rows(db, s.events)}
    assert len(offsets) <= stats.consumed and min(offsets) == 0
    published = read_topic(kafka_bootstrap, topics.decisions, stats.decisions)
    assert sorted((r.key.decode(), orjson.loads(r.value)["seq"]) for r in published) == sorted(
        (r["cluster"], r["seq"]) for r in rows(db, s.decisions))
    assert all(dict(r.headers)["cause"].decode() == orjson.loads(r.value)["cause"] for r in published)
    assert_outbox_published_every_decision(db)
    assert stats.published == stats.decisions

    # a second run finds nothing new: the SQL store is the progress record, nothing is applied twice
    again = _ingest(kafka_bootstrap, db, topics, exit_when_idle=0.5)
    assert (again.consumed, again.applied, again.published) == (0, 0, 0)
    assert store_content(db, drop_source=True) == got


# --------------------------------------------------------------------------- bad input

API = "kueue.x-k8s.io/v1beta2"
MAX_RECORD = 8192


def _hostile(rng: random.Random, valid: list[bytes], i: int) -> tuple[str, bytes | None, bytes | None]:
    """The ``i``-th hostile record: ``(what, key, value)``, every one invalid for the decoder."""
    base = orjson.loads(rng.choice(valid))
    evil = "x'); DROP TABLE events; --\"\\"
    ev = {"id": f"bad-{i}", "time": "2026-03-02T10:00:00Z", "cluster": "ml-east", "type": "Applied"}
    cq = {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": {}}
    kinds = [
        ("truncated JSON", lambda: orjson.dumps(base)[:rng.randint(1, len(orjson.dumps(base)) - 2)]),
        ("not JSON", lambda: f"hello {evil} {i}".encode()),
        ("id of the wrong type", lambda: orjson.dumps({**base, "id": i})),
        ("time of the wrong type", lambda: orjson.dumps({**base, "time": [i]})),
        ("unparsable time", lambda: orjson.dumps({**base, "time": f"yesterday {evil}"})),
        ("huge integer time", lambda: orjson.dumps(base).replace(b'"time":', b'"time":1' + b"0" * 30 + b',"t":', 1)),
        ("huge quota", lambda: orjson.dumps({**ev, "object": {**cq, "spec": {"resourceGroups": [
            {"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [
                {"name": "cpu", "nominalQuota": "9" * 40}]}]}]}}})),
        ("priority beyond int32", lambda: orjson.dumps({**ev, "object": {
            "apiVersion": API, "kind": "Workload", "metadata": {"namespace": "t", "name": f"w{i}"},
            "spec": {"queueName": "q", "priority": 2**40, "podSets": [
                {"name": "main", "count": 1, "requests": {"cpu": "1"}}]}}})),
        ("unknown kind", lambda: orjson.dumps({**ev, "object": {**cq, "kind": "BatchQueue"}})),
        ("unknown apiVersion", lambda: orjson.dumps({**ev, "object": {**cq, "apiVersion": f"evil/{evil}"}})),
        ("unknown type", lambda: orjson.dumps({**ev, "type": f"Exploded{evil}"})),
        ("quota of the wrong type with a hostile name", lambda: orjson.dumps({**ev, "object": {
            **cq, "metadata": {"name": evil}, "spec": {"resourceGroups": "all of them"}}})),
        ("workload without podSets and a hostile name", lambda: orjson.dumps({**ev, "object": {
            "apiVersion": API, "kind": "Workload", "metadata": {"namespace": evil, "name": evil},
            "spec": {"queueName": evil}}})),
        ("not UTF-8", lambda: orjson.dumps(base).replace(b'"id":"', b'"id":"\xff\xfe', 1)),
        ("oversized", lambda: orjson.dumps({**base, "pad": "x" * MAX_RECORD})),
        ("tombstone", lambda: None),
        ("a JSON array", lambda: orjson.dumps([base])),
        ("empty value", lambda: b""),
        ("batch with a bad inner event", lambda: orjson.dumps({**ev, "type": "Batch", "events": [
            {"id": f"in-{i}", "type": "Tick"}, {"id": f"in2-{i}", "type": "Applied", "object": {"kind": 7}}]})),
        ("cluster of the wrong type", lambda: orjson.dumps({**base, "cluster": {"name": evil}})),
    ]
    what, make = kinds[i % len(kinds)]
    key = [b"ml-east", None, b"\xff\xfe not utf-8", evil.encode()][i % 4 if i % 7 == 0 else 0]
    return what, key, make()


def _valid_hostile() -> list[bytes]:
    """Valid events that look hostile: a cohort cycle (it makes the tree inactive, the engine applies
    it), and quotes and SQL metacharacters where a valid event may carry them — the cluster name and a
    Workload's uid (stored verbatim through bound parameters; object names are Kubernetes names)."""
    cluster = "cycle'); DROP TABLE decisions; --"
    res = [{"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": "8"}]}]}]
    objs = [
        {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "f"}},
        {"apiVersion": API, "kind": "Cohort", "metadata": {"name": "a"}, "spec": {"parentName": "b"}},
        {"apiVersion": API, "kind": "Cohort", "metadata": {"name": "b"}, "spec": {"parentName": "a"}},
        {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": "team-x"},
         "spec": {"cohortName": "a", "resourceGroups": res}},
        {"apiVersion": API, "kind": "LocalQueue", "metadata": {"namespace": "ns", "name": "lq"},
         "spec": {"clusterQueue": "team-x"}},
        {"apiVersion": API, "kind": "Workload",
         "metadata": {"namespace": "ns", "name": "w", "uid": "w\";DELETE FROM events; --'"},
         "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "requests": {"cpu": "1"}}]}},
    ]
    return [orjson.dumps({"id": f"c{n}", "time": 1_700_000_000_000 + n, "cluster": cluster, "type": "Applied",
                          "object": obj}) for n, obj in enumerate(objs)]


@ON_POSTGRESQL
def test_hostile_records_are_dead_lettered_and_valid_ones_decide_as_alone(
        kafka_bootstrap: str, db: str, tmp_path: Path) -> None:
    rng = random.Random(1000)
    valid = [line for line in EXAMPLE.read_bytes().splitlines() if line.strip()]
    hostile = [_hostile(rng, valid, i) for i in range(1000)]
    records: list = []
    for n, (key, value) in enumerate(keyed(valid)):
        records.append((key, value))
        records.extend((k, v) for _, k, v in hostile[n * 1000 // len(valid):(n + 1) * 1000 // len(valid)])
    records.extend((b"cycle", v) for v in _valid_hostile())
    topics = _topics()
    produce(kafka_bootstrap, topics.events, records)

    stats = _ingest(kafka_bootstrap, db, topics, max_batch=113, max_record_bytes=MAX_RECORD)
    assert (stats.consumed, stats.rejected, stats.dead_letters) == (len(records), 1000, 1000)
    assert stats.applied == len(valid) + len(_valid_hostile())

    # every hostile record: a dead_letters row with its bytes and a reason, and a DLQ record saying where it was
    dead = rows(db, s.dead_letters)
    assert sorted(r["raw"] for r in dead) == sorted(v or b"" for _, _, v in hostile)
    assert all(r["reason"] and r["source"].startswith(topics.events + "/") for r in dead)
    dlq = read_topic(kafka_bootstrap, topics.dlq, 1000)
    assert len(dlq) == 1000
    headers = [dict(r.headers) for r in dlq]
    assert sorted((h["source_topic"].decode() + "/" + h["source_partition"].decode(), int(h["source_offset"]))
                  for h in headers) == sorted((r["source"], r["source_position"]) for r in dead)
    assert all(h["reason"] for h in headers)
    reasons = {h["reason"].decode() for h in headers}
    assert any(r.startswith("event too large: ") and r.endswith(" bytes, at most 8192") for r in reasons)
    assert any("not valid UTF-8" in r for r in reasons)
    assert any("tombstone" in r for r in reasons)
    assert any(h["field_path"] == b"object.kind" for h in headers)

    # the valid events decide exactly as they do alone
    clean = tmp_path / "clean.ndjson"
    clean.write_bytes(b"\n".join(valid) + b"\n")
    expected: list[dict] = []
    run_file(str(clean), on_decision=lambda d: expected.append(d.to_json()))
    got = [r["payload"] for r in rows(db, s.decisions, s.decisions.c.cluster == "ml-east")]
    assert got == expected and expected

    # the cohort cycle is applied, not dead-lettered: its tree is inactive and the workload waits
    cycle = "cycle'); DROP TABLE decisions; --"
    assert {r["name"]: r["active"] for r in rows(db, s.cohorts, s.cohorts.c.cluster == cycle)} == {
        "a": False, "b": False}
    assert [(r["name"], r["active"]) for r in rows(db, s.cluster_queues, s.cluster_queues.c.cluster == cycle)] == [
        ("team-x", False)]
    assert [(r["key"], r["status"]) for r in rows(db, s.workloads, s.workloads.c.cluster == cycle)] == [
        ("ns/w", "Pending")]
    assert not rows(db, s.decisions, s.decisions.c.cluster == cycle)
    checked = verify(db)
    assert checked.ok, checked.summary()
