"""The situations of upstream's elastic-quota unit tests (koordinator-sh/koordinator
``pkg/scheduler/plugins/elasticquota/``: ``core/runtime_quota_calculator_test.go``,
``core/group_quota_manager_test.go``, ``quota_overuse_revoke_test.go``, ``plugin_test.go`` PreFilter
cases), rebuilt as events through the whole engine.  Upstream sets internal numbers directly (a
runtime, a request); here the same numbers come from Nodes, ElasticQuotas and Pods, and every
expected value is worked by hand from the rules (reference/koordinator.md §2-§9)."""

from __future__ import annotations

from tests.scenario.builder import admitted
from tests.scenario.koordinator.kbuilder import KoordScenario

GPU = "nvidia.com/gpu"
GI = 2**30
DEFAULT = "koordinator-default-quota"


# -- runtime_quota_calculator_test.go ------------------------------------------------------------

def test_iteration_adjust_quota_with_a_zero_shared_weight() -> None:
    # case2: weights 40/60/50/0, requests 5/20/40/70, mins 10/15/20/15, total 100.
    # mins (A lends down to its request 5): 5 + 15 + 20 + 15 = 55; 45 shared by 60:50:0 among the
    # borrowers: B 24.5 capped at its request 20 (5 over min), C takes the rest up to 40; D (weight 0)
    # keeps its min 15
    # (an all-zero shared-weight annotation is replaced by max, as upstream's mutating webhook does, so
    # D's zero GPU weight comes with a second resource)
    s = KoordScenario(capacity={GPU: 100, "cpu": 1})
    with s.batch():
        for name, mn, weight in (("a", 10, 40), ("b", 15, 60), ("c", 20, 50), ("d", 15, 0)):
            s.quota(name, min={GPU: mn}, max={GPU: 100, "cpu": 1}, weight={GPU: weight, "cpu": 1})
        for name, req in (("a", 5), ("b", 20), ("c", 40), ("d", 70)):
            s.pod(f"ns/{name}", quota=name, gpu=req)
    s.run()
    assert [s.runtime(q, GPU) for q in "abcd"] == [5, 20, 40, 15]


def test_iteration_adjust_quota_integer_distribution_loses_nothing() -> None:
    # 81 GPUs = Σ min; the donor (min 3, no request) lends its 3 to ten equal-weight borrowers
    # (mins 8 x 8 and 7 x 2, requests 100): 3 x 1/10 each -> floor 0, the 3 leftover units to the
    # largest remainders, all equal -> the first three by name
    s = KoordScenario(capacity={GPU: 81})
    mins = [8, 8, 8, 8, 8, 8, 8, 8, 7, 7]
    with s.batch():
        s.quota("donor", min={GPU: 3}, max={GPU: 100}, weight={GPU: 1})
        for i, mn in enumerate(mins):
            s.quota(f"borrower-{i:02d}", min={GPU: mn}, max={GPU: 100}, weight={GPU: 1})
            s.pod(f"ns/p{i:02d}", quota=f"borrower-{i:02d}", gpu=100)
    s.run()
    runtimes = [s.runtime(f"borrower-{i:02d}", GPU) for i in range(10)]
    assert s.runtime("donor", GPU) == 0
    assert runtimes == [9, 9, 9, 8, 8, 8, 8, 8, 7, 7]
    assert sum(runtimes) == 81
    assert all(rt >= mn for rt, mn in zip(runtimes, mins))


# -- group_quota_manager_test.go -------------------------------------------------------------------

def _three_levels(s: KoordScenario) -> None:
    s.quota("test1", min={"cpu": 80, "memory": f"{80}Gi"}, max={"cpu": 96, "memory": "160Gi"}, is_parent=True)
    s.quota("test1-a", min={"cpu": 50, "memory": "80Gi"}, max={"cpu": 60, "memory": "80Gi"}, parent="test1",
            is_parent=True)
    s.quota("a-123", min={"cpu": 20, "memory": "40Gi"}, max={"cpu": 30, "memory": "60Gi"}, parent="test1-a")


