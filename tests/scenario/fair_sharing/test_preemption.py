"""Fair-sharing preemption (reference/kueue.md §4.4): the situations of Kueue's
``pkg/scheduler/preemption/preemption_fair_test.go`` as events.

Base shape (Kueue's ``baseCQs``): cohort ``all`` with ClusterQueues a, b, c (cpu 3 each;
withinClusterQueue LowerPriority, reclaimWithinCohort Any, borrowWithinCohort LowerPriority with
threshold -3 — ignored by fair sharing) and ``preemptible`` (cpu 0, no preemption).  Capacity 9, so
every share below is ``borrowed * 1000 / 9`` (cpu in cores), divided by the weight.  The admitted
workloads are observed in one batch (same admission time, uid = name, so equal-priority candidates
go in name order); the incoming workload is then submitted and the cycle preempts, releasing the
victims at the decision (``releaseOn: Decision``), so the preemptor is admitted in the same step.
"""

from __future__ import annotations

from statemodel.cluster import DEFAULT_STRATEGIES
from statemodel.preemption import fair_sharing
from statemodel.preemption.context import PreemptionContext
from tests.scenario.builder import Scenario, admitted, preempted

POLICY = {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any",
          "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": -3}}
FS = "InCohortFairSharing"
RECLAIM = "InCohortReclamation"
IN_CQ = "InClusterQueue"


def base(strategies: list[str] | None = None, weights: dict | None = None) -> Scenario:
    s = Scenario()
    s.flavor("default")
    s.engine_config(afs=False, fair_sharing=True, strategies=strategies)
    weights = weights or {}
    for cq in ("a", "b", "c"):
        s.cq(cq, cohort="all", quotas={"cpu": "3"}, preemption=POLICY, weight=weights.get(cq))
    s.cq("preemptible", cohort="all", quotas={"cpu": "0"})
    for cq in ("a", "b", "c", "preemptible"):
        s.lq(f"ns/q-{cq}", cq)
    return s


def hold(s: Scenario, workloads: list[tuple[str, str, str, int]]) -> None:
    """Observed admissions in one batch: ``(name, ClusterQueue, cpu, priority)``."""
    with s.batch():
        for name, cq, cpu, priority in workloads:
            s.submit(f"ns/{name}", f"q-{cq}", cpu=cpu, priority=priority, uid=name)
            s.observe_admission(f"ns/{name}", cq, cpu=cpu)
    s.run()


def units(cq: str, *names: str, priority: int = 0) -> list[tuple[str, str, str, int]]:
    return [(name, cq, "1", priority) for name in names]


def incoming(s: Scenario, cq: str, cpu: str, name: str = "incoming") -> list[dict]:
    s.submit(f"ns/{name}", f"q-{cq}", cpu=cpu, uid=name, created=1000)
    return s.run()


def victims(decisions: list[dict]) -> set[tuple[str, str]]:
    """``(victim name, reason)`` of the incoming workload's preemptions (a victim back in its queue may
    go on to preempt by its own ClusterQueue's policy in later cycles of the step)."""
    return {(victim.split("/")[1], reason) for victim, preemptor, reason in preempted(decisions)
            if preemptor == "ns/incoming"}


def test_reclaim_nominal_from_user_using_the_most():
    """c with the incoming (2) stays within nominal: reclaim from the highest share, b (5: 222)."""
    s = base()
    hold(s, units("a", "a1", "a2", "a3") + units("b", "b1", "b2", "b3", "b4", "b5") + units("c", "c1"))
    decisions = incoming(s, "c", "1")
    assert victims(decisions) == {("b1", RECLAIM)}
    assert admitted(decisions) == ["ns/incoming"]


def test_can_reclaim_from_queue_using_less():
    """c takes 3 within nominal; b (borrows 2) loses b1 (2 cpu, not enough), then a (borrows 1) loses
    a1 (3 cpu); fill-back returns b1."""
    s = base()
    hold(s, [("a1", "a", "3", 0), ("a2", "a", "1", 0), ("b1", "b", "2", 0), ("b2", "b", "3", 0)])
    assert victims(incoming(s, "c", "3")) == {("a1", RECLAIM)}


