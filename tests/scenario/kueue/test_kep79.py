"""Scenario tests for the KEP-79 quota model: events in → decisions / state out.

Every expected value below is worked out by hand (arithmetic in the comments) from

* KEP-79 (seed 000): ``T(x,r) = quota(x,r) - usage(x,r)`` for a ClusterQueue,
  ``T(x,r) = quota(x,r) + Σ_children min(lendingLimit(c,r), T(c,r))`` for a Cohort; admission iff
  ``T(x,r) >= -borrowingLimit(x,r)`` at every node after admission (root: ``T >= 0``);
* Kueue's incremental form (reference/kueue.md §1.3-1.6): ``subtree``, ``local = max(0, subtree -
  lendingLimit)``, usage spilling past ``local`` into the parent, ``available`` /
  ``potentialAvailable`` and the borrowing height;
* Kueue's flavor assigner, queues and cycle (§2, §3) and reasons (§6).

Units: cpu in the state JSON is in millicores; "cpu 3" in a comment means 3 cores = 3000.
"""

from __future__ import annotations

import copy

import pytest

from tests.scenario.builder import GPU, Scenario, admitted, assignment, evicted, message_exceeds, message_waiting


def scenario() -> Scenario:
    s = Scenario()
    s.flavor("default")
    return s


def borrowing_of(decisions: list[dict], workload: str) -> int:
    [d] = [d for d in decisions if d["type"] == "Admitted" and d["workload"] == workload]
    return d["borrowing"]


# --------------------------------------------------------------------------- KEP-79 user stories


def story1_borrowing_limit() -> Scenario:
    """company (root) ─┬─ research (borrowingLimit 0) ── res-a (nominal 6)
                       └─ production (no limits)      ── prod-a (nominal 4, no borrowingLimit)"""
    s = scenario()
    s.cohort("company")
    s.cohort("research", parent="company", quotas={"cpu": ("0", "0", None)})
    s.cohort("production", parent="company")
    s.cq("res-a", cohort="research", quotas={"cpu": "6"})
    s.cq("prod-a", cohort="production", quotas={"cpu": "4"})
    s.lq("research/q", "res-a")
    s.lq("prod/q", "prod-a")
    s.run()
    return s


def test_story1_research_borrowing_limit_zero_production_borrows_research_quota():
    s = story1_borrowing_limit()
    # subtree: research 0+6 = 6, production 4, company 10.
    assert s.cohort_resource("company")["subtreeQuota"] == 10_000
    # potentialAvailable(prod-a) = pot(company) = 10 (no borrowing limit on the way);
    # potentialAvailable(res-a)  = min(subtree(research) 6 + BL 0, pot(company) 10) = 6.
    assert s.cq_resource("prod-a")["potentialAvailable"] == 10_000
    assert s.cq_resource("res-a")["potentialAvailable"] == 6_000

    # prod-a takes 7 > its 4: T(prod-a) = -3, T(production) = -3 (no BL), T(company) = 10-7 = 3 >= 0 → admit.
    # Height: prod-a 4 < 7; production subtree 4 < 0+7; company 10 >= 7 → height(company) = 2.
    s.submit("prod/p1", "q", cpu="7")
    d = s.run()
    assert admitted(d) == ["prod/p1"]
    assert borrowing_of(d, "prod/p1") == 2

    # research cannot go beyond its own 6 ever: 7 > potentialAvailable 6 → ExceedsMaxQuota.
    s.submit("research/r-big", "q", cpu="7")
    # res-a wants 4: T(research) = 6-4 = 2 ok, but T(company) = 10 - 7 - 4 = -1 < 0.
    # available(res-a) = min(6 - 0 + 0, avail(company) = 10-7 = 3) = 3 → 1 more needed.
    s.submit("research/r1", "q", cpu="4")
    assert admitted(s.run()) == []
    assert s.pending("research/r-big") == ("ExceedsMaxQuota", message_exceeds("cpu", "default", "0", "7", "6"))
    assert s.pending("research/r1") == ("WaitingForQuota", message_waiting("cpu", "default", "1"))
    assert s.cq_resource("res-a")["available"] == 3_000

    # Production's workload finishes: company usage 0 → r1 (4 <= min(6, 10)) fits within nominal, height 0.
    s.finish("prod/p1")
    d = s.run()
    assert admitted(d) == ["research/r1"]
    assert borrowing_of(d, "research/r1") == 0
    assert s.pending("research/r-big")[0] == "ExceedsMaxQuota"
    # research usage = spill of res-a = 4 - local 0 = 4; company usage = 4 - local(research) 0 = 4.
    assert s.cohort_resource("research")["usage"] == 4_000
    assert s.cohort_resource("company")["usage"] == 4_000
    # prod-a: available = avail(company) = 10 - 4 = 6; res-a: min(6 - 4 + 0, 6) = 2.
    assert s.cq_resource("prod-a")["available"] == 6_000
    assert s.cq_resource("res-a")["available"] == 2_000


def test_story1_variant_production_lending_limit_zero():
    """Story 1, alternative: production's top cohort sets lendingLimit 0 instead."""
    s = scenario()
    s.cohort("company")
    s.cohort("research", parent="company")
    s.cohort("production", parent="company", quotas={"cpu": ("0", None, "0")})
    s.cq("res-a", cohort="research", quotas={"cpu": "6"})
    s.cq("prod-a", cohort="production", quotas={"cpu": "4"})
    s.lq("research/q", "res-a")
    s.lq("prod/q", "prod-a")
    # production: subtree 0+4 = 4, local = max(0, 4-0) = 4, visible to company 0.  company subtree = 6 + 0 = 6.
    assert s.cohort_resource("production")["subtreeQuota"] == 4_000
    assert s.cohort_resource("company")["subtreeQuota"] == 6_000
    # potentialAvailable(res-a) = pot(research) = pot(company) = 6: research can never use production's 4.
    # potentialAvailable(prod-a) = local(prod-a) 0 + local(production) 4 + pot(company) 6 = 10.
    assert s.cq_resource("res-a")["potentialAvailable"] == 6_000
    assert s.cq_resource("prod-a")["potentialAvailable"] == 10_000

    s.submit("research/r-big", "q", cpu="7")
    assert admitted(s.run()) == []
    assert s.pending("research/r-big") == ("ExceedsMaxQuota", message_exceeds("cpu", "default", "0", "7", "6"))

    # prod-a takes 7: KEP T(prod-a) = -3, T(production) = 0 + (-3) = -3, T(company) = min(0, -3) + 6 = 3 >= 0.
    # Height: prod-a 4 < 7, remaining 7; production 4 < 7, remaining 7 - LocalAvailable(production) 4 = 3;
    # company 6 >= 3 → height(company) = 2.
    s.submit("prod/p1", "q", cpu="7")
    d = s.run()
    assert admitted(d) == ["prod/p1"]
    assert borrowing_of(d, "prod/p1") == 2
    # usage: prod-a 7 → production 7 (prod-a local 0) → company 7 - local(production) 4 = 3.
    assert s.cohort_resource("production")["usage"] == 7_000
    assert s.cohort_resource("company")["usage"] == 3_000

    # research has 6 - 3 = 3 left: 4 waits (1 more needed), 3 fits within res-a's nominal.
    s.submit("research/r1", "q", cpu="4")
    s.submit("research/r2", "q", cpu="3")
    d = s.run()
    assert admitted(d) == ["research/r2"]
    assert borrowing_of(d, "research/r2") == 0
    assert s.pending("research/r1") == ("WaitingForQuota", message_waiting("cpu", "default", "1"))


