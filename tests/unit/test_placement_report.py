"""The placement report (``replay.reports.placement``) on a small history worked out by hand.

Nodes (all at t=0): n1 and n2 of model A (8 GPUs, 32 cores each), n3 of model B (4 GPUs, 4 cores).
Per-pod requests: w1 6 GPUs + 1 core; w2 4 GPUs + 2 cores (2 pods); w3 4 GPUs + 8 cores; w4 1 GPU + 1 core.

    t=0   w1 applied, admitted on n1            n1 free 2 GPUs / 31 cores
    t=10  w2 applied, admitted 2 pods on n2     n2 free 0 GPUs
    t=20  w3 applied, stays pending             fits nowhere: n1 has 2 GPUs, n3 only 4 cores
    t=30  w4 applied, stays pending             fits n1 and n3
    t=40  w4 deleted
    t=50  w1 finished                           n1 free 8 GPUs: w3 fits there
    t=55  w2 preempted (back to its queue)      n2 free 8 GPUs; w2's pod fits n3
    end 60, 6 samples at 10, 20, …, 60 (each after the events of its instant)
"""

from __future__ import annotations

from fractions import Fraction

from replay.reports.placement import (
    FragmentationSample, HistoryItem, PendingPodSet, fragmentation_at, placement_from_history, wait_rows,
)
from replay.sim.importers.jobs import Job
from replay.sim.simulator import SimulationResult

M = "quotaledger.io/gpu-model"


def _node(name: str, model: str, gpus: int, cores: int) -> HistoryItem:
    return (0, "Applied", {"object": {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {M: model}},
                                      "status": {"allocatable": {"nvidia.com/gpu": str(gpus), "cpu": str(cores)}}}}, [])


def _wl(t: int, name: str, count: int, gpus: int, cores: int, decisions: list | None = None) -> HistoryItem:
    return (t, "Applied", {"object": {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                                      "metadata": {"name": name, "namespace": "ns"},
                                      "spec": {"queueName": "q", "podSets": [{"name": "main", "count": count, "requests": {
                                          "nvidia.com/gpu": str(gpus), "cpu": str(cores)}}]}}}, decisions or [])


HISTORY: list[HistoryItem] = [
    _node("n1", "A", 8, 32), _node("n2", "A", 8, 32), _node("n3", "B", 4, 4),
    _wl(0, "w1", 1, 6, 1, [("Admitted", "ns/w1", {"nodes": {"main": {"n1": 1}}})]),
    _wl(10, "w2", 2, 4, 2, [("Admitted", "ns/w2", {"nodes": {"main": {"n2": 2}}})]),
    _wl(20, "w3", 1, 4, 8),
    _wl(30, "w4", 1, 1, 1),
    (40, "Deleted", {"object": {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                                "metadata": {"name": "w4", "namespace": "ns"}}}, []),
    (50, "WorkloadFinished", {"workload": "ns/w1"}, []),
    (55, "Tick", {}, [("Preempted", "ns/w2", {"reason": "InClusterQueue"})]),
]


def test_fragmentation_over_time_is_the_hand_worked_one() -> None:
    report = placement_from_history("lab", HISTORY, start_ms=0, end_ms=60, samples=6)
    assert report.gpu_resource == "nvidia.com/gpu" and report.gpu_unit == 1
    assert report.fragmentation == [
        FragmentationSample(10, 6, 0, 0),    # n1 2 + n3 4 free, nothing pending
        FragmentationSample(20, 6, 6, 1),    # w3 fits neither n1 (GPUs) nor n3 (cores)
        FragmentationSample(30, 6, 0, 2),    # w4 fits both
        FragmentationSample(40, 6, 6, 1),    # w4 gone
        FragmentationSample(50, 12, 4, 1),   # n1 empty: w3 fits there; n3's 4 still unusable
        FragmentationSample(60, 20, 0, 2),   # w2 pending again: its pod fits n3
    ]
    # samples with something pending: (6 + 0 + 6 + 4 + 0) / (6 + 6 + 6 + 12 + 20)
    assert report.fragmented_share() == Fraction(16, 50)


def test_node_utilization_is_time_weighted_per_model() -> None:
    report = placement_from_history("lab", HISTORY, start_ms=0, end_ms=60, samples=6)
    util = {(u.group, u.resource): u for u in report.utilization}
    assert sorted(util) == [("A", "cpu"), ("A", "nvidia.com/gpu"), ("B", "cpu"), ("B", "nvidia.com/gpu")]
    a_gpu = util[("A", "nvidia.com/gpu")]
    # w1 6 GPUs over [0, 50) = 300; w2 2 × 4 GPUs over [10, 55) = 360; allocatable 16 × 60 = 960
    assert (a_gpu.nodes, a_gpu.allocatable, a_gpu.allocated_ms, a_gpu.allocatable_ms) == (2, 16, 660, 960)
    assert a_gpu.utilization == Fraction(11, 16)
    # cpu: w1 1,000m × 50 + w2 2 × 2,000m × 45 = 230,000 of 64,000m × 60
    assert util[("A", "cpu")].utilization == Fraction(230_000, 3_840_000)
    assert util[("B", "nvidia.com/gpu")].utilization == 0


