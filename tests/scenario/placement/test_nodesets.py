"""NodeSets placement scenarios (seed 004, reference/kai.md §1-4, Kueue TAS facts in reference/kueue.md).

Every expected placement below is worked out by hand from the rules: domains are tried deepest
relevant level first, the most packed (largest request / free) first, ties by domain ID; binpack
fills the node with the least free share first.
"""

from __future__ import annotations

from tests.scenario.builder import GPU, Scenario, admitted, evicted
from tests.scenario.placement.helpers import (
    HOST, delete_node, gang, kai, node, nodes_of, placement_on, quota_cluster, tas_flavor, topology,
)


def cluster(node_order: str | None = None, flavor_labels: dict | None = None, topology_name: str | None = None) -> Scenario:
    s = Scenario()
    placement_on(s, node_order)
    if flavor_labels or topology_name:
        tas_flavor(s, "default", topology_name, flavor_labels)
    else:
        s.flavor("default")
    quota_cluster(s)
    return s


def spine_rack_nodes(s: Scenario, layout: dict[str, dict[str, list[str]]], cpu: str = "8", extra: dict | None = None) -> None:
    """``layout``: spine -> rack -> node names; every node has ``cpu``; ``extra``: node -> labels."""
    topology(s, "net", ["spine", "rack", HOST])
    for spine, racks in layout.items():
        for rack, names in racks.items():
            for name in names:
                node(s, name, {"spine": spine, "rack": rack, **(extra or {}).get(name, {})}, cpu=cpu)


def test_the_seed_example_topology_then_affinity_first_domain_fails_on_affinity_second_fits():
    """AllNodes -> spines (topology plugin) -> the nodes of each spine matching the selector
    (flavor/affinity plugin).  Spine s1 is the more packed one for the job, so it is tried first;
    its nodes lack the selected GPU model, so the gang falls through to s2."""
    s = cluster()
    spine_rack_nodes(s, {"s1": {"r1": ["a1", "a2"]}, "s2": {"r2": ["b1", "b2", "b3"]}},
                     extra={"a1": {"model": "v100"}, "a2": {"model": "v100"},
                            "b1": {"model": "a100"}, "b2": {"model": "a100"}, "b3": {"model": "a100"}})
    s.run()
    gang(s, "ns/job", "q", [{"count": 2, "requests": {"cpu": "8"}, "nodeSelector": {"model": "a100"}}],
         annotations=kai("net", required="spine"))
    d = s.run()
    assert nodes_of(d, "ns/job") == {"main": {"b1": 1, "b2": 1}}


def test_required_affinity_expressions_and_the_message_when_no_node_matches():
    s = cluster()
    spine_rack_nodes(s, {"s1": {"r1": ["a1", "a2"]}}, extra={"a1": {"model": "v100"}, "a2": {"model": "h100"}})
    s.run()
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "model", "operator": "In", "values": ["h100", "a100"]}]}]}}}
    gang(s, "ns/ok", "q", [{"count": 1, "requests": {"cpu": "8"}, "affinity": affinity}])
    assert nodes_of(s.run(), "ns/ok") == {"main": {"a2": 1}}
    # a2 is full now: the one matching node has no room
    gang(s, "ns/full", "q", [{"count": 1, "requests": {"cpu": "1"}, "affinity": affinity}])
    assert admitted(s.run()) == []
    assert ("Resources were found for 0 pods while 1 are required for gang scheduling (1/2 nodes match)"
            in s.workload("ns/full")["message"])
    no_match = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "model", "operator": "NotIn", "values": ["v100", "h100"]}]},
        {"matchExpressions": [{"key": "model", "operator": "DoesNotExist"}]}]}}}
    gang(s, "ns/no", "q", [{"count": 1, "requests": {"cpu": "1"}, "affinity": no_match}])
    assert admitted(s.run()) == []
    w = s.workload("ns/no")
    assert w["reason"] == "TopologyPlacementFailed"
    assert "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector" in w["message"]


