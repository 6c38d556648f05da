"""A very deep Cohort parent chain behaves exactly like a shallow one (KEP-79 arithmetic, heights,
cycles), and is built in linear time whatever the order its levels arrive in."""

from __future__ import annotations

import pytest

from statemodel.quota.kueue import available, potential_available
from tests.scenario.builder import Scenario, admitted

DEPTH = 20_000


@pytest.mark.parametrize("order", ["top-down", "bottom-up"])
def test_admission_through_a_20000_level_chain_and_a_cycle_across_it(order):
    """root c0 (2 cpu) <- c1 <- ... <- c19999 <- ClusterQueue leaf (0 cpu).

    w1 (1 cpu) borrows from c0: the lowest cohort whose subtree quota covers it is c0, whose height is the
    longest path to a leaf: 20,000 cohort edges down to c19999 plus one to the ClusterQueue, so 20,000.
    Then c0 names c19999 as its parent: a cycle through every level, so leaf is inactive (Kueue)."""
    s = Scenario()
    s.flavor("default")
    levels = range(DEPTH) if order == "top-down" else range(DEPTH - 1, -1, -1)
    for i in levels:
        if i == 0:
            s.cohort("c0", quotas={"cpu": "2"})
        else:
            s.cohort(f"c{i}", parent=f"c{i - 1}")
    s.cq("leaf", cohort=f"c{DEPTH - 1}", quotas={"cpu": "0"})
    s.lq("ns/q", "leaf")
    s.submit("ns/w1", "q", cpu="1")
    d = s.run()
    assert s.rejections == []
    assert admitted(d) == ["ns/w1"]
    assert [x["borrowing"] for x in d if x["workload"] == "ns/w1"] == [DEPTH]
    # (The state JSON is not rendered here: its cohort rows cost O(depth) each, see docs/benchmarks.md.)
    model = s.engine.clusters[s.cluster].model
    assert model.entitlements("Cohort", f"c{DEPTH // 2}", [("default", "cpu")])[0].usage == 1_000

    s.cohort("c0", parent=f"c{DEPTH - 1}", quotas={"cpu": "2"})
    s.submit("ns/w2", "q", cpu="1")
    assert admitted(s.run()) == []
    info = s.engine.clusters[s.cluster].workloads["ns/w2"]
    assert (info.reason, str(info.message)) == ("Suspended", "ClusterQueue leaf is inactive")

    # Breaking the cycle relinks the whole chain: w2 fits in what is left of c0's 2 cpu.
    s.cohort("c0", quotas={"cpu": "2"})
    assert admitted(s.run()) == ["ns/w2"]


def test_state_rows_computed_top_down_equal_the_per_node_walks():
    """The state JSON's available / potentialAvailable (remembered top-down for all nodes) equal Kueue's
    per-node definitions (``available``, ``potential_available``), with limits at several levels and usage."""
    s = Scenario()
    s.flavor("default")
    s.cohort("root", quotas={"cpu": ("2", None, None)})
    s.cohort("mid", parent="root", quotas={"cpu": ("3", "2", "1")})
    s.cohort("low", parent="mid", quotas={"cpu": ("1", "4", "0")})
    s.cq("a", cohort="low", quotas={"cpu": ("2", "1", "1")})
    s.cq("b", cohort="mid", quotas={"cpu": ("4", None, "2")})
    s.cq("c", cohort="root", quotas={"cpu": ("0", "3", None)})
    for q in ("a", "b", "c"):
        s.lq(f"ns/{q}", q)
    s.submit("ns/w1", "a", cpu="3")
    s.submit("ns/w2", "b", cpu="5")
    s.submit("ns/w3", "c", cpu="2")
    s.run()
    model = s.engine.clusters[s.cluster].model
    fr = ("default", "cpu")
    for kind, names in (("ClusterQueue", ("a", "b", "c")), ("Cohort", ("root", "mid", "low"))):
        for name in names:
            node = model.node(kind, name)
            row = model.entitlements(kind, name, [fr])[0]
            assert (row.available, row.potential_available) == (available(node, fr), potential_available(node, fr))
    # and again after a change (the remembered rows are dropped)
    s.finish("ns/w2")
    s.run()
    node = model.node("ClusterQueue", "a")
    row = model.entitlements("ClusterQueue", "a", [fr])[0]
    assert row.available == available(node, fr)
