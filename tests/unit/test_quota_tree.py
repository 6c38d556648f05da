"""Generated quota tree (replay.sim.quota_tree) and Kueue manifest loading/writing (replay.sim.manifests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay.sim.importers.jobs import ImportResult, Job
from replay.sim.manifests import QuotaConfigError, load_manifests, queue_names, write_manifests
from replay.sim.quota_tree import QuotaRule, generate_quota, time_weighted

S = 1000  # ms per second


def _trace() -> ImportResult:
    # span 0 .. 100 s; cpu only
    jobs = [
        Job("j1", 0, 50 * S, ("pool", "grp", "t1"), 1, (("cpu", 2000),), "f", 0),          # [0, 50) 2 cpu
        Job("j2", 25 * S, 50 * S, ("pool", "grp", "t2"), 2, (("cpu", 2000),), "f", 25 * S),  # [25, 75) 2 x 2 = 4 cpu
        Job("j3", 0, None, ("pool", "grp2", "t3"), 1, (("cpu", 1000),), "f", 0),            # [0, 100) 1 cpu
        Job("j4", 10 * S, None, ("pool", "grp2", "t3"), 1, (("cpu", 9000),), "f", None, delete_ms=20 * S),  # never ran
    ]
    return ImportResult("Root", jobs, [], 0, 100 * S)


def _objects(config, kind):
    return {o["metadata"]["name"]: o for o in config.objects if o["kind"] == kind}


def test_time_weighted_percentiles_and_peak() -> None:
    # level 2 on [0,25), 6 on [25,50), 4 on [50,75), 0 on [75,100): each a quarter of the span
    changes = [(0, 2), (50, -2), (25, 4), (75, -4)]
    assert time_weighted(changes, (0, 100), [50, 75, 95, 100]) == ([2, 4, 6, 6], 6)
    assert time_weighted([], (0, 100), [50]) == ([0], 0)


def test_generated_tree_follows_the_documented_rule() -> None:
    config = generate_quota(_trace(), QuotaRule(pool_percentile=75))
    assert queue_names("Root", ("pool", "grp", "t1")) == (["root", "root-pool"], "pool-grp", ("t1", "pool-grp"))
    cohorts = _objects(config, "Cohort")
    cqs = _objects(config, "ClusterQueue")
    assert list(cohorts) == ["root", "root-pool"]
    assert list(cqs) == ["pool-grp", "pool-grp2"]
    assert sorted((o["metadata"]["namespace"], o["metadata"]["name"], o["spec"]["clusterQueue"])
                  for o in config.objects if o["kind"] == "LocalQueue") == \
        [("t1", "pool-grp", "pool-grp"), ("t2", "pool-grp", "pool-grp"), ("t3", "pool-grp2", "pool-grp2")]

    def quota(obj):
        return obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]

    # grp: demand 2, 6, 4, 0 cpu a quarter each -> p50 = 2, peak 6: nominal 2, borrow 6 - 2 = 4, lend floor(2 x 0.5) = 1
    assert quota(cqs["pool-grp"]) == {"name": "cpu", "nominalQuota": "2", "borrowingLimit": "4", "lendingLimit": "1"}
    # grp2: 1 cpu all the time (j4 never ran: no demand) -> nominal 1, borrow 0,
    # lend = floor in base units: 1000m x 0.5 = 500m
    assert quota(cqs["pool-grp2"]) == {"name": "cpu", "nominalQuota": "1", "borrowingLimit": "0", "lendingLimit": "500m"}
    # pool: 3, 7, 5, 1 -> p75 = 5; own = 5 - (2 + 1) = 2; borrow = peak 7 - max(5, 3) = 2; lend = own = 2
    assert quota(cohorts["root-pool"]) == {"name": "cpu", "nominalQuota": "2", "borrowingLimit": "2", "lendingLimit": "2"}
    # root: the reserve = the pools' borrowing limits = 2
    assert quota(cohorts["root"]) == {"name": "cpu", "nominalQuota": "2"}
    assert cohorts["root-pool"]["spec"]["parentName"] == "root"
    assert cqs["pool-grp"]["spec"]["cohortName"] == "root-pool"
    assert cqs["pool-grp"]["spec"]["admissionScope"] == {"admissionMode": "UsageBasedAdmissionFairSharing"}
    engine_config = config.objects[0]
    assert engine_config["kind"] == "EngineConfig"
    assert engine_config["spec"]["admissionFairSharing"] == {
        "usageHalfLifeTime": "168h", "usageSamplingInterval": "5m", "resourceWeights": {"cpu": 1}}
    assert _objects(config, "ResourceFlavor") == {"f": {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                                                        "metadata": {"name": "f"},
                                                        "spec": {"nodeLabels": {"quotaledger.io/pool": "f"}}}}
    # default p95: pool p95 = 7 -> own 4, borrow 0, root 0
    default = generate_quota(_trace())
    assert quota(_objects(default, "Cohort")["root-pool"])["nominalQuota"] == "4"
    assert quota(_objects(default, "Cohort")["root"])["nominalQuota"] == "0"


def test_flavor_free_jobs_are_shared_over_node_flavors_by_capacity() -> None:
    jobs = [Job("g", 0, None, ("q", "u"), 1, (("cpu", 1000), ("nvidia.com/gpu", 4)), None, 0),
            Job("c", 0, None, ("q", "u"), 1, (("cpu", 3000),), None, 0)]
    capacity = {"cpu-only": {"cpu": 8000, "nvidia.com/gpu": 0}, "gpu-a": {"cpu": 8000, "nvidia.com/gpu": 3},
                "gpu-b": {"cpu": 16000, "nvidia.com/gpu": 1}}
    trace = ImportResult("r", jobs, [], 0, 10 * S, capacity=capacity)
    cq = _objects(generate_quota(trace), "ClusterQueue")["q"]
    flavors = {f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]}
               for f in cq["spec"]["resourceGroups"][0]["flavors"]}
    # GPU job: gpu-a / gpu-b by GPU capacity 3 : 1 -> 3 and 1 GPUs, 0.75 and 0.25 cpu.
    # CPU job: all flavors by cpu capacity 8 : 8 : 16 -> 0.75, 0.75, 1.5 cpu.
    assert flavors == {"cpu-only": {"cpu": "750m", "nvidia.com/gpu": "0"},
                       "gpu-a": {"cpu": "1500m", "nvidia.com/gpu": "3"},
                       "gpu-b": {"cpu": "1750m", "nvidia.com/gpu": "1"}}
    assert list(flavors) == ["cpu-only", "gpu-a", "gpu-b"]  # node flavor order


def test_written_manifests_load_back_identically(tmp_path: Path) -> None:
    config = generate_quota(_trace())
    files = write_manifests(config, tmp_path / "q", header="generated\nfor a test")
    assert [p.name for p in files] == ["00-engine-config.yaml", "10-resource-flavors.yaml", "20-cohorts.yaml",
                                       "30-cluster-queues.yaml", "40-local-queues.yaml"]
    assert files[0].read_text().startswith("# generated\n# for a test\napiVersion: v1\nkind: List\n")
    loaded = load_manifests(tmp_path / "q", "Root")
    assert loaded.objects == config.objects
    job = _trace().jobs[2]
    assert loaded.local_queue(job) == ("t3", "pool-grp2")
    assert loaded.admission(job) == {"clusterQueue": "pool-grp2", "podSetAssignments": [
        {"name": "main", "count": 1, "flavors": {"cpu": "f"}, "resourceUsage": {"cpu": "1"}}]}


def test_user_manifests_kubectl_style(tmp_path: Path) -> None:
    d = tmp_path / "m"
    d.mkdir()
    (d / "b-queues.yaml").write_text("""
