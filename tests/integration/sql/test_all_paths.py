"""Every path that feeds the engine goes through the one driver (``statemodel.driver``) and gets the
same step results for the same file: the closed-loop simulator that writes the file, the file
replay, the SQL sink, the Kafka ingest worker's store, verify, point-in-time restore and what-if
with an empty patch.

The file is a real trace slice simulated under its generated quota (``tests/data/dlrm_slice.csv``,
cluster ``dlrm``), then the shipped example (cluster ``ml-east``), then a duplicate, a line that is
not JSON and an invalid event, so applied, duplicate and rejected steps all occur (the line that is
not JSON names no cluster with state: a dead letter only, on every path).  A step is
compared as ``(position, event id, status, decisions as canonical JSON, hash-chain value after it)``;
the file replay's steps are the reference.  The ingest store is fed the file's lines as the consumer
hands records over (offset = line number, key = what ``quotaledger produce`` keys them by), without
a broker: the Kafka transport is covered by tests/integration/kafka.  All on SQLite.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import sqlalchemy as sa
from aiokafka.structs import ConsumerRecord, TopicPartition

from replay.runner import run_file
from replay.sim.importers.dlrm import import_dlrm
from replay.sim.quota_tree import generate_quota
from replay.sim.simulator import simulate
from replay.sql_sink import replay_to_db
from replay.store.archive import ArchiveBatch
from replay.store.db import create_db_engine, salvage, upgrade_schema
from replay.store.restore import restore
from replay.verify import verify
from replay.whatif import whatif
from statemodel import sql_schema as s
from statemodel.driver import StepResult
from statemodel.timefmt import parse_duration, parse_time
from streams.ingest_store import IngestStats, IngestStore
from streams.producer import cluster_key
from tests.paths import DATA, EXAMPLE

Step = tuple[int, str | None, str, tuple[bytes, ...], str | None]
"""``(source position, event id, status, decisions as canonical JSON, chain hex or None)``."""

TP = TopicPartition("paths.events", 0)
SNAPSHOT_EVERY = 10
"""Events of a cluster between two snapshots in the stores written here (restores replay tails)."""


def _canon(obj: object) -> bytes:
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)


def _step(step: StepResult) -> Step:
    ident = step.event.id if step.event is not None else step.rejection.event_id  # type: ignore[union-attr]
    chain = None if step.rejection is not None else step.chain.hex()  # type: ignore[union-attr]
    return step.position, ident, step.status, tuple(_canon(d.to_json()) for d in step.decisions), chain


def _write_file(path: Path) -> list[Step]:
    """Write the test file (module docstring); the simulator's own steps."""
    trace = import_dlrm(DATA / "dlrm_slice.csv")
    steps: list[StepResult] = []
    simulate(trace, generate_quota(trace), path, tick_ms=parse_duration("1h", "tick"), on_step=steps.append)
    example = [line for line in EXAMPLE.read_bytes().splitlines() if line.strip()]
    bad_event = orjson.dumps({"id": "bad-1", "time": "2026-03-02T12:00:00Z", "cluster": "ml-east", "type": "Tick",
                              "v": 2})
    with path.open("ab") as out:
        out.write(b"\n".join([*example, example[-1], b"{not json", bad_event]) + b"\n")
    return [_step(step) for step in steps]


def _stored_steps(url: str) -> list[Step]:
    """The steps as the archive recorded them: ``events`` rows in source order with their decisions,
    and the ``state_hash`` of a snapshot after the row where one was taken (else ``None``)."""
    db = create_db_engine(url)
    try:
        with db.connect() as conn:
            decisions: dict[tuple[str, int], list[bytes]] = {}
            for row in conn.execute(sa.select(s.decisions).order_by(s.decisions.c.seq)):
                decisions.setdefault((row.cluster, row.cause_position), []).append(_canon(row.payload))
            hashes = {(r.cluster, r.position): r.state_hash for r in conn.execute(sa.select(s.snapshots))}
            events = conn.execute(sa.select(s.events).order_by(s.events.c.source_position)).all()
    finally:
        db.dispose()
    return [(e.source_position, e.event_id, e.status, tuple(decisions.get((e.cluster, e.position), ())),
             hashes.get((e.cluster, e.position + 1))) for e in events]


def _dead_letters(url: str) -> list[sa.Row]:
    db = create_db_engine(url)
    try:
        with db.connect() as conn:
            return conn.execute(sa.select(s.dead_letters).order_by(s.dead_letters.c.source_position)).all()
    finally:
        db.dispose()


