"""Dominant Resource Share and ``weightedShare`` per ClusterQueue and Cohort (reference/kueue.md §3.4).

Situations of Kueue's ``pkg/cache/scheduler/fair_sharing_test.go``, as events: usage is set by
observed admissions (``WorkloadAdmitted``), the share read from the state JSON's ``fairSharing``.
``share = max_r borrowed(r) * 1000 / lendable(r) / weight``, ``lendable`` from the parent's
``potentialAvailable`` summed over flavors; ``weightedShare = ceil(share)``.
"""

from __future__ import annotations

import pytest

from tests.scenario.builder import GPU, Scenario

MAX_INT64 = 9223372036854775807


def scenario() -> Scenario:
    s = Scenario()
    s.flavor("default")
    s.engine_config(afs=False, fair_sharing=True)
    return s


def charge(s: Scenario, cq: str, key: str, **usage) -> None:
    """Admit ``key`` at ``cq`` as observed, holding ``usage`` (resource name -> quantity)."""
    s.submit(key, "q-" + cq, requests=dict(usage))
    s.observe_admission(key, cq, [{"name": "main", "count": 1, "flavors": {r: "default" for r in usage},
                                   "resourceUsage": dict(usage)}])


def fair(s: Scenario, kind: str, name: str) -> dict:
    section = "clusterQueues" if kind == "cq" else "cohorts"
    return s.state()[section][name]["fairSharing"]


def two_queues(cq_weight=None, cq_quotas=None, lender_quotas=None, lender_weight=None) -> Scenario:
    """``cq`` and ``lending-cq`` under ``test-cohort`` (Kueue's test shape)."""
    s = scenario()
    s.cq("cq", cohort="test-cohort", weight=cq_weight,
         quotas=cq_quotas if cq_quotas is not None else {"cpu": "2", GPU: "5"})
    s.cq("lending-cq", cohort="test-cohort", weight=lender_weight,
         quotas=lender_quotas if lender_quotas is not None else {"cpu": "8", GPU: "5"})
    s.lq("ns/q-cq", "cq")
    return s


def test_no_cohort_has_share_zero():
    s = scenario()
    s.cq("cq", quotas={"cpu": "2", GPU: "5"})
    s.lq("ns/q-cq", "cq")
    charge(s, "cq", "ns/w", cpu="3", **{GPU: "7"})
    assert fair(s, "cq", "cq") == {"weightedShare": 0, "share": "0", "dominantResource": None, "borrowing": False}


def test_usage_below_nominal():
    s = two_queues()
    charge(s, "cq", "ns/w", cpu="1", **{GPU: "2"})
    assert fair(s, "cq", "cq")["weightedShare"] == 0
    assert fair(s, "cq", "lending-cq")["weightedShare"] == 0
    assert fair(s, "cohort", "test-cohort")["weightedShare"] == 0   # a root never borrows


def test_usage_above_nominal_dominant_resource_is_the_larger_ratio():
    s = two_queues()
    charge(s, "cq", "ns/w", cpu="3", **{GPU: "7"})
    # cpu: (3-2)*1000 / 10 cores = 100; gpu: (7-5)*1000 / 10 = 200 -> gpu dominates
    assert fair(s, "cq", "cq") == {"weightedShare": 200, "share": "200", "dominantResource": GPU, "borrowing": True}


def test_one_resource_above_nominal():
    s = two_queues()
    charge(s, "cq", "ns/w", cpu="3", **{GPU: "3"})
    assert fair(s, "cq", "cq")["weightedShare"] == 100           # (3-2)*1000/10
    assert fair(s, "cq", "cq")["dominantResource"] == "cpu"


def test_slightly_above_nominal_rounds_up():
    s = two_queues(cq_quotas={GPU: "500"}, lender_quotas={GPU: "1000"}, lender_weight="300")
    charge(s, "cq", "ns/w", **{GPU: "501"})
    # 1 * 1000 / 1500 = 2/3 -> ceil 1
    assert fair(s, "cq", "cq") == {"weightedShare": 1, "share": "2/3", "dominantResource": GPU, "borrowing": True}


def test_way_above_nominal_with_weight():
    s = two_queues(cq_weight="300", cq_quotas={GPU: "500"}, lender_quotas={GPU: "1000"}, lender_weight="300")
    charge(s, "cq", "ns/w", **{GPU: "800"})
    # 300 * 1000 / 1500 = 200, / 300 = 2/3 -> 1
    assert fair(s, "cq", "cq")["weightedShare"] == 1
    assert fair(s, "cq", "cq")["share"] == "2/3"


def test_zero_lendable_resource_is_skipped():
    s = two_queues(cq_quotas={"cpu": "2", GPU: ("2", None, "0")}, lender_quotas={"cpu": "8", GPU: ("64", None, "0")})
    charge(s, "cq", "ns/w", cpu="5", **{GPU: "5"})
    # gpu: nothing lendable (lendingLimit 0 everywhere) -> skipped; cpu (5-2)*1000/10 = 300
    assert fair(s, "cq", "cq")["weightedShare"] == 300
    assert fair(s, "cq", "cq")["dominantResource"] == "cpu"
    assert fair(s, "cq", "cq")["borrowing"] is True


