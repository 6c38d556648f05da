"""The DRS tournament ordering a cycle's heads (reference/kueue.md §3.3; Kueue ``scheduler_fs_test.go``).

Each scenario queues its heads so that the classical order (borrowing height, priority, creation
time) and the fair-sharing order disagree, then shows both: the heads are submitted in one
``Batch`` so they meet in one cycle.
"""

from __future__ import annotations

from tests.scenario.builder import Scenario, admitted


def scenario(fair: bool) -> Scenario:
    s = Scenario()
    s.flavor("on-demand")
    if fair:
        s.engine_config(afs=False, fair_sharing=True)
    return s


def od(cpu: str) -> dict:
    return {"on-demand": {"cpu": cpu}}


def hold(s: Scenario, key: str, cq: str, cpu: str) -> None:
    """An admitted workload of ``cpu`` cores at ``cq`` (observed)."""
    s.submit(key, "q-" + cq, cpu=cpu)
    s.observe_admission(key, cq, flavor="on-demand", cpu=cpu)


def hierarchical(fair: bool) -> Scenario:
    """A (cpu 200) ─┬─ B ─┬─ d (0)   d0 = 10 admitted, d1 = 70 pending
                    │     └─ e (0)   e0 = 20 admitted, e1 = 61 pending
                    └─ C ─┬─ f (0)                     f1 = 1 pending
                          └─ g (0)   g0 = 100 admitted, g1 = 1 pending
    70 cpu free at A."""
    s = scenario(fair)
    s.cohort("a", groups=[od("200")])
    s.cohort("b", parent="a")
    s.cohort("c", parent="a")
    for cq, cohort in (("d", "b"), ("e", "b"), ("f", "c"), ("g", "c")):
        s.cq(cq, cohort=cohort, groups=[od("0")])
        s.lq(f"ns/q-{cq}", cq)
    hold(s, "ns/d0", "d", "10")
    hold(s, "ns/e0", "e", "20")
    hold(s, "ns/g0", "g", "100")
    s.run()
    with s.batch():
        s.submit("ns/f1", "q-f", cpu="1", created=100)
        s.submit("ns/g1", "q-g", cpu="1", created=101)
        s.submit("ns/e1", "q-e", cpu="61", created=102)
        s.submit("ns/d1", "q-d", cpu="70", created=103)
    return s


def test_hierarchical_tournament_admits_the_winner():
    """At B: d with d1 = 80*1000/200 = 400 < e with e1 = 81 -> 405: d1.  At C: f with f1 = 5 <
    g with g1 = 505: f1.  At A: B with d1 = 100 -> 500 < C with f1 = 101 -> 505: d1 wins and takes
    the 70 free; the others no longer fit."""
    s = hierarchical(fair=True)
    assert admitted(s.run()) == ["ns/d1"]
    assert s.admitted_workloads() == ["ns/d0", "ns/d1", "ns/e0", "ns/g0"]
    assert s.pending("ns/f1")[0] == "WaitingForQuota"


def test_hierarchical_classical_order_is_by_creation_time():
    s = hierarchical(fair=False)
    assert admitted(s.run()) == ["ns/f1", "ns/g1", "ns/e1"]


def lowest_share(fair: bool) -> Scenario:
    """eng (root) ─┬─ alpha (50), holds 50         new = 5 pending (created later)
                   ├─ beta (50), holds 55          older = 1 pending (created first)
                   └─ shared (10)
    5 cpu free; alpha with new borrows 5/110 of the cohort's lendable, beta with older 6/110."""
    s = scenario(fair)
    s.cq("alpha", cohort="eng", groups=[od("50")])
    s.cq("beta", cohort="eng", groups=[od("50")])
    s.cq("shared", cohort="eng", groups=[od("10")])
    s.lq("ns/q-alpha", "alpha")
    s.lq("ns/q-beta", "beta")
    hold(s, "ns/all-nominal", "alpha", "50")
    hold(s, "ns/borrowing", "beta", "55")
    s.run()
    with s.batch():
        s.submit("ns/older", "q-beta", cpu="1", created=100)
        s.submit("ns/new", "q-alpha", cpu="5", created=200)
    return s


