"""``streams.batch_codec``: a batch's writes cross the worker → committer pipe unchanged.

The rows come from the real row builders (``ArchiveBatch`` and ``ProjectionWriter`` fed by the
driver running a trace slice), so every type the archive writes is covered: datetimes, verbatim
JSON text, decimals, bytes (dead letters, snapshots), nested JSON values, primary-key tuples.
How the JSON texts that come back as plain ``str`` are stored is checked in test_sql_fast_path.py.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from enum import StrEnum
from pathlib import Path

from tests.ingesthelpers import trace_events

from replay.store.archive import ArchiveBatch, TupleRows
from replay.store.projections import ProjectionWriter
from replay.store.db import RawJSON, salvage
from statemodel.driver import Driver
from statemodel.errors import EventError
from streams.batch_codec import decode, encode


def _batch_writes(tmp_path: Path) -> list:
    lines = trace_events(tmp_path / "slice.ndjson")
    driver, batch, projections = Driver(), ArchiveBatch(snapshot_every=500), ProjectionWriter()
    engine = driver.engine
    writes: list = []
    for i, line in enumerate(lines):
        step = driver.feed(i, line)
        if batch.add_step(step, i):
            batch.add_snapshot(engine, step.cluster, i + 1, i)
        if i in (len(lines) // 2, len(lines) - 1):  # a full projection write, then a partial one (delete_keys)
            writes += batch.take()
            cluster = next(iter(engine.clusters))
            only = None if i == len(lines) // 2 else set()
            writes += projections.changes(engine, cluster, only)
    bad = b'{"id": "x-1", "cluster": "dlrm", "type": 7, "note": "quote \' and \\u00e9"}'
    batch.add_rejected(len(lines), bad, EventError("type", "type must be a string", "x-1"), salvage(bad), "t/0", 9)
    return writes + batch.take()


def _rows(items: object) -> list:
    """The rows of an insert: ``TupleRows`` (the hot tables) or a list of dicts."""
    return items.rows if isinstance(items, TupleRows) else items  # type: ignore[return-value]


def test_every_archive_row_type_round_trips_through_json(tmp_path: Path) -> None:
    writes = _batch_writes(tmp_path)
    offsets = [{"consumer_group": "g", "topic": "t", "topic_partition": 0, "next_offset": 10, "last_event_id": "x-1"}]
    data = encode(writes, offsets)
    assert data[:1] == b"J"  # the fast path, not the pickle fallback
    back, back_offsets = decode(data)
    assert back_offsets == offsets
    assert [(op, table) for op, table, _ in back] == [(op, table) for op, table, _ in writes]
    for (op, table, items), (_, _, expected) in zip(back, writes):
        assert type(items) is type(expected), table.name
        if type(items) is TupleRows:  # rows come back as lists, JSON texts and enum members as plain str of the same text
            assert items.columns == expected.columns, table.name
            assert [tuple(row) for row in items.rows] == [tuple(row) for row in expected.rows], table.name
            assert [[type(v) for v in row] for row in items.rows] == [
                [str if type(v) is RawJSON or isinstance(v, StrEnum) else type(v) for v in row]
                for row in expected.rows], table.name
        else:  # equal AND of the same types
            assert items == expected, table.name
            for row, want in zip(items, expected):
                assert [type(v) for v in (row.values() if isinstance(row, dict) else row)] == [
                    str if isinstance(v, StrEnum) else type(v)
                    for v in (want.values() if isinstance(want, dict) else want)], table.name
    assert {table.name for _, table, items in back if type(items) is TupleRows} >= {"events", "decisions", "workloads"}
    kinds = {type(v) for _, _, items in back if type(items) is list for row in items for v in (
        row.values() if isinstance(row, dict) else row)}
    assert {datetime, Decimal, bytes, tuple} - kinds == {tuple}  # tuples are the delete_keys items, not values
    assert any(op == "delete_keys" and all(type(k) is tuple for k in items) for op, _, items in back)


def test_what_json_cannot_carry_exactly_falls_back_to_pickle(tmp_path: Path) -> None:
    writes = _batch_writes(tmp_path)
    op, table, rows = next(w for w in writes if w[0] == "insert" and w[1].name == "dead_letters")
    huge = [dict(rows[0], source_position=2**70)]  # beyond 64 bits: orjson refuses it
    data = encode([(op, table, huge)], [])
    assert data[:1] == b"P"
    assert decode(data) == ([(op, table, huge)], [])


def test_a_prefix_is_joined_and_a_memoryview_decodes(tmp_path: Path) -> None:
    writes = _batch_writes(tmp_path)
    for fallback in (False, True):
        batch = writes if not fallback else [(op, table, [dict(rows[0], source_position=2**70)])
                                              for op, table, rows in writes if table.name == "dead_letters"]
        data = encode(batch, [], b"+")
        assert data[:1] == b"+" and data[1:2] == (b"P" if fallback else b"J")
        assert decode(memoryview(data)[1:]) == decode(data[1:]) == decode(encode(batch, []))