def test_story2_orgs_do_not_borrow_special_queue_borrows_from_everybody():
    """top ─┬─ org-a (BL 0) ── a1 (nominal 5)
            ├─ org-b (BL 0) ── b1 (nominal 5)
            └─ special (nominal 0, no borrowingLimit = infinite)"""
    s = scenario()
    s.cohort("top")
    s.cohort("org-a", parent="top", quotas={"cpu": ("0", "0", None)})
    s.cohort("org-b", parent="top", quotas={"cpu": ("0", "0", None)})
    s.cq("a1", cohort="org-a", quotas={"cpu": "5"})
    s.cq("b1", cohort="org-b", quotas={"cpu": "5"})
    s.cq("special", cohort="top", quotas={"cpu": "0"})
    s.lq("a/q", "a1")
    s.lq("b/q", "b1")
    s.lq("s/q", "special")
    # pot(a1) = min(subtree(org-a) 5 + 0, pot(top) 10) = 5; pot(special) = pot(top) = 10.
    assert s.cq_resource("a1")["potentialAvailable"] == 5_000
    assert s.cq_resource("special")["potentialAvailable"] == 10_000

    s.submit("a/too-big", "q", cpu="6")
    assert admitted(s.run()) == []
    assert s.pending("a/too-big") == ("ExceedsMaxQuota", message_exceeds("cpu", "default", "0", "6", "5"))

    # special takes 8 of the orgs' unused 10: T(top) = 10 - 8 = 2 >= 0.
    # Height: special 0 < 8; top 10 >= 8 → height(top) = 1 + height(org-a) 1 = 2.
    s.submit("s/low", "q", cpu="8", priority=-10)
    d = s.run()
    assert admitted(d) == ["s/low"]
    assert borrowing_of(d, "s/low") == 2

    # a1 wants 3 within its nominal: available(a1) = min(5 - 0 + 0, avail(top) = 2) = 2 → 1 more needed;
    # a1 wants 2 → fits (T(org-a) = 3, T(top) = 0).  b1 wants 1: min(5, 0) = 0 → 1 more needed.
    s.submit("a/w3", "q", cpu="3")
    s.submit("a/w2", "q", cpu="2")
    s.submit("b/w1", "q", cpu="1")
    d = s.run()
    assert admitted(d) == ["a/w2"]
    assert s.pending("a/w3") == ("WaitingForQuota", message_waiting("cpu", "default", "1"))
    assert s.pending("b/w1") == ("WaitingForQuota", message_waiting("cpu", "default", "1"))

    # special finishes: top usage 10 → 2.  a/w3: min(5 - 2 + 0, 10 - 2) = 3 → fits, height 0;
    # b/w1 fits, height 0.  Same height and priority → earlier creation first: a/w3 then b/w1.
    s.finish("s/low")
    d = s.run()
    assert admitted(d) == ["a/w3", "b/w1"]
    assert [x["borrowing"] for x in d] == [0, 0]
    assert s.cohort_resource("top")["usage"] == 6_000
    # special can take exactly what is left everywhere: 10 - 6 = 4.
    s.submit("s/fill", "q", cpu="4")
    assert admitted(s.run()) == ["s/fill"]
    s.submit("s/one-more", "q", cpu="1")
    assert admitted(s.run()) == []
    assert s.pending("s/one-more") == ("WaitingForQuota", message_waiting("cpu", "default", "1"))


# --------------------------------------------------------------------------- long-distance borrowing


def test_long_distance_borrowing_across_three_levels():
    """r ─┬─ ca ── a1 ── a (nominal 2)
          └─ cb ── b1 ── b (nominal 6)"""
    s = scenario()
    s.cohort("r")
    s.cohort("ca", parent="r")
    s.cohort("a1", parent="ca")
    s.cohort("cb", parent="r")
    s.cohort("b1", parent="cb")
    s.cq("a", cohort="a1", quotas={"cpu": "2"})
    s.cq("b", cohort="b1", quotas={"cpu": "6"})
    s.lq("ns/a", "a")
    s.lq("ns/b", "b")
    # a takes 7: T(a) = -5 = T(a1) = T(ca); T(r) = -5 + 6 = 1 >= 0.
    # Height: a 2 < 7; a1 subtree 2 < 7; ca 2 < 7; r 8 >= 7 → height(r) = 3 (a1 1, ca 2, r 3).
    s.submit("ns/far", "a", cpu="7")
    d = s.run()
    assert admitted(d) == ["ns/far"]
    assert borrowing_of(d, "ns/far") == 3
    # b holds 6 nominal but only 8 - 7 = 1 is unused in the whole tree (no lending limits, no preemption).
    s.submit("ns/b2", "b", cpu="2")
    assert admitted(s.run()) == []
    assert s.pending("ns/b2") == ("WaitingForQuota", message_waiting("cpu", "default", "1"))
    assert s.cq_resource("b")["available"] == 1_000
    # usage spills all the way: a1 = ca = r = 7.
    assert [s.cohort_resource(c)["usage"] for c in ("a1", "ca", "r")] == [7_000, 7_000, 7_000]


def test_borrowing_limit_on_a_middle_cohort_caps_long_distance_borrowing():
    """r ─┬─ l1 ── l2 (BL 3) ── l3 ── deep (nominal 1)
          └─ donor (nominal 8)"""
    s = scenario()
    s.cohort("r")
    s.cohort("l1", parent="r")
    s.cohort("l2", parent="l1", quotas={"cpu": ("0", "3", None)})
    s.cohort("l3", parent="l2")
    s.cq("deep", cohort="l3", quotas={"cpu": "1"})
    s.cq("donor", cohort="r", quotas={"cpu": "8"})
    s.lq("ns/q", "deep")
    # pot(r) = 9; l1: 9; l2: min(subtree 1 + BL 3, 9) = 4; l3: 4; deep: 4.
    assert s.cq_resource("deep")["potentialAvailable"] == 4_000
    s.submit("ns/five", "q", cpu="5")
    s.submit("ns/four", "q", cpu="4")
    d = s.run()
    # five > 4 → ExceedsMaxQuota.  four: T(l2) = 1 - 4 = -3 >= -3 → admitted.
    # Height: deep 1 < 4; l3 1 < 4; l2 1 < 4; l1 1 < 4; r 9 >= 4 → height(r) = max(1, l1 3 + 1) = 4.
    assert admitted(d) == ["ns/four"]
    assert borrowing_of(d, "ns/four") == 4
    assert s.pending("ns/five") == ("ExceedsMaxQuota", message_exceeds("cpu", "default", "0", "5", "4"))


def test_borrowing_height_zero_one_two():
    """g ─┬─ p ─┬─ x (nominal 2)
          │     └─ y (nominal 2)
          └─ z (nominal 4)"""
    s = scenario()
    s.cohort("g")
    s.cohort("p", parent="g")
    s.cq("x", cohort="p", quotas={"cpu": "2"})
    s.cq("y", cohort="p", quotas={"cpu": "2"})
    s.cq("z", cohort="g", quotas={"cpu": "4"})
    s.lq("ns/q", "x")
    # 2 within x's nominal → 0.
    s.submit("ns/h0", "q", cpu="2")
    d = s.run()
    assert borrowing_of(d, "ns/h0") == 0
    # usage 2 + 2 > 2; remaining 2; p: subtree 4 >= usage 2 + 2 → height(p) = 1.
    s.submit("ns/h1", "q", cpu="2")
    d = s.run()
    assert borrowing_of(d, "ns/h1") == 1
    # usage 4 + 3; remaining 3; p: 4 < 4 + 3; g: subtree 8 >= usage 4 + 3 → height(g) = 2.
    s.submit("ns/h2", "q", cpu="3")
    d = s.run()
    assert borrowing_of(d, "ns/h2") == 2
    assert s.workload("ns/h2")["borrowing"] == 2
    # 8 - 7 = 1 left in the whole tree.
    assert s.cq_resource("z")["available"] == 1_000


# --------------------------------------------------------------------------- lending limits


