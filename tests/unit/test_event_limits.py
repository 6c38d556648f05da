"""Hostile values in events are rejections naming the field, never an uncaught error or an unbounded cost.

The limits come from docs/events.md "Limits": Kubernetes name rules (apimachinery
``IsDNS1123Subdomain``/``IsDNS1123Label``/``IsQualifiedName``), Kueue ``v1beta2`` CRD ``MaxItems`` and
ClusterQueue webhook totals, and the engine's own caps in ``statemodel.limits``.
"""

from __future__ import annotations

import copy

import orjson
import pytest

from statemodel.errors import EventError
from statemodel.events.decode import decode_event, parse_event
from statemodel.limits import (
    MAX_BATCH_EVENTS,
    MAX_EVENT_BYTES,
    MAX_FLAVORS,
    MAX_POD_SETS,
    MAX_QUANTITY_CHARS,
    MAX_RESOURCE_GROUPS,
)
from tests.unit.test_events import CQ, COHORT, LQ, WL, ADMISSION, applied, mutate

ENGINE_CONFIG = {"apiVersion": "quotaledger.io/v1alpha1", "kind": "EngineConfig", "metadata": {"name": "config"},
                 "spec": {"admissionFairSharing": {"usageHalfLifeTime": "168h"}}}


def rejection(raw: dict) -> EventError:
    """The rejection of ``raw``, also through the JSON text path (same path and problem)."""
    with pytest.raises(EventError) as ei:
        parse_event(raw)
    with pytest.raises(EventError) as ej:
        decode_event(orjson.dumps(raw))
    assert (ej.value.path, ej.value.problem) == (ei.value.path, ei.value.problem)
    assert len(ei.value.problem) < 1024 and len(ei.value.path) < 1024
    assert "\x00" not in ei.value.problem and "\x00" not in ei.value.path
    return ei.value


# --------------------------------------------------------------------------- numbers beyond 4,300 digits

NOMINAL = "spec.resourceGroups.0.flavors.0.resources.0.nominalQuota"
NOMINAL_PATH = "object.spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"


@pytest.mark.parametrize("value", ["1" * 4301, "0" * 4400 + "1", "1e" + "0" * 4400 + "1", "0." + "0" * 5000 + "1",
                                   "1" * (MAX_QUANTITY_CHARS + 1)])
def test_huge_quantity_strings_are_rejected_with_the_field(value):
    e = rejection(applied(mutate(CQ, NOMINAL, value)))
    assert e.path == NOMINAL_PATH
    assert e.problem == f"quantity too long: {len(value)} characters, at most {MAX_QUANTITY_CHARS}"


def test_quantity_at_the_length_cap_is_still_read_exactly():
    """128 characters, leading zeros then 10: ten cores."""
    value = "0" * (MAX_QUANTITY_CHARS - 2) + "10"
    cq = parse_event(applied(mutate(CQ, NOMINAL, value))).obj
    assert cq.resource_groups[0].flavors[0].resources[0].nominal == 10_000


def test_huge_request_in_a_workload_names_the_resource():
    raw = mutate(WL, "spec.podSets.0.template.spec.containers.0.resources.requests.memory", "0" * 4400 + "1")
    e = rejection(applied(raw))
    assert e.path == "object.spec.podSets[0].template.spec.containers[0].resources.requests[memory]"


def test_huge_weight_and_duration_are_rejected():
    e = rejection(applied(mutate(COHORT, "spec.fairSharing.weight", "1" * 4301)))
    assert e.path == "object.spec.fairSharing.weight" and e.problem.startswith("weight too long: 4301")
    e = rejection(applied(mutate(ENGINE_CONFIG, "spec.admissionFairSharing.usageHalfLifeTime", "1" * 5000 + "h")))
    assert e.path == "object.spec.admissionFairSharing.usageHalfLifeTime"
    assert e.problem.startswith("duration too long: 5001")


def test_huge_times_are_rejected():
    e = rejection({**applied(WL), "time": "2026-03-01T09:30:05." + "1" * 5000 + "Z"})
    assert e.path == "time" and e.problem.startswith("time too long")
    e = rejection(applied(mutate(WL, "metadata.creationTimestamp", "9" * 5000)))
    assert e.path == "object.metadata.creationTimestamp"


def test_huge_json_numbers_are_rejected():
    """orjson reads an integer beyond 64 bits as a float: not an integer, or too large a quantity."""
    line = orjson.dumps(applied(WL)).replace(b'"count":4', b'"count":' + b"1" * 5000)
    with pytest.raises(EventError) as e:
        decode_event(line)
    assert e.value.path in ("", "object.spec.podSets[0].count")
    line = orjson.dumps(applied(mutate(CQ, NOMINAL, 1))).replace(b'"nominalQuota":1', b'"nominalQuota":' + b"1" * 300)
    with pytest.raises(EventError) as e:
        decode_event(line)
    assert e.value.path == NOMINAL_PATH and "too large" in e.value.problem