def test_reclaim_borrowable_quota_from_user_using_the_most():
    """a with the incoming: 4 -> 111; b: 5 -> 222, without b1 4 -> 111: 111 <= 111 (S2-a)."""
    s = base()
    hold(s, units("a", "a1", "a2", "a3") + units("b", "b1", "b2", "b3", "b4", "b5") + units("c", "c1"))
    decisions = incoming(s, "a", "1")
    assert victims(decisions) == {("b1", FS)}
    assert admitted(decisions) == ["ns/incoming"]


def test_preempt_one_from_each_borrowing_queue():
    """a and b each borrow 1 (tie: a's first candidate a1 sorts before b1); c needs 2 within nominal."""
    s = base()
    hold(s, [("a1", "a", "500m", 0), ("a2", "a", "500m", 0), ("a3", "a", "3", 0),
             ("b1", "b", "500m", 0), ("b2", "b", "500m", 0), ("b3", "b", "3", 0)])
    assert victims(incoming(s, "c", "2")) == {("a1", RECLAIM), ("b1", RECLAIM)}


def test_cannot_preempt_when_everyone_is_under_nominal():
    s = base()
    hold(s, units("a", "a1", "a2", "a3") + units("b", "b1", "b2", "b3") + units("c", "c1", "c2", "c3"))
    assert incoming(s, "c", "1") == []
    assert s.pending("ns/incoming")[0] == "WaitingForQuota"


def test_cannot_preempt_when_it_would_switch_the_imbalance():
    """a with the incoming: 5 -> 222; b: 222, 111 without one: neither 222 <= 111 nor 222 < 222."""
    s = base()
    hold(s, units("a", "a1", "a2", "a3") + units("b", "b1", "b2", "b3", "b4", "b5"))
    assert incoming(s, "a", "2") == []


def test_preempt_lower_priority_in_the_same_queue():
    s = base()
    hold(s, units("a", "a1-low", "a2-low", priority=-1) + units("a", "a3", "a4")
         + units("b", "b1", "b2", "b3", "b4", "b5"))
    assert victims(incoming(s, "a", "2")) == {("a1-low", IN_CQ), ("a2-low", IN_CQ)}


def test_combination_of_same_queue_and_highest_user():
    """b (6: 333) above a with the incoming (5: 222): b1 passes S2-a (b -> 222); then b2 would not
    (b -> 111), so a_low goes within a."""
    s = base()
    hold(s, units("a", "a-low", priority=-1) + units("a", "a2", "a3")
         + units("b", "b1", "b2", "b3", "b4", "b5", "b6"))
    assert victims(incoming(s, "a", "2")) == {("a-low", IN_CQ), ("b1", FS)}


def test_preempt_huge_workload_when_within_nominal():
    s = base()
    hold(s, [("b1", "b", "9", 0)])
    assert victims(incoming(s, "a", "2")) == {("b1", RECLAIM)}


def test_cannot_preempt_huge_workload_for_huge_incoming():
    """a with 5 more: 7 -> 444; b: 7 -> 444, 0 without b1: no strategy passes."""
    s = base()
    hold(s, [("a1", "a", "2", 0), ("b1", "b", "7", 0)])
    assert incoming(s, "a", "5") == []


def test_cannot_preempt_two_small_workloads_for_a_huge_incoming():
    """a: 6 -> 333; b: 7 -> 444.  S2-a fails for each of b1, b2, b3; S2-b (333 < 444) takes b1 once,
    which frees only 4 of the 6 needed: nothing is preempted."""
    s = base()
    hold(s, [("b1", "b", "2", 0), ("b2", "b", "2", 0), ("b3", "b", "3", 0)])
    assert incoming(s, "a", "6") == []


