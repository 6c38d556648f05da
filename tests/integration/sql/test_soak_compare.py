"""``benchmarks/kafka_soak.py`` compares two stores row by row; payloads with integers beyond 64 bits
(a hostile producer's, archived as received) compare exactly instead of crashing the comparison, on
SQLite and PostgreSQL."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from replay.store.db import upgrade_schema
from statemodel import sql_schema as s
from tests.paths import ROOT


@pytest.fixture
def kafka_soak() -> Iterator[object]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        yield importlib.import_module("kafka_soak")
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def _store(url: str, big: str) -> None:
    upgrade_schema(url)
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text("INSERT INTO events (cluster, position, status, payload) VALUES ('c', 0, 'applied', "
                                 ":p)"), {"p": f'{{"id":"e","type":"Tick","big":{big}}}'})
    finally:
        engine.dispose()


def test_payloads_with_integers_beyond_64_bits_compare_exactly(db: str, kafka_soak) -> None:
    _store(db, str(2**70))
    rows = kafka_soak.table_rows(db)
    assert len(rows["events"]) == 1 and str(2**70).encode() in rows["events"][0]
    assert kafka_soak.table_rows(db) == rows
    engine = sa.create_engine(db, poolclass=sa.pool.NullPool)
    try:
        with engine.begin() as conn:
            conn.execute(s.events.delete())
    finally:
        engine.dispose()
    _store(db, str(2**70 + 1))  # differs beyond a double's precision: the comparison sees it
    assert kafka_soak.table_rows(db)["events"] != rows["events"]
