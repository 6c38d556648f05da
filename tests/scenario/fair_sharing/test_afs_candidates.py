"""Preemption candidates ordered by LocalQueue usage in a usage-based ClusterQueue (KEP-4136, seed
001: "when picking the candidates for preemption, with AdmissionScope equal ClusterQueue, Kueue
orders workloads based on the LocalQueue resource usage when considering workloads within the same
ClusterQueue"; Kueue ``CandidatesOrdering`` key 3), with classical and with fair-sharing preemption.

a (cpu 2, usage based, withinClusterQueue LowerPriority) holds x1 from LocalQueue ns/x (consumed
8 cpu) and, admitted later, y1 from ns/y (consumed 0); both priority 0.  Without the usage key the
more recently admitted y1 would go first; with it x1, whose LocalQueue used more, is the victim of
the priority-5 incoming workload.
"""

from __future__ import annotations

import pytest

from tests.scenario.builder import USAGE_BASED, Scenario, admitted, preempted


def story(fair: bool, afs: bool) -> Scenario:
    s = Scenario()
    s.flavor("default")
    s.engine_config(halfLife="168h", interval="5m", afs=afs, fair_sharing=fair)
    s.cq("a", quotas={"cpu": "2"}, admission_mode=USAGE_BASED, preemption={"withinClusterQueue": "LowerPriority"})
    s.lq("ns/x", "a", afs_status=({"cpu": "8"}, 0))
    s.lq("ns/y", "a")
    s.lq("ns/z", "a")
    s.submit("ns/x1", "x", cpu="1", uid="x1")
    s.run()
    s.submit("ns/y1", "y", cpu="1", uid="y1")
    s.run()
    assert s.admitted_workloads() == ["ns/x1", "ns/y1"]
    s.submit("ns/incoming", "z", cpu="1", priority=5, uid="incoming")
    return s


@pytest.mark.parametrize("fair", [False, True])
def test_the_busier_local_queue_loses_first(fair):
    decisions = story(fair, afs=True).run()
    assert preempted(decisions) == [("ns/x1", "ns/incoming", "InClusterQueue")]
    assert "ns/incoming" in admitted(decisions)


@pytest.mark.parametrize("fair", [False, True])
def test_without_admission_fair_sharing_the_newest_goes(fair):
    decisions = story(fair, afs=False).run()
    assert preempted(decisions) == [("ns/y1", "ns/incoming", "InClusterQueue")]
