"""Parsers of what placement reads: ``Topology`` objects and a Workload's placement constraints.

* ``kai.scheduler/v1alpha1`` and ``kueue.x-k8s.io/v1alpha1`` ``Topology``: ``spec.levels[].nodeLabel``,
  top level first; 1 to 16 levels, unique, each a label key, ``kubernetes.io/hostname`` only as
  the last level (KAI ``pkg/apis/kai/v1alpha1/topology_types.go``, reference/kai.md §1; Kueue's
  CRD has the same shape and rules).
* Per podSet (``pod_set_placement``): Kueue's ``topologyRequest`` (``required``, ``preferred``,
  ``unconstrained``, ``podSetGroupName``; ``apis/kueue/v1beta2`` ``PodSetTopologyRequest`` —
  at most one of the three modes), and of the pod template ``spec.nodeSelector``,
  ``spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[]
  .matchExpressions[]`` (operators ``In``, ``NotIn``, ``Exists``, ``DoesNotExist``, ``Gt``, ``Lt``,
  with Kubernetes' value rules) and ``spec.tolerations``.
* Per Workload (``workload_placement``): KAI's ``kai.scheduler/topology``,
  ``kai.scheduler/topology-required-placement`` and ``kai.scheduler/topology-preferred-placement``
  annotations (the pod-grouper copies them into ``PodGroup.spec.topologyConstraint``); a level
  without ``kai.scheduler/topology`` is an error, as is a topology without a level.

Every rejection names the field.  Pure.
"""

from __future__ import annotations

from typing import Any, Callable

from statemodel.events.fields import as_obj, fail, opt_bool, opt_list, opt_obj, opt_str, req_str, shown, smap
from statemodel.events.names import label_value_problem, qualified_name_problem, subdomain_problem
from statemodel.objects import (
    KubeObject, NodeSelectorRequirement, PlacementRequest, PodSetPlacement, TaintEffect, Toleration, Topology,
)

KAI_API_VERSION = "kai.scheduler/v1alpha1"
"""KAI's Topology group/version."""
KUEUE_API_VERSION = "kueue.x-k8s.io/v1alpha1"
"""Kueue's Topology group/version."""
HOSTNAME = "kubernetes.io/hostname"
"""The well-known node-name label; only the last level of a topology may be it."""
MAX_LEVELS = 16
"""Most levels a Topology may have (both CRDs)."""

TOPOLOGY_ANNOTATION = "kai.scheduler/topology"
REQUIRED_ANNOTATION = "kai.scheduler/topology-required-placement"
PREFERRED_ANNOTATION = "kai.scheduler/topology-preferred-placement"

_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
_TOLERATION_OPERATORS = ("Equal", "Exists")
_EFFECTS = tuple(str(e) for e in TaintEffect)


def _label_key(value: Any, path: str) -> str:
    if not isinstance(value, str) or not value:
        fail(path, "must not be empty" if value == "" else "must be a string")
    problem = qualified_name_problem(value)
    if problem is not None:
        fail(path, problem)
    return value


def _parse_topology(o: dict, name: str, time_ms: int) -> Topology:
    """``spec.levels[].nodeLabel`` (module docstring)."""
    spec = opt_obj(o, "spec", "object")
    if spec is None:
        fail("object.spec", "required")
    raw = opt_list(spec, "levels", "object.spec")
    if not raw:
        fail("object.spec.levels", "must have at least 1 item")
    if len(raw) > MAX_LEVELS:
        fail("object.spec.levels", f"must have at most {MAX_LEVELS} items, got {len(raw)}")
    levels: list[str] = []
    for i, level in enumerate(raw):
        lp = f"object.spec.levels[{i}]"
        label = _label_key(as_obj(level, lp).get("nodeLabel"), f"{lp}.nodeLabel")
        if label in levels:
            fail(f"{lp}.nodeLabel", f"duplicate level {label!r}")
        if label == HOSTNAME and i != len(raw) - 1:
            fail(f"{lp}.nodeLabel", f"{HOSTNAME} may only be the last level")
        levels.append(label)
    return Topology(name, tuple(levels))


def _requirement(raw: Any, path: str) -> NodeSelectorRequirement:
    r = as_obj(raw, path)
    key = _label_key(r.get("key"), f"{path}.key")
    op = r.get("operator")
    if op not in _OPERATORS:
        fail(f"{path}.operator", f"unsupported value {shown(op)}: must be one of {', '.join(_OPERATORS)}"
             if isinstance(op, str) else "must be a string")
    values = opt_list(r, "values", path) or []
    for j, v in enumerate(values):
        if not isinstance(v, str):
            fail(f"{path}.values[{j}]", "must be a string")
        problem = label_value_problem(v)
        if problem is not None:
            fail(f"{path}.values[{j}]", problem)
    if op in ("In", "NotIn") and not values:
        fail(f"{path}.values", f"must be non-empty when operator is {op}")
    if op in ("Exists", "DoesNotExist") and values:
        fail(f"{path}.values", f"must be empty when operator is {op}")
    if op in ("Gt", "Lt"):
        if len(values) != 1:
            fail(f"{path}.values", f"must have a single element when operator is {op}")
        try:
            int(values[0])
        except ValueError:
            fail(f"{path}.values[0]", f"must be an integer when operator is {op}")
    return NodeSelectorRequirement(key, op, tuple(sorted(values)))


