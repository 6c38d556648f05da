"""Flavor fungibility with preemption (reference/kueue.md §2: three outcomes per flavor,
``whenCanPreempt``, ``whenCanBorrow``, ``preference``) and ``releaseOn: Eviction`` across several
preemptors (§4.5: a victim is never preempted twice; overlapping targets in one cycle are skipped).
Expected outcomes worked out by hand from Kueue's rules."""

from __future__ import annotations

from tests.scenario.builder import Scenario, admitted, preempted

LOWER = {"withinClusterQueue": "LowerPriority"}


def two_flavors(when_can_preempt: str | None = None) -> Scenario:
    """ClusterQueue a: on-demand 2 cpu (tried first) and spot 2 cpu; low runs on on-demand."""
    s = Scenario()
    s.flavor("on-demand")
    s.flavor("spot")
    s.cq("a", groups=[{"on-demand": {"cpu": "2"}, "spot": {"cpu": "2"}}], preemption=LOWER,
         when_can_preempt=when_can_preempt)
    s.lq("ns/q", "a")
    s.submit("ns/low", "q", cpu="2", priority=0)
    s.run()
    assert s.workload("ns/low")["podSetAssignments"][0]["flavors"] == {"cpu": "on-demand"}
    return s


def test_try_next_flavor_prefers_a_flavor_that_fits_over_preempting():
    s = two_flavors()  # whenCanPreempt defaults to TryNextFlavor
    s.submit("ns/high", "q", cpu="2", priority=10)
    decisions = s.run()
    assert preempted(decisions) == []
    assert s.workload("ns/high")["podSetAssignments"][0]["flavors"] == {"cpu": "spot"}


def test_may_stop_search_preempts_in_the_first_flavor():
    s = two_flavors("MayStopSearch")
    s.submit("ns/high", "q", cpu="2", priority=10)
    decisions = s.run()
    assert preempted(decisions) == [("ns/low", "ns/high", "InClusterQueue")]
    assert s.workload("ns/high")["podSetAssignments"][0]["flavors"] == {"cpu": "on-demand"}


def test_when_every_flavor_needs_preemption_the_first_wins():
    s = two_flavors()
    s.submit("ns/low2", "q", cpu="2", priority=0)
    s.run()
    assert s.workload("ns/low2")["podSetAssignments"][0]["flavors"] == {"cpu": "spot"}
    s.submit("ns/high", "q", cpu="2", priority=10)
    decisions = s.run()
    assert preempted(decisions) == [("ns/low", "ns/high", "InClusterQueue")]
    assert s.workload("ns/high")["podSetAssignments"][0]["flavors"] == {"cpu": "on-demand"}


def preference_setup(preference: str | None) -> Scenario:
    """a: on-demand 2 (its own, taken by low) and spot 0 — spot can only be borrowed from b (4)."""
    s = Scenario()
    s.flavor("on-demand")
    s.flavor("spot")
    s.cq("a", cohort="all", groups=[{"on-demand": {"cpu": "2"}, "spot": {"cpu": "0"}}], preemption=LOWER,
         when_can_borrow="TryNextFlavor", when_can_preempt="TryNextFlavor", preference=preference)
    s.cq("b", cohort="all", groups=[{"spot": {"cpu": "4"}}])
    s.lq("ns/q", "a")
    s.submit("ns/low", "q", cpu="2", priority=0)
    s.run()
    s.submit("ns/high", "q", cpu="2", priority=10)
    return s


def test_borrowing_over_preemption_borrows():
    s = preference_setup(None)  # BorrowingOverPreemption when unset
    decisions = s.run()
    assert preempted(decisions) == []
    high = s.workload("ns/high")
    assert high["podSetAssignments"][0]["flavors"] == {"cpu": "spot"} and high["borrowing"] == 1


def test_preemption_over_borrowing_preempts():
    s = preference_setup("PreemptionOverBorrowing")
    decisions = s.run()
    assert preempted(decisions) == [("ns/low", "ns/high", "InClusterQueue")]
    high = s.workload("ns/high")
    assert high["podSetAssignments"][0]["flavors"] == {"cpu": "on-demand"} and high["borrowing"] == 0


