"""A victim back in its queue competes in the cycle like any head: Kueue orders the heads of a cycle
non-borrowing first (reference/kueue.md §2, ``PrioritizeNonBorrowing``), so when quota frees up
a requeued victim that fits within its ClusterQueue's nominal quota goes before a higher-priority
head that would have to borrow."""

from __future__ import annotations

from tests.scenario.builder import GPU, Scenario, admitted


def test_requeued_victim_within_nominal_goes_before_a_borrowing_head():
    s = Scenario()
    s.flavor("default")
    s.cohort("org")
    s.cq("research", cohort="org", quotas={GPU: "4"})
    s.cq("prod", cohort="org", quotas={GPU: "4"},
         preemption={"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"})
    s.lq("research/train", "research")
    s.lq("prod/serve", "prod")
    s.submit("research/r1", "train", gpu="4", at=10)
    s.submit("research/r2", "train", gpu="4", at=20)              # borrows prod's 4
    s.submit("prod/p1", "serve", gpu="2", priority=100, at=30)    # reclaims: r2 preempted
    s.submit("prod/p2", "serve", gpu="2", priority=100, at=40)
    s.submit("prod/p3", "serve", gpu="2", priority=200, at=50)    # p2 preempted
    s.run()
    # r1 ends: research is empty.  r2 (4 GPUs) fits research's nominal 4 without borrowing; p2
    # (2 GPUs) would borrow (prod holds 4 of 4).  Non-borrowing first: r2 is admitted, and then
    # the cohort (8) is full for p2.
    s.finish("research/r1", at=3600)
    assert admitted(s.run()) == ["research/r2"]