def _affinity(tspec: dict, p: str) -> tuple[tuple[NodeSelectorRequirement, ...], ...]:
    affinity = opt_obj(tspec, "affinity", p)
    node = opt_obj(affinity, "nodeAffinity", f"{p}.affinity") if affinity is not None else None
    if node is None:
        return ()
    np = f"{p}.affinity.nodeAffinity"
    required = opt_obj(node, "requiredDuringSchedulingIgnoredDuringExecution", np)
    if required is None:
        return ()
    rp = f"{np}.requiredDuringSchedulingIgnoredDuringExecution"
    terms = opt_list(required, "nodeSelectorTerms", rp)
    if not terms:
        fail(f"{rp}.nodeSelectorTerms", "must have at least 1 item")
    out = []
    for i, term in enumerate(terms):
        tp = f"{rp}.nodeSelectorTerms[{i}]"
        exprs = opt_list(as_obj(term, tp), "matchExpressions", tp) or []
        out.append(tuple(_requirement(e, f"{tp}.matchExpressions[{j}]") for j, e in enumerate(exprs)))
    return tuple(out)


def _tolerations(tspec: dict, p: str) -> tuple[Toleration, ...]:
    out = []
    for i, raw in enumerate(opt_list(tspec, "tolerations", p) or ()):
        tp = f"{p}.tolerations[{i}]"
        t = as_obj(raw, tp)
        key = opt_str(t, "key", tp, "")
        if key:
            _label_key(key, f"{tp}.key")
        op = opt_str(t, "operator", tp, "Equal")
        if op not in _TOLERATION_OPERATORS:
            fail(f"{tp}.operator", f"unsupported value {shown(op)}: must be Equal or Exists")
        value = opt_str(t, "value", tp, "")
        if op == "Exists" and value:
            fail(f"{tp}.value", "must be empty when operator is Exists")
        if not key and op != "Exists":
            fail(f"{tp}.operator", "must be Exists when key is empty")
        problem = label_value_problem(value)
        if problem is not None:
            fail(f"{tp}.value", problem)
        effect = opt_str(t, "effect", tp, "")
        if effect and effect not in _EFFECTS:
            fail(f"{tp}.effect", f"unsupported value {shown(effect)}: must be one of {', '.join(_EFFECTS)}")
        out.append(Toleration(key, op, value, effect))
    return tuple(out)


def _topology_request(ps: dict) -> tuple[str | None, str | None, bool, str | None]:
    """``topologyRequest``: ``(required, preferred, unconstrained, podSetGroupName)``; relative paths."""
    tr = opt_obj(ps, "topologyRequest", "")
    if tr is None:
        return None, None, False, None
    p = ".topologyRequest"
    required = tr.get("required")
    preferred = tr.get("preferred")
    if required is not None:
        _label_key(required, f"{p}.required")
    if preferred is not None:
        _label_key(preferred, f"{p}.preferred")
    unconstrained = opt_bool(tr, "unconstrained", p, False)
    if sum((required is not None, preferred is not None, unconstrained)) > 1:
        fail(p, "must set at most one of required, preferred and unconstrained")
    group = tr.get("podSetGroupName")
    if group is not None:
        if not isinstance(group, str) or subdomain_problem(group) is not None:
            fail(f"{p}.podSetGroupName", "must be a DNS-1123 subdomain" if isinstance(group, str)
                 else "must be a string")
    return required, preferred, unconstrained, group


