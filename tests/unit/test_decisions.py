"""``statemodel.decisions.Decision``: built once with every field, its JSON fixed at construction."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

import statemodel.decisions as decisions_module
from statemodel.decisions import Decision, DecisionType
from statemodel.reasons import EvictionReason
from statemodel.workload import PodSetAssignment

T = 1_772_357_405_000  # 2026-03-01T09:30:05Z


def test_admitted_json() -> None:
    ps = [PodSetAssignment("main", 2, {"cpu": "on-demand", "memory": "on-demand"}, {"memory": 2 * 2**30, "cpu": 3000})]
    d = Decision(7, "e-42", T, "prod-a", DecisionType.ADMITTED, "ns/w", "team-a", pod_sets=ps, borrowing=1)
    assert d.to_json() == {
        "seq": 7, "cause": "e-42", "time": "2026-03-01T09:30:05Z", "cluster": "prod-a", "type": "Admitted",
        "workload": "ns/w", "clusterQueue": "team-a", "borrowing": 1,
        "podSetAssignments": [{"name": "main", "count": 2, "flavors": {"cpu": "on-demand", "memory": "on-demand"},
                               "resourceUsage": {"cpu": "3", "memory": "2147483648"}}],
    }
    assert d.to_json() is d.to_json()


def test_evicted_and_preempted_json() -> None:
    d = Decision(1, "e-1", T, "c", DecisionType.EVICTED, "ns/w", "cq", reason=EvictionReason.LOCAL_QUEUE_STOPPED,
                 message="The LocalQueue is stopped")
    assert orjson.dumps(d.to_json(), option=orjson.OPT_SORT_KEYS) == (
        b'{"cause":"e-1","cluster":"c","clusterQueue":"cq","message":"The LocalQueue is stopped",'
        b'"reason":"LocalQueueStopped","seq":1,"time":"2026-03-01T09:30:05Z","type":"Evicted","workload":"ns/w"}')
    p = Decision(2, "e-2", T, "c", DecisionType.PREEMPTED, "ns/v", "cq", preemptor="ns/w", reason="InClusterQueue",
                 message="m")
    assert {k: p.to_json()[k] for k in ("type", "preemptor", "reason", "message")} == {
        "type": "Preempted", "preemptor": "ns/w", "reason": "InClusterQueue", "message": "m"}
    assert "podSetAssignments" not in p.to_json()


@pytest.mark.skipif(Path(decisions_module.__file__).suffix != ".so", reason="read-only attributes need the compiled build")
def test_fields_are_read_only_when_compiled() -> None:
    d = Decision(1, "e-1", T, "c", DecisionType.EVICTED, "ns/w", "cq")
    with pytest.raises(AttributeError):
        d.seq = 2  # type: ignore[misc]
    with pytest.raises(AttributeError):
        d.cause = "other"  # type: ignore[misc]