def test_a_node_without_free_gpus_or_an_unschedulable_one_counts_nothing() -> None:
    nodes = {"a": ({"nvidia.com/gpu": 8}, True, {}), "b": ({"nvidia.com/gpu": 8}, False, {}),
             "c": ({"cpu": 1000}, True, {})}
    one_gpu = PendingPodSet((("nvidia.com/gpu", 1),), 1)
    sample = fragmentation_at(5, nodes, {"a": {"nvidia.com/gpu": 8}}, [one_gpu], "nvidia.com/gpu")
    assert sample == FragmentationSample(5, 0, 0, 1)
    # pending pods that ask for no GPU do not make free GPUs usable, nor count as pending GPU pod sets
    sample = fragmentation_at(5, nodes, {}, [PendingPodSet((("cpu", 1),), 1)], "nvidia.com/gpu")
    assert sample == FragmentationSample(5, 8, 0, 0)


def test_a_gang_uses_only_free_gpus_of_a_domain_that_holds_it_whole() -> None:
    # racks r1 (x1, x2) and r2 (y1) under spine s; x1 has 8 GPUs free, x2 4, y1 8; the unlabelled
    # node z (8 free) is outside every rack and spine
    def node(rack: str | None) -> tuple[dict[str, int], bool, dict[str, str]]:
        labels = {"spine": "s", "rack": rack} if rack else {}
        return {"nvidia.com/gpu": 8}, True, labels

    nodes = {"x1": node("r1"), "x2": node("r1"), "y1": node("r2"), "z": node(None)}
    used = {"x2": {"nvidia.com/gpu": 4}}
    gpu = "nvidia.com/gpu"
    eight = (("nvidia.com/gpu", 8),)
    # 2 pods × 8 GPUs in one rack: r1 holds 1 (x1), r2 holds 1 (y1): nobody can use anything
    rack_pair = PendingPodSet(eight, 2, ("spine", "rack"))
    assert fragmentation_at(0, nodes, used, [rack_pair], gpu) == FragmentationSample(0, 28, 28, 1)
    # the same gang within the spine: x1 + y1 hold it; x2 (4 free) fits no 8-GPU pod, z is outside
    spine_pair = PendingPodSet(eight, 2, ("spine",))
    assert fragmentation_at(0, nodes, used, [spine_pair], gpu) == FragmentationSample(0, 28, 12, 1)
    # without a level the cluster is the domain: x1, y1 and z each fit one pod; x2 still cannot
    anywhere = PendingPodSet(eight, 3)
    assert fragmentation_at(0, nodes, used, [anywhere], gpu) == FragmentationSample(0, 28, 4, 1)
    # a 4-GPU pod in a rack uses x2 (and x1, y1); z's GPUs stay unusable for it
    four = PendingPodSet((("nvidia.com/gpu", 4),), 1, ("spine", "rack"))
    assert fragmentation_at(0, nodes, used, [rack_pair, four], gpu) == FragmentationSample(0, 28, 8, 2)


def test_the_required_level_comes_from_the_workload_and_the_topology_events() -> None:
    topo = (0, "Applied", {"object": {"apiVersion": "kueue.x-k8s.io/v1alpha1", "kind": "Topology",
                                      "metadata": {"name": "t"},
                                      "spec": {"levels": [{"nodeLabel": "spine"}, {"nodeLabel": "rack"}]}}}, [])
    nodes = [(0, "Applied", {"object": {"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": n, "labels": {"spine": "s", "rack": r}}, "status": {"allocatable": {"nvidia.com/gpu": "8"}}}}, [])
             for n, r in (("a", "r1"), ("b", "r2"))]
    kueue = _wl(1, "k", 2, 8, 0)
    kueue[2]["object"]["spec"]["podSets"][0]["topologyRequest"] = {"required": "rack"}
    kai = _wl(2, "q", 2, 8, 0)
    kai[2]["object"]["metadata"]["annotations"] = {"kai.scheduler/topology": "t",
                                                   "kai.scheduler/topology-required-placement": "spine"}
    # after k: a 2-host gang in one rack fits neither rack: all 16 free GPUs fragmented;
    # after q: a 2-host gang in the spine fits (a + b): nothing fragmented
    report = placement_from_history("lab", [topo, *nodes, kueue, kai], start_ms=0, end_ms=2, samples=2)
    assert report.fragmentation == [FragmentationSample(1, 16, 16, 1), FragmentationSample(2, 16, 0, 2)]


