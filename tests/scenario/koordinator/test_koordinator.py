"""The ``koordinator`` model through the whole engine: the design doc's worked examples (seed 002,
reference/koordinator.md §2 "Worked example" sections) and the upstream rules (§3-§10), each
expected number worked by hand from the rules."""

from __future__ import annotations

from statemodel import snapshot
from statemodel.driver import Driver
from statemodel.events.decode import parse_event
from tests.scenario.builder import Scenario, admitted
from tests.scenario.koordinator.kbuilder import KoordScenario

GPU = "nvidia.com/gpu"


def _flat_example(s: KoordScenario) -> None:
    """runtimequota1-4: A(min 10, max 40, req 5), B(15, 60, 20), C(20, 50, 40), D(15, 80, 70), as one
    Batch (admission runs once, with every request known)."""
    with s.batch():
        for name, mn, mx in (("a", 10, 40), ("b", 15, 60), ("c", 20, 50), ("d", 15, 80)):
            s.quota(name, min={GPU: mn}, max={GPU: mx})
        for name, req in (("a", 5), ("b", 20), ("c", 40), ("d", 70)):
            s.pod(f"ns/{name}", quota=name, gpu=req)


def test_runtimequota_worked_example_is_5_20_35_40() -> None:
    # min part 5/15/20/15 leaves 45; 45 by 60:50:80 -> 14/12/19 (Hamilton: +1 to D then C);
    # B needs 5 and returns 9; 9 by 50:80 -> 3/6 (base 3/5, leftover to D)
    s = KoordScenario(capacity={GPU: 100})
    _flat_example(s)
    s.run()
    assert [s.runtime(q, GPU) for q in "abcd"] == [5, 20, 35, 40]
    # pods asking for their whole request: A and B fit (request <= runtime), C and D do not
    assert s.running() == ["ns/a", "ns/b"]
    assert s.pod_state("ns/c")["message"] == (
        "Insufficient quotas, quotaName: c, runtime: map[nvidia.com/gpu:35], used: map[], "
        "pod's request: map[nvidia.com/gpu:40], exceedDimensions: [nvidia.com/gpu]")
    assert s.pod_state("ns/c")["shortfalls"] == [
        {"reason": "WaitingForQuota", "resource": GPU, "quota": "c", "needed": 40, "available": 35}]


def test_runtimequota_figures_step_by_step() -> None:
    # runtimequota2-4, one step each: the min part gives A its request 5 (it lends 5) and B, C, D their
    # mins, leaving 100 - 55 = 45; round 1 shares 45 by 60:50:80 = 14.21 / 11.84 / 18.95: bases
    # 14/11/18, the 2 left to the largest remainders (D 180, C 160 of 190) -> 14/12/19; B needs only
    # 5 and returns 9; round 2 shares 9 by 50:80 = 3.46 / 5.54: bases 3/5, the 1 left to D -> 3/6
    from statemodel.quota.koordinator_runtime import Share, hamilton, redistribute

    assert hamilton(45, [60, 50, 80], ["b", "c", "d"]) == [14, 12, 19]
    assert hamilton(9, [50, 80], ["c", "d"]) == [3, 6]
    shares = [Share("a", 5, 10, 0, 40, True), Share("b", 20, 15, 0, 60, True), Share("c", 40, 20, 0, 50, True),
              Share("d", 70, 15, 0, 80, True)]
    assert redistribute(100, shares) == [5, 20, 35, 40]
    # runtimequota1 draws C asking 30: round 1 caps B at 20 (returns 9) and C at 30 (returns 2); D
    # alone takes the 11 returned: 15 + 19 + 11 = 45
    shares[2] = Share("c", 30, 20, 0, 50, True)
    assert redistribute(100, shares) == [5, 20, 30, 45]


