"""``state --db --at/--seq``: nearest snapshot + archived tail == replaying the file up to that moment."""

from __future__ import annotations

from pathlib import Path

import orjson
import sqlalchemy as sa
from typer.testing import CliRunner

from quotaledger.cli import app
from replay.store.restore import engine_at
from replay.sql_sink import replay_to_db
from statemodel import sql_schema as s
from statemodel.engine import Engine
from statemodel.events.decode import decode_event
from tests.paths import EXAMPLE



def _prefix_engine(n: int) -> Engine:
    """The engine after the first ``n`` events of the example (one cluster, every line valid)."""
    engine = Engine()
    for line in EXAMPLE.read_bytes().splitlines()[:n]:
        engine.apply(decode_event(line))
    return engine


def test_every_decision_and_time_restores_exactly(db: str) -> None:
    replay_to_db(str(EXAMPLE), db, batch_size=5, snapshot_every=7)
    sql = sa.create_engine(db)
    with sql.connect() as conn:
        snapshots = conn.execute(sa.select(s.snapshots.c.position).order_by(s.snapshots.c.position)).scalars().all()
        causes = conn.execute(sa.select(s.decisions.c.seq, s.decisions.c.cause_position)
                              .order_by(s.decisions.c.seq)).all()
        times = conn.execute(sa.select(s.events.c.position, s.events.c.event_time_ms)
                             .order_by(s.events.c.position)).all()
    sql.dispose()
    assert snapshots == [7, 14, 21, 28, 35, 39]  # every 7 events, and the final one
    for seq, cause in causes:
        engine, end, start = engine_at(db, "ml-east", seq=seq)
        assert end == cause + 1 and start == max(p for p in [0, *snapshots] if p <= end)
        expected = _prefix_engine(end)
        assert engine.hash == expected.hash
        assert orjson.dumps(engine.state()) == orjson.dumps(expected.state())
    for position, at in times[::5]:
        engine, end, _ = engine_at(db, "ml-east", at_ms=at)
        assert end == max(p for p, t in times if t <= at) + 1
        assert engine.hash == _prefix_engine(end).hash


def test_cli_state_at_a_past_moment(db: str, tmp_path: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(app, ["replay", str(EXAMPLE), "--db", db, "--snapshot-every", "10"]).exit_code == 0
    past = runner.invoke(app, ["state", "--db", db, "--cluster", "ml-east", "--seq", "3", "--json"])
    assert past.exit_code == 0, past.output
    assert orjson.loads(past.stdout)["clusters"]["ml-east"]["decisions"] == 3
    at_file = runner.invoke(app, ["state", str(EXAMPLE), "--at", "2026-03-02T09:20:00Z", "--json"])
    at_db = runner.invoke(app, ["state", "--db", db, "--cluster", "ml-east", "--at", "2026-03-02T09:20:00Z", "--json"])
    assert at_db.exit_code == 0 and orjson.loads(at_db.stdout)["hash"] == orjson.loads(at_file.stdout)["hash"]
    missing = runner.invoke(app, ["state", "--db", db, "--cluster", "ml-east", "--seq", "999"])
    assert missing.exit_code == 1 and "no decision 999" in missing.output
