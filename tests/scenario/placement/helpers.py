"""Builders for placement scenarios: nodes, topologies, the EngineConfig that turns placement on,
and Workloads with placement constraints, as EVENTS.md objects on a ``Scenario``."""

from __future__ import annotations

from typing import Any

from tests.scenario.builder import ENGINE_CONFIG_API, GPU, KUEUE, Scenario, admitted

HOST = "kubernetes.io/hostname"
KAI_TOPOLOGY = "kai.scheduler/v1alpha1"


def placement_on(s: Scenario, node_order: str | None = None) -> None:
    """Apply the ``EngineConfig`` with ``spec.placement.enable`` (and ``nodeOrder``)."""
    placement: dict[str, Any] = {"enable": True}
    if node_order is not None:
        placement["nodeOrder"] = node_order
    s._apply({"apiVersion": ENGINE_CONFIG_API, "kind": "EngineConfig", "metadata": {"name": "config"},
              "spec": {"placement": placement}})


def node(s: Scenario, name: str, labels: dict | None = None, *, cpu: str = "8", gpu: str | None = None,
         unschedulable: bool = False, taints: list | None = None, at: float | None = None) -> dict:
    """Apply a ``v1`` Node with ``cpu`` (and ``gpu``) allocatable; ``labels`` get the hostname label."""
    allocatable = {"cpu": cpu}
    if gpu is not None:
        allocatable[GPU] = gpu
    spec: dict[str, Any] = {}
    if unschedulable:
        spec["unschedulable"] = True
    if taints:
        spec["taints"] = taints
    return s._apply({"apiVersion": "v1", "kind": "Node",
                     "metadata": {"name": name, "labels": {**(labels or {}), HOST: name}},
                     "spec": spec, "status": {"allocatable": allocatable}}, at)


def delete_node(s: Scenario, name: str) -> dict:
    return s.emit("Deleted", object={"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})


def topology(s: Scenario, name: str, levels: list[str], api: str = KAI_TOPOLOGY) -> dict:
    """Apply a ``Topology`` with ``levels`` (top first)."""
    return s._apply({"apiVersion": api, "kind": "Topology", "metadata": {"name": name},
                     "spec": {"levels": [{"nodeLabel": level} for level in levels]}})


def tas_flavor(s: Scenario, name: str, topology_name: str | None = None, labels: dict | None = None) -> dict:
    """Apply a ResourceFlavor with ``nodeLabels`` and ``topologyName``."""
    spec: dict[str, Any] = {}
    if labels:
        spec["nodeLabels"] = labels
    if topology_name:
        spec["topologyName"] = topology_name
    return s._apply({"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec})


def gang(s: Scenario, key: str, queue: str, pod_sets: list[dict], *, annotations: dict | None = None,
         priority: int | None = None, at: float | None = None) -> dict:
    """Apply a Workload; each pod set is ``{"name", "count", "requests", "topologyRequest"?,
    "nodeSelector"?, "affinity"?, "tolerations"?, "labels"?}`` (the last four go into the pod
    template: its spec, and ``labels`` its metadata)."""
    ns, name = key.split("/")
    out = []
    for ps in pod_sets:
        tspec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": ps["requests"]}}]}
        for field in ("nodeSelector", "affinity", "tolerations"):
            if field in ps:
                tspec[field] = ps[field]
        template: dict[str, Any] = {"spec": tspec}
        if "labels" in ps:
            template["metadata"] = {"labels": ps["labels"]}
        entry: dict[str, Any] = {"name": ps.get("name", "main"), "count": ps.get("count", 1), "template": template}
        if "topologyRequest" in ps:
            entry["topologyRequest"] = ps["topologyRequest"]
        out.append(entry)
    meta: dict[str, Any] = {"namespace": ns, "name": name}
    if annotations:
        meta["annotations"] = annotations
    spec: dict[str, Any] = {"queueName": queue, "podSets": out}
    if priority is not None:
        spec["priority"] = priority
    return s._apply({"apiVersion": KUEUE, "kind": "Workload", "metadata": meta, "spec": spec}, at)


def kai(topology_name: str, required: str | None = None, preferred: str | None = None) -> dict:
    """KAI's topology annotations."""
    out = {"kai.scheduler/topology": topology_name}
    if required:
        out["kai.scheduler/topology-required-placement"] = required
    if preferred:
        out["kai.scheduler/topology-preferred-placement"] = preferred
    return out


def nodes_of(decisions: list[dict], key: str) -> dict:
    """The ``nodes`` of ``key``'s ``Admitted`` decision (pod set -> node -> pods)."""
    for d in decisions:
        if d["type"] == "Admitted" and d["workload"] == key:
            return d.get("nodes", {})
    raise AssertionError(f"{key} not admitted in {admitted(decisions)}")


def quota_cluster(s: Scenario, cpu: str = "1000", gpu: str = "1000", flavor: str = "default") -> None:
    """One ClusterQueue ``cq`` with ample quota in ``flavor`` and LocalQueue ``ns/q``."""
    s.cq("cq", quotas={"cpu": cpu, GPU: gpu}, flavor=flavor)
    s.lq("ns/q", "cq")
