"""Hierarchical preemption over KEP-79 cohort trees (seed 000; reference/kueue.md §1.6, §4.2-4.3):
transcriptions, as events, of the situations of Kueue's
``pkg/scheduler/preemption/preemption_hierarchical_test.go``.  Each situation's running workloads are
observed admissions applied in one batch (all admitted at the same instant, as upstream's ``now``;
ties then go by uid = the workload name), then the incoming workload is submitted and the engine
chooses the victims.  Expected victims and reasons are upstream's; trees are drawn as upstream does,
``name(nominal cpu)``."""

from __future__ import annotations

from tests.scenario.builder import Scenario, admitted, assignment, preempted

STD = {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}
WHILE_BORROWING = {**STD, "borrowWithinCohort": {"policy": "LowerPriority"}}


def tree(cohorts: list[tuple[str, str | None, dict | None]],
         queues: list[tuple[str, str, dict, dict | None]]) -> Scenario:
    """Cohorts ``(name, parent, quotas)`` and ClusterQueues ``(name, cohort, quotas, preemption)``, each
    ClusterQueue fed by LocalQueue ``ns/<name>``."""
    s = Scenario()
    s.flavor("default")
    for name, parent, quotas in cohorts:
        s.cohort(name, parent=parent, quotas=quotas)
    for name, cohort, quotas, policy in queues:
        s.cq(name, cohort=cohort, quotas=quotas, preemption=policy)
        s.lq(f"ns/{name}", name)
    return s


def running(s: Scenario, rows: list[tuple[str, str, int, dict]]) -> None:
    """Admitted workloads ``(name, ClusterQueue, priority, usage)``, observed in one batch."""
    with s.batch():
        for name, cq, priority, usage in rows:
            adm = {"clusterQueue": cq,
                   "podSetAssignments": [assignment("main", 1, {r: "default" for r in usage}, usage)]}
            s.submit(f"ns/{name}", cq, requests=usage, priority=priority, uid=name, admission=adm)
    s.run()


def incoming(s: Scenario, cq: str, priority: int, usage: dict) -> list[dict]:
    s.submit("ns/incoming", cq, requests=usage, priority=priority, uid="incoming")
    return s.run()


def test_preempt_with_hierarchical_advantage():
    #        R
    #      /   \
    #   C(2)  q-borrowing(0)
    #    |
    #   q(0)
    s = tree([("r", None, None), ("c", "r", {"cpu": "2"})],
             [("q", "c", {"cpu": "0"}, STD), ("q-borrowing", "r", {"cpu": "0"}, STD)])
    running(s, [("admitted2", "q-borrowing", 0, {"cpu": "2"})])
    decisions = incoming(s, "q", 0, {"cpu": "2"})
    assert preempted(decisions) == [("ns/admitted2", "ns/incoming", "InCohortReclamation")]
    message = [d for d in decisions if d["type"] == "Preempted"][0]["message"]
    assert message.startswith("Preempted to accommodate a workload (UID: incoming) due to reclamation within the "
                              "cohort; preemptor path: /r/c/q; preemptee path: /r/q-borrowing; ")
    assert admitted(decisions) == ["ns/incoming"]


def test_avoid_queues_within_nominal_quota():
    #             R
    #      /      |         \
    #   C(2) q-borrowing(0)  q-nominal(2)
    #    |
    #   q(0)
    s = tree([("r", None, None), ("c", "r", {"cpu": "2"})],
             [("q-nominal", "r", {"cpu": "2"}, STD), ("q", "c", {"cpu": "0"}, STD),
              ("q-borrowing", "r", {"cpu": "0"}, STD)])
    running(s, [("admitted1", "q-nominal", -10, {"cpu": "2"}), ("admitted2", "q-borrowing", 0, {"cpu": "2"})])
    decisions = incoming(s, "q", 0, {"cpu": "2"})
    assert preempted(decisions) == [("ns/admitted2", "ns/incoming", "InCohortReclamation")]


