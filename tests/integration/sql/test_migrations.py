"""Alembic migrations of the SQL store, on SQLite and on PostgreSQL (fixtures ``db`` / ``postgres_url``
in conftest.py, see tests/sqlhelpers.py).

PostgreSQL is the one at ``$QUOTALEDGER_TEST_PG`` (default ``postgresql+psycopg://postgres@127.0.0.1:5432/postgres``,
trust auth); a fresh, uniquely named database is created for the test run and dropped after it.
When PostgreSQL cannot be reached the PostgreSQL cases are SKIPPED with the reason — except under
``CI=true``, where they FAIL: SQL tests must not silently skip in CI.
"""

from __future__ import annotations

import orjson
import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from typer.testing import CliRunner

from quotaledger.cli import app
from quotaledger.commands.options import DEFAULT_DB, db_url
from statemodel.sql_schema import metadata
from tests.sqlhelpers import alembic_config

TABLES = set(metadata.tables)
_config = alembic_config


def _tables(url: str) -> set[str]:
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        return set(sa.inspect(engine).get_table_names()) - {"alembic_version"}
    finally:
        engine.dispose()


def _diff(url: str) -> list:
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True, "compare_server_default": True})
            return compare_metadata(context, metadata)
    finally:
        engine.dispose()


def test_upgrade_downgrade_upgrade(db: str) -> None:
    cfg = _config(db)
    command.upgrade(cfg, "head")
    assert _tables(db) == TABLES
    command.downgrade(cfg, "base")
    assert _tables(db) == set()
    command.upgrade(cfg, "head")
    assert _tables(db) == TABLES
    assert _diff(db) == []  # the round trip leaves exactly the schema of statemodel/sql_schema.py


def test_models_and_migrations_agree(db: str) -> None:
    command.upgrade(_config(db), "head")
    assert _diff(db) == []


def test_schema_accepts_rows(db: str) -> None:
    """Smoke test of the types: JSON, tz-aware times, big integers, blobs and decimals round-trip."""
    import datetime as dt
    from decimal import Decimal

    from statemodel import sql_schema as s

    command.upgrade(_config(db), "head")
    when = dt.datetime(2026, 3, 2, 9, 30, 5, tzinfo=dt.timezone.utc)
    engine = sa.create_engine(db, poolclass=sa.pool.NullPool)
    try:
        with engine.begin() as conn:
            conn.execute(s.events.insert(), [{
                "cluster": "ml-east", "position": 0, "source_position": 1, "event_id": "e-1", "event_time": when,
                "event_time_ms": 1772443805000, "type": "Applied", "payload": {"id": "e-1", "v": 1},
                "status": "applied"}])
            conn.execute(s.quotas.insert(), [{
                "cluster": "ml-east", "node_kind": "cluster_queue", "node_name": "prod-a", "flavor": "default",
                "resource": "memory", "nominal": 2**62, "usage": 0, "available": 2**62, "potential_available": 2**62}])
            conn.execute(s.snapshots.insert(), [{
                "cluster": "ml-east", "position": 1, "event_time": when, "event_time_ms": 1772443805000,
                "decision_seq": 0, "engine_version": "test", "state_hash": "ab", "state_encoding": "raw",
                "state": b"\x00\xff"}])
            conn.execute(s.fair_sharing.insert(), [{
                "cluster": "ml-east", "kind": "local_queue", "name": "ns/lq", "resource": "cpu",
                "consumed": Decimal("1.5"), "penalty": Decimal("0"), "score": None}])
        with engine.connect() as conn:
            event = conn.execute(sa.select(s.events)).one()
            assert event.payload == {"id": "e-1", "v": 1}
            assert event.event_time.replace(tzinfo=dt.timezone.utc) == when
            assert conn.execute(sa.select(s.quotas.c.nominal)).scalar_one() == 2**62
            assert conn.execute(sa.select(s.snapshots.c.id, s.snapshots.c.state)).one() == (1, b"\x00\xff")
            assert Decimal(conn.execute(sa.select(s.fair_sharing.c.consumed)).scalar_one()) == Decimal("1.5")
            with pytest.raises(sa.exc.IntegrityError):
                conn.execute(s.events.insert(), [{"cluster": "ml-east", "position": 1, "status": "bogus"}])
    finally:
        engine.dispose()