def test_multi_update_quota_request_below_min_between_and_above_max() -> None:
    # MultiUpdateQuotaRequest2: a-123 max 30/60Gi; its request goes 10/30Gi (< min), 25/45Gi
    # (between), 55/75Gi (> max); the parents' request follows min(request, max) of a-123
    s = KoordScenario(capacity={"cpu": 96, "memory": "160Gi"})
    _three_levels(s)
    s.pod("ns/p1", quota="a-123", cpu=10, memory="30Gi")
    s.run()
    cpu_mem = ("cpu", "memory")
    for q in ("a-123", "test1-a", "test1"):
        assert [s.eq(q)["runtime"][r] for r in cpu_mem] == [10_000, 30 * GI]
    s.pod("ns/p2", quota="a-123", cpu=15, memory="15Gi")
    s.run()
    assert [s.eq("a-123")["runtime"][r] for r in cpu_mem] == [25_000, 45 * GI]
    assert s.eq("test1-a")["request"] == s.eq("test1")["request"] == {"cpu": 25_000, "memory": 45 * GI}
    s.pod("ns/p3", quota="a-123", cpu=30, memory="30Gi")
    s.run()
    assert [s.eq("a-123")["runtime"][r] for r in cpu_mem] == [30_000, 60 * GI]
    assert s.eq("a-123")["request"] == {"cpu": 55_000, "memory": 75 * GI}
    assert s.eq("test1-a")["request"] == s.eq("test1")["request"] == {"cpu": 30_000, "memory": 60 * GI}
    assert s.pod_state("ns/p3")["status"] == "Pending"


def test_multi_update_quota_request_follows_a_max_change() -> None:
    # MultiUpdateQuotaRequest: a-123 asks 96/130Gi; its max drops to 64/128Gi (the parent's request
    # and a-123's runtime follow), then rises to 100/200Gi (back to 96/130Gi); a-123's own request stays
    s = KoordScenario(capacity={"cpu": 96, "memory": "160Gi"})
    big = {"cpu": 96, "memory": "160Gi"}
    low = {"cpu": 50, "memory": "80Gi"}
    s.quota("test1", min=low, max=big, is_parent=True)
    s.quota("test1-a", min=low, max=big, parent="test1", is_parent=True)
    s.quota("a-123", min=low, max=big, parent="test1-a")
    s.pod("ns/p", quota="a-123", cpu=96, memory="130Gi")
    s.run()
    request = {"cpu": 96_000, "memory": 130 * GI}
    for q in ("a-123", "test1-a", "test1"):
        assert s.eq(q)["runtime"] == request
    s.quota("a-123", min=low, max={"cpu": 64, "memory": "128Gi"}, parent="test1-a")
    s.run()
    assert s.eq("a-123")["runtime"] == s.eq("test1-a")["request"] == {"cpu": 64_000, "memory": 128 * GI}
    assert s.eq("test1-a")["max"] == {"cpu": 96_000, "memory": 160 * GI}
    assert s.eq("a-123")["request"] == request
    # a min above the parent's needs allow-force-update (the manager test bypasses the webhook)
    s.quota("a-123", min={"cpu": 90, "memory": "160Gi"}, max={"cpu": 100, "memory": "200Gi"}, parent="test1-a",
            force=True)
    s.run()
    assert s.eq("a-123")["runtime"] == s.eq("test1-a")["request"] == request


def test_not_allow_lent_resource_parent_and_children() -> None:
    # NotAllowLentResource_2: test-root (min 60, no lending) with two non-lending children (min 20):
    # idle, the root asks its min 60 and each child its min 20; child1 asking 40 then 60 raises
    # the root's request to max(40 + 20, 60) = 60, then 80
    s = KoordScenario(capacity={"cpu": 100})
    s.quota("test-root", min={"cpu": 60}, max={"cpu": 96}, is_parent=True, lend=False)
    s.quota("test-child1", min={"cpu": 20}, max={"cpu": 96}, parent="test-root", lend=False)
    s.quota("test-child2", min={"cpu": 20}, max={"cpu": 96}, parent="test-root", lend=False)
    s.run()
    assert [s.runtime(q) for q in ("test-root", "test-child1", "test-child2")] == [60_000, 20_000, 20_000]
    s.pod("ns/p1", quota="test-child1", cpu=40)
    s.run()
    assert [s.runtime(q) for q in ("test-root", "test-child1", "test-child2")] == [60_000, 40_000, 20_000]
    s.pod("ns/p2", quota="test-child1", cpu=20)
    s.run()
    assert [s.runtime(q) for q in ("test-root", "test-child1", "test-child2")] == [80_000, 60_000, 20_000]
    assert s.running() == ["ns/p1", "ns/p2"]


def test_not_allow_lent_resource_flat() -> None:
    # NotAllowLentResource: test1 (min 60, lends) asks 120, test2 (min 40) does not lend: test2 keeps
    # its 40, test1 gets the other 60
    s = KoordScenario(capacity={"cpu": 100})
    s.quota("test1", min={"cpu": 60}, max={"cpu": 96})
    s.quota("test2", min={"cpu": 40}, max={"cpu": 96}, lend=False)
    s.pod("ns/p", quota="test1", cpu=120)
    s.run()
    assert (s.runtime("test1"), s.runtime("test2")) == (60_000, 40_000)


