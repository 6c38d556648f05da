"""Properties of pod sets placed together, over random histories through the whole engine (the
spine/rack cluster of ``test_placement``): Kueue podSet groups (a leader and its workers,
``podSetGroupName``, required rack or spine), Kueue slices (required spine, slices of
``podSetSliceSize`` pods per rack) and KAI nested sub-groups (a parent required in one spine, two
children each required in one rack) arriving and finishing while nodes come, go and are cordoned.

After every event: no node the step placed pods on holds more than its allocatable; every pod of
an admitted group sits in one domain of the group's level; the pods a sliced pod set has in each
rack are a multiple of the slice size (each slice lies in one rack); the pods of a sub-group tree
share one spine and each child's pods one rack.  A snapshot at any point plus the tail equals the
full replay."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from statemodel.engine import Engine
from statemodel.events.decode import parse_event
from tests.property.test_placement import NODES, SETTINGS, finish_op, node_op, node_operation
from tests.property.test_snapshot import check_snapshot_plus_tail
from tests.scenario.builder import Scenario
from tests.scenario.placement.helpers import gang, node, placement_on, quota_cluster, tas_flavor, topology

HOST = "kubernetes.io/hostname"
LABELS = {name: {"spine": spine, "rack": rack} for name, spine, rack in NODES}
DEPTH = {"spine": "spine", "rack": "rack"}

group_op = st.tuples(st.just("group"), st.integers(1, 4), st.integers(1, 6), st.integers(1, 6),
                     st.sampled_from(("rack", "spine")))
slice_op = st.tuples(st.just("slices"), st.integers(1, 3), st.integers(1, 3), st.integers(1, 6))
sub_op = st.tuples(st.just("subgroups"), st.integers(1, 2), st.integers(1, 2), st.integers(1, 6))
operation = st.one_of(group_op, slice_op, sub_op, finish_op, finish_op, node_op)


def _history(ops: list) -> tuple[Scenario, dict[str, tuple]]:
    """The events, and per workload key what it asked for (the op)."""
    s = Scenario()
    placement_on(s)
    tas_flavor(s, "default", "net")
    quota_cluster(s, cpu="60")
    topology(s, "net", ["spine", "rack", HOST])
    for name, spine, rack in NODES:
        node(s, name, {"spine": spine, "rack": rack}, cpu="8")
    asked: dict[str, tuple] = {}
    for op in ops:
        key = f"ns/j{len(asked)}"
        if op[0] == "group":
            _, workers, leader_cpu, worker_cpu, level = op
            request = {"required": level, "podSetGroupName": "g"}
            gang(s, key, "q", [{"name": "leader", "count": 1, "requests": {"cpu": str(leader_cpu)}, "topologyRequest": request},
                               {"name": "workers", "count": workers, "requests": {"cpu": str(worker_cpu)},
                                "topologyRequest": request}])
            asked[key] = op
        elif op[0] == "slices":
            _, size, slices, cpu = op
            gang(s, key, "q", [{"name": "main", "count": size * slices, "requests": {"cpu": str(cpu)},
                                "topologyRequest": {"required": "spine", "podSetSliceRequiredTopology": "rack",
                                                    "podSetSliceSize": size}}])
            asked[key] = op
        elif op[0] == "subgroups":
            _, a, b, cpu = op
            groups = [{"name": "parent", "topologyConstraint": {"topology": "net", "requiredTopologyLevel": "spine"}},
                      {"name": "a", "parent": "parent", "topologyConstraint": {"topology": "net", "requiredTopologyLevel": "rack"}},
                      {"name": "b", "parent": "parent", "topologyConstraint": {"topology": "net", "requiredTopologyLevel": "rack"}}]
            gang(s, key, "q", [{"name": name, "count": count, "requests": {"cpu": str(cpu)},
                                "labels": {"kai.scheduler/subgroup-name": name}} for name, count in (("a", a), ("b", b))],
                 annotations={"kai.scheduler/subgroups": json.dumps(groups)})
            asked[key] = op
        elif op[0] == "finish":
            if asked:
                s.finish(f"ns/j{op[1] % len(asked)}")
        else:
            node_operation(s, op)
    return s, asked


def _domains(nodes: dict[str, int], level: str) -> set[str]:
    return {LABELS[n]["spine"] if level == "spine" else LABELS[n]["rack"] for n in nodes}


def _check(engine: Engine, asked: dict[str, tuple], decisions: list[dict]) -> None:
    state = engine.state()["clusters"]["default"]
    for d in decisions:
        if d["type"] != "Admitted":
            continue
        for pods in d["nodes"].values():
            for name in pods:
                n = state["nodes"][name]
                for res, used in n["allocated"].items():
                    assert used <= n["allocatable"].get(res, 0), (d["workload"], name, n)
        op = asked[d["workload"]]
        nodes = d["nodes"]
        everything = {n: p for pods in nodes.values() for n, p in pods.items()}
        if op[0] == "group":
            assert len(_domains(everything, op[4])) == 1, (d["workload"], nodes)
        elif op[0] == "slices":
            size = op[1]
            per_rack: dict[str, int] = {}
            for n, p in nodes["main"].items():
                per_rack[LABELS[n]["rack"]] = per_rack.get(LABELS[n]["rack"], 0) + p
            assert all(p % size == 0 for p in per_rack.values()), (d["workload"], per_rack)
            assert len(_domains(everything, "spine")) == 1
        elif op[0] == "subgroups":
            assert len(_domains(everything, "spine")) == 1, (d["workload"], nodes)
            assert all(len(_domains(pods, "rack")) == 1 for pods in nodes.values()), (d["workload"], nodes)


@SETTINGS
@given(st.lists(operation, min_size=1, max_size=30))
def test_groups_slices_and_sub_groups_hold_their_domains(ops):
    s, asked = _history(ops)
    engine = Engine()
    for e in s.events:
        _check(engine, asked, [d.to_json() for d in engine.apply(parse_event(e))])


@SETTINGS
@given(st.lists(operation, min_size=1, max_size=30), st.integers(0, 50))
def test_snapshot_plus_tail_equals_full_replay_with_groups(ops, cut):
    s, _ = _history(ops)
    check_snapshot_plus_tail(s.events, cut)
