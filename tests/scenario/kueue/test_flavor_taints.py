"""ResourceFlavor ``spec.nodeTaints`` and ``spec.tolerations`` in flavor assignment and placement.

Situations from Kueue's flavor assigner tests (``pkg/scheduler/flavorassigner``): a flavor with a
``NoSchedule`` taint the pod set does not tolerate is skipped with ``untolerated taint {instance
spot NoSchedule <nil>} in flavor tainted`` (reason ``NoMatchingFlavor``); the pod set's toleration,
or the flavor's own toleration of its taint, makes it fit.  With placement, the flavor's
tolerations are added to the pods, so they may go on the nodes carrying the taint.
"""

from __future__ import annotations

from typing import Any

from tests.scenario.builder import KUEUE, Scenario, admitted
from tests.scenario.placement.helpers import gang, node, nodes_of, placement_on

SPOT = {"key": "instance", "value": "spot", "effect": "NoSchedule"}
TOLERATE_SPOT = {"key": "instance", "operator": "Equal", "value": "spot", "effect": "NoSchedule"}


def flavor(s: Scenario, name: str, taints: list | None = None, tolerations: list | None = None,
           labels: dict | None = None) -> None:
    spec: dict[str, Any] = {}
    if taints:
        spec["nodeTaints"] = taints
    if tolerations:
        spec["tolerations"] = tolerations
    if labels:
        spec["nodeLabels"] = labels
    s._apply({"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec})


def flavors_of(s: Scenario, key: str) -> dict:
    return s.workload(key)["podSetAssignments"][0]["flavors"]


def test_multiple_flavors_fits_while_skipping_the_tainted_flavor():
    s = Scenario()
    flavor(s, "tainted", [SPOT])
    flavor(s, "two")
    s.cq("cq", groups=[{"tainted": {"cpu": "4"}, "two": {"cpu": "4"}}])
    s.lq("ns/q", "cq")
    gang(s, "ns/w", "q", [{"count": 1, "requests": {"cpu": "3"}}])
    assert admitted(s.run()) == ["ns/w"]
    assert flavors_of(s, "ns/w") == {"cpu": "two"}


def test_a_toleration_of_the_pod_set_or_of_the_flavor_itself_makes_the_tainted_flavor_fit():
    s = Scenario()
    flavor(s, "tainted", [SPOT])
    flavor(s, "taint-and-toleration", [SPOT], [TOLERATE_SPOT])
    s.cq("a", groups=[{"tainted": {"cpu": "4"}}])
    s.cq("b", groups=[{"taint-and-toleration": {"cpu": "4"}}])
    s.lq("ns/a", "a")
    s.lq("ns/b", "b")
    gang(s, "ns/tolerates", "a", [{"count": 1, "requests": {"cpu": "1"}, "tolerations": [TOLERATE_SPOT]}])
    gang(s, "ns/plain", "b", [{"count": 1, "requests": {"cpu": "1"}}])
    assert sorted(admitted(s.run())) == ["ns/plain", "ns/tolerates"]
    assert flavors_of(s, "ns/tolerates") == {"cpu": "tainted"}
    assert flavors_of(s, "ns/plain") == {"cpu": "taint-and-toleration"}


def test_only_the_tainted_flavor_the_workload_waits_with_no_matching_flavor():
    s = Scenario()
    flavor(s, "tainted", [SPOT, {"key": "slow", "effect": "PreferNoSchedule"}])
    s.cq("cq", groups=[{"tainted": {"cpu": "4"}}])
    s.lq("ns/q", "cq")
    # a toleration of another value or of the PreferNoSchedule taint does not help
    gang(s, "ns/w", "q", [{"count": 1, "requests": {"cpu": "1"},
                           "tolerations": [{"key": "instance", "value": "on-demand"}, {"key": "slow", "operator": "Exists"}]}])
    assert admitted(s.run()) == []
    assert s.pending("ns/w") == (
        "NoMatchingFlavor", "couldn't assign flavors to pod set main: untolerated taint {instance spot NoSchedule <nil>} in flavor tainted")
    [row] = s.workload("ns/w")["shortfalls"]
    assert row["reason"] == "NoMatchingFlavor" and row["flavor"] == "tainted"
    assert row["taint"] == {"key": "instance", "value": "spot", "effect": "NoSchedule"}


def test_a_prefer_no_schedule_taint_does_not_keep_pods_off_the_flavor():
    s = Scenario()
    flavor(s, "slow", [{"key": "slow", "effect": "PreferNoSchedule"}])
    s.cq("cq", groups=[{"slow": {"cpu": "4"}}])
    s.lq("ns/q", "cq")
    gang(s, "ns/w", "q", [{"count": 1, "requests": {"cpu": "1"}}])
    assert admitted(s.run()) == ["ns/w"]


def test_with_placement_the_flavor_tolerations_let_the_pods_on_the_tainted_nodes():
    """Spot nodes carry the taint; the spot flavor tolerates it, so a pod set without its own
    toleration, assigned that flavor, is placed there.  A flavor selecting the same nodes without
    the toleration leaves its pods with nowhere to go."""
    s = Scenario()
    placement_on(s)
    flavor(s, "spot", [SPOT], [TOLERATE_SPOT], labels={"pool": "spot"})
    node(s, "s1", {"pool": "spot"}, cpu="8", taints=[SPOT])
    node(s, "s2", {"pool": "spot"}, cpu="8", taints=[SPOT])
    s.cq("cq", groups=[{"spot": {"cpu": "100"}}])
    s.lq("ns/q", "cq")
    gang(s, "ns/w", "q", [{"count": 2, "requests": {"cpu": "8"}}])
    assert nodes_of(s.run(), "ns/w") == {"main": {"s1": 1, "s2": 1}}

    s = Scenario()
    placement_on(s)
    flavor(s, "spot", labels={"pool": "spot"})
    node(s, "s1", {"pool": "spot"}, cpu="8", taints=[SPOT])
    s.cq("cq", groups=[{"spot": {"cpu": "100"}}])
    s.lq("ns/q", "cq")
    gang(s, "ns/w", "q", [{"count": 1, "requests": {"cpu": "8"}}])
    assert admitted(s.run()) == []
    reason, message = s.pending("ns/w")
    assert reason == "TopologyPlacementFailed"
    assert "0/1 nodes are available: 1 node(s) had untolerated taint" in message