def test_scaled_min_quota_and_recovery() -> None:
    # WithScaledMinQuota1: p (min 300/300Gi) over a, b, c (min 100/100Gi, asking 200/200Gi each) on a
    # cluster of 200/200Gi: p's autoScaleMin = 200; each child's = floor(200 x 100 / 300) = 66666m /
    # floor(200Gi / 3); runtimes share 200 by equal weights: 66666.67 each, the 2 leftover units to
    # a and b (equal remainders, by name).  At 600/600Gi the mins come back and each child runs 200.
    s = KoordScenario()
    s.node("n1", {"cpu": 200, "memory": "200Gi"})
    s.quota("p", min={"cpu": 300, "memory": "300Gi"}, max={"cpu": 1000, "memory": "1000Gi"}, is_parent=True)
    for q in "abc":
        s.quota(q, min={"cpu": 100, "memory": "100Gi"}, max={"cpu": 1000, "memory": "1000Gi"}, parent="p")
        s.pod(f"ns/{q}", quota=q, cpu=200, memory="200Gi")
    s.run()
    third = 200 * GI // 3
    assert s.eq("p")["runtime"] == {"cpu": 200_000, "memory": 200 * GI}
    assert s.eq("p")["autoScaleMin"] == {"cpu": 200_000, "memory": 200 * GI}
    for q in "abc":
        assert s.eq(q)["autoScaleMin"] == {"cpu": 66_666, "memory": third}
    assert s.eq("a")["runtime"] == s.eq("b")["runtime"] == {"cpu": 66_667, "memory": third + 1}
    assert s.eq("c")["runtime"] == {"cpu": 66_666, "memory": third}
    s.node("n1", {"cpu": 600, "memory": "600Gi"})
    s.run()
    assert s.eq("p")["runtime"] == {"cpu": 600_000, "memory": 600 * GI}
    assert s.eq("p")["autoScaleMin"] == {"cpu": 300_000, "memory": 300 * GI}
    for q in "abc":
        assert s.eq(q)["runtime"] == {"cpu": 200_000, "memory": 200 * GI}
        assert s.eq(q)["autoScaleMin"] == {"cpu": 100_000, "memory": 100 * GI}
    assert s.running() == ["ns/a", "ns/b", "ns/c"]


def test_scaled_min_quota_off_gives_min_beyond_the_total() -> None:
    # WithScaledMinQuota3: with enableMinQuotaScale false, p runs its min 300 on a cluster of 200 and
    # each child its min 100
    s = KoordScenario(enableMinQuotaScale=False)
    s.node("n1", {"cpu": 200})
    s.quota("p", min={"cpu": 300}, max={"cpu": 1000}, is_parent=True)
    for q in "abc":
        s.quota(q, min={"cpu": 100}, max={"cpu": 1000}, parent="p")
        s.pod(f"ns/{q}", quota=q, cpu=200)
    s.run()
    assert [s.runtime(q) for q in ("p", "a", "b", "c")] == [300_000, 100_000, 100_000, 100_000]
    assert s.eq("a")["autoScaleMin"] == {"cpu": 100_000}


# -- quota_overuse_revoke_test.go ------------------------------------------------------------------

def test_revoke_pod_list_keeps_what_fits_back() -> None:
    # GetToRevokePodList: runtime cpu 50 / memory 0; bound pods 1 (p10, 20 cpu), 2 (p9, 10 cpu, 1 byte),
    # 3 (p8, 20), 4 (p7, 40): used 90 cpu / 1 byte.  Least important first: remove 4 (used masked
    # to its keys: 50/1, memory still over), 3 (30/1), 2 (20/0: fits).  Back most important first:
    # 2 (30/1: no), 3 (40/0: yes), 4 (80: no) -> pods 4 and 2 are evicted, 1 and 3 stay.
    s = KoordScenario(capacity={"cpu": 50, "memory": 0}, monitorAllQuotas=True, delayEvictTime="10s")
    s.quota("test1", min={"cpu": 10, "memory": 0}, max={"cpu": 1000, "memory": 1000})
    for name, prio, cpu, mem in (("1", 10, 20, 0), ("2", 9, 10, 1), ("3", 8, 20, 0), ("4", 7, 40, 0)):
        s.pod(f"ns/{name}", quota="test1", priority=prio, node="n1", cpu=cpu, memory=mem, at=1)
    s.run()
    assert s.eq("test1")["used"] == {"cpu": 90_000, "memory": 1}
    assert s.eq("test1")["runtime"] == {"cpu": 50_000, "memory": 0}
    over_since = s.events[-1]["time"]  # the pods (and the overuse) arrive at 2 s
    assert over_since.endswith("T00:00:02Z")
    s.tick(at=12)
    assert s.run() == []
    s.tick(at=13)
    decisions = s.run()
    assert sorted((d["type"], d["workload"], d["reason"]) for d in decisions) == [
        ("Evicted", "ns/2", "QuotaOverUsedRevoke"), ("Evicted", "ns/4", "QuotaOverUsedRevoke")]
    assert s.running() == ["ns/1", "ns/3"]
    assert s.eq("test1")["used"] == {"cpu": 40_000}