def test_preempt_from_target_and_others_even_over_nominal():
    """a with 4 more: 7 -> 444 above b (333): a1_low goes within a; b then fails S2-a; a2_low goes;
    S2-b (a at 111 < b's 333) takes b1; fill-back returns a2_low."""
    s = base()
    hold(s, [("a1-low", "a", "2", -1), ("a2-low", "a", "1", -1), ("b1", "b", "3", 0), ("b2", "b", "3", 0)])
    assert victims(incoming(s, "a", "4")) == {("a1-low", IN_CQ), ("b1", FS)}


def test_prefer_victims_that_do_not_make_the_target_the_biggest():
    """a with 3.5: 0.5 -> 56; b (5: 222): without b1 (2) b is at 0 (56 <= 0 fails), without b2 (1) at
    111 (passes)."""
    s = base()
    hold(s, [("b1", "b", "2", 0), ("b2", "b", "1", 0), ("b3", "b", "2", 0), ("c1", "c", "1", 0)])
    assert victims(incoming(s, "a", "3500m")) == {("b2", FS)}


def test_preempt_from_different_queues_for_a_smaller_max_share():
    """b and c at 4.5 (167) each; S2-a fails for all; S2-b takes one from each."""
    s = base()
    hold(s, [("b1", "b", "2", 0), ("b2", "b", "2500m", 0), ("c1", "c", "2", 0), ("c2", "c", "2500m", 0)])
    assert victims(incoming(s, "a", "3500m")) == {("b1", FS), ("c1", FS)}


def test_the_scenario_above_does_not_flap():
    """The state after the previous preemption: b asks 2 back (4.5 -> 167) against a (3.5 -> 56)."""
    s = base()
    hold(s, [("a1", "a", "3500m", 0), ("b2", "b", "2500m", 0), ("c2", "c", "2500m", 0)])
    assert incoming(s, "b", "2") == []


def test_no_preemption_that_takes_the_candidate_under_nominal():
    s = base()
    hold(s, [("b1", "b", "3", 0), ("b2", "b", "3", 0), ("c1", "c", "3", 0)])
    assert incoming(s, "a", "4") == []


def test_priority_threshold_does_not_make_workloads_preemptible():
    """borrowWithinCohort is ignored: preemptible1 passes S2-a (preemptible 333 -> 222 vs a's 222)
    but one victim is not enough, and the others fail both strategies: nothing is preempted."""
    s = base()
    hold(s, units("a", "a1", "a2", "a3") + units("b", "b1", "b2", "b3")
         + units("preemptible", "preemptible1", "preemptible2", "preemptible3", priority=-3))
    assert incoming(s, "a", "2") == []


def test_less_than_initial_share_takes_the_lowest_priority_first():
    s = base(strategies=["LessThanInitialShare"])
    hold(s, [("a1", "a", "3", 0), ("b-low", "b", "5", 0), ("b-high", "b", "1", 1)])
    assert victims(incoming(s, "a", "1")) == {("b-low", FS)}


def test_less_than_or_equal_to_final_share_skips_the_victim_that_transfers_the_imbalance():
    """Without b_low (5) b is at 0 < a's 111; without b_high (1) at 222 >= 111."""
    s = base(strategies=["LessThanOrEqualToFinalShare"])
    hold(s, [("a1", "a", "3", 0), ("b-low", "b", "5", 0), ("b-high", "b", "1", 1)])
    assert victims(incoming(s, "a", "1")) == {("b-high", FS)}


def test_higher_weight_preempts_more():
    """a weighs 2: with 2 more, 222 / 2 = 111; b (6: 333) passes S2-a twice (222, then 111)."""
    s = base(weights={"a": "2"})
    hold(s, units("a", "a1", "a2", "a3") + units("b", "b1", "b2", "b3", "b4", "b5", "b6"))
    assert victims(incoming(s, "a", "2")) == {("b1", FS), ("b2", FS)}


