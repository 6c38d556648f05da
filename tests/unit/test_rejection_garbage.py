"""A rejected record leaves no reference cycle behind: every engine path pauses the cyclic garbage
collector (``statemodel.driver`` "GC note"), so a cycle per rejection would grow the process until the
next full collection (the ingest worker grew by about 1 GB over the hostile benchmark's 113,000
rejected records).  A rejection returned as a value carries no traceback (``EventError.detached``):
each test runs a path over rejected records with the collector paused and asks the collector what
was left unreachable — nothing.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from aiokafka.structs import ConsumerRecord, TopicPartition

from replay.store.archive import ArchiveBatch
from replay.store.db import create_db_engine, upgrade_schema
from statemodel.driver import Driver, decode_line
from statemodel.errors import EventError
from streams.codec import decode_record
from streams.ingest_store import IngestStats, IngestStore
from tests.paths import EXAMPLE

CLEAN = [line for line in EXAMPLE.read_bytes().splitlines() if line.strip()]
BAD = [b"{nope", b"[1]", b'{"id":"x","time":"2026-03-02T09:00:00Z","cluster":"ml-east","type":"Exploded"}',
       b'{"id":"q","time":"2026-03-02T09:00:00Z","cluster":"ml-east","type":"Applied","object":{"apiVersion":'
       b'"kueue.x-k8s.io/v1beta2","kind":"ResourceFlavor","metadata":{"name":"Bad_Name"}}}', b"\xff\xfe"]


@contextmanager
def _unreachable() -> Iterator[list[int]]:
    """Yields a list that receives, after the block, how many objects the collector found unreachable."""
    found: list[int] = []
    was = gc.isenabled()
    gc.disable()
    gc.collect()
    try:
        yield found
        found.append(gc.collect())
    finally:
        if was:
            gc.enable()


def _decode_all(decode, records: list[bytes]) -> list[str]:  # type: ignore[no-untyped-def]
    decoded = []  # held in this frame, as the worker holds a batch's decoded records
    for record in records:
        decoded.append(decode(record))
    return [type(item).__name__ for item in decoded]


def test_decoders_return_rejections_without_cycles() -> None:
    for decode in (decode_line, decode_record):
        with _unreachable() as found:
            assert _decode_all(decode, BAD * 10) == ["EventError"] * len(BAD) * 10
        assert found == [0], decode


def test_the_driver_leaves_no_cycle_per_rejection() -> None:
    driver = Driver()
    for _ in driver.run(enumerate(CLEAN)):
        pass
    records = [(len(CLEAN) + n, line) for n, line in enumerate(BAD * 10)]
    with _unreachable() as found:
        steps = list(driver.run(records))
        assert sum(step.rejection is not None for step in steps) == len(BAD) * 10
        assert all(isinstance(step.rejection, EventError) and step.rejection.__traceback__ is None
                   for step in steps if step.rejection is not None)
        del steps
    assert found == [0]


def test_the_ingest_worker_leaves_no_cycle_per_rejection(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    upgrade_schema(url)
    tp = TopicPartition("garbage.events", 0)
    values = [*CLEAN[:5], *BAD * 10]
    records = [ConsumerRecord(tp.topic, 0, n, 0, 0, b"ml-east", v, None, 0, len(v), ()) for n, v in enumerate(values)]
    db = create_db_engine(url)
    try:
        store = IngestStore(db, tp.topic, "g", ArchiveBatch(), 1_000_000, IngestStats())
        store.apply({tp: records[:5]})  # the cluster and the database connection exist before counting
        store.prepare({0})
        with _unreachable() as found:
            dlq = store.apply({tp: records[5:]})
            assert len(dlq) == len(BAD) * 10
            store.prepare({0})
            del dlq
        assert found == [0]
    finally:
        db.dispose()
