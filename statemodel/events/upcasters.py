"""Upcasters: older shapes of events and objects upgraded to the current one before decoding.

Two version axes exist, and the parsers only ever see the current shape on both:

- the envelope ``v`` (docs/events.md "Envelope"): ``ENVELOPE_VERSION`` is the only version there
  is, so :func:`check_envelope_version` accepts it (or its absence) and rejects any other value
  with a reason.  A later envelope version adds its ``v1 -> v2`` function here and keeps accepting 1.
- the ``apiVersion`` of an object: a chain of steps, each a small pure ``dict -> dict`` function
  per kind that turns an object of one version into the next (``_STEPS``).  The functions never
  mutate their input (the event's canonical bytes are computed from the object as written) and
  never validate: a value of the wrong type moves to its new place unchanged and the parser
  rejects it there; :func:`original_path` maps the parser's error path back to the field the
  user wrote, so a rejection names the user's own field.

The step defined today: ``kueue.x-k8s.io/v1beta1`` -> ``v1beta2`` (Kueue's ``apis/kueue/v1beta2``
conversion): ``ClusterQueue.spec.cohort`` -> ``spec.cohortName``, ``Cohort.spec.parent`` ->
``spec.parentName``, and the v1beta1 flavor-fungibility values ``Borrow`` (``whenCanBorrow``) and
``Preempt`` (``whenCanPreempt``) -> ``MayStopSearch``.  A v1beta2 field name inside a v1beta1
object is dropped, as a v1beta1 API server prunes fields its schema does not have.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

from statemodel.errors import EventError

ENVELOPE_VERSION = 1
"""The envelope/payload schema version this engine reads (``v``; absent means 1)."""

Upcaster = Callable[[dict], dict]
"""One step for one kind: an object of the step's source version -> the same object one version later."""


def check_envelope_version(raw: dict) -> None:
    """Accept an event whose ``v`` is absent or ``ENVELOPE_VERSION``.

    Raises:
        EventError: at ``v`` for any other value (including ``true`` and ``"1"``).
    """
    v = raw.get("v")
    if v is not None and (type(v) is not int or v != ENVELOPE_VERSION):
        raise EventError("v", f"unsupported version {repr(v)[:64]}: must be {ENVELOPE_VERSION}")


def _same_shape(o: dict) -> dict:
    """A kind whose fields did not change in this step."""
    return o


def _renamed(spec: Any, old: str, new: str) -> dict:
    """A copy of ``spec`` with ``old`` moved to ``new`` (an existing ``new`` dropped)."""
    out = {k: v for k, v in spec.items() if k != old and k != new}
    if old in spec:
        out[new] = spec[old]
    return out


_OLD_FUNGIBILITY = {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"}


def _cluster_queue_v1beta1(o: dict) -> dict:
    """``spec.cohort`` -> ``spec.cohortName``; ``Borrow``/``Preempt`` -> ``MayStopSearch``."""
    spec = o.get("spec")
    if not isinstance(spec, dict):
        return o
    spec = _renamed(spec, "cohort", "cohortName")
    ff = spec.get("flavorFungibility")
    if isinstance(ff, dict) and any(ff.get(k) == v for k, v in _OLD_FUNGIBILITY.items()):
        spec["flavorFungibility"] = {
            k: "MayStopSearch" if k in _OLD_FUNGIBILITY and _OLD_FUNGIBILITY[k] == v else v for k, v in ff.items()
        }
    return {**o, "spec": spec}


def _cohort_v1beta1(o: dict) -> dict:
    """``spec.parent`` -> ``spec.parentName``."""
    spec = o.get("spec")
    if not isinstance(spec, dict):
        return o
    return {**o, "spec": _renamed(spec, "parent", "parentName")}


class _Step(NamedTuple):
    """One version step of an API group.

    ``target`` is the next apiVersion; ``kinds`` maps every kind of the source version to its
    upcaster; ``renamed`` maps, per kind, a field path in the target shape to the path it had in
    the source shape (paths below ``object.``).
    """

    target: str
    kinds: dict[str, Upcaster]
    renamed: dict[str, dict[str, str]]


_STEPS: dict[str, _Step] = {
    "kueue.x-k8s.io/v1beta1": _Step(
        "kueue.x-k8s.io/v1beta2",
        {
            "ResourceFlavor": _same_shape,
            "Cohort": _cohort_v1beta1,
            "ClusterQueue": _cluster_queue_v1beta1,
            "LocalQueue": _same_shape,
            "Workload": _same_shape,
        },
        {"ClusterQueue": {"spec.cohortName": "spec.cohort"}, "Cohort": {"spec.parentName": "spec.parent"}},
    ),
}


def is_older_version(api: str) -> bool:
    """Whether ``api`` is an older apiVersion that the chain upgrades."""
    return api in _STEPS


def current_version(api: str, kind: str) -> str | None:
    """The apiVersion an object of ``(api, kind)`` is upgraded to; ``None`` unless ``api`` is an
    older version that has ``kind``."""
    step = _STEPS.get(api)
    if step is None or kind not in step.kinds:
        return None
    while step is not None and kind in step.kinds:
        api = step.target
        step = _STEPS.get(api)
    return api


def upcast(o: dict) -> dict:
    """``o`` upgraded step by step to the current version of its group (``o`` itself is not changed).

    Call only for an ``(apiVersion, kind)`` that :func:`current_version` knows.
    """
    step = _STEPS.get(o["apiVersion"])
    while step is not None:
        o = step.kinds[o["kind"]]({**o, "apiVersion": step.target})
        step = _STEPS.get(step.target)
    return o


def original_path(api: str, kind: str, path: str) -> str:
    """An error ``path`` in the upgraded object, as the path of the same field in the object as
    written with apiVersion ``api`` (unchanged when the field kept its place)."""
    steps: list[_Step] = []  # latest step first
    step = _STEPS.get(api)
    while step is not None:
        steps.insert(0, step)
        step = _STEPS.get(step.target)
    for done in steps:
        renamed: dict[str, str] = done.renamed.get(kind, {})
        for new, old in renamed.items():
            full = f"object.{new}"
            if path == full or path.startswith((full + ".", full + "[")):
                path = f"object.{old}" + path[len(full):]
                break
    return path
