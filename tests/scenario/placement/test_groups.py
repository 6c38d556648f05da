"""Pod sets placed together: Kueue podSet groups (``topologyRequest.podSetGroupName``), Kueue
slices (``podSetSliceRequiredTopology`` + ``podSetSliceSize``) and KAI's nested sub-groups (the
``kai.scheduler/subgroups`` annotation and the ``kai.scheduler/subgroup-name`` pod label).

Every expected placement is worked out by hand from the rules (docs/placement.md): domains are
tried deepest relevant level first, the most packed (largest request / free) first at every level
of the tree, ties by domain ID; binpack fills the node with the least free share first, ties by
name.  Each scenario is paired with the same gang without the grouping, to show what it changes.
"""

from __future__ import annotations

import json

from tests.scenario.builder import Scenario, admitted
from tests.scenario.placement.helpers import HOST, gang, node, nodes_of, placement_on, quota_cluster, tas_flavor, topology

RACK = "rack"
BLOCK = "block"


def cluster(layout: dict[str, dict[str, list[str]]]) -> Scenario:
    """``layout``: block -> rack -> node names, every node 8 cpu, on topology ``net`` (the
    flavor's ``topologyName``)."""
    s = Scenario()
    placement_on(s)
    tas_flavor(s, "default", "net")
    quota_cluster(s)
    topology(s, "net", [BLOCK, RACK, HOST])
    for block, racks in layout.items():
        for rack, names in racks.items():
            for name in names:
                node(s, name, {BLOCK: block, RACK: rack}, cpu="8")
    s.run()
    return s


def leader_workers(group: str | None) -> list[dict]:
    """A leader (1 pod, 4 cpu) and 2 workers (8 cpu each), both required in one rack."""
    out = []
    for name, count, cpu in (("leader", 1, "4"), ("workers", 2, "8")):
        request = {"required": RACK}
        if group is not None:
            request["podSetGroupName"] = group
        out.append({"name": name, "count": count, "requests": {"cpu": cpu}, "topologyRequest": request})
    return out


def test_a_pod_set_group_is_placed_in_one_rack_that_holds_the_whole_group():
    """r1 has 16 cpu, r2 24.  Alone, the leader (4 cpu) goes to the more packed rack r1 (4/16 >
    4/24), and then the workers (16 cpu) no longer fit there and go to r2.  As a group the 20 cpu
    fit only r2: the leader on c1 (ties by name), the workers on the nodes with 8 cpu free."""
    layout = {"blk": {"r1": ["a1", "a2"], "r2": ["c1", "c2", "c3"]}}
    s = cluster(layout)
    gang(s, "ns/apart", "q", leader_workers(None))
    assert nodes_of(s.run(), "ns/apart") == {"leader": {"a1": 1}, "workers": {"c1": 1, "c2": 1}}

    s = cluster(layout)
    gang(s, "ns/together", "q", leader_workers("lws"))
    d = s.run()
    assert nodes_of(d, "ns/together") == {"leader": {"c1": 1}, "workers": {"c2": 1, "c3": 1}}
    [admission] = [x for x in d if x["type"] == "Admitted"]
    domains = {p["name"]: p["topologyAssignment"]["domains"] for p in admission["podSetAssignments"]}
    assert domains == {"leader": [{"count": 1, "values": ["blk", "r2", "c1"]}],
                       "workers": [{"count": 1, "values": ["blk", "r2", "c2"]}, {"count": 1, "values": ["blk", "r2", "c3"]}]}


def test_a_group_that_no_rack_holds_waits_naming_the_group():
    """Both racks have 16 cpu: the group needs 20 in one rack."""
    s = cluster({"blk": {"r1": ["a1", "a2"], "r2": ["b1", "b2"]}})
    gang(s, "ns/lws", "q", leader_workers("lws"))
    assert admitted(s.run()) == []
    reason, message = s.pending("ns/lws")
    assert reason == "TopologyPlacementFailed"
    assert "node-group blk.r1 can allocate only 2 of 3 required pods" in message
    assert "<group lws, root>: topology net, requirement rack couldn't be satisfied" in message


def sliced(size: int | None, count: int = 4) -> list[dict]:
    request: dict = {"required": BLOCK}
    if size is not None:
        request.update(podSetSliceRequiredTopology=RACK, podSetSliceSize=size)
    return [{"name": "main", "count": count, "requests": {"cpu": "8"}, "topologyRequest": request}]


