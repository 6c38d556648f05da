"""``statemodel.events.kueue``: the kueue.x-k8s.io parsers, called through their ``KINDS`` table.

Expected values are worked out by hand from Kueue's API (v1beta2) and Kubernetes' effective pod
request rule (``max(sum(containers) + sum(sidecars), max(init + earlier sidecars)) + overhead``).
"""

from __future__ import annotations

from typing import Any

import pytest

from statemodel.errors import EventError
from statemodel.events import kueue
from statemodel.objects import (
    AdmissionMode,
    BorrowWithinCohortPolicy,
    ClusterQueue,
    FlavorFungibilityPolicy,
    LocalQueue,
    PodSet,
    Preemption,
    PreemptionPolicy,
    QueueingStrategy,
    ResourceFlavor,
    StopPolicy,
)

GI = 2**30
T0 = 1_772_357_405_000


def parse(kind: str, spec: Any = None, namespace: str | None = None, name: str = "x") -> Any:
    parser, namespaced = kueue.KINDS[kueue.API_VERSION][kind]
    assert namespaced == (namespace is not None)
    o: dict = {"apiVersion": kueue.API_VERSION, "kind": kind, "metadata": {"name": name}}
    if namespace is not None:
        o["metadata"]["namespace"] = namespace
    if spec is not None:
        o["spec"] = spec
    return parser(o, name, T0)


def error(kind: str, spec: Any, namespace: str | None = None) -> tuple[str, str]:
    with pytest.raises(EventError) as ei:
        parse(kind, spec, namespace)
    return ei.value.path, ei.value.problem


def test_kinds_of_the_group() -> None:
    assert kueue.API_VERSION == "kueue.x-k8s.io/v1beta2"
    assert {kind: namespaced for kind, (_, namespaced) in kueue.KINDS[kueue.API_VERSION].items()} == {
        "ResourceFlavor": False, "Cohort": False, "ClusterQueue": False, "LocalQueue": True, "Workload": True}


def test_resource_flavor_labels_sorted() -> None:
    assert parse("ResourceFlavor", {"nodeLabels": {"zone": "b", "arch": "arm64"}}, name="arm") == ResourceFlavor(
        "arm", (("arch", "arm64"), ("zone", "b")))


@pytest.mark.parametrize(("spec", "attr", "member"), [
    ({}, "queueing_strategy", QueueingStrategy.BEST_EFFORT_FIFO),
    ({"queueingStrategy": "StrictFIFO"}, "queueing_strategy", QueueingStrategy.STRICT_FIFO),
    ({}, "stop_policy", StopPolicy.NONE),
    ({"stopPolicy": "HoldAndDrain"}, "stop_policy", StopPolicy.HOLD_AND_DRAIN),
    ({"admissionScope": {"admissionMode": "UsageBasedAdmissionFairSharing"}}, "admission_mode",
     AdmissionMode.USAGE_BASED_ADMISSION_FAIR_SHARING),
])
def test_cluster_queue_policies_are_enum_members(spec: dict, attr: str, member: Any) -> None:
    value = getattr(parse("ClusterQueue", spec), attr)
    assert value is member
    assert value == str(member)  # the member is its API string


def test_cluster_queue_preemption_and_fungibility() -> None:
    cq = parse("ClusterQueue", {
        "cohortName": "org",
        "preemption": {"withinClusterQueue": "LowerOrNewerEqualPriority", "reclaimWithinCohort": "Any",
                       "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 5}},
        "flavorFungibility": {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor",
                              "preference": "PreemptionOverBorrowing"},
    })
    assert cq.preemption == Preemption(PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY, PreemptionPolicy.ANY,
                                       BorrowWithinCohortPolicy.LOWER_PRIORITY, 5)
    assert type(cq.preemption.reclaim_within_cohort) is PreemptionPolicy
    assert cq.flavor_fungibility.when_can_borrow is FlavorFungibilityPolicy.TRY_NEXT_FLAVOR
    assert cq == ClusterQueue("x", "org", (), preemption=cq.preemption, flavor_fungibility=cq.flavor_fungibility)


@pytest.mark.parametrize(("spec", "path", "problem"), [
    ({"queueingStrategy": "FIFO"}, "object.spec.queueingStrategy",
     "unsupported value 'FIFO': must be one of BestEffortFIFO, StrictFIFO"),
    ({"preemption": {"reclaimWithinCohort": "LowerOrNewerEqualPriority"}}, "object.spec.preemption.reclaimWithinCohort",
     "unsupported value 'LowerOrNewerEqualPriority': must be one of Never, LowerPriority, Any"),
    ({"preemption": {"withinClusterQueue": "Any"}}, "object.spec.preemption.withinClusterQueue",
     "unsupported value 'Any': must be one of Never, LowerPriority, LowerOrNewerEqualPriority"),
    ({"preemption": {"borrowWithinCohort": {"policy": "LowerPriority"}}}, "object.spec.preemption",
     "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never"),
    ({"flavorFungibility": {"whenCanBorrow": "Borrow"}}, "object.spec.flavorFungibility.whenCanBorrow",
     "unsupported value 'Borrow': must be one of MayStopSearch, TryNextFlavor"),  # a v1beta1 value, not v1beta2
    ({"stopPolicy": 1}, "object.spec.stopPolicy", "must be a string"),
    ({"cohort": "org", "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
        {"name": "f", "resources": [{"name": "cpu", "nominalQuota": 1, "borrowingLimit": 1}]}]}]},
     "object.spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit", "must be nil when cohort is empty"),
])
def test_cluster_queue_rejections(spec: dict, path: str, problem: str) -> None:
    assert error("ClusterQueue", spec) == (path, problem)