def pod_set_placement(ps: dict, name: str) -> PodSetPlacement | None:
    """The placement constraints of one ``spec.podSets[i]`` named ``name`` (module docstring), or
    ``None`` when it has none.  Error paths are relative to the podSet (``.topologyRequest.required``,
    ``.template.spec.tolerations[0].effect``).

    Raises:
        EventError: a malformed constraint, naming the field.
    """
    required, preferred, unconstrained, group = _topology_request(ps)
    selector: tuple[tuple[str, str], ...] = ()
    affinity: tuple[tuple[NodeSelectorRequirement, ...], ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    template = ps.get("template")
    tspec = template.get("spec") if isinstance(template, dict) else None
    if isinstance(tspec, dict):
        p = ".template.spec"
        selector = smap(tspec.get("nodeSelector"), f"{p}.nodeSelector")
        affinity = _affinity(tspec, p)
        tolerations = _tolerations(tspec, p)
    if not (selector or affinity or tolerations or required or preferred or unconstrained or group):
        return None
    return PodSetPlacement(name, selector, affinity, tolerations, required, preferred, unconstrained, group)


def pod_placement(meta: dict, spec: dict) -> PlacementRequest | None:
    """A ``v1`` Pod's placement constraints: ``spec.nodeSelector``, required node affinity and
    ``spec.tolerations`` as one ``PodSetPlacement`` named ``main``, and KAI's topology annotations
    (``workload_placement``); ``None`` when it has none.

    Raises:
        EventError: a malformed constraint, naming the field (``object.spec.tolerations[0].effect``).
    """
    p = "object.spec"
    selector = smap(spec.get("nodeSelector"), f"{p}.nodeSelector")
    affinity = _affinity(spec, p)
    tolerations = _tolerations(spec, p)
    own = [PodSetPlacement("main", selector, affinity, tolerations)] if selector or affinity or tolerations else []
    return workload_placement(meta, own)


def workload_placement(meta: dict, pod_sets: list[PodSetPlacement]) -> PlacementRequest | None:
    """A Workload's ``PlacementRequest``: KAI's topology annotations of ``metadata.annotations`` and
    the podSets' constraints; ``None`` when there is none of either.

    Raises:
        EventError: at ``object.metadata.annotations[...]``: a level that is not a label key, a
            level without ``kai.scheduler/topology``, or a topology name without a level.
    """
    annotations = meta.get("annotations")
    topology = required = preferred = None
    if isinstance(annotations, dict):
        ap = "object.metadata.annotations"
        topology = annotations.get(TOPOLOGY_ANNOTATION)
        required = annotations.get(REQUIRED_ANNOTATION)
        preferred = annotations.get(PREFERRED_ANNOTATION)
        if topology is not None and (not isinstance(topology, str) or subdomain_problem(topology) is not None):
            fail(f"{ap}[{TOPOLOGY_ANNOTATION}]", "must be a Topology name (DNS-1123 subdomain)")
        if required is not None:
            _label_key(required, f"{ap}[{REQUIRED_ANNOTATION}]")
        if preferred is not None:
            _label_key(preferred, f"{ap}[{PREFERRED_ANNOTATION}]")
        if topology is None and (required is not None or preferred is not None):
            fail(f"{ap}[{TOPOLOGY_ANNOTATION}]", "required when a topology placement level is given")
        if topology is not None and required is None and preferred is None:
            fail(f"{ap}[{REQUIRED_ANNOTATION}]",
                 f"{REQUIRED_ANNOTATION} or {PREFERRED_ANNOTATION} is required with {TOPOLOGY_ANNOTATION}")
    if topology is None and not pod_sets:
        return None
    return PlacementRequest(topology, required, preferred, tuple(pod_sets))


def topology_assignment_nodes(raw: Any, path: str, count: int) -> tuple[tuple[str, int], ...]:
    """The pods per node of an observed podSet assignment's ``topologyAssignment`` (Kueue's
    ``levels`` + ``domains[{values, count}]`` shape, ``values`` one per level, top first): sorted
    ``(node, count)`` when the last level is ``kubernetes.io/hostname`` (its value is the node
    name), else ``()`` (a domain above the node level names no node to charge).  ``path`` prefixes
    errors (relative, as the admission parser reports them).

    Raises:
        EventError: a malformed assignment, or domain counts that do not add up to ``count``.
    """
    if raw is None:
        return ()
    ta = as_obj(raw, path)
    levels = opt_list(ta, "levels", path)
    if not levels:
        fail(f"{path}.levels", "must have at least 1 item")
    for i, level in enumerate(levels):
        _label_key(level, f"{path}.levels[{i}]")
    nodes: dict[str, int] = {}
    total = 0
    for i, d in enumerate(opt_list(ta, "domains", path) or ()):
        dp = f"{path}.domains[{i}]"
        dom = as_obj(d, dp)
        values = opt_list(dom, "values", dp) or []
        if len(values) != len(levels):
            fail(f"{dp}.values", f"must have one value per level ({len(levels)}), got {len(values)}")
        for j, v in enumerate(values):
            if not isinstance(v, str) or label_value_problem(v) is not None:
                fail(f"{dp}.values[{j}]", "must be a label value")
        n = dom.get("count")
        if type(n) is not int or n < 1:
            fail(f"{dp}.count", "must be a positive integer")
        total += n
        nodes[values[-1]] = nodes.get(values[-1], 0) + n
    if total != count:
        fail(f"{path}.domains", f"counts add up to {total}, the podSet assignment's count is {count}")
    return tuple(sorted(nodes.items())) if levels[-1] == HOSTNAME else ()


KINDS: dict[str, dict[str, tuple[Callable[[dict, str, int], KubeObject], bool]]] = {
    KAI_API_VERSION: {"Topology": (_parse_topology, False)},
    KUEUE_API_VERSION: {"Topology": (_parse_topology, False)},
}
"""apiVersion → kind → ``(parser, namespaced)``."""
