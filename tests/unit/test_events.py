"""Tests of statemodel.events.decode: event validation and typed payloads (EVENTS.md v1).

Expected amounts are computed by hand: cpu in millicores, memory in bytes (Gi = 2**30), and
Kubernetes effective pod requests = max(sum(containers) + sidecars, max over init containers of
(own + earlier sidecars)) + overhead.
"""

from __future__ import annotations

import copy

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from statemodel.errors import EventError
from statemodel.events.decode import decode_event, parse_event
from statemodel.objects import (
    Admission,
    AdmissionFairSharingConfig,
    AdmissionFairSharingStatus,
    ClusterQueue,
    Cohort,
    EngineConfig,
    FlavorFungibility,
    FlavorQuotas,
    LocalQueue,
    Node,
    ObjectRef,
    PodSet,
    PodSetAssignment,
    Preemption,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    Taint,
    Workload,
)

GI = 2**30
T0 = 1_772_357_405_000  # 2026-03-01T09:30:05Z
V2 = "kueue.x-k8s.io/v1beta2"
V1 = "kueue.x-k8s.io/v1beta1"
DELETE = object()


def applied(obj: dict, **extra) -> dict:
    return {"id": "e-1", "time": "2026-03-01T09:30:05Z", "type": "Applied", "object": obj, **extra}


def mutate(raw: dict, path: str, value) -> dict:
    """Deep copy of ``raw`` with the dotted ``path`` (list indices as numbers) set to ``value`` or deleted."""
    out = copy.deepcopy(raw)
    keys = [int(k) if k.isdigit() else k for k in path.split(".")]
    node = out
    for k in keys[:-1]:
        if isinstance(k, str) and k not in node:
            node[k] = {}
        node = node[k]
    if value is DELETE:
        del node[keys[-1]]
    else:
        node[keys[-1]] = value
    return out


def error_of(raw) -> EventError:
    with pytest.raises(EventError) as ei:
        parse_event(raw)
    return ei.value


