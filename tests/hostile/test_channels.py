"""The hostile-input corpus (tests/hostile/corpus.py, ``TEST_SCALE``: about 5,000 lines) through
every channel with the real components: file replay and ``replay --db`` on SQLite and PostgreSQL
(the CLI in a subprocess), and the Kafka ingest worker (``quotaledger ingest`` in a subprocess, on
the test broker) into either store.  On each: exit 0 within the time limit (no crash, no stall),
the clean history's state hash, every rejected line dead-lettered with a reason (counted per
category), duplicates archived as duplicates; the dead-letter rows of the two stores are identical.

The clean history itself is checked apart (test_corpus.py): every line applied, and the edge
section's outcomes worked out by hand from the contract and upstream Kueue.
"""

from __future__ import annotations

import asyncio
import collections
import subprocess
import sys
import time
import uuid
from pathlib import Path

import orjson
import pytest

from replay.verify import verify
from statemodel import sql_schema as s
from streams.devbroker import DEV_SESSION_TIMEOUT_MS
from streams.topics import Topics
from tests.hostile.corpus import DUPLICATE, REJECTED, TEST_SCALE, Corpus, Line, build, expected, simulation, \
    write_file
from tests.ingesthelpers import read_topic, rows

CLI = str(Path(sys.executable).with_name("quotaledger"))
LIMIT_S = 60
"""Most seconds a channel may take: a slower run counts as a stall."""


class Files:
    """The corpus written for the file channels: ``mix`` / ``clean`` paths, the lines in file order,
    and the clean history's state hash (its own file replay)."""

    def __init__(self, root: Path) -> None:
        self.corpus: Corpus = build(TEST_SCALE, simulation(root / "simulation.ndjson"))
        self.mix = root / "mix.ndjson"
        self.clean = root / "clean.ndjson"
        self.mix_lines = write_file(self.corpus.mix, self.mix)
        write_file(self.corpus.clean, self.clean)
        done, state = replay(self.clean, root / "clean-state.json")
        assert done.returncode == 0, done.stderr
        self.clean_hash = state["hash"]


