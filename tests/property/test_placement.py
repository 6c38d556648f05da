"""Properties of the placement stage over random histories through the whole engine: nodes in a
spine/rack topology appearing, cordoned and deleted; gangs with and without KAI / Kueue topology
constraints arriving and finishing.  After every event: no node the engine places pods on holds more
than its allocatable (a node replaced with a smaller allocatable keeps what it holds, as the
kubelet keeps running pods, so only the nodes of the step's admissions are checked); every pod of an admitted gang with a required
level sits in one domain of that level; the nodes' ``workloads`` are exactly the admitted workloads
that hold them.  A second replay is byte-identical, and a snapshot at any point plus the tail
equals the full replay (placements, waiters and topologies included)."""

from __future__ import annotations

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statemodel.engine import Engine
from statemodel.events.decode import parse_event
from tests.property.test_snapshot import check_snapshot_plus_tail
from tests.scenario.builder import Scenario
from tests.scenario.placement.helpers import delete_node, gang, kai, node, placement_on, quota_cluster, tas_flavor, topology

HOST = "kubernetes.io/hostname"
NODES = [(f"n{i}", f"s{i // 4}", f"r{i // 2}") for i in range(8)]  # 2 spines × 2 racks × 2 nodes
CONSTRAINTS = (None, ("kai", "spine", None), ("kai", "rack", None), ("kai", None, "rack"), ("tas", "rack", None),
               ("tas", None, "rack"))

job_op = st.tuples(st.just("job"), st.integers(1, 4), st.integers(1, 6), st.sampled_from(CONSTRAINTS))
finish_op = st.tuples(st.just("finish"), st.integers(0, 60))
node_op = st.tuples(st.just("node"), st.integers(0, 7), st.sampled_from(("up", "cordon", "delete")),
                    st.integers(4, 12))
operation = st.one_of(job_op, job_op, job_op, finish_op, finish_op, node_op)
SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def node_operation(s: Scenario, op: tuple) -> None:
    """A node step of a generated history, ``(_, i, what, cpu)`` on ``NODES[i]``: ``delete`` deletes
    the node, ``cordon`` applies it unschedulable, anything else applies it with ``cpu`` cores."""
    _, i, what, cpu = op
    name, spine, rack = NODES[i]
    if what == "delete":
        delete_node(s, name)
    else:
        node(s, name, {"spine": spine, "rack": rack}, cpu=str(cpu), unschedulable=what == "cordon")


def _history(ops: list, order: str) -> Scenario:
    s = Scenario()
    placement_on(s, order)
    tas_flavor(s, "default", "net")
    quota_cluster(s, cpu="60")
    topology(s, "net", ["spine", "rack", HOST])
    for name, spine, rack in NODES:
        node(s, name, {"spine": spine, "rack": rack}, cpu="8")
    jobs = 0
    for op in ops:
        if op[0] == "job":
            _, count, cpu, constraint = op
            ps: dict = {"count": count, "requests": {"cpu": str(cpu)}}
            annotations = None
            if constraint is not None and constraint[0] == "kai":
                annotations = kai("net", required=constraint[1], preferred=constraint[2])
            elif constraint is not None:
                ps["topologyRequest"] = {"required": constraint[1]} if constraint[1] else {"preferred": constraint[2]}
            gang(s, f"ns/j{jobs}", "q", [ps], annotations=annotations)
            jobs += 1
        elif op[0] == "finish":
            if jobs:
                s.finish(f"ns/j{op[1] % jobs}")
        else:
            node_operation(s, op)
    return s


def _required_level(obj_annotations: dict | None, pod_set: dict) -> str | None:
    if obj_annotations and "kai.scheduler/topology-required-placement" in obj_annotations:
        return obj_annotations["kai.scheduler/topology-required-placement"]
    request = pod_set.get("topologyRequest")
    return request.get("required") if request else None


