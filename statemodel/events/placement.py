"""Parsers of what placement reads: ``Topology`` objects and a Workload's placement constraints.

* ``kai.scheduler/v1alpha1`` and ``kueue.x-k8s.io/v1alpha1`` ``Topology``: ``spec.levels[].nodeLabel``,
  top level first; 1 to 16 levels, unique, each a label key, ``kubernetes.io/hostname`` only as
  the last level (KAI ``pkg/apis/kai/v1alpha1/topology_types.go``, reference/kai.md §1; Kueue's
  CRD has the same shape and rules).
* Per podSet (``pod_set_placement``): Kueue's ``topologyRequest`` (``required``, ``preferred``,
  ``unconstrained``, ``podSetGroupName``, ``podSetSliceRequiredTopology``, ``podSetSliceSize``;
  ``apis/kueue/v1beta2`` ``PodSetTopologyRequest`` — at most one of the three modes; the two slice
  fields together or not at all), the pod template's ``metadata.labels[kai.scheduler/subgroup-name]``
  (KAI's pod label naming its sub-group), and of the pod template ``spec.nodeSelector``,
  ``spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[]
  .matchExpressions[]`` (operators ``In``, ``NotIn``, ``Exists``, ``DoesNotExist``, ``Gt``, ``Lt``,
  with Kubernetes' value rules) and ``spec.tolerations``.
* Per Workload (``workload_placement``): KAI's ``kai.scheduler/topology``,
  ``kai.scheduler/topology-required-placement`` and ``kai.scheduler/topology-preferred-placement``
  annotations (the pod-grouper copies them into ``PodGroup.spec.topologyConstraint``); a level
  without ``kai.scheduler/topology`` is an error, as is a topology without a level.  The
  ``kai.scheduler/subgroups`` annotation: a JSON list shaped as KAI's ``PodGroup.spec.subGroups``
  (``name``, ``minMember``, ``parent``, ``topologyConstraint{topology, requiredTopologyLevel,
  preferredTopologyLevel}``).  Across podSets: Kueue's podSet groups (``podSetGroupName``: exactly
  2 podSets, one of 1 pod, the same ``required`` / ``preferred`` level, no slices — Kueue's
  ``ValidatePodSetGroupingTopology``), a slice size dividing the podSet's count, and sub-groups
  that form a tree whose pods select leaves, each ``minMember`` at most the pods under it.

Every rejection names the field.  Pure.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from statemodel.events.fields import (
    as_obj, choice, fail, members, opt_bool, opt_list, opt_name, opt_obj, opt_str, req_str, shown, smap,
)
from statemodel.events.names import label_value_problem, qualified_name_problem, subdomain_problem
from statemodel.objects import (
    KubeObject, NodeSelectorRequirement, PlacementRequest, PodSetPlacement, SubGroup, Taint, TaintEffect, Toleration, Topology,
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
SUBGROUPS_ANNOTATION = "kai.scheduler/subgroups"
"""A Workload's KAI sub-groups: a JSON list shaped as ``PodGroup.spec.subGroups``."""
SUBGROUP_LABEL = "kai.scheduler/subgroup-name"
"""KAI's pod label naming the sub-group its pod belongs to (on a podSet's pod template)."""
MAX_SUBGROUPS = 64
"""Most sub-groups a Workload may declare (this engine's bound)."""

_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
_TOLERATION_OPERATORS = ("Equal", "Exists")
_EFFECTS = tuple(str(e) for e in TaintEffect)
_TAINT_EFFECTS = members(*TaintEffect)


def _label_key(value: Any, path: str) -> str:
    if not isinstance(value, str) or not value:
        fail(path, "must not be empty" if value == "" else "must be a string")
    problem = qualified_name_problem(value)
    if problem is not None:
        fail(path, problem)
    return value


def _opt_label_key(obj: dict, key: str, path: str) -> str | None:
    """``obj[key]`` checked as a label key (``_label_key``), or ``None`` when absent."""
    value = obj.get(key)
    return None if value is None else _label_key(value, path)


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


def parse_taints(spec: dict, field: str, p: str) -> tuple[Taint, ...]:
    """The ``v1`` ``Taint`` list at ``spec[field]`` (a Node's ``spec.taints``, a ResourceFlavor's
    ``spec.nodeTaints``), in order: ``key`` a qualified name (required), ``value`` a label value,
    ``effect`` one of ``NoSchedule``, ``PreferNoSchedule``, ``NoExecute`` (required).  ``p`` is the
    path of ``spec``.

    Raises:
        EventError: a malformed taint, naming the field (``object.spec.taints[0].effect``).
    """
    out = []
    for i, raw in enumerate(opt_list(spec, field, p) or ()):
        tp = f"{p}.{field}[{i}]"
        t = as_obj(raw, tp)
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
        out.append(Taint(key, value, effect))
    return tuple(out)