def test_lending_limits_at_several_levels():
    """root ─┬─ cc (nominal 2, LL 5) ─┬─ cd (nominal 0, LL 1) ── q1 (nominal 4, LL 3)
             │                        └─ q2 (nominal 2)
             └─ out (nominal 0)

    Kueue (§1.3): q1 local = 4-3 = 1, visible 3.  cd subtree = 3, local = 3-1 = 2 (from its *subtree*), visible 1.
    cc subtree = 2 + 1 + 2 = 5, local = max(0, 5-5) = 0, visible 5.  root subtree = 5.
    """
    s = scenario()
    s.cohort("root")
    s.cohort("cc", parent="root", quotas={"cpu": ("2", None, "5")})
    s.cohort("cd", parent="cc", quotas={"cpu": ("0", None, "1")})
    s.cq("q1", cohort="cd", quotas={"cpu": ("4", None, "3")})
    s.cq("q2", cohort="cc", quotas={"cpu": "2"})
    s.cq("out", cohort="root", quotas={"cpu": "0"})
    s.lq("ns/q1", "q1")
    s.lq("ns/q2", "q2")
    s.lq("ns/out", "out")
    assert [s.cohort_resource(c)["subtreeQuota"] for c in ("cd", "cc", "root")] == [3_000, 5_000, 5_000]
    # pot(out) = 5.  pot(q2) = local(q2) 0 + local(cc) 0 + 5 = 5.  pot(q1) = 1 + 2 + 0 + 5 = 8 (= all quota:
    # KEP with q1 using 8: T(q1) = -4, T(cd) = -4, T(cc) = 2 - 4 + 2 = 0, T(root) = 0).
    assert s.cq_resource("out")["potentialAvailable"] == 5_000
    assert s.cq_resource("q2")["potentialAvailable"] == 5_000
    assert s.cq_resource("q1")["potentialAvailable"] == 8_000

    # q1 takes 6: available = 1 + 2 + 0 + 5 = 8.  Height: q1 4 < 6, remaining 6-1 = 5; cd 3 < 5,
    # remaining 5-2 = 3; cc 5 >= 3 → height(cc) = 2.
    s.submit("ns/big", "q1", cpu="6")
    d = s.run()
    assert admitted(d) == ["ns/big"]
    assert borrowing_of(d, "ns/big") == 2
    # usage: q1 6 → cd 6-1 = 5 → cc 5-2 = 3 → root 3-0 = 3.
    assert [s.cohort_resource(c)["usage"] for c in ("cd", "cc", "root")] == [5_000, 3_000, 3_000]

    # out: available = 5 - 3 = 2.  KEP for out+3: T(q1) = -2, T(cd) = -2, T(cc) = 2-2+2 = 2, min(5,2) = 2,
    # T(root) = 2 - 3 = -1 < 0 → no;  out+2: T(root) = 0 → yes.  Height(root) = 3.
    s.submit("ns/o3", "out", cpu="3")
    s.submit("ns/o2", "out", cpu="2")
    d = s.run()
    assert admitted(d) == ["ns/o2"]
    assert borrowing_of(d, "ns/o2") == 3
    assert s.pending("ns/o3") == ("WaitingForQuota", message_waiting("cpu", "default", "1"))

    # q2 now has nothing left even within its own nominal: T(cc) = 2 - 2 + 1 = 1, T(root) = 1 - 2 = -1.
    s.submit("ns/q2w", "q2", cpu="1")
    assert admitted(s.run()) == []
    assert s.pending("ns/q2w") == ("WaitingForQuota", message_waiting("cpu", "default", "1"))


def test_cohort_lending_limit_applies_to_subtree_quota():
    """A cohort with no nominal of its own still lends at most its lendingLimit of its children's quota.

    root ─┬─ cc (nominal 0, LL 3) ─┬─ c1 (nominal 4)
          │                        └─ c2 (nominal 4)
          └─ d (nominal 0)
    cc subtree = 8, local = 8 - 3 = 5, visible 3 → root subtree 3 (not 8: the limit is on the subtree).
    """
    s = scenario()
    s.cohort("root")
    s.cohort("cc", parent="root", quotas={"cpu": ("0", None, "3")})
    s.cq("c1", cohort="cc", quotas={"cpu": "4"})
    s.cq("c2", cohort="cc", quotas={"cpu": "4"})
    s.cq("d", cohort="root", quotas={"cpu": "0"})
    s.lq("ns/c1", "c1")
    s.lq("ns/d", "d")
    assert s.cohort_resource("root")["subtreeQuota"] == 3_000
    s.submit("ns/d4", "d", cpu="4")
    s.submit("ns/d3", "d", cpu="3")
    d = s.run()
    assert admitted(d) == ["ns/d3"]
    assert s.pending("ns/d4") == ("ExceedsMaxQuota", message_exceeds("cpu", "default", "0", "4", "3"))
    # cc keeps its 5 non-lendable: c1 can take 5 (4 own + 1 of c2's share of the local part).
    # available(c1) = 0 + LocalAvailable(cc) 5 + avail(root) 0 = 5.  KEP: T(c1) = -1, T(cc) = -1 + 4 = 3,
    # min(3, 3) = 3, T(root) = 3 - 3 = 0.
    s.submit("ns/c5", "c1", cpu="5")
    s.submit("ns/c1", "c1", cpu="1")
    d = s.run()
    assert admitted(d) == ["ns/c5"]
    assert s.pending("ns/c1") == ("WaitingForQuota", message_waiting("cpu", "default", "1"))


# --------------------------------------------------------------------------- borrowing limits, shared pool


def test_borrowing_limit_on_cluster_queue():
    s = scenario()
    s.cohort("co")
    s.cq("b", cohort="co", quotas={"cpu": ("2", "1", None)})
    s.cq("l", cohort="co", quotas={"cpu": "10"})
    s.lq("ns/q", "b")
    # pot(b) = min(2 + 1, pot(co) 12) = 3.
    assert s.cq_resource("b")["potentialAvailable"] == 3_000
    s.submit("ns/four", "q", cpu="4")
    s.submit("ns/three", "q", cpu="3")
    s.submit("ns/one", "q", cpu="1")
    d = s.run()
    # four: ExceedsMaxQuota.  three: T(b) = -1 >= -1, height(co) = 1.
    # one: available(b) = min(stored 2 - used 3 + BL 1 = 0, 12 - 3) = 0 → 1 more needed.
    assert admitted(d) == ["ns/three"]
    assert borrowing_of(d, "ns/three") == 1
    assert s.pending("ns/four") == ("ExceedsMaxQuota", message_exceeds("cpu", "default", "0", "4", "3"))
    assert s.pending("ns/one") == ("WaitingForQuota", message_waiting("cpu", "default", "1"))
    assert s.cq_resource("b")["available"] == 0
    assert s.cq_resource("l")["available"] == 9_000


def test_borrowing_limit_on_cohort():
    """root ─┬─ cc (nominal 0, BL 2) ─┬─ c1 (nominal 3)
             │                        └─ c2 (nominal 1)
             └─ big (nominal 10)"""
    s = scenario()
    s.cohort("root")
    s.cohort("cc", parent="root", quotas={"cpu": ("0", "2", None)})
    s.cq("c1", cohort="cc", quotas={"cpu": "3"})
    s.cq("c2", cohort="cc", quotas={"cpu": "1"})
    s.cq("big", cohort="root", quotas={"cpu": "10"})
    s.lq("ns/c1", "c1")
    s.lq("ns/c2", "c2")
    s.lq("ns/big", "big")
    # pot(c1) = min(subtree(cc) 4 + 2, 14) = 6.
    assert s.cq_resource("c1")["potentialAvailable"] == 6_000
    # c1 takes 5: T(c1) = -2, T(cc) = -2 + 1 = -1 >= -2.  Height: cc 4 < 5; root 14 >= 5 → 2.
    s.submit("ns/c1-5", "c1", cpu="5")
    d = s.run()
    assert borrowing_of(d, "ns/c1-5") == 2
    # c2 wants 2: T(cc) = -2 + (1-2) = -3 < -2.  available(c2) = min(4 - 5 + 2, 14 - 5) = 1 → 1 more needed.
    # c2 wants 1: T(cc) = -2 >= -2, within c2's nominal → height 0.
    s.submit("ns/c2-2", "c2", cpu="2")
    s.submit("ns/c2-1", "c2", cpu="1")
    d = s.run()
    assert admitted(d) == ["ns/c2-1"]
    assert borrowing_of(d, "ns/c2-1") == 0
    assert s.pending("ns/c2-2") == ("WaitingForQuota", message_waiting("cpu", "default", "1"))
    # root usage = spill of cc = 6; big can take 14 - 6 = 8, not 9.
    assert s.cohort_resource("root")["usage"] == 6_000
    s.submit("ns/big9", "big", cpu="9")
    s.submit("ns/big8", "big", cpu="8")
    d = s.run()
    assert admitted(d) == ["ns/big8"]


