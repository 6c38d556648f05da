"""Volcano gangs on nodes: after the queue checks, allocate binds the gang's pods one at a time,
each to a node it matches with room (binpack: the fullest node that holds the pod, ties by name),
and the gang plugin keeps the binds only when at least ``minMember`` pods are bound
(docs/placement.md "Pod-scheduling models").  Worked by hand; the ``proportion`` plugin with one
queue deserves what the cluster has."""

from __future__ import annotations

from statemodel.explain import explain
from tests.scenario.builder import admitted, evicted
from tests.scenario.volcano.vbuilder import VolcanoScenario

NODE_LOST = "Workload eviction triggered due to multiple TAS assigned node failures, including: {}"


def _nodes(decisions: list[dict]) -> list[tuple[str, int, dict]]:
    return [(d["workload"], d["podSetAssignments"][0]["count"], d["nodes"]["main"])
            for d in decisions if d["type"] == "Admitted"]


def _two_nodes(cpu: str = "4") -> VolcanoScenario:
    s = VolcanoScenario()
    s.node("n1", {"cpu": cpu})
    s.node("n2", {"cpu": cpu})
    s.queue("q")
    return s


def test_quota_and_free_capacity_fit_but_no_node_holds_the_gang() -> None:
    # j1: one 3-cpu pod on n1 (both empty, the name decides).  j2: two pods of 2.5 cpu, minMember 2:
    # the queue deserves 8 (3 + 5 asked) and 5 cpu are free in all, but n1 has 1 left and n2 takes one
    # pod (4 -> 1.5): 1 of 2 bound, below minMember: none is kept
    s = _two_nodes()
    s.job("ns/j1", "q", cpu=3, at=1)
    s.job("ns/j2", "q", pods=2, cpu="2500m", min_resources=False, at=2)
    out = s.run()
    assert _nodes(out) == [("ns/j1", 1, {"n1": 1})]
    pg = s.pg("ns/j2")
    assert (pg["phase"], pg["running"], pg["reason"]) == ("Inqueue", 0, "NotEnoughResources")
    assert pg["message"].startswith("2/2 tasks in gang unschedulable: unschedulable on cluster: Resources were "
                                    "found for 0 pods while 1 are required for gang scheduling (2/2 nodes match)")
    assert explain(s.engine.clusters[s.cluster], "ns/j2")["message"] == pg["message"]
    assert s.state()["nodes"]["n2"]["allocated"] == {}  # the pod bound on n2 was rolled back
    # j1 ends: both nodes empty; j2-0 on n1 (name), j2-1 no longer fits n1 (1.5 left): n2
    s.finish("ns/j1", at=3)
    assert _nodes(s.run()) == [("ns/j2", 2, {"n1": 1, "n2": 1})]


def test_a_gang_larger_than_any_node_is_placed_across_nodes() -> None:
    # three 4-cpu nodes, a gang of 3 pods of 3 cpu (9 cpu, minMember 3): one pod per node
    s = VolcanoScenario()
    for name in ("n1", "n2", "n3"):
        s.node(name, {"cpu": 4})
    s.queue("q")
    s.job("ns/big", "q", pods=3, cpu=3, at=1)
    out = s.run()
    assert _nodes(out) == [("ns/big", 3, {"n1": 1, "n2": 1, "n3": 1})]
    assert s.phase("ns/big") == "Running"


def test_min_member_below_replicas_binds_what_fits() -> None:
    # two 3-cpu nodes (6 free), 3 pods of 2 cpu: the free capacity holds all three, the nodes one
    # each.  minMember 2: two bound (n1, n2), the group runs, the third waits; minMember 3: none.
    s = _two_nodes("3")
    s.job("ns/elastic", "q", pods=3, min_member=2, cpu=2, at=1)
    out = s.run()
    assert _nodes(out) == [("ns/elastic", 2, {"n1": 1, "n2": 1})]
    assert (s.phase("ns/elastic"), s.running("ns/elastic")) == ("Running", 2)
    strict = _two_nodes("3")
    strict.job("ns/strict", "q", pods=3, min_member=3, cpu=2, at=1)
    assert admitted(strict.run()) == []
    assert strict.pg("ns/strict")["message"].startswith("3/3 tasks in gang unschedulable: ")


