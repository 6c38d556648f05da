"""Parsers of the core Kubernetes API group (``v1``): Node and Pod.

A ``Node`` is read as ``kubectl get node -o json`` prints it: ``metadata.labels``,
``status.allocatable`` (quantities in base units), ``spec.unschedulable`` and ``spec.taints``.

A ``Pod`` is read as a unit of admission for the models that admit pods (docs/events.md
"Additions"), in a model-neutral way: ``metadata.labels`` / ``annotations`` (each model reads its
own keys), ``metadata.uid`` and ``creationTimestamp``, ``spec.priority``, the effective per-pod
request of ``spec`` (Kubernetes ``PodRequests``, as a Workload's podSet template), ``spec.nodeName``
(an observed binding), ``spec.preemptionPolicy``, ``status.phase``, and what placement reads:
``spec.nodeSelector``, required node affinity, ``spec.tolerations`` and KAI's topology annotations
(``statemodel.events.placement.pod_placement``).  Pure.
"""

from __future__ import annotations

from typing import Callable

from statemodel.events.fields import (
    INT32_MAX, INT32_MIN, choice, fail, int_in, opt_bool, opt_obj, opt_str, qmap, req_str, smap,
)
from statemodel.events.kueue import pod_requests
from statemodel.events.names import annotation_value_problem
from statemodel.events.placement import parse_taints, pod_placement
from statemodel.objects import KubeObject, Node, Pod
from statemodel.timefmt import parse_time

API_VERSION = "v1"
"""The core group's only version."""

POD_PHASES = {p: p for p in ("Pending", "Running", "Succeeded", "Failed", "Unknown")}
"""``status.phase`` values (Kubernetes ``PodPhase``)."""
PREEMPTION_POLICIES = {p: p for p in ("PreemptLowerPriority", "Never")}
"""``spec.preemptionPolicy`` values (Kubernetes ``PreemptionPolicy``)."""


def _parse_node(o: dict, name: str, time_ms: int) -> Node:
    """Labels, ``status.allocatable`` (base units), ``spec.unschedulable`` and ``spec.taints``.

    Label and taint keys are Kubernetes qualified names, values label values (``statemodel.events.names``)."""
    labels = smap(o["metadata"].get("labels"), "object.metadata.labels")
    status = opt_obj(o, "status", "object") or {}
    alloc = qmap(status.get("allocatable"), "object.status.allocatable")
    spec = opt_obj(o, "spec", "object") or {}
    unschedulable = opt_bool(spec, "unschedulable", "object.spec", False)
    taints = parse_taints(spec, "taints", "object.spec")
    return Node(name, labels, tuple(sorted(alloc.items())), unschedulable, taints)


def _parse_pod(o: dict, name: str, time_ms: int) -> Pod:
    """A ``v1`` Pod as a unit (module docstring); ``metadata.namespace`` is required."""
    meta = o["metadata"]
    namespace = req_str(meta, "namespace", "object.metadata")
    labels = smap(meta.get("labels"), "object.metadata.labels")
    annotations = smap(meta.get("annotations"), "object.metadata.annotations", value_rule=annotation_value_problem)
    uid = opt_str(meta, "uid", "object.metadata", f"{namespace}/{name}")
    created = meta.get("creationTimestamp")
    creation_ms = time_ms if created is None else parse_time(created, "object.metadata.creationTimestamp")
    spec = opt_obj(o, "spec", "object")
    if spec is None:
        fail("object.spec", "required")
    priority = spec.get("priority")
    priority = 0 if priority is None else int_in(priority, "object.spec.priority", INT32_MIN, INT32_MAX)
    requests = pod_requests(spec, "object.spec")
    node_name = opt_str(spec, "nodeName", "object.spec", None)
    policy = choice(spec, "preemptionPolicy", "object.spec", PREEMPTION_POLICIES, "PreemptLowerPriority")
    status = opt_obj(o, "status", "object") or {}
    phase = choice(status, "phase", "object.status", POD_PHASES, "Pending")
    return Pod(namespace, name, uid, creation_ms, priority, tuple(sorted(requests.items())),
               labels, annotations, node_name, phase, policy, pod_placement(meta, spec))


KINDS: dict[str, dict[str, tuple[Callable[[dict, str, int], KubeObject], bool]]] = {
    API_VERSION: {"Node": (_parse_node, False), "Pod": (_parse_pod, True)},
}
"""apiVersion → kind → ``(parser, namespaced)``."""