def test_preferred_rack_falls_back_to_the_spine_required_rack_waits():
    """Racks of 2 nodes × 8 cpu; a 3-pod gang of 8 cpu fits no rack.  Preferred rack walks up to the
    spine (KAI: relevant levels from preferred up to root); required rack does not."""
    layout = {"s1": {"r1": ["n1", "n2"], "r2": ["n3", "n4"]}}
    s = cluster()
    spine_rack_nodes(s, layout)
    s.run()
    gang(s, "ns/pref", "q", [{"count": 3, "requests": {"cpu": "8"}}], annotations=kai("net", preferred="rack"))
    assert sum(nodes_of(s.run(), "ns/pref")["main"].values()) == 3

    s = cluster()
    spine_rack_nodes(s, layout)
    s.run()
    gang(s, "ns/req", "q", [{"count": 3, "requests": {"cpu": "8"}}], annotations=kai("net", required="rack"))
    assert admitted(s.run()) == []
    w = s.workload("ns/req")
    assert w["reason"] == "TopologyPlacementFailed"
    # KAI's per-domain errors of the top relevant level, then the requirement error
    assert "node-group s1.r1 can allocate only 2 of 3 required pods" in w["message"]
    assert "topology net, requirement rack couldn't be satisfied" in w["message"]


def test_packing_order_the_most_packed_rack_first_ties_by_domain_id():
    """r1 has 16 cpu free, r2 32: request/free is 8/16 against 8/32, so r1 (the more packed) is
    tried first; two racks with equal free capacity are tried in domain-ID order."""
    s = cluster()
    spine_rack_nodes(s, {"s1": {"r2": ["c1", "c2", "c3", "c4"], "r1": ["a1", "a2"]}})
    s.run()
    gang(s, "ns/one", "q", [{"count": 1, "requests": {"cpu": "8"}}], annotations=kai("net", required="rack"))
    assert nodes_of(s.run(), "ns/one") == {"main": {"a1": 1}}
    # ties: two racks with the same free capacity -> the smaller domain ID
    s = cluster()
    spine_rack_nodes(s, {"s1": {"rb": ["b1", "b2"], "ra": ["a1", "a2"]}})
    s.run()
    gang(s, "ns/tie", "q", [{"count": 2, "requests": {"cpu": "8"}}], annotations=kai("net", required="rack"))
    assert nodes_of(s.run(), "ns/tie") == {"main": {"a1": 1, "a2": 1}}


def test_ordering_is_hierarchical_a_rack_under_a_fuller_spine_comes_first():
    """KAI reference §2: racks are listed left to right in the tree sorted at every domain, so a rack
    under the more packed spine is tried before a rack that is individually more packed under an
    emptier spine.  s1 has 24 cpu free (r1: 16, r2: 8), s2 has 64 free (r3: 8, r4: 56)."""
    s = cluster()
    topology(s, "net", ["spine", "rack", HOST])
    node(s, "r1-1", {"spine": "s1", "rack": "r1"}, cpu="16")
    node(s, "r2-1", {"spine": "s1", "rack": "r2"}, cpu="8")
    node(s, "r3-1", {"spine": "s2", "rack": "r3"}, cpu="8")
    node(s, "r4-1", {"spine": "s2", "rack": "r4"}, cpu="56")
    s.run()
    # a 8-cpu pod: s1 ratio 8/24 > s2 8/64, so s1's racks come first: r2 (8/8) then r1 (8/16);
    # r3 (8/8) is as packed as r2 but sits under the emptier spine
    gang(s, "ns/a", "q", [{"count": 1, "requests": {"cpu": "8"}}], annotations=kai("net", required="rack"))
    assert nodes_of(s.run(), "ns/a") == {"main": {"r2-1": 1}}
    gang(s, "ns/b", "q", [{"count": 1, "requests": {"cpu": "8"}}], annotations=kai("net", required="rack"))
    # now s1 has 16 free (ratio 1/2) against s2's 64 (1/8): r1 under s1 before r3
    assert nodes_of(s.run(), "ns/b") == {"main": {"r1-1": 1}}


