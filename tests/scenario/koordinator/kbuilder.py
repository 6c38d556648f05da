"""Scenario helpers for the ``koordinator`` model: Nodes, ElasticQuotas, Pods and the
``EngineConfig`` with ``spec.koordinator``, on top of ``tests.scenario.builder.Scenario``."""

from __future__ import annotations

import json
from typing import Any

from tests.scenario.builder import ENGINE_CONFIG_API, Scenario

EQ_API = "scheduling.sigs.k8s.io/v1alpha1"
P = "quota.scheduling.koordinator.sh/"


class KoordScenario(Scenario):
    """A scenario whose cluster runs the ``koordinator`` model (``EngineConfig`` first)."""

    def __init__(self, capacity: dict | None = None, cluster: str = "default", **args: Any) -> None:
        super().__init__(cluster)
        self.config(**args)
        if capacity is not None:
            self.node("n1", capacity)

    def config(self, at: float | None = None, placement: dict | None = None, **args: Any) -> dict:
        spec: dict[str, Any] = {"quotaModel": "koordinator"}
        if args:
            spec["koordinator"] = args
        if placement is not None:
            spec["placement"] = placement
        return self._apply({"apiVersion": ENGINE_CONFIG_API, "kind": "EngineConfig", "metadata": {"name": "c"},
                            "spec": spec}, at)

    def node(self, name: str, allocatable: dict, unschedulable: bool = False, labels: dict | None = None,
             taints: list[dict] | None = None, at: float | None = None) -> dict:
        spec: dict[str, Any] = {"unschedulable": unschedulable}
        if taints is not None:
            spec["taints"] = taints
        return self._apply({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}},
                            "spec": spec, "status": {"allocatable": allocatable}}, at)

    def delete_node(self, name: str, at: float | None = None) -> dict:
        return self.emit("Deleted", at=at, object={"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})

    def quota(self, name: str, min: dict | None = None, max: dict | None = None, parent: str | None = None,
              is_parent: bool = False, lend: bool | None = None, weight: dict | None = None,
              namespaces: list[str] | None = None, force: bool = False, at: float | None = None) -> dict:
        labels: dict[str, str] = {}
        annotations: dict[str, str] = {}
        if parent is not None:
            labels[P + "parent"] = parent
        if is_parent:
            labels[P + "is-parent"] = "true"
        if lend is not None:
            labels[P + "allow-lent-resource"] = "true" if lend else "false"
        if force:
            labels[P + "allow-force-update"] = "true"
        if weight is not None:
            annotations[P + "shared-weight"] = json.dumps(weight)
        if namespaces is not None:
            annotations[P + "namespaces"] = json.dumps(namespaces)
        meta: dict[str, Any] = {"name": name, "namespace": "quotas", "labels": labels, "annotations": annotations}
        return self._apply({"apiVersion": EQ_API, "kind": "ElasticQuota", "metadata": meta,
                            "spec": {"min": min or {}, "max": max or {}}}, at)

    def delete_quota(self, name: str, at: float | None = None) -> dict:
        return self.emit("Deleted", at=at, object={"apiVersion": EQ_API, "kind": "ElasticQuota",
                                                   "metadata": {"name": name}})

    def pod(self, key: str, quota: str | None = None, priority: int | None = None, node: str | None = None,
            preemptible: bool | None = None, phase: str | None = None, selector: dict | None = None,
            tolerations: list[dict] | None = None, at: float | None = None, **requests: Any) -> dict:
        ns, name = key.split("/")
        labels: dict[str, str] = {}
        if quota is not None:
            labels[P + "name"] = quota
        if preemptible is not None:
            labels[P + "preemptible"] = "true" if preemptible else "false"
        reqs = {("nvidia.com/gpu" if k == "gpu" else k): v for k, v in requests.items()}
        spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": reqs}}]}
        if priority is not None:
            spec["priority"] = priority
        if node is not None:
            spec["nodeName"] = node
        if selector is not None:
            spec["nodeSelector"] = selector
        if tolerations is not None:
            spec["tolerations"] = tolerations
        obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod",
                               "metadata": {"namespace": ns, "name": name, "labels": labels}, "spec": spec}
        if phase is not None:
            obj["status"] = {"phase": phase}
        return self._apply(obj, at)

    def delete_pod(self, key: str, at: float | None = None) -> dict:
        ns, name = key.split("/")
        return self.emit("Deleted", at=at, object={"apiVersion": "v1", "kind": "Pod",
                                                   "metadata": {"namespace": ns, "name": name}})

    def eq(self, name: str) -> dict:
        """The state of quota ``name``."""
        return self.state()["elasticQuotas"][name]

    def runtime(self, name: str, resource: str = "cpu") -> int:
        return self.eq(name)["runtime"].get(resource, 0)

    def pod_state(self, key: str) -> dict:
        return self.state()["pods"][key]

    def running(self) -> list[str]:
        return sorted(k for k, p in self.state()["pods"].items() if p["status"] == "Admitted")
