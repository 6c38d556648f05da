"""Engine throughput with the placement stage on (EngineConfig ``spec.placement.enable``), at 1,000 and
10,000 nodes, and at openb's 1,523 nodes with placement off and on.

Nodes: an openb-like mix — node ``i`` is row ``i mod 1,523`` of the real openb node list
(``replay.sim.importers.openb.read_nodes``: 310 CPU-only nodes and 1,213 GPU nodes of 1, 2, 4 or 8
GPUs, 6,212 GPUs in all; cpu, memory and GPUs as listed), renamed ``n<i>``.  Topology ``bench``:
racks of 16 consecutive nodes, blocks of 8 racks (levels ``bench/block``, ``bench/rack``,
``kubernetes.io/hostname``); one ResourceFlavor ``gpu`` over every node, on that topology.  (The
flavor per GPU model is the openb demo's business: ``quotaledger demo --trace openb --placement``.)

Quota: 20 ClusterQueues in one cohort, each nominal 1/20 of the nodes' cpu, memory and GPUs, no
borrowing limit: together they hold exactly the nodes, so the nodes — not the quota — decide.

Workloads: 50,000 in ``kueue_scale.py``'s 35 : 11 : 4 mix, per pod: small 1 pod × (1 GPU, 8 cpu,
32 GiB) for 200 ms; medium 2 pods × (2 GPUs, 16 cpu, 64 GiB) for 500 ms; large 4 pods × (8 GPUs,
32 cpu, 128 GiB) for 1,000 ms (fits only 8-GPU nodes).  Every other workload (even index) asks
``topologyRequest.required: bench/rack`` — half the workloads are topology constrained.  They
arrive evenly at a rate that offers 80 % of the nodes' GPUs (3,140 GPU-ms per workload on average),
so the cluster is equally full at every size and only the number of nodes differs.

The event files are generated closed-loop (every admitted workload finishes after its run time),
then the engine alone is timed over them with ``kueue_scale.best_replay`` (decode + apply, best of
``--passes``, the cyclic GC paused), in CPU time (``time.process_time``: the machine is shared).  Prints admissions/s and µs per admission, and the
two ratios the placement stage must meet: µs per admission at 10,000 nodes ≤ 3 × at 1,000 nodes;
admissions/s with placement ≥ 0.3 × without it at 1,523 nodes.

    PYTHONPATH=. python benchmarks/placement.py                # 1,000 and 10,000 nodes; 1,523 off/on
    PYTHONPATH=. python benchmarks/placement.py --sizes 1000 --workloads 5000
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from closed_loop import ClosedLoop
from kueue_scale import best_replay
from replay.sim.importers.openb import NODES_FILE, read_nodes
from replay.sim.traces import trace_dir
from statemodel.quantity import parse_quantity

API = "kueue.x-k8s.io/v1beta2"
RACK, BLOCK, HOST = "bench/rack", "bench/block", "kubernetes.io/hostname"
RACK_NODES, BLOCK_RACKS = 16, 8
QUEUES = 20
GIB = 1 << 30
CLASSES = (  # name, pods, per-pod requests, run ms, share of 50
    ("small", 1, {"nvidia.com/gpu": "1", "cpu": "8", "memory": "32Gi"}, 200, 35),
    ("medium", 2, {"nvidia.com/gpu": "2", "cpu": "16", "memory": "64Gi"}, 500, 11),
    ("large", 4, {"nvidia.com/gpu": "8", "cpu": "32", "memory": "128Gi"}, 1000, 4),
)
GPU_MS_PER_WORKLOAD = sum(pods * int(req["nvidia.com/gpu"]) * run * share
                          for _, pods, req, run, share in CLASSES) // 50  # 3,140
LOAD_PERCENT = 80


def nodes(n: int) -> tuple[list[dict], dict[str, int]]:
    """``n`` Nodes of the openb mix (module docstring) with their topology labels, and their summed
    allocatable in base units.

    Raises:
        replay.sim.importers.jobs.TraceImportError: the openb node list is not found.
    """
    base = read_nodes(trace_dir("openb") / NODES_FILE).nodes
    out, total = [], {}
    for i in range(n):
        alloc = dict(base[i % len(base)]["status"]["allocatable"])
        rack = i // RACK_NODES
        out.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}", "labels": {
            BLOCK: f"b{rack // BLOCK_RACKS}", RACK: f"r{rack}", HOST: f"n{i}", "bench/pool": "gpu"}},
            "status": {"allocatable": alloc}})
        for res, q in alloc.items():
            total[res] = total.get(res, 0) + parse_quantity(res, q, res)
    return out, total


def config_events(total: dict[str, int], placement: bool) -> list[dict]:
    """EngineConfig (placement on or off), Topology, the flavor, the cohort, the ClusterQueues and
    their LocalQueues."""
    share = {r: total.get(r, 0) // QUEUES for r in ("cpu", "memory", "nvidia.com/gpu")}
    quota = [{"name": "cpu", "nominalQuota": f"{share['cpu']}m"}, {"name": "memory", "nominalQuota": str(share["memory"])},
             {"name": "nvidia.com/gpu", "nominalQuota": str(share["nvidia.com/gpu"])}]
    out: list[dict] = [
        {"apiVersion": "quotaledger.io/v1alpha1", "kind": "EngineConfig", "metadata": {"name": "config"},
         "spec": {"placement": {"enable": placement}}},
        {"apiVersion": "kueue.x-k8s.io/v1alpha1", "kind": "Topology", "metadata": {"name": "bench"},
         "spec": {"levels": [{"nodeLabel": BLOCK}, {"nodeLabel": RACK}, {"nodeLabel": HOST}]}},
        {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "gpu"},
         "spec": {"nodeLabels": {"bench/pool": "gpu"}, "topologyName": "bench"}},
        {"apiVersion": API, "kind": "Cohort", "metadata": {"name": "all"}, "spec": {}},
    ]
    for q in range(QUEUES):
        out.append({"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": f"cq{q}"}, "spec": {
            "cohortName": "all", "resourceGroups": [{"coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                                                    "flavors": [{"name": "gpu", "resources": quota}]}]}})
        out.append({"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": f"ns{q}"},
                    "spec": {"clusterQueue": f"cq{q}"}})
    return out


def generate(n_nodes: int, path: Path, placement: bool = True, workloads: int = 50_000, filters: int = 0) -> dict:
    """Write the closed-loop event file for ``n_nodes`` nodes (module docstring); return counts and hash.
    ``filters`` > 0: workload ``j`` tolerates the taint key ``bench/t<j mod filters>`` (no node is
    tainted, so every filter admits every node: that many distinct kept filtered orders, each
    over all the nodes — what ``NodeLedger``'s bound on them is measured with)."""
    loop = ClosedLoop()
    node_objects, total = nodes(n_nodes)
    for obj in config_events(total, placement) + node_objects:
        loop.emit({"type": "Applied", "object": obj}, 0)
    gap_us = GPU_MS_PER_WORKLOAD * 1000 * 100 // max(1, total.get("nvidia.com/gpu", 1) * LOAD_PERCENT)
    mix = [c for c in CLASSES for _ in range(c[4])]
    for j in range(workloads):
        name, pods, req, run_ms, _ = mix[j % len(mix)]
        ns, wl = f"ns{j % QUEUES}", f"{name}-{j}"
        pod_set: dict = {"name": "main", "count": pods, "requests": req}
        if j % 2 == 0:
            pod_set["topologyRequest"] = {"required": RACK}
        if filters:  # tolerations live in the pod template, which then carries the requests too
            del pod_set["requests"]
            pod_set["template"] = {"spec": {
                "containers": [{"name": "c", "resources": {"requests": req}}],
                "tolerations": [{"key": f"bench/t{j % filters}", "operator": "Exists"}]}}
        loop.submit(1000 + j * gap_us // 1000, {"type": "Applied", "object": {
            "apiVersion": API, "kind": "Workload", "metadata": {"name": wl, "namespace": ns},
            "spec": {"queueName": "lq", "podSets": [pod_set]}}}, f"{ns}/{wl}", run_ms)
    return loop.run(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000", help="comma-separated node counts with placement on")
    parser.add_argument("--baseline", default=1523, type=int, help="node count of the off/on comparison (0: skip)")
    parser.add_argument("--workloads", default=50_000, type=int)
    parser.add_argument("--passes", default=3, type=int)
    parser.add_argument("--filters", default=0, type=int,
                        help="distinct tolerations over the workloads (generate's docstring; 0: none)")
    parser.add_argument("--workdir", default="benchmarks/out", type=Path)
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    runs = [(n, True) for n in (int(s) for s in args.sizes.split(","))]
    if args.baseline:
        runs += [(args.baseline, False), (args.baseline, True)]
    results: dict[tuple[int, bool], dict] = {}
    for n, on in runs:
        if (n, on) in results:
            continue
        filters = f"-filters{args.filters}" if args.filters else ""
        path = args.workdir / f"placement-{n}-{'on' if on else 'off'}-{args.workloads}{filters}.ndjson"
        started = time.process_time()
        gen = generate(n, path, on, args.workloads, args.filters)
        gen_cpu = time.process_time() - started
        result = best_replay(path, args.passes, time.process_time)
        assert result["hash"] == gen["hash"], "replay of the generated file diverged from generation"
        result["admissions_per_s"] = 1e6 / result["us_per_admission"]
        results[(n, on)] = result
        print(f"{n:>6} nodes  placement {'on ' if on else 'off'}  {result['events']:>8} events  "
              f"{result['admissions']:>7} admissions  engine {result['eps']:>8,.0f} ev/s  "
              f"{result['admissions_per_s']:>8,.0f} admissions/s  {result['us_per_admission']:7.1f} µs/admission  "
              f"(generation {gen_cpu:.1f} s CPU)", flush=True)
    sizes = sorted(n for n, on in results if on and n != args.baseline) or sorted(n for n, on in results if on)
    if len(sizes) > 1:
        small, large = results[(sizes[0], True)], results[(sizes[-1], True)]
        print(f"µs/admission at {sizes[-1]:,} nodes = {large['us_per_admission'] / small['us_per_admission']:.2f} × "
              f"that at {sizes[0]:,} nodes (must be ≤ 3)")
    if (args.baseline, False) in results and (args.baseline, True) in results:
        off, on_ = results[(args.baseline, False)], results[(args.baseline, True)]
        print(f"at {args.baseline:,} nodes: admissions/s with placement = "
              f"{on_['admissions_per_s'] / off['admissions_per_s']:.2f} × without (must be ≥ 0.3); "
              f"events/s {on_['eps'] / off['eps']:.2f} ×")


if __name__ == "__main__":
    main()