CQ = {
    "apiVersion": V2,
    "kind": "ClusterQueue",
    "metadata": {"name": "team-a"},
    "spec": {
        "cohortName": "org",
        "resourceGroups": [
            {
                "coveredResources": ["cpu", "memory"],
                "flavors": [
                    {
                        "name": "on-demand",
                        "resources": [
                            {"name": "cpu", "nominalQuota": "10", "borrowingLimit": "5", "lendingLimit": "2"},
                            {"name": "memory", "nominalQuota": "64Gi"},
                        ],
                    },
                    {
                        "name": "spot",
                        "resources": [
                            {"name": "cpu", "nominalQuota": 20},
                            {"name": "memory", "nominalQuota": "128Gi", "lendingLimit": "0"},
                        ],
                    },
                ],
            },
            {
                "coveredResources": ["nvidia.com/gpu"],
                "flavors": [{"name": "a100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}]}],
            },
        ],
    },
}

COHORT = {
    "apiVersion": V2,
    "kind": "Cohort",
    "metadata": {"name": "org"},
    "spec": {
        "parentName": "root",
        "resourceGroups": [
            {
                "coveredResources": ["cpu"],
                "flavors": [{"name": "on-demand", "resources": [{"name": "cpu", "nominalQuota": "4", "lendingLimit": "8"}]}],
            }
        ],
        "fairSharing": {"weight": "2"},
    },
}

LQ = {
    "apiVersion": V2,
    "kind": "LocalQueue",
    "metadata": {"name": "lq", "namespace": "team-a"},
    "spec": {"clusterQueue": "team-a"},
}

WL = {
    "apiVersion": V2,
    "kind": "Workload",
    "metadata": {"name": "train-7", "namespace": "team-a"},
    "spec": {
        "queueName": "lq",
        "podSets": [
            {
                "name": "main",
                "count": 4,
                "template": {
                    "spec": {
                        "containers": [
                            {"name": "c1", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
                            {"name": "c2", "resources": {"requests": {"cpu": "1500m", "nvidia.com/gpu": "1"}}},
                        ]
                    }
                },
            }
        ],
    },
}

ADMISSION = {
    "clusterQueue": "team-a",
    "podSetAssignments": [
        {
            "name": "main",
            "flavors": {"cpu": "on-demand", "memory": "on-demand", "nvidia.com/gpu": "a100"},
            "resourceUsage": {"cpu": "8", "memory": "4Gi", "nvidia.com/gpu": "4"},
            "count": 4,
        }
    ],
}
ADMISSION_VALUE = Admission(
    "team-a",
    (
        PodSetAssignment(
            "main",
            (("cpu", "on-demand"), ("memory", "on-demand"), ("nvidia.com/gpu", "a100")),
            (("cpu", 8000), ("memory", 4 * GI), ("nvidia.com/gpu", 4)),
            4,
        ),
    ),
)


# ----------------------------------------------------------------------------- envelope


def test_envelope_defaults_and_canonical():
    raw = {"type": "Tick", "time": "2026-03-01T09:30:05Z", "id": "t-1"}
    ev = parse_event(raw)
    assert (ev.id, ev.time_ms, ev.cluster, ev.type) == ("t-1", T0, "default", "Tick")
    assert ev.canonical == b'{"id":"t-1","time":"2026-03-01T09:30:05Z","type":"Tick"}'
    assert parse_event(raw, default_cluster="prod").cluster == "prod"
    ev = parse_event({**raw, "cluster": "prod-a", "v": 1, "extra": {"ignored": True}})
    assert ev.cluster == "prod-a"


def test_canonical_ignores_key_order_and_whitespace():
    a = decode_event(b'{"id": "x", "time": 5, "type": "Tick"}\n')
    b = decode_event('{"type":"Tick","time":5,"id":"x"}')
    assert a.canonical == b.canonical == b'{"id":"x","time":5,"type":"Tick"}'
    assert a.time_ms == 5


@pytest.mark.parametrize(
    "raw,path,problem",
    [
        ({"time": 0, "type": "Tick"}, "id", "required"),
        ({"id": "", "time": 0, "type": "Tick"}, "id", "must not be empty"),
        ({"id": 7, "time": 0, "type": "Tick"}, "id", "must be a string"),
        ({"id": "a", "type": "Tick"}, "time", "required"),
        ({"id": "a", "time": "yesterday", "type": "Tick"}, "time", "invalid RFC 3339"),
        ({"id": "a", "time": "2026-03-01T09:30:05", "type": "Tick"}, "time", "invalid RFC 3339"),
        ({"id": "a", "time": 1.5, "type": "Tick"}, "time", "must be an RFC 3339 string or integer"),
        ({"id": "a", "time": 0, "type": "Tock"}, "type", "unknown type 'Tock'"),
        ({"id": "a", "time": 0}, "type", "required"),
        ({"id": "a", "time": 0, "type": "Tick", "cluster": 3}, "cluster", "must be a string"),
        ({"id": "a", "time": 0, "type": "Tick", "cluster": ""}, "cluster", "must not be empty"),
        ({"id": "a", "time": 0, "type": "Tick", "v": 2}, "v", "must be 1"),
        ({"id": "a", "time": 0, "type": "Tick", "v": True}, "v", "must be 1"),
        ({"id": "a", "time": 0, "type": "Tick", "v": "1"}, "v", "must be 1"),
        ({"id": "a", "time": 0, "type": "Applied"}, "object", "required"),
        ({"id": "a", "time": 0, "type": "Applied", "object": []}, "object", "must be an object"),
    ],
)
def test_envelope_errors(raw, path, problem):
    err = error_of(raw)
    assert err.path == path
    assert problem in err.problem


def test_error_carries_event_id():
    assert error_of({"id": "e-9", "time": 0, "type": "Nope"}).event_id == "e-9"
    assert error_of({"time": 0, "type": "Tick"}).event_id is None


@pytest.mark.parametrize(
    "line,problem",
    [
        (b"{not json", "invalid JSON"),
        (b"", "invalid JSON"),
        (b"[1, 2]", "must be a JSON object"),
        (b'"Tick"', "must be a JSON object"),
        (b'{"id": "\xff\xfe", "time": 0, "type": "Tick"}', "invalid JSON"),
    ],
)
def test_decode_errors(line, problem):
    with pytest.raises(EventError) as ei:
        decode_event(line)
    assert ei.value.path == ""
    assert problem in ei.value.problem


# ----------------------------------------------------------------------------- kinds


def test_resource_flavor():
    ev = parse_event(
        applied({"apiVersion": V2, "kind": "ResourceFlavor", "metadata": {"name": "spot"}, "spec": {"nodeLabels": {"z": "1", "a": "2"}}})
    )
    assert ev.obj == ResourceFlavor("spot", (("a", "2"), ("z", "1")))
    ev = parse_event(applied({"apiVersion": V1, "kind": "ResourceFlavor", "metadata": {"name": "default"}}))
    assert ev.obj == ResourceFlavor("default", ())


def test_cluster_queue_full():
    raw = mutate(CQ, "spec.queueingStrategy", "StrictFIFO")
    raw = mutate(raw, "spec.preemption", {
        "withinClusterQueue": "LowerOrNewerEqualPriority",
        "reclaimWithinCohort": "Any",
        "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 100},
    })
    raw = mutate(raw, "spec.flavorFungibility", {
        "whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor", "preference": "PreemptionOverBorrowing",
    })
    raw = mutate(raw, "spec.fairSharing", {"weight": "0.5"})
    raw = mutate(raw, "spec.admissionScope", {"admissionMode": "UsageBasedAdmissionFairSharing"})
    raw = mutate(raw, "spec.stopPolicy", "Hold")
    cq = parse_event(applied(raw)).obj
    assert cq == ClusterQueue(
        name="team-a",
        cohort="org",
        resource_groups=(
            ResourceGroup(
                ("cpu", "memory"),
                (
                    FlavorQuotas("on-demand", (ResourceQuota("cpu", 10000, 5000, 2000), ResourceQuota("memory", 64 * GI))),
                    FlavorQuotas("spot", (ResourceQuota("cpu", 20000), ResourceQuota("memory", 128 * GI, None, 0))),
                ),
            ),
            ResourceGroup(("nvidia.com/gpu",), (FlavorQuotas("a100", (ResourceQuota("nvidia.com/gpu", 8),)),)),
        ),
        queueing_strategy="StrictFIFO",
        preemption=Preemption("LowerOrNewerEqualPriority", "Any", "LowerPriority", 100),
        flavor_fungibility=FlavorFungibility("TryNextFlavor", "TryNextFlavor", "PreemptionOverBorrowing"),
        fair_weight_milli=500,
        admission_mode="UsageBasedAdmissionFairSharing",
        stop_policy="Hold",
    )


def test_cluster_queue_defaults():
    cq = parse_event(applied({"apiVersion": V2, "kind": "ClusterQueue", "metadata": {"name": "x"}, "spec": {}})).obj
    assert cq == ClusterQueue("x")
    assert cq.preemption == Preemption("Never", "Never", "Never", None)
    assert cq.flavor_fungibility == FlavorFungibility("MayStopSearch", "TryNextFlavor", None)
    cq = parse_event(applied({"apiVersion": V2, "kind": "ClusterQueue", "metadata": {"name": "x"}, "spec": {"cohortName": ""}})).obj
    assert cq.cohort is None


def test_v1beta1_cluster_queue_aliases():
    raw = mutate(CQ, "apiVersion", V1)
    raw = mutate(raw, "spec.cohortName", DELETE)
    raw = mutate(raw, "spec.cohort", "org-v1")
    raw = mutate(raw, "spec.flavorFungibility", {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"})
    cq = parse_event(applied(raw)).obj
    assert cq.cohort == "org-v1"
    assert cq.flavor_fungibility == FlavorFungibility("MayStopSearch", "MayStopSearch", None)


def test_v1beta2_ignores_v1beta1_field_names():
    raw = mutate(CQ, "spec.cohortName", DELETE)
    raw = mutate(raw, "spec.cohort", "org")
    err = error_of(applied(raw))  # no cohortName: the limits become illegal
    assert err.path == "object.spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit"
    assert err.problem == "must be nil when cohort is empty"


def test_cohort_and_v1beta1_parent():
    assert parse_event(applied(COHORT)).obj == Cohort(
        "org",
        "root",
        (ResourceGroup(("cpu",), (FlavorQuotas("on-demand", (ResourceQuota("cpu", 4000, None, 8000),)),)),),
        2000,
    )
    raw = mutate(mutate(mutate(COHORT, "apiVersion", V1), "spec.parentName", DELETE), "spec.parent", "root")
    assert parse_event(applied(raw)).obj.parent == "root"
    plain = parse_event(applied({"apiVersion": V2, "kind": "Cohort", "metadata": {"name": "r"}})).obj
    assert plain == Cohort("r", None, (), 1000)


def test_local_queue():
    raw = mutate(LQ, "spec.fairSharing", {"weight": 3})
    raw = mutate(raw, "spec.stopPolicy", "HoldAndDrain")
    raw = mutate(raw, "status", {"fairSharing": {"admissionFairSharingStatus": {
        "consumedResources": {"memory": "1Gi", "cpu": "1500m"}, "lastUpdate": "2026-03-01T09:30:05Z"}}})
    lq = parse_event(applied(raw)).obj
    assert lq == LocalQueue(
        "team-a", "lq", "team-a", 3000, "HoldAndDrain",
        AdmissionFairSharingStatus((("cpu", 1500), ("memory", GI)), T0),
    )
    assert lq.key == "team-a/lq"
    assert parse_event(applied(LQ)).obj == LocalQueue("team-a", "lq", "team-a")


def test_workload_containers():
    ev = parse_event(applied(WL))
    # cpu: 0.5 + 1.5 cores; memory 1Gi; gpu 1 -- per pod.
    assert ev.obj == Workload(
        "team-a", "train-7", "team-a/train-7", T0, "lq", 0,
        (PodSet("main", 4, (("cpu", 2000), ("memory", GI), ("nvidia.com/gpu", 1))),),
    )
    assert ev.obj.key == "team-a/train-7"


def test_workload_metadata_and_requests_form():
    raw = mutate(WL, "metadata.uid", "abc-123")
    raw = mutate(raw, "metadata.creationTimestamp", "2026-03-01T09:00:00Z")
    raw = mutate(raw, "spec.priority", -5)
    raw = mutate(raw, "spec.podSets", [
        {"name": "driver", "requests": {"cpu": 1, "memory": "512Mi", "ephemeral-storage": "0"}},
        {"name": "workers", "count": 8, "minCount": 2, "requests": {"cpu": "250m"}, "topologyRequest": {"required": "rack"}},
        {"requests": {}},
    ])
    wl = parse_event(applied(raw)).obj
    assert wl.uid == "abc-123"
    assert wl.creation_ms == T0 - 30 * 60_000 - 5_000
    assert wl.priority == -5
    assert wl.pod_sets == (
        PodSet("driver", 1, (("cpu", 1000), ("memory", 512 * 2**20))),  # zero ephemeral-storage dropped
        PodSet("workers", 8, (("cpu", 250),), 2),
        PodSet("main", 1, ()),  # name defaults to "main" (Kueue CRD default)
    )


def spec_with(**pod_spec) -> dict:
    return applied(mutate(WL, "spec.podSets", [{"name": "main", "count": 1, "template": {"spec": pod_spec}}]))


def c(**requests) -> dict:
    return {"resources": {"requests": requests}}


@pytest.mark.parametrize(
    "pod_spec,expected",
    [
        # init container bigger than the sum of containers: max wins per resource
        (
            {"containers": [c(cpu="1", memory="1Gi"), c(cpu="1")], "initContainers": [c(cpu="3"), c(memory="512Mi")]},
            (("cpu", 3000), ("memory", GI)),
        ),
        # sidecar (restartPolicy Always) adds to the regular sum and to later init containers' peaks:
        # regular = 1 + 0.5 = 1.5 cores; init peaks: sidecar 0.5, later init 2 + 0.5 = 2.5 -> 2.5 cores
        (
            {
                "containers": [c(cpu="1")],
                "initContainers": [{"restartPolicy": "Always", **c(cpu="500m")}, c(cpu="2")],
            },
            (("cpu", 2500),),
        ),
        # init container before the sidecar does not see it: peaks 2 and 0.5; regular 1 + 0.5 -> 2 cores
        (
            {
                "containers": [c(cpu="1")],
                "initContainers": [c(cpu="2"), {"restartPolicy": "Always", **c(cpu="500m")}],
            },
            (("cpu", 2000),),
        ),
        # two sidecars: regular 1 + 1 + 2 = 4; init peaks 1, 3 (cumulative sidecars) -> 4
        (
            {
                "containers": [c(cpu="1")],
                "initContainers": [{"restartPolicy": "Always", **c(cpu="1")}, {"restartPolicy": "Always", **c(cpu="2")}],
            },
            (("cpu", 4000),),
        ),
        # overhead is added after the max
        ({"containers": [c(cpu="1")], "initContainers": [c(cpu="2")], "overhead": {"cpu": "250m", "memory": "64Mi"}},
         (("cpu", 2250), ("memory", 64 * 2**20))),
        # limits fill missing requests (Kueue UseLimitsAsMissingRequestsInPod); explicit requests win
        ({"containers": [{"resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "4", "memory": "2Gi"}}}]},
         (("cpu", 1000), ("memory", 2 * GI))),
        # containers without resources, zero requests dropped
        ({"containers": [{"name": "x"}, c(cpu="0", memory="0")]}, ()),
    ],
)
def test_effective_requests(pod_spec, expected):
    assert parse_event(spec_with(**pod_spec)).obj.pod_sets[0].requests == expected


def test_workload_status_admission():
    wl = parse_event(applied(mutate(WL, "status", {"admission": ADMISSION}))).obj
    assert wl.admission == ADMISSION_VALUE


def test_node():
    raw = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"zone": "a", "arch": "amd64"}},
        "spec": {"unschedulable": True, "taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}, {"key": "x", "effect": "NoExecute"}]},
        "status": {"allocatable": {"cpu": "7910m", "memory": "32Gi", "pods": "110"}},
    }
    assert parse_event(applied(raw)).obj == Node(
        "n1",
        (("arch", "amd64"), ("zone", "a")),
        (("cpu", 7910), ("memory", 32 * GI), ("pods", 110)),
        True,
        (Taint("gpu", "true", "NoSchedule"), Taint("x", "", "NoExecute")),
    )
    assert parse_event(applied({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"}})).obj == Node("n2")


def test_engine_config():
    raw = {
        "apiVersion": "quotaledger.io/v1alpha1",
        "kind": "EngineConfig",
        "metadata": {"name": "config"},
        "spec": {
            "admissionFairSharing": {"usageHalfLifeTime": "168h", "usageSamplingInterval": "1m", "resourceWeights": {"nvidia.com/gpu": 10, "cpu": 0.125}},
            "fairSharing": {"enable": True, "preemptionStrategies": ["LessThanInitialShare"]},
        },
    }
    assert parse_event(applied(raw)).obj == EngineConfig(
        AdmissionFairSharingConfig(604_800_000, 60_000, (("cpu", 125), ("nvidia.com/gpu", 10_000))),
        True,
        ("LessThanInitialShare",),
    )
    defaults = parse_event(applied(mutate(raw, "spec", {"admissionFairSharing": {}}))).obj
    assert defaults.admission_fair_sharing == AdmissionFairSharingConfig(0, 300_000, ())
    assert defaults.fair_sharing_enable is False
    # Kueue default when the list is empty
    assert defaults.preemption_strategies == ("LessThanOrEqualToFinalShare", "LessThanInitialShare")
    assert parse_event(applied(mutate(raw, "spec", {}))).obj.admission_fair_sharing is None


# ----------------------------------------------------------------------------- other types


def test_deleted_refs():
    ev = parse_event({"id": "d", "time": 0, "type": "Deleted", "object": {"apiVersion": V2, "kind": "Workload", "metadata": {"name": "w", "namespace": "ns"}}})
    assert ev.ref == ObjectRef("Workload", "ns", "w") and ev.obj is None
    ev = parse_event({"id": "d", "time": 0, "type": "Deleted", "object": {"apiVersion": V1, "kind": "ClusterQueue", "metadata": {"name": "q", "namespace": "ignored"}}})
    assert ev.ref == ObjectRef("ClusterQueue", "", "q")
    ev = parse_event({"id": "d", "time": 0, "type": "Deleted", "object": {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}})
    assert ev.ref == ObjectRef("Node", "", "n")


def test_workload_admitted_evicted_finished():
    ev = parse_event({"id": "a", "time": 0, "type": "WorkloadAdmitted", "workload": "team-a/train-7", "admission": ADMISSION})
    assert (ev.workload, ev.admission) == ("team-a/train-7", ADMISSION_VALUE)
    ev = parse_event({"id": "b", "time": 0, "type": "WorkloadEvicted", "workload": "ns/w"})
    assert (ev.workload, ev.reason) == ("ns/w", "Evicted")
    ev = parse_event({"id": "b", "time": 0, "type": "WorkloadEvicted", "workload": "ns/w", "reason": "NodeFailure"})
    assert ev.reason == "NodeFailure"
    ev = parse_event({"id": "c", "time": 0, "type": "WorkloadFinished", "workload": "ns/w"})
    assert ev.workload == "ns/w"


@pytest.mark.parametrize("key", ["nsw", "/w", "ns/", "a/b/c", "", 5, None])
def test_bad_workload_key(key):
    raw = {"id": "c", "time": 0, "type": "WorkloadFinished"}
    if key is not None:
        raw["workload"] = key
    err = error_of(raw)
    assert err.path == "workload"


def test_batch_defaults_and_canonical():
    inner_wl = applied(WL)
    del inner_wl["time"]
    raw = {
        "id": "b-1",
        "time": "2026-03-01T09:30:05Z",
        "cluster": "prod-a",
        "type": "Batch",
        "events": [inner_wl, {"id": "t", "type": "Tick", "time": 7, "cluster": "other"}],
    }
    ev = parse_event(raw)
    assert ev.type == "Batch" and len(ev.events) == 2
    first, second = ev.events
    assert (first.id, first.time_ms, first.cluster, first.obj.creation_ms) == ("e-1", T0, "prod-a", T0)
    assert (second.time_ms, second.cluster) == (7, "other")
    assert first.canonical == orjson.dumps(inner_wl, option=orjson.OPT_SORT_KEYS)
    assert second.canonical == b'{"cluster":"other","id":"t","time":7,"type":"Tick"}'
    assert ev.canonical == orjson.dumps(raw, option=orjson.OPT_SORT_KEYS)


@pytest.mark.parametrize(
    "events,path,problem",
    [
        ([], "events", "must not be empty"),
        (None, "events", "required"),
        ("x", "events", "must be a list"),
        ([{"id": "x", "type": "Tick"}, {"id": "y", "type": "Batch", "events": [{"id": "z", "type": "Tick"}]}],
         "events[1].type", "may not contain a Batch"),
        ([{"id": "x", "type": "Tick"}, {"type": "Tick"}], "events[1].id", "required"),
        ([{"id": "x", "type": "Tick"}, 3], "events[1]", "must be a JSON object"),
        ([{"id": "x", "type": "Tick"}, {"id": "y", "type": "Tick"}, {"id": "z", "type": "Tick"},
          applied(mutate(WL, "spec.podSets.0.count", -1))], "events[3].object.spec.podSets[0].count", "greater than or equal to 0"),
    ],
)
def test_batch_errors(events, path, problem):
    raw = {"id": "b-2", "time": 0, "type": "Batch"}
    if events is not None:
        raw["events"] = events
    err = error_of(raw)
    assert err.path == path
    assert problem in err.problem
    assert err.event_id == "b-2"


# ----------------------------------------------------------------------------- validation errors

RG = "object.spec.resourceGroups"

OBJECT_ERRORS = [
    # kind / apiVersion / metadata
    (CQ, "apiVersion", "kueue.x-k8s.io/v1", "object.apiVersion", "unknown apiVersion 'kueue.x-k8s.io/v1'"),
    (CQ, "apiVersion", DELETE, "object.apiVersion", "required"),
    (CQ, "kind", "Foo", "object.kind", "unknown kind 'Foo'"),
    (CQ, "kind", 3, "object.kind", "must be a string"),
    (CQ, "metadata", DELETE, "object.metadata", "required"),
    (CQ, "metadata.name", "", "object.metadata.name", "must not be empty"),
    (CQ, "metadata.name", 5, "object.metadata.name", "must be a string"),
    ({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"}}, "spec.weight", 0, "object.spec.weight", "must be greater than or equal to 1, got 0"),
    ({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"}}, "spec.parent", "q", "object.spec.parent", "a queue cannot be its own parent"),
    ({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"}}, "spec", {"deserved": {"cpu": 1}, "guarantee": {"resource": {"cpu": 2}}}, "object.spec.deserved[cpu]", "deserved 1000 is less than guarantee 2000"),
    ({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"}}, "spec", {"deserved": {"cpu": 3}, "capability": {"cpu": 2}}, "object.spec.deserved[cpu]", "deserved 3000 is greater than capability 2000"),
    ({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": "g"}}, "spec", {}, "object.metadata.namespace", "required"),
    ({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"}}, "status", {"state": "Half"}, "object.status.state", "must be one of Open, Closed, Closing, Unknown"),
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}, "spec", {}, "object.metadata.namespace", "required"),
    # resource groups
    (CQ, "spec.resourceGroups", {}, RG, "must be a list"),
    (CQ, "spec.resourceGroups.0.coveredResources", DELETE, f"{RG}[0].coveredResources", "required"),
    (CQ, "spec.resourceGroups.0.coveredResources", [], f"{RG}[0].coveredResources", "must not be empty"),
    (CQ, "spec.resourceGroups.0.coveredResources.1", 4, f"{RG}[0].coveredResources[1]", "must be a string"),
    (CQ, "spec.resourceGroups.1.coveredResources.0", "cpu", f"{RG}[1].coveredResources[0]", "duplicate resource 'cpu'"),
    (CQ, "spec.resourceGroups.1.flavors.0.name", "spot", f"{RG}[1].flavors[0].name", "duplicate flavor 'spot'"),
    (CQ, "spec.resourceGroups.0.flavors.1.name", "on-demand", f"{RG}[0].flavors[1].name", "duplicate flavor"),
    (CQ, "spec.resourceGroups.0.flavors", [], f"{RG}[0].flavors", "must not be empty"),
    (CQ, "spec.resourceGroups.0.flavors.1.resources", [{"name": "cpu", "nominalQuota": 1}], f"{RG}[0].flavors[1].resources", "coveredResources"),
    (CQ, "spec.resourceGroups.0.flavors.1.resources.0.name", "memory", f"{RG}[0].flavors[1].resources[0].name", "must be 'cpu'"),
    (CQ, "spec.resourceGroups.0.flavors.1.resources.0.nominalQuota", DELETE, f"{RG}[0].flavors[1].resources[0].nominalQuota", "required"),
    (CQ, "spec.resourceGroups.0.flavors.1.resources.0.nominalQuota", "12x", f"{RG}[0].flavors[1].resources[0].nominalQuota", "invalid quantity '12x'"),
    (CQ, "spec.resourceGroups.0.flavors.1.resources.0.nominalQuota", "-1", f"{RG}[0].flavors[1].resources[0].nominalQuota", "negative"),
    (CQ, "spec.resourceGroups.0.flavors.1.resources.1.nominalQuota", "1.5", f"{RG}[0].flavors[1].resources[1].nominalQuota", "fractional"),
    (CQ, "spec.resourceGroups.0.flavors.0.resources.0.borrowingLimit", "-2", f"{RG}[0].flavors[0].resources[0].borrowingLimit", "negative"),
    (CQ, "spec.resourceGroups.0.flavors.0.resources.0.lendingLimit", "11", f"{RG}[0].flavors[0].resources[0].lendingLimit", "must be less than or equal to nominalQuota"),
    (CQ, "spec.cohortName", DELETE, f"{RG}[0].flavors[0].resources[0].borrowingLimit", "must be nil when cohort is empty"),
    (COHORT, "spec.parentName", DELETE, f"{RG}[0].flavors[0].resources[0].lendingLimit", "must be nil when parent is empty"),
    (COHORT, "spec.fairSharing.weight", "-1", "object.spec.fairSharing.weight", "negative"),
    (COHORT, "spec.parentName", 3, "object.spec.parentName", "must be a string"),
    # ClusterQueue enums
    (CQ, "spec.queueingStrategy", "FIFO", "object.spec.queueingStrategy", "unsupported value 'FIFO'"),
    (CQ, "spec.preemption.withinClusterQueue", "Always", "object.spec.preemption.withinClusterQueue", "unsupported value"),
    (CQ, "spec.preemption.reclaimWithinCohort", "Sometimes", "object.spec.preemption.reclaimWithinCohort", "unsupported value"),
    (CQ, "spec.preemption.borrowWithinCohort", {"policy": "LowerPriority"}, "object.spec.preemption", "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never"),
    (CQ, "spec.preemption.borrowWithinCohort", {"policy": "Never", "maxPriorityThreshold": "1"}, "object.spec.preemption.borrowWithinCohort.maxPriorityThreshold", "must be an integer"),
    (CQ, "spec.flavorFungibility.whenCanBorrow", "Borrow", "object.spec.flavorFungibility.whenCanBorrow", "unsupported value 'Borrow'"),
    (CQ, "spec.flavorFungibility.whenCanPreempt", "Preempt", "object.spec.flavorFungibility.whenCanPreempt", "unsupported value 'Preempt'"),
    (CQ, "spec.flavorFungibility.preference", "BorrowingOverPreemption", "object.spec.flavorFungibility.preference", "only allowed when"),
    (CQ, "spec.admissionScope", {"admissionMode": "Fair"}, "object.spec.admissionScope.admissionMode", "unsupported value"),
    (CQ, "spec.admissionScope", {}, "object.spec.admissionScope.admissionMode", "required"),
    (CQ, "spec.stopPolicy", "Stop", "object.spec.stopPolicy", "unsupported value"),
    (CQ, "spec.fairSharing", 1, "object.spec.fairSharing", "must be an object"),
    (CQ, "spec.fairSharing.weight", "0.0001", "object.spec.fairSharing.weight", "fractional"),
    # LocalQueue
    (LQ, "metadata.namespace", DELETE, "object.metadata.namespace", "required"),
    (LQ, "metadata.namespace", "", "object.metadata.namespace", "must not be empty"),
    (LQ, "spec.clusterQueue", DELETE, "object.spec.clusterQueue", "required"),
    (LQ, "spec", DELETE, "object.spec", "required"),
    (LQ, "spec.stopPolicy", "Pause", "object.spec.stopPolicy", "unsupported value"),
    (LQ, "status", {"fairSharing": {"admissionFairSharingStatus": {"consumedResources": {"cpu": "1"}}}},
     "object.status.fairSharing.admissionFairSharingStatus.lastUpdate", "required"),
    (LQ, "status", {"fairSharing": {"admissionFairSharingStatus": {"consumedResources": {"cpu": "x"}, "lastUpdate": 0}}},
     "object.status.fairSharing.admissionFairSharingStatus.consumedResources[cpu]", "invalid quantity"),
    # Workload
    (WL, "metadata.namespace", DELETE, "object.metadata.namespace", "required"),
    (WL, "metadata.uid", 5, "object.metadata.uid", "must be a string"),
    (WL, "metadata.creationTimestamp", "2026-03-01", "object.metadata.creationTimestamp", "invalid RFC 3339"),
    (WL, "spec.queueName", DELETE, "object.spec.queueName", "required"),
    (WL, "spec.priority", "high", "object.spec.priority", "must be an integer"),
    (WL, "spec.priority", True, "object.spec.priority", "must be an integer"),
    (WL, "spec.priority", 2**31, "object.spec.priority", "less than or equal to"),
    (WL, "spec.podSets", [], "object.spec.podSets", "must not be empty"),
    (WL, "spec.podSets", DELETE, "object.spec.podSets", "required"),
    (WL, "spec.podSets.0.count", -1, "object.spec.podSets[0].count", "greater than or equal to 0"),
    (WL, "spec.podSets.0.count", 1.0, "object.spec.podSets[0].count", "must be an integer"),
    (WL, "spec.podSets.0.minCount", 5, "object.spec.podSets[0].minCount", "less than or equal to count (4)"),
    (WL, "spec.podSets.0.minCount", 0, "object.spec.podSets[0].minCount", "greater than or equal to 1"),
    (WL, "spec.podSets.0.name", "", "object.spec.podSets[0].name", "must not be empty"),
    (WL, "spec.podSets.0.requests", {"cpu": "1"}, "object.spec.podSets[0]", "not both"),
    (WL, "spec.podSets.0.template", DELETE, "object.spec.podSets[0]", "one of requests or template is required"),
    (WL, "spec.podSets.0.template.spec", DELETE, "object.spec.podSets[0].template.spec", "required"),
    (WL, "spec.podSets.0.template.spec.containers.1.resources.requests.cpu", "1.5.0",
     "object.spec.podSets[0].template.spec.containers[1].resources.requests[cpu]", "invalid quantity '1.5.0'"),
    (WL, "spec.podSets.0.template.spec.containers.0.resources.requests.memory", "0.5",
     "object.spec.podSets[0].template.spec.containers[0].resources.requests[memory]", "fractional"),
    (WL, "spec.podSets.0.template.spec.containers.0.resources.limits", {"cpu": "-1"},
     "object.spec.podSets[0].template.spec.containers[0].resources.limits[cpu]", "negative"),
    (WL, "spec.podSets.0.template.spec.containers.0.resources", [],
     "object.spec.podSets[0].template.spec.containers[0].resources", "must be an object"),
    (WL, "spec.podSets.0.template.spec.containers", {}, "object.spec.podSets[0].template.spec.containers", "must be a list"),
    (WL, "spec.podSets.0.template.spec.initContainers", [{"resources": {"requests": {"nvidia.com/gpu": "0.5"}}}],
     "object.spec.podSets[0].template.spec.initContainers[0].resources.requests[nvidia.com/gpu]", "fractional"),
    (WL, "spec.podSets.0.template.spec.overhead", {"memory": "1e-1"}, "object.spec.podSets[0].template.spec.overhead[memory]", "fractional"),
    (WL, "status.admission", {"clusterQueue": "q"}, "object.status.admission.podSetAssignments", "required"),
    (WL, "status.admission", {**ADMISSION, "podSetAssignments": [{**ADMISSION["podSetAssignments"][0], "name": "other"}]},
     "object.status.admission.podSetAssignments[0].name", "no podSet named 'other'"),
    # Node
    ({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}, "status.allocatable.cpu", "1x", "object.status.allocatable[cpu]", "invalid quantity"),
    ({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}, "spec.unschedulable", "yes", "object.spec.unschedulable", "must be a boolean"),
    ({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}, "spec.taints", [{"key": "k", "effect": "Sometimes"}], "object.spec.taints[0].effect", "unsupported value"),
    ({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}, "spec.taints", [{"effect": "NoSchedule"}], "object.spec.taints[0].key", "required"),
    ({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}, "metadata.labels", {"a": 1}, "object.metadata.labels[a]", "must be a string"),
    # EngineConfig
    ({"apiVersion": "quotaledger.io/v1alpha1", "kind": "EngineConfig", "metadata": {"name": "c"}},
     "spec.admissionFairSharing.usageSamplingInterval", "0s", "object.spec.admissionFairSharing.usageSamplingInterval", "must be greater than 0"),
    ({"apiVersion": "quotaledger.io/v1alpha1", "kind": "EngineConfig", "metadata": {"name": "c"}},
     "spec.admissionFairSharing.usageHalfLifeTime", "10 minutes", "object.spec.admissionFairSharing.usageHalfLifeTime", "invalid duration"),
    ({"apiVersion": "quotaledger.io/v1alpha1", "kind": "EngineConfig", "metadata": {"name": "c"}},
     "spec.admissionFairSharing.resourceWeights", {"cpu": -1}, "object.spec.admissionFairSharing.resourceWeights[cpu]", "negative"),
    ({"apiVersion": "quotaledger.io/v1alpha1", "kind": "EngineConfig", "metadata": {"name": "c"}},
     "spec.admissionFairSharing.resourceWeights", {"cpu": 0.0001}, "object.spec.admissionFairSharing.resourceWeights[cpu]", "multiple of 0.001"),
    ({"apiVersion": "quotaledger.io/v1alpha1", "kind": "EngineConfig", "metadata": {"name": "c"}},
     "spec.admissionFairSharing.resourceWeights", {"cpu": "1"}, "object.spec.admissionFairSharing.resourceWeights[cpu]", "must be a number"),
    ({"apiVersion": "quotaledger.io/v1alpha1", "kind": "EngineConfig", "metadata": {"name": "c"}},
     "spec.fairSharing", {"enable": "true"}, "object.spec.fairSharing.enable", "must be a boolean"),
    ({"apiVersion": "quotaledger.io/v1alpha1", "kind": "EngineConfig", "metadata": {"name": "c"}},
     "spec.fairSharing", {"preemptionStrategies": ["Greedy"]}, "object.spec.fairSharing.preemptionStrategies[0]", "unsupported value"),
    ({"apiVersion": "quotaledger.io/v1alpha1", "kind": "EngineConfig", "metadata": {"name": "c"}},
     "spec.fairSharing", {"preemptionStrategies": ["LessThanInitialShare", "LessThanOrEqualToFinalShare"]},
     "object.spec.fairSharing.preemptionStrategies", "must be"),
]


@pytest.mark.parametrize("base,where,value,path,problem", OBJECT_ERRORS)
def test_object_errors(base, where, value, path, problem):
    err = error_of(applied(mutate(base, where, value)))
    assert err.path == path, err
    assert problem in err.problem, err
    assert err.event_id == "e-1"


@pytest.mark.parametrize(
    "raw,path,problem",
    [
        ({"id": "a", "time": 0, "type": "WorkloadAdmitted", "workload": "ns/w"}, "admission", "required"),
        ({"id": "a", "time": 0, "type": "WorkloadAdmitted", "workload": "ns/w",
          "admission": {**ADMISSION, "clusterQueue": ""}}, "admission.clusterQueue", "must not be empty"),
        ({"id": "a", "time": 0, "type": "WorkloadAdmitted", "workload": "ns/w",
          "admission": {"clusterQueue": "q", "podSetAssignments": [{"name": "main", "flavors": {"cpu": "f"}, "resourceUsage": {"cpu": "1"}}]}},
         "admission.podSetAssignments[0].count", "required"),
        ({"id": "a", "time": 0, "type": "WorkloadAdmitted", "workload": "ns/w",
          "admission": {"clusterQueue": "q", "podSetAssignments": [{"name": "main", "flavors": {}, "resourceUsage": {"cpu": "1"}, "count": 1}]}},
         "admission.podSetAssignments[0].resourceUsage[cpu]", "no flavor"),
        ({"id": "a", "time": 0, "type": "WorkloadAdmitted", "workload": "ns/w",
          "admission": {"clusterQueue": "q", "podSetAssignments": [{"name": "main", "flavors": {"cpu": "f"}, "resourceUsage": {"cpu": "1m1"}, "count": 1}]}},
         "admission.podSetAssignments[0].resourceUsage[cpu]", "invalid quantity"),
        ({"id": "a", "time": 0, "type": "WorkloadAdmitted", "workload": "ns/w",
          "admission": {"clusterQueue": "q", "podSetAssignments": [
              {"name": "main", "count": 1}, {"name": "main", "count": 1}]}},
         "admission.podSetAssignments[1].name", "duplicate"),
        ({"id": "a", "time": 0, "type": "WorkloadEvicted", "workload": "ns/w", "reason": 5}, "reason", "must be a string"),
        ({"id": "a", "time": 0, "type": "Deleted", "object": {"apiVersion": V2, "kind": "LocalQueue", "metadata": {"name": "lq"}}},
         "object.metadata.namespace", "required"),
        ({"id": "a", "time": 0, "type": "Deleted", "object": {"apiVersion": V2, "kind": "Workload"}}, "object.metadata", "required"),
        ({"id": "a", "time": 0, "type": "Deleted", "object": {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {}}},
         "object.metadata.name", "required"),
    ],
)
def test_payload_errors(raw, path, problem):
    err = error_of(raw)
    assert err.path == path
    assert problem in err.problem


def test_duplicate_pod_set_names():
    raw = mutate(WL, "spec.podSets", [{"name": "a", "requests": {}}, {"name": "a", "requests": {}}])
    err = error_of(applied(raw))
    assert err.path == "object.spec.podSets[1].name"
    assert "duplicate" in err.problem


def test_names_are_validated_as_kubernetes_does():
    """Object names are DNS-1123 subdomains, namespaces DNS-1123 labels (apimachinery validation)."""
    with pytest.raises(EventError) as e:
        parse_event(applied(mutate(WL, "metadata.name", 'we"ird/ name')))
    assert e.value.path == "object.metadata.name" and "RFC 1123 subdomain" in e.value.problem
    with pytest.raises(EventError) as e:
        parse_event(applied(mutate(WL, "metadata.namespace", "ns ü")))
    assert e.value.path == "object.metadata.namespace" and "RFC 1123 label" in e.value.problem


def test_input_not_mutated():
    raw = applied(mutate(WL, "status", {"admission": ADMISSION}))
    before = copy.deepcopy(raw)
    parse_event(raw)
    assert raw == before


@given(
    st.lists(
        st.fixed_dictionaries(
            {"cpu": st.integers(0, 64_000), "memory": st.integers(0, 2**36), "sidecar": st.booleans()}
        ),
        min_size=0,
        max_size=4,
    ),
    st.lists(st.fixed_dictionaries({"cpu": st.integers(0, 64_000), "memory": st.integers(0, 2**36)}), min_size=1, max_size=4),
)
def test_effective_requests_property(inits, containers):
    """Independent restatement of the Kubernetes rule, per resource, on millicores and bytes."""
    pod_spec = {
        "containers": [c(cpu=f"{x['cpu']}m", memory=str(x["memory"])) for x in containers],
        "initContainers": [
            {**c(cpu=f"{x['cpu']}m", memory=str(x["memory"])), **({"restartPolicy": "Always"} if x["sidecar"] else {})}
            for x in inits
        ],
    }
    expected = {}
    for res in ("cpu", "memory"):
        sidecar_total = sum(x[res] for x in inits if x["sidecar"])
        regular = sum(x[res] for x in containers) + sidecar_total
        peaks = []
        running = 0
        for x in inits:
            if x["sidecar"]:
                running += x[res]
                peaks.append(running)
            else:
                peaks.append(x[res] + running)
        expected[res] = max([regular, *peaks])
    want = tuple((r, v) for r, v in sorted(expected.items()) if v)
    assert parse_event(spec_with(**pod_spec)).obj.pod_sets[0].requests == want