def test_cohort_nominal_quota_is_a_shared_pool():
    s = scenario()
    s.cohort("pool", quotas={"cpu": "6"})
    s.cq("p1", cohort="pool", quotas={"cpu": "0"})
    s.cq("p2", cohort="pool", quotas={"cpu": "0"})
    s.lq("ns/p1", "p1")
    s.lq("ns/p2", "p2")
    assert s.cohort_resource("pool")["subtreeQuota"] == 6_000
    # p1 takes 4 from the pool (height(pool) = 1); p2 has 6 - 4 = 2 left.
    s.submit("ns/a", "p1", cpu="4")
    s.submit("ns/b", "p2", cpu="3")
    s.submit("ns/c", "p2", cpu="2")
    d = s.run()
    assert admitted(d) == ["ns/a", "ns/c"]
    assert borrowing_of(d, "ns/a") == 1
    assert s.pending("ns/b") == ("WaitingForQuota", message_waiting("cpu", "default", "1"))
    assert s.cohort_resource("pool")["usage"] == 6_000
    assert s.cq_resource("p1")["available"] == 0


# --------------------------------------------------------------------------- over-committed queues


def over_committed() -> Scenario:
    """co ─┬─ a (nominal 4)  ← observed admission of 10 (over the whole cohort's 8)
           ├─ b (nominal 4)
           └─ c (nominal 3, lendingLimit 0: all of it is local)"""
    s = scenario()
    s.cohort("co")
    s.cq("a", cohort="co", quotas={"cpu": "4"})
    s.cq("b", cohort="co", quotas={"cpu": "4"})
    s.cq("c", cohort="co", quotas={"cpu": ("3", None, "0")})
    for q in ("a", "b", "c"):
        s.lq(f"ns/{q}", q)
    s.submit("ns/huge", "a", cpu="10")
    s.run()
    # 10 > pot(a) = subtree(co) = 4 + 4 + 0 = 8 → ExceedsMaxQuota, then observed admitted anyway.
    assert s.pending("ns/huge")[0] == "ExceedsMaxQuota"
    s.observe_admission("ns/huge", "a", cpu="10")
    assert s.run() == []
    return s


def test_over_committed_usage_spills_into_cohort_and_blocks_others():
    s = over_committed()
    wl = s.workload("ns/huge")
    assert wl["status"] == "Admitted"
    assert wl["observedAdmissionAgreed"] is False
    # a usage 10 spills 10 into co: co usage 10 > subtree 8 → avail(co) = -2 (state clamps at 0).
    assert s.cohort_resource("co")["usage"] == 10_000
    assert s.cq_resource("a")["usage"] == 10_000
    assert s.cq_resource("b")["available"] == 0
    # b has 4 nominal and uses nothing, yet cannot admit 1: available(b) = 0 + (-2) → clamped 0, 1 more needed.
    s.submit("ns/b1", "b", cpu="1")
    assert admitted(s.run()) == []
    assert s.pending("ns/b1") == ("WaitingForQuota", message_waiting("cpu", "default", "1"))
    # The over-committed workload finishes → b1 fits.
    s.finish("ns/huge")
    assert admitted(s.run()) == ["ns/b1"]


def test_kueue_over_commit_local_quota_partially_usable():
    """Kueue and the KEP text disagree here; we follow Kueue.

    With co over-committed by 2 (usage 10, subtree 8), KEP-79's condition already fails at the root
    (T(co) = -2 < 0) and admitting anything anywhere keeps it failing, so the KEP would admit nothing.
    Kueue's ``available(c) = LocalAvailable(c) + available(co) = 3 + (-2) = 1`` (resource_node.go, §1.4):
    c's non-lendable quota is usable up to 1, reduced by the parent's deficit.
    """
    s = over_committed()
    assert s.cq_resource("c")["available"] == 1_000
    s.submit("ns/c2", "c", cpu="2")
    s.submit("ns/c1", "c", cpu="1")
    d = s.run()
    assert admitted(d) == ["ns/c1"]
    assert borrowing_of(d, "ns/c1") == 0
    assert s.pending("ns/c2") == ("WaitingForQuota", message_waiting("cpu", "default", "1"))


def test_observed_admission_within_quota_is_agreed_and_charged():
    s = scenario()
    s.cq("a", quotas={"cpu": "4"})
    s.lq("ns/q", "a")
    # Applied with status.admission: an observed admission, charged as given (2 cores).
    s.submit("ns/seen", "q", cpu="3", admission={"clusterQueue": "a", "podSetAssignments": [
        assignment("main", 1, {"cpu": "default"}, {"cpu": "2"})]})
    assert s.run() == []
    wl = s.workload("ns/seen")
    assert wl["status"] == "Admitted" and wl["observedAdmissionAgreed"] is True
    assert s.cq_resource("a")["usage"] == 2_000
    s.submit("ns/next", "q", cpu="2")
    assert admitted(s.run()) == ["ns/next"]


# --------------------------------------------------------------------------- implicit cohorts


def test_implicit_cohort_then_explicit_with_parent_then_deleted_with_children():
    s = scenario()
    s.cohort("top")
    s.cq("t", cohort="top", quotas={"cpu": "4"})
    s.cq("a", cohort="ghost", quotas={"cpu": "2"})
    s.cq("b", cohort="ghost", quotas={"cpu": "3"})
    s.lq("ns/a", "a")
    s.lq("ns/t", "t")
    ghost = s.cohort_state("ghost")
    assert (ghost["parent"], ghost["explicit"], ghost["active"]) == (None, False, True)
    assert s.cohort_resource("ghost")["subtreeQuota"] == 5_000
    # a borrows from b through the implicit cohort: 4 <= 5, height(ghost) = 1.
    s.submit("ns/a4", "a", cpu="4")
    d = s.run()
    assert borrowing_of(d, "ns/a4") == 1

    # The Cohort object appears with parent top and 1 cpu of its own:
    # ghost subtree = 1 + 2 + 3 = 6; top = 4 + 6 = 10.  pot(t) = 10, pot(a) = 10.
    s.cohort("ghost", parent="top", quotas={"cpu": ("1", None, None)})
    ghost = s.cohort_state("ghost")
    assert (ghost["parent"], ghost["explicit"]) == ("top", True)
    assert s.cohort_resource("ghost")["subtreeQuota"] == 6_000
    assert s.cohort_resource("top")["subtreeQuota"] == 10_000
    assert s.cq_resource("t")["potentialAvailable"] == 10_000
    # a takes 1 more: 5 <= ghost subtree 6 → height(ghost) = 1.
    s.submit("ns/a1", "a", cpu="1")
    d = s.run()
    assert borrowing_of(d, "ns/a1") == 1

    # Deleting ghost while it has children: an implicit root "ghost" keeps a and b (subtree 2 + 3 = 5,
    # its own 1 is gone); top loses the whole subtree: 10 → 4.
    s.delete_cohort("ghost")
    ghost = s.cohort_state("ghost")
    assert (ghost["parent"], ghost["explicit"]) == (None, False)
    assert s.cohort_resource("ghost")["subtreeQuota"] == 5_000
    assert s.cohort_resource("ghost")["usage"] == 5_000
    assert s.cohort_resource("top")["subtreeQuota"] == 4_000
    assert s.cq_resource("t")["potentialAvailable"] == 4_000
    s.submit("ns/t5", "t", cpu="5")
    s.submit("ns/t4", "t", cpu="4")
    d = s.run()
    assert admitted(d) == ["ns/t4"]
    assert s.pending("ns/t5") == ("ExceedsMaxQuota", message_exceeds("cpu", "default", "0", "5", "4"))


def test_implicit_cohort_is_garbage_collected_when_its_last_child_leaves():
    s = scenario()
    s.cq("a", cohort="ghost", quotas={"cpu": "2"})
    assert "ghost" in s.state()["cohorts"]
    s.cq("a", cohort="elsewhere", quotas={"cpu": "2"})
    cohorts = s.state()["cohorts"]
    assert "ghost" not in cohorts and cohorts["elsewhere"]["explicit"] is False


# --------------------------------------------------------------------------- cohort cycles


