"""Properties of the pod-scheduling models' placement over random histories with nodes: Koordinator
pods and Volcano gangs with and without a node selector arrive, finish and are evicted while nodes
are cordoned, deleted and added back (never shrunk under their pods).  After every event no node
holds more than its allocatable, what the node ledger holds per node is what the pods bound there
ask, and every pod bound by an ``Admitted`` decision sits on a node its selector admits.  A second
replay is byte-identical, and a snapshot at any point plus the tail equals the full replay."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statemodel.engine import Engine
from statemodel.events.decode import parse_event
from tests.property.test_snapshot import check_snapshot_plus_tail
from tests.scenario.koordinator.kbuilder import KoordScenario
from tests.scenario.volcano.vbuilder import VolcanoScenario

NODES = {"n1": ("a", 4), "n2": ("a", 6), "n3": ("b", 8)}
ZONES = (None, "a", "b")

unit_op = st.tuples(st.just("unit"), st.sampled_from(("q1", "q2")), st.integers(1, 3), st.integers(1, 3),
                    st.integers(1, 5), st.sampled_from(ZONES), st.integers(0, 2))
finish_op = st.tuples(st.just("finish"), st.integers(0, 40))
evict_op = st.tuples(st.just("evict"), st.integers(0, 40))
node_op = st.tuples(st.just("node"), st.sampled_from(sorted(NODES)), st.sampled_from(("cordon", "open", "delete")))
operation = st.one_of(unit_op, unit_op, unit_op, finish_op, evict_op, node_op)
SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _koordinator(ops: list) -> list[dict]:
    s = KoordScenario(capacity=None)
    for name, (zone, cpu) in NODES.items():
        s.node(name, {"cpu": cpu}, labels={"zone": zone})
    s.quota("q1", min={"cpu": 8}, max={"cpu": 18})
    s.quota("q2", min={"cpu": 10}, max={"cpu": 18})
    clock, units = 10.0, []
    for op in ops:
        clock += 1
        if op[0] == "unit":
            _, quota, _, _, cpu, zone, priority = op
            key = f"ns/p{len(units)}"
            units.append(key)
            s.pod(key, quota=quota, cpu=cpu, priority=priority, selector=None if zone is None else {"zone": zone},
                  at=clock)
        elif op[0] in ("finish", "evict") and units:
            key = units[op[1] % len(units)]
            (s.finish if op[0] == "finish" else s.evict)(key, at=clock)
        elif op[0] == "node":
            _node(s, op, clock)
    return s.events


def _volcano(ops: list) -> list[dict]:
    s = VolcanoScenario()
    for name, (zone, cpu) in NODES.items():
        s.node(name, {"cpu": cpu}, labels={"zone": zone})
    s.queue("q1", weight=1)
    s.queue("q2", weight=2)
    clock, units = 10.0, []
    for op in ops:
        clock += 1
        if op[0] == "unit":
            _, queue, pods, min_member, cpu, zone, priority = op
            key = f"ns/g{len(units)}"
            units.append(key)
            s.job(key, queue, pods=pods, min_member=min(min_member, pods), priority=priority, cpu=cpu,
                  selector=None if zone is None else {"zone": zone}, at=clock)
        elif op[0] in ("finish", "evict") and units:
            key = units[op[1] % len(units)]
            (s.finish if op[0] == "finish" else s.evict)(key, at=clock)
        elif op[0] == "node":
            _node(s, op, clock)
    return s.events


def _node(s: KoordScenario | VolcanoScenario, op: tuple, clock: float) -> None:
    _, name, what = op
    zone, cpu = NODES[name]
    if what == "delete":
        s.delete_node(name, at=clock)
    else:
        s.node(name, {"cpu": cpu}, labels={"zone": zone}, unschedulable=what == "cordon", at=clock)


def _check(state: dict, decisions: list[dict]) -> None:
    nodes = state["nodes"]
    for name, node in nodes.items():
        for res, amount in node["allocated"].items():
            assert amount <= node["allocatable"].get(res, 0), (name, node)
    bound: dict[str, int] = {}
    for key, pod in state["pods"].items():
        if pod.get("node") is not None:
            request = pod["request"] if "request" in pod else pod["requests"]
            bound[pod["node"]] = bound.get(pod["node"], 0) + request.get("cpu", 0)
    assert {n: a for n, a in bound.items() if a} == {n: node["allocated"].get("cpu", 0) for n, node in nodes.items()
                                                      if node["allocated"].get("cpu", 0)}
    for d in decisions:
        if d["type"] == "Admitted" and "nodes" in d:
            for node in d["nodes"]["main"]:
                assert node in nodes and not nodes[node]["unschedulable"], d


def _replay(raw_events: list[dict]) -> None:
    engine = Engine()
    for raw in raw_events:
        decisions = [d.to_json() for d in engine.apply(parse_event(raw))]
        _check(engine.state()["clusters"]["default"], decisions)


def _selectors_hold(raw_events: list[dict]) -> None:
    """Every pod with a zone selector that an ``Admitted`` decision put on a node is in that zone."""
    zone_of = {name: zone for name, (zone, _) in NODES.items()}
    engine = Engine()
    for raw in raw_events:
        engine.apply(parse_event(raw))
        for key, pod in engine.state()["clusters"]["default"]["pods"].items():
            node = pod.get("node")
            if node is None:
                continue
            wanted = _selector(raw_events, key)
            assert wanted is None or zone_of[node] == wanted, (key, node)


def _selector(raw_events: list[dict], key: str) -> str | None:
    ns, name = key.split("/")
    for raw in raw_events:
        obj = raw.get("object")
        if raw["type"] == "Applied" and obj["kind"] == "Pod" and obj["metadata"]["name"] == name:
            return obj["spec"].get("nodeSelector", {}).get("zone")
    return None


@pytest.mark.parametrize("history", [_koordinator, _volcano], ids=["koordinator", "volcano"])
@SETTINGS
@given(st.lists(operation, min_size=1, max_size=30))
def test_no_node_over_allocated(history, ops: list) -> None:
    events = history(ops)
    _replay(events)
    _selectors_hold(events)


@SETTINGS
@given(st.lists(operation, min_size=1, max_size=30), st.booleans(), st.integers(0, 40))
def test_replay_byte_identical_and_snapshot_plus_tail(ops: list, volcano: bool, cut: int) -> None:
    raw = _volcano(ops) if volcano else _koordinator(ops)
    events, full_decisions, full = check_snapshot_plus_tail(raw, cut)
    again = Engine()
    assert [[d.to_json() for d in again.apply(e)] for e in events] == full_decisions
    assert orjson.dumps(again.state()) == orjson.dumps(full.state())