def _check(engine: Engine, raw_workloads: dict[str, dict], decisions: list[dict]) -> None:
    state = engine.state()["clusters"]["default"]
    for d in decisions:
        if d["type"] == "Admitted":
            for pods in d["nodes"].values():
                for name in pods:
                    n = state["nodes"][name]
                    for res, used in n["allocated"].items():
                        assert used <= n["allocatable"].get(res, 0), (d["workload"], name, n)
    holders: dict[str, set[str]] = {}
    for key, w in state["workloads"].items():
        if w["status"] != "Admitted":
            continue
        obj = raw_workloads[key]
        level = _required_level(obj["metadata"].get("annotations"), obj["spec"]["podSets"][0])
        for psa in w["podSetAssignments"]:
            nodes = psa["nodes"]
            assert sum(nodes.values()) == psa["count"]
            for n in nodes:
                holders.setdefault(n, set()).add(key)
            if level is not None:
                depth = {"spine": 1, "rack": 2}[level]
                domains = {tuple(dict(NODE_LABELS[n]).values())[:depth] for n in nodes}
                assert len(domains) == 1, (key, level, nodes)
    for name, n in state["nodes"].items():
        assert set(n["workloads"]) == holders.get(name, set()), (name, n["workloads"], holders.get(name))


NODE_LABELS = {name: (("spine", spine), ("rack", rack)) for name, spine, rack in NODES}


@SETTINGS
@given(st.lists(operation, min_size=1, max_size=30), st.sampled_from(("binpack", "spread")))
def test_no_node_over_allocated_required_domains_hold_and_replay_is_identical(ops, order):
    s = _history(ops, order)
    events = [parse_event(e) for e in s.events]
    raw_workloads = {f'{e["object"]["metadata"]["namespace"]}/{e["object"]["metadata"]["name"]}': e["object"]
                     for e in s.events if e["type"] == "Applied" and e["object"]["kind"] == "Workload"}
    engine = Engine()
    first = []
    for e in events:
        first.append([d.to_json() for d in engine.apply(e)])
        _check(engine, raw_workloads, first[-1])
    again = Engine()
    second = [[d.to_json() for d in again.apply(e)] for e in events]
    assert orjson.dumps(second) == orjson.dumps(first)
    assert again.hash == engine.hash


@SETTINGS
@given(st.lists(operation, min_size=1, max_size=30), st.sampled_from(("binpack", "spread")), st.integers(0, 50))
def test_snapshot_plus_tail_equals_full_replay_with_placements(ops, order, cut):
    s = _history(ops, order)
    check_snapshot_plus_tail(s.events, cut)


def scanned_decisions(events: list) -> bytes:
    """The decisions of ``events`` (as JSON) with every pod set placed by the scan of its node set
    (``Placer._eligible`` + ``_allocate``) instead of a kept binpack order: what the kept orders
    must reproduce (``PlacementStage.kept_orders`` off on every cluster before each event, as clusters
    appear with their first event)."""
    slow = Engine()
    out = []
    for e in events:
        for cluster in slow.clusters.values():
            cluster.placement.kept_orders = False
        out.append([d.to_json() for d in slow.apply(e)])
    return orjson.dumps(out)


@SETTINGS
@given(st.lists(operation, min_size=1, max_size=30))
def test_the_kept_binpack_order_picks_what_the_scan_picks(ops):
    """An unconstrained pod set walks the ledger's kept binpack order; with that shortcut off every
    set is scanned.  Both give the same decisions, and the kept order always equals a fresh sort."""
    from statemodel.placement.node_order import fullness

    s = _history(ops, "binpack")
    events = [parse_event(e) for e in s.events]
    fast = Engine()
    with_index = [[d.to_json() for d in fast.apply(e)] for e in events]
    ledger = fast.clusters["default"].nodes
    for resources, order in ledger._orders.items():
        fresh = sorted((fullness(ledger.free(n), ledger.allocatable(n), resources), n) for n in ledger.plain())
        assert order.entries == fresh
    assert scanned_decisions(events) == orjson.dumps(with_index)
