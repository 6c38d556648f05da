"""Parsers of Volcano's ``scheduling.volcano.sh/v1beta1`` group: Queue and PodGroup.

A ``Queue`` is read as users have it (reference/volcano.md, "Queue spec fields used"):
``spec.parent`` (``root`` when empty, as upstream's queue controller patches it), ``spec.weight``
(default 1), ``spec.capability``, ``spec.guarantee.resource``, ``spec.deserved`` (quantities in base
units), ``spec.reclaimable`` (default true), ``spec.priority`` (default 0) and ``status.state``
(default ``Open``).  A ``PodGroup``: ``spec.queue`` (default ``default``), ``spec.minMember``
(default 1), ``spec.minResources`` and ``spec.priorityClassName``.

The checks of upstream's queue webhook that need no other object (reference §6,
``validate_queue.go``) reject the event here: the weight within the CRD's bounds (1..65535), every
``guarantee`` key present in a given ``deserved`` and not above it, ``deserved <= capability`` on the
keys both name, a queue naming itself as parent.  The checks that need the tree (parent exists,
depth, capability within the ancestors', sums of the children's guarantee and deserved, leaf-only
PodGroups) are the model's (``statemodel.quota.volcano``).  Pure.
"""

from __future__ import annotations

from typing import Callable

from statemodel.events.fields import INT32_MAX, INT32_MIN, fail, int_in, opt_bool, opt_obj, opt_str, qmap
from statemodel.events.kueue import req_namespace
from statemodel.events.names import subdomain_problem
from statemodel.objects import KubeObject, PodGroup, Queue
from statemodel.timefmt import parse_time

API_VERSION = "scheduling.volcano.sh/v1beta1"
"""The group's version Volcano serves."""
ROOT = "root"
"""The root of the queue tree (upstream ``newDefaultAndRootQueue``)."""
DEFAULT_QUEUE = "default"
"""The queue of a PodGroup that names none, created by upstream beside ``root``."""
QUEUE_STATES = {s: s for s in ("Open", "Closed", "Closing", "Unknown")}
"""``status.state`` values (upstream ``QueueState``)."""
MAX_WEIGHT = 65535
"""The CRD's ``spec.weight`` maximum (minimum 1)."""


def _creation(meta: dict, time_ms: int) -> int:
    created = meta.get("creationTimestamp")
    return time_ms if created is None else parse_time(created, "object.metadata.creationTimestamp")


def _parse_queue(o: dict, name: str, time_ms: int) -> Queue:
    """A ``Queue`` (module docstring)."""
    p = "object.spec"
    spec = opt_obj(o, "spec", "object") or {}
    parent = opt_str(spec, "parent", p, "") or ROOT
    if parent != ROOT:
        problem = subdomain_problem(parent)
        if problem is not None:
            fail(f"{p}.parent", problem)
    if parent == name and name != ROOT:
        fail(f"{p}.parent", "a queue cannot be its own parent")
    raw_weight = spec.get("weight")
    weight = 1 if raw_weight is None else int_in(raw_weight, f"{p}.weight", 1, MAX_WEIGHT)
    capability = qmap(spec.get("capability"), f"{p}.capability")
    deserved = qmap(spec.get("deserved"), f"{p}.deserved")
    g = opt_obj(spec, "guarantee", p) or {}
    guarantee = qmap(g.get("resource"), f"{p}.guarantee.resource")
    if deserved:
        for res, amount in guarantee.items():
            if res not in deserved:
                fail(f"{p}.deserved[{res}]", f"guarantee names {res!r}: deserved must name it too")
            if deserved[res] < amount:
                fail(f"{p}.deserved[{res}]", f"deserved {deserved[res]} is less than guarantee {amount}")
    for res, amount in deserved.items():
        if res in capability and amount > capability[res]:
            fail(f"{p}.deserved[{res}]", f"deserved {amount} is greater than capability {capability[res]}")
    reclaimable = opt_bool(spec, "reclaimable", p, True)
    raw_priority = spec.get("priority")
    priority = 0 if raw_priority is None else int_in(raw_priority, f"{p}.priority", INT32_MIN, INT32_MAX)
    status = opt_obj(o, "status", "object") or {}
    state = status.get("state")
    if state is None or state == "":
        state = "Open"
    elif not isinstance(state, str) or state not in QUEUE_STATES:
        fail("object.status.state", f"must be one of {', '.join(QUEUE_STATES)}")
    return Queue(name, parent, weight, tuple(sorted(capability.items())), tuple(sorted(guarantee.items())),
                 tuple(sorted(deserved.items())), reclaimable, priority, state, _creation(o["metadata"], time_ms))


def _parse_pod_group(o: dict, name: str, time_ms: int) -> PodGroup:
    """A ``PodGroup`` (module docstring); ``metadata.namespace`` is required."""
    meta = o["metadata"]
    namespace = req_namespace(meta)
    p = "object.spec"
    spec = opt_obj(o, "spec", "object") or {}
    queue = opt_str(spec, "queue", p, "") or DEFAULT_QUEUE
    problem = subdomain_problem(queue)
    if problem is not None:
        fail(f"{p}.queue", problem)
    raw_min = spec.get("minMember")
    min_member = 1 if raw_min is None else int_in(raw_min, f"{p}.minMember", 0, INT32_MAX)
    min_resources = None
    if spec.get("minResources") is not None:
        min_resources = tuple(sorted(qmap(spec.get("minResources"), f"{p}.minResources").items()))
    return PodGroup(namespace, name, queue, min_member, min_resources,
                    opt_str(spec, "priorityClassName", p, ""), _creation(meta, time_ms))


KINDS: dict[str, dict[str, tuple[Callable[[dict, str, int], KubeObject], bool]]] = {
    API_VERSION: {"Queue": (_parse_queue, False), "PodGroup": (_parse_pod_group, True)},
}
"""apiVersion → kind → ``(parser, namespaced)``: queues are cluster-scoped, PodGroups namespaced."""
