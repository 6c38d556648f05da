"""Parsing of what placement reads: Topology objects, podSet constraints, KAI annotations, and an
observed topologyAssignment; every rejection names the field (statemodel.events.placement)."""

from __future__ import annotations

import pytest

from statemodel.errors import EventError
from statemodel.events.decode import parse_event
from statemodel.objects import NodeSelectorRequirement, PlacementRequest, PodSetPlacement, Toleration, Topology


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
    ps = {"topologyRequest": {"preferred": "rack", "podSetGroupName": "g"},
          "template": {"spec": {"containers": [{"resources": {"requests": {"cpu": "1"}}}],
                                "nodeSelector": {"pool": "gpu"}, "affinity": affinity,
                                "tolerations": [{"operator": "Exists"},
                                                {"key": "k", "value": "v", "effect": "NoExecute"}]}}}
    w = _applied(_workload(ps))
    assert w.placement == PlacementRequest(None, None, None, (PodSetPlacement(
        "main", (("pool", "gpu"),),
        ((NodeSelectorRequirement("model", "In", ("a100", "h100")), NodeSelectorRequirement("spot", "DoesNotExist")),),
        (Toleration("", "Exists", "", ""), Toleration("k", "Equal", "v", "NoExecute")),
        None, "rack", False, "g"),))


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