def test_cluster_level_message_when_the_total_free_is_short():
    s = cluster()
    spine_rack_nodes(s, {"s1": {"r1": ["n1", "n2"]}})
    s.run()
    gang(s, "ns/big", "q", [{"count": 3, "requests": {"cpu": "8"}}])
    assert admitted(s.run()) == []
    w = s.workload("ns/big")
    assert w["reason"] == "TopologyPlacementFailed"
    assert w["message"] == ("unschedulable on cluster: not enough resources in the cluster to allocate the job: "
                            "cpu requested 24, available 16")


def test_fragmented_message_when_the_total_is_free_but_no_node_holds_a_pod():
    """Two nodes with 4 cpu free each: 8 cpu are free, a single 8-cpu pod fits nowhere."""
    s = cluster()
    node(s, "n1", cpu="4")
    node(s, "n2", cpu="4")
    s.run()
    gang(s, "ns/pod", "q", [{"count": 1, "requests": {"cpu": "8"}}])
    assert admitted(s.run()) == []
    message = s.workload("ns/pod")["message"]
    assert message.startswith("unschedulable on cluster: Resources were found for 0 pods while 1 are required "
                              "for gang scheduling")


def test_finish_releases_the_nodes_and_wakes_the_gang_that_now_fits():
    s = cluster()
    spine_rack_nodes(s, {"s1": {"r1": ["n1", "n2"]}})
    s.run()
    gang(s, "ns/a", "q", [{"count": 2, "requests": {"cpu": "8"}}])
    gang(s, "ns/b", "q", [{"count": 2, "requests": {"cpu": "8"}}])
    assert admitted(s.run()) == ["ns/a"]
    assert s.state()["nodes"]["n1"]["allocated"] == {"cpu": 8000}
    assert s.state()["nodes"]["n1"]["workloads"] == ["ns/a"]
    s.finish("ns/a")
    d = s.run()
    assert admitted(d) == ["ns/b"]
    assert nodes_of(d, "ns/b") == {"main": {"n1": 1, "n2": 1}}


def test_node_added_wakes_a_pending_gang():
    s = cluster()
    node(s, "n1")
    s.run()
    gang(s, "ns/a", "q", [{"count": 2, "requests": {"cpu": "8"}}])
    assert admitted(s.run()) == []
    node(s, "n2")
    d = s.run()
    assert nodes_of(d, "ns/a") == {"main": {"n1": 1, "n2": 1}}


def test_node_deleted_evicts_with_node_failures_and_the_workload_is_placed_again():
    s = cluster()
    node(s, "n1")
    node(s, "n2")
    s.run()
    gang(s, "ns/a", "q", [{"count": 1, "requests": {"cpu": "8"}}])
    assert nodes_of(s.run(), "ns/a") == {"main": {"n1": 1}}
    delete_node(s, "n1")
    d = s.run()
    assert evicted(d) == ["ns/a"]
    ev = [x for x in d if x["type"] == "Evicted"][0]
    assert ev["reason"] == "NodeFailures"
    assert ev["message"] == "Workload eviction triggered due to multiple TAS assigned node failures, including: n1"
    # back to its queue and placed on what is left, in the same step
    assert nodes_of(d, "ns/a") == {"main": {"n2": 1}}


def test_cordoned_node_evicts_its_workloads_which_wait_when_nothing_else_fits():
    s = cluster()
    node(s, "n1")
    s.run()
    gang(s, "ns/a", "q", [{"count": 1, "requests": {"cpu": "8"}}])
    assert admitted(s.run()) == ["ns/a"]
    node(s, "n1", unschedulable=True)
    d = s.run()
    assert evicted(d) == ["ns/a"] and admitted(d) == []
    w = s.workload("ns/a")
    assert w["status"] == "Pending" and w["reason"] == "TopologyPlacementFailed"
    assert s.state()["nodes"]["n1"]["workloads"] == []
    node(s, "n1")  # uncordoned
    assert admitted(s.run()) == ["ns/a"]