# --------------------------------------------------------------------------- names, ids, NUL


@pytest.mark.parametrize("path,value,where", [
    ("metadata.name", "Team-A", "object.metadata.name"),
    ("metadata.name", "a" * 254, "object.metadata.name"),
    ("metadata.name", "a\x00b", "object.metadata.name"),
    ("spec.cohortName", "Org", "object.spec.cohortName"),
    ("spec.cohortName", "o" * 254, "object.spec.cohortName"),
    ("spec.resourceGroups.0.flavors.0.name", "on demand", "object.spec.resourceGroups[0].flavors[0].name"),
    ("spec.resourceGroups.0.coveredResources.0", "c\x01pu", "object.spec.resourceGroups[0].coveredResources[0]"),
])
def test_cluster_queue_names_follow_kubernetes(path, value, where):
    raw = mutate(CQ, path, value)
    if path.startswith("spec.resourceGroups.0.coveredResources"):
        raw = mutate(raw, "spec.resourceGroups.0.flavors.0.resources.0.name", value)
    e = rejection(applied(raw))
    assert e.path == where


def test_names_at_their_limits_are_accepted():
    assert parse_event(applied(mutate(CQ, "metadata.name", "a" * 253))).obj.name == "a" * 253
    assert parse_event(applied(mutate(CQ, "metadata.name", "a.b-c.0"))).obj.name == "a.b-c.0"
    lq = parse_event(applied(mutate(LQ, "metadata.namespace", "n" * 63))).obj
    assert lq.namespace == "n" * 63


def test_namespace_is_a_label_and_podset_names_are_labels():
    assert rejection(applied(mutate(LQ, "metadata.namespace", "n" * 64))).path == "object.metadata.namespace"
    assert rejection(applied(mutate(WL, "metadata.namespace", "team.a"))).path == "object.metadata.namespace"
    assert rejection(applied(mutate(WL, "spec.podSets.0.name", "Main"))).path == "object.spec.podSets[0].name"
    assert rejection(applied(mutate(WL, "spec.queueName", "LQ"))).path == "object.spec.queueName"
    assert rejection(applied(mutate(LQ, "spec.clusterQueue", "x/y"))).path == "object.spec.clusterQueue"
    assert rejection(applied(mutate(COHORT, "spec.parentName", "-root"))).path == "object.spec.parentName"


def test_references_in_lifecycle_events_are_validated():
    base = {"id": "e-2", "time": 0, "type": "WorkloadFinished"}
    assert rejection({**base, "workload": "Team/x"}).path == "workload"
    assert rejection({**base, "workload": "team/" + "x" * 254}).path == "workload"
    admitted = {"id": "e-3", "time": 0, "type": "WorkloadAdmitted", "workload": "team-a/x"}
    raw = {**admitted, "admission": mutate(ADMISSION, "podSetAssignments.0.flavors.cpu", "On-Demand")}
    assert rejection(raw).path == "admission.podSetAssignments[0].flavors[cpu]"
    raw = {**admitted, "admission": mutate(ADMISSION, "clusterQueue", "team a")}
    assert rejection(raw).path == "admission.clusterQueue"
    deleted = {"id": "e-4", "time": 0, "type": "Deleted", "object": {**LQ, "metadata": {"name": "lq", "namespace": "A"}}}
    assert rejection(deleted).path == "object.metadata.namespace"


@pytest.mark.parametrize("value,problem", [
    ("x" * 254, "must be no more than 253 bytes, got 254"),
    ("x" * 1_000_000, "must be no more than 253 bytes, got 1000000"),
    ("é" * 127, "must be no more than 253 bytes, got 254"),
    ("e\x00", "must be printable: no control, format or separator characters"),
    ("e\n1", "must be printable: no control, format or separator characters"),
    ("e\u200b1", "must be printable: no control, format or separator characters"),
    ("e\u202e1", "must be printable: no control, format or separator characters"),
])
def test_event_ids_and_cluster_names_are_capped_and_printable(value, problem):
    e = rejection({**applied(WL), "id": value})
    assert (e.path, e.problem, e.event_id) == ("id", problem, None)
    e = rejection({**applied(WL), "cluster": value})
    if "\x00" in value:  # a NUL anywhere is found before any field is read
        problem = "must not contain the NUL character"
    assert (e.path, e.problem, e.event_id) == ("cluster", problem, "e-1")


def test_ids_with_unicode_quotes_and_sql_metacharacters_are_fine():
    for value in ("é" * 126, "x'; DROP TABLE events; --", 'a"b', "🙂" * 63, "a b"):
        assert parse_event({**applied(WL), "id": value, "cluster": value}).id == value


