"""Table tests of the tree of Cohorts and ClusterQueues (Kueue ``pkg/cache/hierarchy``): implicit
cohorts, cycles, deletions — and which edges the quota model is told are linked (read back with
``QuotaModel.path``, using the real ``kueue`` model)."""

from __future__ import annotations

import pytest

from statemodel.hierarchy import Hierarchy
from statemodel.quota.kueue import KueueModel
from tests.unit.quota_helpers import cohort, cq


def build(steps: list) -> tuple[Hierarchy, KueueModel]:
    model = KueueModel()
    h = Hierarchy(model)
    for step in steps:
        if isinstance(step, tuple):
            getattr(h, step[0])(step[1])
        elif hasattr(step, "queueing_strategy"):
            h.apply_cluster_queue(step)
        else:
            h.apply_cohort(step)
    return h, model


def names(path: list[tuple[str, str]]) -> list[str]:
    return [name for _, name in path]


@pytest.mark.parametrize("steps, cohorts, path_of_a, cycle", [
    # a ClusterQueue naming a missing cohort creates an implicit root
    ([cq("a", "team")], {"team": False}, ["a", "team"], False),
    # moving the ClusterQueue away collects the implicit cohort
    ([cq("a", "team"), cq("a")], {}, ["a"], False),
    # an explicit cohort naming a missing parent: implicit parent, linked
    ([cohort("team", "org"), cq("a", "team")], {"team": True, "org": False}, ["a", "team", "org"], False),
    # a loop of parent edges: the edge that would close it stays unlinked; the chain is inactive
    ([cohort("x", "y"), cohort("y", "x"), cq("a", "x")], {"x": True, "y": True}, ["a", "x", "y"], True),
    # breaking the loop relinks nothing new and clears the cycle
    ([cohort("x", "y"), cohort("y", "x"), cq("a", "x"), cohort("y")], {"x": True, "y": True}, ["a", "x", "y"], False),
    # deleting an explicit cohort with children leaves an implicit root; its old parent is collected
    ([cohort("team", "org"), cq("a", "team"), ("delete_cohort", "team")], {"team": False}, ["a", "team"], False),
])
def test_tree(steps, cohorts, path_of_a, cycle):
    h, model = build(steps)
    assert {name: entry.explicit for name, entry in h.cohorts.items()} == cohorts
    assert names(model.path("a")) == path_of_a
    assert h.has_cycle(h.cluster_queues["a"].cohort_name) is cycle


def test_cycle_fixed_by_the_other_edge_links_it():
    h, model = build([cohort("x", "y"), cohort("y", "x"), cq("a", "y"), cohort("x")])
    # x's edge to y was linked first; dropping it lets y's pending edge to x link
    assert names(model.path("a")) == ["a", "y", "x"]
    assert not h.has_cycle("y")


def test_deleted_cluster_queue_stays_until_its_usage_drains():
    h, model = build([cq("a", "team", default={"cpu": 1000})])
    model.charge("a", {("default", "cpu"): 500})
    assert h.delete_cluster_queue("a")
    assert "a" in h.cluster_queues and "team" in h.cohorts
    model.release("a", {("default", "cpu"): 500})
    h.collect_cluster_queue("a")
    assert h.cluster_queues == {} and h.cohorts == {}
