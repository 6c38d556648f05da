"""Generated quota tree (replay.sim.quota_tree) and Kueue manifest loading/writing (replay.sim.manifests)."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from replay.sim.importers.jobs import ImportResult, Job
from replay.sim.manifests import QuotaConfigError, load_manifests, queue_names, write_manifests
from replay.sim.quota_tree import QuotaRule, generate_quota, parse_scale, time_weighted

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


def test_the_tree_total_is_a_percentile_of_the_whole_demand_not_its_peak() -> None:
    # whole demand: 3 on [0,25), 7 on [25,50), 5 on [50,75), 1 on [75,100) (grp + grp2; j4 never ran)
    def cpu(config, kind, name):
        spec = _objects(config, kind)[name]["spec"]
        return {r["name"]: r for g in spec.get("resourceGroups", []) for f in g["flavors"] for r in f["resources"]}["cpu"]

    # p50 of the whole demand is 3 (levels 1, 3, 5, 7 a quarter each): the ClusterQueues' medians
    # 2 + 1 fill it, the pool gets no top-up (it wanted p95 7 - 3 = 4), nothing to borrow from the root
    tight = generate_quota(_trace(), QuotaRule(total_percentile=50))
    assert cpu(tight, "ClusterQueue", "pool-grp")["nominalQuota"] == "2"
    assert cpu(tight, "Cohort", "root-pool") == {"name": "cpu", "nominalQuota": "0", "borrowingLimit": "0",
                                                 "lendingLimit": "0"}
    assert cpu(tight, "Cohort", "root") == {"name": "cpu", "nominalQuota": "0"}
    # p25 = 1 < the medians' sum 3: each median x 1/3, rounded down to a millicore (2000m -> 666m,
    # 1000m -> 333m); borrowing still reaches each peak; the pool's top-up (p95 7000m - 999m) gets the 1m
    # left of the total, so the root holds nothing
    tiny = generate_quota(_trace(), QuotaRule(total_percentile=25))
    assert cpu(tiny, "ClusterQueue", "pool-grp") == {"name": "cpu", "nominalQuota": "666m", "borrowingLimit": "5334m",
                                                     "lendingLimit": "333m"}
    assert cpu(tiny, "ClusterQueue", "pool-grp2")["nominalQuota"] == "333m"
    assert cpu(tiny, "Cohort", "root-pool")["nominalQuota"] == "1m"
    assert cpu(tiny, "Cohort", "root")["nominalQuota"] == "0"
    # a node inventory caps the total: 5 cpu of capacity < p99 7 -> the pool's top-up 4 shrinks to
    # the 5 - 3 = 2 left, it may borrow min(peak 7, 5) - 5 = 0
    capped = _trace()
    capped.capacity = {"f": {"cpu": 5000}}
    assert cpu(generate_quota(capped), "Cohort", "root-pool") == {"name": "cpu", "nominalQuota": "2",
                                                                   "borrowingLimit": "0", "lendingLimit": "2"}


def test_quota_scale_multiplies_every_generated_quota() -> None:
    def quotas(config):
        return {(o["kind"], o["metadata"]["name"]): r for o in config.objects if o["kind"] in ("Cohort", "ClusterQueue")
                for g in o["spec"].get("resourceGroups", []) for f in g["flavors"] for r in f["resources"]}

    half = quotas(generate_quota(_trace(), QuotaRule(scale=parse_scale("0.5"))))
    # the rule's numbers (default: total p99 = 7): grp 2 / 4 / 1, grp2 1 / 0 / 500m, pool 4 / 0 / 4, root 0
    assert half[("ClusterQueue", "pool-grp")] == {"name": "cpu", "nominalQuota": "1", "borrowingLimit": "2",
                                                   "lendingLimit": "500m"}
    assert half[("ClusterQueue", "pool-grp2")] == {"name": "cpu", "nominalQuota": "500m", "borrowingLimit": "0",
                                                    "lendingLimit": "250m"}
    assert half[("Cohort", "root-pool")] == {"name": "cpu", "nominalQuota": "2", "borrowingLimit": "0",
                                             "lendingLimit": "2"}
    # 1.5 x 500m = 750m; 1.5 x 1 cpu = 1500m
    loose = quotas(generate_quota(_trace(), QuotaRule(scale=parse_scale("1.5"))))
    assert loose[("ClusterQueue", "pool-grp2")]["lendingLimit"] == "750m"
    assert loose[("ClusterQueue", "pool-grp2")]["nominalQuota"] == "1500m"
    assert "every quota x 1.5" in generate_quota(_trace(), QuotaRule(scale=parse_scale("1.5"))).notes[1]
    for bad in ("0", "-1", "x", "1/0"):
        with pytest.raises(ValueError, match="--quota-scale"):
            parse_scale(bad)


def test_a_tighter_scale_keeps_jobs_waiting_in_the_simulation(tmp_path: Path) -> None:
    from replay.sim.simulator import simulate

    # scale 1: grp may use 2 + 4 = 6 cpu, grp2 1 cpu, the tree 7: j1, j2 and j3 run when they arrive.
    # scale 0.5: grp may use 1 + 2 = 3 cpu < j2's 4 cpu, grp2 500m < j3's 1 cpu: only j1 is admitted.
    loose = simulate(_trace(), generate_quota(_trace()), tmp_path / "a.ndjson", tick_ms=0)
    assert (loose.admitted, loose.pending_at_end) == (3, 0)
    assert all(loose.admitted_at[k] == job.submit_ms for k, job in loose.job_of.items() if k in loose.admitted_at)
    tight = simulate(_trace(), generate_quota(_trace(), QuotaRule(scale=Fraction(1, 2))), tmp_path / "b.ndjson",
                     tick_ms=0)
    assert (tight.admitted, tight.pending_at_end) == (1, 2)
    assert sorted(k.split("/")[1] for k in tight.admitted_at) == ["j1"]


def test_a_cluster_queue_named_like_the_root_cohort_keeps_its_own_quota() -> None:
    # one-level tenants sit directly under the root cohort; the tenant "lab" of the trace "lab"
    # makes a ClusterQueue and a Cohort both named "lab", which must not add their quotas together
    jobs = [Job("a", 0, None, ("lab",), 1, (("cpu", 2000),), "f", 0),                # [0, 100) 2 cpu
            Job("b", 80 * S, None, ("lab",), 1, (("cpu", 4000),), "f", 80 * S),       # [80, 100) 4 cpu
            Job("c", 0, None, ("other",), 1, (("cpu", 1000),), "f", 0)]               # [0, 100) 1 cpu
    config = generate_quota(ImportResult("lab", jobs, [], 0, 100 * S))
    cohorts, cqs = _objects(config, "Cohort"), _objects(config, "ClusterQueue")
    assert list(cohorts) == ["lab"] and list(cqs) == ["lab", "other"]
    assert cqs["lab"]["spec"]["cohortName"] == "lab"

    def quota(obj):
        return obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]

    # ClusterQueue lab: 2 cpu for 80 % of the span, 6 for 20 % -> p50 2, peak 6: borrow 4, lend 1
    assert quota(cqs["lab"]) == {"name": "cpu", "nominalQuota": "2", "borrowingLimit": "4", "lendingLimit": "1"}
    assert quota(cqs["other"]) == {"name": "cpu", "nominalQuota": "1", "borrowingLimit": "0", "lendingLimit": "500m"}
    # the tree holds the p99 of 3 (80 %) / 7 (20 %) = 7; the root cohort lab holds 7 - (2 + 1) = 4
    assert quota(cohorts["lab"]) == {"name": "cpu", "nominalQuota": "4"}
