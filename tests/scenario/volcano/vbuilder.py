"""Scenario helpers for the ``volcano`` model: Nodes, Queues, PodGroups with their Pods and the
``EngineConfig`` with ``spec.volcano``, on top of ``tests.scenario.builder.Scenario``."""

from __future__ import annotations

from typing import Any

from tests.scenario.builder import ENGINE_CONFIG_API, Scenario

VC_API = "scheduling.volcano.sh/v1beta1"
GROUP = "scheduling.k8s.io/group-name"


def _res(requests: dict) -> dict:
    return {("nvidia.com/gpu" if k == "gpu" else k): v for k, v in requests.items()}


class VolcanoScenario(Scenario):
    """A scenario whose cluster runs the ``volcano`` model (``EngineConfig`` first)."""

    def __init__(self, capacity: dict | None = None, cluster: str = "default", **args: Any) -> None:
        super().__init__(cluster)
        self.config(**args)
        if capacity is not None:
            self.node("n1", capacity)

    def config(self, at: float | None = None, **args: Any) -> dict:
        spec: dict[str, Any] = {"quotaModel": "volcano"}
        if args:
            spec["volcano"] = args
        return self._apply({"apiVersion": ENGINE_CONFIG_API, "kind": "EngineConfig", "metadata": {"name": "c"},
                            "spec": spec}, at)

    def node(self, name: str, allocatable: dict, labels: dict | None = None, unschedulable: bool = False,
             at: float | None = None) -> dict:
        obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
                               "status": {"allocatable": _res(allocatable)}}
        if labels is not None:
            obj["metadata"]["labels"] = labels
        if unschedulable:
            obj["spec"] = {"unschedulable": True}
        return self._apply(obj, at)

    def delete_node(self, name: str, at: float | None = None) -> dict:
        return self.emit("Deleted", at=at, object={"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})

    def queue(self, name: str, parent: str | None = None, weight: int | None = None, capability: dict | None = None,
              guarantee: dict | None = None, deserved: dict | None = None, reclaimable: bool | None = None,
              state: str | None = None, priority: int | None = None, at: float | None = None) -> dict:
        spec: dict[str, Any] = {}
        if parent is not None:
            spec["parent"] = parent
        if weight is not None:
            spec["weight"] = weight
        if capability is not None:
            spec["capability"] = _res(capability)
        if guarantee is not None:
            spec["guarantee"] = {"resource": _res(guarantee)}
        if deserved is not None:
            spec["deserved"] = _res(deserved)
        if reclaimable is not None:
            spec["reclaimable"] = reclaimable
        if priority is not None:
            spec["priority"] = priority
        obj: dict[str, Any] = {"apiVersion": VC_API, "kind": "Queue", "metadata": {"name": name}, "spec": spec}
        if state is not None:
            obj["status"] = {"state": state}
        return self._apply(obj, at)

    def delete_queue(self, name: str, at: float | None = None) -> dict:
        return self.emit("Deleted", at=at, object={"apiVersion": VC_API, "kind": "Queue", "metadata": {"name": name}})

    def group(self, key: str, queue: str | None = None, min_member: int | None = None,
              min_resources: dict | None = None, at: float | None = None) -> dict:
        ns, name = key.split("/")
        spec: dict[str, Any] = {}
        if queue is not None:
            spec["queue"] = queue
        if min_member is not None:
            spec["minMember"] = min_member
        if min_resources is not None:
            spec["minResources"] = _res(min_resources)
        return self._apply({"apiVersion": VC_API, "kind": "PodGroup",
                            "metadata": {"namespace": ns, "name": name}, "spec": spec}, at)

    def pod(self, key: str, group: str, priority: int | None = None, node: str | None = None,
            phase: str | None = None, policy: str | None = None, selector: dict | None = None,
            annotations: dict | None = None, at: float | None = None, **requests: Any) -> dict:
        ns, name = key.split("/")
        spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": _res(requests)}}]}
        if priority is not None:
            spec["priority"] = priority
        if node is not None:
            spec["nodeName"] = node
        if policy is not None:
            spec["preemptionPolicy"] = policy
        if selector is not None:
            spec["nodeSelector"] = selector
        obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod",
                               "metadata": {"namespace": ns, "name": name, "annotations": {GROUP: group,
                                                                                          **(annotations or {})}},
                               "spec": spec}
        if phase is not None:
            obj["status"] = {"phase": phase}
        return self._apply(obj, at)

    def job(self, key: str, queue: str, pods: int = 1, min_member: int | None = None, priority: int | None = None,
            min_resources: bool = True, selector: dict | None = None, annotations: dict | None = None,
            at: float | None = None, **per_pod: Any) -> None:
        """A PodGroup ``key`` with ``pods`` pods asking ``per_pod`` each, in one Batch; ``minMember``
        defaults to ``pods`` and ``minResources`` to ``minMember × per_pod``."""
        mm = pods if min_member is None else min_member
        ns, name = key.split("/")
        with self.batch(at=at):
            self.group(key, queue=queue, min_member=mm,
                       min_resources={r: v * mm for r, v in per_pod.items()} if min_resources else None)
            for i in range(pods):
                self.pod(f"{ns}/{name}-{i}", name, priority=priority, selector=selector, annotations=annotations,
                         **per_pod)

    def q(self, name: str) -> dict:
        """The state of queue ``name``."""
        return self.state()["queues"][name]

    def pg(self, key: str) -> dict:
        return self.state()["podGroups"][key]

    def phase(self, key: str) -> str:
        return self.pg(key)["phase"]

    def running(self, key: str) -> int:
        return self.pg(key)["running"]
