"""Property test: the ingest worker's per-batch projection rows equal a full rewrite after every batch.

The worker rewrites only the projection rows a batch can have changed (the workloads its events
and decisions named, every pending workload, the small per-queue tables; streams/ingest.py).
Random histories from the churn generator (cohort cycles, moves, deletions of cohorts, queues,
flavors and workloads, stop policies, AFS on and off, observed admissions over quota, evictions,
ticks), cut into random batches, go through the worker's store (``IngestStore.apply`` /
``prepare`` / ``write``, on SQLite); after every batch its projection tables must hold exactly
what a fresh full write of the engine's state holds.  No broker is needed: records are built as
the consumer hands them over.
"""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

import orjson
import sqlalchemy as sa
from aiokafka.structs import ConsumerRecord, TopicPartition
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay.store.archive import ArchiveBatch
from replay.store.projections import PROJECTIONS, ProjectionWriter
from replay.store.db import create_db_engine
from statemodel import sql_schema as s
from streams.ingest_store import IngestStats, IngestStore
from tests.scenario.builder import Scenario
from tests.property.test_engine_churn import _emit, operation

TP = TopicPartition("t.events", 0)


def _record(offset: int, value: bytes) -> ConsumerRecord:
    return ConsumerRecord(TP.topic, TP.partition, offset, 0, 0, b"default", value, None, 7, len(value), ())


def _projections(db: sa.Engine, cluster: str) -> dict[str, list[tuple]]:
    with db.connect() as conn:
        return {t.name: sorted(tuple(r) for r in conn.execute(sa.select(t).where(t.c.cluster == cluster)))
                for t in PROJECTIONS}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(operation(), min_size=1, max_size=40), st.lists(st.integers(min_value=1, max_value=9), min_size=1))
def test_per_batch_projections_equal_a_full_rewrite(ops, cuts):
    scenario = Scenario()
    clock = [0.0]
    for op in ops:
        _emit(scenario, op, clock)
    values = [orjson.dumps(e) for e in scenario.events]
    with tempfile.TemporaryDirectory() as tmp:
        worker_db = create_db_engine(f"sqlite:///{Path(tmp) / 'worker.db'}")
        full_db = create_db_engine(f"sqlite:///{Path(tmp) / 'full.db'}")
        for db in (worker_db, full_db):
            s.metadata.create_all(db)
        store = IngestStore(worker_db, TP.topic, "g", ArchiveBatch(), 1_000_000, IngestStats())
        offset = 0
        for size in itertools.cycle(cuts):
            if offset >= len(values):
                break
            batch = [_record(o, values[o]) for o in range(offset, min(offset + size, len(values)))]
            offset += len(batch)
            store.apply({TP: batch})
            store.write(store.prepare({TP.partition}))
            for cluster, driver in store.drivers.items():
                engine = driver.engine
                if cluster not in engine.clusters:
                    continue
                with full_db.begin() as conn:
                    ProjectionWriter().write(conn, engine, cluster)
                assert _projections(worker_db, cluster) == _projections(full_db, cluster), offset
        worker_db.dispose()
        full_db.dispose()
