"""Taints and tolerations: which taints a pod's tolerations tolerate (Kubernetes
``v1.Toleration.ToleratesTaint`` and ``FindMatchingUntoleratedTaint``, as the ``TaintToleration``
scheduler filter and Kueue's flavor assigner use them).

A toleration tolerates a taint when its effect is empty or the taint's, and either its operator is
``Exists`` and its key empty or the taint's, or its operator is ``Equal`` with the taint's key and
value.  Only ``NoSchedule`` and ``NoExecute`` taints keep pods off (``PreferNoSchedule`` is a
preference).  Pure.
"""

from __future__ import annotations

from statemodel.objects import Taint, TaintEffect, Toleration

_KEEPS_OFF = (TaintEffect.NO_SCHEDULE, TaintEffect.NO_EXECUTE)


def tolerates(tolerations: tuple[Toleration, ...], key: str, value: str, effect: str) -> bool:
    """Whether one of ``tolerations`` tolerates the taint ``key=value:effect`` (module docstring)."""
    for t in tolerations:
        if t.effect and t.effect != effect:
            continue
        if t.operator == "Exists":
            if not t.key or t.key == key:
                return True
        elif t.key == key and t.value == value:
            return True
    return False


def untolerated(taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...]) -> Taint | None:
    """The first ``NoSchedule`` / ``NoExecute`` taint of ``taints`` (in order) that ``tolerations``
    do not tolerate, or ``None``."""
    for taint in taints:
        if taint.effect in _KEEPS_OFF and not tolerates(tolerations, taint.key, taint.value, taint.effect):
            return taint
    return None


def taint_text(taint: Taint) -> str:
    """A taint as Kueue's messages print it (Go's ``%s`` of a ``v1.Taint`` value without
    ``timeAdded``): ``{key value effect <nil>}``, e.g. ``{instance spot NoSchedule <nil>}``."""
    return f"{{{taint.key} {taint.value} {taint.effect} <nil>}}"
