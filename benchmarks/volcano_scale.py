"""Engine throughput of the ``volcano`` quota model, next to the ``kueue`` model on the same shape.

The shape is ``kueue_scale.py``'s: N leaf queues (100, 1,000, 10,000) under a three-level tree —
mid queues under ``root`` → parent queues of at most 100 leaves (10 parents per mid) → leaves —
with the ``capacity`` plugin and ``enabledHierarchy: true``.  A leaf deserves 20 cpu and may use up
to its capability of 120 cpu (a Kueue ClusterQueue's nominal 20 + borrowingLimit 100); a parent's
and a mid's deserved is the sum of its children's (the webhook's rule).  The cluster is one Node
whose cpu is the sum of the leaves' deserved, admission without placement; ``--nodes N`` splits
that cpu over N Nodes and binds every pod to one (``scale_nodes``).  Leaves are not reclaimable (``kueue_scale.py``
configures no preemption either); ``--reclaim`` makes them reclaimable.  50,000 PodGroups of one pod
(``minMember`` 1, ``minResources`` the pod's request) in Kueue's 35 : 11 : 4 mix (1 cpu 200 ms
priority 50, 5 cpu 500 ms priority 100, 20 cpu 1,000 ms priority 200) are dealt round-robin over
the leaves, each PodGroup and its Pod in one ``Batch``; closed loop: every admitted group finishes
(``WorkloadFinished`` naming the PodGroup) after its run time.

The event files are generated closed-loop, then the engine alone (``decode_event`` +
``Engine.apply``) is timed over them (best of 2 passes, the cyclic GC paused).  The ``kueue`` model
runs ``kueue_scale.py``'s file of the same size.  Prints events/s and µs per admission for both (and
the volcano file's decision hash, to compare runs of two builds) and
the ratios the model must meet: volcano events/s ≥ 0.5 × kueue's, µs/admission at the largest size
≤ 2 × at the smallest.

    python benchmarks/volcano_scale.py                   # 100, 1,000 and 10,000 queues
    python benchmarks/volcano_scale.py --sizes 1000 --no-kueue
    python benchmarks/volcano_scale.py --sizes 100 --no-kueue --nodes 100   # placement on 100 Nodes
"""

from __future__ import annotations

import argparse
from pathlib import Path

from closed_loop import ClosedLoop
from kueue_scale import CLASSES
from kueue_scale import best_replay
from kueue_scale import generate as generate_kueue
from scale_nodes import node_objects, placement_spec

VC_API = "scheduling.volcano.sh/v1beta1"
GROUP = "scheduling.k8s.io/group-name"
LEAF_DESERVED, LEAF_CAPABILITY = 20, 120  # cores


