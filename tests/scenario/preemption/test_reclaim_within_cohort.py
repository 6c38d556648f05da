"""reclaimWithinCohort Never / LowerPriority / Any and borrowWithinCohort (reference/kueue.md §4.1-4.2;
transcriptions of situations of Kueue's ``pkg/scheduler/preemption/preemption_test.go``, written as
events).  Expected victims and reasons worked out by hand from Kueue's rules."""

from __future__ import annotations

from tests.scenario.builder import Scenario, admitted, preempted


def two_queues(policy_a: dict | None, nominal_a: str = "4", nominal_b: str = "4",
               policy_b: dict | None = None) -> Scenario:
    """Cohort "all" with ClusterQueues a and b (6 cpu each unless given), b's workloads borrow from a."""
    s = Scenario()
    s.flavor("default")
    s.cq("a", cohort="all", quotas={"cpu": nominal_a}, preemption=policy_a)
    s.cq("b", cohort="all", quotas={"cpu": nominal_b}, preemption=policy_b)
    s.lq("ns/qa", "a")
    s.lq("ns/qb", "b")
    return s


def borrower(s: Scenario, priority: int = 0) -> None:
    """b runs 8 cpu: 4 of its own and 4 borrowed from a."""
    s.submit("ns/b1", "qb", cpu="4", priority=priority)
    s.submit("ns/b2", "qb", cpu="4", priority=priority)
    s.run()
    assert s.admitted_in("b") == ["ns/b1", "ns/b2"]


def test_never_does_not_reclaim():
    s = two_queues(None)
    borrower(s)
    s.submit("ns/a1", "qa", cpu="4", priority=10)
    assert s.run() == []
    assert s.pending("ns/a1")[0] == "WaitingForQuota"


def test_any_reclaims_from_a_borrower_whatever_its_priority():
    s = two_queues({"reclaimWithinCohort": "Any"})
    borrower(s, priority=100)
    s.submit("ns/a1", "qa", cpu="4", priority=0)
    decisions = s.run()
    # the most recently admitted of b's equal-priority workloads goes: b2
    assert preempted(decisions) == [("ns/b2", "ns/a1", "InCohortReclamation")]
    assert admitted(decisions) == ["ns/a1"]


def test_lower_priority_reclaims_only_lower_priority():
    s = two_queues({"reclaimWithinCohort": "LowerPriority"})
    borrower(s, priority=5)
    s.submit("ns/a1", "qa", cpu="4", priority=5)
    assert s.run() == []
    s.submit("ns/a2", "qa", cpu="4", priority=6)
    decisions = s.run()
    assert preempted(decisions) == [("ns/b2", "ns/a2", "InCohortReclamation")]
    assert admitted(decisions) == ["ns/a2"]


def test_a_queue_within_nominal_is_never_a_reclaim_target():
    # b runs 4 within its nominal, a borrows nothing; a1 (4) fits, a2 (4) can only take b's
    # nominal share: b is within nominal, so no candidate.
    s = two_queues({"reclaimWithinCohort": "Any"})
    s.submit("ns/b1", "qb", cpu="4")
    s.submit("ns/a1", "qa", cpu="4")
    s.run()
    s.submit("ns/a2", "qa", cpu="4", priority=100)
    assert preempted(s.run()) == []
    assert s.pending("ns/a2")[0] == "WaitingForQuota"


def test_reclaim_while_borrowing_needs_borrow_within_cohort():
    # cohort 6 = a 2 + b 4; b runs 6 (2 borrowed from a).  a1 wants 3, one more than a's nominal:
    # without borrowWithinCohort a may not preempt in order to borrow.
    s = two_queues({"reclaimWithinCohort": "Any"}, nominal_a="2")
    s.submit("ns/b1", "qb", cpu="3", priority=0)
    s.submit("ns/b2", "qb", cpu="3", priority=0)
    s.run()
    s.submit("ns/a1", "qa", cpu="3", priority=10)
    assert preempted(s.run()) == []
    assert s.pending("ns/a1")[0] == "WaitingForQuota"


def test_a_victim_back_within_nominal_stops_the_search():
    # a1 wants 4 = a's 2 + 2 of b's nominal: after b1 goes, b (3) is within its nominal 4, so b2 is
    # no longer a valid candidate and a1 cannot get the 4 (Kueue ``candidateIsValid``).
    s = two_queues({"reclaimWithinCohort": "Any", "borrowWithinCohort": {"policy": "LowerPriority"}},
                   nominal_a="2")
    s.submit("ns/b1", "qb", cpu="3", priority=0)
    s.submit("ns/b2", "qb", cpu="3", priority=0)
    s.run()
    s.submit("ns/a1", "qa", cpu="4", priority=10)
    assert preempted(s.run()) == []


def test_reclaim_while_borrowing_with_lower_priority_policy():
    s = two_queues({"reclaimWithinCohort": "Any", "borrowWithinCohort": {"policy": "LowerPriority"}},
                   nominal_a="2")
    s.submit("ns/b1", "qb", cpu="3", priority=0)
    s.submit("ns/b2", "qb", cpu="3", priority=0)
    s.run()
    s.submit("ns/a1", "qa", cpu="3", priority=10)
    decisions = s.run()
    # a1 borrows 1; b borrows 2.  b2 was admitted last, so it goes first; removing it leaves 3 free
    # for a: fits.
    assert preempted(decisions) == [("ns/b2", "ns/a1", "InCohortReclaimWhileBorrowing")]
    assert admitted(decisions) == ["ns/a1"]
    assert s.workload("ns/a1")["borrowing"] == 1


def test_max_priority_threshold_protects_higher_priorities():
    s = two_queues({"reclaimWithinCohort": "Any",
                    "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 3}},
                   nominal_a="2")
    s.submit("ns/b1", "qb", cpu="3", priority=5)
    s.submit("ns/b2", "qb", cpu="3", priority=5)
    s.run()
    s.submit("ns/a1", "qa", cpu="3", priority=10)
    assert preempted(s.run()) == []


def test_no_ping_pong_after_reclaim():
    # a reclaims its nominal from b; b's victim, back in its queue, must not preempt a back.
    s = two_queues({"reclaimWithinCohort": "Any"}, policy_b={"reclaimWithinCohort": "Any",
                                                            "withinClusterQueue": "LowerPriority"})
    borrower(s, priority=100)
    s.submit("ns/a1", "qa", cpu="4", priority=0)
    first = s.run()
    assert preempted(first) == [("ns/b2", "ns/a1", "InCohortReclamation")]
    s.tick()
    s.submit("ns/b3", "qb", cpu="1", priority=0)
    assert preempted(s.run()) == []
    assert s.admitted_in("a") == ["ns/a1"]
