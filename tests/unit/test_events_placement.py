"""Parsing of what placement reads: Topology objects, podSet constraints, KAI annotations, and an
observed topologyAssignment; every rejection names the field (statemodel.events.placement)."""

from __future__ import annotations

import json

import pytest

from statemodel.errors import EventError
from statemodel.events.decode import parse_event
from statemodel.objects import (
    NodeSelectorRequirement, PlacementRequest, PodSetPlacement, SubGroup, Toleration, Topology,
)


def _applied(obj: dict):
    return parse_event({"id": "e1", "time": 0, "type": "Applied", "object": obj}).obj


def _topology(levels: list, api: str = "kai.scheduler/v1alpha1") -> dict:
    return {"apiVersion": api, "kind": "Topology", "metadata": {"name": "net"},
            "spec": {"levels": [{"nodeLabel": level} for level in levels]}}


def _workload(pod_set: dict | None = None, annotations: dict | None = None) -> dict:
    ps = {"name": "main", "count": 2, "template": {"spec": {"containers": [{"resources": {"requests": {"cpu": "1"}}}]}}}
    ps.update(pod_set or {})
    meta = {"name": "w", "namespace": "ns"}
    if annotations is not None:
        meta["annotations"] = annotations
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": meta,
            "spec": {"queueName": "q", "podSets": [ps]}}


def _rejected(obj: dict) -> EventError:
    with pytest.raises(EventError) as info:
        _applied(obj)
    return info.value


@pytest.mark.parametrize("api", ["kai.scheduler/v1alpha1", "kueue.x-k8s.io/v1alpha1"])
def test_topology_levels_top_first(api):
    assert _applied(_topology(["spine", "rack", "kubernetes.io/hostname"], api)) == \
        Topology("net", ("spine", "rack", "kubernetes.io/hostname"))


@pytest.mark.parametrize("levels,path,problem", [
    ([], "object.spec.levels", "must have at least 1 item"),
    (["rack", "rack"], "object.spec.levels[1].nodeLabel", "duplicate level 'rack'"),
    (["kubernetes.io/hostname", "rack"], "object.spec.levels[0].nodeLabel", "may only be the last level"),
    ([f"l{i}" for i in range(17)], "object.spec.levels", "at most 16"),
    (["bad label!"], "object.spec.levels[0].nodeLabel", ""),
])
def test_topology_rejections_name_the_field(levels, path, problem):
    error = _rejected(_topology(levels))
    assert error.path == path and problem in error.problem


def test_pod_set_constraints_are_read_from_the_template_and_topology_request():
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "model", "operator": "In", "values": ["h100", "a100"]},
                              {"key": "spot", "operator": "DoesNotExist"}]}]}}}
    ps = {"topologyRequest": {"preferred": "rack"},
          "template": {"spec": {"containers": [{"resources": {"requests": {"cpu": "1"}}}],
                                "nodeSelector": {"pool": "gpu"}, "affinity": affinity,
                                "tolerations": [{"operator": "Exists"},
                                                {"key": "k", "value": "v", "effect": "NoExecute"}]}}}
    w = _applied(_workload(ps))
    assert w.placement == PlacementRequest(None, None, None, (PodSetPlacement(
        "main", (("pool", "gpu"),),
        ((NodeSelectorRequirement("model", "In", ("a100", "h100")), NodeSelectorRequirement("spot", "DoesNotExist")),),
        (Toleration("", "Exists", "", ""), Toleration("k", "Equal", "v", "NoExecute")),
        None, "rack", False, None),))


def test_a_workload_without_constraints_has_no_placement_request():
    assert _applied(_workload()).placement is None


def test_kai_annotations():
    w = _applied(_workload(annotations={"kai.scheduler/topology": "net",
                                        "kai.scheduler/topology-required-placement": "spine",
                                        "kai.scheduler/topology-preferred-placement": "rack"}))
    assert w.placement == PlacementRequest("net", "spine", "rack", ())