def test_no_preemption_policy_keeps_the_old_behaviour():
    # the same queue without spec.preemption: the flavor that needs preemption is a plain no-fit
    s = Scenario()
    s.flavor("default")
    s.cq("a", quotas={"cpu": "2"})
    s.lq("ns/q", "a")
    s.submit("ns/low", "q", cpu="2", priority=0)
    s.submit("ns/high", "q", cpu="2", priority=10)
    s.run()
    assert s.pending("ns/high") == ("WaitingForQuota", "couldn't assign flavors to pod set main: insufficient "
                                                       "unused quota for cpu in flavor default, 2 more needed")


def test_eviction_mode_overlapping_targets_and_no_double_preemption():
    # a and b (2 each) lend everything to c, which runs v1 then v2 (2 each, all borrowed).
    s = Scenario()
    s.flavor("default")
    s.engine_config(afs=False, release_on="Eviction")
    reclaim = {"reclaimWithinCohort": "Any"}
    s.cq("a", cohort="all", quotas={"cpu": "2"}, preemption=reclaim)
    s.cq("b", cohort="all", quotas={"cpu": "2"}, preemption=reclaim)
    s.cq("c", cohort="all", quotas={"cpu": "0"})
    for name in "abc":
        s.lq(f"ns/{name}", name)
    s.submit("ns/v1", "c", cpu="2")
    s.submit("ns/v2", "c", cpu="2")
    s.run()
    with s.batch():
        s.submit("ns/a1", "a", cpu="2")
        s.submit("ns/b1", "b", cpu="2")
    decisions = s.run()
    # a1 (first in cycle order: same height, priority and time, ClusterQueue name) takes the newest
    # victim; b1's search needs v2 too (it still holds its quota), so b1 is skipped this cycle
    assert preempted(decisions) == [("ns/v2", "ns/a1", "InCohortReclamation")]
    assert s.pending("ns/a1")[0] == "WaitingForPreemptedWorkloads"
    assert s.pending("ns/b1") == ("WaitingForQuota",
                                  "Workload has overlapping preemption targets with another workload")
    s.evict("ns/v2")
    decisions = s.run()
    assert admitted(decisions) == ["ns/a1"]
    assert preempted(decisions) == [("ns/v1", "ns/b1", "InCohortReclamation")]
    s.evict("ns/v1")
    assert admitted(s.run()) == ["ns/b1"]
    assert s.workload("ns/v1")["preemptedBy"] == "ns/b1"
    assert s.workload("ns/v2")["preemptionReason"] == "InCohortReclamation"


def test_a_workload_already_being_evicted_is_taken_before_any_other_candidate():
    """Kueue orders candidates with the workloads already being evicted first (reference/kueue.md
    §4.2, ``candidatesOrdering``), before priority.  With ``releaseOn: Eviction`` a victim keeps its
    quota until its eviction is observed; a second preemptor whose needs that victim's quota covers
    takes it again instead of preempting one more workload, and waits for the same eviction."""
    s = Scenario()
    s.flavor("default")
    s.engine_config(afs=False, release_on="Eviction")
    s.cq("a", quotas={"cpu": "4"}, preemption=LOWER)
    s.lq("ns/q", "a")
    s.submit("ns/low", "q", cpu="1", priority=0)
    s.submit("ns/mid", "q", cpu="3", priority=5)
    s.run()
    # h needs 3: low (priority 0) goes first but frees only 1; mid frees 3; fill-back drops low
    s.submit("ns/h", "q", cpu="3", priority=10)
    assert preempted(s.run()) == [("ns/mid", "ns/h", "InClusterQueue")]
    s.delete_workload("ns/h")  # the preemptor goes away; mid's eviction is already under way
    s.run()
    # h2 needs 1: by priority alone low would be the victim (a second preemption); mid, being
    # evicted, comes first and covers it
    s.submit("ns/h2", "q", cpu="1", priority=10)
    assert preempted(s.run()) == []
    assert s.pending("ns/h2")[0] == "WaitingForPreemptedWorkloads"
    s.evict("ns/mid")
    assert admitted(s.run()) == ["ns/h2"]
    assert s.workload("ns/low")["status"] == "Admitted"