def test_anything_borrowing_from_a_zero_weight_queue():
    """b weighs 0: infinite share while borrowing.  b1, b2 pass S2-a; b3 would bring b to 0 (fails),
    then passes S2-b against b's infinite share."""
    s = base(weights={"b": "0"})
    hold(s, units("a", "a1", "a2", "a3") + units("b", "b1", "b2", "b3", "b4", "b5", "b6"))
    assert victims(incoming(s, "a", "3")) == {("b1", FS), ("b2", FS), ("b3", FS)}


def test_no_preemption_of_nominal_from_a_zero_weight_queue():
    """Only a and b (3 each, b weighs 0), both full: b is within nominal, so it is pruned."""
    s = Scenario()
    s.flavor("default")
    s.engine_config(afs=False, fair_sharing=True)
    s.cq("a", cohort="all", quotas={"cpu": "3"}, preemption=POLICY)
    s.cq("b", cohort="all", quotas={"cpu": "3"}, preemption=POLICY, weight="0")
    s.lq("ns/q-a", "a")
    s.lq("ns/q-b", "b")
    hold(s, units("a", "a1", "a2", "a3") + units("b", "b1", "b2", "b3"))
    assert incoming(s, "a", "1") == []
    assert s.pending("ns/incoming")[0] == "WaitingForQuota"


def test_no_preemption_of_nominal_from_a_zero_weight_cohort():
    """root ─┬─ left-cq (0)
             └─ right-cohort (cpu 1, weight 0) ── right-cq (0, weight 0) holds right-1.
    right-cohort is within its quota, so it is pruned; nothing is preempted."""
    s = Scenario()
    s.flavor("default")
    s.engine_config(afs=False, fair_sharing=True)
    s.cq("left-cq", cohort="root", quotas={"cpu": "0"}, preemption={"reclaimWithinCohort": "Any"})
    s.cohort("right-cohort", parent="root", quotas={"cpu": "1"}, weight="0")
    s.cq("right-cq", cohort="right-cohort", quotas={"cpu": "0"}, preemption={"reclaimWithinCohort": "Any"},
         weight="0")
    s.lq("ns/q-left-cq", "left-cq")
    s.lq("ns/q-right-cq", "right-cq")
    hold(s, [("right-1", "right-cq", "1", 0)])
    assert incoming(s, "left-cq", "1") == []


def test_hierarchical_preemption():
    """ROOT (5) ─┬─ LEFT (5, weight 2) ─┬─ a (1, weight 2)  incoming 5
                 │                      └─ b (1)            b1..b5 (priorities 1..5)
                 ├─ c (1)                                   c1..c5
                 └─ RIGHT (5) ─┬─ d (1)                     d1..d5
                               └─ e (1, weight 0.99)        e1..e5
    Full (20 of 20).  Kueue's expected victims: b1, b2, c1, c2, e1."""
    s = Scenario()
    s.flavor("default")
    s.engine_config(afs=False, fair_sharing=True)
    s.cohort("root", quotas={"cpu": "5"})
    s.cohort("left", parent="root", quotas={"cpu": "5"}, weight="2")
    s.cohort("right", parent="root", quotas={"cpu": "5"})
    s.cq("a", cohort="left", quotas={"cpu": "1"}, weight="2", preemption={"reclaimWithinCohort": "Any"})
    s.cq("b", cohort="left", quotas={"cpu": "1"})
    s.cq("c", cohort="root", quotas={"cpu": "1"})
    s.cq("d", cohort="right", quotas={"cpu": "1"})
    s.cq("e", cohort="right", quotas={"cpu": "1"}, weight="0.99")
    for cq in "abcde":
        s.lq(f"ns/q-{cq}", cq)
    hold(s, [(f"{cq}{i}", cq, "1", i) for cq in "bcde" for i in range(1, 6)])
    decisions = incoming(s, "a", "5")
    assert victims(decisions) == {("b1", FS), ("b2", FS), ("c1", FS), ("c2", FS), ("e1", FS)}
    assert admitted(decisions) == ["ns/incoming"]