def test_lowest_share_first():
    s = lowest_share(fair=True)
    assert admitted(s.run()) == ["ns/new"]
    assert s.pending("ns/older")[0] == "WaitingForQuota"
    assert s.cq_state("alpha")["fairSharing"]["weightedShare"] == 46    # 5000*1000/110000 = 45.45 -> 46
    assert s.cq_state("beta")["fairSharing"]["weightedShare"] == 46     # 5/110 as well


def test_lowest_share_classical_takes_the_older():
    s = lowest_share(fair=False)
    assert admitted(s.run()) == ["ns/older"]


def zero_weights(fair: bool) -> Scenario:
    """A (cpu 8) ─┬─ b (0, weight 0) holds b0 = 4; b1 = 4 pending, priority 9001
                  └─ c (0, weight 0)               c1 = 4 pending, priority 0
    Both zero-weight borrowers: compared by unweighted share, c (4/8) below b (8/8)."""
    s = scenario(fair)
    s.cohort("a", groups=[od("8")])
    for cq in ("b", "c"):
        s.cq(cq, cohort="a", groups=[od("0")], weight="0")
        s.lq(f"ns/q-{cq}", cq)
    hold(s, "ns/b0", "b", "4")
    s.run()
    with s.batch():
        s.submit("ns/b1", "q-b", cpu="4", priority=9001)
        s.submit("ns/c1", "q-c", cpu="4", priority=0)
    return s


def test_zero_weights_compare_unweighted():
    s = zero_weights(fair=True)
    assert admitted(s.run()) == ["ns/c1"]
    assert s.cq_state("c")["fairSharing"]["weightedShare"] == 9223372036854775807


def test_zero_weights_classical_takes_priority():
    assert admitted(zero_weights(fair=False).run()) == ["ns/b1"]


def test_zero_weight_borrower_loses_to_any_weighted_one():
    """b (weight 0) would borrow 1/8; c (weight 1) would borrow 4/8: c first anyway."""
    s = scenario(True)
    s.cohort("a", groups=[od("4")])
    s.cq("b", cohort="a", groups=[od("0")], weight="0")
    s.cq("c", cohort="a", groups=[od("0")])
    s.lq("ns/q-b", "b")
    s.lq("ns/q-c", "c")
    with s.batch():
        s.submit("ns/b1", "q-b", cpu="1", priority=100, created=1)
        s.submit("ns/c1", "q-c", cpu="4", created=2)
    assert admitted(s.run()) == ["ns/c1"]


def test_high_weight_borrows_more():
    """A (cpu 8) ─┬─ b (0, weight 2) holds 2, b1 = 2 pending: (4/8 * 1000) / 2 = 250
                  └─ c (0, weight 1)          c1 = 3 pending:  3/8 * 1000     = 375"""
    s = scenario(True)
    s.cohort("a", groups=[od("8")])
    s.cq("b", cohort="a", groups=[od("0")], weight="2")
    s.cq("c", cohort="a", groups=[od("0")], weight="1")
    s.lq("ns/q-b", "b")
    s.lq("ns/q-c", "c")
    hold(s, "ns/b0", "b", "2")
    s.run()
    with s.batch():
        s.submit("ns/c1", "q-c", cpu="3", created=1)
        s.submit("ns/b1", "q-b", cpu="2", created=2)
    assert admitted(s.run()) == ["ns/b1", "ns/c1"]     # both fit: b1 first, then c1 (4 + 3 <= 8)
    assert [d["workload"] for d in s.decisions if d["type"] == "Admitted"][-2:] == ["ns/b1", "ns/c1"]