def test_cohort_cycle_suspends_the_tree_and_fixing_it_reactivates():
    s = scenario()
    s.cohort("y")
    s.cohort("x", parent="y")
    s.cq("c", cohort="x", quotas={"cpu": "2"})
    s.cq("d", cohort="y", quotas={"cpu": "2"})
    s.cq("e", cohort="other", quotas={"cpu": "2"})
    for q in ("c", "d", "e"):
        s.lq(f"ns/{q}", q)
    s.submit("ns/c-before", "c", cpu="1")
    assert admitted(s.run()) == ["ns/c-before"]

    # y → x closes a cycle x → y → x.
    s.cohort("y", parent="x")
    s.submit("ns/c-during", "c", cpu="1")
    s.submit("ns/d-during", "d", cpu="1")
    s.submit("ns/e-during", "e", cpu="1")
    d = s.run()
    assert admitted(d) == ["ns/e-during"]  # another tree is not affected
    assert s.pending("ns/c-during") == ("Suspended", "ClusterQueue c is inactive")
    assert s.pending("ns/d-during") == ("Suspended", "ClusterQueue d is inactive")
    st = s.state()
    assert st["clusterQueues"]["c"]["active"] is False and st["clusterQueues"]["d"]["active"] is False
    assert st["clusterQueues"]["e"]["active"] is True
    assert st["cohorts"]["x"]["active"] is False and st["cohorts"]["y"]["active"] is False
    # The admitted workload keeps its quota.
    assert st["workloads"]["ns/c-before"]["status"] == "Admitted"
    assert st["clusterQueues"]["c"]["resources"]["default"]["cpu"]["usage"] == 1_000

    # Fixing the cycle reactivates the tree and admits what waits (c: 1 + 1 <= 2; d: 1 <= 2).
    s.cohort("y")
    d = s.run()
    assert admitted(d) == ["ns/c-during", "ns/d-during"]
    assert s.cohort_state("x")["active"] is True
    # The relinked tree has its subtree quota back: y = 2 (d) + 2 (x ← c) = 4, usage 3.
    assert s.cohort_resource("y")["subtreeQuota"] == 4_000
    assert s.cohort_resource("y")["usage"] == 3_000


# --------------------------------------------------------------------------- flavors


def two_flavor_cq(s: Scenario, name: str, cohort: str, when_can_borrow: str | None) -> None:
    """name: on-demand nominal 2, spot nominal 8; a lender in the same cohort has on-demand 4."""
    s.cq(name, cohort=cohort, groups=[{"on-demand": {"cpu": "2"}, "spot": {"cpu": "8"}}],
         when_can_borrow=when_can_borrow)
    s.cq(f"{name}-lender", cohort=cohort, groups=[{"on-demand": {"cpu": "4"}}])
    s.lq(f"ns/{name}", name)


@pytest.mark.parametrize("when_can_borrow,flavor,height", [
    (None, "on-demand", 1),              # default MayStopSearch: first flavor that fits, even borrowing
    ("MayStopSearch", "on-demand", 1),
    ("TryNextFlavor", "spot", 0),        # keeps looking and prefers the flavor that fits without borrowing
])
def test_when_can_borrow(when_can_borrow, flavor, height):
    s = Scenario()
    s.flavor("on-demand")
    s.flavor("spot")
    two_flavor_cq(s, "f", "co", when_can_borrow)
    # on-demand: available = 2 + 4 = 6 >= 3, but 3 > nominal 2 → borrowing height(co) = 1.  spot: 3 <= 8, height 0.
    s.submit("ns/w", "f", cpu="3")
    d = s.run()
    assert d[0]["podSetAssignments"] == [assignment("main", 1, {"cpu": flavor}, {"cpu": "3"})]
    assert d[0]["borrowing"] == height


def test_flavors_tried_in_order_and_next_flavor_when_first_cannot_fit():
    s = Scenario()
    s.flavor("on-demand")
    s.flavor("spot")
    two_flavor_cq(s, "f", "co", None)
    s.submit("ns/first", "f", cpu="1")   # on-demand, the first flavor, within nominal
    s.submit("ns/seven", "f", cpu="7")   # on-demand: 1 + 7 > pot 6 → ExceedsMaxQuota there → spot (7 <= 8)
    d = s.run()
    assert [x["podSetAssignments"][0]["flavors"]["cpu"] for x in d] == ["on-demand", "spot"]
    # Neither fits: on-demand has 6 - 1 = 5 free, spot 8 - 7 = 1.
    s.submit("ns/six", "f", cpu="6")
    assert admitted(s.run()) == []
    reason, message = s.pending("ns/six")
    # NoFitReason: least severe among the flavors of the group → WaitingForQuota; statuses sorted, ", "-joined.
    assert reason == "WaitingForQuota"
    assert message == ("couldn't assign flavors to pod set main: "
                       "insufficient unused quota for cpu in flavor on-demand, 1 more needed, "
                       "insufficient unused quota for cpu in flavor spot, 5 more needed")


def test_all_resources_of_a_group_get_the_same_flavor_with_counts():
    s = Scenario()
    s.flavor("small")
    s.flavor("large")
    s.cq("m", groups=[{"small": {"cpu": "8", "memory": "2Gi"}, "large": {"cpu": "8", "memory": "16Gi"}}])
    s.lq("ns/q", "m")
    # 4 pods × (500m cpu, 1Gi) = 2 cpu, 4Gi: small's memory 4Gi > 2Gi (no cohort: pot = nominal) → large for both.
    s.submit("ns/w", "q", pod_sets=[{"name": "workers", "count": 4, "requests": {"cpu": "500m", "memory": "1Gi"}}])
    d = s.run()
    assert d[0]["podSetAssignments"] == [assignment("workers", 4, {"cpu": "large", "memory": "large"},
                                                    {"cpu": "2", "memory": str(4 * 2**30)})]
    assert s.cq_resource("m", "memory", "large")["usage"] == 4 * 2**30
    assert s.cq_resource("m", "cpu", "small")["usage"] == 0


def test_several_pod_sets_and_resource_groups():
    s = Scenario()
    for f in ("default", "a100", "t4"):
        s.flavor(f)
    s.cq("g", groups=[{"f1": {"cpu": "2"}, "default": {"cpu": "8"}}, {"a100": {GPU: 2}, "t4": {GPU: 4}}])
    s.flavor("f1")
    s.lq("ns/q", "g")
    # driver: cpu 1 → f1.  workers: 3 × (1 cpu, 1 gpu): cpu f1 has 1 (driver) + 3 > 2 → ExceedsMaxQuota
    # → default; gpu a100 3 > 2 → t4.
    s.submit("ns/w", "q", pod_sets=[{"name": "driver", "count": 1, "requests": {"cpu": "1"}},
                                     {"name": "workers", "count": 3, "requests": {"cpu": "1", GPU: "1"}}])
    d = s.run()
    assert d[0]["podSetAssignments"] == [
        assignment("driver", 1, {"cpu": "f1"}, {"cpu": "1"}),
        assignment("workers", 3, {"cpu": "default", GPU: "t4"}, {"cpu": "3", GPU: "3"}),
    ]


def test_exceeds_max_quota_counts_previous_pod_sets():
    s = scenario()
    s.cq("a", quotas={"cpu": "6"})
    s.lq("ns/q", "a")
    # driver 1 fits; workers 3 × 2 = 6: 1 + 6 > 6.
    s.submit("ns/w", "q", pod_sets=[{"name": "driver", "count": 1, "requests": {"cpu": "1"}},
                                     {"name": "workers", "count": 3, "requests": {"cpu": "2"}}])
    assert admitted(s.run()) == []
    assert s.pending("ns/w") == ("ExceedsMaxQuota", message_exceeds("cpu", "default", "1", "6", "6", "workers"))


def test_pod_template_requests_are_used():
    s = scenario()
    s.cq("a", quotas={"cpu": "4"})
    s.lq("ns/q", "a")
    s.submit("ns/w", "q", cpu="1500m", count=2, template=True)   # 2 × 1.5 = 3
    d = s.run()
    assert d[0]["podSetAssignments"] == [assignment("main", 2, {"cpu": "default"}, {"cpu": "3"})]
    s.submit("ns/w2", "q", cpu="1500m", template=True)           # 3 + 1.5 > 4 → 500m more needed
    s.run()
    assert s.pending("ns/w2") == ("WaitingForQuota", message_waiting("cpu", "default", "500m"))