def test_quotatree_hierarchical_example() -> None:
    # quotatree2-4: ParentA.request = 10 + 10 = 20, ParentB.request = 40 + 70 = 110;
    # root 100: A = 20, B = 80; inside B: 20 + 40, pool 20 by 40:70 -> 7.27/12.73 -> 27/53
    s = KoordScenario(capacity={GPU: 100})
    s.quota("pa", min={GPU: 20}, max={GPU: 100}, is_parent=True)
    s.quota("pb", min={GPU: 80}, max={GPU: 100}, is_parent=True)
    s.quota("a1", min={GPU: 10}, max={GPU: 10}, parent="pa")
    s.quota("a2", min={GPU: 10}, max={GPU: 10}, parent="pa")
    s.quota("b1", min={GPU: 20}, max={GPU: 40}, parent="pb")
    s.quota("b2", min={GPU: 40}, max={GPU: 70}, parent="pb")
    for q in ("a1", "a2", "b1", "b2"):
        s.pod(f"ns/{q}", quota=q, gpu=100)
    s.run()
    assert s.eq("pa")["request"] == {GPU: 20}
    assert s.eq("pb")["request"] == {GPU: 110}
    assert s.eq("a1")["request"] == {GPU: 100}  # the raw request keeps growing above max
    assert [s.runtime(q, GPU) for q in ("pa", "pb", "a1", "a2", "b1", "b2")] == [20, 80, 10, 10, 27, 53]


def test_non_lending_group_keeps_its_min_and_requests_it_upwards() -> None:
    # A does not lend: request = max(0, 30) = 30, runtime 30; B gets the other 70
    s = KoordScenario(capacity={GPU: 100})
    s.quota("a", min={GPU: 30}, max={GPU: 100}, lend=False)
    s.quota("b", min={GPU: 10}, max={GPU: 100})
    s.pod("ns/b", quota="b", gpu=100)
    s.run()
    assert s.eq("a")["request"] == {GPU: 30}
    assert (s.runtime("a", GPU), s.runtime("b", GPU)) == (30, 70)


def test_min_scaling_when_the_cluster_shrinks_and_recovery() -> None:
    # 2 nodes of 50: total 100 >= 40 + 60; one node leaves: total 50 < 100 -> mins 20/30
    s = KoordScenario()
    s.node("n1", {GPU: 50})
    s.node("n2", {GPU: 50})
    s.quota("a", min={GPU: 40}, max={GPU: 100})
    s.quota("b", min={GPU: 60}, max={GPU: 100})
    s.pod("ns/a", quota="a", gpu=100)
    s.pod("ns/b", quota="b", gpu=100)
    s.run()
    assert (s.runtime("a", GPU), s.runtime("b", GPU)) == (40, 60)
    s.node("n2", {GPU: 50}, unschedulable=True)
    s.run()
    assert s.eq("a")["autoScaleMin"] == {GPU: 20} and s.eq("b")["autoScaleMin"] == {GPU: 30}
    assert (s.runtime("a", GPU), s.runtime("b", GPU)) == (20, 30)
    s.node("n2", {GPU: 50})
    s.run()
    assert s.eq("a")["autoScaleMin"] == {GPU: 40}
    assert (s.runtime("a", GPU), s.runtime("b", GPU)) == (40, 60)


def test_min_scaling_off_keeps_min_above_the_total() -> None:
    s = KoordScenario(capacity={GPU: 50}, enableMinQuotaScale=False)
    s.quota("a", min={GPU: 40}, max={GPU: 100})
    s.quota("b", min={GPU: 60}, max={GPU: 100})
    s.pod("ns/a", quota="a", gpu=100)
    s.pod("ns/b", quota="b", gpu=100)
    s.run()
    assert (s.runtime("a", GPU), s.runtime("b", GPU)) == (40, 60)


def test_system_and_default_used_leave_the_root_total() -> None:
    # a pod matching nothing goes to the default group (runtime = its max); its 30 leave the root
    s = KoordScenario(capacity={GPU: 100, "cpu": "100"})
    s.quota("a", min={GPU: 10}, max={GPU: 100})
    s.pod("other/p", cpu="30")
    s.pod("ns/a", quota="a", gpu=100)
    s.run()
    assert s.pod_state("other/p")["quota"] == "koordinator-default-quota"
    assert s.pod_state("other/p")["status"] == "Admitted"
    assert s.eq("koordinator-root-quota")["runtime"]["cpu"] == 70_000
    assert s.runtime("a", GPU) == 100


