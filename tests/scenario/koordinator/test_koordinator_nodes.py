"""Koordinator pods on nodes: after PreFilter (the quota), kube-scheduler's Filter binds a pod to a
node it matches with room (docs/placement.md "Pod-scheduling models").  Worked by hand: binpack
puts a pod on the fullest node that holds it, ties by node name."""

from __future__ import annotations

from statemodel.explain import explain
from tests.scenario.builder import admitted, evicted
from tests.scenario.koordinator.kbuilder import KoordScenario

NODE_LOST = "Workload eviction triggered due to multiple TAS assigned node failures, including: {}"


def _nodes(decisions: list[dict]) -> list[tuple[str, dict]]:
    return [(d["workload"], d["nodes"]["main"]) for d in decisions if d["type"] == "Admitted"]


def test_quota_fits_but_the_nodes_do_not_then_a_finish_makes_room() -> None:
    # two 4-cpu nodes, quota q min = max = 8 (the whole cluster).  a (3) goes on n1 (both empty: the
    # name decides), b (3) on n2 (n1 has 1 left), c (2) passes PreFilter (used 6 + 2 <= 8) but each
    # node has 1 cpu left: 2 cpu are free in all, no node holds the pod.
    s = KoordScenario(capacity=None)
    s.node("n1", {"cpu": 4})
    s.node("n2", {"cpu": 4})
    s.quota("q", min={"cpu": 8}, max={"cpu": 8})
    s.pod("ns/a", quota="q", cpu=3, at=1)
    s.pod("ns/b", quota="q", cpu=3, at=2)
    s.pod("ns/c", quota="q", cpu=2, at=3)
    out = s.run()
    assert _nodes(out) == [("ns/a", {"n1": 1}), ("ns/b", {"n2": 1})]
    c = s.pod_state("ns/c")
    assert (c["status"], c["reason"]) == ("Pending", "Unschedulable")
    assert c["message"].startswith("unschedulable on cluster: Resources were found for 0 pods while 1 are "
                                   "required for gang scheduling (2/2 nodes match)")
    explained = explain(s.engine.clusters[s.cluster], "ns/c")
    assert explained["preFilter"] is None and explained["message"] == c["message"] and explained["node"] is None
    s.finish("ns/a", at=10)
    assert _nodes(s.run()) == [("ns/c", {"n1": 1})]
    assert s.state()["nodes"]["n1"]["allocated"] == {"cpu": 2000}


def test_a_selector_picks_the_second_node_and_a_taint_keeps_pods_off() -> None:
    # n1 (zone a) is fuller and first by name, so binpack would choose it; the pod selects zone b.
    # n3 is tainted NoSchedule: only the pod that tolerates it may go there.
    s = KoordScenario(capacity=None, enableRuntimeQuota=False)
    s.node("n1", {"cpu": 8}, labels={"zone": "a"})
    s.node("n2", {"cpu": 8}, labels={"zone": "b"})
    s.node("n3", {"cpu": 2}, taints=[{"key": "dedicated", "value": "infer", "effect": "NoSchedule"}])
    s.quota("q", max={"cpu": 100})
    s.pod("ns/filler", quota="q", cpu=4, at=1)
    s.pod("ns/picky", quota="q", cpu=1, selector={"zone": "b"}, at=2)
    s.pod("ns/plain", quota="q", cpu=1, at=3)
    s.pod("ns/tolerant", quota="q", cpu=2, selector={"dedicated-pool": "yes"}, at=4,
          tolerations=[{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}])
    out = s.run()
    # filler: n1 (n3 is tainted, n1 < n2 by name); picky: n2; plain: n1 (fullest open node);
    # tolerant selects a label no node has: 0/3 nodes
    assert _nodes(out) == [("ns/filler", {"n1": 1}), ("ns/picky", {"n2": 1}), ("ns/plain", {"n1": 1})]
    assert s.pod_state("ns/tolerant")["message"].startswith(
        "unschedulable on cluster: 0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector")
    s.node("n3", {"cpu": 2}, labels={"dedicated-pool": "yes"},
           taints=[{"key": "dedicated", "value": "infer", "effect": "NoSchedule"}], at=5)
    assert _nodes(s.run()) == [("ns/tolerant", {"n3": 1})]