def test_no_matching_flavor_for_uncovered_resource():
    s = scenario()
    s.cq("a", quotas={"cpu": "4"})
    s.lq("ns/q", "a")
    s.submit("ns/gpu", "q", cpu="1", gpu="1")
    assert admitted(s.run()) == []
    assert s.pending("ns/gpu") == ("NoMatchingFlavor",
                                   "couldn't assign flavors to pod set main: resource nvidia.com/gpu unavailable in ClusterQueue")


def test_cluster_queue_with_missing_flavor_is_inactive_until_the_flavor_exists():
    s = Scenario()
    s.cq("a", groups=[{"late": {"cpu": "4"}}])
    s.lq("ns/q", "a")
    s.submit("ns/w", "q", cpu="1")
    assert admitted(s.run()) == []
    assert s.pending("ns/w") == ("Suspended", "ClusterQueue a is inactive")
    s.flavor("late")
    assert admitted(s.run()) == ["ns/w"]


# --------------------------------------------------------------------------- pending reasons


def test_misconfigured_local_queue_and_cluster_queue_missing():
    s = scenario()
    s.lq("ns/to-nowhere", "missing-cq")
    s.submit("ns/no-lq", "nope", cpu="1")
    s.submit("ns/no-cq", "to-nowhere", cpu="1")
    s.run()
    reason, message = s.pending("ns/no-lq")
    assert reason == "Misconfigured" and "nope" in message and "doesn't exist" in message
    reason, message = s.pending("ns/no-cq")
    assert reason == "Misconfigured" and message.startswith("ClusterQueue missing-cq ")
    # Creating the objects fixes both.
    s.cq("missing-cq", quotas={"cpu": "4"})
    assert admitted(s.run()) == ["ns/no-cq"]
    s.lq("ns/nope", "missing-cq")
    assert admitted(s.run()) == ["ns/no-lq"]


def test_kueue_wording_of_queue_blocker_messages():
    """Kueue ``WorkloadReconciler.getQueueBlocker`` (pkg/controller/core/workload_controller.go) names the
    LocalQueue by ``wl.Spec.QueueName`` only: "LocalQueue nope doesn't exist", "LocalQueue q is inactive";
    a LocalQueue whose ClusterQueue is missing: "ClusterQueue missing-cq doesn't exist"."""
    s = scenario()
    s.cq("a", quotas={"cpu": "4"})
    s.lq("ns/q", "a", stop_policy="Hold")
    s.submit("ns/no-lq", "nope", cpu="1")
    s.submit("ns/held", "q", cpu="1")
    s.lq("ns/to-nowhere", "missing-cq")
    s.submit("ns/no-cq", "to-nowhere", cpu="1")
    s.run()
    assert [s.pending("ns/no-lq"), s.pending("ns/held"), s.pending("ns/no-cq")] == [
        ("Misconfigured", "LocalQueue nope doesn't exist"),
        ("Suspended", "LocalQueue q is inactive"),
        ("Misconfigured", "ClusterQueue missing-cq doesn't exist"),
    ]


def test_kueue_wording_of_stop_eviction_messages():
    """Kueue evicts with fixed messages "The ClusterQueue is stopped" / "The LocalQueue is stopped"
    (workload_controller.go, reasons ClusterQueueStopped / LocalQueueStopped)."""
    s = scenario()
    s.cq("a", quotas={"cpu": "4"})
    s.lq("ns/q", "a")
    s.submit("ns/w1", "q", cpu="1")
    s.run()
    s.lq("ns/q", "a", stop_policy="HoldAndDrain")
    [d1] = s.run()
    s.lq("ns/q", "a")
    assert admitted(s.run()) == ["ns/w1"]
    s.cq("a", quotas={"cpu": "4"}, stop_policy="HoldAndDrain")
    [d2] = s.run()
    assert [(d1["reason"], d1["message"]), (d2["reason"], d2["message"])] == [
        ("LocalQueueStopped", "The LocalQueue is stopped"),
        ("ClusterQueueStopped", "The ClusterQueue is stopped"),
    ]


def test_cluster_queue_hold_and_hold_and_drain():
    s = scenario()
    s.cq("a", quotas={"cpu": "4"})
    s.lq("ns/q", "a")
    s.submit("ns/w1", "q", cpu="1")
    assert admitted(s.run()) == ["ns/w1"]
    # Hold: admitted workloads stay; new ones wait as Suspended.
    s.cq("a", quotas={"cpu": "4"}, stop_policy="Hold")
    s.submit("ns/w2", "q", cpu="1")
    assert s.run() == []
    assert s.workload("ns/w1")["status"] == "Admitted"
    assert s.pending("ns/w2") == ("Suspended", "ClusterQueue a is inactive")
    assert s.cq_state("a")["active"] is False
    # HoldAndDrain: w1 is evicted, its quota released, both wait.
    s.cq("a", quotas={"cpu": "4"}, stop_policy="HoldAndDrain")
    d = s.run()
    assert evicted(d) == ["ns/w1"] and admitted(d) == []
    assert d[0]["reason"] == "ClusterQueueStopped" and d[0]["clusterQueue"] == "a"
    assert s.cq_resource("a")["usage"] == 0
    assert s.pending("ns/w1")[0] == "Suspended"
    # Resume: both admitted, in queue order (w1 was created first).
    s.cq("a", quotas={"cpu": "4"})
    assert admitted(s.run()) == ["ns/w1", "ns/w2"]


def test_local_queue_hold_and_hold_and_drain():
    s = scenario()
    s.cq("a", quotas={"cpu": "4"})
    s.lq("ns/q", "a")
    s.lq("ns/other", "a")
    s.submit("ns/w1", "q", cpu="1")
    s.run()
    s.lq("ns/q", "a", stop_policy="Hold")
    s.submit("ns/w2", "q", cpu="1")
    s.submit("ns/o1", "other", cpu="1")
    d = s.run()
    assert admitted(d) == ["ns/o1"]            # the other LocalQueue of the same ClusterQueue is not stopped
    assert s.pending("ns/w2")[0] == "Suspended"
    assert s.workload("ns/w1")["status"] == "Admitted"
    s.lq("ns/q", "a", stop_policy="HoldAndDrain")
    d = s.run()
    assert evicted(d) == ["ns/w1"] and d[0]["reason"] == "LocalQueueStopped"
    assert s.cq_resource("a")["usage"] == 1_000   # only o1
    s.lq("ns/q", "a")
    assert admitted(s.run()) == ["ns/w1", "ns/w2"]


# --------------------------------------------------------------------------- queueing strategies and order


@pytest.mark.parametrize("strategy,expected", [("StrictFIFO", []), ("BestEffortFIFO", ["ns/w3"])])
def test_strict_fifo_head_blocks_best_effort_lets_smaller_pass(strategy, expected):
    s = scenario()
    s.cq("a", quotas={"cpu": "4"}, strategy=strategy)
    s.lq("ns/q", "a")
    s.submit("ns/w1", "q", cpu="3")
    s.submit("ns/w2", "q", cpu="2")   # 3 + 2 > 4: does not fit
    s.submit("ns/w3", "q", cpu="1")   # would fit (3 + 1 = 4) but is behind w2
    d = s.run()
    assert admitted(d) == ["ns/w1"] + expected
    assert s.pending("ns/w2") == ("WaitingForQuota", message_waiting("cpu", "default", "1"))
    assert s.workload("ns/w2")["positionInClusterQueue"] == 0
    if strategy == "StrictFIFO":
        assert s.workload("ns/w3")["status"] == "Pending"
        assert s.workload("ns/w3")["positionInClusterQueue"] == 1
        # A higher-priority arrival sorts before the blocked head and is tried: 3 + 1 <= 4.
        s.submit("ns/urgent", "q", cpu="1", priority=10)
        assert admitted(s.run()) == ["ns/urgent"]
        # w1 finishes: 4 - 1 = 3 free → w2 (2) then w3 (1), in queue order.
        s.finish("ns/w1")
        assert admitted(s.run()) == ["ns/w2", "ns/w3"]
    else:
        s.finish("ns/w1")
        assert admitted(s.run()) == ["ns/w2"]