def parse_tolerations(spec: dict, p: str) -> tuple[Toleration, ...]:
    """The ``v1`` ``Toleration`` list at ``spec.tolerations`` (a pod template's, a ResourceFlavor's),
    in order: ``operator`` ``Equal`` (default) or ``Exists``; ``Exists`` takes no value; an empty
    key needs ``Exists``; ``effect`` empty (every effect) or a taint effect.  ``p`` is the path of
    ``spec``.

    Raises:
        EventError: a malformed toleration, naming the field (``….tolerations[0].operator``).
    """
    out = []
    for i, raw in enumerate(opt_list(spec, "tolerations", p) or ()):
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


def _topology_request(ps: dict) -> tuple[str | None, str | None, bool, str | None, str | None, int | None]:
    """``topologyRequest``: ``(required, preferred, unconstrained, podSetGroupName,
    podSetSliceRequiredTopology, podSetSliceSize)``; relative paths."""
    tr = opt_obj(ps, "topologyRequest", "")
    if tr is None:
        return None, None, False, None, None, None
    p = ".topologyRequest"
    required = _opt_label_key(tr, "required", f"{p}.required")
    preferred = _opt_label_key(tr, "preferred", f"{p}.preferred")
    unconstrained = opt_bool(tr, "unconstrained", p, False)
    if sum((required is not None, preferred is not None, unconstrained)) > 1:
        fail(p, "must set at most one of required, preferred and unconstrained")
    group = tr.get("podSetGroupName")
    if group is not None:
        if not isinstance(group, str) or subdomain_problem(group) is not None:
            fail(f"{p}.podSetGroupName", "must be a DNS-1123 subdomain" if isinstance(group, str)
                 else "must be a string")
    slice_level = _opt_label_key(tr, "podSetSliceRequiredTopology", f"{p}.podSetSliceRequiredTopology")
    slice_size = tr.get("podSetSliceSize")
    if slice_size is not None and (type(slice_size) is not int or slice_size < 1):
        fail(f"{p}.podSetSliceSize", "must be an integer greater than 0")
    if slice_level is not None and slice_size is None:
        fail(f"{p}.podSetSliceSize", "must be set when podSetSliceRequiredTopology is specified")
    if slice_level is None and slice_size is not None:
        fail(f"{p}.podSetSliceSize", "may not be set when podSetSliceRequiredTopology is not specified")
    if group is not None and slice_level is not None:
        fail(f"{p}.podSetGroupName", "may not be set when podSetSliceRequiredTopology is specified")
    return required, preferred, unconstrained, group, slice_level, slice_size


