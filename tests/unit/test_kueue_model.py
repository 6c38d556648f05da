"""Table tests of the ``kueue`` quota model (KEP-79 arithmetic, reference/kueue.md §1.3-1.6).

The tree used by most rows: Cohort ``root`` (no quota) with ClusterQueues ``a`` (nominal 4 cpu,
lendingLimit 1: keeps 3 for itself, lends 1) and ``b`` (nominal 6 cpu, borrowingLimit 2).  The
root sees 1 + 6 = 7 cpu.  Expected numbers are worked out by hand from Kueue's formulas.
"""

from __future__ import annotations

import pytest

from statemodel.hierarchy import Hierarchy
from statemodel.quota.kueue import KueueModel
from statemodel.quota.protocol import CLUSTER_QUEUE, COHORT, Fit, FitIfPreempting, NoFit, Shortfall
from statemodel.reasons import EXCEEDS_MAX_QUOTA, WAITING_FOR_QUOTA
from tests.unit.quota_helpers import cohort, cq

CPU = ("default", "cpu")


def tree(usage_a: int = 0, usage_b: int = 0) -> KueueModel:
    model = KueueModel()
    h = Hierarchy(model)
    h.apply_cohort(cohort("root"))
    h.apply_cluster_queue(cq("a", "root", default={"cpu": (4000, None, 1000)}))
    h.apply_cluster_queue(cq("b", "root", default={"cpu": (6000, 2000, None)}))
    if usage_a:
        model.charge("a", {CPU: usage_a})
    if usage_b:
        model.charge("b", {CPU: usage_b})
    return model


@pytest.mark.parametrize("usage_a, usage_b, leaf, available", [
    (0, 0, "a", 10000),      # 3 local + everything the root has (7)
    (0, 0, "b", 7000),       # min(cap 6 + 2, root 7)
    (5000, 0, "a", 5000),    # a spills 2 into the root: 0 local + root 5
    (5000, 0, "b", 5000),    # root 7 - 2
    (0, 7000, "a", 3000),    # b took its 6 and a's lent 1: only a's local 3 is left
    (0, 7000, "b", 0),
    (9000, 0, "b", 1000),    # a spills 6 into the root: root 7 - 6, below b's cap 6 + 2
    (0, 9000, "b", -2000),   # observed over quota: min(cap 6 - 9 + 2, root 7 - 9), negative as in Kueue
])
def test_available(usage_a, usage_b, leaf, available):
    assert tree(usage_a, usage_b).available(leaf, CPU) == available


@pytest.mark.parametrize("leaf, amount, result", [
    ("a", 4000, Fit(0)),                                     # within nominal
    ("a", 5000, Fit(1)),                                     # borrows from the root (height 1)
    ("b", 7000, Fit(1)),
    ("b", 8000, NoFit((Shortfall(EXCEEDS_MAX_QUOTA, "default", "cpu", "b", 8000, 7000),))),
    ("a", 11000, NoFit((Shortfall(EXCEEDS_MAX_QUOTA, "default", "cpu", "a", 11000, 10000),))),
])
def test_fit_on_an_empty_tree(leaf, amount, result):
    assert tree().fit(leaf, [(CPU, amount)]) == result


def test_fit_waits_for_quota_with_the_free_amount():
    model = tree(usage_b=6000)
    # within the maximum capacity but above what is free: taking usage back could make it fit
    assert model.fit("a", [(CPU, 5000)]) == FitIfPreempting(
        0, (Shortfall(WAITING_FOR_QUOTA, "default", "cpu", "a", 5000, 4000),))
    assert not model.fits("a", {CPU: 5000}) and model.fits("a", {CPU: 4000})


def test_simulated_release_is_undone_exactly():
    model = tree(usage_a=5000, usage_b=2000)
    before = model.dump(), [model.entitlements(k, n) for k, n in ((COHORT, "root"), (CLUSTER_QUEUE, "b"))]
    undo = model.simulate_release("a", {CPU: 5000})
    assert model.available("b", CPU) == 5000  # min(cap 6 - 2 + 2, root 7 - 2) once a holds nothing
    undo()
    assert (model.dump(), [model.entitlements(k, n) for k, n in ((COHORT, "root"), (CLUSTER_QUEUE, "b"))]) == before