def test_borrowing_queue_in_a_non_borrowing_cohort_is_protected():
    """ROOT ─┬─ a (5, weight 10) holds a1..a3 (priority -1); incoming 5
             └─ RIGHT (1, weight 0.1) ── b (no quota, weight 0.1) holds b1.
    RIGHT is within its quota: pruned; a preempts its own workloads."""
    s = Scenario()
    s.flavor("default")
    s.engine_config(afs=False, fair_sharing=True)
    s.cohort("root")
    s.cohort("right", parent="root", quotas={"cpu": "1"}, weight="0.1")
    s.cq("a", cohort="root", quotas={"cpu": "5"}, weight="10",
         preemption={"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"})
    s.cq("b", cohort="right", groups=[], weight="0.1")
    s.lq("ns/q-a", "a")
    s.lq("ns/q-b", "b")
    hold(s, units("a", "a1", "a2", "a3", priority=-1) + [("b1", "b", "1", -1)])
    assert victims(incoming(s, "a", "5")) == {("a1", IN_CQ), ("a2", IN_CQ), ("a3", IN_CQ)}


def test_deep_preemption():
    """ROOT ─┬─ A (1.01) ── AA ── AAA ── a (0)        incoming 1
             ├─ B (0.99) ── BB ── BBB ── b (0)        holds b1 (1)
             └─ C ── CC ── CCC ── CCCC (cpu 1)
    At ROOT the almost-LCAs are A (with the incoming: 1000 / 1.01) and B (1000 / 0.99); without b1
    B is at 0: S2-a fails, S2-b (990 < 1010) passes."""
    s = Scenario()
    s.flavor("default")
    s.engine_config(afs=False, fair_sharing=True)
    s.cohort("root")
    for name, parent, weight in (("a", "root", "1.01"), ("aa", "a", None), ("aaa", "aa", None),
                                 ("b", "root", "0.99"), ("bb", "b", None), ("bbb", "bb", None),
                                 ("c", "root", None), ("cc", "c", None), ("ccc", "cc", None)):
        s.cohort(name, parent=parent, weight=weight)
    s.cohort("cccc", parent="ccc", quotas={"cpu": "1"})
    s.cq("a", cohort="aaa", quotas={"cpu": "0"}, preemption={"reclaimWithinCohort": "Any"})
    s.cq("b", cohort="bbb", quotas={"cpu": "0"})
    s.lq("ns/q-a", "a")
    s.lq("ns/q-b", "b")
    hold(s, [("b1", "b", "1", 0)])
    assert victims(incoming(s, "a", "1")) == {("b1", FS)}


def test_no_ping_pong_after_a_fair_sharing_preemption():
    """After a reclaims b1 (S2-a), b1 is back in b's queue in the same step: with it b would be at 5
    (222) against a's 4 (111) — without a's newest workload a is at 0 and 222 <= 0, 222 < 111 both
    fail — so b1 waits instead of preempting back, in every later cycle."""
    s = base()
    s.cq("b", cohort="all", quotas={"cpu": "3"}, preemption=POLICY)
    hold(s, units("a", "a1", "a2", "a3") + units("b", "b1", "b2", "b3", "b4", "b5") + units("c", "c1"))
    decisions = incoming(s, "a", "1")
    assert victims(decisions) == {("b1", FS)}
    assert admitted(decisions) == ["ns/incoming"]
    assert [d["type"] for d in decisions].count("Preempted") == 1
    assert s.pending("ns/b1")[0] == "WaitingForQuota"
    s.tick()
    assert s.run() == []


