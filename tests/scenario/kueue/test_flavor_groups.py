"""Kueue podSet groups in flavor assignment: the pod sets sharing a ``podSetGroupName`` are
assigned flavors together (Kueue ``assignFlavors`` sums a group's requests and gives its pod sets
one flavor per resource), each charged its own usage."""

from __future__ import annotations

from tests.scenario.builder import Scenario, admitted
from tests.scenario.kueue.test_flavor_taints import flavor
from tests.scenario.placement.helpers import gang


def test_the_pod_sets_of_a_group_get_one_flavor_for_their_summed_request():
    """Flavor ``one`` has 4 cpu, ``two`` 10.  Alone, the leader (2 cpu) fits ``one`` and the workers
    (6 cpu) then exceed it (2 + 6 > 4) and take ``two``.  As a group (Kueue assigns a podSet
    group's flavors together) the 8 cpu exceed ``one``: both take ``two``."""
    def run(group: bool) -> Scenario:
        s = Scenario()
        flavor(s, "one")
        flavor(s, "two")
        s.cq("cq", groups=[{"one": {"cpu": "4"}, "two": {"cpu": "10"}}])
        s.lq("ns/q", "cq")
        request = {"required": "rack", "podSetGroupName": "lws"} if group else {"required": "rack"}
        gang(s, "ns/w", "q", [{"name": "leader", "count": 1, "requests": {"cpu": "2"}, "topologyRequest": request},
                              {"name": "workers", "count": 3, "requests": {"cpu": "2"}, "topologyRequest": request}])
        assert admitted(s.run()) == ["ns/w"]
        return s

    apart = run(group=False).workload("ns/w")["podSetAssignments"]
    assert [(p["name"], p["flavors"]) for p in apart] == [("leader", {"cpu": "one"}), ("workers", {"cpu": "two"})]
    together = run(group=True).workload("ns/w")["podSetAssignments"]
    assert [(p["name"], p["flavors"], p["resourceUsage"]) for p in together] == [
        ("leader", {"cpu": "two"}, {"cpu": "2"}), ("workers", {"cpu": "two"}, {"cpu": "6"})]