def test_binpack_fills_the_fullest_node_spread_the_emptiest():
    for order, expected in (("binpack", {"n1": 2}), ("spread", {"n2": 1, "n3": 1})):
        s = cluster(order)
        node(s, "n1", cpu="8")
        node(s, "n2", cpu="8")
        node(s, "n3", cpu="8")
        s.run()
        gang(s, "ns/first", "q", [{"count": 1, "requests": {"cpu": "2"}}])
        s.run()
        # first went to n1 in both orders (ties by name); now n1 is the fullest
        gang(s, "ns/two", "q", [{"count": 2, "requests": {"cpu": "2"}}])
        assert nodes_of(s.run(), "ns/two") == {"main": expected}, order


def test_taints_keep_pods_away_unless_tolerated():
    s = cluster()
    taint = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    node(s, "t1", taints=taint)
    s.run()
    gang(s, "ns/plain", "q", [{"count": 1, "requests": {"cpu": "1"}}])
    assert admitted(s.run()) == []
    assert "1 node(s) had untolerated taint" in s.workload("ns/plain")["message"]
    gang(s, "ns/tol", "q", [{"count": 1, "requests": {"cpu": "1"},
                             "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu",
                                              "effect": "NoSchedule"}]}])
    assert admitted(s.run()) == ["ns/tol"]


def test_flavor_node_labels_select_the_nodes():
    s = cluster(flavor_labels={"pool": "gpu"})
    node(s, "cpu-1", {"pool": "cpu"}, cpu="64")
    node(s, "gpu-1", {"pool": "gpu"}, cpu="8", gpu="8")
    s.run()
    gang(s, "ns/a", "q", [{"count": 1, "requests": {"cpu": "4"}}])
    assert nodes_of(s.run(), "ns/a") == {"main": {"gpu-1": 1}}


def test_kueue_tas_flavor_topology_and_pod_set_required_rack():
    """Kueue TAS: the flavor's topologyName gives the topology; the podSet's topologyRequest
    (``required: rack``) keeps its pods in one rack; the decision carries topologyAssignment."""
    s = cluster(topology_name="net")
    spine_rack_nodes(s, {"s1": {"r1": ["n1"], "r2": ["n2", "n3"]}})
    s.run()
    gang(s, "ns/tas", "q", [{"count": 2, "requests": {"cpu": "8"}, "topologyRequest": {"required": "rack"}}])
    d = s.run()
    assert nodes_of(d, "ns/tas") == {"main": {"n2": 1, "n3": 1}}
    psa = [x for x in d if x["type"] == "Admitted"][0]["podSetAssignments"][0]
    assert psa["topologyAssignment"] == {"levels": ["spine", "rack", HOST],
                                         "domains": [{"values": ["s1", "r2", "n2"], "count": 1},
                                                     {"values": ["s1", "r2", "n3"], "count": 1}]}


def test_sub_groups_each_pod_set_in_its_own_rack_inside_the_gangs_spine():
    """KAI sub-groups: the gang's constraint (required spine) picks the spine, then each pod set's own
    constraint (required rack) is met inside it (allocated recursively inside the parent's set)."""
    s = cluster(topology_name="net")
    spine_rack_nodes(s, {"s1": {"r1": ["a1"], "r2": ["a2"]},
                         "s2": {"r3": ["b1", "b2"], "r4": ["b3", "b4"]}})
    s.run()
    gang(s, "ns/job", "q", [
        {"name": "leader", "count": 1, "requests": {"cpu": "8"}, "topologyRequest": {"required": "rack"}},
        {"name": "workers", "count": 2, "requests": {"cpu": "8"}, "topologyRequest": {"required": "rack"}},
    ], annotations=kai("net", required="spine"))
    d = s.run()
    # s1 is more packed (24/16 > 1 — it cannot hold the gang), so s2; there r3 and r4 tie (ID order):
    # the leader takes r3's first node; the workers need a whole rack: r3 has one node left -> r4
    assert nodes_of(d, "ns/job") == {"leader": {"b1": 1}, "workers": {"b3": 1, "b4": 1}}