def test_namespace_association_order() -> None:
    s = KoordScenario(capacity={"cpu": "100"})
    s.quota("team", max={"cpu": "10"})
    s.quota("multi", max={"cpu": "10"}, namespaces=["ns2"])
    s.pod("team/p", cpu="1")                     # a quota named like the namespace
    s.pod("ns2/p", cpu="1")                      # the namespaces annotation
    s.pod("ns2/q", quota="missing", cpu="1")     # a label naming no quota: the default group
    s.pod("team/r", quota="multi", cpu="1")      # the label wins
    s.run()
    assert [s.pod_state(k)["quota"] for k in ("team/p", "ns2/p", "ns2/q", "team/r")] == [
        "team", "multi", "koordinator-default-quota", "multi"]


def test_inner_quota_preemption_takes_the_fewest_lower_priority_pods() -> None:
    # runtime 10: low-1 (4), low-2 (4) and mid (2) run; a high pod of 5 needs 4 back:
    # candidates low-1, low-2 (mid has priority 5 < 10 too); reprieve most important first:
    # mid (2) stays, low-2 (newer, equal priority -> less important? reprieve order priority, start time)
    s = KoordScenario(capacity={GPU: 10})
    s.quota("a", min={GPU: 10}, max={GPU: 10})
    s.pod("ns/low-1", quota="a", priority=1, gpu=4)
    s.pod("ns/low-2", quota="a", priority=1, gpu=4)
    s.pod("ns/mid", quota="a", priority=5, gpu=2)
    s.run()
    assert s.running() == ["ns/low-1", "ns/low-2", "ns/mid"]
    s.pod("ns/high", quota="a", priority=10, gpu=5)
    decisions = s.run()
    # used 10 - (4 + 4 + 2) = 0; reprieve mid: 2 + 5 <= 10 yes; low-1 (started first): 6 + 5 > 10 no;
    # low-2: 6 + 5 > 10 no -> both low pods are victims
    assert [(d["type"], d["workload"]) for d in decisions] == [
        ("Preempted", "ns/low-1"), ("Preempted", "ns/low-2"), ("Admitted", "ns/high")]
    assert decisions[0]["preemptor"] == "ns/high"
    assert decisions[0]["reason"] == "PreemptionByScheduler"
    assert s.pod_state("ns/low-1")["status"] == "Pending"


def test_no_preemption_of_other_quotas_or_non_preemptible_pods() -> None:
    s = KoordScenario(capacity={GPU: 10})
    s.quota("a", min={GPU: 5}, max={GPU: 10})
    s.quota("b", min={GPU: 5}, max={GPU: 10})
    s.pod("ns/b-low", quota="b", priority=0, gpu=5)
    s.pod("ns/a-np", quota="a", priority=0, preemptible=False, gpu=5)
    s.run()
    s.pod("ns/a-high", quota="a", priority=100, gpu=5)
    decisions = s.run()
    assert decisions == []
    assert s.pod_state("ns/a-high")["status"] == "Pending"


def test_non_preemptible_pods_stay_within_min() -> None:
    s = KoordScenario(capacity={GPU: 100})
    s.quota("a", min={GPU: 5}, max={GPU: 100})
    s.pod("ns/np-1", quota="a", preemptible=False, gpu=4)
    s.pod("ns/np-2", quota="a", preemptible=False, gpu=4)
    s.pod("ns/p", quota="a", gpu=4)
    decisions = s.run()
    assert admitted(decisions) == ["ns/np-1", "ns/p"]
    assert s.pod_state("ns/np-2")["message"] == (
        "Insufficient non-preemptible quotas, quotaName: a, min: map[nvidia.com/gpu:5], "
        "nonPreemptibleUsed: map[nvidia.com/gpu:4], pod's request: map[nvidia.com/gpu:4], "
        "exceedDimensions: [nvidia.com/gpu]")