def _ingest(lines: list[tuple[int, bytes]], url: str) -> None:
    """Feed ``lines`` to the ingest worker's store in batches of 100 records and commit each batch."""
    upgrade_schema(url)
    db = create_db_engine(url)
    store = IngestStore(db, TP.topic, "paths", ArchiveBatch(snapshot_every=SNAPSHOT_EVERY), 1_000_000, IngestStats())
    try:
        for start in range(0, len(lines), 100):
            records = [ConsumerRecord(TP.topic, TP.partition, n, 0, 0, cluster_key(line), line, None, 0, len(line), ())
                       for n, line in lines[start:start + 100]]
            store.apply({TP: records})
            store.write(store.prepare({TP.partition}))
    finally:
        db.dispose()


def test_every_path_gives_the_same_step_results(tmp_path: Path) -> None:
    path = tmp_path / "history.ndjson"
    simulated = _write_file(path)
    lines = [(n, line) for n, line in enumerate(path.read_bytes().splitlines(), 1)]

    replayed: list[StepResult] = []
    engine, _ = run_file(str(path), on_step=replayed.append)
    reference = [_step(step) for step in replayed]
    assert {r[2] for r in reference} == {"applied", "duplicate", "rejected"}
    assert sum(len(r[3]) for r in reference) > 100

    assert reference[:len(simulated)] == simulated  # the simulator's loop is the driver's

    sunk: list[StepResult] = []
    sink_url = f"sqlite:///{tmp_path / 'sink.db'}"
    replay_to_db(str(path), sink_url, snapshot_every=SNAPSHOT_EVERY, on_step=sunk.append)
    assert [_step(step) for step in sunk] == reference

    # a rejected record naming a cluster without state (the line that is not JSON: cluster "default")
    # is a dead letter only; every other step is archived in its cluster's events
    known: set[str] = set()
    archived = []
    for ref, step in zip(reference, replayed):
        if step.event is not None:
            known.add(step.event.cluster)
        if step.event is not None or salvage(step.record)[0] in known:  # type: ignore[arg-type]
            archived.append(ref)
    assert len(archived) == len(reference) - 1

    ingest_url = f"sqlite:///{tmp_path / 'ingest.db'}"
    _ingest(lines, ingest_url)
    for url in (sink_url, ingest_url):
        stored = _stored_steps(url)
        assert [step[:4] for step in stored] == [step[:4] for step in archived]
        assert [(d.source_position, d.cluster) for d in _dead_letters(url)] == [(len(lines) - 1, None),
                                                                                 (len(lines), "ml-east")]
        snapshotted = [(got[4], want[4]) for got, want in zip(stored, archived)
                       if got[4] is not None and want[2] != "rejected"]  # the restores check the others
        assert len(snapshotted) >= len(reference) // SNAPSHOT_EVERY - 2
        assert all(got == want for got, want in snapshotted)

    for url, source in ((sink_url, None), (ingest_url, None), (ingest_url, str(path))):
        result = verify(url, source)
        assert result.ok, result.summary()
        assert result.hash == engine.hash

    chains: dict[str, list[str]] = {}  # cluster -> chain after each of its archived positions ("" before)
    decided: dict[str, int] = {}
    for (_, _, _, decisions, chain), step in zip(reference, replayed):
        cluster = step.cluster if step.event is not None else salvage(step.record)[0]  # type: ignore[arg-type]
        if cluster not in ("dlrm", "ml-east"):
            continue
        history = chains.setdefault(cluster, [""])  # type: ignore[arg-type]
        history.append(history[-1] if chain is None else chain)
        decided[cluster] = decided.get(cluster, 0) + len(decisions)  # type: ignore[index,arg-type]
    db = create_db_engine(sink_url)
    try:
        with db.connect() as conn:
            for cluster in ("dlrm", "ml-east"):
                for end in [*range(0, len(chains[cluster]), 23), len(chains[cluster]) - 1]:
                    restored, _ = restore(conn, cluster, end)
                    chain = restored.chains.get(cluster)
                    assert (chain.hex() if chain else "") == chains[cluster][end], (cluster, end)
    finally:
        db.dispose()

    patch = tmp_path / "empty.ndjson"
    patch.write_bytes(b"")
    for cluster, from_ms in (("dlrm", None), ("ml-east", None), ("ml-east", parse_time("2026-03-02T09:16:00Z", "t"))):
        report = whatif(sink_url, str(patch), cluster, from_ms)
        assert report.decision_changes == []
        assert report.branches["base"]["hash"] == report.branches["whatif"]["hash"] == chains[cluster][-1]
        assert report.branches["base"]["decisions"] == report.branches["whatif"]["decisions"]
        if from_ms is None:
            assert report.branches["base"]["decisions"] == decided[cluster]
        else:
            assert 0 < report.fork["position"] and report.branches["base"]["decisions"] < decided[cluster]
