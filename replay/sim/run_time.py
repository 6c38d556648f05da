"""The run-time annotation: how a simulated history records each job's run time.

The simulator (``replay.sim.simulator``) writes, on the Workload (or, under the ``koordinator``
model, the Pod) of every job whose trace gives a run time, the annotation
``quotaledger.io/run-time`` with that run time as a Go duration string (``"1h2m3.5s"``,
``statemodel.timefmt.format_duration``).  The engine ignores it (docs/events.md "Annotations read
by the tools"); ``quotaledger whatif`` reads it to re-simulate finishes in its what-if branch
(``replay.resimulate``): the workload finishes its run time after each admission.  A history
without the annotation (an observed one) has no run times: its finishes are held fixed.
"""

from __future__ import annotations

from statemodel.errors import EventError
from statemodel.timefmt import format_duration, parse_duration

RUN_TIME_ANNOTATION = "quotaledger.io/run-time"
"""Annotation key holding a job's run time (Go duration) on a simulated Workload or Pod."""


def run_time_annotation(run_ms: int) -> dict[str, str]:
    """``{RUN_TIME_ANNOTATION: <Go duration of run_ms>}`` for ``metadata.annotations`` (``run_ms`` ≥ 0)."""
    return {RUN_TIME_ANNOTATION: format_duration(run_ms)}


def run_time_of(obj: object) -> int | None:
    """The run time in ms recorded on a Workload/Pod JSON object (``metadata.annotations``), or
    ``None`` when it has none or the value is not a valid non-negative Go duration (then the
    workload is treated as observed: its finishes are held fixed)."""
    if not isinstance(obj, dict) or obj.get("kind") not in ("Workload", "Pod"):
        return None
    meta = obj.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    if not isinstance(annotations, dict) or RUN_TIME_ANNOTATION not in annotations:
        return None
    try:
        return parse_duration(annotations[RUN_TIME_ANNOTATION], RUN_TIME_ANNOTATION)
    except EventError:
        return None
