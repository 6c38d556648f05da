"""SQL sink (`quotaledger replay --db`) and `quotaledger verify`, on SQLite and on PostgreSQL.

Fixtures ``db`` (an empty database of each kind) and ``postgres_url`` come from conftest.py.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import orjson
import pytest
import sqlalchemy as sa
from tests.ingesthelpers import trace_events
from typer.testing import CliRunner

from quotaledger.cli import app
from replay.runner import run_file
from replay.store.db import SinkError
from replay.sql_sink import STATE_ENCODING, replay_to_db
from replay.verify import verify
from statemodel import sql_schema as s
from statemodel.snapshot import load as load_snapshot
from statemodel.timefmt import parse_time
from statemodel.version import ENGINE_VERSION
from tests.paths import ROOT

EXAMPLE = ROOT / "replay" / "examples" / "two-teams.ndjson"
GOOD = ROOT / "tests" / "data" / "verify" / "good.ndjson"


def _engine(url: str) -> sa.Engine:
    return sa.create_engine(url, poolclass=sa.pool.NullPool)


def _rows(url: str, query) -> list:
    eng = _engine(url)
    try:
        with eng.connect() as conn:
            return list(conn.execute(query))
    finally:
        eng.dispose()


def _exec(url: str, statement) -> None:
    eng = _engine(url)
    try:
        with eng.begin() as conn:
            conn.execute(statement)
    finally:
        eng.dispose()


def _count(url: str, table: sa.Table, *where) -> int:
    return _rows(url, sa.select(sa.func.count()).select_from(table).where(*where))[0][0]


def _canon(obj) -> bytes:
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)


def _hashes(url: str) -> dict[str, str]:
    return {r.cluster: r.state_hash for r in _rows(url, sa.select(s.snapshots.c.cluster, s.snapshots.c.state_hash))}


# --------------------------------------------------------------------------- replay --db


def test_snapshot_every_event_time(db: str) -> None:
    """--snapshot-every-time 15m: the example's clock (one event per line, 09:00 → 10:00) enters a
    new quarter hour at lines 18 (09:15), 25 (09:30), 32 (09:45) and 39 (10:00), so snapshots cover
    the first 18, 25, 32 and 39 events; the final snapshot would be at 39 too and is not repeated."""
    runner = CliRunner()
    out = runner.invoke(app, ["replay", str(EXAMPLE), "--db", db, "--batch-size", "5", "--snapshot-every", "1000",
                              "--snapshot-every-time", "15m"])
    assert out.exit_code == 0, out.output
    positions = [r.position for r in _rows(db, sa.select(s.snapshots.c.position).order_by(s.snapshots.c.position))]
    assert positions == [18, 25, 32, 39]
    assert verify(db).ok


@pytest.mark.parametrize("value", ["0s", "soon"])
def test_snapshot_every_time_must_be_a_positive_duration(value: str, tmp_path: Path) -> None:
    out = CliRunner().invoke(app, ["replay", str(EXAMPLE), "--db", f"sqlite:///{tmp_path / 'x.db'}",
                                   "--snapshot-every-time", value])
    assert out.exit_code == 2  # a bad request
    assert "--snapshot-every-time" in out.output
    assert not (tmp_path / "x.db").exists()


def test_example_into_db_matches_engine(db: str, tmp_path: Path) -> None:
    expected = []
    engine, result = run_file(str(EXAMPLE), on_decision=lambda d: expected.append(d.to_json()))
    runner = CliRunner()
    out = runner.invoke(app, ["replay", str(EXAMPLE), "--db", db, "--batch-size", "7",
                              "--decisions-out", str(tmp_path / "d.ndjson")])
    assert out.exit_code == 0, out.output
    # the file output keeps working next to the database
    assert [orjson.loads(line) for line in (tmp_path / "d.ndjson").read_bytes().splitlines()] == expected

    stored = _rows(db, sa.select(s.decisions).order_by(s.decisions.c.cluster, s.decisions.c.seq))
    assert [_canon(r.payload) for r in stored] == [_canon(d) for d in expected]
    assert [r.seq for r in stored] == list(range(1, len(expected) + 1))
    assert _count(db, s.events) == result.lines == 39
    assert _count(db, s.events, s.events.c.status == "applied") == result.applied
    events = _rows(db, sa.select(s.events).order_by(s.events.c.position))
    assert [e.position for e in events] == list(range(39))
    assert [e.source_position for e in events] == list(range(1, 40))
    lines = EXAMPLE.read_bytes().splitlines()
    assert all(e.payload == orjson.loads(lines[e.position]) for e in events)
    by_pos = {e.position: e.event_id for e in events}
    assert all(by_pos[r.cause_position] == r.cause_event_id == r.payload["cause"] for r in stored)

    state = engine.state()
    cs = state["clusters"]["ml-east"]
    assert _count(db, s.workloads) == len(cs["workloads"])
    assert _count(db, s.cluster_queues) == len(cs["clusterQueues"])
    assert _count(db, s.local_queues) == len(cs["localQueues"])
    assert _count(db, s.cohorts) == len(cs["cohorts"])
    assert _count(db, s.workloads, s.workloads.c.status == "Admitted") == sum(
        w["status"] == "Admitted" for w in cs["workloads"].values())
    usage = _rows(db, sa.select(s.quotas.c.usage).where(
        s.quotas.c.node_kind == "cluster_queue", s.quotas.c.node_name == "prod-a", s.quotas.c.flavor == "on-demand",
        s.quotas.c.resource == "cpu"))
    assert usage == [(cs["clusterQueues"]["prod-a"]["resources"]["on-demand"]["cpu"]["usage"],)]

    (snap,) = _rows(db, sa.select(s.snapshots))
    assert snap.state_hash == engine.chains["ml-east"].hex()
    assert (snap.position, snap.decision_seq, snap.engine_version, snap.state_encoding) == (
        39, 19, ENGINE_VERSION, STATE_ENCODING)
    restored = load_snapshot(snap.state)
    assert restored.state()["clusters"] == state["clusters"]
    assert restored.chains["ml-east"] == engine.chains["ml-east"]

    result = verify(db)
    assert result.ok, result.summary()
    assert result.summary() == f"OK: 39 events, 19 decisions, hash {engine.hash}"


def test_sqlite_and_postgresql_store_identical_hashes(tmp_path: Path, postgres_url: str) -> None:
    from alembic import command

    from tests.sqlhelpers import alembic_config

    command.downgrade(alembic_config(postgres_url), "base")
    lite = f"sqlite:///{tmp_path / 'a.db'}"
    for url in (lite, postgres_url):
        replay_to_db(str(GOOD), url, batch_size=5)
    assert _hashes(lite) == _hashes(postgres_url)
    assert set(_hashes(lite)) == {"lab", "edge"}
    decisions = sa.select(s.decisions.c.cluster, s.decisions.c.seq, s.decisions.c.payload).order_by(
        s.decisions.c.cluster, s.decisions.c.seq)
    assert [(c, q, _canon(p)) for c, q, p in _rows(lite, decisions)] == [
        (c, q, _canon(p)) for c, q, p in _rows(postgres_url, decisions)]
    assert verify(lite).hash == verify(postgres_url).hash == verify(lite, str(GOOD)).hash


def test_rejected_and_duplicate_events_are_archived(db: str, tmp_path: Path) -> None:
    lines = GOOD.read_bytes().splitlines()
    bad_field = orjson.loads(lines[12])  # v-013, a lab workload
    bad_field["id"] = "bad-1"
    bad_field["object"]["spec"]["priority"] = "high"
    src = tmp_path / "mixed.ndjson"
    src.write_bytes(b"\n".join([*lines[:6], orjson.dumps(bad_field), b"{not json", *lines[6:]]) + b"\n")
    engine, result = replay_to_db(str(src), db, batch_size=3)
    assert (result.rejected, result.duplicates) == (2, 1)

    ev = s.events.c
    (rej,) = _rows(db, sa.select(s.events).where(ev.event_id == "bad-1"))
    assert (rej.status, rej.cluster, rej.position, rej.source_position) == ("rejected", "lab", 6, 7)
    assert rej.field_path == "object.spec.priority" and rej.reason
    assert rej.payload == bad_field
    # the broken line names no cluster with state (it would be "default"): a dead letter only
    assert not _rows(db, sa.select(s.events).where(ev.source_position == 8))
    dead = _rows(db, sa.select(s.dead_letters).order_by(s.dead_letters.c.source_position))
    assert [(d.source_position, d.cluster, d.received_position, d.field_path) for d in dead] == [
        (7, "lab", 6, "object.spec.priority"), (8, None, None, None)]
    assert dead[1].raw == b"{not json" and "invalid JSON" in dead[1].reason
    assert [r.status for r in _rows(db, sa.select(s.events).where(ev.status == "duplicate"))] == ["duplicate"]
    # the run's decisions are those of the clean log, and the archive verifies
    assert verify(db).ok, verify(db).summary()
    assert _count(db, s.decisions) == 7


def test_second_replay_refused_and_replace_works(db: str, tmp_path: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(app, ["replay", str(GOOD), "--db", db]).exit_code == 0
    first = _hashes(db)
    out = runner.invoke(app, ["replay", str(GOOD), "--db", db])
    assert out.exit_code == 1
    assert "already holds cluster" in out.output and "--replace" in out.output
    assert _count(db, s.events) == 26 and _count(db, s.snapshots) == 2  # nothing doubled, nothing lost
    replay_to_db(str(EXAMPLE), db)  # a cluster not stored yet is fine
    # a source with a new cluster first and a stored one later: refused, and the new one's rows removed
    edge = [line.replace(b'"cluster":"edge"', b'"cluster":"other"') for line in GOOD.read_bytes().splitlines()
            if b'"cluster":"edge"' in line]
    mixed = tmp_path / "mixed.ndjson"
    mixed.write_bytes(b"\n".join([*edge, *GOOD.read_bytes().splitlines()]) + b"\n")
    with pytest.raises(SinkError, match="already holds cluster 'lab'"):
        replay_to_db(str(mixed), db, batch_size=2)
    assert _count(db, s.events, s.events.c.cluster == "other") == 0
    assert _count(db, s.events, s.events.c.cluster == "ml-east") == 39
    out = runner.invoke(app, ["replay", str(GOOD), "--db", db, "--replace", "--batch-size", "4"])
    assert out.exit_code == 0, out.output
    assert _hashes(db) == first | {"ml-east": _hashes(db)["ml-east"]}
    assert _count(db, s.events) == 26 + 39 and _count(db, s.snapshots) == 3
    assert verify(db).ok


def test_env_var_selects_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'env.db'}"
    monkeypatch.setenv("QUOTALEDGER_DB", url)
    assert CliRunner().invoke(app, ["replay", str(GOOD)]).exit_code == 0
    out = CliRunner().invoke(app, ["verify"])
    assert out.exit_code == 0 and out.output.startswith("OK: 26 events, 7 decisions, hash ")


# --------------------------------------------------------------------------- verify


# The golden log and its tampered copies: tests/integration/sql/test_verify_golden.py.


def test_verify_rejects_altered_event_without_decision_change_by_hash(db: str) -> None:
    replay_to_db(str(GOOD), db)
    ev = s.events.c
    (row,) = _rows(db, sa.select(ev.position, ev.payload).where(ev.cluster == "edge", ev.type == "Tick"))
    altered = dict(row.payload, time="2026-04-01T08:07:01Z")  # a later tick: same decisions, different chain
    _exec(db, s.events.update().where(ev.cluster == "edge", ev.position == row.position).values(payload=altered))
    d = verify(db).divergence
    assert d is not None and d.cluster == "edge" and d.where.startswith("hash after 9 events")
    assert d.recorded == f"hash {_hashes(db)['edge']}" and d.expected != d.recorded


def test_verify_reports_missing_and_extra_decisions(db: str) -> None:
    replay_to_db(str(GOOD), db)
    dc = s.decisions.c
    (last,) = _rows(db, sa.select(s.decisions).where(dc.cluster == "lab", dc.seq == 6))
    _exec(db, s.decisions.delete().where(dc.cluster == "lab", dc.seq == 6))
    d = verify(db).divergence
    assert d.where.startswith("decision seq 6 (caused by event v-022") and d.recorded == "(no such decision)"
    _exec(db, s.decisions.insert().values(last._asdict()))
    _exec(db, s.decisions.insert().values(dict(last._asdict(), seq=7, payload=dict(last.payload, seq=7))))
    d = verify(db).divergence
    assert d.where.startswith("decision seq 7") and d.expected == "(no such decision)"
    assert '"seq":7' in d.recorded


def test_verify_errors_cleanly_without_schema(tmp_path: Path) -> None:
    (tmp_path / "empty.db").touch()  # a database file without the schema (a missing file: test_cli)
    out = CliRunner().invoke(app, ["verify", "--db", f"sqlite:///{tmp_path / 'empty.db'}"])
    assert out.exit_code == 2 and "no quotaledger schema" in out.output


def _documented_workload_row(key: str, w: dict, now_ms: int) -> dict:
    """The ``workloads`` row docs/sql.md describes for one workload of the state JSON, read here on
    its own (not through the archive's code)."""
    epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
    queued = parse_time(w["queuedAt"], "queuedAt")
    admitted = parse_time(w["admittedAt"], "admittedAt") if w["admittedAt"] else None
    pending = w["status"] == "Pending"
    return {"key": key, "status": w["status"], "cluster_queue": w["clusterQueue"], "local_queue": w["localQueue"],
            "priority": w["priority"], "reason": w["reason"] if pending else None,
            "message": w["message"] if pending else None, "shortfalls": w["shortfalls"] or None,
            "position_in_cluster_queue": w["positionInClusterQueue"],
            "position_in_local_queue": w["positionInLocalQueue"],
            "queued_at": epoch + timedelta(milliseconds=queued), "queued_at_ms": queued,
            "admitted_at": None if admitted is None else epoch + timedelta(milliseconds=admitted),
            "admitted_at_ms": admitted, "borrowing": w["borrowing"], "admission": w["podSetAssignments"],
            "wait_ms": admitted - queued if w["status"] == "Admitted" else now_ms - queued if pending else None}


@pytest.mark.parametrize("source", ["example", "dlrm-slice"])
def test_workloads_projection_is_the_state_json(db: str, tmp_path: Path, source: str) -> None:
    """Every ``workloads`` row equals what the state JSON says of that workload (the projection and
    the JSON are two renderings of one record: a field mapped differently in one of them shows here)."""
    if source == "example":
        path = EXAMPLE
    else:  # cut mid-run, so pending, admitted and finished workloads are all there
        lines = trace_events(tmp_path / "slice.ndjson")
        path = tmp_path / "cut.ndjson"
        path.write_bytes(b"\n".join(lines[: len(lines) * 2 // 3]) + b"\n")
    replay_to_db(str(path), db)
    engine = run_file(str(path))[0]
    for cluster, cs in engine.state()["clusters"].items():
        now_ms = parse_time(cs["time"], "time")
        expected = [_documented_workload_row(key, w, now_ms) for key, w in sorted(cs["workloads"].items())]
        stored = [{k: v for k, v in r._mapping.items() if k != "cluster"} for r in _rows(db, sa.select(s.workloads).where(
            s.workloads.c.cluster == cluster).order_by(s.workloads.c.key))]
        assert [r["key"] for r in stored] == [r["key"] for r in expected]
        for got, want in zip(stored, expected):
            for name in ("queued_at", "admitted_at"):  # SQLite hands back naive UTC datetimes
                if got[name] is not None and got[name].tzinfo is None:
                    got[name] = got[name].replace(tzinfo=timezone.utc)
            assert got == want, got["key"]
        statuses = {r["status"] for r in stored}
        assert {"Pending", "Admitted"} <= statuses if source == "example" else {"Admitted", "Finished"} <= statuses