def test_preempt_multiple_with_hierarchical_advantage():
    s = tree([("r", None, None), ("c", "r", {"cpu": "2"})],
             [("q", "c", {"cpu": "0"}, STD), ("q-borrowing", "r", {"cpu": "0"}, STD)])
    running(s, [("admitted1", "q-borrowing", 1, {"cpu": "1"}), ("admitted2", "q-borrowing", 2, {"cpu": "1"})])
    decisions = incoming(s, "q", 0, {"cpu": "2"})
    # hierarchical advantage: priority does not protect them (reclaimWithinCohort Any)
    assert sorted(preempted(decisions)) == [("ns/admitted1", "ns/incoming", "InCohortReclamation"),
                                            ("ns/admitted2", "ns/incoming", "InCohortReclamation")]


def test_preempt_in_cohort_and_own_cluster_queue():
    #      R(0)
    #       |
    #     C(3)
    #    /    \
    #  q(0)  q_same_cohort(0)
    s = tree([("r", None, None), ("c", "r", {"cpu": "3"})],
             [("q", "c", {"cpu": "0"}, {**STD, "borrowWithinCohort": {"policy": "LowerPriority",
                                                                       "maxPriorityThreshold": 0}}),
              ("q-same-cohort", "c", {"cpu": "0"}, STD)])
    running(s, [("admitted-not-preemptible", "q-same-cohort", 1, {"cpu": "1"}),
                ("admitted-preemptible", "q-same-cohort", 0, {"cpu": "2"}),
                ("admitted-own-queue", "q", -1, {"cpu": "1"})])
    decisions = incoming(s, "q", 1, {"cpu": "2"})
    assert sorted(preempted(decisions)) == [("ns/admitted-own-queue", "ns/incoming", "InClusterQueue"),
                                            ("ns/admitted-preemptible", "ns/incoming",
                                             "InCohortReclaimWhileBorrowing")]


def test_prefer_to_preempt_hierarchical_candidate():
    s = tree([("r", None, None), ("c", "r", {"cpu": "2"})],
             [("q", "c", {"cpu": "0"}, STD), ("q-borrowing", "r", {"cpu": "0"}, STD)])
    running(s, [("admitted-borrowing", "q-borrowing", 1, {"cpu": "1"}),
                ("admitted-same-queue", "q", -2, {"cpu": "1"})])
    decisions = incoming(s, "q", 0, {"cpu": "1"})
    assert preempted(decisions) == [("ns/admitted-borrowing", "ns/incoming", "InCohortReclamation")]


def test_forced_to_preempt_priority_candidate():
    #           R(0)
    #      /      |
    #   C(2)   q-nominal(2)
    #  /   \
    # q(0) q_same_cohort(0)
    s = tree([("r", None, None), ("c", "r", {"cpu": "2"})],
             [("q", "c", {"cpu": "0"}, WHILE_BORROWING), ("q-nominal", "r", {"cpu": "2"}, STD),
              ("q-same-cohort", "c", {"cpu": "0"}, STD)])
    running(s, [("admitted-nominal", "q-nominal", -10, {"cpu": "2"}),
                ("admitted-same-cohort", "q-same-cohort", -1, {"cpu": "2"})])
    decisions = incoming(s, "q", 0, {"cpu": "2"})
    assert preempted(decisions) == [("ns/admitted-same-cohort", "ns/incoming", "InCohortReclaimWhileBorrowing")]


def test_incoming_workload_fits_in_cluster_queue_nominal_quota():
    #           R(0)
    #      /      |
    #   C(2)   q-borrowing(0)
    #  /    \
    # q(4)  q_same_cohort(0)
    s = tree([("r", None, None), ("c", "r", {"cpu": "2"})],
             [("q", "c", {"cpu": "4"}, STD), ("q-borrowing", "r", {"cpu": "0"}, STD),
              ("q-same-cohort", "c", {"cpu": "0"}, STD)])
    running(s, [("admitted-borrowing", "q-borrowing", 10, {"cpu": "3"}),
                ("admitted-same-cohort", "q-same-cohort", 10, {"cpu": "3"})])
    decisions = incoming(s, "q", 0, {"cpu": "4"})
    assert sorted(preempted(decisions)) == [("ns/admitted-borrowing", "ns/incoming", "InCohortReclamation"),
                                            ("ns/admitted-same-cohort", "ns/incoming", "InCohortReclamation")]