def test_requested_topology_that_does_not_exist():
    s = cluster()
    node(s, "n1")
    s.run()
    gang(s, "ns/a", "q", [{"count": 1, "requests": {"cpu": "1"}}], annotations=kai("nope", required="rack"))
    assert admitted(s.run()) == []
    assert "Requested topology nope does not exist" in s.workload("ns/a")["message"]


def test_nodes_outside_the_topology_are_not_used_for_a_constrained_gang():
    s = cluster()
    topology(s, "net", ["rack", HOST])
    node(s, "in-1", {"rack": "r1"})
    node(s, "out-1")  # no rack label: outside the topology
    s.run()
    gang(s, "ns/a", "q", [{"count": 2, "requests": {"cpu": "8"}}], annotations=kai("net", preferred="rack"))
    assert admitted(s.run()) == []
    gang(s, "ns/free", "q", [{"count": 2, "requests": {"cpu": "4"}}])
    # an unconstrained gang may use any node (binpack: in-1 holds both)
    assert nodes_of(s.run(), "ns/free") == {"main": {"in-1": 2}}


def test_observed_admission_with_node_names_charges_those_nodes():
    s = cluster()
    node(s, "n1")
    node(s, "n2")
    s.run()
    gang(s, "ns/seen", "q", [{"count": 2, "requests": {"cpu": "4"}}])
    s.emit("WorkloadAdmitted", workload="ns/seen", admission={"clusterQueue": "cq", "podSetAssignments": [
        {"name": "main", "count": 2, "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "8"},
         "topologyAssignment": {"levels": [HOST], "domains": [{"values": ["n2"], "count": 2}]}}]})
    s.run()
    # it had been admitted by the engine on n1 first; the observation moves its charge to n2
    assert s.state()["nodes"]["n2"]["allocated"] == {"cpu": 8000}
    assert s.state()["nodes"]["n1"]["allocated"] == {}


def test_placement_off_ignores_the_nodes():
    s = Scenario()
    s.flavor("default")
    quota_cluster(s)
    node(s, "n1", cpu="1")
    s.run()
    gang(s, "ns/a", "q", [{"count": 4, "requests": {"cpu": "8"}}])
    d = s.run()
    assert admitted(d) == ["ns/a"] and "nodes" not in d[0]
    assert "topologyAssignment" not in d[0]["podSetAssignments"][0]


def test_gpu_gang_on_gpu_nodes():
    s = cluster()
    node(s, "g1", cpu="64", gpu="8")
    node(s, "g2", cpu="64", gpu="8")
    s.run()
    gang(s, "ns/g", "q", [{"count": 2, "requests": {"cpu": "1", GPU: "8"}}])
    assert nodes_of(s.run(), "ns/g") == {"main": {"g1": 1, "g2": 1}}


def test_explain_lists_the_node_sets_tried_and_survives_a_snapshot():
    from statemodel.explain import explain
    from statemodel.snapshot import dump, load

    s = cluster()
    spine_rack_nodes(s, {"s1": {"r1": ["n1", "n2"], "r2": ["n3"]}})
    s.run()
    gang(s, "ns/fill", "q", [{"count": 1, "requests": {"cpu": "4"}}], annotations=kai("net", required="rack"))
    gang(s, "ns/req", "q", [{"count": 3, "requests": {"cpu": "6"}}], annotations=kai("net", required="rack"))
    s.run()
    out = explain(s.engine.clusters["default"], "ns/req")
    assert out["reason"] == "TopologyPlacementFailed"
    # fill took n3 (r2 is the more packed rack for it); 20 cpu are free for 18, but r1 (16 free) can
    # hold 2 of the 3 pods and r2 (4 free) none
    assert out["placement"]["nodeSets"] == [
        {"stage": "topology", "podSet": None, "nodeSet": "s1.r1", "problem": "node-group s1.r1 can allocate only 2 of 3 required pods"},
        {"stage": "topology", "podSet": None, "nodeSet": "s1.r2", "problem": "node-group s1.r2 can allocate only 0 of 3 required pods"},
        {"stage": "topology", "podSet": None, "nodeSet": "root", "problem": "topology net, requirement rack couldn't be satisfied"},
    ]
    assert out["placement"]["summary"].startswith("unschedulable on cluster: free capacity is fragmented across node groups")
    restored = load(dump(s.engine))
    assert explain(restored.clusters["default"], "ns/req") == out


