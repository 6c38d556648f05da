"""Parsers of the core Kubernetes API group (``v1``): Node.

A ``Node`` is read as ``kubectl get node -o json`` prints it: ``metadata.labels``,
``status.allocatable`` (quantities in base units), ``spec.unschedulable`` and ``spec.taints``.
Pure.
"""

from __future__ import annotations

from typing import Callable

from statemodel.events.fields import as_obj, choice, fail, members, opt_bool, opt_list, opt_obj, opt_str, qmap, req_str, smap
from statemodel.events.names import label_value_problem, qualified_name_problem
from statemodel.objects import KubeObject, Node, Taint, TaintEffect

API_VERSION = "v1"
"""The core group's only version."""

_TAINT_EFFECTS = members(*TaintEffect)


def _parse_node(o: dict, name: str, time_ms: int) -> Node:
    """Labels, ``status.allocatable`` (base units), ``spec.unschedulable`` and ``spec.taints``.

    Label and taint keys are Kubernetes qualified names, values label values (``statemodel.events.names``)."""
    labels = smap(o["metadata"].get("labels"), "object.metadata.labels")
    status = opt_obj(o, "status", "object") or {}
    alloc = qmap(status.get("allocatable"), "object.status.allocatable")
    spec = opt_obj(o, "spec", "object") or {}
    unschedulable = opt_bool(spec, "unschedulable", "object.spec", False)
    taints = []
    for i, t in enumerate(opt_list(spec, "taints", "object.spec") or ()):
        tp = f"object.spec.taints[{i}]"
        t = as_obj(t, tp)
        key = req_str(t, "key", tp)
        problem = qualified_name_problem(key)
        if problem is not None:
            fail(f"{tp}.key", problem)
        value = opt_str(t, "value", tp, "")
        problem = label_value_problem(value)
        if problem is not None:
            fail(f"{tp}.value", problem)
        effect = choice(t, "effect", tp, _TAINT_EFFECTS, None)
        if effect is None:
            fail(f"{tp}.effect", "required")
        taints.append(Taint(key, value, effect))
    return Node(name, labels, tuple(sorted(alloc.items())), unschedulable, tuple(taints))


KINDS: dict[str, dict[str, tuple[Callable[[dict, str, int], KubeObject], bool]]] = {
    API_VERSION: {"Node": (_parse_node, False)},
}
"""apiVersion → kind → ``(parser, namespaced)``."""
