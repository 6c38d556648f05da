"""Hostile input in the SQL store, on SQLite and PostgreSQL: one rule for both.

- a rejected record's exact bytes (NUL, invalid UTF-8; of a 10 MB one the first 64 KiB, on every
  channel) are kept in ``dead_letters.raw``; its
  id, type, reason and field path are stored NUL-free and bounded, so 1 MB and 3 kB ids never reach
  a btree index, and both databases hold identical rows;
- a rejected record joins a cluster's ``events`` only when that cluster has state, so a flood of
  records naming thousands of unknown clusters creates no per-cluster state (no restore, no engine,
  no rows keyed by those names), in the file replay and in the ingest worker's store;
- JSON numbers PostgreSQL's JSONB would normalise (``1e2``, ``-0.0``) are archived as received:
  ``verify`` and a restarted worker reproduce the file replay's hash chain;
- ``replay --replace`` and a failed run's cleanup delete the dead letters naming no cluster too.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
import sqlalchemy as sa
from aiokafka.structs import ConsumerRecord, TopicPartition

from replay.runner import run_file
from replay.sql_sink import replay_to_db
from replay.store.archive import ArchiveBatch
from replay.store.db import SinkError, create_db_engine, upgrade_schema
from replay.store.sanitize import OVERSIZED_RAW_BYTES
from replay.verify import verify
from statemodel import sql_schema as s
from statemodel.driver import Driver
from statemodel.limits import MAX_EVENT_BYTES
from streams.codec import DEFAULT_MAX_RECORD_BYTES
from streams.ingest_store import IngestStats, IngestStore
from tests.paths import EXAMPLE

CLEAN = [line for line in EXAMPLE.read_bytes().splitlines() if line.strip()]
"""The shipped example: 39 events of cluster ``ml-east``."""

TICK = (b'{"id":"tick-num","time":"2026-03-02T12:00:00Z","cluster":"ml-east","type":"Tick",'
        b'"note":1e2,"zero":-0.0,"big":18446744073709551616}')
"""A valid event with numbers JSONB would rewrite (extra envelope fields are kept in the canonical form)."""

HOSTILE = [
    b'{"id":"nul-raw\x00","cluster":"ml-east"}',  # a raw NUL: not JSON
    b'{"id":"t-nul","time":"2026-03-02T09:00:05Z","cluster":"ml-east","type":"Ap\\u0000plied"}',
    b'{"id":"a\\u0000b","cluster":"ml-east","type":"Nope"}',
    b'\xff\xfe{"id":"bom"}',  # not UTF-8
    b'{"id":"' + b"i" * 3000 + b'","cluster":"ml-east","type":"Nope"}',
    b'{"id":"' + b"j" * 1_000_000 + b'","cluster":"ml-east","type":"Nope"}',
    b'{"id":"k","cluster":"' + b"c" * 3000 + b'","type":"Nope"}',  # a cluster without state
    b'{"id":"l","cluster":"x\\u0000y","type":"Nope"}',
    b'{"id":"huge","pad":"' + b"z" * 10_000_000,  # 10 MB, cut short
    b'{"id":"num-bad","cluster":"ml-east","type":"Nope","n":1e2,"z":-0.0}',
]
JOINED = {1: ("t-nul", "Ap\ufffdplied", None), 2: (None, "Nope", None),
          4: (None, "Nope", HOSTILE[4].decode()), 5: (None, "Nope", HOSTILE[5].decode()),
          9: ("num-bad", "Nope", HOSTILE[9].decode())}
"""Index in ``HOSTILE`` -> (event_id, type, payload text) of the ``events`` row of those that name
``ml-east`` (which has state by then): an id that is not a valid id (NUL, over 253 bytes) is the
rejection itself and is not stored; types NUL-free and cut to 253 characters; no payload text holding
``\\u0000``.  The others name no cluster with state: dead letters only."""

AT = 5
"""The hostile lines follow the fifth clean line; the Tick follows the last."""


def _kept(raw: bytes) -> bytes:
    """What ``dead_letters.raw`` holds of a rejected record: its bytes, the first 64 KiB of one over the
    event size limit."""
    return raw if len(raw) <= MAX_EVENT_BYTES else raw[:OVERSIZED_RAW_BYTES]


def _history(path: Path) -> list[bytes]:
    lines = [*CLEAN[:AT], *HOSTILE, *CLEAN[AT:], TICK]
    path.write_bytes(b"\n".join(lines) + b"\n")
    return lines


def _query(url: str, query) -> list[tuple]:
    db = create_db_engine(url)
    try:
        with db.connect() as conn:
            return [tuple(r) for r in conn.execute(query)]
    finally:
        db.dispose()


def _archive(url: str) -> tuple[list[tuple], list[tuple]]:
    """``events`` (payload as its stored text, times as ms) and ``dead_letters`` rows, in key order."""
    e, d = s.events.c, s.dead_letters.c
    events = _query(url, sa.select(e.cluster, e.position, e.source_position, e.event_id, e.event_time_ms, e.type,
                                   sa.cast(e.payload, sa.Text), e.status, e.reason, e.field_path)
                    .order_by(e.cluster, e.position))
    dead = _query(url, sa.select(d.id, d.cluster, d.source, d.source_position, d.raw, d.reason, d.field_path,
                                 d.received_position).order_by(d.id))
    return events, dead


def test_sqlite_and_postgresql_hold_identical_rows_for_hostile_input(tmp_path: Path, postgres_url: str) -> None:
    from alembic import command

    from tests.sqlhelpers import alembic_config

    command.downgrade(alembic_config(postgres_url), "base")
    path = tmp_path / "hostile.ndjson"
    lines = _history(path)
    engine, _ = run_file(str(path))
    lite = f"sqlite:///{tmp_path / 'hostile.db'}"
    archives = []
    for url in (lite, postgres_url):
        replay_to_db(str(path), url)
        checked = verify(url)
        assert checked.ok and checked.hash == engine.hash, checked.summary()
        assert verify(url, str(path)).ok
        archives.append(_archive(url))
    assert archives[0] == archives[1]

    events, dead = archives[0]
    assert [(r[2], r[7]) for r in events] == [
        *((n, "applied") for n in range(1, AT + 1)),
        *((AT + 1 + i, "rejected") for i in sorted(JOINED)),
        *((n, "applied") for n in range(AT + len(HOSTILE) + 1, len(lines) + 1))]
    rejected = [r for r in events if r[7] == "rejected"]
    assert [(r[3], r[5], r[6]) for r in rejected] == [JOINED[i] for i in sorted(JOINED)]
    assert [r[1] for r in rejected] == list(range(AT, AT + len(JOINED)))
    assert all(r[8] for r in rejected)
    # every hostile line is a dead letter with its exact bytes (of the one over the 4 MiB event limit, not
    # read whole, the first 64 KiB); the cluster is named only where it has state
    assert [(r[3], r[4], r[1], r[7]) for r in dead] == [
        (AT + 1 + i, _kept(raw), "ml-east" if i in JOINED else None,
         AT + sorted(JOINED).index(i) if i in JOINED else None) for i, raw in enumerate(HOSTILE)]
    assert all(r[5] for r in dead)
    assert dead[8][5] == f"event too large: {len(HOSTILE[8])} bytes, at most {MAX_EVENT_BYTES}"
    # the valid event with 1e2, -0.0 and a 65-bit integer is archived as received
    assert events[-1][6] == TICK.decode() and events[-1][7] == "applied"


@pytest.mark.parametrize("db", ["sqlite", "postgresql"], indirect=True)
def test_a_restarted_worker_continues_the_file_replays_chain_over_json_numbers(db: str) -> None:
    lines = [*CLEAN[:20], TICK.replace(b"12:00:00Z", b"09:20:00Z"), *CLEAN[20:]]
    expected = []
    driver = Driver()
    for n, line in enumerate(lines):
        expected.append(driver.feed(n, line).chain)
    upgrade_schema(db)
    tp = TopicPartition("hostile.events", 0)
    records = [ConsumerRecord(tp.topic, 0, n, 0, 0, b"ml-east", line, None, 0, len(line), ())
               for n, line in enumerate(lines)]
    engine = create_db_engine(db)
    try:
        for part in (records[:25], records[25:]):  # a new store: the second part restores from the archive
            store = IngestStore(engine, tp.topic, "g", ArchiveBatch(snapshot_every=10), 1_000_000, IngestStats())
            store.apply({tp: part})
            store.write(store.prepare({0}))
        store.write(store.shutdown_commit())
    finally:
        engine.dispose()
    hashes = dict(_query(db, sa.select(s.snapshots.c.position, s.snapshots.c.state_hash)))
    assert hashes == {p: expected[p - 1].hex() for p in (10, 20, 30, len(lines))}
    checked = verify(db)
    assert checked.ok and checked.events == len(lines), checked.summary()
    assert _query(db, sa.select(sa.cast(s.events.c.payload, sa.Text)).where(s.events.c.position == 20)) == [
        (lines[20].decode(),)]


def test_replace_and_a_failed_run_delete_dead_letters_naming_no_cluster(db: str, tmp_path: Path) -> None:
    path = tmp_path / "mixed.ndjson"
    garbage = [b"{not json", b'{"id":"g","cluster":"nowhere","type":"Nope"}', b"\xff"]
    path.write_bytes(b"\n".join([*garbage, *CLEAN, *garbage]) + b"\n")
    d = s.dead_letters.c
    count = sa.select(sa.func.count()).select_from(s.dead_letters)
    replay_to_db(str(path), db)
    assert _query(db, sa.select(d.cluster, d.source_position).order_by(d.id)) == [
        (None, 1), (None, 2), (None, 3), (None, 43), (None, 44), (None, 45)]
    for _ in range(2):
        replay_to_db(str(path), db, replace=True, batch_size=7)
        assert _query(db, count) == [(6,)]
    # a run that fails (ml-east is stored and --replace not given) leaves what was there
    other = tmp_path / "other.ndjson"
    moved = [line.replace(b'"cluster":"ml-east"', b'"cluster":"fresh"') for line in CLEAN]
    other.write_bytes(b"\n".join([*garbage, *moved, *garbage, *CLEAN]) + b"\n")
    with pytest.raises(SinkError, match="already holds cluster 'ml-east'"):
        replay_to_db(str(other), db, batch_size=5)
    assert _query(db, sa.select(d.source).distinct()) == [(str(path),)]
    assert _query(db, count) == [(6,)]


def test_a_flood_of_unknown_clusters_creates_no_cluster_state(db: str) -> None:
    upgrade_schema(db)
    tp = TopicPartition("flood.events", 0)
    flood = [orjson.dumps({"id": f"g-{n}", "cluster": f"unknown-{n}", "type": "Nope"}) for n in range(2000)]
    keyed = [(b"ml-east", line) for line in CLEAN[:3]] + [(f"k-{n}".encode(), v) for n, v in enumerate(flood)]
    keyed += [(b"ml-east", CLEAN[3]), (b"ml-east", b'{"id":"bad","cluster":"ml-east","type":"Nope"}')]
    records = [ConsumerRecord(tp.topic, 0, n, 0, 0, key, value, None, 0, len(value), ())
               for n, (key, value) in enumerate(keyed)]
    engine = create_db_engine(db)
    try:
        store = IngestStore(engine, tp.topic, "g", ArchiveBatch(), 1_000_000, IngestStats())
        for i in range(0, len(records), 500):
            store.apply({tp: records[i:i + 500]})
            store.write(store.prepare({0}))
        assert list(store.drivers) == list(store.positions) == ["ml-east"]
        # a restarted worker: a rejected record of an archived cluster joins its stream at its end
        again = IngestStore(engine, tp.topic, "g", ArchiveBatch(), 1_000_000, IngestStats())
        late = b'{"id":"late","cluster":"ml-east","type":"Nope"}'
        again.apply({tp: [ConsumerRecord(tp.topic, 0, len(records), 0, 0, b"k", late, None, 0, len(late), ()),
                          ConsumerRecord(tp.topic, 0, len(records) + 1, 0, 0, b"k", flood[0], None, 0, 9, ())]})
        again.write(again.prepare({0}))
        assert list(again.drivers) == ["ml-east"]
    finally:
        engine.dispose()
    e, d = s.events.c, s.dead_letters.c
    assert _query(db, sa.select(e.cluster, e.position, e.event_id, e.status).where(e.status == "rejected")
                  .order_by(e.position)) == [("ml-east", 4, "bad", "rejected"), ("ml-east", 5, "late", "rejected")]
    assert _query(db, sa.select(sa.func.count()).select_from(s.events)) == [(6,)]
    assert sorted(_query(db, sa.select(d.cluster, sa.func.count()).group_by(d.cluster)),
                  key=lambda r: r[0] or "") == [
        (None, 2001), ("ml-east", 2)]


@pytest.mark.parametrize("db", ["sqlite", "postgresql"], indirect=True)
def test_an_oversized_record_is_the_same_dead_letter_from_a_file_and_from_kafka(db: str, tmp_path: Path) -> None:
    huge = HOSTILE[8]  # 10 MB, over the 4 MiB event limit
    path = tmp_path / "huge.ndjson"
    path.write_bytes(b"\n".join([*CLEAN[:3], huge, CLEAN[3]]) + b"\n")
    replay_to_db(str(path), db)
    tp = TopicPartition("huge.events", 0)
    engine = create_db_engine(db)
    try:
        store = IngestStore(engine, tp.topic, "g", ArchiveBatch(), DEFAULT_MAX_RECORD_BYTES, IngestStats())
        store.apply({tp: [ConsumerRecord(tp.topic, 0, 0, 0, 0, b"elsewhere", huge, None, 0, len(huge), ())]})
        store.write(store.prepare({0}))
    finally:
        engine.dispose()
    d = s.dead_letters.c
    assert _query(db, sa.select(d.source, d.source_position, d.raw, d.reason, d.field_path).order_by(d.id)) == [
        (str(path), 4, huge[:OVERSIZED_RAW_BYTES], f"event too large: {len(huge)} bytes, at most {MAX_EVENT_BYTES}",
         None),
        ("huge.events/0", 0, huge[:OVERSIZED_RAW_BYTES],
         f"event too large: {len(huge)} bytes, at most {MAX_EVENT_BYTES}", None)]