def test_local_queue() -> None:
    assert parse("LocalQueue", {"clusterQueue": "cq", "stopPolicy": "Hold"}, "ns", "lq") == LocalQueue(
        "ns", "lq", "cq", 1000, StopPolicy.HOLD, None)
    assert error("LocalQueue", {}, "ns") == ("object.spec.clusterQueue", "required")


def _container(requests: dict | None = None, limits: dict | None = None, **extra: Any) -> dict:
    resources = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": "c", "resources": resources, **extra}


def _workload(pod_set: dict) -> tuple[PodSet, ...]:
    return parse("Workload", {"queueName": "q", "podSets": [pod_set]}, "ns").pod_sets


@pytest.mark.parametrize(("pod_set", "expected"), [
    pytest.param({"requests": {"cpu": "1", "memory": 0}}, PodSet("main", 1, (("cpu", 1000),)),
                 id="defaults-and-zero-dropped"),
    pytest.param({"name": "w", "count": 3, "minCount": 2, "requests": {"nvidia.com/gpu": 2}},
                 PodSet("w", 3, (("nvidia.com/gpu", 2),), 2), id="count-and-min-count"),
    pytest.param({"template": {"spec": {"containers": [_container({"cpu": "1", "memory": "1Gi"}), _container(None, {"cpu": "2"})]}}},
                 PodSet("main", 1, (("cpu", 3000), ("memory", GI))), id="limits-fill-missing-requests"),
    pytest.param({"template": {"spec": {"containers": [_container({"cpu": "500m"}, {"cpu": "2"})]}}},
                 PodSet("main", 1, (("cpu", 500),)), id="request-beats-limit"),
    pytest.param({"template": {"spec": {"initContainers": [_container({"cpu": "4"})], "containers": [_container({"cpu": "1"})]}}},
                 PodSet("main", 1, (("cpu", 4000),)), id="init-container-peak"),
    pytest.param({"template": {"spec": {
        "initContainers": [_container({"cpu": "1"}, restartPolicy="Always"), _container({"cpu": "2"})],
        "containers": [_container({"cpu": "1"})]}}},
                 PodSet("main", 1, (("cpu", 3000),)), id="sidecar-counts-in-both"),
    pytest.param({"template": {"spec": {"containers": [_container({"cpu": "1"})], "overhead": {"cpu": "100m"}}}},
                 PodSet("main", 1, (("cpu", 1100),)), id="overhead-added"),
])
def test_pod_set_request_rules(pod_set: dict, expected: PodSet) -> None:
    assert _workload(pod_set) == (expected,)


@pytest.mark.parametrize(("pod_set", "path", "problem"), [
    ({"requests": {"cpu": 1}, "template": {"spec": {}}}, "object.spec.podSets[0]", "give either requests or template, not both"),
    ({"name": "w"}, "object.spec.podSets[0]", "one of requests or template is required"),
    ({"count": 2, "minCount": 3, "requests": {"cpu": 1}}, "object.spec.podSets[0].minCount",
     "must be less than or equal to count (2)"),
    ({"requests": {"": 1}}, "object.spec.podSets[0].requests", "resource name must not be empty"),
    ({"template": {"spec": {"containers": [_container(None, {"memory": "x"})]}}},
     "object.spec.podSets[0].template.spec.containers[0].resources.limits[memory]", "invalid quantity 'x'"),
])
def test_pod_set_rejections(pod_set: dict, path: str, problem: str) -> None:
    assert error("Workload", {"queueName": "q", "podSets": [pod_set]}, "ns") == (path, problem)


def test_workload_defaults_from_the_event() -> None:
    w = parse("Workload", {"queueName": "q", "priority": 7, "podSets": [{"requests": {"cpu": 1}}]}, "ns", "w")
    assert (w.key, w.uid, w.creation_ms, w.queue_name, w.priority, w.admission) == ("ns/w", "ns/w", T0, "q", 7, None)