def test_children_version_moves_with_charges_and_is_none_while_a_simulation_is_not_undone():
    model = tree(usage_a=5000, usage_b=2000)
    start = model.children_version("root")
    undo_a = model.simulate_release("a", {CPU: 1000})
    undo_b = model.simulate_charge("b", {CPU: 1000})
    assert model.children_version("root") is None
    undo_a()  # not in the reverse order: the version waits for every simulation to be undone
    assert model.children_version("root") is None
    undo_b()
    assert model.children_version("root") == start  # the same usage: the same version
    model.charge("a", {CPU: 1000})
    charged = model.children_version("root")
    model.release("a", {CPU: 1000})
    assert len({start, charged, model.children_version("root")}) == 3  # never comes back


def test_entitlement_rows():
    model = tree(usage_a=5000)
    (root,) = model.entitlements(COHORT, "root")
    assert (root.subtree_quota, root.usage, root.local_quota) == (7000, 2000, 0)
    (a,) = model.entitlements(CLUSTER_QUEUE, "a")
    assert (a.nominal, a.lending_limit, a.borrowing_limit, a.subtree_quota, a.local_quota, a.usage,
            a.available, a.potential_available) == (4000, 1000, None, 4000, 3000, 5000, 5000, 10000)


def test_dump_load_round_trip():
    model = tree(usage_a=5000, usage_b=1000)
    copy = KueueModel()
    copy.load(model.dump())
    assert copy.dump() == model.dump()
    for kind, name in ((COHORT, "root"), (CLUSTER_QUEUE, "a"), (CLUSTER_QUEUE, "b")):
        assert copy.entitlements(kind, name) == model.entitlements(kind, name)


@pytest.mark.parametrize("leaf, needed, at_pool_free", [
    ("a", 7000, False),   # a lends: its local quota counts besides the root's free quota
    ("b", 5000, True),    # b holds 3: its borrowing limit allows 6 - 3 + 2 = 5 more
    ("b", 6000, False),   # beyond what the borrowing limit allows: free root quota is not enough
])
def test_wake_rule(leaf, needed, at_pool_free):
    rule = tree(usage_b=3000).wake_rule(leaf, CPU, needed)
    assert rule.pool == (False, "root") and rule.at_pool_free is at_pool_free


def deep_tree(usage_a: int, usage_b: int) -> KueueModel:
    """Cohort ``root`` (nominal 4 cpu) → Cohort ``m`` (nominal 2) → ClusterQueues ``a`` (nominal 4,
    lendingLimit 1: local 3) and ``b`` (nominal 6, no lending limit: local 0).  ``m`` sees
    2 + (4 - 3) + 6 = 9 cpu, ``root`` 4 + 9 = 13; ``m``'s usage is what spills past ``a``'s local 3
    plus all of ``b``'s."""
    model = KueueModel()
    h = Hierarchy(model)
    h.apply_cohort(cohort("root", default={"cpu": 4000}))
    h.apply_cohort(cohort("m", "root", default={"cpu": 2000}))
    h.apply_cluster_queue(cq("a", "m", default={"cpu": (4000, None, 1000)}))
    h.apply_cluster_queue(cq("b", "m", default={"cpu": 6000}))
    for leaf, usage in (("a", usage_a), ("b", usage_b)):
        if usage:
            model.charge(leaf, {CPU: usage})
    return model


@pytest.mark.parametrize("usage_a, usage_b, amount, level", [
    (0, 0, 4000, 0),     # within a's nominal 4 (its subtree quota, not its local 3)
    (0, 0, 5000, 1),     # 5 > 4; 5 - a's free local 3 = 2 more in m: 0 + 2 <= 9
    (2000, 0, 3000, 1),  # 2 + 3 > 4; 3 - a's free local 1 = 2 in m: 0 + 2 <= 9
    (0, 8000, 5000, 2),  # 2 left for m: 8 + 2 > 9; m has no local quota: 2 at root, 8 + 2 <= 13
    (0, 8000, 9000, 3),  # 6 left: 8 + 6 > 9 in m and > 13 at the root: no node takes it
])
def test_advantage_level(usage_a, usage_b, amount, level):
    model = deep_tree(usage_a, usage_b)
    requests = [(CPU, amount)]
    path, got = model.advantage_level("a", requests)
    assert path == [(CLUSTER_QUEUE, "a"), (COHORT, "m"), (COHORT, "root")]
    assert got == level
    assert requests == [(CPU, amount)]