def pod_set_placement(ps: dict, name: str) -> PodSetPlacement | None:
    """The placement constraints of one ``spec.podSets[i]`` named ``name`` (module docstring), or
    ``None`` when it has none.  Error paths are relative to the podSet (``.topologyRequest.required``,
    ``.template.spec.tolerations[0].effect``).

    Raises:
        EventError: a malformed constraint, naming the field.
    """
    required, preferred, unconstrained, group, slice_level, slice_size = _topology_request(ps)
    selector: tuple[tuple[str, str], ...] = ()
    affinity: tuple[tuple[NodeSelectorRequirement, ...], ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    sub_group = None
    template = ps.get("template")
    tspec = template.get("spec") if isinstance(template, dict) else None
    tmeta = template.get("metadata") if isinstance(template, dict) else None
    if isinstance(tmeta, dict) and isinstance(tmeta.get("labels"), dict):
        sub_group = tmeta["labels"].get(SUBGROUP_LABEL)
        if sub_group is not None and (not isinstance(sub_group, str) or subdomain_problem(sub_group) is not None):
            fail(f".template.metadata.labels[{SUBGROUP_LABEL}]", "must be a sub-group name (DNS-1123 subdomain)")
    if isinstance(tspec, dict):
        p = ".template.spec"
        selector = smap(tspec.get("nodeSelector"), f"{p}.nodeSelector")
        affinity = _affinity(tspec, p)
        tolerations = parse_tolerations(tspec, p)
    if not (selector or affinity or tolerations or required or preferred or unconstrained or group or slice_level
            or sub_group):
        return None
    return PodSetPlacement(name, selector, affinity, tolerations, required, preferred, unconstrained, group,
                           slice_level, slice_size, sub_group)


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
    tolerations = parse_tolerations(spec, p)
    own = [PodSetPlacement("main", selector, affinity, tolerations)] if selector or affinity or tolerations else []
    return workload_placement(meta, own, [("main", 1)])


def workload_placement(meta: dict, pod_sets: list[PodSetPlacement], counts: list[tuple[str, int]]) -> PlacementRequest | None:
    """A Workload's ``PlacementRequest``: KAI's topology and sub-group annotations of
    ``metadata.annotations`` and the podSets' constraints (``counts``: every podSet's ``(name,
    count)`` in spec order); ``None`` when there is none of either.

    Raises:
        EventError: at ``object.metadata.annotations[...]``: a level that is not a label key, a
            level without ``kai.scheduler/topology``, a topology name without a level, a malformed
            sub-group; at ``object.spec.podSets[i]...``: a podSet group, slice size or sub-group
            label that breaks the rules of the module docstring.
    """
    annotations = meta.get("annotations")
    topology = required = preferred = None
    sub_groups: tuple[SubGroup, ...] = ()
    if isinstance(annotations, dict):
        ap = "object.metadata.annotations"
        topology = annotations.get(TOPOLOGY_ANNOTATION)
        if topology is not None and (not isinstance(topology, str) or subdomain_problem(topology) is not None):
            fail(f"{ap}[{TOPOLOGY_ANNOTATION}]", "must be a Topology name (DNS-1123 subdomain)")
        required = _opt_label_key(annotations, REQUIRED_ANNOTATION, f"{ap}[{REQUIRED_ANNOTATION}]")
        preferred = _opt_label_key(annotations, PREFERRED_ANNOTATION, f"{ap}[{PREFERRED_ANNOTATION}]")
        if topology is None and (required is not None or preferred is not None):
            fail(f"{ap}[{TOPOLOGY_ANNOTATION}]", "required when a topology placement level is given")
        if topology is not None and required is None and preferred is None:
            fail(f"{ap}[{REQUIRED_ANNOTATION}]",
                 f"{REQUIRED_ANNOTATION} or {PREFERRED_ANNOTATION} is required with {TOPOLOGY_ANNOTATION}")
        raw = annotations.get(SUBGROUPS_ANNOTATION)
        if raw is not None:
            sub_groups = _sub_groups(raw, f"{ap}[{SUBGROUPS_ANNOTATION}]", topology)
    _check_pod_sets(pod_sets, counts, sub_groups)
    if topology is None and not pod_sets and not sub_groups:
        return None
    return PlacementRequest(topology, required, preferred, tuple(pod_sets), sub_groups)


def _sub_groups(raw: Any, path: str, topology: str | None) -> tuple[SubGroup, ...]:
    """The ``kai.scheduler/subgroups`` annotation (module docstring): unique names, parents that
    exist and form no cycle, a topology for every constraint with a level."""
    if not isinstance(raw, str):
        fail(path, "must be a string holding a JSON list")
    try:
        items = json.loads(raw)
    except ValueError:
        fail(path, "must be a JSON list of sub-groups")
    if not isinstance(items, list):
        fail(path, "must be a JSON list of sub-groups")
    if len(items) > MAX_SUBGROUPS:
        fail(path, f"must have at most {MAX_SUBGROUPS} items, got {len(items)}")
    out: list[SubGroup] = []
    names: set[str] = set()
    for i, item in enumerate(items):
        ip = f"{path}[{i}]"
        g = as_obj(item, ip)
        name = g.get("name")
        if not isinstance(name, str) or subdomain_problem(name) is not None:
            fail(f"{ip}.name", "must be a sub-group name (DNS-1123 subdomain)")
        if name in names:
            fail(f"{ip}.name", f"duplicate sub-group {name!r}")
        names.add(name)
        min_member = g.get("minMember", 0)
        if type(min_member) is not int or min_member < 0:
            fail(f"{ip}.minMember", "must be a non-negative integer")
        parent = g.get("parent")
        if parent is not None and not isinstance(parent, str):
            fail(f"{ip}.parent", "must be a string")
        constraint = opt_obj(g, "topologyConstraint", ip)
        sub_topology = sub_required = sub_preferred = None
        if constraint is not None:
            cp = f"{ip}.topologyConstraint"
            sub_topology = opt_name(constraint, "topology", cp)
            sub_required = _opt_label_key(constraint, "requiredTopologyLevel", f"{cp}.requiredTopologyLevel")
            sub_preferred = _opt_label_key(constraint, "preferredTopologyLevel", f"{cp}.preferredTopologyLevel")
            if sub_topology is None and topology is None and (sub_required is not None or sub_preferred is not None):
                fail(f"{cp}.topology", f"required when a level is given and the Workload has no {TOPOLOGY_ANNOTATION}")
        out.append(SubGroup(name, min_member, parent, sub_topology, sub_required, sub_preferred))
    parents = {sg.name: sg.parent for sg in out}
    for i, sg in enumerate(out):
        if sg.parent is not None and sg.parent not in parents:
            fail(f"{path}[{i}].parent", f"sub-group {sg.parent!r} does not exist")
        seen = {sg.name}
        up = sg.parent
        while up is not None:
            if up in seen:
                fail(f"{path}[{i}].parent", f"sub-group {sg.name!r} is its own ancestor")
            seen.add(up)
            up = parents[up]
    return tuple(out)


def _check_pod_sets(pod_sets: list[PodSetPlacement], counts: list[tuple[str, int]],
                    sub_groups: tuple[SubGroup, ...]) -> None:
    """The rules across podSets (module docstring); errors at ``object.spec.podSets[i]``."""
    index = {name: i for i, (name, _) in enumerate(counts)}
    count_of = dict(counts)
    groups: dict[str, list[PodSetPlacement]] = {}
    for c in pod_sets:
        tp = f"object.spec.podSets[{index[c.pod_set]}].topologyRequest"
        if c.slice_size is not None and count_of[c.pod_set] % c.slice_size:
            fail(f"{tp}.podSetSliceSize", f"must divide the podSet's count {count_of[c.pod_set]}, got {c.slice_size}")
        if c.pod_set_group_name is not None:
            groups.setdefault(c.pod_set_group_name, []).append(c)
    for name, members in groups.items():
        paths = [f"object.spec.podSets[{index[c.pod_set]}].topologyRequest" for c in members]
        if len(members) != 2:
            fail(f"{paths[0]}.podSetGroupName",
                 f"can only define groups of exactly 2 pod sets, got: {len(members)} pod set(s)")
        a, b = members
        if count_of[a.pod_set] != 1 and count_of[b.pod_set] != 1:
            fail(f"{paths[0]}.podSetGroupName",
                 f"can only define groups where at least one pod set has only 1 replica, got: "
                 f"{count_of[a.pod_set]} replica(s) and {count_of[b.pod_set]} replica(s) in the group")
        for c, p in zip(members, paths):
            if c.required is None and c.preferred is None:
                fail(p, f"must specify required or preferred topology consistent with the other pod set in group {name!r}")
        if (a.required, a.preferred) != (b.required, b.preferred):
            fail(paths[1], f"must specify required or preferred topology consistent with the other pod set in group {name!r}")
        if a.sub_group != b.sub_group:
            fail(f"object.spec.podSets[{index[b.pod_set]}].template.metadata.labels[{SUBGROUP_LABEL}]",
                 f"the pod sets of group {name!r} must select the same sub-group")
    if not sub_groups:
        for c in pod_sets:
            if c.sub_group is not None:
                fail(f"object.spec.podSets[{index[c.pod_set]}].template.metadata.labels[{SUBGROUP_LABEL}]",
                     f"sub-group {c.sub_group!r} is not declared ({SUBGROUPS_ANNOTATION})")
        return
    declared = {g.name for g in sub_groups}
    inner = {g.parent for g in sub_groups if g.parent is not None}
    pods: dict[str, int] = {}
    for c in pod_sets:
        if c.sub_group is None:
            continue
        lp = f"object.spec.podSets[{index[c.pod_set]}].template.metadata.labels[{SUBGROUP_LABEL}]"
        if c.sub_group not in declared:
            fail(lp, f"sub-group {c.sub_group!r} is not declared ({SUBGROUPS_ANNOTATION})")
        if c.sub_group in inner:
            fail(lp, f"sub-group {c.sub_group!r} has sub-groups: pods select a sub-group without any")
        pods[c.sub_group] = pods.get(c.sub_group, 0) + count_of[c.pod_set]
    parents = {g.name: g.parent for g in sub_groups}
    under: dict[str, int] = {}
    for leaf, n in pods.items():
        up: str | None = leaf
        while up is not None:
            under[up] = under.get(up, 0) + n
            up = parents[up]
    for i, g in enumerate(sub_groups):
        if g.min_member > under.get(g.name, 0):
            fail(f"object.metadata.annotations[{SUBGROUPS_ANNOTATION}][{i}].minMember",
                 f"sub-group {g.name!r} has {under.get(g.name, 0)} pods, fewer than minMember {g.min_member}")


def _slice_domains(ta: dict, path: str, levels: int) -> list[tuple[list[str], Any, str]]:
    """Kueue v1beta2's compressed ``slices`` as ``(values, count, path)`` per domain: each slice
    covers ``domainCount`` domains; per level, a ``universal`` value for all of them or
    ``individual`` ``roots`` (one per domain) between an optional ``prefix`` and ``suffix``; pod
    counts ``universal`` (every domain) or ``individual`` (one per domain).  The count's path comes
    with it (the caller checks it)."""
    out: list[tuple[list[str], Any, str]] = []
    for i, raw in enumerate(opt_list(ta, "slices", path) or ()):
        sp = f"{path}.slices[{i}]"
        sl = as_obj(raw, sp)
        n = sl.get("domainCount")
        if type(n) is not int or n < 1:
            fail(f"{sp}.domainCount", "must be a positive integer")
        per_level = opt_list(sl, "valuesPerLevel", sp) or []
        if len(per_level) != levels:
            fail(f"{sp}.valuesPerLevel", f"must have one entry per level ({levels}), got {len(per_level)}")
        columns: list[list[str]] = []
        for j, raw_level in enumerate(per_level):
            lp = f"{sp}.valuesPerLevel[{j}]"
            lv = as_obj(raw_level, lp)
            universal, individual = lv.get("universal"), lv.get("individual")
            if (universal is None) == (individual is None):
                fail(lp, "exactly one of universal and individual must be set")
            if universal is not None:
                if not isinstance(universal, str) or label_value_problem(universal) is not None:
                    fail(f"{lp}.universal", "must be a label value")
                columns.append([universal] * n)
                continue
            ind = as_obj(individual, f"{lp}.individual")
            prefix = opt_str(ind, "prefix", f"{lp}.individual", "")
            suffix = opt_str(ind, "suffix", f"{lp}.individual", "")
            roots = opt_list(ind, "roots", f"{lp}.individual") or []
            if len(roots) != n:
                fail(f"{lp}.individual.roots", f"must have domainCount ({n}) items, got {len(roots)}")
            values = []
            for k, root in enumerate(roots):
                value = f"{prefix}{root}{suffix}" if isinstance(root, str) else None
                if value is None or label_value_problem(value) is not None:
                    fail(f"{lp}.individual.roots[{k}]", "must give a label value with the prefix and suffix")
                values.append(value)
            columns.append(values)
        counts = opt_obj(sl, "podCounts", sp)
        if counts is None:
            fail(f"{sp}.podCounts", "required")
        cp = f"{sp}.podCounts"
        universal, individual = counts.get("universal"), counts.get("individual")
        if (universal is None) == (individual is None):
            fail(cp, "exactly one of universal and individual must be set")
        if individual is not None:
            if not isinstance(individual, list) or len(individual) != n:
                fail(f"{cp}.individual", f"must be a list of domainCount ({n}) items")
            pods = list(individual)
        else:
            pods = [universal] * n
        for k in range(n):
            out.append(([column[k] for column in columns], pods[k],
                        f"{sp}.podCounts.individual[{k}]" if individual is not None else f"{sp}.podCounts.universal"))
    return out


def topology_assignment_nodes(raw: Any, path: str, count: int) -> tuple[tuple[str, int], ...]:
    """The pods per node of an observed podSet assignment's ``topologyAssignment`` — Kueue's
    ``levels`` + ``domains[{values, count}]`` shape (``values`` one per level, top first), or
    v1beta2's compressed ``levels`` + ``slices`` (``_slice_domains``), not both: sorted ``(node,
    count)`` when the last level is ``kubernetes.io/hostname`` (its value is the node name), else
    ``()`` (a domain above the node level names no node to charge).  ``path`` prefixes errors
    (relative, as the admission parser reports them).

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
    if ta.get("slices") is not None:
        if ta.get("domains") is not None:
            fail(path, "must set one of domains and slices, not both")
        for values, n, cp in _slice_domains(ta, path, len(levels)):
            if type(n) is not int or n < 1:
                fail(cp, "must be a positive integer")
            total += n
            nodes[values[-1]] = nodes.get(values[-1], 0) + n
        if total != count:
            fail(f"{path}.slices", f"pod counts add up to {total}, the podSet assignment's count is {count}")
        return tuple(sorted(nodes.items())) if levels[-1] == HOSTNAME else ()
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
