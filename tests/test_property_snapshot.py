"""Property test: a snapshot at any point plus the tail of the events equals the full replay.

Random histories from the churn generator (cohort cycles, moves, deletions, stop policies, AFS on
and off, observed admissions over quota, evictions, ticks).  The engine that was dumped and
restored at a random position must produce the same decisions afterwards, the same state JSON
and the same hash as the engine that never stopped.
"""

from __future__ import annotations

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statemodel.engine import Engine
from statemodel.events import parse_event
from statemodel.snapshot import SnapshotError, dump, load
from tests.scenario import Scenario
from tests.test_property_engine_churn import _emit, operation


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