def test_guarantee_example_recycles_overuse_after_the_delay() -> None:
    # quotaguarantee1/2: A and B (min 50, max 100); A runs 100, then B asks 100: runtimes 50/50,
    # A's used 100 > 50; after more than 120 s of overuse A loses its least important pods
    s = KoordScenario(capacity={GPU: 100}, monitorAllQuotas=True)
    s.quota("a", min={GPU: 50}, max={GPU: 100})
    s.quota("b", min={GPU: 50}, max={GPU: 100})
    for i in range(4):
        s.pod(f"ns/a{i}", quota="a", priority=i, gpu=25, at=10 + i)
    s.run()
    assert s.runtime("a", GPU) == 100 and len(s.running()) == 4
    s.pod("ns/b0", quota="b", gpu=100, at=20)
    assert s.run() == []
    assert (s.runtime("a", GPU), s.runtime("b", GPU)) == (50, 50)
    s.tick(at=140)  # 120 s of overuse: not more than the delay yet
    assert s.run() == []
    decisions = s.tick(at=141) and s.run()
    assert [(d["type"], d["workload"], d["reason"]) for d in decisions] == [
        ("Evicted", "ns/a0", "QuotaOverUsedRevoke"), ("Evicted", "ns/a1", "QuotaOverUsedRevoke")]
    assert s.eq("a")["used"] == {GPU: 50}
    assert s.pod_state("ns/a0")["status"] == "Pending"


def test_recycling_runs_at_the_monitor_period_on_event_time() -> None:
    # the guarantee example with revokePodInterval 10 s: B's pod arrives at 25 s, so the monitor
    # instant at 20 s was the last to see A within its runtime; A is recycled at the first instant more
    # than 120 s after it: 150 s (at 140 s the overuse has lasted exactly 120 s), not at 25 + 121 s
    s = KoordScenario(capacity={GPU: 100}, monitorAllQuotas=True, revokePodInterval="10s")
    s.quota("a", min={GPU: 50}, max={GPU: 100})
    s.quota("b", min={GPU: 50}, max={GPU: 100})
    for i in range(4):
        s.pod(f"ns/a{i}", quota="a", priority=i, gpu=25, at=10 + i)
    s.pod("ns/b0", quota="b", gpu=100, at=25)
    s.run()
    s.tick(at=146)
    assert s.run() == []
    s.tick(at=149)
    assert s.run() == []
    decisions = s.tick(at=150) and s.run()
    assert [(d["type"], d["workload"], d["reason"]) for d in decisions] == [
        ("Evicted", "ns/a0", "QuotaOverUsedRevoke"), ("Evicted", "ns/a1", "QuotaOverUsedRevoke")]


GATE = {"ElasticQuotaGuaranteeUsage": True}


def test_guarantee_usage_keeps_allocated_usage_and_stops_lending() -> None:
    # quotaguarantee1/2 with ElasticQuotaGuaranteeUsage (reference §6).  A (min 50, max 100) is alone on
    # 100 GPUs and runs 100: A's guaranteed = max(allocated 100, min 50) = 100.  Then B (min 50, max
    # 100) comes and asks 100; lending is off, so B's floor is its guaranteed max(0, 50) = 50.  A asks
    # 100 <= its floor 100 -> runtime 100; B asks more than its floor -> runtime 50 and nothing left to
    # share (the floors, 150, exceed the cluster's 100, as upstream).  A is within its runtime, so
    # nothing is recycled (without the gate A's runtime would drop to 50 and A be recycled); B waits.
    s = KoordScenario(capacity={GPU: 100}, monitorAllQuotas=True, featureGates=GATE)
    s.quota("a", min={GPU: 50}, max={GPU: 100})
    for i in range(4):
        s.pod(f"ns/a{i}", quota="a", priority=i, gpu=25, at=10 + i)
    s.quota("b", min={GPU: 50}, max={GPU: 100}, at=20)
    s.pod("ns/b0", quota="b", gpu=100, at=21)
    s.run()
    assert (s.eq("a")["guaranteed"], s.eq("b")["guaranteed"]) == ({GPU: 100}, {GPU: 50})
    assert (s.eq("a")["allowLentResource"], s.eq("b")["request"]) == (False, {GPU: 100})
    assert (s.runtime("a", GPU), s.runtime("b", GPU)) == (100, 50)
    s.tick(at=500)
    assert s.run() == [] and len(s.running()) == 4
    assert s.pod_state("ns/b0")["message"] == (
        "Insufficient quotas, quotaName: b, runtime: map[nvidia.com/gpu:50], used: map[], "
        "pod's request: map[nvidia.com/gpu:100], exceedDimensions: [nvidia.com/gpu]")
    # A's pods end: A's guaranteed falls back to its min 50 and A keeps it (not lending): B still gets 50
    for i in range(4):
        s.finish(f"ns/a{i}", at=600)
    assert s.run() == []
    assert (s.eq("a")["guaranteed"], s.runtime("a", GPU), s.runtime("b", GPU)) == ({GPU: 50}, 50, 50)