def test_cli_db_upgrade_and_downgrade(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["db", "upgrade", "--db", db])
    assert result.exit_code == 0, result.output
    assert _tables(db) == TABLES
    result = runner.invoke(app, ["db", "downgrade", "--db", db])
    assert result.exit_code == 2 and _tables(db) == TABLES  # the revision is required
    result = runner.invoke(app, ["db", "downgrade", "base", "--db", db])  # no terminal to confirm on
    assert result.exit_code == 2 and "give --yes to confirm" in result.output
    assert _tables(db) == TABLES
    result = runner.invoke(app, ["db", "downgrade", "base", "--db", db, "--yes"])
    assert result.exit_code == 0, result.output
    assert _tables(db) == set()
    monkeypatch.setenv("QUOTALEDGER_DB", db)  # the env var alone selects the database
    result = runner.invoke(app, ["db", "upgrade", "head"])
    assert result.exit_code == 0, result.output
    assert _tables(db) == TABLES
    result = runner.invoke(app, ["db", "downgrade", "base", "--yes"])
    assert result.exit_code == 0, result.output
    assert _tables(db) == set()


def test_cli_db_url_precedence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("QUOTALEDGER_DB", raising=False)
    assert db_url(None) == DEFAULT_DB == "sqlite:///quotaledger.db"
    monkeypatch.setenv("QUOTALEDGER_DB", "sqlite:///from-env.db")
    assert db_url(None) == "sqlite:///from-env.db"
    assert db_url("sqlite:///from-option.db") == "sqlite:///from-option.db"


def test_cli_db_bad_revision_exits_nonzero(tmp_path) -> None:
    result = CliRunner().invoke(app, ["db", "upgrade", "nosuchrev", "--db", f"sqlite:///{tmp_path / 'x.db'}"])
    assert result.exit_code == 1


def test_outbox_ranges_migration_keeps_what_waits_to_be_published(db: str) -> None:
    """0001 → 0002 turns the unpublished per-decision outbox rows into ranges (one per run of
    consecutive seqs); the downgrade turns unpublished ranges back into rows with their payloads."""
    cfg = _config(db)
    command.upgrade(cfg, "0001")
    engine = sa.create_engine(db, poolclass=sa.pool.NullPool)
    old_outbox = sa.table("outbox", sa.column("cluster"), sa.column("seq"), sa.column("payload", sa.JSON),
                          sa.column("published", sa.Boolean))
    decisions = sa.table("decisions", *(sa.column(c) for c in (
        "cluster", "seq", "cause_event_id", "cause_position", "decision_time", "decision_time_ms", "type",
        "workload", "cluster_queue")), sa.column("payload", sa.JSON))
    waiting = {("a", 3), ("a", 4), ("a", 5), ("a", 9), ("b", 1)}  # two runs in a, one in b
    when = sa.func.current_timestamp()
    try:
        with engine.begin() as conn:
            for cluster, seq in [("a", n) for n in range(1, 11)] + [("b", 1), ("b", 2)]:
                payload = {"seq": seq, "cause": f"e-{seq}", "cluster": cluster}
                conn.execute(decisions.insert().values(
                    cluster=cluster, seq=seq, cause_event_id=f"e-{seq}", cause_position=seq, decision_time=when,
                    decision_time_ms=seq, type="Admitted", workload="ns/w", cluster_queue="cq", payload=payload))
                conn.execute(old_outbox.insert().values(cluster=cluster, seq=seq, payload=payload,
                                                        published=(cluster, seq) not in waiting))
        command.upgrade(cfg, "0002")
        with engine.connect() as conn:
            ranges = conn.execute(sa.text(
                "SELECT cluster, first_seq, last_seq, published FROM outbox ORDER BY cluster, first_seq")).all()
        assert [tuple(r) for r in ranges] == [("a", 3, 5, False), ("a", 9, 9, False), ("b", 1, 1, False)]
        command.downgrade(cfg, "0001")
        with engine.connect() as conn:
            back = conn.execute(sa.select(old_outbox).order_by(old_outbox.c.cluster, old_outbox.c.seq)).all()
        assert [(r.cluster, r.seq, r.published) for r in back] == [(c, n, False) for c, n in sorted(waiting)]
        assert all(r.payload == {"seq": r.seq, "cause": f"e-{r.seq}", "cluster": r.cluster} for r in back)
    finally:
        engine.dispose()


