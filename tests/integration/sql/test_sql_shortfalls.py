"""``workloads.shortfalls`` on SQLite and PostgreSQL, and ``explain --db`` (the story and its hand-worked
numbers: tests/unit/test_shortfalls.py)."""

from __future__ import annotations

from pathlib import Path

import orjson
import sqlalchemy as sa
from typer.testing import CliRunner

from quotaledger.cli import app
from replay.sql_sink import replay_to_db
from statemodel import sql_schema as s
from tests.unit.test_shortfalls import BIG, TWO, W2, _story


def _store(db: str, tmp_path: Path, snapshot_every: int) -> None:
    path = tmp_path / "events.ndjson"
    path.write_bytes(_story().events_ndjson())
    replay_to_db(str(path), db, snapshot_every=snapshot_every)


def test_workloads_rows_carry_the_shortfalls(db: str, tmp_path: Path) -> None:
    _store(db, tmp_path, snapshot_every=1000)
    engine = sa.create_engine(db, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.select(s.workloads.c.key, s.workloads.c.status, s.workloads.c.shortfalls)
                                .order_by(s.workloads.c.key)).all()
            # JSON null (not SQL NULL) when there are none
            nulls = conn.execute(sa.text("SELECT COUNT(*) FROM workloads WHERE shortfalls IS NULL")).scalar_one()
    finally:
        engine.dispose()
    assert [tuple(r) for r in rows] == [("small/two", "Pending", TWO), ("team/big", "Pending", BIG),
                                        ("team/w1", "Admitted", None), ("team/w2", "Pending", W2)]
    assert nulls == 0


def test_explain_from_the_store_renders_the_shortfalls(db: str, tmp_path: Path) -> None:
    _store(db, tmp_path, snapshot_every=3)  # restored from a snapshot plus the archived tail
    runner = CliRunner()
    data = runner.invoke(app, ["explain", "team/w2", "--db", db, "--json"])
    assert data.exit_code == 0, data.output
    assert orjson.loads(data.stdout)["shortfalls"] == W2
    table = runner.invoke(app, ["explain", "small/two", "--db", db], env={"COLUMNS": "200"})
    assert table.exit_code == 0, table.output
    assert ["b", "default", "cpu", "small", "ExceedsMaxQuota", "3", "2", "1"] in [
        line.split() for line in table.stdout.splitlines()]