apiVersion: v1
kind: List
items:
- apiVersion: kueue.x-k8s.io/v1beta2
  kind: LocalQueue
  metadata: {name: cq-a, namespace: t1, managedFields: [{manager: kubectl}]}
  spec: {clusterQueue: cq-a}
- apiVersion: kueue.x-k8s.io/v1beta2
  kind: ClusterQueue
  metadata: {name: cq-a, resourceVersion: "12"}
  spec:
    cohortName: org
    resourceGroups:
    - coveredResources: [cpu]
      flavors: [{name: on-demand, resources: [{name: cpu, nominalQuota: "4"}]}]
  status: {pendingWorkloads: 0}
""")
    (d / "a-flavors.yml").write_text("""
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: on-demand}
---
apiVersion: v1
kind: Namespace
metadata: {name: t1}
""")
    config = load_manifests(d, "org")
    assert [(o["kind"], o["metadata"]["name"]) for o in config.objects] == [
        ("ResourceFlavor", "on-demand"), ("ClusterQueue", "cq-a"), ("LocalQueue", "cq-a")]
    assert "managedFields" not in config.objects[2]["metadata"]
    assert any("skipped Namespace 't1'" in n for n in config.notes)
    assert config.has_local_queue(("t1", "cq-a"))
    (d / "c-bad.yaml").write_text("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: x}\n"
                                  "spec: {queueingStrategy: Sometimes}\n")
    with pytest.raises(QuotaConfigError, match="c-bad.yaml: ClusterQueue 'x': object.spec.queueingStrategy"):
        load_manifests(d, "org")
    with pytest.raises(QuotaConfigError, match="not a directory"):
        load_manifests(tmp_path / "nope", "org")
