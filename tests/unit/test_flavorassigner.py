"""Table tests of flavor assignment (Kueue ``flavorassigner``, reference/kueue.md §2) against the
real ``kueue`` model, and of how it treats each fit outcome a model can give."""

from __future__ import annotations

import pytest

from statemodel.admission.flavorassigner import assign_flavors
from statemodel.hierarchy import Hierarchy
from statemodel.quota.kueue import KueueModel
from statemodel.quota.protocol import FitIfPreempting, FitResult, Shortfall
from statemodel.reasons import EXCEEDS_MAX_QUOTA, NO_MATCHING_FLAVOR, WAITING_FOR_QUOTA
from tests.scenario.hardlimit.model import HardLimitModel
from tests.unit.quota_helpers import cq, workload


def setup(*queues, model=None, usage: dict | None = None):
    model = model or KueueModel()
    h = Hierarchy(model)
    for q in queues:
        h.apply_cluster_queue(q)
    for leaf, charge in (usage or {}).items():
        model.charge(leaf, charge)
    return model, h


# two flavors in try order: on-demand 2 cpu, spot 4 cpu; "peer" lends 4 cpu of on-demand to the cohort
TWO = cq("a", "org", **{"on-demand": {"cpu": 2000}, "spot": {"cpu": 4000}})
TWO_TRY_NEXT = cq("a", "org", borrow="TryNextFlavor", **{"on-demand": {"cpu": 2000}, "spot": {"cpu": 4000}})
PEER = cq("peer", "org", **{"on-demand": {"cpu": 4000}})


@pytest.mark.parametrize("queue, pod_sets, fits, flavors, borrowing, reason", [
    (TWO, [("main", 1, {"cpu": 2000})], True, ["on-demand"], 0, None),
    # on-demand fits by borrowing from the peer: MayStopSearch keeps it
    (TWO, [("main", 3, {"cpu": 1000})], True, ["on-demand"], 1, None),
    # TryNextFlavor looks further and prefers spot, which needs no borrowing
    (TWO_TRY_NEXT, [("main", 3, {"cpu": 1000})], True, ["spot"], 0, None),
    # the second podSet asks for 2 + 4 of on-demand (what the first took counts): all of the cohort's
    (TWO, [("driver", 1, {"cpu": 2000}), ("workers", 1, {"cpu": 4000})], True, ["on-demand", "on-demand"], 1, None),
    # ... and 2 + 5 is above on-demand's maximum capacity (6) and spot's (4)
    (TWO, [("driver", 1, {"cpu": 2000}), ("workers", 1, {"cpu": 5000})], False, [], 0, EXCEEDS_MAX_QUOTA),
    (TWO, [("main", 1, {"cpu": 7000})], False, [], 0, EXCEEDS_MAX_QUOTA),
    (TWO, [("main", 1, {"memory": 1})], False, [], 0, NO_MATCHING_FLAVOR),
])
def test_assignment(queue, pod_sets, fits, flavors, borrowing, reason):
    model, h = setup(queue, PEER)
    result = assign_flavors(model, h.cluster_queues["a"], workload("w", *pod_sets), {})
    assert result.fits is fits
    assert [ps.flavors["cpu"] for ps in result.pod_sets] == flavors
    assert result.borrowing == borrowing
    assert result.reason == reason


def test_waiting_lists_every_flavor_it_could_wait_for():
    model, h = setup(TWO, PEER, usage={"a": {("on-demand", "cpu"): 2000, ("spot", "cpu"): 3000},
                                        "peer": {("on-demand", "cpu"): 4000}})
    result = assign_flavors(model, h.cluster_queues["a"], workload("w", ("main", 1, {"cpu": 2000})), {})
    assert result.reason == WAITING_FOR_QUOTA
    assert [[(sf.flavor, sf.needed, sf.available) for sf in option] for option in result.wake] == [
        [("on-demand", 2000, 0)], [("spot", 2000, 1000)]]
    assert str(result.message) == ("couldn't assign flavors to pod set main: "
                                   "insufficient unused quota for cpu in flavor on-demand, 2 more needed, "
                                   "insufficient unused quota for cpu in flavor spot, 1 more needed")


class _PreemptingHardLimit(HardLimitModel):
    """``hardlimit`` that answers ``FitIfPreempting`` where it would wait (as a model with preemption
    does when victims exist)."""

    def fit(self, leaf: str, request: list) -> FitResult:
        result = super().fit(leaf, request)
        shortfalls = getattr(result, "shortfalls", ())
        if shortfalls and all(sf.reason == WAITING_FOR_QUOTA for sf in shortfalls):
            return FitIfPreempting(0, shortfalls)
        return result


def test_fit_if_preempting_counts_as_waiting_until_preemption_lands():
    model, h = setup(cq("a", **{"default": {"cpu": 2000}}), model=_PreemptingHardLimit(),
                     usage={"a": {("default", "cpu"): 2000}})
    result = assign_flavors(model, h.cluster_queues["a"], workload("w", ("main", 1, {"cpu": 1000})), {})
    assert not result.fits and result.reason == WAITING_FOR_QUOTA
    assert result.wake == [[Shortfall(WAITING_FOR_QUOTA, "default", "cpu", "a", 1000, 0)]]
