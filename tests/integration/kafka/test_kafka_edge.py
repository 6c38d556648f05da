"""`quotaledger produce` and the `kafka://` event source, against a real broker (``kafka_bootstrap``).

- produce → consume keeps every line's bytes, keys each record by its cluster ("default" when the
  cluster cannot be read) and keeps each cluster's order within one partition;
- `replay`, `replay --db` and `verify` from a `kafka://` range give what they give from the file
  (SQLite and PostgreSQL through the ``db`` fixture); offset, partition and time bounds select the
  records they name;
- malformed `kafka://` URLs, a missing topic or partition, and an unreachable broker give a clear
  error naming the problem, not a traceback.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import orjson
import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from quotaledger.cli import app
from replay.sources import SourceError, open_records, parse_kafka_url
from replay.sql_sink import replay_to_db
from replay.verify import verify
from statemodel import sql_schema as s
from streams.devbroker import free_port
from tests.paths import ROOT

EXAMPLE = ROOT / "replay" / "examples" / "two-teams.ndjson"
CLUSTERS = ("ml-east", "ml-west", "batch-1", "batch-2", "edge")
HOSTILE = [
    b'{"id": "x-1", "time": "2026-03-02T09:17:00Z", "type": ',            # not JSON
    b'{"id": "x-2", "time": "2026-03-02T09:17:00Z", "cluster": 7, "type": "Tick"}',  # cluster not a string
    b'{"id": "x-3", "time": "2026-03-02T09:17:00Z", "type": "Tick"}',      # valid, no cluster: "default"
    b'[1, 2, 3]',                                                          # not an object
    '{"id": "x-4", "time": "2026-03-02T09:17:00Z", "cluster": "edge", "type": "Nope", "n": "é ✓"}'.encode(),
]
runner = CliRunner()


def _multi_cluster_lines() -> list[bytes]:
    """The shipped example once per cluster, interleaved round robin, with hostile lines among them."""
    per_cluster = []
    for cluster in CLUSTERS:
        rows = []
        for line in EXAMPLE.read_bytes().splitlines():
            event = orjson.loads(line)
            event["cluster"] = cluster
            rows.append(orjson.dumps(event))
        per_cluster.append(rows)
    lines = [row for group in zip(*per_cluster) for row in group]
    for i, bad in enumerate(HOSTILE):
        lines.insert(7 + 31 * i, bad)
    return lines


def _expected_key(line: bytes) -> bytes:
    """The key the brief asks for, computed here with the standard library."""
    try:
        obj = json.loads(line)
    except ValueError:
        return b"default"
    cluster = obj.get("cluster") if isinstance(obj, dict) else None
    return cluster.encode() if isinstance(cluster, str) and cluster else b"default"


def _consume_all(bootstrap: str, topic: str, expected: int) -> list:
    """Every record of ``topic`` (plain aiokafka, no quotaledger code), waiting for ``expected``."""
    from aiokafka import AIOKafkaConsumer

    async def run() -> list:
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                    enable_auto_commit=False, group_id=None)
        await consumer.start()
        records: list = []
        try:
            for _ in range(60):
                got = await consumer.getmany(timeout_ms=500)
                records += [r for recs in got.values() for r in recs]
                if len(records) >= expected:
                    break
        finally:
            await consumer.stop()
        return records

    return asyncio.run(run())


@pytest.fixture(scope="module")
def produced(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path, list[bytes]]:
    """``(events topic, file, lines)``: the multi-cluster file produced once with `quotaledger produce`."""
    lines = _multi_cluster_lines()
    path = tmp_path_factory.mktemp("produce") / "events.ndjson"
    # blank lines and CRLF endings are not events: they must not be produced
    path.write_bytes(b"\n".join(lines[:10]) + b"\n\n   \n" + b"\r\n".join(lines[10:]) + b"\r\n")
    prefix = f"t{uuid.uuid4().hex[:10]}"
    out = runner.invoke(app, ["produce", str(path), "--bootstrap", kafka_bootstrap, "--topic-prefix", prefix,
                              "--partitions", "3"])
    assert out.exit_code == 0, out.output
    assert f"produced {len(lines)} events" in out.output
    return f"{prefix}.events", path, lines


def test_produce_keeps_bytes_keys_and_per_cluster_order(kafka_bootstrap: str, produced) -> None:
    topic, _, lines = produced
    records = _consume_all(kafka_bootstrap, topic, len(lines))
    assert len(records) == len(lines)
    assert sorted(r.value for r in records) == sorted(lines)
    partition_of: dict[bytes, set[int]] = {}
    for r in records:
        assert r.key == _expected_key(r.value)
        partition_of.setdefault(r.key, set()).add(r.partition)
    assert all(len(parts) == 1 for parts in partition_of.values()), partition_of
    assert len({p for parts in partition_of.values() for p in parts}) > 1, "5 clusters all in one partition"
    for key in partition_of:
        in_topic = [r.value for r in sorted(records, key=lambda r: (r.partition, r.offset)) if r.key == key]
        assert in_topic == [line for line in lines if _expected_key(line) == key]


def test_produce_creates_the_three_topics(kafka_bootstrap: str, produced) -> None:
    from aiokafka import AIOKafkaConsumer

    prefix = produced[0].removesuffix(".events")

    async def topics() -> dict[str, int]:
        consumer = AIOKafkaConsumer(bootstrap_servers=kafka_bootstrap)
        await consumer.start()
        try:
            names = await consumer.topics()
            return {n: len(consumer.partitions_for_topic(n) or ()) for n in names if n.startswith(prefix)}
        finally:
            await consumer.stop()

    assert asyncio.run(topics()) == {f"{prefix}.events": 3, f"{prefix}.decisions": 3, f"{prefix}.events.dlq": 3}


def _cli_replay(source: str, tmp_path: Path, name: str) -> tuple[str, list[dict], dict]:
    d, st = tmp_path / f"{name}-d.ndjson", tmp_path / f"{name}-s.json"
    out = runner.invoke(app, ["replay", source, "--decisions-out", str(d), "--state-out", str(st)])
    assert out.exit_code == 0, out.output
    return out.stderr, [orjson.loads(x) for x in d.read_bytes().splitlines()], orjson.loads(st.read_bytes())


def test_replay_from_kafka_equals_replay_from_file(kafka_bootstrap: str, produced, tmp_path: Path) -> None:
    topic, path, _ = produced
    file_err, file_decisions, file_state = _cli_replay(str(path), tmp_path, "file")
    kafka_err, kafka_decisions, kafka_state = _cli_replay(f"kafka://{kafka_bootstrap}/{topic}", tmp_path, "kafka")
    assert kafka_state == file_state
    assert kafka_state["events"] == {"applied": 39 * len(CLUSTERS) + 1, "rejected": len(HOSTILE) - 1, "duplicates": 0}
    # partitions are read one after the other, so clusters interleave differently; each cluster's
    # decisions are the same, in the same order
    assert len(kafka_decisions) == len(file_decisions) > 0
    for cluster in CLUSTERS:
        from_kafka = [d for d in kafka_decisions if d["cluster"] == cluster]
        assert from_kafka == [d for d in file_decisions if d["cluster"] == cluster] != []
    assert file_err.count("rejected line") == kafka_err.count("rejected offset") == len(HOSTILE) - 1


def test_replay_db_and_verify_from_kafka(kafka_bootstrap: str, produced, db: str, tmp_path: Path) -> None:
    topic, path, _ = produced
    url = f"kafka://{kafka_bootstrap}/{topic}"
    engine, result = replay_to_db(url, db, batch_size=50, snapshot_every=40)
    file_db = f"sqlite:///{tmp_path / 'file.db'}"
    file_engine, _ = replay_to_db(str(path), file_db, batch_size=50, snapshot_every=40)
    assert engine.hash == file_engine.hash
    assert result.lines == 39 * len(CLUSTERS) + len(HOSTILE)

    def content(url: str) -> dict[str, list]:
        eng = sa.create_engine(url, poolclass=sa.pool.NullPool)
        e, d, sn = s.events.c, s.decisions.c, s.snapshots.c
        try:
            with eng.connect() as conn:
                return {
                    "events": [tuple(r) for r in conn.execute(sa.select(
                        e.cluster, e.position, e.event_id, e.status, e.reason, e.payload
                    ).order_by(e.cluster, e.position))],
                    "decisions": [(r.cluster, r.seq, r.cause_position,
                                   orjson.dumps(r.payload, option=orjson.OPT_SORT_KEYS))
                                  for r in conn.execute(sa.select(s.decisions).order_by(d.cluster, d.seq))],
                    "snapshots": [tuple(r) for r in conn.execute(sa.select(
                        sn.cluster, sn.position, sn.state_hash).order_by(sn.cluster, sn.position))],
                    "offsets": sorted(r[0] for r in conn.execute(sa.select(e.source_position))),
                }
        finally:
            eng.dispose()

    from_kafka, from_file = content(db), content(file_db)
    for table in ("events", "decisions", "snapshots"):
        assert from_kafka[table] == from_file[table], table
    assert len(from_kafka["snapshots"]) > len(CLUSTERS)  # periodic ones too
    # source positions are Kafka offsets: 0..n-1 in each partition
    assert from_kafka["offsets"][0] == 0 and max(from_kafka["offsets"]) < result.lines

    assert verify(db).ok
    checked = verify(db, url)
    assert checked.ok, checked.summary()
    assert checked.hash == engine.hash
    assert verify(file_db, url).ok

    # a SOURCE that differs from the store is caught: one cluster's partition alone misses the others
    partition = min(r.partition for r in _consume_all(kafka_bootstrap, topic, result.lines))
    partial = verify(db, f"{url}?partition={partition}")
    assert not partial.ok and "not in SOURCE" in partial.summary()


def test_offset_partition_and_time_bounds(kafka_bootstrap: str, produced) -> None:
    topic, _, lines = produced
    raw = _consume_all(kafka_bootstrap, topic, len(lines))
    base = f"kafka://{kafka_bootstrap}/{topic}"
    busiest = max({r.partition for r in raw}, key=lambda p: sum(r.partition == p for r in raw))
    in_partition = sorted((r.offset, r.value) for r in raw if r.partition == busiest)

    with open_records(f"{base}?partition={busiest}&from=3&to=11") as records:
        assert list(records) == [(o, v) for o, v in in_partition if 3 <= o < 11]
    with open_records(f"{base}?partition={busiest}&from=5") as records:
        assert list(records) == in_partition[5:]
    with open_records(base) as records:
        everything = list(records)
    assert sorted(v for _, v in everything) == sorted(lines)

    newest = max(r.timestamp for r in raw)
    with open_records(f"{base}?from=@{newest + 1}") as records:
        assert list(records) == []
    with open_records(f"{base}?to=9999-01-01T00:00:00Z&from=@0") as records:
        assert len(list(records)) == len(lines)
    with open_records(f"{base}?to=@{newest}") as records:
        assert len(list(records)) == sum(r.timestamp < newest for r in raw)


@pytest.mark.parametrize(("url", "problem"), [
    ("kafka://", "no broker given"),
    ("kafka://localhost/t", "must be HOST:PORT"),
    ("kafka://localhost:99999/t", "no valid port"),
    ("kafka://localhost:x/t", "no valid port"),
    ("kafka://localhost:\u00b2/t", "no valid port"),
    ("kafka://localhost:9092", "no topic"),
    ("kafka://localhost:9092/", "no topic"),
    ("kafka://localhost:9092/a/b", "not a valid Kafka topic name"),
    ("kafka://localhost:9092/t?form=3", "unknown parameter 'form'"),
    ("kafka://localhost:9092/t?from=1&from=2", "'from' given twice"),
    ("kafka://localhost:9092/t?from=-4", "from='-4' is not an offset"),
    ("kafka://localhost:9092/t?to=yesterday", "to='yesterday' is not an offset"),
    ("kafka://localhost:9092/t?from=10&to=3", "from offset 10 is after to offset 3"),
    ("kafka://localhost:9092/t?from=@20&to=@10", "from time is not before to time"),
    ("kafka://localhost:9092/t?partition=x", "partition='x' must be an integer"),
    ("kafka://localhost:9092/t#p1", "unexpected '#p1'"),
])
def test_bad_kafka_urls_are_clear_errors(url: str, problem: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("QUOTALEDGER_BOOTSTRAP", raising=False)
    with pytest.raises(SourceError, match=problem.replace("(", r"\(")):
        parse_kafka_url(url)
    out = runner.invoke(app, ["replay", url])
    assert out.exit_code == 1
    assert problem in out.stderr and "Traceback" not in out.output


def test_valid_urls_parse() -> None:
    rng = parse_kafka_url("kafka://a:1,b:2/quotaledger.events?from=2026-03-01T00:00:00Z&to=17&partition=2")
    assert (rng.bootstrap, rng.topic, rng.partition, rng.from_offset, rng.to_offset, rng.from_ms, rng.to_ms) == (
        "a:1,b:2", "quotaledger.events", 2, None, 17, 1772323200000, None)
    assert parse_kafka_url("kafka://h:9/t?from=@5").from_ms == 5


def test_missing_topic_partition_and_broker_are_clear_errors(kafka_bootstrap: str, produced, db: str) -> None:
    topic = produced[0]
    assert runner.invoke(app, ["db", "upgrade", "--db", db]).exit_code == 0
    cases = [
        (f"kafka://{kafka_bootstrap}/no-such-topic", "topic 'no-such-topic' does not exist"),
        (f"kafka://{kafka_bootstrap}/{topic}?partition=99", "has no partition 99"),
        (f"kafka://127.0.0.1:{free_port()}/{topic}", "cannot read Kafka at 127.0.0.1:"),
    ]
    for url, problem in cases:
        for args in (["replay", url], ["state", url], ["replay", url, "--db", db], ["verify", url, "--db", db]):
            out = runner.invoke(app, args)
            assert out.exit_code in (1, 2), (args, out.output)
            assert problem in out.stderr, (args, out.stderr)


def test_produce_from_stdin_reports_lines_too_large(kafka_bootstrap: str) -> None:
    small = [b'{"id": "s-1", "time": 1, "type": "Tick"}', b'{"id": "s-2", "time": 2, "type": "Tick"}']
    huge = b'{"id": "big", "time": 3, "type": "Tick", "pad": "' + b"x" * 3000 + b'"}'
    prefix = f"t{uuid.uuid4().hex[:10]}"
    out = runner.invoke(app, ["produce", "-", "--bootstrap", kafka_bootstrap, "--topic-prefix", prefix,
                              "--partitions", "1", "--max-message-bytes", "2048"],
                        input=b"\n".join([small[0], huge, small[1]]) + b"\n")
    assert out.exit_code == 1
    assert "not produced: line 2 is longer than --max-message-bytes 2048" in out.stderr
    assert "produced 2 events" in out.stdout and "1 lines over the size limit NOT produced" in out.stdout
    records = _consume_all(kafka_bootstrap, f"{prefix}.events", 2)
    assert [(r.key, r.value) for r in sorted(records, key=lambda r: r.offset)] == [(b"default", v) for v in small]
