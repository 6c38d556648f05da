"""Parsers of Koordinator's ``scheduling.sigs.k8s.io/v1alpha1`` group: ElasticQuota.

An ``ElasticQuota`` is read as users have it (reference/koordinator.md §1): ``spec.min``,
``spec.max`` (quantities in base units), the labels ``quota.scheduling.koordinator.sh/parent``,
``is-parent``, ``allow-lent-resource`` and ``allow-force-update``, and the annotations
``shared-weight`` (a JSON resource list) and ``namespaces`` (a JSON list of namespace names).

The checks of upstream's validating webhook that need no other object (``validateQuotaSelfItem``,
``pkg/webhook/elasticquota/quota_topology_check.go``) reject the event here: every ``min`` key must
be in ``max`` and ``min <= max`` per key (quantities are never negative, ``statemodel.quantity``).
The checks that need the tree (parent exists and is a parent, min sums, leaf-only pods, ...) are
the model's (``statemodel.quota.koordinator.validate``).  The mutating webhook's
``fixedSharedWeight`` is applied: a shared weight gets the missing keys from ``max`` and loses the
keys ``max`` does not have; all zero (or absent) means "use ``max``" (``None``).  Pure.
"""

from __future__ import annotations

from typing import Callable

import orjson

from statemodel.events.fields import fail, opt_obj, qmap, smap
from statemodel.events.names import annotation_value_problem
from statemodel.objects import ElasticQuota, KubeObject

API_VERSION = "scheduling.sigs.k8s.io/v1alpha1"
"""The group's version Koordinator uses."""
PREFIX = "quota.scheduling.koordinator.sh/"
"""Prefix of Koordinator's quota labels and annotations (``apis/extension/elastic_quota.go``)."""
LABEL_PARENT = PREFIX + "parent"
LABEL_IS_PARENT = PREFIX + "is-parent"
LABEL_ALLOW_LENT = PREFIX + "allow-lent-resource"
LABEL_ALLOW_FORCE_UPDATE = PREFIX + "allow-force-update"
ANNOTATION_SHARED_WEIGHT = PREFIX + "shared-weight"
ANNOTATION_NAMESPACES = PREFIX + "namespaces"
ROOT_QUOTA = "koordinator-root-quota"
"""The virtual parent of every first-level quota."""


def _shared_weight(raw: str | None, maximum: dict[str, int], path: str) -> tuple[tuple[str, int], ...] | None:
    """The ``shared-weight`` annotation fixed as upstream's mutating webhook does (module docstring)."""
    if raw is None:
        return None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        fail(path, "must be a JSON resource list, e.g. {\"cpu\": \"4\"}")
    weights = qmap(value, path)
    if not any(weights.values()):
        return None
    fixed = {res: weights.get(res, amount) for res, amount in maximum.items()}
    return tuple(sorted(fixed.items()))


def _namespaces(raw: str | None, path: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        fail(path, "must be a JSON list of namespace names")
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        fail(path, "must be a JSON list of namespace names")
    return tuple(sorted(set(value)))


def _parse_elastic_quota(o: dict, name: str, time_ms: int) -> ElasticQuota:
    """An ``ElasticQuota`` (module docstring): defaults parent root, leaf, lending allowed."""
    meta = o["metadata"]
    labels = dict(smap(meta.get("labels"), "object.metadata.labels"))
    annotations = dict(smap(meta.get("annotations"), "object.metadata.annotations", value_rule=annotation_value_problem))
    namespace = meta.get("namespace")
    if namespace is not None and not isinstance(namespace, str):
        fail("object.metadata.namespace", "must be a string")
    spec = opt_obj(o, "spec", "object") or {}
    minimum = qmap(spec.get("min"), "object.spec.min")
    maximum = qmap(spec.get("max"), "object.spec.max")
    for res, amount in minimum.items():
        if res not in maximum:
            fail(f"object.spec.min[{res}]", f"resource {res!r} of min is not in max")
        if amount > maximum[res]:
            fail(f"object.spec.min[{res}]", f"min {amount} is greater than max {maximum[res]}")
    weight = _shared_weight(annotations.get(ANNOTATION_SHARED_WEIGHT), maximum,
                            f"object.metadata.annotations[{ANNOTATION_SHARED_WEIGHT}]")
    parent = labels.get(LABEL_PARENT) or ROOT_QUOTA
    if parent == name:
        fail(f"object.metadata.labels[{LABEL_PARENT}]", "a quota cannot be its own parent")
    return ElasticQuota(name, namespace or "", tuple(sorted(minimum.items())), tuple(sorted(maximum.items())),
                        parent, labels.get(LABEL_IS_PARENT) == "true", labels.get(LABEL_ALLOW_LENT) != "false",
                        weight, _namespaces(annotations.get(ANNOTATION_NAMESPACES),
                                            f"object.metadata.annotations[{ANNOTATION_NAMESPACES}]"),
                        labels.get(LABEL_ALLOW_FORCE_UPDATE) == "true")


KINDS: dict[str, dict[str, tuple[Callable[[dict, str, int], KubeObject], bool]]] = {
    API_VERSION: {"ElasticQuota": (_parse_elastic_quota, False)},
}
"""apiVersion → kind → ``(parser, namespaced)``: quotas are known by name (upstream keys them so),
the namespace is read but not needed to delete one."""