def test_order_inside_a_cluster_queue_priority_then_creation_then_uid():
    s = scenario()
    s.cq("a", quotas={"cpu": "1"})
    s.lq("ns/q", "a")
    s.lq("ns/q2", "a")
    s.submit("ns/blocker", "q", cpu="1")
    s.submit("ns/lo", "q", cpu="1", created=10)
    s.submit("ns/hi", "q2", cpu="1", priority=5, created=20)
    s.submit("ns/early", "q", cpu="1", created=5)
    s.submit("ns/x1", "q2", cpu="1", created=7, uid="uid-2")
    s.submit("ns/x2", "q", cpu="1", created=7, uid="uid-1")
    s.run()
    expected = ["ns/hi", "ns/early", "ns/x2", "ns/x1", "ns/lo"]
    st = s.state()
    positions = {k: st["workloads"][k]["positionInClusterQueue"] for k in expected}
    assert positions == {k: i for i, k in enumerate(expected)}
    lq_positions = {k: st["workloads"][k]["positionInLocalQueue"] for k in expected}
    assert lq_positions == {"ns/early": 0, "ns/x2": 1, "ns/lo": 2, "ns/hi": 0, "ns/x1": 1}
    assert st["clusterQueues"]["a"]["pending"] == 5
    assert (st["localQueues"]["ns/q"]["pending"], st["localQueues"]["ns/q"]["admitted"]) == (3, 1)
    assert (st["localQueues"]["ns/q2"]["pending"], st["localQueues"]["ns/q2"]["admitted"]) == (2, 0)
    order = []
    current = "ns/blocker"
    for _ in expected:
        s.finish(current)
        [current] = admitted(s.run())
        order.append(current)
    assert order == expected


def cross_cq(s: Scenario) -> None:
    """co (nominal 0) ─┬─ a (nominal 2)
                       └─ b (nominal 2)     total 4"""
    s.cohort("co")
    s.cq("a", cohort="co", quotas={"cpu": "2"})
    s.cq("b", cohort="co", quotas={"cpu": "2"})
    s.lq("ns/a", "a")
    s.lq("ns/b", "b")
    s.run()


def test_cross_queue_lower_borrowing_height_first_then_no_longer_fits():
    s = scenario()
    cross_cq(s)
    # One Batch → one cycle with both heads.  a-w: 3 fits (4 free) but borrows (height 1);
    # b-w: 2 within nominal (height 0) → b-w first; then a-w needs 3 but only 2 are left:
    # "no longer fits" (Kueue re-checks fit after each admission in a cycle) → waits.
    with s.batch():
        s.submit("ns/a-w", "a", cpu="3", priority=100)
        s.submit("ns/b-w", "b", cpu="2")
    d = s.run()
    assert admitted(d) == ["ns/b-w"]
    assert s.pending("ns/a-w") == ("WaitingForQuota", message_waiting("cpu", "default", "1"))


@pytest.mark.parametrize("a_kwargs,b_kwargs,winner", [
    ({"priority": 0}, {"priority": 5}, "ns/b-w"),                          # priority
    ({"created": 50}, {"created": 40}, "ns/b-w"),                          # creation time
    ({"created": 40}, {"created": 50}, "ns/a-w"),
    ({"created": 40, "uid": "z"}, {"created": 40, "uid": "a"}, "ns/a-w"),  # full tie → ClusterQueue name
])
def test_cross_queue_order_for_the_last_cohort_capacity(a_kwargs, b_kwargs, winner):
    s = scenario()
    cross_cq(s)
    # Both want 3 of the cohort's 4 (height 1 each); only the first in cycle order fits.
    with s.batch():
        s.submit("ns/a-w", "a", cpu="3", **a_kwargs)
        s.submit("ns/b-w", "b", cpu="3", **b_kwargs)
    d = s.run()
    assert admitted(d) == [winner]
    assert borrowing_of(d, winner) == 1


def test_no_longer_fits_retried_next_cycle_with_another_flavor():
    s = Scenario()
    s.flavor("on-demand")
    s.flavor("spot")
    s.cohort("co")
    s.cq("a", cohort="co", groups=[{"on-demand": {"cpu": "0"}, "spot": {"cpu": "3"}}])
    s.cq("b", cohort="co", groups=[{"on-demand": {"cpu": "2"}}])
    s.lq("ns/a", "a")
    s.lq("ns/b", "b")
    # Cycle 1: b-w (2 on-demand, height 0) before a-w (on-demand 2 via borrowing, height 1, MayStopSearch).
    # After b-w, on-demand has 0 left: a-w no longer fits.  Cycle 2: on-demand ExceedsMaxQuota? no:
    # pot 2 >= 2 but available 0 → WaitingForQuota; spot 2 <= 3 fits → a-w admitted on spot.
    with s.batch():
        s.submit("ns/a-w", "a", cpu="2")
        s.submit("ns/b-w", "b", cpu="2")
    d = s.run()
    assert admitted(d) == ["ns/b-w", "ns/a-w"]
    assert d[1]["podSetAssignments"][0]["flavors"] == {"cpu": "spot"}
    assert d[1]["borrowing"] == 0


# --------------------------------------------------------------------------- batches and lifecycle


def test_batch_admits_only_after_the_whole_batch():
    def build(batched: bool) -> list[dict]:
        s = scenario()
        s.cq("a", quotas={"cpu": "4"})
        s.lq("ns/q", "a")
        s.run()
        ctx = s.batch() if batched else None
        if ctx:
            ctx.__enter__()
        s.submit("ns/low", "q", cpu="3")
        s.submit("ns/high", "q", cpu="4", priority=10)
        if ctx:
            ctx.__exit__(None, None, None)
        return s.run(), s

    d, s = build(batched=False)
    # One event at a time: low is admitted as soon as it arrives; high (4) then waits.
    assert admitted(d) == ["ns/low"]
    d, s = build(batched=True)
    # One Batch: both queued before the cycle; high sorts first (priority) and takes all 4.
    assert admitted(d) == ["ns/high"]
    assert d[0]["cause"] == s.events[-1]["id"] and s.events[-1]["type"] == "Batch"
    assert s.pending("ns/low") == ("WaitingForQuota", message_waiting("cpu", "default", "3"))


def test_batch_with_quota_change_lands_atomically():
    s = scenario()
    s.cq("a", quotas={"cpu": "2"})
    s.lq("ns/q", "a")
    with s.batch():
        s.submit("ns/w", "q", cpu="3")
        s.cq("a", quotas={"cpu": "3"})
    d = s.run()
    assert admitted(d) == ["ns/w"]
    # flavor, ClusterQueue, LocalQueue, Batch: the Batch is one applied event.
    assert s.full_state()["events"]["applied"] == 4


def test_evicted_workload_returns_to_its_queue_and_frees_quota():
    """The eviction releases 3 cpu and puts w1 back in its queue; Kueue also requeues the inadmissible w2
    on eviction (reference/kueue.md §3.1), so the heap holds w2 (priority 5) before w1 (priority 0) and w2
    is the head that gets the freed quota."""
    s = scenario()
    s.cq("a", quotas={"cpu": "4"})
    s.lq("ns/q", "a")
    s.submit("ns/w1", "q", cpu="3")
    s.submit("ns/w2", "q", cpu="2", priority=5)
    assert admitted(s.run()) == ["ns/w1"]
    # Evicted: 3 released; the queue holds w2 (priority 5) before w1 → w2 admitted (2), w1 (3) waits: 1 more.
    ev = s.evict("ns/w1")
    d = s.run()
    assert admitted(d) == ["ns/w2"] and d[0]["cause"] == ev["id"]
    assert s.pending("ns/w1") == ("WaitingForQuota", message_waiting("cpu", "default", "1"))
    assert s.workload("ns/w1")["clusterQueue"] == "a"
    assert s.cq_resource("a")["usage"] == 2_000


