"""Cost of a deep Cohort parent chain: build it (top-down or bottom-up), then admit through it.

    .venv/bin/python benchmarks/deep_cohort_chain.py --depth 20000 --order top-down
    .venv/bin/python benchmarks/deep_cohort_chain.py --depth 20000 --order bottom-up

Prints the seconds to apply the chain's events (one ``Applied`` Cohort per level, a ClusterQueue at
the bottom and one Workload admitted through the whole chain) and the per-level cost.  Results are in
docs/benchmarks.md ("Deep cohort chains").
"""

from __future__ import annotations

import argparse
import time

from statemodel.engine import Engine
from statemodel.events.decode import parse_event

V2 = "kueue.x-k8s.io/v1beta2"


def chain_events(depth: int, order: str) -> list[dict]:
    """``c0`` (root, 1 cpu) <- ``c1`` <- ... <- ``c{depth-1}`` <- ClusterQueue ``leaf``; a 1-cpu Workload."""
    def cohort(i: int) -> dict:
        spec: dict = {"parentName": f"c{i - 1}"} if i else {"resourceGroups": [
            {"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": "1"}]}]}]}
        return {"apiVersion": V2, "kind": "Cohort", "metadata": {"name": f"c{i}"}, "spec": spec}

    objs = [{"apiVersion": V2, "kind": "ResourceFlavor", "metadata": {"name": "default"}}]
    levels = range(depth) if order == "top-down" else range(depth - 1, -1, -1)
    objs += [cohort(i) for i in levels]
    objs.append({"apiVersion": V2, "kind": "ClusterQueue", "metadata": {"name": "leaf"}, "spec": {
        "cohortName": f"c{depth - 1}", "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "0"}]}]}]}})
    objs.append({"apiVersion": V2, "kind": "LocalQueue", "metadata": {"name": "q", "namespace": "ns"},
                 "spec": {"clusterQueue": "leaf"}})
    objs.append({"apiVersion": V2, "kind": "Workload", "metadata": {"name": "w", "namespace": "ns"},
                 "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 1, "requests": {"cpu": "1"}}]}})
    return [{"id": f"e{i}", "time": i, "type": "Applied", "object": o} for i, o in enumerate(objs)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=20_000)
    parser.add_argument("--order", choices=("top-down", "bottom-up"), default="top-down")
    args = parser.parse_args()
    events = [parse_event(raw) for raw in chain_events(args.depth, args.order)]
    engine = Engine()
    start = time.perf_counter()
    decisions = []
    for event in events:
        decisions += engine.apply(event)
    elapsed = time.perf_counter() - start
    kinds = [str(d.to_json()["type"]) for d in decisions]
    print(f"depth {args.depth} {args.order}: {elapsed:.2f} s ({elapsed / args.depth * 1e6:.1f} us per level); "
          f"decisions {kinds}")


if __name__ == "__main__":
    main()