def _r1_c4() -> Scenario:
    #           R(1)
    #      /      |
    #   C(4)   q-borrowing(0)
    #  /    \
    # q(0)  q_same_cohort(0)
    return tree([("r", None, {"cpu": "1"}), ("c", "r", {"cpu": "4"})],
                [("q", "c", {"cpu": "0"}, {"withinClusterQueue": "LowerPriority",
                                           "reclaimWithinCohort": "LowerPriority",
                                           "borrowWithinCohort": {"policy": "LowerPriority"}}),
                 ("q-borrowing", "r", {"cpu": "0"}, STD), ("q-same-cohort", "c", {"cpu": "0"}, STD)])


def test_preempt_hierarchical_and_priority_candidates():
    s = _r1_c4()
    running(s, [("admitted-borrowing", "q-borrowing", -1, {"cpu": "2"}),
                ("admitted-same-cohort-preemptible", "q-same-cohort", -1, {"cpu": "1"}),
                ("admitted-borrowing-not-preemptible", "q-borrowing", 1, {"cpu": "2"})])
    decisions = incoming(s, "q", 0, {"cpu": "3"})
    assert preempted(decisions)[:2] == [  # the hierarchy list first
        ("ns/admitted-borrowing", "ns/incoming", "InCohortReclamation"),
        ("ns/admitted-same-cohort-preemptible", "ns/incoming", "InCohortReclaimWhileBorrowing")]
    # beyond upstream's single search: back in q_same_cohort (reclaimWithinCohort Any), the victim
    # reclaims C's quota from q-borrowing's remaining borrower in the next cycle (1 cpu fits in C:
    # hierarchical advantage), and is admitted
    assert preempted(decisions)[2:] == [("ns/admitted-borrowing-not-preemptible",
                                         "ns/admitted-same-cohort-preemptible", "InCohortReclamation")]
    assert s.admitted_workloads() == ["ns/admitted-same-cohort-preemptible", "ns/incoming"]


def test_preempt_hierarchical_candidates_and_inside_cluster_queue():
    s = _r1_c4()
    running(s, [("admitted-borrowing", "q-borrowing", -1, {"cpu": "2"}),
                ("admitted-same-queue-preemptible", "q", -1, {"cpu": "1"}),
                ("admitted-borrowing-not-preemptible", "q-borrowing", 1, {"cpu": "2"})])
    decisions = incoming(s, "q", 0, {"cpu": "3"})
    assert sorted(preempted(decisions)) == [
        ("ns/admitted-borrowing", "ns/incoming", "InCohortReclamation"),
        ("ns/admitted-same-queue-preemptible", "ns/incoming", "InClusterQueue")]


def test_reclaim_nominal_quota_from_lowest_priority_excluding_non_borrowing():
    #            R(0)
    #      /      |          \
    #   C(3) q-borrowing(0)  q-nominal(2)
    #    |
    #   q(0)
    s = tree([("r", None, None), ("c", "r", {"cpu": "3"})],
             [("q", "c", {"cpu": "0"}, STD), ("q-borrowing", "r", {"cpu": "0"}, STD),
              ("q-nominal", "r", {"cpu": "2"}, STD)])
    running(s, [("admitted-borrowing-prio-8", "q-borrowing", 8, {"cpu": "1"}),
                ("admitted-borrowing-prio-9", "q-borrowing", 9, {"cpu": "1"}),
                ("admitted-borrowing-prio-10", "q-borrowing", 9, {"cpu": "1"}),
                ("admitted-nominal", "q-nominal", -2, {"cpu": "2"})])
    decisions = incoming(s, "q", 0, {"cpu": "1"})
    assert preempted(decisions) == [("ns/admitted-borrowing-prio-8", "ns/incoming", "InCohortReclamation")]


