"""Fair sharing together with admission fair sharing (KEP-4136, seed 001, "Proposal"): "For each of
the Admission Scopes Kueue selects one workload to be attempted.  And then these pre-selected
workloads are sorted based on their Preemption-based fair share value."

R (cpu 3) ─┬─ s1 (admissionScope UsageBased) ─┬─ a1 (0)  LocalQueue consumed 4 cpu; a1-w = 1 pending
           │                                   └─ a2 (0)  LocalQueue consumed 0; holds 1; a2-w = 1 pending
           └─ s2 (admissionScope UsageBased) ── b1 (0)                               b1-w = 1.5 pending
2 cpu free.  Every head borrows, so each scope lets only its sticking-out head with the lowest
ClusterQueue usage through: s1 picks a2-w (usage 0 < 4) although a1 has the lower share with its head
(1 * 1000 / 3 = 333 against 2 * 1000 / 3 = 667).  The tournament then ranks the scopes' picks at R:
s2 with b1-w = 1.5 * 1000 / 3 = 500 below s1 with a2-w = 667, so b1-w is admitted and a2-w no
longer fits (0.5 free).  Without fair sharing the classical order takes the earlier a2-w first.
(The ClusterQueue usage behind a scope's pick is the LocalQueues' decayed consumed usage, KEP-4136.)
"""

from __future__ import annotations

from tests.scenario.builder import USAGE_BASED, Scenario, admitted


def story(fair: bool) -> Scenario:
    s = Scenario()
    s.flavor("default")
    s.engine_config(halfLife="168h", interval="5m", fair_sharing=fair)
    s.cohort("r", quotas={"cpu": "3"})
    s.cohort("s1", parent="r", admission_mode=USAGE_BASED)
    s.cohort("s2", parent="r", admission_mode=USAGE_BASED)
    for cq, cohort in (("a1", "s1"), ("a2", "s1"), ("b1", "s2")):
        s.cq(cq, cohort=cohort, quotas={"cpu": "0"})
    s.lq("ns/q-a1", "a1", afs_status=({"cpu": "4"}, 0))
    s.lq("ns/q-a2", "a2")
    s.lq("ns/q-b1", "b1")
    s.submit("ns/a2-held", "q-a2", cpu="1")
    s.observe_admission("ns/a2-held", "a2", cpu="1")
    s.run()
    with s.batch():
        s.submit("ns/a1-w", "q-a1", cpu="1", created=10)
        s.submit("ns/a2-w", "q-a2", cpu="1", created=11)
        s.submit("ns/b1-w", "q-b1", cpu="1500m", created=12)
    return s


def test_scopes_preselect_then_the_tournament_orders():
    s = story(fair=True)
    assert admitted(s.run()) == ["ns/b1-w"]
    assert s.pending("ns/a2-w")[0] == "WaitingForQuota"
    assert s.pending("ns/a1-w") == ("Pending", "waiting for its turn in the admission scope of cohort s1")


def test_without_fair_sharing_the_classical_order_decides():
    """a2-w first (earlier); b1-w no longer fits; in the next cycle s1's next head a1-w takes the last cpu."""
    s = story(fair=False)
    assert admitted(s.run()) == ["ns/a2-w", "ns/a1-w"]
    assert s.pending("ns/b1-w")[0] == "WaitingForQuota"
