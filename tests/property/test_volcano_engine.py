"""Properties of the ``volcano`` model over random histories through the whole engine: a two-level
queue tree, gangs arriving, finishing and being evicted, nodes changing, under each plugin.  After
every event: Σ deserved of a parent's children ≤ the parent's (hierarchical capacity: when the specs
satisfy the webhook; proportion: Σ deserved ≤ the cluster total); no queue's allocation grows beyond
its realCapability (capacity) or deserved (proportion) by a scheduled admission; every admitted
group reaches ``minMember``; reclaim never takes from a non-reclaimable queue nor (capacity) below a
guarantee.  A snapshot at any point plus the tail equals the full replay; a second replay is
byte-identical."""

from __future__ import annotations

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statemodel.engine import Engine
from statemodel.events.decode import parse_event
from tests.property.test_snapshot import check_snapshot_plus_tail
from tests.scenario.volcano.vbuilder import VolcanoScenario

LEAVES = ("a1", "a2", "b1", "b2")
PARENTS = {"a1": "pa", "a2": "pa", "b1": "pb", "b2": "pb"}
PLUGINS = ({}, {"plugin": "capacity"}, {"plugin": "capacity", "enabledHierarchy": True},
           {"plugin": "capacity", "enabledHierarchy": True, "ancestorReclaimLevel": 1})

job_op = st.tuples(st.just("job"), st.sampled_from(LEAVES), st.integers(1, 4), st.integers(1, 4),
                   st.integers(1, 3), st.integers(0, 2), st.booleans())
finish_op = st.tuples(st.just("finish"), st.integers(0, 40))
evict_op = st.tuples(st.just("evict"), st.integers(0, 40))
node_op = st.tuples(st.just("node"), st.sampled_from(("n1", "n2")), st.integers(0, 16))
operation = st.one_of(job_op, job_op, job_op, finish_op, evict_op, node_op)
leaf_specs = st.fixed_dictionaries({leaf: st.tuples(st.integers(1, 4), st.integers(0, 3), st.integers(0, 1),
                                                    st.booleans()) for leaf in LEAVES})
SETTINGS = settings(max_examples=30, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _history(ops: list, plugin: dict, specs: dict) -> VolcanoScenario:
    s = VolcanoScenario(**plugin)
    s.node("n1", {"cpu": 8})
    s.node("n2", {"cpu": 4})
    s.queue("pa", deserved={"cpu": 6}, guarantee={"cpu": 2}, capability={"cpu": 10})
    s.queue("pb", deserved={"cpu": 6}, guarantee={"cpu": 2}, capability={"cpu": 10})
    for leaf in LEAVES:
        weight, deserved, guarantee, reclaimable = specs[leaf]
        s.queue(leaf, parent=PARENTS[leaf], weight=weight, deserved={"cpu": max(deserved, guarantee)},
                guarantee={"cpu": guarantee}, reclaimable=reclaimable)
    clock = 30.0
    groups: list[str] = []
    for op in ops:
        clock += 1
        if op[0] == "job":
            _, leaf, pods, mm, cpu, priority, with_min = op
            key = f"ns/g{len(groups)}"
            groups.append(key)
            s.job(key, leaf, pods=pods, min_member=min(mm, pods), priority=priority, min_resources=with_min,
                  cpu=cpu, at=clock)
        elif op[0] == "finish" and groups:
            s.finish(groups[op[1] % len(groups)], at=clock)
        elif op[0] == "evict" and groups:
            s.evict(groups[op[1] % len(groups)], at=clock)
        elif op[0] == "node":
            s.node(op[1], {"cpu": op[2]}, at=clock)
    return s


def _check(state: dict, plugin: dict, total: int) -> None:
    queues = state["queues"]
    if plugin.get("enabledHierarchy"):
        for parent in ("pa", "pb"):
            if parent not in queues:
                continue
            kids = queues[parent]["children"]
            assert sum(queues[k]["deserved"].get("cpu", 0) for k in kids) <= queues[parent]["deserved"]["cpu"]
    elif not plugin:
        model_sum = sum(q["deserved"].get("cpu", 0) for q in queues.values())
        assert model_sum <= max(total, sum(q["guarantee"].get("cpu", 0) for q in queues.values()))
    for key, g in state["podGroups"].items():
        if g["phase"] == "Running":
            assert g["running"] >= g["minMember"], key


@SETTINGS
@given(st.lists(operation, min_size=1, max_size=30), st.sampled_from(PLUGINS), leaf_specs)
def test_invariants_after_every_event(ops: list, plugin: dict, specs: dict) -> None:
    s = _history(ops, plugin, specs)
    engine = Engine()
    nodes: dict[str, int] = {}
    for raw in s.events:
        before = engine.state()["clusters"].get("default", {}).get("queues", {})
        decisions = engine.apply(parse_event(raw))
        state = engine.state()["clusters"]["default"]
        if raw["type"] == "Applied" and raw["object"]["kind"] == "Node":
            nodes[raw["object"]["metadata"]["name"]] = raw["object"]["status"]["allocatable"]["cpu"] * 1000
        _check(state, plugin, sum(nodes.values()))
        queues = state["queues"]
        for d in decisions:
            d = d.to_json()
            q = queues[d["clusterQueue"]]
            if d["type"] == "Evicted":
                assert before[d["clusterQueue"]]["reclaimable"], d
                if plugin:  # capacity: never below the guarantee
                    assert q["allocated"].get("cpu", 0) >= q["guarantee"].get("cpu", 0), d
            elif d["type"] == "Admitted":
                pg = state["podGroups"][d["workload"]]
                assert pg["running"] >= pg["minMember"]
                limit = q["realCapability"].get("cpu") if plugin else q["deserved"].get("cpu", 0)
                if limit is not None:
                    assert q["allocated"].get("cpu", 0) <= limit, d


@SETTINGS
@given(st.lists(operation, min_size=1, max_size=30), st.sampled_from(PLUGINS), leaf_specs, st.integers(0, 45))
def test_snapshot_plus_tail_equals_full_replay(ops: list, plugin: dict, specs: dict, cut: int) -> None:
    s = _history(ops, plugin, specs)
    events, full_decisions, full = check_snapshot_plus_tail(s.events, cut)
    again = Engine()
    assert [[d.to_json() for d in again.apply(e)] for e in events] == full_decisions
    assert orjson.dumps(again.state()) == orjson.dumps(full.state())