def test_infeasible_when_every_candidate_is_in_a_pruned_subtree():
    #                  R
    #            /            \
    #      C(2)                   C_other(2)
    #     /    \                     |
    #    q(0)  q_same_cohort(0)   q_other(0)
    s = tree([("r", None, None), ("c", "r", {"cpu": "2"}), ("c-other", "r", {"cpu": "2"})],
             [("q-other", "c-other", {"cpu": "0"}, STD), ("q", "c", {"cpu": "0"}, STD),
              ("q-same-cohort", "c", {"cpu": "0"}, STD)])
    running(s, [("admitted-other-1", "q-other", -10, {"cpu": "1"}),
                ("admitted-other-2", "q-other", -10, {"cpu": "1"}),
                ("admitted-same-cohort", "q-same-cohort", 0, {"cpu": "2"})])
    decisions = incoming(s, "q", 0, {"cpu": "2"})
    # c_other is within its quota: its workloads are never candidates; q_same_cohort's equal priority
    # workload has no hierarchical advantage to lose and borrowWithinCohort is off.
    assert preempted(decisions) == []
    assert s.pending("ns/incoming")[0] == "WaitingForQuota"


def test_hierarchical_preemption_with_multiple_resources():
    #          R(3 cpu, 0 memory)
    #      /      |
    #   C(4 cpu, 4Gi) q-borrowing(0)
    #  /    \
    # q(0)   q_same_cohort(0)
    zero = {"cpu": "0", "memory": "0"}
    s = tree([("r", None, {"cpu": "3", "memory": "0"}), ("c", "r", {"cpu": "4", "memory": "4Gi"})],
             [("q", "c", zero, STD), ("q-borrowing", "r", zero, STD), ("q-same-cohort", "c", zero, STD)])
    running(s, [("admitted-borrowing", "q-borrowing", 0, {"cpu": "3", "memory": "1Gi"}),
                ("admitted-same-cohort", "q-same-cohort", -2, {"cpu": "1", "memory": "3Gi"})])
    decisions = incoming(s, "q", -2, {"cpu": "2", "memory": "1Gi"})
    assert preempted(decisions) == [("ns/admitted-borrowing", "ns/incoming", "InCohortReclamation")]


def test_respect_lending_limits():
    #           R(0)
    #      /      |
    #   C(2)   q-borrowing(0)
    #    |
    #   q(3, lending limit 2)
    s = tree([("r", None, None), ("c", "r", {"cpu": "2"})],
             [("q", "c", {"cpu": ("3", None, "2")}, STD), ("q-borrowing", "r", {"cpu": "0"}, STD)])
    running(s, [("admitted-borrowing", "q-borrowing", 0, {"cpu": "4"})])
    decisions = incoming(s, "q", -2, {"cpu": "5"})
    assert preempted(decisions) == [("ns/admitted-borrowing", "ns/incoming", "InCohortReclamation")]
    assert admitted(decisions) == ["ns/incoming"]


def test_reclaim_in_a_complex_hierarchy():
    #                                r
    #                             /      \
    #                          c11        c12
    #                       /   |   \       \
    #                    c21   c22    c23    q1
    #                  /  |     |     |
    #                c31  c32   q3    q2
    #              /      |
    #            q5       q4
    # quotas: 4 cpu for every cohort but r; 0 for the ClusterQueues
    four = {"cpu": "4"}
    zero = {"cpu": "0"}
    s = tree([("r", None, None), ("c11", "r", four), ("c12", "r", four), ("c21", "c11", four),
              ("c22", "c11", four), ("c23", "c11", four), ("c31", "c21", four), ("c32", "c21", four)],
             [("q1", "c12", zero, STD), ("q2", "c23", zero, STD), ("q3", "c22", zero, STD),
              ("q4", "c32", zero, STD), ("q5", "c31", zero, STD)])
    running(s, [("admitted-borrowing-1", "q1", -6, four), ("admitted-borrowing-2", "q1", -5, four),
                ("admitted-borrowing-3", "q2", -9, four), ("admitted-borrowing-4", "q2", -10, four),
                ("admitted-borrowing-5", "q3", -4, four), ("admitted-borrowing-6", "q3", -3, {"cpu": "3"}),
                ("admitted-borrowing-7", "q4", 4, {"cpu": "2"}), ("admitted-borrowing-8", "q4", 2, {"cpu": "3"})])
    decisions = incoming(s, "q5", -2, {"cpu": "7"})
    # only one of q2's workloads goes: after the first, c23 is back within its quota
    assert sorted(preempted(decisions)) == [("ns/admitted-borrowing-1", "ns/incoming", "InCohortReclamation"),
                                            ("ns/admitted-borrowing-4", "ns/incoming", "InCohortReclamation")]