def test_exact_payloads_migration_keeps_the_archive_and_adds_the_digest(db: str) -> None:
    """0004 → 0005: ``events.payload`` becomes PostgreSQL ``json`` (the rows keep their documents; what
    is written afterwards keeps its exact text), ``ingest_offsets`` gains ``last_record_digest``
    (NULL in the rows already there); the downgrade goes back to ``jsonb``."""
    cfg = _config(db)
    command.upgrade(cfg, "0004")
    engine = sa.create_engine(db, poolclass=sa.pool.NullPool)
    events = sa.table("events", *(sa.column(c) for c in ("cluster", "position", "status")),
                      sa.column("payload", sa.JSON))
    offsets = sa.table("ingest_offsets", *(sa.column(c) for c in (
        "consumer_group", "topic", "topic_partition", "next_offset", "last_event_id")))
    exact = '{"id":"x","n":1e2,"z":-0.0}'
    try:
        with engine.begin() as conn:
            conn.execute(events.insert().values(cluster="c", position=0, status="applied", payload={"id": "e", "n": 1}))
            conn.execute(offsets.insert().values(consumer_group="g", topic="t", topic_partition=0, next_offset=5,
                                                 last_event_id="e"))
        command.upgrade(cfg, "0005")
        with engine.begin() as conn:
            conn.execute(sa.text("INSERT INTO events (cluster, position, status, payload) VALUES ('c', 1, 'applied', "
                                 ":p)"), {"p": exact})
            stored = conn.execute(sa.text("SELECT CAST(payload AS TEXT) FROM events ORDER BY position")).scalars().all()
            digest = conn.execute(sa.text("SELECT next_offset, last_record_digest FROM ingest_offsets")).all()
        assert orjson.loads(stored[0]) == {"id": "e", "n": 1} and stored[1] == exact
        assert [tuple(r) for r in digest] == [(5, None)]
        command.upgrade(cfg, "head")
        assert _diff(db) == []
        command.downgrade(cfg, "0004")
        with engine.connect() as conn:
            back = conn.execute(sa.select(events.c.payload).order_by(events.c.position)).scalars().all()
        assert back == [{"id": "e", "n": 1}, {"id": "x", "n": 100.0, "z": -0.0}]
    finally:
        engine.dispose()



def test_workers_upgrading_together_all_succeed(db: str) -> None:
    """Ingest workers started together (processes, as docker compose or a deployment starts them)
    each bring the schema to head; they take turns (PostgreSQL: an advisory lock; SQLite: the write
    lock taken first), so none fails on a table another one just created, and it is committed."""
    import subprocess
    import sys

    code = "import sys; from replay.store.db import upgrade_schema; upgrade_schema(sys.argv[1])"
    procs = [subprocess.Popen([sys.executable, "-c", code, db], stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]  # type: ignore[union-attr]
    assert [code for code, _ in results] == [0, 0, 0, 0], [err for _, err in results]
    assert _tables(db) == TABLES
    assert _diff(db) == []