def test_guarantee_usage_an_idle_quota_keeps_its_min() -> None:
    # C (min 30) idle, D (min 10) asks 80 on a 100-GPU cluster.  Without the gate C lends: D gets 80.
    # With it C keeps 30, D gets its floor 10 plus the 60 left: 70, and its 80-GPU pod waits.
    for gate, d_runtime, running in ((False, 80, ["ns/d"]), (True, 70, [])):
        s = KoordScenario(capacity={GPU: 100}, featureGates={"ElasticQuotaGuaranteeUsage": gate})
        s.quota("c", min={GPU: 30}, max={GPU: 100})
        s.quota("d", min={GPU: 10}, max={GPU: 100})
        s.pod("ns/d", quota="d", gpu=80)
        s.run()
        assert (s.runtime("c", GPU), s.runtime("d", GPU), s.running()) == (30 if gate else 0, d_runtime, running)


def test_guarantee_gate_switched_on_later_derives_every_quota_again() -> None:
    # the same as above, the gate arriving with a later EngineConfig: C stops lending at once
    s = KoordScenario(capacity={GPU: 100})
    s.quota("c", min={GPU: 30}, max={GPU: 100})
    s.quota("d", min={GPU: 10}, max={GPU: 100})
    s.pod("ns/d", quota="d", gpu=80, at=5)
    s.run()
    assert (s.runtime("c", GPU), s.runtime("d", GPU)) == (0, 80)
    s.config(featureGates=GATE, at=10)
    s.run()
    # D's 80 running GPUs are its guaranteed now (max(allocated 80, min 10)): D keeps runtime 80 and C
    # holds its min 30 (the floors exceed the cluster, as upstream)
    assert (s.runtime("c", GPU), s.runtime("d", GPU), s.eq("d")["guaranteed"]) == (30, 80, {GPU: 80})


def test_recycling_is_off_by_default() -> None:
    s = KoordScenario(capacity={GPU: 100})
    s.quota("a", min={GPU: 50}, max={GPU: 100})
    s.quota("b", min={GPU: 50}, max={GPU: 100})
    s.pod("ns/a0", quota="a", gpu=100)
    s.run()
    s.pod("ns/b0", quota="b", gpu=100, at=20)
    s.tick(at=1000)
    assert s.run() == []


def test_observed_binding_and_lifecycle() -> None:
    s = KoordScenario(capacity={GPU: 10})
    s.quota("a", min={GPU: 5}, max={GPU: 5})
    s.pod("ns/bound", quota="a", node="n1", gpu=8)      # observed: charged as given, over runtime
    s.pod("ns/waits", quota="a", gpu=2)
    s.run()
    assert s.pod_state("ns/bound")["status"] == "Admitted"
    assert s.pod_state("ns/bound")["observed"] is False
    assert s.eq("a")["used"] == {GPU: 8}
    s.finish("ns/bound")
    decisions = s.run()
    assert admitted(decisions) == ["ns/waits"]
    s.pod("ns/waits", quota="a", gpu=2, phase="Succeeded")
    s.run()
    assert s.eq("a")["used"] == {} or s.eq("a")["used"] == {GPU: 0}


