"""A pending workload's message keeps at most MAX_MESSAGE_STATUSES reasons per podSet (docs/events.md
"Limits"): the memory and state JSON of a waiting workload stay bounded whatever the ClusterQueue."""

from __future__ import annotations

from statemodel import snapshot
from statemodel.limits import MAX_MESSAGE_STATUSES
from tests.scenario.builder import Scenario


def test_a_workload_short_in_64_flavors_keeps_64_reasons_and_counts_the_rest():
    """64 flavors of 1 cpu and 1 Gi each; w asks 2 cpu and 2 Gi: every flavor is short of both, 128
    reasons (ExceedsMaxQuota, no cohort).  The first 64 found are kept — flavors in spec order, cpu
    before memory within a flavor: flavors f00..f31 — and 64 are counted."""
    s = Scenario()
    flavors = [f"f{i:02d}" for i in range(64)]
    for f in flavors:
        s.flavor(f)
    s.cq("big", groups=[{f: {"cpu": "1", "memory": "1Gi"} for f in flavors}])
    s.lq("ns/q", "big")
    s.submit("ns/w", "q", cpu="2", memory="2Gi")
    s.run()
    w = s.workload("ns/w")
    assert w["reason"] == "ExceedsMaxQuota"
    assert w["message"].endswith(f"; {128 - MAX_MESSAGE_STATUSES} more reasons not shown")
    assert len(w["shortfalls"]) == MAX_MESSAGE_STATUSES
    assert sorted({row["flavor"] for row in w["shortfalls"]}) == flavors[:32]
    restored = snapshot.load(snapshot.dump(s.engine))
    assert restored.state() == s.engine.state()


def test_small_messages_are_unchanged():
    s = Scenario()
    s.flavor("default")
    s.cq("a", quotas={"cpu": "1"})
    s.lq("ns/q", "a")
    s.submit("ns/w", "q", cpu="2")
    s.run()
    assert "more reasons not shown" not in s.workload("ns/w")["message"]