def test_nul_anywhere_is_rejected_with_its_path():
    e = rejection({**applied(WL), "type": "Appl\x00ied"})
    assert (e.path, e.problem) == ("type", "must not contain the NUL character")
    e = rejection(applied(mutate(WL, "metadata.labels", {"team": "a\x00"})))
    assert e.path == "object.metadata.labels.team"
    e = rejection(applied(mutate(WL, "metadata.annotations", {"k\x00": "v"})))
    assert e.path == r"object.metadata.annotations['k\x00']"
    e = rejection({**applied(WL), "extra": ["ok", "\x00"]})
    assert e.path == "extra[1]"


def test_a_literal_backslash_u0000_text_is_not_a_nul():
    ev = parse_event(applied(mutate(WL, "metadata.annotations", {"note": "\\u0000"})))
    assert ev.obj.name == "train-7"


def test_evicted_reason_is_capped_and_printable():
    base = {"id": "e-5", "time": 0, "type": "WorkloadEvicted", "workload": "team-a/x"}
    assert rejection({**base, "reason": "r" * 1025}).path == "reason"
    assert rejection({**base, "reason": "Pre\nempted"}).path == "reason"
    assert parse_event({**base, "reason": "Preempted by admin"}).reason == "Preempted by admin"


def test_unknown_kind_and_type_messages_stay_short():
    huge = "K" * 1_000_000
    assert rejection(applied(mutate(WL, "kind", huge))).path == "object.kind"
    assert rejection(applied(mutate(WL, "apiVersion", huge))).path == "object.apiVersion"
    assert rejection({**applied(WL), "type": huge}).path == "type"
    assert rejection({**applied(WL), "v": huge}).path == "v"


def test_labels_and_taints_follow_kubernetes():
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"zone": "a"}},
            "spec": {"taints": [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]}}
    assert parse_event(applied(node)).obj.name == "n1"
    assert rejection(applied(mutate(node, "metadata.labels", {"bad key": "a"}))).path == "object.metadata.labels[bad key]"
    assert rejection(applied(mutate(node, "metadata.labels", {"zone": "v" * 64}))).path == "object.metadata.labels[zone]"
    assert rejection(applied(mutate(node, "spec.taints.0.key", "a/b/c"))).path == "object.spec.taints[0].key"
    rf = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "f"},
          "spec": {"nodeLabels": {"example.com/pool": "x y"}}}
    assert rejection(applied(rf)).path == "object.spec.nodeLabels[example.com/pool]"


# --------------------------------------------------------------------------- Kueue API limits


def test_pod_sets_are_capped_before_they_are_read():
    pod_set = {"name": "p", "count": 1, "requests": {"cpu": "1"}}
    ok = [dict(pod_set, name=f"p{i}") for i in range(MAX_POD_SETS)]
    assert len(parse_event(applied(mutate(WL, "spec.podSets", ok))).obj.pod_sets) == MAX_POD_SETS
    e = rejection(applied(mutate(WL, "spec.podSets", ok + [dict(pod_set, name="extra")])))
    assert (e.path, e.problem) == ("object.spec.podSets", f"must have at most {MAX_POD_SETS} items, got 19")
    # 100,000 identical podSets: rejected by count, not by a quadratic duplicate search (as JSON text
    # that many are above the event size cap already; 50,000 are not).
    with pytest.raises(EventError) as ei:
        parse_event(applied(mutate(WL, "spec.podSets", [pod_set] * 100_000)))
    assert ei.value.problem == f"must have at most {MAX_POD_SETS} items, got 100000"
    e = rejection(applied(mutate(WL, "spec.podSets", [pod_set] * 50_000)))
    assert e.problem == f"must have at most {MAX_POD_SETS} items, got 50000"


def test_duplicate_pod_set_names_are_found():
    pod_sets = [{"name": f"p{i}", "requests": {"cpu": "1"}} for i in range(MAX_POD_SETS - 1)] + [
        {"name": "p3", "requests": {"cpu": "1"}}]
    e = rejection(applied(mutate(WL, "spec.podSets", pod_sets)))
    assert (e.path, e.problem) == (f"object.spec.podSets[{MAX_POD_SETS - 1}].name", "duplicate podSet name 'p3'")


def test_pod_set_assignments_are_capped():
    psas = [dict(ADMISSION["podSetAssignments"][0], name=f"p{i}") for i in range(MAX_POD_SETS + 1)]
    raw = {"id": "e-3", "time": 0, "type": "WorkloadAdmitted", "workload": "team-a/x",
           "admission": {"clusterQueue": "team-a", "podSetAssignments": psas}}
    assert rejection(raw).path == "admission.podSetAssignments"


