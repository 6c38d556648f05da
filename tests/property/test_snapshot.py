"""Property test: a snapshot at any point plus the tail of the events equals the full replay.

Random histories from the churn generator (cohort cycles, moves, deletions, stop policies, AFS on
and off, observed admissions over quota, evictions, ticks).  The engine that was dumped and
restored at a random position must produce the same decisions afterwards, the same state JSON
and the same hash as the engine that never stopped.  The same histories replayed into SQLite and
PostgreSQL restore, at a random moment, exactly the engine of the prefix, and store the same chain.
"""

from __future__ import annotations

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statemodel.engine import Engine
from statemodel.events.decode import parse_event
from statemodel.snapshot import SnapshotError, dump, load
from tests.scenario.builder import Scenario
from tests.property.test_engine_churn import _emit, operation


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(operation(), min_size=1, max_size=50), st.integers(min_value=0, max_value=50))
def test_snapshot_plus_tail_equals_full_replay(ops, cut):
    s = Scenario()
    clock = [0.0]
    for op in ops:
        _emit(s, op, clock)
    events = [parse_event(e) for e in s.events]
    cut = min(cut, len(events))

    full = Engine()
    full_decisions = [[d.to_json() for d in full.apply(e)] for e in events]

    head = Engine()
    for e in events[:cut]:
        head.apply(e)
    restored = load(dump(head))
    assert dump(restored) == dump(head)
    tail_decisions = [[d.to_json() for d in restored.apply(e)] for e in events[cut:]]

    assert tail_decisions == full_decisions[cut:]
    assert restored.hash == full.hash
    assert orjson.dumps(restored.state()) == orjson.dumps(full.state())


def test_refuses_foreign_blobs():
    with pytest.raises(SnapshotError):
        load(b"not a snapshot")


# --------------------------------------------------------------------------- through the SQL store


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                                    HealthCheck.function_scoped_fixture])
@given(ops=st.lists(operation(), min_size=1, max_size=40), snapshot_every=st.integers(min_value=1, max_value=12),
       batch_size=st.integers(min_value=1, max_value=9), data=st.data())
def test_sql_snapshot_plus_archived_tail_equals_full_replay_on_both_databases(
        tmp_path_factory, postgres_url, ops, snapshot_every, batch_size, data):
    """Replayed into SQLite and PostgreSQL (snapshots every ``snapshot_every`` events, ``batch_size``
    events per transaction), the state restored at a random position — nearest stored snapshot plus
    the archived tail (``replay.store.restore``) — equals replaying the prefix directly, and both
    databases store the same hash chain."""
    from replay.store.restore import engine_at
    from replay.sql_sink import replay_to_db

    s = Scenario("churn")
    clock = [0.0]
    for op in ops:
        _emit(s, op, clock)
    path = tmp_path_factory.mktemp("churn") / "events.ndjson"
    path.write_bytes(s.events_ndjson())
    events = [parse_event(e) for e in s.events]
    lite = f"sqlite:///{path.parent / 'store.db'}"
    restored = {}
    cut = data.draw(st.integers(min_value=1, max_value=len(events)), label="position")
    for url in (lite, postgres_url):
        replay_to_db(str(path), url, snapshot_every=snapshot_every, batch_size=batch_size, replace=True)
        # the moment: the time of event `cut - 1`, up to the last event at that time
        at = events[cut - 1].time_ms
        engine, end, start = engine_at(url, "churn", at_ms=at)
        assert end == max(i for i, e in enumerate(events) if e.time_ms <= at) + 1 and start <= end
        expected = Engine()
        for e in events[:end]:
            expected.apply(e)
        assert engine.hash == expected.hash
        assert orjson.dumps(engine.state()) == orjson.dumps(expected.state())
        full, _, _ = engine_at(url, "churn")
        restored[url] = full.hash
    assert restored[lite] == restored[postgres_url]
