"""`verify` against the checked-in golden log and its tampered copies (tests/data/verify/README.md),
on SQLite and PostgreSQL: accepted, or rejected at the exact place with both sides shown, exit 1."""

from __future__ import annotations


import orjson
import sqlalchemy as sa
from typer.testing import CliRunner

from quotaledger.cli import app
from replay.sql_sink import replay_to_db
from statemodel import sql_schema as s
from tests.paths import DATA

DATA = DATA / "verify"
GOOD, EVENTS, DECISIONS = DATA / "good.ndjson", DATA / "tampered-events.ndjson", DATA / "tampered-decisions.ndjson"


def _verify(*args: str):
    return CliRunner().invoke(app, ["verify", *args])


def _sides(output: str) -> tuple[str, str]:
    expected, recorded = output.split("expected:")[1].split("recorded:")
    return expected, recorded


def _write(url: str, statements: list) -> None:
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.begin() as conn:
            for statement in statements:
                conn.execute(statement)
    finally:
        engine.dispose()


def test_good_log_is_accepted_from_the_archive_and_from_the_file(db: str) -> None:
    replay_to_db(str(GOOD), db)
    for args in (["--db", db], ["--db", db, str(GOOD)]):
        out = _verify(*args)
        assert out.exit_code == 0 and out.output.startswith("OK: 26 events, 7 decisions, hash "), out.output


def test_tampered_event_file_is_rejected_at_its_first_decision(db: str) -> None:
    replay_to_db(str(GOOD), db)
    out = _verify("--db", db, str(EVENTS))
    assert out.exit_code == 1
    assert "DIVERGENCE in cluster 'lab' at decision seq 2 (caused by event v-014 at position 7 (line 14))" in out.output
    expected, recorded = _sides(out.output)
    assert '"workload":"alpha/train-2"' in expected and '"cpu":"5"' in expected and '"cpu":"4"' in recorded


def test_tampered_event_in_the_archive_is_rejected_and_the_good_file_still_matches_the_decisions(db: str) -> None:
    replay_to_db(str(GOOD), db)
    altered = orjson.loads(EVENTS.read_bytes().splitlines()[13])
    ev = s.events.c
    _write(db, [s.events.update().where(ev.cluster == "lab", ev.event_id == "v-014").values(payload=altered)])
    out = _verify("--db", db)
    assert out.exit_code == 1
    assert "DIVERGENCE in cluster 'lab' at decision seq 2 (caused by event v-014 at position 7)" in out.output
    expected, recorded = _sides(out.output)
    assert '"cpu":"5"' in expected and '"cpu":"4"' in recorded
    assert _verify("--db", db, str(GOOD)).exit_code == 0


def test_tampered_decision_in_the_store_is_rejected_at_its_seq(db: str) -> None:
    replay_to_db(str(GOOD), db)
    dc = s.decisions.c
    _write(db, [s.decisions.update().where(dc.cluster == d["cluster"], dc.seq == d["seq"]).values(payload=d)
                for d in map(orjson.loads, DECISIONS.read_bytes().splitlines())])
    for args in (["--db", db], ["--db", db, str(GOOD)]):
        out = _verify(*args)
        assert out.exit_code == 1
        assert "DIVERGENCE in cluster 'lab' at decision seq 4 (caused by event v-016 at position 9" in out.output
        expected, recorded = _sides(out.output)
        assert '"clusterQueue":"team-b"' in expected and '"clusterQueue":"team-a"' in recorded