def test_slices_each_in_one_rack_inside_the_required_block():
    """r1 has 3 nodes, r2 2 (8 cpu each).  Unsliced, the 4 pods fill the block's nodes by name:
    a1, a2, a3 and b1.  In slices of 2 per rack, the first slice goes to the more packed rack r2
    (16/16 > 16/24), the second to r1 (r2 is full): 2 pods per rack."""
    layout = {"blk": {"r1": ["a1", "a2", "a3"], "r2": ["b1", "b2"]}}
    s = cluster(layout)
    gang(s, "ns/whole", "q", sliced(None))
    assert nodes_of(s.run(), "ns/whole") == {"main": {"a1": 1, "a2": 1, "a3": 1, "b1": 1}}

    s = cluster(layout)
    gang(s, "ns/slices", "q", sliced(2))
    assert nodes_of(s.run(), "ns/slices") == {"main": {"a1": 1, "a2": 1, "b1": 1, "b2": 1}}


def test_a_slice_no_rack_holds_leaves_the_pod_set_waiting():
    """One slice of 4 pods needs 32 cpu in one rack; the racks have 24 and 16."""
    s = cluster({"blk": {"r1": ["a1", "a2", "a3"], "r2": ["b1", "b2"]}})
    gang(s, "ns/big", "q", sliced(4))
    assert admitted(s.run()) == []
    reason, message = s.pending("ns/big")
    assert reason == "TopologyPlacementFailed"
    assert "node-group blk.r1 can allocate only 3 of 4 required pods" in message
    assert "topology net, requirement rack couldn't be satisfied" in message


def test_a_slice_level_above_the_pod_set_level_is_refused():
    s = cluster({"blk": {"r1": ["a1", "a2"]}})
    gang(s, "ns/up", "q", [{"name": "main", "count": 2, "requests": {"cpu": "8"},
                            "topologyRequest": {"required": RACK, "podSetSliceRequiredTopology": BLOCK,
                                                "podSetSliceSize": 2}}])
    assert admitted(s.run()) == []
    assert "podset slice topology block is above the podset topology rack" in s.pending("ns/up")[1]


def inference(parent: bool) -> dict:
    """KAI's multilevel example: decode and prefill each in one rack, both in one block when
    they share the parent sub-group ``inference``."""
    groups = []
    if parent:
        groups.append({"name": "inference", "minMember": 4,
                       "topologyConstraint": {"topology": "net", "requiredTopologyLevel": BLOCK}})
    for name in ("decode", "prefill"):
        g = {"name": name, "minMember": 2, "topologyConstraint": {"topology": "net", "requiredTopologyLevel": RACK}}
        if parent:
            g["parent"] = "inference"
        groups.append(g)
    return {"kai.scheduler/subgroups": json.dumps(groups)}


def test_nested_sub_groups_are_allocated_inside_the_parents_block():
    """b1 has racks r1, r2 of 16 cpu, b2 one rack r3 of 24.  Without the parent, decode (16 cpu)
    goes to a rack under the more packed block for it — b2 (16/24 > 16/32) — so r3, and prefill
    then to r1 (r3 has 8 left).  Under ``inference`` (32 cpu, required block) only b1 holds the
    whole set: decode takes r1 (r1 and r2 tie, by ID), prefill r2."""
    layout = {"b1": {"r1": ["a1", "a2"], "r2": ["b1n1", "b1n2"]}, "b2": {"r3": ["c1", "c2", "c3"]}}
    pod_sets = [{"name": name, "count": 2, "requests": {"cpu": "8"}, "labels": {"kai.scheduler/subgroup-name": name}}
                for name in ("decode", "prefill")]
    s = cluster(layout)
    gang(s, "ns/flat", "q", pod_sets, annotations=inference(parent=False))
    assert nodes_of(s.run(), "ns/flat") == {"decode": {"c1": 1, "c2": 1}, "prefill": {"a1": 1, "a2": 1}}

    s = cluster(layout)
    gang(s, "ns/nested", "q", pod_sets, annotations=inference(parent=True))
    assert nodes_of(s.run(), "ns/nested") == {"decode": {"a1": 1, "a2": 1}, "prefill": {"b1n1": 1, "b1n2": 1}}


def test_a_sub_group_that_fits_nowhere_names_itself():
    """Each block has 16 cpu in 2 racks of 8: ``inference`` (32 cpu in one block) fits neither."""
    s = cluster({"b1": {"r1": ["a1"], "r2": ["a2"]}, "b2": {"r3": ["c1"], "r4": ["c2"]}})
    pod_sets = [{"name": name, "count": 2, "requests": {"cpu": "8"}, "labels": {"kai.scheduler/subgroup-name": name}}
                for name in ("decode", "prefill")]
    gang(s, "ns/nested", "q", pod_sets, annotations=inference(parent=True))
    assert admitted(s.run()) == []
    reason, message = s.pending("ns/nested")
    assert reason == "TopologyPlacementFailed"
    assert "<sub-group inference, root>: topology net, requirement block couldn't be satisfied" in message