def test_node_loss_evicts_and_the_pod_goes_on_another_node() -> None:
    # a (3) on n1 (name); n1 is cordoned: a is evicted (Kueue's NodeFailures reason and message) and,
    # pending again, placed on n2 in the same step
    s = KoordScenario(capacity=None, enableRuntimeQuota=False)
    s.node("n1", {"cpu": 4})
    s.node("n2", {"cpu": 4})
    s.quota("q", max={"cpu": 8})
    s.pod("ns/a", quota="q", cpu=3, at=1)
    assert _nodes(s.run()) == [("ns/a", {"n1": 1})]
    s.node("n1", {"cpu": 4}, unschedulable=True, at=2)
    out = s.run()
    assert [(d["type"], d["workload"], d.get("reason"), d.get("message")) for d in out if d["type"] == "Evicted"] == [
        ("Evicted", "ns/a", "NodeFailures", NODE_LOST.format("n1"))]
    assert _nodes(out) == [("ns/a", {"n2": 1})]
    # deleting n2 evicts it again; nothing else can hold it: it waits
    s.delete_node("n2", at=3)
    out = s.run()
    assert evicted(out) == ["ns/a"] and admitted(out) == []
    assert s.pod_state("ns/a")["status"] == "Pending"


def test_a_node_added_wakes_a_pod_waiting_for_nodes() -> None:
    # runtime quota off: max 8 lets the 4-cpu pod pass PreFilter; the only node has 2 cpu
    s = KoordScenario(capacity=None, enableRuntimeQuota=False)
    s.node("n1", {"cpu": 2})
    s.quota("q", max={"cpu": 8})
    s.pod("ns/big", quota="q", cpu=4, at=1)
    assert admitted(s.run()) == []
    assert s.pod_state("ns/big")["message"] == ("unschedulable on cluster: not enough resources in the cluster to "
                                                "allocate the job: cpu requested 4, available 2")
    s.node("n2", {"cpu": 8}, at=2)
    assert _nodes(s.run()) == [("ns/big", {"n2": 1})]


def test_preemption_only_when_the_preemptor_then_fits_a_node() -> None:
    # one 4-cpu node; quota q max 4 (runtime quota off).  low (3, priority 0) runs; high (4,
    # priority 10) needs low's quota: low is preempted, and with low off n1, high fits n1.
    s = KoordScenario(capacity=None, enableRuntimeQuota=False)
    s.node("n1", {"cpu": 4})
    s.quota("q", max={"cpu": 4})
    s.pod("ns/low", quota="q", cpu=3, priority=0, at=1)
    s.run()
    s.pod("ns/high", quota="q", cpu=4, priority=10, at=2)
    out = s.run()
    assert [(d["type"], d["workload"]) for d in out] == [("Preempted", "ns/low"), ("Admitted", "ns/high")]
    assert _nodes(out) == [("ns/high", {"n1": 1})]
    # max 5: a 5-cpu pod of priority 20 passes PreFilter only with high preempted (0 + 5 <= 5), but
    # even with high off n1 the node has 4 cpu: nothing is preempted, huge waits, high keeps n1
    s.quota("q", max={"cpu": 5}, at=3)
    s.pod("ns/huge", quota="q", cpu=5, priority=20, at=4)
    out = s.run()
    assert [d["type"] for d in out if d["type"] in ("Preempted", "Admitted")] == []
    assert s.pod_state("ns/huge")["message"] == ("unschedulable on cluster: not enough resources in the cluster to "
                                                 "allocate the job: cpu requested 5, available 4")
    assert s.pod_state("ns/high")["status"] == "Admitted"
    assert s.state()["nodes"]["n1"]["allocated"] == {"cpu": 4000}


def test_without_any_node_admission_is_quota_only() -> None:
    # no Node: the root shares nothing, so quota comes from max alone (runtime quota off); the pod is
    # admitted with no nodes
    s = KoordScenario(capacity=None, enableRuntimeQuota=False)
    s.quota("q", max={"cpu": 8})
    s.pod("ns/a", quota="q", cpu=3, at=1)
    (decision,) = s.run()
    assert decision["type"] == "Admitted" and "nodes" not in decision


def test_placement_off_is_quota_only_on_nodes() -> None:
    # spec.placement.enable: false: the 4-cpu pod is admitted on quota though the node has 2 cpu
    s = KoordScenario(capacity=None, enableRuntimeQuota=False)
    s.config(placement={"enable": False}, enableRuntimeQuota=False)
    s.node("n1", {"cpu": 2})
    s.quota("q", max={"cpu": 8})
    s.pod("ns/big", quota="q", cpu=4, at=1)
    (decision,) = s.run()
    assert decision["type"] == "Admitted" and "nodes" not in decision
