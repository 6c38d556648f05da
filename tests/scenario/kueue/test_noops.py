"""Events that change nothing leave everything as it was: no admission cycle, no decision, the same
state.  A ``Deleted`` of an object that does not exist is such an event (Kubernetes answers it with
NotFound and no watch event at all)."""

from __future__ import annotations

import copy

import pytest

from tests.scenario.builder import Scenario


def waiting_scenario() -> Scenario:
    """One ClusterQueue with 4 cpu: w1 (3 cpu) admitted, w2 (2 cpu) waits for quota, w3 (8 cpu) can never fit."""
    s = Scenario()
    s.flavor("default")
    s.cohort("org")
    s.cq("a", cohort="org", quotas={"cpu": "4"})
    s.lq("ns/q", "a")
    s.submit("ns/w1", "q", cpu="3")
    s.submit("ns/w2", "q", cpu="2")
    s.submit("ns/w3", "q", cpu="8")
    s.run()
    assert s.workload("ns/w2")["status"] == "Pending"
    return s


def _state(s: Scenario) -> dict:
    """The cluster's state JSON without its ``hash`` (the hash chain covers every event, no-ops too)."""
    state = copy.deepcopy(s.state())
    del state["hash"]
    return state


def _messages(s: Scenario) -> list[object]:
    infos = s.engine.clusters[s.cluster].workloads
    return [infos[key].message for key in ("ns/w2", "ns/w3")]


@pytest.mark.parametrize("delete", [
    lambda s, at: s.delete_cq("missing", at=at),
    lambda s, at: s.delete_cohort("missing", at=at),
    lambda s, at: s.delete_cohort("a", at=at),  # a ClusterQueue's name, not a Cohort's
    lambda s, at: s.delete_lq("ns/missing", at=at),
    lambda s, at: s.delete_flavor("missing", at=at),
    lambda s, at: s.delete_workload("ns/missing", at=at),
    lambda s, at: s.delete_engine_config(at=at),
    lambda s, at: s.emit("Deleted", at=at, object={"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n9"}}),
])
def test_deleting_what_does_not_exist_changes_nothing(delete):
    s = waiting_scenario()
    at = s._clock  # the last event's instant: the clock does not move
    before = _state(s)
    messages = _messages(s)
    delete(s, at)
    assert s.run() == []
    assert s.rejections == []
    assert _state(s) == before
    # Not even re-evaluated: the pending messages are the very objects the last cycle wrote.
    assert all(a is b for a, b in zip(_messages(s), messages))


def test_deleting_a_missing_object_later_only_moves_the_clock():
    s = waiting_scenario()
    before = _state(s)
    messages = _messages(s)
    s.delete_cq("missing")
    assert s.run() == []
    after = _state(s)
    assert after["time"] != before["time"]
    assert {**after, "time": before["time"]} == before
    assert all(a is b for a, b in zip(_messages(s), messages))


def test_deleting_an_existing_object_still_wakes_the_waiters():
    """The counterpart: deleting a real object is a configuration change (w2 is re-evaluated)."""
    s = waiting_scenario()
    messages = _messages(s)
    s.delete_flavor("default")
    s.run()
    assert s.workload("ns/w2")["status"] == "Pending"
    assert _messages(s)[0] is not messages[0]