def test_several_flavors_only_needed_flavor_resources_are_taken():
    """Flavors on-demand and spot.  a (on-demand 3) ; b (on-demand 3, spot 3) holds b1..b5 on
    on-demand (1 each: borrows 2) and bs1 (3) on spot.  lendable cpu = 6 + 3 = 9: b's share
    2 * 1000 / 9 = 222.  a asks 3 on-demand, within its nominal: reclaim from b what uses on-demand
    (b1, b2; fill-back keeps both), never bs1 on spot."""
    s = Scenario()
    s.flavor("on-demand")
    s.flavor("spot")
    s.engine_config(afs=False, fair_sharing=True)
    s.cq("a", cohort="all", groups=[{"on-demand": {"cpu": "3"}}], preemption=POLICY)
    s.cq("b", cohort="all", groups=[{"on-demand": {"cpu": "3"}, "spot": {"cpu": "3"}}], preemption=POLICY)
    s.lq("ns/q-a", "a")
    s.lq("ns/q-b", "b")
    with s.batch():
        for i in range(1, 6):
            s.submit(f"ns/b{i}", "q-b", cpu="1", uid=f"b{i}")
            s.observe_admission(f"ns/b{i}", "b", cpu="1", flavor="on-demand")
        s.submit("ns/bs1", "q-b", cpu="3", uid="bs1")
        s.observe_admission("ns/bs1", "b", cpu="3", flavor="spot")
    s.run()
    assert s.cq_state("b")["fairSharing"]["weightedShare"] == 223      # 2000/9 = 222.2 -> 223
    decisions = incoming(s, "a", "3")
    assert victims(decisions) == {("b1", RECLAIM), ("b2", RECLAIM)}
    assert admitted(decisions) == ["ns/incoming"]
    assert s.workload("ns/bs1")["status"] == "Admitted"


def test_release_on_eviction_keeps_the_preemptor_waiting():
    """releaseOn: Eviction — the victim keeps its quota until its eviction is observed; the
    preemptor waits with WaitingForPreemptedWorkloads, then is admitted."""
    s = base()
    s.engine_config(afs=False, fair_sharing=True, release_on="Eviction")
    hold(s, units("a", "a1", "a2", "a3") + units("b", "b1", "b2", "b3", "b4", "b5") + units("c", "c1"))
    decisions = incoming(s, "a", "1")
    assert victims(decisions) == {("b1", FS)}
    assert admitted(decisions) == []
    assert s.pending("ns/incoming")[0] == "WaitingForPreemptedWorkloads"
    s.evict("ns/b1")
    assert admitted(s.run()) == ["ns/incoming"]


def _may_remove(s: Scenario, cq: str, cpu: int, priority: int = 0) -> bool:
    """``fair_sharing.may_remove`` for a workload of ``cpu`` cores held (stopped LocalQueue, so it is
    never admitted) as the preemptor of ``cq``, its request charged as the search charges it."""
    s.lq("ns/held", cq, stop_policy="Hold")
    s.submit("ns/held-1", "held", cpu=str(cpu), priority=priority, uid="held-1")
    s.run()
    cluster = s.engine.clusters[s.cluster]
    spec = cluster.hierarchy.cluster_queues[cq].spec
    fr = ("default", "cpu")
    ctx = PreemptionContext(cluster.model, cluster.hierarchy, cluster.admitted, cluster.workloads["ns/held-1"], cq,
                            spec.preemption, [fr], {fr: cpu * 1000}, cluster.candidate_index)
    undo = cluster.model.simulate_charge(cq, ctx.usage)
    got = fair_sharing.may_remove(ctx, cluster.hierarchy.fair_weight)
    undo()
    return got


def test_no_search_when_every_borrowing_queue_is_below_the_preemptor():
    """a with the incoming: 6 -> 333; b, the only other borrower: 4 -> 111.  a has nothing of lower
    priority and is over nominal, and b's share is below a's: no candidate can pass either strategy
    (333 <= 0 / 333 < 111), so the search ends before its walk — and the incoming waits."""
    s = base()
    hold(s, units("a", "a1", "a2", "a3", "a4", "a5") + units("b", "b1", "b2", "b3", "b4"))
    assert not _may_remove(s, "a", 1)
    assert incoming(s, "a", "1") == []
    assert s.pending("ns/incoming")[0] == "WaitingForQuota"


