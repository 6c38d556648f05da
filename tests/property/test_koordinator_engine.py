"""Properties of the ``koordinator`` model over random histories through the whole engine: a two-level
ElasticQuota tree, pods arriving, finishing, being deleted, nodes coming and going, ticks driving the
recycling monitor, the ``ElasticQuotaGuaranteeUsage`` gate switched on and off.  After every event,
each lending group's runtime is at least ``min(limited request, autoScaleMin)`` while its parent's floors fit, children never share more than
their parent's runtime when their floors fit, and no scheduled admission exceeds runtime; a snapshot
at any point plus the tail equals the full replay (decisions, state, hash); a second replay is
byte-identical."""

from __future__ import annotations

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statemodel.engine import Engine
from statemodel.events.decode import parse_event
from tests.property.test_snapshot import check_snapshot_plus_tail
from tests.scenario.koordinator.kbuilder import KoordScenario

GPU = "nvidia.com/gpu"
LEAVES = ("a1", "a2", "b1", "b2", "b3")
PARENTS = {"a1": "pa", "a2": "pa", "b1": "pb", "b2": "pb", "b3": "pb"}

pod_op = st.tuples(st.just("pod"), st.sampled_from(LEAVES), st.integers(1, 12), st.integers(0, 3), st.booleans())
finish_op = st.tuples(st.just("finish"), st.integers(0, 40))
delete_op = st.tuples(st.just("delete"), st.integers(0, 40))
node_op = st.tuples(st.just("node"), st.sampled_from(("n1", "n2")), st.integers(0, 60))
tick_op = st.tuples(st.just("tick"), st.integers(1, 200))
gate_op = st.tuples(st.just("gate"), st.booleans())
operation = st.one_of(pod_op, pod_op, finish_op, delete_op, node_op, tick_op, gate_op)


def _history(ops: list, leaf_min: dict[str, int], lend: dict[str, bool]) -> KoordScenario:
    s = KoordScenario(monitorAllQuotas=True, delayEvictTime="30s")
    s.node("n1", {GPU: 40})
    s.node("n2", {GPU: 20})
    s.quota("pa", min={GPU: 30}, max={GPU: 60}, is_parent=True)
    s.quota("pb", min={GPU: 30}, max={GPU: 60}, is_parent=True)
    for leaf in LEAVES:
        s.quota(leaf, min={GPU: leaf_min[leaf]}, max={GPU: 40}, parent=PARENTS[leaf], lend=lend[leaf])
    clock = 10.0
    pods: list[str] = []
    for op in ops:
        clock += 1
        if op[0] == "pod":
            _, leaf, gpu, priority, preemptible = op
            key = f"ns/p{len(pods)}"
            pods.append(key)
            s.pod(key, quota=leaf, priority=priority, preemptible=None if preemptible else False, gpu=gpu, at=clock)
        elif op[0] == "finish" and pods:
            s.finish(pods[op[1] % len(pods)], at=clock)
        elif op[0] == "delete" and pods:
            s.delete_pod(pods[op[1] % len(pods)], at=clock)
        elif op[0] == "node":
            s.node(op[1], {GPU: op[2]}, at=clock)
        elif op[0] == "tick":
            clock += op[1]
            s.tick(at=clock)
        elif op[0] == "gate":
            s.config(monitorAllQuotas=True, delayEvictTime="30s",
                     featureGates={"ElasticQuotaGuaranteeUsage": op[1]}, at=clock)
    return s


leaf_mins = st.fixed_dictionaries({leaf: st.integers(0, 15) for leaf in ("a1", "a2")}
                                  | {leaf: st.integers(0, 10) for leaf in ("b1", "b2", "b3")})
lendings = st.fixed_dictionaries({leaf: st.booleans() for leaf in LEAVES})
SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _check_invariants(state: dict) -> None:
    quotas = state["elasticQuotas"]
    by_parent: dict[str, list[str]] = {}
    for name, q in quotas.items():
        if q["parent"] is not None:
            by_parent.setdefault(q["parent"], []).append(name)
    for parent, children in by_parent.items():
        total = quotas[parent]["runtime"].get(GPU, 0)
        floors = 0
        for c in children:
            q = quotas[c]
            mn = max(q["autoScaleMin"].get(GPU, 0), q["guaranteed"].get(GPU, 0))
            req = min(q["request"].get(GPU, 0), q["max"].get(GPU, 0))
            floors += (mn if req > mn or not q["allowLentResource"] else req)
        if floors > total:
            continue
        assert sum(quotas[c]["runtime"].get(GPU, 0) for c in children) <= total
        for c in children:
            q = quotas[c]
            if q["allowLentResource"]:
                limited = min(q["request"].get(GPU, 0), q["max"].get(GPU, 0))
                assert q["runtime"].get(GPU, 0) >= min(limited, q["autoScaleMin"].get(GPU, 0)), c


@SETTINGS
@given(st.lists(operation, min_size=1, max_size=40), leaf_mins, lendings)
def test_runtime_floors_and_admissions_within_runtime(ops: list, leaf_min: dict, lend: dict) -> None:
    s = _history(ops, leaf_min, lend)
    engine = Engine()
    for raw in s.events:
        for d in engine.apply(parse_event(raw)):
            if str(d.kind) == "Admitted":
                q = engine.state()["clusters"]["default"]["elasticQuotas"][d.cluster_queue]
                assert q["used"].get(GPU, 0) <= q["runtime"].get(GPU, 0), d.workload
        _check_invariants(engine.state()["clusters"]["default"])


@SETTINGS
@given(st.lists(operation, min_size=1, max_size=40), leaf_mins, lendings, st.integers(0, 60))
def test_snapshot_plus_tail_equals_full_replay(ops: list, leaf_min: dict, lend: dict, cut: int) -> None:
    s = _history(ops, leaf_min, lend)
    events, full_decisions, full = check_snapshot_plus_tail(s.events, cut)
    again = Engine()
    assert [[d.to_json() for d in again.apply(e)] for e in events] == full_decisions
    assert orjson.dumps(again.state()) == orjson.dumps(full.state())