def test_monitor_sees_no_overuse_within_runtime() -> None:
    # Monitor: a pod within the runtime never triggers recycling, whatever the time
    s = KoordScenario(capacity={"cpu": 100, "memory": 1000}, monitorAllQuotas=True, delayEvictTime="0s")
    s.quota("test1", min={"cpu": 10}, max={"cpu": 100, "memory": 1000})
    s.pod("ns/pod", quota="test1", cpu=10)
    s.run()
    s.tick(at=1000)
    assert s.run() == []


# -- plugin_test.go: PreFilter -----------------------------------------------------------------------

def test_prefilter_default_group_runtime_short_in_cpu() -> None:
    # "default": the default group's runtime (its max) is cpu 0 / memory 20; a pod of 1 cpu, 2 bytes
    # and 1 GPU (not a key of the group: not counted) fails on cpu
    s = KoordScenario(capacity={"cpu": 100, "memory": 100},
                      defaultQuotaGroupMax={"cpu": "0", "memory": "20"})
    s.pod("t1-ns1/pod1", cpu=1, memory=2, gpu=1)
    s.run()
    assert s.pod_state("t1-ns1/pod1")["message"] == (
        "Insufficient quotas, quotaName: koordinator-default-quota, runtime: map[cpu:0 memory:20], used: map[], "
        "pod's request: map[cpu:1 memory:2], exceedDimensions: [cpu]")


def test_prefilter_value_not_enough_in_memory() -> None:
    # "value not enough": runtime 1 cpu / 2 bytes, the pod asks 1 cpu / 3 bytes (the node has the GPU
    # the pods ask for, which the group does not count)
    s = KoordScenario(capacity={"cpu": 100, "memory": 100, GPU: 2},
                      defaultQuotaGroupMax={"cpu": "1", "memory": "2"})
    s.pod("t1-ns1/pod1", cpu=1, memory=3, gpu=1)
    s.run()
    assert s.pod_state("t1-ns1/pod1")["message"] == (
        "Insufficient quotas, quotaName: koordinator-default-quota, runtime: map[cpu:1 memory:2], used: map[], "
        "pod's request: map[cpu:1 memory:3], exceedDimensions: [memory]")
    s.pod("t1-ns1/pod2", cpu=1, memory=2, gpu=1)   # "value is enough"
    assert admitted(s.run()) == ["t1-ns1/pod2"]


def test_prefilter_runtime_disabled_checks_max() -> None:
    # "runtime not enough, but disable runtime": runtime 1 cpu / 2 bytes, max 10 / 20: the pod passes
    # PreFilter against max; the only node (1 cpu / 2 bytes, the cluster whose total the runtime
    # shares) cannot hold its 3 bytes, so kube-scheduler's Filter leaves it Unschedulable; with
    # placement off (spec.placement.enable: false) it is admitted on quota alone, as upstream's
    # plugin test (which has no nodes) expects
    for enabled, placement, expected in ((True, True, []), (False, True, []), (False, False, ["t1-ns1/pod1"])):
        s = KoordScenario(capacity={"cpu": 1, "memory": 2}, enableRuntimeQuota=enabled)
        if not placement:
            s.config(placement={"enable": False}, enableRuntimeQuota=enabled)
        s.quota("t1-ns1", max={"cpu": 10, "memory": 20})
        s.pod("t1-ns1/pod1", cpu=1, memory=3)
        assert admitted(s.run()) == expected
        if not enabled and placement:
            state = s.pod_state("t1-ns1/pod1")
            assert (state["status"], state["reason"]) == ("Pending", "Unschedulable")
            assert state["message"].startswith("unschedulable on cluster: not enough resources in the cluster to "
                                               "allocate the job: memory requested 3, available 2")


