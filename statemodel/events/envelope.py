"""The v1 event envelope as a typed value (EVENTS.md "Envelope" and "Types").

``statemodel.events.decode.parse_event`` builds these from JSON; the reducer
(``statemodel.engine.Engine.apply``) consumes them.  ``canonical`` is the
event's JSON with sorted keys and no whitespace (orjson ``OPT_SORT_KEYS``), the
form that enters the hash chain, so key order and whitespace in the input do not
change the hash.
"""

from __future__ import annotations

from dataclasses import dataclass

from statemodel.objects import Admission, KubeObject, ObjectRef

EVENT_TYPES = ("Applied", "Deleted", "WorkloadAdmitted", "WorkloadEvicted", "WorkloadFinished", "Tick", "Batch")


@dataclass(frozen=True, slots=True)
class Event:
    """One validated event.

    Attributes:
        id: unique per cluster; a repeated id is a duplicate.
        time_ms: event time, integer ms since the Unix epoch (UTC).
        cluster: resource pool name (default ``"default"``).
        type: one of ``EVENT_TYPES``.
        canonical: canonical JSON bytes of the whole event (hash-chain input).
        obj: the object of an ``Applied`` event.
        ref: the target of a ``Deleted`` event.
        workload: ``ns/name`` for ``WorkloadAdmitted`` / ``WorkloadEvicted`` / ``WorkloadFinished``.
        admission: the observed admission of ``WorkloadAdmitted``.
        reason: the reason of ``WorkloadEvicted``.
        events: the inner events of a ``Batch``, in order.
    """

    id: str
    time_ms: int
    cluster: str
    type: str
    canonical: bytes
    obj: KubeObject | None = None
    ref: ObjectRef | None = None
    workload: str | None = None
    admission: Admission | None = None
    reason: str | None = None
    events: tuple["Event", ...] = ()