@pytest.mark.parametrize("pod_set,annotations,path", [
    ({"topologyRequest": {"required": "rack", "preferred": "host"}}, None, "object.spec.podSets[0].topologyRequest"),
    ({"topologyRequest": {"required": ""}}, None, "object.spec.podSets[0].topologyRequest.required"),
    ({"topologyRequest": {"unconstrained": "yes"}}, None, "object.spec.podSets[0].topologyRequest.unconstrained"),
    ({"template": {"spec": {"containers": [], "tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]}}},
     None, "object.spec.podSets[0].template.spec.tolerations[0].value"),
    ({"template": {"spec": {"containers": [], "affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "a", "operator": "Near", "values": ["x"]}]}]}}}}}},
     None, "object.spec.podSets[0].template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
           ".nodeSelectorTerms[0].matchExpressions[0].operator"),
    ({"template": {"spec": {"containers": [], "affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "a", "operator": "In"}]}]}}}}}},
     None, "object.spec.podSets[0].template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
           ".nodeSelectorTerms[0].matchExpressions[0].values"),
    (None, {"kai.scheduler/topology-required-placement": "rack"},
     "object.metadata.annotations[kai.scheduler/topology]"),
    (None, {"kai.scheduler/topology": "net"}, "object.metadata.annotations[kai.scheduler/topology-required-placement]"),
])
def test_constraint_rejections_name_the_field(pod_set, annotations, path):
    assert _rejected(_workload(pod_set, annotations)).path == path


def test_flavor_topology_name():
    flavor = _applied({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "f"},
                       "spec": {"nodeLabels": {"pool": "a"}, "topologyName": "net"}})
    assert flavor.topology_name == "net"


def test_observed_topology_assignment_gives_node_counts_at_the_hostname_level():
    admission = {"clusterQueue": "cq", "podSetAssignments": [
        {"name": "main", "count": 3, "flavors": {"cpu": "f"}, "resourceUsage": {"cpu": "3"},
         "topologyAssignment": {"levels": ["rack", "kubernetes.io/hostname"],
                                "domains": [{"values": ["r1", "n1"], "count": 2}, {"values": ["r1", "n2"], "count": 1}]}}]}
    e = parse_event({"id": "e1", "time": 0, "type": "WorkloadAdmitted", "workload": "ns/w", "admission": admission})
    assert e.admission.pod_set_assignments[0].nodes == (("n1", 2), ("n2", 1))
    admission["podSetAssignments"][0]["topologyAssignment"]["domains"][1]["count"] = 5
    with pytest.raises(EventError) as info:
        parse_event({"id": "e1", "time": 0, "type": "WorkloadAdmitted", "workload": "ns/w", "admission": admission})
    assert info.value.path == "admission.podSetAssignments[0].topologyAssignment.domains"


def test_engine_config_placement():
    config = _applied({"apiVersion": "quotaledger.io/v1alpha1", "kind": "EngineConfig", "metadata": {"name": "c"},
                       "spec": {"placement": {"enable": True, "nodeOrder": "spread"}}})
    assert config.placement.enable and config.placement.node_order == "spread"
    error = _rejected({"apiVersion": "quotaledger.io/v1alpha1", "kind": "EngineConfig", "metadata": {"name": "c"},
                       "spec": {"placement": {"nodeOrder": "random"}}})
    assert error.path == "object.spec.placement.nodeOrder"


def test_flavor_node_taints_and_tolerations_in_spec_order():
    flavor = _applied({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "spot"},
                       "spec": {"nodeTaints": [{"key": "instance", "value": "spot", "effect": "NoSchedule"},
                                               {"key": "gpu", "effect": "NoExecute"}],
                                "tolerations": [{"key": "instance", "operator": "Exists"}]}})
    assert [(t.key, t.value, t.effect) for t in flavor.node_taints] == [("instance", "spot", "NoSchedule"),
                                                                          ("gpu", "", "NoExecute")]
    assert flavor.tolerations == (Toleration("instance", "Exists", "", ""),)


@pytest.mark.parametrize("spec, path", [
    ({"nodeTaints": [{"key": "instance", "effect": "Sometimes"}]}, "object.spec.nodeTaints[0].effect"),
    ({"nodeTaints": [{"value": "spot", "effect": "NoSchedule"}]}, "object.spec.nodeTaints[0].key"),
    ({"nodeTaints": [{"key": f"k{i}", "effect": "NoSchedule"} for i in range(9)]}, "object.spec.nodeTaints"),
    ({"tolerations": [{"operator": "Equal", "value": "x"}]}, "object.spec.tolerations[0].operator"),
    ({"tolerations": [{"key": "k", "operator": "Exists", "value": "x"}]}, "object.spec.tolerations[0].value"),
])
def test_flavor_taint_rejections_name_the_field(spec, path):
    error = _rejected({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "f"},
                       "spec": spec})
    assert error.path == path


def _two_pod_sets(leader: dict, workers: dict, annotations: dict | None = None, counts: tuple = (1, 3)) -> dict:
    w = _workload(None, annotations)
    base = w["spec"]["podSets"][0]
    w["spec"]["podSets"] = [{**base, "name": "leader", "count": counts[0], **leader},
                            {**base, "name": "workers", "count": counts[1], **workers}]
    return w


def test_pod_set_group_slices_and_sub_group_label_are_read():
    group = {"topologyRequest": {"required": "rack", "podSetGroupName": "lws"}}
    w = _applied(_two_pod_sets(group, group))
    assert [(c.pod_set, c.pod_set_group_name, c.required) for c in w.placement.pod_sets] == \
        [("leader", "lws", "rack"), ("workers", "lws", "rack")]
    sliced = {"topologyRequest": {"preferred": "block", "podSetSliceRequiredTopology": "rack", "podSetSliceSize": 2},
              "template": {"metadata": {"labels": {"kai.scheduler/subgroup-name": "decode"}},
                           "spec": {"containers": [{"resources": {"requests": {"cpu": "1"}}}]}}}
    subgroups = json.dumps([{"name": "decode", "minMember": 2,
                             "topologyConstraint": {"topology": "net", "requiredTopologyLevel": "rack"}}])
    w = _applied(_workload({**sliced, "count": 4}, {"kai.scheduler/subgroups": subgroups}))
    [c] = w.placement.pod_sets
    assert (c.slice_required, c.slice_size, c.sub_group) == ("rack", 2, "decode")
    assert w.placement.sub_groups == (SubGroup("decode", 2, None, "net", "rack", None),)


@pytest.mark.parametrize("leader, workers, counts, path", [
    ({"topologyRequest": {"required": "rack", "podSetGroupName": "g"}}, {}, (1, 3),
     "object.spec.podSets[0].topologyRequest.podSetGroupName"),
    ({"topologyRequest": {"required": "rack", "podSetGroupName": "g"}},
     {"topologyRequest": {"required": "rack", "podSetGroupName": "g"}}, (2, 3),
     "object.spec.podSets[0].topologyRequest.podSetGroupName"),
    ({"topologyRequest": {"required": "rack", "podSetGroupName": "g"}},
     {"topologyRequest": {"preferred": "rack", "podSetGroupName": "g"}}, (1, 3), "object.spec.podSets[1].topologyRequest"),
    ({"topologyRequest": {"podSetGroupName": "g"}}, {"topologyRequest": {"podSetGroupName": "g"}}, (1, 3),
     "object.spec.podSets[0].topologyRequest"),
    ({}, {"topologyRequest": {"required": "block", "podSetSliceRequiredTopology": "rack", "podSetSliceSize": 2}}, (1, 3),
     "object.spec.podSets[1].topologyRequest.podSetSliceSize"),
    ({}, {"topologyRequest": {"required": "block", "podSetSliceRequiredTopology": "rack"}}, (1, 4),
     "object.spec.podSets[1].topologyRequest.podSetSliceSize"),
    ({}, {"topologyRequest": {"required": "block", "podSetSliceSize": 2}}, (1, 4),
     "object.spec.podSets[1].topologyRequest.podSetSliceSize"),
    ({}, {"topologyRequest": {"required": "block", "podSetSliceRequiredTopology": "rack", "podSetSliceSize": 0}}, (1, 4),
     "object.spec.podSets[1].topologyRequest.podSetSliceSize"),
    ({}, {"topologyRequest": {"required": "rack", "podSetGroupName": "g", "podSetSliceRequiredTopology": "host",
                              "podSetSliceSize": 1}}, (1, 4), "object.spec.podSets[1].topologyRequest.podSetGroupName"),
])
def test_group_and_slice_rejections_name_the_field(leader, workers, counts, path):
    assert _rejected(_two_pod_sets(leader, workers, counts=counts)).path == path


def _labelled(sub_group: str) -> dict:
    return {"template": {"metadata": {"labels": {"kai.scheduler/subgroup-name": sub_group}},
                         "spec": {"containers": [{"resources": {"requests": {"cpu": "1"}}}]}}}


SG = "object.metadata.annotations[kai.scheduler/subgroups]"


@pytest.mark.parametrize("groups, pod_set, path", [
    ("not json", {}, SG),
    (json.dumps({"name": "a"}), {}, SG),
    (json.dumps([{"name": "A_b"}]), {}, f"{SG}[0].name"),
    (json.dumps([{"name": "a"}, {"name": "a"}]), {}, f"{SG}[1].name"),
    (json.dumps([{"name": "a", "minMember": -1}]), {}, f"{SG}[0].minMember"),
    (json.dumps([{"name": "a", "parent": "b"}]), {}, f"{SG}[0].parent"),
    (json.dumps([{"name": "a", "parent": "b"}, {"name": "b", "parent": "a"}]), {}, f"{SG}[0].parent"),
    (json.dumps([{"name": "a", "topologyConstraint": {"requiredTopologyLevel": "rack"}}]), {},
     f"{SG}[0].topologyConstraint.topology"),
    (json.dumps([{"name": "a", "minMember": 3}]), _labelled("a"), f"{SG}[0].minMember"),
    (json.dumps([{"name": "a"}, {"name": "b", "parent": "a"}]), _labelled("a"),
     "object.spec.podSets[0].template.metadata.labels[kai.scheduler/subgroup-name]"),
    (json.dumps([{"name": "a"}]), _labelled("z"),
     "object.spec.podSets[0].template.metadata.labels[kai.scheduler/subgroup-name]"),
    (None, _labelled("a"), "object.spec.podSets[0].template.metadata.labels[kai.scheduler/subgroup-name]"),
])
def test_sub_group_rejections_name_the_field(groups, pod_set, path):
    annotations = None if groups is None else {"kai.scheduler/subgroups": groups}
    assert _rejected(_workload(pod_set, annotations)).path == path


def _observed(ta: dict, count: int = 5):
    admission = {"clusterQueue": "cq", "podSetAssignments": [
        {"name": "main", "count": count, "flavors": {"cpu": "f"}, "resourceUsage": {"cpu": "5"}, "topologyAssignment": ta}]}
    return parse_event({"id": "e1", "time": 0, "type": "WorkloadAdmitted", "workload": "ns/w", "admission": admission})


def test_observed_v1beta2_compressed_slices_give_the_same_node_counts_as_domains():
    """Kueue v1beta2: one slice of 2 domains in rack r1 (universal) on nodes node-1 and node-2
    (prefix ``node-``, roots 1 and 2) with 2 pods each, and one slice of 1 domain (r2, n9, 1 pod)."""
    ta = {"levels": ["rack", "kubernetes.io/hostname"], "slices": [
        {"domainCount": 2, "valuesPerLevel": [{"universal": "r1"}, {"individual": {"prefix": "node-", "roots": ["1", "2"]}}],
         "podCounts": {"universal": 2}},
        {"domainCount": 1, "valuesPerLevel": [{"universal": "r2"}, {"individual": {"roots": ["n9"]}}],
         "podCounts": {"individual": [1]}}]}
    assert _observed(ta).admission.pod_set_assignments[0].nodes == (("n9", 1), ("node-1", 2), ("node-2", 2))
    domains = {"levels": ["rack", "kubernetes.io/hostname"],
               "domains": [{"values": ["r1", "node-1"], "count": 2}, {"values": ["r1", "node-2"], "count": 2},
                           {"values": ["r2", "n9"], "count": 1}]}
    assert _observed(domains).admission.pod_set_assignments[0].nodes == (("n9", 1), ("node-1", 2), ("node-2", 2))


P = "admission.podSetAssignments[0].topologyAssignment"


@pytest.mark.parametrize("slices, path", [
    ([{"domainCount": 1, "valuesPerLevel": [{"universal": "r1"}], "podCounts": {"universal": 5}}], f"{P}.slices[0].valuesPerLevel"),
    ([{"domainCount": 1, "valuesPerLevel": [{"universal": "r1"}, {}], "podCounts": {"universal": 5}}],
     f"{P}.slices[0].valuesPerLevel[1]"),
    ([{"domainCount": 2, "valuesPerLevel": [{"universal": "r1"}, {"individual": {"roots": ["a"]}}],
       "podCounts": {"universal": 1}}], f"{P}.slices[0].valuesPerLevel[1].individual.roots"),
    ([{"domainCount": 1, "valuesPerLevel": [{"universal": "r1"}, {"universal": "n1"}], "podCounts": {"universal": 4}}],
     f"{P}.slices"),
    ([{"domainCount": 1, "valuesPerLevel": [{"universal": "r1"}, {"universal": "n1"}], "podCounts": {}}],
     f"{P}.slices[0].podCounts"),
    ([{"domainCount": 0, "valuesPerLevel": [], "podCounts": {"universal": 5}}], f"{P}.slices[0].domainCount"),
])
def test_observed_slice_rejections_name_the_field(slices, path):
    with pytest.raises(EventError) as info:
        _observed({"levels": ["rack", "kubernetes.io/hostname"], "slices": slices})
    assert info.value.path == path