def _group(resources: list[str], flavors: list[str]) -> dict:
    return {"coveredResources": resources,
            "flavors": [{"name": f, "resources": [{"name": r, "nominalQuota": "1"} for r in resources]}
                        for f in flavors]}


def test_resource_group_limits_of_the_kueue_crds():
    flavors = [f"f{i}" for i in range(MAX_FLAVORS + 1)]
    e = rejection(applied(mutate(CQ, "spec.resourceGroups", [_group(["cpu"], flavors)])))
    assert (e.path, e.problem) == ("object.spec.resourceGroups[0].flavors", "must have at most 64 items, got 65")
    e = rejection(applied(mutate(COHORT, "spec.resourceGroups", [_group(["cpu"], [f"f{i}" for i in range(10_000)])])))
    assert e.path == "object.spec.resourceGroups[0].flavors"
    groups = [_group([f"r{i}"], [f"f{i}"]) for i in range(MAX_RESOURCE_GROUPS + 1)]
    e = rejection(applied(mutate(CQ, "spec.resourceGroups", groups)))
    assert (e.path, e.problem) == ("object.spec.resourceGroups", "must have at most 16 items, got 17")
    covered = [f"r{i}" for i in range(65)]
    e = rejection(applied(mutate(CQ, "spec.resourceGroups", [_group(covered, ["f"])])))
    assert e.path == "object.spec.resourceGroups[0].coveredResources"


def test_cluster_queue_webhook_totals():
    """Kueue's ClusterQueue webhook: at most 256 flavors and 256 covered resources over all groups, and
    512 flavor-resources per group; the CRD limits of one group are not exceeded here."""
    groups = [_group([f"r{g}"], [f"f{g}-{i}" for i in range(52)]) for g in range(5)]  # 260 flavors
    e = rejection(applied(mutate(CQ, "spec.resourceGroups", groups)))
    assert e.problem == "total number of flavors across all resourceGroups must be <= 256, got 260"
    groups = [_group([f"r{g}-{i}" for i in range(60)], [f"f{g}"]) for g in range(5)]  # 300 covered
    e = rejection(applied(mutate(CQ, "spec.resourceGroups", groups)))
    assert e.problem == "total number of covered resources across all resourceGroups must be <= 256, got 300"
    group = _group([f"r{i}" for i in range(9)], [f"f{i}" for i in range(64)])  # 576 combinations
    e = rejection(applied(mutate(CQ, "spec.resourceGroups", [group])))
    assert (e.path, e.problem) == (
        "object.spec.resourceGroups[0]",
        "number of flavor-resource combinations in a resourceGroup must be <= 512, got 576")
    # A Cohort has no webhook totals in Kueue: the same group is accepted there.
    assert len(parse_event(applied(mutate(COHORT, "spec.resourceGroups", [group]))).obj.resource_groups) == 1


# --------------------------------------------------------------------------- event and Batch size


def test_an_oversized_line_is_rejected_before_it_is_parsed():
    line = b'{"id": "big", "pad": "' + b"x" * MAX_EVENT_BYTES + b'"}'
    with pytest.raises(EventError) as e:
        decode_event(line)
    assert (e.value.path, e.value.problem) == ("", f"event too large: {len(line)} bytes, at most {MAX_EVENT_BYTES}")
    text = '{"id": "big", "pad": "' + "é" * (MAX_EVENT_BYTES // 2) + '"}'
    with pytest.raises(EventError) as e:
        decode_event(text)
    assert e.value.problem.startswith("event too large")
    # Not JSON at all, and too large: the size is what is reported (nothing was parsed).
    with pytest.raises(EventError) as e:
        decode_event(b"[" * (MAX_EVENT_BYTES + 1))
    assert e.value.problem.startswith("event too large")


def test_deep_nesting_within_the_size_cap_is_a_rejection():
    with pytest.raises(EventError) as e:
        decode_event(b'{"id": "deep", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    assert e.value.path in ("", "time")


def test_batch_size_is_capped():
    inner = [{"id": f"i{i}", "type": "Tick"} for i in range(MAX_BATCH_EVENTS + 1)]
    e = rejection({"id": "b", "time": 0, "type": "Batch", "events": inner})
    assert (e.path, e.problem) == ("events", f"must have at most {MAX_BATCH_EVENTS} events, got {MAX_BATCH_EVENTS + 1}")
    ok = parse_event({"id": "b", "time": 0, "type": "Batch", "events": inner[:MAX_BATCH_EVENTS]})
    assert len(ok.events) == MAX_BATCH_EVENTS


def test_input_is_not_mutated_by_rejections():
    raw = applied(mutate(WL, "metadata.labels", {"team": "a\x00"}))
    before = copy.deepcopy(raw)
    rejection(raw)
    assert raw == before
