"""Engine throughput of the ``koordinator`` quota model, next to the ``kueue`` model on the same shape.

The shape is ``kueue_scale.py``'s: N leaf quota groups (100, 1,000, 10,000) of min 20 cpu and max
120 cpu (a Kueue ClusterQueue's nominal 20 + borrowingLimit 100) under a three-level tree: mid
groups under ``koordinator-root-quota`` → parent groups of at most 100 leaves (10 parents per mid)
→ leaves; each parent's and mid's min is the sum of its children's, its max the sum of their
max.  The cluster is one Node whose cpu is the sum of the leaves' min (the Kueue cohort tree's
nominal capacity), admission quota-only; ``--nodes N`` splits that cpu over N Nodes and places
every pod on one (``scale_nodes``).  50,000 pods in Kueue's 35 : 11 : 4 mix (1 cpu 200 ms priority 50, 5 cpu 500 ms
priority 100, 20 cpu 1,000 ms priority 200) are dealt round-robin over the leaves, each pod
labelled with its quota; closed loop: every admitted pod finishes (``WorkloadFinished``) after its
run time.

The event files are generated closed-loop, then the engine alone (``decode_event`` +
``Engine.apply``) is timed over them (best of 2 passes, the cyclic GC paused).  The ``kueue`` model
runs ``kueue_scale.py``'s file of the same size (ClusterQueues nominal 20, borrowingLimit 100, one-pod
Workloads of the same mix).  Prints events/s and µs per admission for both, and the ratios the
model must meet: koordinator events/s ≥ 0.5 × kueue's, µs/admission at the largest size ≤ 2 × at
the smallest.

    python benchmarks/koordinator_scale.py                   # 100, 1,000 and 10,000 groups
    python benchmarks/koordinator_scale.py --sizes 1000 --no-kueue
    python benchmarks/koordinator_scale.py --sizes 100 --no-kueue --nodes 100   # placement on 100 Nodes
"""

from __future__ import annotations

import argparse
from pathlib import Path

from closed_loop import ClosedLoop
from kueue_scale import CLASSES
from kueue_scale import best_replay
from kueue_scale import generate as generate_kueue
from scale_nodes import node_objects, placement_spec

EQ_API = "scheduling.sigs.k8s.io/v1alpha1"
LABELS = "quota.scheduling.koordinator.sh/"
LEAF_MIN, LEAF_MAX = 20, 120  # cores


def tree(n_groups: int) -> list[tuple[str, str | None, int, bool]]:
    """``(name, parent, leaves below, is_parent)`` of the three-level tree, parents first; a ``None``
    parent is the root."""
    parents = max(1, (n_groups + 99) // 100)
    mids = (parents + 9) // 10
    out: list[tuple[str, str | None, int, bool]] = []
    per_parent = [0] * parents
    for i in range(n_groups):
        per_parent[min(i // 100, parents - 1)] += 1
    for m in range(mids):
        out.append((f"m{m}", None, sum(per_parent[m * 10:(m + 1) * 10]), True))
    for p in range(parents):
        out.append((f"c{p}", f"m{p // 10}", per_parent[p], True))
    for i in range(n_groups):
        out.append((f"q{i}", f"c{min(i // 100, parents - 1)}", 1, False))
    return out


def config_events(n_groups: int, nodes: int = 0) -> list[dict]:
    """EngineConfig (``koordinator``), the Node(s) (``scale_nodes``) and the ElasticQuota tree, as
    EVENTS.md dicts."""
    out: list[dict] = [
        {"apiVersion": "quotaledger.io/v1alpha1", "kind": "EngineConfig", "metadata": {"name": "config"},
         "spec": {"quotaModel": "koordinator", **placement_spec(nodes)}},
        *node_objects(LEAF_MIN * n_groups, nodes)]
    for name, parent, leaves, is_parent in tree(n_groups):
        labels = {LABELS + "is-parent": "true"} if is_parent else {}
        if parent is not None:
            labels[LABELS + "parent"] = parent
        out.append({"apiVersion": EQ_API, "kind": "ElasticQuota",
                    "metadata": {"name": name, "namespace": "quotas", "labels": labels},
                    "spec": {"min": {"cpu": str(LEAF_MIN * leaves)}, "max": {"cpu": str(LEAF_MAX * leaves)}}})
    return [{"type": "Applied", "object": o} for o in out]


def generate(n_groups: int, path: Path, total: int = 50_000, nodes: int = 0) -> dict:
    """Write the closed-loop event file for ``n_groups`` leaf groups on ``nodes`` Nodes; return counts
    and the hash."""
    loop = ClosedLoop()
    for event in config_events(n_groups, nodes):
        loop.emit(event, 0)
    for cls, cpu, run_ms, prio, every, count in CLASSES:
        for j in range(total * count // 50):
            i, k = j % n_groups, j // n_groups
            name = f"{cls}-{k}"
            pod = {"type": "Applied", "object": {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": f"ns{i}", "labels": {LABELS + "name": f"q{i}"}},
                "spec": {"priority": prio, "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}}
            loop.submit(1000 + k * every + i % 97, pod, f"ns{i}/{name}", run_ms)
    return loop.run(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000", help="comma-separated leaf group counts")
    parser.add_argument("--pods", default=50_000, type=int, help="pods (and Kueue workloads) in all")
    parser.add_argument("--workdir", default="benchmarks/out", type=Path)
    parser.add_argument("--no-kueue", action="store_true", help="skip the kueue model's run")
    parser.add_argument("--passes", default=2, type=int)
    parser.add_argument("--nodes", default=0, type=int,
                        help="0: one Node, quota-only (placement off); N: N Nodes, every pod placed")
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        path = args.workdir / f"koordinator-scale-{n}{f'-nodes{args.nodes}' if args.nodes else ''}.ndjson"
        gen = generate(n, path, args.pods, args.nodes)
        result = best_replay(path, args.passes)
        assert result["hash"] == gen["hash"], "replay of the generated file diverged from generation"
        line = (f"{n:>6} groups  koordinator {result['events']:>7} events {result['admissions']:>7} admissions "
                f"{result['eps']:>8,.0f} ev/s {result['us_per_admission']:7.1f} µs/admission "
                f"hash {result['hash'][:8]}…")
        if not args.no_kueue:
            kpath = args.workdir / f"kueue-scale-{n}.ndjson"
            kgen = generate_kueue(n, kpath, False, args.pods)
            kueue = best_replay(kpath, args.passes)
            assert kueue["hash"] == kgen["hash"]
            line += (f" | kueue {kueue['events']:>7} events {kueue['eps']:>8,.0f} ev/s "
                     f"{kueue['us_per_admission']:7.1f} µs/admission | ratio {result['eps'] / kueue['eps']:.2f}")
        print(line, flush=True)
        rows.append((n, result))
    if len(rows) > 1:
        base = rows[0][1]["us_per_admission"]
        for n, result in rows[1:]:
            print(f"µs/admission at {n} groups = {result['us_per_admission'] / base:.2f} × that at {rows[0][0]} groups")


if __name__ == "__main__":
    main()
