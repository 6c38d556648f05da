"""Unit tables of the admission cycle's parts: the order of nominated heads and the wake-up index
(who a release wakes), against the real ``kueue`` model."""

from __future__ import annotations

import pytest

from statemodel.admission.cycle import Candidate, WakeIndex
from statemodel.admission.flavorassigner import Assignment
from statemodel.hierarchy import Hierarchy
from statemodel.queues.cluster_queue import ClusterQueueQueue
from statemodel.quota.kueue import KueueModel
from statemodel.quota.protocol import Shortfall
from statemodel.reasons import WAITING_FOR_QUOTA
from tests.unit.quota_helpers import cq, workload

CPU = ("default", "cpu")


def candidate(name: str, borrowing: int, priority: int, created: int) -> Candidate:
    assignment = Assignment()
    assignment.borrowing = borrowing
    h = Hierarchy(KueueModel())
    entry = h.apply_cluster_queue(cq(name))
    return Candidate(name, workload(f"w-{name}", priority=priority, created=created), assignment, entry,
                     ClusterQueueQueue(name))


@pytest.mark.parametrize("candidates, order", [
    ([("a", 1, 0, 0), ("b", 0, 0, 0)], ["b", "a"]),          # lower borrowing height first
    ([("a", 0, 1, 0), ("b", 0, 5, 0)], ["b", "a"]),          # then higher priority
    ([("a", 0, 0, 9), ("b", 0, 0, 3)], ["b", "a"]),          # then earlier creation
    ([("b", 0, 0, 0), ("a", 0, 0, 0)], ["a", "b"]),          # then the ClusterQueue name
    ([("a", 0, 9, 0), ("b", 1, 0, 0), ("c", 0, 9, 1)], ["a", "c", "b"]),
])
def test_cycle_order(candidates, order):
    got = sorted((candidate(*c) for c in candidates), key=Candidate.sort_key)
    assert [c.name for c in got] == order


def tree(*queues) -> KueueModel:
    model = KueueModel()
    h = Hierarchy(model)
    for q in queues:
        h.apply_cluster_queue(q)
    return model


def waiting(leaf: str, needed: int, available: int) -> list[list[Shortfall]]:
    return [[Shortfall(WAITING_FOR_QUOTA, "default", "cpu", leaf, needed, available)]]


def test_a_release_wakes_the_best_ordered_waiter_it_can_serve():
    model = tree(cq("a", "org", default={"cpu": 1000}), cq("b", "org", default={"cpu": 1000}))
    model.charge("b", {CPU: 2000})
    index = WakeIndex()
    low, high = workload("low", priority=0), workload("high", priority=5)
    index.register(model, "a", low, waiting("a", 1000, 0))
    index.register(model, "a", high, waiting("a", 1000, 0))
    model.release("b", {CPU: 1000})
    assert index.release(model, "b", {CPU: 1000}) == []   # at-pool-free waiters are served by affordable
    assert [w.key for w in index.affordable(model)] == ["ns/high"]
    assert index.affordable(model) == []                     # nothing released since
    index.set_aside(high)                                    # high did not fit after all: its share goes on
    assert [w.key for w in index.affordable(model)] == ["ns/low"]


def test_a_borrowing_limit_waits_for_the_deficit_to_be_released():
    # a: nominal 1, borrowingLimit 0.5, holds 1; b: nominal 2, holds 1; a wants 1.5: available(a) =
    # min(1 - 1 + 0.5, 3 - 2) = 0.5, so at least 1 has to be released in the tree first
    model = tree(cq("a", "org", default={"cpu": (1000, 500, None)}), cq("b", "org", default={"cpu": 2000}))
    model.charge("a", {CPU: 1000})
    model.charge("b", {CPU: 1000})
    index = WakeIndex()
    w = workload("w")
    assert model.wake_rule("a", CPU, 1500).at_pool_free is False
    index.register(model, "a", w, waiting("a", 1500, 500))
    model.release("b", {CPU: 500})
    assert index.release(model, "b", {CPU: 500}) == []      # 0.5 released: below the deficit
    model.release("a", {CPU: 1000})
    assert index.release(model, "a", {CPU: 1000}) == [w]    # a's cap is now 1 + 0.5: it fits


class CountingModel:
    """A kueue model whose quota reads are counted per ClusterQueue (what the walk within nominal
    quota reads per ClusterQueue); everything else goes to the model as is."""

    def __init__(self, model: KueueModel) -> None:
        self.model = model
        self.reads: dict[str, int] = {}

    def quota_numbers(self, kind, name, fr):
        self.reads[name] = self.reads.get(name, 0) + 1
        return self.model.quota_numbers(kind, name, fr)

    def __getattr__(self, attr):
        return getattr(self.model, attr)


def test_a_queue_whose_waiter_needs_more_than_the_pool_has_free_is_not_read_until_it_could_wake():
    # a: nominal 5, empty, so a 3-cpu waiter fits its room; b: nominal 5, holds 9 (borrows 4 of a's),
    # so the pool has 1 free: the waiter is held, and a is dormant until 3 are free
    model = CountingModel(tree(cq("a", "org", default={"cpu": 5000}), cq("b", "org", default={"cpu": 5000})))
    model.charge("b", {CPU: 9000})
    index = WakeIndex()
    w = workload("w")
    index.register(model, "a", w, waiting("a", 3000, 1000))
    key = (model.pool("a"), CPU)
    model.release("b", {CPU: 1000})                          # 2 free: a is read once, its waiter held
    index.release(model, "b", {CPU: 1000})
    assert index.affordable(model) == []
    assert index.dormant == {key: {"a": 3000}} and key not in index.own_room
    reads = model.reads["a"]
    model.release("b", {CPU: 500})                           # 2.5 free: below the threshold, a is not read
    index.release(model, "b", {CPU: 500})
    assert index.affordable(model) == []
    assert model.reads["a"] == reads
    model.release("b", {CPU: 500})                           # 3 free: a is read and its waiter woken
    index.release(model, "b", {CPU: 500})
    assert [x.key for x in index.affordable(model)] == ["ns/w"]
    assert model.reads["a"] > reads and key not in index.dormant


def test_a_release_at_a_dormant_queue_makes_it_read_again():
    # as above, then b's borrowing shrinks and a itself releases: a is read at the next walk
    model = KueueModel()
    h = Hierarchy(model)
    for q in (cq("a", "org", default={"cpu": 5000}), cq("b", "org", default={"cpu": 5000})):
        h.apply_cluster_queue(q)
    model.charge("b", {CPU: 9000})
    index = WakeIndex()
    index.register(model, "a", workload("w"), waiting("a", 3000, 1000))
    key = (model.pool("a"), CPU)
    model.release("b", {CPU: 1000})
    index.release(model, "b", {CPU: 1000})
    index.affordable(model)
    assert "a" in index.dormant[key]
    model.charge("a", {CPU: 1000})
    model.release("a", {CPU: 1000})
    index.release(model, "a", {CPU: 1000})
    assert "a" in index.own_room[key] and key not in index.dormant