def test_non_borrowing_first_per_flavor():
    """Kueue's FairSharingPrioritizeNonBorrowing (``hierarchical nominal-first per-flavor ignores
    cross-flavor borrowing``): a head whose ClusterQueue would not borrow on the flavor-resources it
    asks for goes first, even with the higher share.

    org (root) ─┬─ big   (on-demand 10, spot 0)  holds on-demand 9 and spot 5; big1 = 1 pending
                └─ small (on-demand 1, spot 10)                                small1 = 2 pending
    lendable cpu = 11 + 10 = 21.  big with big1: on-demand 10 <= 10, spot borrows 5 -> share
    5*1000/21 = 238, not borrowing on on-demand.  small with small1 (on-demand): borrows 1 ->
    1000/21 = 48, borrowing on on-demand.  By share small1 would go first; the rule puts big1 first.
    2 cpu on-demand is free: big1 takes 1, small1 no longer fits there and, tried again in the next
    cycle, takes spot (5 free).  (Share order would give small1 on-demand and big1 spot.)"""
    s = Scenario()
    s.flavor("on-demand")
    s.flavor("spot")
    s.engine_config(afs=False, fair_sharing=True)
    s.cq("big", cohort="org", groups=[{"on-demand": {"cpu": "10"}, "spot": {"cpu": "0"}}])
    s.cq("small", cohort="org", groups=[{"on-demand": {"cpu": "1"}, "spot": {"cpu": "10"}}])
    s.lq("ns/q-big", "big")
    s.lq("ns/q-small", "small")
    s.submit("ns/big0", "q-big", cpu="1")
    s.observe_admission("ns/big0", "big", [
        {"name": "a", "count": 1, "flavors": {"cpu": "on-demand"}, "resourceUsage": {"cpu": "9"}},
        {"name": "b", "count": 1, "flavors": {"cpu": "spot"}, "resourceUsage": {"cpu": "5"}}])
    s.run()
    assert s.cq_state("big")["fairSharing"]["weightedShare"] == 239     # 5000/21 = 238.1 -> 239
    with s.batch():
        s.submit("ns/small1", "q-small", cpu="2", created=1)
        s.submit("ns/big1", "q-big", cpu="1", created=2)
    decisions = s.run()
    assert admitted(decisions) == ["ns/big1", "ns/small1"]
    flavors = {d["workload"]: d["podSetAssignments"][0]["flavors"]["cpu"] for d in decisions}
    assert flavors == {"ns/big1": "on-demand", "ns/small1": "spot"}


def test_independent_trees_and_lone_queues_all_admit():
    """Kueue ``fair sharing schedule singleton cqs and cq without cohort``: pools do not interact."""
    s = scenario(True)
    s.cq("lone", groups=[od("2")])
    s.cq("x", cohort="cx", groups=[od("2")])
    s.cq("y", cohort="cy", groups=[od("2")])
    for cq in ("lone", "x", "y"):
        s.lq(f"ns/q-{cq}", cq)
    with s.batch():
        for cq in ("y", "x", "lone"):
            s.submit(f"ns/{cq}1", f"q-{cq}", cpu="2")
    assert sorted(admitted(s.run())) == ["ns/lone1", "ns/x1", "ns/y1"]


def test_priority_then_time_break_equal_shares():
    """Equal shares (both within nominal): higher priority, then earlier creation first
    (Kueue ``fair sharing schedule highest priority first`` / ``earliest timestamp first``)."""
    s = scenario(True)
    s.cohort("a", groups=[od("0")])
    for cq in ("a", "b", "c"):
        s.cq(cq, cohort="a", groups=[od("2")])
        s.lq(f"ns/q-{cq}", cq)
    with s.batch():
        s.submit("ns/a1", "q-a", cpu="2", priority=1, created=3)
        s.submit("ns/b1", "q-b", cpu="2", priority=5, created=5)
        s.submit("ns/c1", "q-c", cpu="2", priority=1, created=1)
    assert admitted(s.run()) == ["ns/b1", "ns/c1", "ns/a1"]
