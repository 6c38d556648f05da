"""Decisions the engine emits (EVENTS.md "Output: decisions").

A :class:`Decision` is built once, with every field, by the cluster that makes it, and never
changes: in the compiled engine its attributes are read-only (``Final``), and its JSON form is
computed at construction.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final, final

from statemodel.quantity import format_quantity
from statemodel.timefmt import format_time
from statemodel.workload import PodSetAssignment


class DecisionType(StrEnum):
    """The decision ``type``; each member's value is the JSON string."""

    ADMITTED = "Admitted"
    PREEMPTED = "Preempted"
    EVICTED = "Evicted"


ADMITTED: Final = DecisionType.ADMITTED
PREEMPTED: Final = DecisionType.PREEMPTED
EVICTED: Final = DecisionType.EVICTED


def assignments_json(pod_sets: list[PodSetAssignment], with_nodes: bool = False) -> list[dict]:
    """Kueue ``podSetAssignments`` JSON: flavors per resource and podSet-total usage as quantity strings,
    plus ``topologyAssignment`` when the podSet was placed on a topology, and with ``with_nodes`` its
    ``nodes`` (node -> pods) when it was placed (docs/placement.md)."""
    out = []
    for ps in pod_sets:
        entry = {
            "name": ps.name,
            "count": ps.count,
            "flavors": dict(sorted(ps.flavors.items())),
            "resourceUsage": {res: format_quantity(res, amount) for res, amount in sorted(ps.usage.items())},
        }
        if ps.topology is not None:
            entry["topologyAssignment"] = ps.topology
        if with_nodes and ps.nodes is not None:
            entry["nodes"] = dict(ps.nodes)
        out.append(entry)
    return out


def nodes_json(pod_sets: list[PodSetAssignment]) -> dict | None:
    """An ``Admitted`` decision's ``nodes``: pod set → node → pods, or ``None`` when nothing was placed."""
    placed = {ps.name: dict(ps.nodes) for ps in pod_sets if ps.nodes is not None}
    return placed or None


@final
class Decision:
    """One engine decision; ``seq`` is gap-free per cluster, ``cause`` the id of the event that caused it.

    ``time_ms`` is the engine clock (ms since the Unix epoch) when it was made, ``cluster`` the cluster
    that made it.  ``kind`` is a :class:`DecisionType`; the other fields are filled per kind as in
    EVENTS.md (``pod_sets`` and ``borrowing`` for ``Admitted``, with ``nodes`` when they were placed; ``reason``/``message`` otherwise,
    ``preemptor`` and ``preemptor_cluster_queue`` — the ClusterQueue the preemptor is queued in —
    for ``Preempted``).
    """

    __slots__ = ("seq", "cause", "time_ms", "cluster", "kind", "workload", "cluster_queue",
                 "pod_sets", "borrowing", "preemptor", "reason", "message", "preemptor_cluster_queue",
                 "_json")

    def __init__(self, seq: int, cause: str, time_ms: int, cluster: str, kind: DecisionType, workload: str,
                 cluster_queue: str | None, pod_sets: list[PodSetAssignment] | None = None,
                 borrowing: int = 0, preemptor: str | None = None, reason: str | None = None,
                 message: str | None = None, preemptor_cluster_queue: str | None = None) -> None:
        self.seq: Final = seq
        self.cause: Final = cause
        self.time_ms: Final = time_ms
        self.cluster: Final = cluster
        self.kind: Final = kind
        self.workload: Final = workload
        self.cluster_queue: Final = cluster_queue
        self.pod_sets: Final = pod_sets
        self.borrowing: Final = borrowing
        self.preemptor: Final = preemptor
        self.reason: Final = reason
        self.message: Final = message
        self.preemptor_cluster_queue: Final = preemptor_cluster_queue
        out = {"seq": seq, "cause": cause, "time": format_time(time_ms), "cluster": cluster,
               "type": kind, "workload": workload, "clusterQueue": cluster_queue}
        if kind == ADMITTED:
            out["podSetAssignments"] = assignments_json(pod_sets or [])
            out["borrowing"] = borrowing
            nodes = nodes_json(pod_sets or [])
            if nodes is not None:
                out["nodes"] = nodes
        else:
            if kind == PREEMPTED:
                out["preemptor"] = preemptor
                out["preemptorClusterQueue"] = preemptor_cluster_queue
            out["reason"] = reason
            out["message"] = message
        self._json: Final = out

    def to_json(self) -> dict:
        """The EVENTS.md decision object (JSON-ready dict; the same dict on every call, do not mutate)."""
        return self._json
