"""The kept binpack orders of constrained pod sets (``NodeLedger.filtered_order``) over random
histories: nodes in two pools and two zones appearing, relabelled, tainted, cordoned and deleted;
gangs on a flavor with ``nodeLabels`` and with or without a ``nodeSelector``, a required node
affinity and a toleration arriving and finishing.  The decisions equal those of the plain scan
(every set matched and sorted per pod set), and every kept order equals a fresh filter and sort
of the ledger's nodes."""

from __future__ import annotations

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statemodel.engine import Engine
from statemodel.events.decode import parse_event
from tests.property.test_placement import scanned_decisions
from tests.scenario.builder import Scenario
from tests.scenario.placement.helpers import delete_node, gang, node, placement_on, quota_cluster, tas_flavor

TAINT = {"key": "dedicated", "value": "batch", "effect": "NoSchedule"}
SELECTORS = (None, {"zone": "z1"}, {"zone": "z2"})
AFFINITIES = (None, {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["z2"]}]}]}}})
TOLERATIONS = (None, [{"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"}],
               [{"operator": "Exists"}])

job_op = st.tuples(st.just("job"), st.integers(1, 4), st.integers(1, 6), st.sampled_from(SELECTORS),
                   st.sampled_from(AFFINITIES), st.sampled_from(TOLERATIONS))
finish_op = st.tuples(st.just("finish"), st.integers(0, 60))
node_op = st.tuples(st.just("node"), st.integers(0, 7), st.sampled_from(("up", "cordon", "taint", "delete")),
                    st.integers(4, 12), st.sampled_from(("a", "b")), st.sampled_from(("z1", "z2")))
operation = st.one_of(job_op, job_op, job_op, finish_op, finish_op, node_op)


def _history(ops: list) -> Scenario:
    s = Scenario()
    placement_on(s, "binpack")
    tas_flavor(s, "default", None, labels={"pool": "a"})
    quota_cluster(s, cpu="60")
    for i in range(8):
        node(s, f"n{i}", {"pool": "a" if i < 6 else "b", "zone": f"z{1 + i % 2}"}, cpu="8")
    jobs = 0
    for op in ops:
        if op[0] == "job":
            _, count, cpu, selector, affinity, tolerations = op
            ps: dict = {"count": count, "requests": {"cpu": str(cpu)}}
            if selector is not None:
                ps["nodeSelector"] = selector
            if affinity is not None:
                ps["affinity"] = affinity
            if tolerations is not None:
                ps["tolerations"] = tolerations
            gang(s, f"ns/j{jobs}", "q", [ps])
            jobs += 1
        elif op[0] == "finish":
            if jobs:
                s.finish(f"ns/j{op[1] % jobs}")
        else:
            _, i, what, cpu, pool, zone = op
            if what == "delete":
                delete_node(s, f"n{i}")
            else:
                node(s, f"n{i}", {"pool": pool, "zone": zone}, cpu=str(cpu), unschedulable=what == "cordon",
                     taints=[TAINT] if what == "taint" else None)
    return s


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(operation, min_size=1, max_size=30))
def test_the_kept_filtered_orders_pick_what_the_scan_picks(ops):
    from statemodel.placement.node_order import fullness

    events = [parse_event(e) for e in _history(ops).events]
    fast = Engine()
    with_index = [[d.to_json() for d in fast.apply(e)] for e in events]
    ledger = fast.clusters["default"].nodes
    for (resources, _), order in ledger._filtered.items():
        admitted = [n for n in ledger.names() if order.admits(ledger.get(n), ledger.labels(n))]
        assert order.entries == sorted((fullness(ledger.free(n), ledger.allocatable(n), resources), n)
                                       for n in admitted)
    assert scanned_decisions(events) == orjson.dumps(with_index)


