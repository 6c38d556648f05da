"""The Kafka ingest worker (``quotaledger ingest``, streams/ingest.py) against the real broker and
the real PostgreSQL: end to end, bad input, and the restore path.

Fixtures ``kafka_bootstrap`` and ``postgres_url`` come from conftest.py; each test uses its own
topic prefix.  The broker is Tansu in dev runs, so the consumer group uses its short session timeout.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import orjson
import pytest
import sqlalchemy as sa
from alembic import command

from replay.runner import run_file
from replay.sql_sink import replay_to_db
from replay.verify import verify
from statemodel import sql_schema as s
from streams.devbroker import DEV_SESSION_TIMEOUT_MS
from streams.ingest import IngestStats, run_ingest
from streams.topics import Topics
from tests.ingesthelpers import (
    extra_pg_database,
    keyed,
    produce,
    read_topic,
    rows,
    store_content,
    trace_events,
)
from tests.sqlhelpers import alembic_config

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "replay" / "examples" / "two-teams.ndjson"


@pytest.fixture
def pg(postgres_url: str) -> str:
    """The run's PostgreSQL database, emptied (schema at base)."""
    command.downgrade(alembic_config(postgres_url), "base")
    return postgres_url


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


def test_trace_through_kafka_equals_file_replay(kafka_bootstrap: str, pg: str, tmp_path: Path) -> None:
    trace = trace_events(tmp_path / "trace.ndjson")
    example = [line for line in EXAMPLE.read_bytes().splitlines() if line.strip()]
    both = tmp_path / "both.ndjson"
    both.write_bytes(b"\n".join(trace + example) + b"\n")
    topics = _topics()
    produce(kafka_bootstrap, topics.events, _interleave(keyed(trace), keyed(example)))

    stats = _ingest(kafka_bootstrap, pg, topics, max_batch=97, snapshot_every=400)
    engine, result = run_file(str(both))
    assert (stats.consumed, stats.applied, stats.rejected, stats.decisions) == (
        result.lines, result.applied, 0, result.decisions)
    assert stats.batches >= result.lines // 97

    with extra_pg_database() as ref:
        replay_to_db(str(both), ref, snapshot_every=400)
        expected = store_content(ref, drop_source=True)
    got = store_content(pg, drop_source=True)
    for table in expected:
        assert got[table] == expected[table], table
    assert {(cluster, position) for cluster, position, _ in got["snapshots"]} >= {
        ("dlrm", 400), ("dlrm", 800), ("dlrm", 1200)}  # periodic ones, not only the final one
    checked = verify(pg)
    assert checked.ok, checked.summary()
    assert checked.hash == engine.hash

    # source positions are the Kafka offsets; the outbox went out to the decisions topic, once each
    offsets = {r["source_position"] for r in rows(pg, s.events)}
    assert len(offsets) <= stats.consumed and min(offsets) == 0
    published = read_topic(kafka_bootstrap, topics.decisions, stats.decisions)
    assert sorted((r.key.decode(), orjson.loads(r.value)["seq"]) for r in published) == sorted(
        (r["cluster"], r["seq"]) for r in rows(pg, s.decisions))
    assert all(dict(r.headers)["cause"].decode() == orjson.loads(r.value)["cause"] for r in published)
    assert all(r["published"] for r in rows(pg, s.outbox))
    assert stats.published == stats.decisions

    # a second run finds nothing new: the SQL store is the progress record, nothing is applied twice
    again = _ingest(kafka_bootstrap, pg, topics, exit_when_idle=0.5)
    assert (again.consumed, again.applied, again.published) == (0, 0, 0)
    assert store_content(pg, drop_source=True) == got