def test_required_block_the_more_packed_block_cannot_hold_the_gang_so_the_next_one_does():
    """Kueue TAS situation (a required level above the racks): block b1 has 2 free nodes, b2 4; a
    3-pod gang's request/free is 24/16 for b1 (cannot hold it, skipped) and 24/32 for b2."""
    s = cluster(topology_name="blocks")
    topology(s, "blocks", ["block", "rack", HOST])
    for name, block, rack in (("a1", "b1", "r1"), ("a2", "b1", "r2"),
                              ("c1", "b2", "r3"), ("c2", "b2", "r3"), ("c3", "b2", "r4"), ("c4", "b2", "r4")):
        node(s, name, {"block": block, "rack": rack})
    s.run()
    gang(s, "ns/tas", "q", [{"count": 3, "requests": {"cpu": "8"}, "topologyRequest": {"required": "block"}}])
    assert nodes_of(s.run(), "ns/tas") == {"main": {"c1": 1, "c2": 1, "c3": 1}}


def test_a_waiting_gang_is_retried_once_freed_nodes_can_take_what_it_was_short():
    """4 nodes of 8 cpu, all held by 1-pod workloads; a 2-pod gang is short 2 pods.  The first
    finish frees room for 1: still short, it stays pending; the second finish lets it in."""
    s = cluster()
    for i in range(4):
        node(s, f"n{i}")
    s.run()
    for i in range(4):
        gang(s, f"ns/w{i}", "q", [{"count": 1, "requests": {"cpu": "8"}}])
    s.run()
    gang(s, "ns/g", "q", [{"count": 2, "requests": {"cpu": "8"}}])
    assert admitted(s.run()) == []
    s.finish("ns/w0")
    assert admitted(s.run()) == []
    assert s.workload("ns/g")["reason"] == "TopologyPlacementFailed"
    s.finish("ns/w3")
    d = s.run()
    assert nodes_of(d, "ns/g") == {"main": {"n0": 1, "n3": 1}}


def test_a_waiting_gang_deleted_is_no_longer_waited_for_and_snapshots_restore():
    from statemodel.snapshot import dump, load

    s = cluster()
    node(s, "n1")
    s.run()
    gang(s, "ns/big", "q", [{"count": 2, "requests": {"cpu": "8"}}])
    s.run()
    assert list(s.engine.clusters["default"].placement.waiting) == ["ns/big"]
    s.delete_workload("ns/big")
    s.run()
    assert s.engine.clusters["default"].placement.waiting == {}
    assert load(dump(s.engine)).clusters["default"].placement.waiting == {}


def test_a_node_replaced_with_less_than_it_holds_takes_no_pod():
    """n1 holds 6 cpu, then is replaced with 4 allocatable (the kubelet keeps running pods): it has
    -2 cpu free and takes nothing; the next pod goes to n2."""
    s = cluster()
    node(s, "n1")
    node(s, "n2")
    s.run()
    gang(s, "ns/a", "q", [{"count": 1, "requests": {"cpu": "6"}}])
    assert nodes_of(s.run(), "ns/a") == {"main": {"n1": 1}}
    node(s, "n1", cpu="4")
    s.run()
    gang(s, "ns/b", "q", [{"count": 1, "requests": {"cpu": "1"}}])
    assert nodes_of(s.run(), "ns/b") == {"main": {"n2": 1}}
    # a pod set with a node selector is scanned, not walked: the same answer
    gang(s, "ns/c", "q", [{"count": 1, "requests": {"cpu": "1"}, "nodeSelector": {HOST: "n1"}}])
    assert admitted(s.run()) == []