many_filters_job = st.tuples(st.integers(0, 47), st.integers(1, 2), st.integers(1, 3), st.none() | st.integers(0, 90))
"""a gang: toleration key index, pods, cpu per pod, and an earlier gang to finish after it (or none)"""


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(many_filters_job, min_size=40, max_size=80))
def test_at_most_max_filtered_orders_are_kept_and_a_dropped_one_is_rebuilt_the_same(ops):
    """Gangs tolerating one of 48 taint keys (nodes n0-n3 carry ``t0``-``t3``, so the filters admit
    different nodes): more distinct filters than ``MAX_FILTERED_ORDERS``, so orders are dropped and
    rebuilt.  At most that many are kept, each equals a fresh filter and sort, and the decisions
    equal the plain scan's."""
    from statemodel.placement.node_order import fullness
    from statemodel.placement.nodes import MAX_FILTERED_ORDERS

    s = Scenario()
    placement_on(s, "binpack")
    tas_flavor(s, "default", None)
    quota_cluster(s)
    for i in range(8):
        node(s, f"n{i}", {"zone": f"z{1 + i % 2}"}, cpu="8",
             taints=[{"key": f"t{i}", "value": "x", "effect": "NoSchedule"}] if i < 4 else None)
    for j, (key, count, cpu, finish) in enumerate(ops):
        gang(s, f"ns/j{j}", "q", [{"count": count, "requests": {"cpu": str(cpu)},
                                   "tolerations": [{"key": f"t{key}", "operator": "Exists"}]}])
        if finish is not None:
            s.finish(f"ns/j{finish % (j + 1)}")
    events = [parse_event(e) for e in s.events]
    fast = Engine()
    with_index = [[d.to_json() for d in fast.apply(e)] for e in events]
    ledger = fast.clusters["default"].nodes
    assert len(ledger._filtered) <= MAX_FILTERED_ORDERS
    for (resources, _), order in ledger._filtered.items():
        admitted = [n for n in ledger.names() if order.admits(ledger.get(n), ledger.labels(n))]
        assert order.entries == sorted((fullness(ledger.free(n), ledger.allocatable(n), resources), n)
                                       for n in admitted)
    assert scanned_decisions(events) == orjson.dumps(with_index)


tree_node = st.tuples(st.integers(0, 2), st.integers(0, 2), st.integers(0, 16), st.integers(0, 3))


@settings(max_examples=200, deadline=None)
@given(st.lists(tree_node, min_size=1, max_size=24), st.integers(1, 12), st.integers(0, 2),
       st.integers(-1, 2), st.integers(0, 8))
def test_the_lazy_domain_walk_lists_the_pruned_packing_order(nodes, cpu, gpu, level, cut):
    """``_domains_at`` (the topology plugin's lazy walk) yields, at every level under every scope,
    exactly the pruned packing order ``_level_order`` lists: the same domains in the same order,
    and a walk stopped early yields a prefix of it."""
    from statemodel.objects import Topology
    from statemodel.placement.nodesets import _domains_at, _level_order
    from statemodel.placement.topology import TopologyTree

    tree = TopologyTree(Topology("t", ("block", "rack", "host")))
    for i, (block, rack, free_cpu, free_gpu) in enumerate(nodes):
        tree.add(f"n{i}", {"block": f"b{block}", "rack": f"r{rack}", "host": f"n{i}"},
                 {"cpu": free_cpu, "gpu": free_gpu} if free_gpu else {"cpu": free_cpu})
    total = {"cpu": cpu, "gpu": gpu} if gpu else {"cpu": cpu}
    scopes = [tree.root] + [d for depth in tree.by_level for _, d in sorted(depth.items())]
    for scope in scopes:
        for deepest in range(scope.level + 1, len(tree.levels)):
            want = _level_order(scope, deepest, total, prune=True).get(deepest, [])
            assert [d.id for d in _domains_at(scope, deepest, total, {})] == [d.id for d in want]
            walk = _domains_at(scope, deepest, total, {})
            assert [next(walk).id for _ in range(min(cut, len(want)))] == [d.id for d in want[:cut]]
        if level <= scope.level:
            assert list(_domains_at(scope, level, total, {})) == [scope]