def replay(path: Path, state_out: Path, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    """``quotaledger replay PATH --state-out STATE_OUT ARGS``; the completed process and the state JSON."""
    started = time.monotonic()
    done = subprocess.run([CLI, "replay", str(path), "--state-out", str(state_out), *args], capture_output=True,
                          text=True, timeout=LIMIT_S * 2)
    assert time.monotonic() - started < LIMIT_S, f"replay {args} took {time.monotonic() - started:.0f} s"
    return done, orjson.loads(state_out.read_bytes()) if done.returncode == 0 else {}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Files:
    return Files(tmp_path_factory.mktemp("hostile"))


def _rejected_lines(stderr: str) -> list[int]:
    return [int(line.split()[2]) for line in stderr.splitlines() if line.startswith("rejected line ")]


def test_file_replay(files: Files, tmp_path: Path) -> None:
    done, state = replay(files.mix, tmp_path / "state.json")
    assert done.returncode == 0, done.stderr[-2000:]
    assert state["hash"] == files.clean_hash
    want = [n for n, line in enumerate(files.mix_lines, 1) if line.outcome == REJECTED]
    assert _rejected_lines(done.stderr) == want
    assert state["events"]["rejected"] == len(want)
    assert state["events"]["duplicates"] == sum(expected(files.mix_lines, DUPLICATE).values())


def _dead_letters(url: str) -> list[dict]:
    return sorted(rows(url, s.dead_letters, drop=("id",)), key=lambda r: r["source_position"])


def _check_store(url: str, files: Files, lines: list[Line], where: dict[tuple[str, int], Line]) -> list[dict]:
    """The store at ``url`` holds the clean history's hash, a dead letter with a reason for every
    rejected line (counted per category) and a duplicate row for every duplicate; its dead letters."""
    checked = verify(url)
    assert checked.ok, checked.summary()
    assert checked.hash == files.clean_hash
    dead = _dead_letters(url)
    assert all(r["reason"] for r in dead)
    got = collections.Counter(where[(r["source"], r["source_position"])].category for r in dead)
    assert got == expected(lines, REJECTED)
    duplicates = [r for r in rows(url, s.events) if r["status"] == DUPLICATE]
    assert collections.Counter(where[(r["cluster"], r["source_position"])].category for r in duplicates
                               ) == expected(lines, DUPLICATE)
    return dead


def test_replay_db_on_sqlite_and_postgresql(files: Files, tmp_path: Path, postgres_url: str) -> None:
    sqlite = f"sqlite:///{tmp_path / 'store.db'}"
    dead = {}
    for url in (sqlite, postgres_url):
        done, state = replay(files.mix, tmp_path / "state.json", "--db", url, "--snapshot-every", "500")
        assert done.returncode == 0, done.stderr[-2000:]
        assert state["hash"] == files.clean_hash
        where = {(str(files.mix), n): line for n, line in enumerate(files.mix_lines, 1)}
        where.update({(line.key.decode(), n): line for n, line in enumerate(files.mix_lines, 1)
                      if line.outcome == DUPLICATE and line.key})
        dead[url] = _check_store(url, files, files.mix_lines, where)
        tree = subprocess.run([CLI, "state", "--db", url, "--cluster", "edge-chain"], capture_output=True, text=True,
                              timeout=LIMIT_S)
        assert tree.returncode == 0, tree.stderr[-2000:]
    assert dead[sqlite] == dead[postgres_url]

    # a rerun with --replace leaves the same rows, the dead letters of unknown clusters included
    done, _ = replay(files.mix, tmp_path / "state.json", "--db", sqlite, "--snapshot-every", "500", "--replace")
    assert done.returncode == 0, done.stderr[-2000:]
    assert _dead_letters(sqlite) == dead[sqlite]


def _produce(bootstrap: str, topic: str, lines: list[Line]) -> list[tuple[int, int]]:
    """Send ``lines`` (key and value as they are, tombstones included) in order; their
    ``(partition, offset)``."""
    from aiokafka import AIOKafkaProducer

    async def main() -> list[tuple[int, int]]:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=False, linger_ms=10,
                                    max_request_size=TEST_SCALE.kafka_max + 2**20)
        await producer.start()
        try:
            sent = [await producer.send(topic, key=line.key, value=line.value) for line in lines]
            return [(meta.partition, meta.offset) for meta in await asyncio.gather(*sent)]
        finally:
            await producer.stop()

    return asyncio.run(main())


def test_kafka_ingest(files: Files, kafka_bootstrap: str, db: str) -> None:
    topics = Topics(f"h{uuid.uuid4().hex[:10]}")
    lines = [line for line in files.corpus.mix if line.kafka]
    positions = _produce(kafka_bootstrap, topics.events, lines)
    url = db
    started = time.monotonic()
    done = subprocess.run([CLI, "ingest", "--bootstrap", kafka_bootstrap, "--db", url, "--topic-prefix", topics.prefix,
                           "--session-timeout-ms", str(DEV_SESSION_TIMEOUT_MS), "--exit-when-idle", "3",
                           "--max-batch", "500", "--snapshot-every", "500"],
                          capture_output=True, text=True, timeout=LIMIT_S * 2)
    assert done.returncode == 0, done.stderr[-2000:]
    assert time.monotonic() - started < LIMIT_S
    where = {(f"{topics.events}/{p}", o): line for (p, o), line in zip(positions, lines)}
    where.update({(line.key.decode(), o): line for (_, o), line in zip(positions, lines)
                  if line.outcome == DUPLICATE and line.key})
    dead = _check_store(url, files, lines, where)
    assert sum(r["next_offset"] for r in rows(url, s.ingest_offsets)) == len(lines)
    assert len(read_topic(kafka_bootstrap, topics.dlq, len(dead))) == len(dead)