def test_gpu_milli_is_the_measure_when_the_nodes_have_it() -> None:
    node = (0, "Applied", {"object": {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "labels": {M: "T4"}},
                                      "status": {"allocatable": {"nvidia.com/gpu": "2", "alibaba.com/gpu-milli": "2000"}}}},
            [])
    share = (1, "Applied", {"object": {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                                       "metadata": {"name": "s", "namespace": "ns"}, "spec": {"queueName": "q", "podSets": [
                                           {"name": "main", "count": 1, "template": {"spec": {"containers": [
                                               {"name": "c", "resources": {"requests": {"alibaba.com/gpu-milli": "500"}}},
                                               {"name": "d", "resources": {"requests": {"alibaba.com/gpu-milli": "250"}}},
                                           ]}}}]}}}, [("Admitted", "ns/s", {"nodes": {"main": {"n": 1}}})])
    report = placement_from_history("lab", [node, share], start_ms=0, end_ms=10, samples=1)
    assert (report.gpu_resource, report.gpu_unit) == ("alibaba.com/gpu-milli", 1000)
    # the template's two containers: 750 thousandths taken, 1,250 free
    assert report.fragmentation == [FragmentationSample(10, 1250, 0, 0)]


def test_wait_rows_put_both_runs_next_to_the_observed_waits() -> None:
    jobs = {"u1/a": Job("a", 100, 50, ("online", "ls", "u1"), 1, (), observed_start_ms=130),
            "u1/b": Job("b", 200, 50, ("online", "ls", "u1"), 1, ()),
            "u2/c": Job("c", 300, 50, ("batch", "be", "u2"), 1, (), observed_start_ms=300)}
    placed = SimulationResult(admitted_at={"u1/a": 160, "u2/c": 300}, job_of=jobs)
    unplaced = SimulationResult(admitted_at={"u1/a": 100, "u1/b": 200, "u2/c": 305}, job_of=jobs)
    be, ls = wait_rows("openb", placed, unplaced)
    assert (ls.queue, ls.jobs, ls.observed_waits, ls.placed_waits, ls.placed_never, ls.unplaced_waits) == (
        "online-ls", 2, [30], [60], 1, [0, 0])
    assert (be.queue, be.observed_waits, be.placed_waits, be.unplaced_waits, be.unplaced_never) == (
        "batch-be", [0], [0], [5], 0)


def _pod(t: int, name: str, gpus: int, cores: int, group: str | None = None, decisions: list | None = None) -> HistoryItem:
    notes = {"scheduling.k8s.io/group-name": group} if group else {}
    return (t, "Applied", {"object": {"apiVersion": "v1", "kind": "Pod",
                                      "metadata": {"name": name, "namespace": "ns", "annotations": notes},
                                      "spec": {"containers": [{"name": "c", "resources": {"requests": {
                                          "nvidia.com/gpu": str(gpus), "cpu": str(cores)}}}]}}}, decisions or [])


def test_pods_of_the_pod_scheduling_models_hold_their_nodes() -> None:
    # n1 (8 GPUs) and n3 (4 GPUs, 4 cores).  A Koordinator pod p (6 GPUs) is admitted on n1 at 0;
    # a Volcano PodGroup g's pods (2 GPUs + 8 cores each) wait from 10 — they fit n1's 2 free GPUs
    # only by GPU, not n3 (cores): n1's 2 are usable (8 cores free there), n3's 4 are not; at 20 g is
    # admitted with two pods on n1 after p finished.
    history = [
        _node("n1", "A", 8, 32), _node("n3", "B", 4, 4),
        _pod(0, "p", 6, 1, decisions=[("Admitted", "ns/p", {"nodes": {"main": {"n1": 1}}})]),
        _pod(10, "g-0", 2, 8, group="g"),
        (15, "WorkloadFinished", {"workload": "ns/p"}, []),
        (20, "Tick", {}, [("Admitted", "ns/g", {"nodes": {"main": {"n1": 2}}})]),
    ]
    report = placement_from_history("lab", history, start_ms=0, end_ms=30, samples=3)
    assert report.fragmentation == [
        FragmentationSample(10, 6, 4, 1),   # n1 2 free (g fits), n3 4 free (g does not: cores)
        FragmentationSample(20, 8, 0, 0),   # g holds 4 of n1's 8: 4 + 4 free, nothing pending
        FragmentationSample(30, 8, 0, 0),
    ]
    a_gpu = {(u.group, u.resource): u for u in report.utilization}[("A", "nvidia.com/gpu")]
    # p 6 GPUs over [0, 15) = 90; g 2 × 2 GPUs over [20, 30] = 40 (the end counts: 30 - 20 = 10 ms)
    assert a_gpu.allocated_ms == 90 + 40
