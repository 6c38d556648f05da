"""A store written by an earlier quotaledger keeps working: after ``db upgrade`` it verifies, and any
past moment restores to what a fresh replay of the same events gives — its format-1 snapshots are
upgraded on load; a snapshot the engine cannot read is passed over, never misread.

The fixture ``tests/data/store-schema-0002/store.sql.gz`` is the SQLite dump of
``quotaledger replay`` of ``replay/examples/two-teams.ndjson`` followed by ``tests/data/sql-docs.ndjson``
(``--snapshot-every 5``), written by the engine before the quota-model seam (schema revision 0002,
snapshot format 1).
"""

from __future__ import annotations

import gzip
import sqlite3
import zlib
from pathlib import Path

import orjson
import pytest
import sqlalchemy as sa

from replay.store.db import create_db_engine, migrate_schema
from replay.store.restore import engine_at, restore
from replay.verify import verify
from statemodel import sql_schema as s
from statemodel.driver import Driver
from statemodel.engine import Engine
from statemodel.snapshot import SNAPSHOT_FORMAT, dump
from tests.paths import DATA, EXAMPLE

DUMP = DATA / "store-schema-0002" / "store.sql.gz"


@pytest.fixture
def old_store(tmp_path: Path) -> str:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(gzip.decompress(DUMP.read_bytes()).decode())
    return f"sqlite:///{path}"


def _replayed(lines: list[bytes]) -> Driver:
    driver = Driver()
    for position, line in enumerate(lines):
        driver.feed(position, line)
    return driver


def _lines() -> list[bytes]:
    return [line for path in (EXAMPLE, DATA / "sql-docs.ndjson")
            for line in path.read_bytes().splitlines() if line.strip()]


def _cluster_state(engine: Engine, cluster: str) -> dict:
    """The snapshot document of ``cluster`` alone, without the engine-wide event counters (a store's
    snapshot counts the events of every cluster it had seen), with each workload's pending message
    as its text and without its structured shortfalls (a format-1 snapshot kept only the text; the
    data returns when the workload is evaluated again — tests/property/test_snapshot.py shows that
    loss)."""
    doc = orjson.loads(zlib.decompress(dump(engine, [cluster])))
    del doc["counts"]
    messages = [str(info.message) for info in engine.clusters[cluster].workloads.values()]
    for part in doc["clusters"]:
        for workload, message in zip(part["components"]["workloads"]["workloads"], messages, strict=True):
            workload["message"] = message
            del workload["failures"]
        # the wake index by its current waiters: engine 0.2.0, which wrote the store, woke in
        # priority order only; this engine first wakes waiters that fit within their ClusterQueue's
        # nominal quota, so a bucket's stale entries can differ while the decisions do not
        wake = part["components"]["wakeIndex"]
        state = engine.clusters[part["name"]]
        rows = [w for _, _, heap in wake["heaps"] for _, _, w in heap]
        rows += [w for _, _, vals in wake["buckets"] for _, heap in vals for *_, w in heap]
        part["components"]["wakeIndex"] = sorted({(key, cq, orjson.dumps(needs)) for key, park, cq, needs in rows
                                                  if state.workloads[key].park == park})
    return doc


def _snapshot_rows(url: str) -> list[sa.Row]:
    db = create_db_engine(url)
    try:
        with db.connect() as conn:
            return conn.execute(sa.select(s.snapshots.c.id, s.snapshots.c.cluster, s.snapshots.c.position,
                                          s.snapshots.c.state).order_by(s.snapshots.c.id)).all()
    finally:
        db.dispose()


def test_fixture_is_an_old_store(old_store: str) -> None:
    db = create_db_engine(old_store)
    with db.connect() as conn:
        assert conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar_one() == "0002"
    db.dispose()
    formats = {orjson.loads(zlib.decompress(row.state))["format"] for row in _snapshot_rows(old_store)}
    assert formats == {1} and SNAPSHOT_FORMAT > 1


def test_upgraded_old_store_verifies_and_restores_every_moment(old_store: str) -> None:
    migrate_schema(old_store)
    result = verify(old_store)
    assert result.ok, result.summary()
    lines = _lines()
    full = _replayed(lines).engine
    assert result.hash == full.hash
    by_cluster: dict[str, list[int]] = {}
    for line_no, line in enumerate(lines):
        by_cluster.setdefault(orjson.loads(line).get("cluster", "default"), []).append(line_no)
    snapshots = {(row.cluster, row.position) for row in _snapshot_rows(old_store)}
    db = create_db_engine(old_store)
    with db.connect() as conn:
        for cluster, line_nos in by_cluster.items():
            for end in range(1, len(line_nos) + 1):
                engine, start = restore(conn, cluster, end)
                expected = _replayed([lines[i] for i in line_nos[:end]]).engine
                assert _cluster_state(engine, cluster) == _cluster_state(expected, cluster), (cluster, end)
                assert start == max((p for c, p in snapshots if c == cluster and p <= end), default=0)
                driver = Driver(engine)  # and it goes on to decide exactly as the full replay did
                for position in range(end, len(line_nos)):
                    driver.feed(position, lines[line_nos[position]])
                assert engine.chains[cluster] == full.chains[cluster], (cluster, end)
    db.dispose()
    engine, end, _ = engine_at(old_store, "lab")
    assert end == len(by_cluster["lab"]) and _cluster_state(engine, "lab") == _cluster_state(full, "lab")


def test_a_snapshot_the_engine_cannot_read_is_passed_over(old_store: str) -> None:
    migrate_schema(old_store)
    rows = [row for row in _snapshot_rows(old_store) if row.cluster == "ml-east"]
    newest = rows[-1]
    doc = orjson.loads(zlib.decompress(newest.state))
    doc["engineVersion"] = "some-other-engine"
    db = create_db_engine(old_store)
    with db.begin() as conn:
        conn.execute(sa.update(s.snapshots).where(s.snapshots.c.id == newest.id).values(
            state=zlib.compress(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS))))
    with db.connect() as conn:
        total = conn.execute(sa.select(sa.func.count()).select_from(s.events).where(
            s.events.c.cluster == "ml-east")).scalar_one()
        engine, start = restore(conn, "ml-east", total)
    db.dispose()
    assert start == rows[-2].position  # the next older snapshot
    lines = [line for line in _lines() if orjson.loads(line).get("cluster", "default") == "ml-east"]
    assert _cluster_state(engine, "ml-east") == _cluster_state(_replayed(lines).engine, "ml-east")
