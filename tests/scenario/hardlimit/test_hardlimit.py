"""The ``hardlimit`` test model through the whole engine: events in, decisions out.

A cluster selects it with ``EngineConfig`` ``spec.quotaModel: hardlimit``; every ClusterQueue may
hold at most its ``nominalQuota`` per flavor-resource, whatever its cohort.
"""

from __future__ import annotations

from statemodel.snapshot import dump, load
from tests.scenario.builder import Scenario, admitted, message_exceeds, message_waiting
from tests.scenario.hardlimit.model import NAME


def hardlimit(cluster: str = "default") -> Scenario:
    s = Scenario(cluster)
    s.engine_config(afs=False, quota_model=NAME)
    s.flavor("default")
    return s


def test_admits_up_to_the_limit_then_waits_for_a_release():
    s = hardlimit()
    s.cq("a", quotas={"cpu": "4"})
    s.lq("ns/q", "a")
    s.submit("ns/w1", "q", cpu="3")
    s.submit("ns/w2", "q", cpu="2")
    assert admitted(s.run()) == ["ns/w1"]
    assert s.pending("ns/w2") == ("WaitingForQuota", message_waiting("cpu", "default", "1"))
    assert s.cq_resource("a") == {"nominal": 4000, "borrowingLimit": None, "lendingLimit": None,
                                  "usage": 3000, "available": 1000, "potentialAvailable": 4000}
    s.finish("ns/w1")
    assert admitted(s.run()) == ["ns/w2"]


def test_never_borrows_from_its_cohort():
    """The same events under ``kueue`` borrow the idle quota of ``b``; under ``hardlimit`` the
    request is above ``a``'s own limit."""
    def build(s: Scenario) -> Scenario:
        s.cohort("org")
        s.cq("a", cohort="org", quotas={"cpu": "2"})
        s.cq("b", cohort="org", quotas={"cpu": "10"})
        s.lq("ns/q", "a")
        s.submit("ns/w", "q", cpu="3")
        return s

    kueue = Scenario()
    kueue.flavor("default")
    assert admitted(build(kueue).run()) == ["ns/w"]

    s = build(hardlimit())
    assert admitted(s.run()) == []
    assert s.pending("ns/w") == ("ExceedsMaxQuota", message_exceeds("cpu", "default", "0", "3", "2"))


def test_second_flavor_when_the_first_is_full():
    s = hardlimit()
    s.flavor("spot")
    s.cq("a", groups=[{"default": {"cpu": "2"}, "spot": {"cpu": "2"}}])
    s.lq("ns/q", "a")
    s.submit("ns/w1", "q", cpu="2")
    s.submit("ns/w2", "q", cpu="2")
    s.submit("ns/w3", "q", cpu="1")
    decisions = s.run()
    assert admitted(decisions) == ["ns/w1", "ns/w2"]
    assert [d["podSetAssignments"][0]["flavors"]["cpu"] for d in decisions] == ["default", "spot"]
    assert s.pending("ns/w3")[0] == "WaitingForQuota"


def test_demand_is_reported_while_workloads_are_queued():
    s = hardlimit()
    s.cq("a", quotas={"cpu": "1"})
    s.lq("ns/q", "a")
    s.submit("ns/w1", "q", cpu="1")
    s.submit("ns/w2", "q", cpu="1", at=10)
    s.run()
    model = s.engine.clusters[s.cluster].model
    assert model.pending == {"a": {"cpu": 1000}}
    s.delete_workload("ns/w2")
    s.run()
    assert model.pending == {}


def test_snapshot_restores_the_model_and_continues():
    s = hardlimit()
    s.cq("a", quotas={"cpu": "2"})
    s.lq("ns/q", "a")
    s.submit("ns/w1", "q", cpu="2")
    s.submit("ns/w2", "q", cpu="2")
    s.run()
    applied = len(s.events)
    restored = load(dump(s.engine))
    assert restored.clusters[s.cluster].model.name == NAME
    assert dump(restored) == dump(s.engine)
    s.finish("ns/w1")
    expected = s.run()
    s.continue_on(restored, applied)
    assert s.run() == expected
    assert admitted(expected) == ["ns/w2"]


def test_switching_model_keeps_what_is_admitted():
    s = Scenario()
    s.flavor("default")
    s.cohort("org")
    s.cq("a", cohort="org", quotas={"cpu": "2"})
    s.cq("b", cohort="org", quotas={"cpu": "2"})
    s.lq("ns/q", "a")
    s.submit("ns/w1", "q", cpu="3")  # borrows 1 cpu from b under kueue
    assert admitted(s.run()) == ["ns/w1"]
    s.engine_config(afs=False, quota_model=NAME)
    s.submit("ns/w2", "q", cpu="1")
    assert admitted(s.run()) == []
    assert s.cq_resource("a")["usage"] == 3000
    assert s.pending("ns/w2") == ("WaitingForQuota", message_waiting("cpu", "default", "1"))


def test_explain_lists_the_one_level():
    from statemodel.explain import explain

    s = hardlimit()
    s.cq("a", quotas={"cpu": "2"})
    s.lq("ns/q", "a")
    s.submit("ns/w", "q", cpu="3")
    s.run()
    levels = explain(s.engine.clusters[s.cluster], "ns/w")["levels"]
    assert [(level["kind"], level["name"]) for level in levels] == [("ClusterQueue", "a")]
    assert levels[0]["resources"]["default"]["cpu"]["potentialAvailable"] == 2000