def test_search_runs_when_the_preemptor_ties_a_borrowing_queue():
    """a with the incoming: 5 -> 222; b: 5 -> 222.  A tie can pass LessThanOrEqualToFinalShare when a
    removal leaves the target's share unchanged, so the search runs; here every removal lowers b's
    share (to 111) and neither strategy passes."""
    s = base()
    hold(s, units("a", "a1", "a2", "a3", "a4") + units("b", "b1", "b2", "b3", "b4", "b5"))
    assert _may_remove(s, "a", 1)
    assert incoming(s, "a", "1") == []


def test_search_runs_for_a_borrowing_queue_above_the_preemptor():
    """a with the incoming: 4 -> 111; b: 6 -> 333, 5 -> 222 without b1: 111 <= 222 (S2-a)."""
    s = base()
    hold(s, units("a", "a1", "a2", "a3") + units("b", "b1", "b2", "b3", "b4", "b5", "b6"))
    assert _may_remove(s, "a", 1)
    assert victims(incoming(s, "a", "1")) == {("b1", FS)}


def test_search_runs_for_a_lower_priority_workload_of_its_own():
    """a with the incoming (priority 1): 6 -> 333, above b (4 -> 111); a's own a1 is of lower priority,
    and a preemptor always takes its own ClusterQueue's candidates (InClusterQueue)."""
    s = base()
    hold(s, units("a", "a1", "a2", "a3", "a4", "a5") + units("b", "b1", "b2", "b3", "b4"))
    assert _may_remove(s, "a", 1, priority=1)
    assert victims(incoming_with_priority(s, "a", "1", 1)) == {("a1", IN_CQ)}


def incoming_with_priority(s: Scenario, cq: str, cpu: str, priority: int) -> list[dict]:
    s.submit("ns/incoming", f"q-{cq}", cpu=cpu, uid="incoming", created=1000, priority=priority)
    return s.run()


def test_a_target_back_within_nominal_on_the_needed_resource_is_still_taken_while_it_borrows():
    """root holds Cohort c (p: 4 cpu / 4Gi, y: 1 cpu / 3Gi) and ClusterQueue x (3 cpu / 1Gi): every
    share is ``borrowed * 1000 / 8`` (8 cpu and 8Gi in the tree).  x runs x1 and x2 (3 cpu each,
    priorities 1 and 2) and xm (3.5Gi, no cpu); y runs y1 (2 cpu).  The incoming workload (5.5 cpu,
    priority 10) in p: c with it borrows 2.5 cpu -> 312, x 3 cpu -> 375.
    1. x is above c: x1 goes (x without it: 2.5Gi of memory -> 312, 312 <= 312), 3 cpu free, not enough.
    2. x is back within its nominal cpu, and its memory keeps it at 312, level with c: the tie goes to
       the Cohort, whose best target y (1 cpu -> 125) is below p (1.5 cpu -> 187) and cannot pass.
    3. x is still a target (it borrows memory) with x2 left, level with c: x2 passes as x1 did,
       and 6 cpu are free.
    Step 2 must not end the search: a node level with the preemptor's side can still pass, and x
    is one although it no longer borrows cpu."""
    s = Scenario()
    s.flavor("default")
    s.engine_config(afs=False, fair_sharing=True)
    s.cohort("root")
    s.cohort("c", parent="root")
    s.cq("p", cohort="c", quotas={"cpu": "4", "memory": "4Gi"}, preemption=POLICY)
    s.cq("y", cohort="c", quotas={"cpu": "1", "memory": "3Gi"}, preemption=POLICY)
    s.cq("x", cohort="root", quotas={"cpu": "3", "memory": "1Gi"})  # its victims wait: no reclaiming back
    for cq in ("p", "y", "x"):
        s.lq(f"ns/q-{cq}", cq)
    s.submit("ns/x1", "q-x", cpu="3", priority=1, uid="x1")
    s.submit("ns/x2", "q-x", cpu="3", priority=2, uid="x2")
    s.submit("ns/xm", "q-x", memory="3584Mi", priority=0, uid="xm")
    s.submit("ns/y1", "q-y", cpu="2", priority=0, uid="y1")
    assert sorted(admitted(s.run())) == ["ns/x1", "ns/x2", "ns/xm", "ns/y1"]
    decisions = incoming_with_priority(s, "p", "5500m", 10)
    assert victims(decisions) == {("x1", FS), ("x2", FS)}
    assert admitted(decisions) == ["ns/incoming"]