def test_webhook_rules_reject_events() -> None:
    s = KoordScenario(capacity={GPU: 10})
    s.quota("p", min={GPU: 10}, max={GPU: 10}, is_parent=True)
    s.quota("c1", min={GPU: 6}, max={GPU: 10}, parent="p")
    s.quota("c2", min={GPU: 6}, max={GPU: 10}, parent="p")     # 6 + 6 > 10
    s.quota("c3", min={GPU: 1}, max={GPU: 10}, parent="nope")  # no such parent
    s.quota("c4", min={GPU: 1}, max={GPU: 10}, parent="c1")    # c1 is not a parent
    s.pod("ns/x", quota="p", gpu=1)                            # pods only in leaves
    s.run()
    problems = [(r.path, r.problem) for r in s.rejections]
    assert problems[0][0] == "object.spec.min"
    assert "more than its min" in problems[0][1]
    assert problems[1] == ("object.metadata.labels[quota.scheduling.koordinator.sh/parent]",
                           "parent quota nope does not exist")
    assert problems[2] == ("object.metadata.labels[quota.scheduling.koordinator.sh/parent]",
                           "parent quota c1 is not a parent (is-parent is not true)")
    assert problems[3][1] == "pod cannot be associated with parent quota p"
    assert sorted(s.state()["elasticQuotas"]) == [
        "c1", "koordinator-default-quota", "koordinator-root-quota", "koordinator-system-quota", "p"]


def test_min_greater_than_max_is_rejected_at_decoding() -> None:
    s = KoordScenario()
    s.quota("a", min={GPU: 6}, max={GPU: 5})
    s.run()
    assert [(r.path, r.problem) for r in s.rejections] == [
        ("object.spec.min[nvidia.com/gpu]", "min 6 is greater than max 5")]


def test_snapshot_plus_tail_equals_full_replay() -> None:
    s = KoordScenario(capacity={GPU: 100}, monitorAllQuotas=True)
    _flat_example(s)
    s.pod("ns/c-high", quota="c", priority=9, gpu=10)
    s.run()
    half = len(s.events)
    s.finish("ns/b")
    s.pod("ns/d2", quota="d", gpu=3, at=400)
    s.tick(at=600)
    s.run()
    full = s.engine.state()
    events = [parse_event(e) for e in s.events]
    first = Driver()
    for i, e in enumerate(events[:half]):
        first.step(i, e)
    restored = Driver(snapshot.load(snapshot.dump(first.engine)))
    for i, e in enumerate(events[half:]):
        restored.step(i, e)
    assert restored.engine.state() == full
    assert restored.engine.hash == s.engine.hash


def test_a_cluster_runs_one_quota_model() -> None:
    # docs/events.md: another model's quota object is rejected with a reason naming both models
    kueue = Scenario()
    kueue.cq("cq", quotas={"cpu": 10})
    elastic_quota = KoordScenario().quota("eq", max={"cpu": 1})["object"]
    kueue.emit("Applied", object=elastic_quota)
    kueue.run()
    assert [(r.path, r.problem) for r in kueue.rejections] == [
        ("object.kind", "ElasticQuota is a quota object of the koordinator quota model; cluster default runs the "
                        "kueue quota model")]
    koord = KoordScenario(capacity={"cpu": 10})
    koord.quota("eq", max={"cpu": 1})
    koord.cq("cq", quotas={"cpu": 10})
    koord.cohort("co")
    koord.run()
    assert [(r.path, r.problem) for r in koord.rejections] == [
        ("object.kind", f"{kind} is a quota object of the kueue quota model; cluster default runs the "
                        "koordinator quota model") for kind in ("ClusterQueue", "Cohort")]
    # a fresh cluster takes the model of its first quota object; a Batch mixing models is refused whole
    fresh = Scenario()
    with fresh.batch():
        fresh.cq("cq", quotas={"cpu": 10})
        fresh.emit("Applied", object=elastic_quota)
    fresh.run()
    assert [r.path for r in fresh.rejections] == ["object.kind"]
    assert "cq" not in fresh.state().get("clusterQueues", {})