def test_evicted_workload_keeps_its_creation_time_and_is_readmitted_first():
    """Kueue GetQueueOrderTimestamp: an eviction that is not PodsReadyTimeout / AdmissionCheck keeps
    the creation timestamp, so the evicted workload goes back in front of later ones."""
    s = scenario()
    s.cq("a", quotas={"cpu": "4"})
    s.lq("ns/q", "a")
    s.submit("ns/w1", "q", cpu="3")
    s.submit("ns/w2", "q", cpu="2")
    assert admitted(s.run()) == ["ns/w1"]
    s.evict("ns/w1")
    assert admitted(s.run()) == ["ns/w1"]
    assert s.pending("ns/w2")[0] == "WaitingForQuota"


def test_finished_workload_admits_the_next_one():
    s = scenario()
    s.cq("a", quotas={"cpu": "4"})
    s.lq("ns/q", "a")
    s.submit("ns/w1", "q", cpu="4")
    s.submit("ns/w2", "q", cpu="4")
    assert admitted(s.run()) == ["ns/w1"]
    fin = s.finish("ns/w1")
    d = s.run()
    assert admitted(d) == ["ns/w2"] and d[0]["cause"] == fin["id"]
    st = s.state()
    assert st["workloads"]["ns/w1"]["status"] == "Finished"
    assert st["localQueues"]["ns/q"] == {"clusterQueue": "a", "pending": 0, "admitted": 1}
    # Finishing an unknown or already-finished workload is a no-op.
    s.finish("ns/w1")
    s.finish("ns/unknown")
    assert s.run() == []


def test_deleted_pending_workload_leaves_the_queue():
    """Deleting the pending w2 removes it; deleting the admitted w1 frees 4 cpu for w3 (1 cpu)."""
    s = scenario()
    s.cq("a", quotas={"cpu": "4"})
    s.lq("ns/q", "a")
    s.submit("ns/w1", "q", cpu="4")
    s.submit("ns/w2", "q", cpu="4")
    s.submit("ns/w3", "q", cpu="1", created=100)
    s.run()
    s.delete_workload("ns/w2")
    s.delete_workload("ns/w1")   # admitted → quota released → w3 admitted
    d = s.run()
    assert admitted(d) == ["ns/w3"]
    assert "ns/w2" not in s.state()["workloads"]


def test_duplicate_event_id_is_counted_and_ignored():
    s = scenario()
    s.cq("a", quotas={"cpu": "4"})
    s.lq("ns/q", "a")
    first = s.submit("ns/w1", "q", cpu="3")
    s.run()
    hash_before = s.full_state()["hash"]
    dup = copy.deepcopy(first)
    dup["object"]["spec"]["podSets"][0]["requests"]["cpu"] = "1"   # same id, different content
    s.raw(dup)
    assert s.run() == []
    st = s.full_state()
    assert st["events"]["duplicates"] == 1
    assert st["hash"] == hash_before
    assert st["clusters"]["default"]["workloads"]["ns/w1"]["podSetAssignments"][0]["resourceUsage"] == {"cpu": "3"}


def test_rejected_event_changes_nothing():
    s = scenario()
    s.cq("a", quotas={"cpu": "4"})
    s.lq("ns/q", "a")
    s.run()
    before = s.full_state()
    # lendingLimit > nominalQuota on a ClusterQueue is invalid (Kueue webhook) → rejected.
    s.cq("a", cohort="co", quotas={"cpu": ("4", None, "5")})
    # A Batch with one invalid inner event is rejected as a whole (the valid submit is not applied).
    with s.batch():
        s.submit("ns/w1", "q", cpu="1")
        s.submit("ns/bad", "q", cpu="-1")
    assert s.run() == []
    after = s.full_state()
    assert [e.path for e in s.rejections] == [
        "object.spec.resourceGroups[0].flavors[0].resources[0].lendingLimit",
        "events[1].object.spec.podSets[0].requests[cpu]",
    ]
    assert after["events"]["rejected"] == 2
    assert after["hash"] == before["hash"]
    assert after["clusters"] == before["clusters"]


def test_release_wakes_every_parked_workload_it_can_help():
    """Found by the property test.  Kueue requeues every inadmissible workload of the cohort tree when a
    workload finishes (reference/kueue.md §3.1, ``QueueInadmissibleWorkloads`` on finish/delete/eviction),
    so after w0 releases 3 cpu, w1 is retried (and still cannot fit: gpu quota is 0, ExceedsMaxQuota) and
    w2 (2 cpu <= 3 free) is admitted.  w1 must not use up the wake-up that w2 needs."""
    s = scenario()
    s.cq("a", quotas={"cpu": "3", GPU: 0})
    s.lq("ns/q", "a")
    s.submit("ns/w0", "q", cpu="3")
    # w1: podSet main can never fit (gpu 1 > 0); podSet aux is short of 2 cpu now.
    s.submit("ns/w1", "q", pod_sets=[{"name": "main", "count": 1, "requests": {GPU: "1"}},
                                      {"name": "aux", "count": 1, "requests": {"cpu": "2"}}])
    s.submit("ns/w2", "q", cpu="2")
    assert admitted(s.run()) == ["ns/w0"]
    assert s.pending("ns/w1")[0] == "ExceedsMaxQuota"
    assert s.pending("ns/w2") == ("WaitingForQuota", message_waiting("cpu", "default", "2"))
    s.finish("ns/w0")
    assert admitted(s.run()) == ["ns/w2"]
    assert s.pending("ns/w1")[0] == "ExceedsMaxQuota"


@pytest.mark.parametrize("leave", ["finish", "delete"])
def test_workload_that_leaves_while_pending_does_not_take_the_next_wake_up(leave):
    """Found by the property test.  w1 leaves the queue while pending (WorkloadFinished / Deleted); when w0
    then releases its 1 cpu, the only waiter left, w2, must be admitted (Kueue requeues the inadmissible
    workloads of the tree on finish, reference/kueue.md §3.1; a workload no longer in the queue is not
    among them)."""
    s = scenario()
    s.cq("a", quotas={"cpu": "1"})
    s.lq("ns/q", "a")
    s.submit("ns/w0", "q", cpu="1")
    s.submit("ns/w1", "q", cpu="1")
    s.submit("ns/w2", "q", cpu="1")
    assert admitted(s.run()) == ["ns/w0"]
    if leave == "finish":
        s.finish("ns/w1")
    else:
        s.delete_workload("ns/w1")
    assert s.run() == []
    s.finish("ns/w0")
    assert admitted(s.run()) == ["ns/w2"]


def test_workload_admitted_on_one_flavor_does_not_take_the_wake_up_of_another():
    """Found by the property test.  co ─┬─ a (f0: 2; f1: 0 with borrowingLimit 2)
                                         └─ lender (f1: 4)
    w0 takes f0 (2 of 2), w1 borrows 2 of f1 (a's cap 0 + 2).  w2 waits on both flavors, then gets f1 when
    w1 finishes.  w3 waits on both.  When w0 finishes, f0 has 2 free (subtree(co, f0) 2 - usage 0) and w3
    (the only pending workload) must be admitted there — w2, already admitted, cannot use that capacity."""
    s = Scenario()
    s.flavor("f0")
    s.flavor("f1")
    s.cohort("co")
    s.cq("a", cohort="co", groups=[{"f0": {"cpu": "2"}, "f1": {"cpu": ("0", "2", None)}}])
    s.cq("lender", cohort="co", groups=[{"f1": {"cpu": "4"}}])
    s.lq("ns/q", "a")
    s.submit("ns/w0", "q", cpu="2")
    s.submit("ns/w1", "q", cpu="2")
    s.submit("ns/w2", "q", cpu="2")
    d = s.run()
    assert [(x["workload"], x["podSetAssignments"][0]["flavors"]["cpu"]) for x in d] == [
        ("ns/w0", "f0"), ("ns/w1", "f1")]
    s.finish("ns/w1")
    d = s.run()
    assert [(x["workload"], x["podSetAssignments"][0]["flavors"]["cpu"]) for x in d] == [("ns/w2", "f1")]
    s.submit("ns/w3", "q", cpu="2")
    assert s.run() == []
    s.finish("ns/w0")
    d = s.run()
    assert [(x["workload"], x["podSetAssignments"][0]["flavors"]["cpu"]) for x in d] == [("ns/w3", "f0")]