def _two_cohorts() -> Scenario:
    """Two Cohorts under the root: ``mine`` (ClusterQueue a, cpu 8) and ``theirs`` (x and y, cpu 2
    each), 12 in all; x holds 5 (borrows 3), y holds 3 (borrows 1)."""
    s = Scenario()
    s.flavor("default")
    s.engine_config(afs=False, fair_sharing=True)
    s.cohort("root")
    s.cohort("mine", parent="root")
    s.cohort("theirs", parent="root")
    s.cq("a", cohort="mine", quotas={"cpu": "8"}, preemption=POLICY)
    for cq in ("x", "y"):
        s.cq(cq, cohort="theirs", quotas={"cpu": "2"}, preemption=POLICY)
    for cq in ("a", "x", "y"):
        s.lq(f"ns/q-{cq}", cq)
    hold(s, units("x", "x1", "x2", "x3", "x4", "x5") + units("y", "y1", "y2", "y3"))
    return s


def test_the_target_order_follows_shares_changed_since_the_last_search():
    """Reclaiming 1 for a (asking 5 within its nominal quota, 4 free) takes from x, the highest
    share (its victim is then deleted).  Then a's workload finishes and y's observed admissions make
    it borrow 3 while x borrows 2: the next reclaim (4 asked, 3 free) takes from y — a search reads
    its Cohort's order of ClusterQueues anew once their usage changed (the heap of ``theirs`` the
    first search built is not reused: x's share there was 3, y's 1)."""
    s = _two_cohorts()
    assert victims(incoming(s, "a", "5")) == {("x1", RECLAIM)}
    s.delete_workload("ns/x1")  # the victim does not come back
    s.finish("ns/incoming")
    hold(s, units("y", "y4", "y5"))
    decisions = incoming(s, "a", "4", name="second")
    assert {(victim.split("/")[1], reason) for victim, preemptor, reason in preempted(decisions)
            if preemptor == "ns/second"} == {("y4", RECLAIM)}
    assert "ns/second" in admitted(decisions)


def test_a_kept_heap_is_not_reused_after_admissions_below_its_cohort():
    """The searches themselves, for a workload held in a (5 asked, 4 free): with x borrowing 3 and y
    1 the victim is x's; the heap of ``theirs`` is kept.  y's observed admissions then make it borrow
    4 (1 free): searching again with the same kept heaps, y comes first — as a search without them
    finds."""
    s = _two_cohorts()
    s.lq("ns/held", "a", stop_policy="Hold")
    s.submit("ns/held-1", "held", cpu="5", uid="held-1")
    s.run()
    cluster = s.engine.clusters[s.cluster]
    spec = cluster.hierarchy.cluster_queues["a"].spec
    fr = ("default", "cpu")
    heaps = fair_sharing.KeptHeaps()

    def search(kept: fair_sharing.KeptHeaps | None) -> list[str]:
        ctx = PreemptionContext(cluster.model, cluster.hierarchy, cluster.admitted, cluster.workloads["ns/held-1"],
                                "a", spec.preemption, [fr], {fr: 5000}, cluster.candidate_index)
        return [t.info.key for t in fair_sharing.find_targets(ctx, DEFAULT_STRATEGIES, cluster.hierarchy.fair_weight,
                                                              kept)]

    assert search(heaps) == ["ns/x1"]
    assert heaps.heaps, "the heap of theirs is kept"
    hold(s, units("y", "y4", "y5", "y6"))
    again = search(heaps)
    assert again == search(None)
    assert again[0].startswith("ns/y")