def test_multiple_flavors_sum_per_resource():
    s = Scenario()
    s.flavor("on-demand")
    s.flavor("spot")
    s.engine_config(afs=False, fair_sharing=True)
    s.cq("cq", cohort="test-cohort", groups=[{"on-demand": {"cpu": "20"}, "spot": {"cpu": "80"}}])
    s.cq("lending-cq", cohort="test-cohort", groups=[{"on-demand": {"cpu": "100"}}])
    s.lq("ns/q", "cq")
    s.submit("ns/w", "q", cpu="1")
    s.observe_admission("ns/w", "cq", [
        {"name": "a", "count": 1, "flavors": {"cpu": "on-demand"}, "resourceUsage": {"cpu": "25"}},
        {"name": "b", "count": 1, "flavors": {"cpu": "spot"}, "resourceUsage": {"cpu": "5"}}])
    # on-demand (25-20) borrowed, spot under nominal; lendable = 120 on-demand + 80 spot = 200 -> 25
    assert fair(s, "cq", "cq")["weightedShare"] == 25


@pytest.mark.parametrize(("weight", "expected", "exact"), [("2", 100, "100"), ("0.5", 400, "400")])
def test_weights_divide_the_share(weight, expected, exact):
    s = two_queues(cq_weight=weight, cq_quotas={GPU: "5"}, lender_quotas={GPU: "5"})
    charge(s, "cq", "ns/w", **{GPU: "7"})
    assert fair(s, "cq", "cq")["weightedShare"] == expected     # (7-5)*1000/10 = 200, / weight
    assert fair(s, "cq", "cq")["share"] == exact


def test_zero_weight_borrower_is_max_int64():
    s = two_queues(cq_weight="0", cq_quotas={GPU: "5"}, lender_quotas={GPU: "10"})
    charge(s, "cq", "ns/w", **{GPU: "7"})
    assert fair(s, "cq", "cq") == {"weightedShare": MAX_INT64, "share": None, "dominantResource": GPU,
                                   "borrowing": True}


def test_zero_weight_not_borrowing_is_zero():
    s = two_queues(cq_weight="0", cq_quotas={GPU: "5"}, lender_quotas={GPU: "10"})
    charge(s, "cq", "ns/w", **{GPU: "5"})
    assert fair(s, "cq", "cq")["weightedShare"] == 0


def test_cohort_has_a_share():
    """root (gpu 45) ── child-cohort (weight 2) ── cq (gpu 5); cq uses 10."""
    s = scenario()
    s.cohort("root", quotas={GPU: "45"})
    s.cohort("child-cohort", parent="root", weight="2")
    s.cq("cq", cohort="child-cohort", quotas={GPU: "5"})
    s.lq("ns/q-cq", "cq")
    charge(s, "cq", "ns/w", **{GPU: "10"})
    assert fair(s, "cq", "cq")["weightedShare"] == 100               # 5 * 1000 / 50
    assert fair(s, "cohort", "child-cohort")["weightedShare"] == 50  # 5 * 1000 / 50 / 2
    assert fair(s, "cohort", "root")["weightedShare"] == 0


def test_resources_only_at_the_root():
    s = scenario()
    s.cohort("root", quotas={GPU: "50"})
    s.cohort("child-cohort", parent="root", weight="2")
    s.cq("cq", cohort="child-cohort", quotas={GPU: "0"})
    s.lq("ns/q-cq", "cq")
    charge(s, "cq", "ns/w", **{GPU: "10"})
    assert fair(s, "cq", "cq")["weightedShare"] == 200               # 10 * 1000 / 50
    assert fair(s, "cohort", "child-cohort")["weightedShare"] == 100  # / 2


def test_borrowing_limit_of_the_parent_shrinks_the_lendable():
    """child-cohort (gpu 0, borrowingLimit 10) under root (gpu 50): from cq's view only 10 is lendable."""
    s = scenario()
    s.cohort("root", quotas={GPU: "50"})
    s.cohort("child-cohort", parent="root", quotas={GPU: ("0", "10")})
    s.cq("cq", cohort="child-cohort", quotas={GPU: "0"})
    s.lq("ns/q-cq", "cq")
    charge(s, "cq", "ns/w", **{GPU: "10"})
    assert fair(s, "cq", "cq")["weightedShare"] == 1000              # 10 * 1000 / 10
    assert fair(s, "cohort", "child-cohort")["weightedShare"] == 200  # 10 * 1000 / 50


def test_share_follows_release():
    s = two_queues()
    charge(s, "cq", "ns/w", cpu="3", **{GPU: "7"})
    assert fair(s, "cq", "cq")["weightedShare"] == 200
    s.finish("ns/w")
    assert fair(s, "cq", "cq")["weightedShare"] == 0


def test_fair_sharing_off_has_no_fair_sharing_view():
    s = Scenario()
    s.flavor("default")
    s.cq("cq", cohort="c", quotas={"cpu": "1"})
    assert "fairSharing" not in s.cq_state("cq")
    assert "fairSharing" not in s.cohort_state("c")