def test_prefilter_check_parent_names_the_path() -> None:
    # PreFilter_CheckParent: test-child's runtime 1 cpu / 3 bytes / 1 GPU, its parent's 1 / 2 / 1
    # (the child's min, forced and not scaled, is above what the parent gets from the cluster)
    s = KoordScenario(capacity={"cpu": 1, "memory": 2, GPU: 1}, enableCheckParentQuota=True,
                      enableMinQuotaScale=False)
    res = {"cpu": 10, "memory": 30, GPU: 10}
    s.quota("test", max=res, is_parent=True)
    s.quota("test-child", min={"cpu": 1, "memory": 3, GPU: 1}, max=res, parent="test", force=True)
    s.pod("t1-ns1/pod1", quota="test-child", cpu=1, memory=3, gpu=1)
    s.run()
    assert s.eq("test")["runtime"] == {"cpu": 1000, "memory": 2, GPU: 1}
    assert s.eq("test-child")["runtime"] == {"cpu": 1000, "memory": 3, GPU: 1}
    assert s.pod_state("t1-ns1/pod1")["message"] == (
        "Insufficient quotas, quotaNameTopo: [test test-child], runtime: map[cpu:1 memory:2 nvidia.com/gpu:1], "
        "used: map[], pod's request: map[cpu:1 memory:3 nvidia.com/gpu:1], exceedDimensions: [memory]")


def _non_preempt_case(s: KoordScenario, max_mem: int, init: list[tuple[str, int, int, int, bool]]) -> None:
    s.quota("test1", min={"cpu": 5, "memory": 5}, max={"cpu": 10, "memory": max_mem})
    for name, prio, cpu, mem, np in init:
        s.pod(f"ns/{name}", quota="test1", priority=prio, node="n1", preemptible=False if np else None,
              cpu=cpu, memory=mem)


def test_prefilter_non_preemptible_within_min() -> None:
    # "default": used 4 cpu / 3 bytes, nothing non-preemptible; pod 4 (2 / 2, non-preemptible) fits
    s = KoordScenario(capacity={"cpu": 10, "memory": 10})
    _non_preempt_case(s, 10, [("1", 10, 2, 1, False), ("2", 9, 1, 1, False), ("3", 8, 1, 1, False)])
    s.pod("ns/4", quota="test1", priority=1, preemptible=False, cpu=2, memory=2)
    assert admitted(s.run()) == ["ns/4"]


def test_prefilter_non_preemptible_used_larger_than_min() -> None:
    # "non-preemptible pod used larger than min": runtime 8 / 5 holds used 6 / 3 + 2 / 2, but the
    # non-preemptible used 4 / 2 + 2 / 2 exceeds min 5 / 5 in cpu
    s = KoordScenario(capacity={"cpu": 8, "memory": 5})
    _non_preempt_case(s, 8, [("1", 10, 2, 1, False), ("2", 9, 2, 1, True), ("3", 9, 2, 1, True)])
    s.pod("ns/4", quota="test1", priority=1, preemptible=False, cpu=2, memory=2)
    s.run()
    assert s.pod_state("ns/4")["message"] == (
        "Insufficient non-preemptible quotas, quotaName: test1, min: map[cpu:5 memory:5], "
        "nonPreemptibleUsed: map[cpu:4 memory:2], pod's request: map[cpu:2 memory:2], exceedDimensions: [cpu]")


def test_prefilter_non_preemptible_pod_is_not_a_victim() -> None:
    # "non-preemptible pod will not be evicted": runtime 7 / 5, used 6 / 4; pod 4 (p10, 2 / 1) fails
    # PreFilter on cpu; PostFilter may take pod 2 (p4) but not pod 3 (non-preemptible)
    s = KoordScenario(capacity={"cpu": 7, "memory": 5})
    _non_preempt_case(s, 8, [("1", 10, 2, 1, False), ("2", 4, 2, 1, False), ("3", 1, 2, 2, True)])
    s.pod("ns/4", quota="test1", priority=10, preemptible=False, cpu=2, memory=1)
    decisions = s.run()
    assert [(d["type"], d["workload"]) for d in decisions] == [("Preempted", "ns/2"), ("Admitted", "ns/4")]
    assert decisions[0]["message"] == (
        "preempted by ns/4 in quota test1: runtime map[cpu:7 memory:5], used map[cpu:6 memory:4], "
        "preemptor's request map[cpu:2 memory:1]")
    assert s.running() == ["ns/1", "ns/3", "ns/4"]