def test_a_selector_picks_the_second_node() -> None:
    # n1 (zone a) is first by name and as empty as n2 (zone b): the pods select zone b
    s = VolcanoScenario()
    s.node("n1", {"cpu": 8}, labels={"zone": "a"})
    s.node("n2", {"cpu": 8}, labels={"zone": "b"})
    s.queue("q")
    s.job("ns/picky", "q", pods=2, cpu=2, selector={"zone": "b"}, at=1)
    s.job("ns/plain", "q", pods=1, cpu=2, at=2)
    assert _nodes(s.run()) == [("ns/picky", 2, {"n2": 2}), ("ns/plain", 1, {"n2": 1})]
    # plain: binpack puts it on the fuller n2 (4 of 8 used) rather than the empty n1


def test_node_loss_evicts_and_requeues() -> None:
    # j (3 cpu) on n1; n1 deleted: the pod is evicted (NodeFailures) and the group goes to n2
    s = _two_nodes()
    s.job("ns/j", "q", cpu=3, at=1)
    assert _nodes(s.run()) == [("ns/j", 1, {"n1": 1})]
    s.delete_node("n1", at=2)
    out = s.run()
    assert [(d["workload"], d["reason"], d["message"]) for d in out if d["type"] == "Evicted"] == [
        ("ns/j-0", "NodeFailures", NODE_LOST.format("n1"))]
    assert _nodes(out) == [("ns/j", 1, {"n2": 1})]
    # n2 cordoned: evicted again, nothing left to hold it
    s.node("n2", {"cpu": "4"}, unschedulable=True, at=3)
    out = s.run()
    assert evicted(out) == ["ns/j-0"] and admitted(out) == []


def test_a_node_added_wakes_a_waiting_gang() -> None:
    # two 2-cpu nodes: 4 cpu free, a 3-cpu pod fits the queue and the free capacity but no node
    s = _two_nodes("2")
    s.job("ns/j", "q", cpu=3, at=1)
    assert admitted(s.run()) == []
    s.node("n3", {"cpu": 4}, at=2)
    assert _nodes(s.run()) == [("ns/j", 1, {"n3": 1})]


def test_kai_topology_annotations_keep_the_gang_in_one_rack() -> None:
    # racks r1 (n1, n2: 4 cpu each) and r2 (n3: 8 cpu).  A gang of two 3-cpu pods that requires one
    # rack: r1 holds 8 free, r2 8; KAI's packing order tries the deeper levels first, ties by domain
    # ID: r1, whose nodes hold one pod each.  A second such gang: r1 has 1 + 1 cpu left, r2 takes it.
    s = VolcanoScenario()
    s.node("n1", {"cpu": 4}, labels={"rack": "r1", "kubernetes.io/hostname": "n1"})
    s.node("n2", {"cpu": 4}, labels={"rack": "r1", "kubernetes.io/hostname": "n2"})
    s.node("n3", {"cpu": 8}, labels={"rack": "r2", "kubernetes.io/hostname": "n3"})
    s._apply({"apiVersion": "kai.scheduler/v1alpha1", "kind": "Topology", "metadata": {"name": "dc"},
              "spec": {"levels": [{"nodeLabel": "rack"}, {"nodeLabel": "kubernetes.io/hostname"}]}})
    s.queue("q")
    rack = {"kai.scheduler/topology": "dc", "kai.scheduler/topology-required-placement": "rack"}
    s.job("ns/g1", "q", pods=2, cpu=3, annotations=rack, at=1)
    s.job("ns/g2", "q", pods=2, cpu=3, annotations=rack, at=2)
    assert _nodes(s.run()) == [("ns/g1", 2, {"n1": 1, "n2": 1}), ("ns/g2", 2, {"n3": 2})]