def tree(n_queues: int) -> list[tuple[str, str, int, bool]]:
    """``(name, parent, leaves below, is_leaf)`` of the three-level tree, parents first."""
    parents = max(1, (n_queues + 99) // 100)
    mids = (parents + 9) // 10
    per_parent = [0] * parents
    for i in range(n_queues):
        per_parent[min(i // 100, parents - 1)] += 1
    out = [(f"m{m}", "root", sum(per_parent[m * 10:(m + 1) * 10]), False) for m in range(mids)]
    out += [(f"c{p}", f"m{p // 10}", per_parent[p], False) for p in range(parents)]
    out += [(f"q{i}", f"c{min(i // 100, parents - 1)}", 1, True) for i in range(n_queues)]
    return out


def config_events(n_queues: int, reclaim: bool, nodes: int = 0) -> list[dict]:
    """EngineConfig (``volcano``, capacity, hierarchy), the Node(s) (``scale_nodes``) and the Queue tree."""
    out: list[dict] = [
        {"apiVersion": "quotaledger.io/v1alpha1", "kind": "EngineConfig", "metadata": {"name": "config"},
         "spec": {"quotaModel": "volcano", "volcano": {"plugin": "capacity", "enabledHierarchy": True},
                  **placement_spec(nodes)}},
        *node_objects(LEAF_DESERVED * n_queues, nodes)]
    for name, parent, leaves, is_leaf in tree(n_queues):
        spec: dict = {"parent": parent, "deserved": {"cpu": str(LEAF_DESERVED * leaves)}}
        if is_leaf:
            spec["capability"] = {"cpu": str(LEAF_CAPABILITY)}
            spec["reclaimable"] = reclaim
        out.append({"apiVersion": VC_API, "kind": "Queue", "metadata": {"name": name}, "spec": spec})
    return [{"type": "Applied", "object": o} for o in out]


def generate(n_queues: int, path: Path, total: int = 50_000, reclaim: bool = False, nodes: int = 0) -> dict:
    """Write the closed-loop event file for ``n_queues`` leaf queues on ``nodes`` Nodes; return counts
    and the hash."""
    loop = ClosedLoop()
    for event in config_events(n_queues, reclaim, nodes):
        loop.emit(event, 0)
    for cls, cpu, run_ms, prio, every, count in CLASSES:
        for j in range(total * count // 50):
            i, k = j % n_queues, j // n_queues
            name = f"{cls}-{k}"
            order = loop.order + 1
            group = {"id": f"g{order}", "type": "Applied", "object": {
                "apiVersion": VC_API, "kind": "PodGroup", "metadata": {"name": name, "namespace": f"ns{i}"},
                "spec": {"queue": f"q{i}", "minMember": 1, "minResources": {"cpu": cpu}}}}
            pod = {"id": f"p{order}", "type": "Applied", "object": {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": f"ns{i}", "annotations": {GROUP: name}},
                "spec": {"priority": prio, "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}}
            loop.submit(1000 + k * every + i % 97, {"type": "Batch", "events": [group, pod]}, f"ns{i}/{name}", run_ms)
    return loop.run(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000", help="comma-separated leaf queue counts")
    parser.add_argument("--groups", default=50_000, type=int, help="PodGroups (and Kueue workloads) in all")
    parser.add_argument("--workdir", default="benchmarks/out", type=Path)
    parser.add_argument("--no-kueue", action="store_true", help="skip the kueue model's run")
    parser.add_argument("--reclaim", action="store_true", help="leaves reclaimable (reclaim runs)")
    parser.add_argument("--passes", default=2, type=int)
    parser.add_argument("--nodes", default=0, type=int,
                        help="0: one Node, quota-only (placement off); N: N Nodes, every pod placed")
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        path = args.workdir / (f"volcano-scale-{n}{'-reclaim' if args.reclaim else ''}"
                               f"{f'-nodes{args.nodes}' if args.nodes else ''}.ndjson")
        gen = generate(n, path, args.groups, args.reclaim, args.nodes)
        result = best_replay(path, args.passes)
        assert result["hash"] == gen["hash"], "replay of the generated file diverged from generation"
        line = (f"{n:>6} queues  volcano {result['events']:>7} events {result['admissions']:>7} admissions "
                f"{result['eps']:>8,.0f} ev/s {result['us_per_admission']:7.1f} µs/admission "
                f"hash {result['hash'][:8]}…")
        if not args.no_kueue:
            kpath = args.workdir / f"kueue-scale-{n}.ndjson"
            kgen = generate_kueue(n, kpath, False, args.groups)
            kueue = best_replay(kpath, args.passes)
            assert kueue["hash"] == kgen["hash"]
            line += (f" | kueue {kueue['events']:>7} events {kueue['eps']:>8,.0f} ev/s "
                     f"{kueue['us_per_admission']:7.1f} µs/admission | ratio {result['eps'] / kueue['eps']:.2f}")
        print(line, flush=True)
        rows.append((n, result))
    if len(rows) > 1:
        base = rows[0][1]["us_per_admission"]
        for n, result in rows[1:]:
            print(f"µs/admission at {n} queues = {result['us_per_admission'] / base:.2f} × that at {rows[0][0]} queues")


if __name__ == "__main__":
    main()
