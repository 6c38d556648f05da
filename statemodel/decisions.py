"""Decisions the engine emits (EVENTS.md "Output: decisions")."""

from __future__ import annotations

from statemodel.quantity import format_quantity
from statemodel.timefmt import format_time
from statemodel.workload import PodSetAssignment

ADMITTED = "Admitted"
PREEMPTED = "Preempted"
EVICTED = "Evicted"


def assignments_json(pod_sets: list[PodSetAssignment]) -> list[dict]:
    """Kueue ``podSetAssignments`` JSON: flavors per resource and podSet-total usage as quantity strings."""
    return [
        {
            "name": ps.name,
            "count": ps.count,
            "flavors": dict(sorted(ps.flavors.items())),
            "resourceUsage": {res: format_quantity(res, amount) for res, amount in sorted(ps.usage.items())},
        }
        for ps in pod_sets
    ]


class Decision:
    """One engine decision; ``seq`` is gap-free per cluster, ``cause`` the id of the event that caused it.

    ``kind`` is ``Admitted``, ``Preempted`` or ``Evicted``; the other fields are filled per kind as in
    EVENTS.md (``pod_sets`` and ``borrowing`` for ``Admitted``; ``reason``/``message`` otherwise).
    """

    __slots__ = ("seq", "cause", "time_ms", "cluster", "kind", "workload", "cluster_queue",
                 "pod_sets", "borrowing", "preemptor", "reason", "message", "_json")

    def __init__(self, seq: int, cause: str, time_ms: int, cluster: str, kind: str, workload: str,
                 cluster_queue: str | None, pod_sets: list[PodSetAssignment] | None = None,
                 borrowing: int = 0, preemptor: str | None = None, reason: str | None = None,
                 message: str | None = None) -> None:
        self.seq = seq
        self.cause = cause
        self.time_ms = time_ms
        self.cluster = cluster
        self.kind = kind
        self.workload = workload
        self.cluster_queue = cluster_queue
        self.pod_sets = pod_sets
        self.borrowing = borrowing
        self.preemptor = preemptor
        self.reason = reason
        self.message = message
        self._json: dict | None = None

    def to_json(self) -> dict:
        """The EVENTS.md decision object (JSON-ready dict; built once, do not mutate)."""
        if self._json is not None:
            return self._json
        out = self._json = {"seq": self.seq, "cause": self.cause, "time": format_time(self.time_ms), "cluster": self.cluster,
               "type": self.kind, "workload": self.workload, "clusterQueue": self.cluster_queue}
        if self.kind == ADMITTED:
            out["podSetAssignments"] = assignments_json(self.pod_sets or [])
            out["borrowing"] = self.borrowing
        else:
            if self.kind == PREEMPTED:
                out["preemptor"] = self.preemptor
            out["reason"] = self.reason
            out["message"] = self.message
        return out
