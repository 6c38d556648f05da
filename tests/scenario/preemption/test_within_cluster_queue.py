"""withinClusterQueue: Never / LowerPriority / LowerOrNewerEqualPriority (reference/kueue.md §4.1-4.2),
with releaseOn Decision (default) and Eviction.  Expected victims worked out by hand from Kueue's
rules: candidates in the preemptor's own ClusterQueue, lower priority first, then the most recently
admitted, removed until the preemptor fits, then filled back."""

from __future__ import annotations

from tests.scenario.builder import Scenario, admitted, preempted

LOWER = {"withinClusterQueue": "LowerPriority"}


def one_queue(policy: dict | None, nominal: str = "4") -> Scenario:
    s = Scenario()
    s.flavor("default")
    s.cq("a", quotas={"cpu": nominal}, preemption=policy)
    s.lq("ns/q", "a")
    return s


def test_never_waits_for_quota():
    s = one_queue(None)
    s.submit("ns/low", "q", cpu="4", priority=0)
    s.submit("ns/high", "q", cpu="4", priority=10)
    decisions = s.run()
    assert admitted(decisions) == ["ns/low"]
    assert preempted(decisions) == []
    assert s.pending("ns/high")[0] == "WaitingForQuota"


def test_lower_priority_preempts_and_admits_in_the_same_step():
    s = one_queue(LOWER)
    s.submit("ns/low", "q", cpu="4", priority=0)
    s.run()
    s.submit("ns/high", "q", cpu="4", priority=10)
    decisions = s.run()
    assert preempted(decisions) == [("ns/low", "ns/high", "InClusterQueue")]
    assert [d["type"] for d in decisions] == ["Preempted", "Admitted"]
    assert admitted(decisions) == ["ns/high"]
    victim = s.workload("ns/low")
    assert victim["status"] == "Pending" and victim["preemptedBy"] == "ns/high"
    assert victim["preemptionReason"] == "InClusterQueue"
    # back in its queue, it was tried again after the preemptor was admitted
    assert victim["reason"] == "WaitingForQuota"
    assert s.workload("ns/high")["preempted"] == ["ns/low"]
    message = [d for d in decisions if d["type"] == "Preempted"][0]["message"]
    assert message == ("Preempted to accommodate a workload (UID: ns/high) due to prioritization in the "
                       "ClusterQueue; preemptor path: /a; preemptee path: /a; "
                       "preemptor needs cpu in flavor default: requested 4, available 0")


def test_lower_priority_does_not_preempt_equal_priority():
    s = one_queue(LOWER)
    s.submit("ns/old", "q", cpu="4", priority=5)
    s.run()
    s.submit("ns/new", "q", cpu="4", priority=5)
    decisions = s.run()
    assert decisions == []
    assert s.pending("ns/new")[0] == "WaitingForQuota"


def test_lower_or_newer_equal_priority_preempts_a_newer_equal_one():
    s = one_queue({"withinClusterQueue": "LowerOrNewerEqualPriority"})
    s.submit("ns/newer", "q", cpu="4", priority=5, created=100)   # created later, admitted first
    s.run()
    s.submit("ns/older", "q", cpu="4", priority=5, created=50)
    decisions = s.run()
    assert preempted(decisions) == [("ns/newer", "ns/older", "InClusterQueue")]
    assert admitted(decisions) == ["ns/older"]


def test_lower_or_newer_equal_priority_spares_an_older_equal_one():
    s = one_queue({"withinClusterQueue": "LowerOrNewerEqualPriority"})
    s.submit("ns/older", "q", cpu="4", priority=5, created=50)
    s.run()
    s.submit("ns/newer", "q", cpu="4", priority=5, created=100)
    assert s.run() == []


def test_minimal_set_prefers_lowest_priority_then_most_recent_and_fills_back():
    # nominal 6: running low1 (p1, 2 cpu, admitted first), low2 (p1, 2 cpu), mid (p3, 2 cpu).
    # high needs 3: order low2 (p1, newer), low1 (p1), mid; removing low2 frees 2 (not enough),
    # low1 frees 4 -> fits; fill back: re-adding low2 leaves 2 free < 3, so both stay victims.
    s = one_queue(LOWER, nominal="6")
    s.submit("ns/low1", "q", cpu="2", priority=1)
    s.submit("ns/low2", "q", cpu="2", priority=1)
    s.submit("ns/mid", "q", cpu="2", priority=3)
    s.run()
    s.submit("ns/high", "q", cpu="3", priority=10)
    decisions = s.run()
    assert preempted(decisions) == [("ns/low2", "ns/high", "InClusterQueue"),
                                    ("ns/low1", "ns/high", "InClusterQueue")]
    assert admitted(decisions) == ["ns/high"]
    assert s.admitted_in("a") == ["ns/high", "ns/mid"]


def test_fill_back_drops_a_victim_not_needed():
    # nominal 6: small (p1, 1 cpu, newest), big (p2, 4 cpu); 1 cpu free.  high needs 5:
    # order small (p1), big (p2): small frees 2 total (no), big frees 6 (yes); fill back small:
    # 6 - 1 = 5 free >= 5 -> small is not needed.
    s = one_queue(LOWER, nominal="6")
    s.submit("ns/big", "q", cpu="4", priority=2)
    s.run()
    s.submit("ns/small", "q", cpu="1", priority=1)
    s.run()
    s.submit("ns/high", "q", cpu="5", priority=10)
    decisions = s.run()
    assert preempted(decisions) == [("ns/big", "ns/high", "InClusterQueue")]
    assert s.admitted_in("a") == ["ns/high", "ns/small"]


def test_release_on_eviction_waits_for_the_observed_eviction():
    s = one_queue(LOWER)
    s.engine_config(afs=False, release_on="Eviction")
    s.submit("ns/low", "q", cpu="4", priority=0)
    s.run()
    s.submit("ns/high", "q", cpu="4", priority=10)
    decisions = s.run()
    assert preempted(decisions) == [("ns/low", "ns/high", "InClusterQueue")]
    assert admitted(decisions) == []
    reason, message = s.pending("ns/high")
    assert reason == "WaitingForPreemptedWorkloads"
    assert message == ("couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor "
                       "default, 4 more needed. Pending the preemption of 1 workload(s)")
    victim = s.workload("ns/low")
    assert victim["status"] == "Admitted" and victim["preemptedBy"] == "ns/high"
    # another event before the eviction: no second Preempted decision for the same victim
    s.submit("ns/other", "q", cpu="1", priority=0)
    assert preempted(s.run()) == []
    s.evict("ns/low")
    decisions = s.run()
    assert admitted(decisions) == ["ns/high"]
    assert s.workload("ns/low")["status"] == "Pending"


def test_release_on_eviction_the_waiting_preemptor_blocks_its_queue():
    # nominal 5, low runs 4; high (4) preempts low and waits for the eviction.  small (1 cpu) would
    # fit in the free 1, but it is behind the sticky preemptor (Kueue) until high is admitted.
    s = one_queue(LOWER, nominal="5")
    s.engine_config(afs=False, release_on="Eviction")
    s.submit("ns/low", "q", cpu="4", priority=0)
    s.run()
    s.submit("ns/high", "q", cpu="4", priority=10)
    assert preempted(s.run()) == [("ns/low", "ns/high", "InClusterQueue")]
    s.submit("ns/small", "q", cpu="1", priority=0)
    assert s.run() == []
    s.evict("ns/low")
    assert admitted(s.run()) == ["ns/high", "ns/small"]
