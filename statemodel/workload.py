"""The engine's runtime record of one Workload (Kueue ``workload.Info``).

Holds the parsed object plus what the engine derived: per-podSet total requests, status,
current quota charge, pending reason and queue bookkeeping.  Status values are
``Pending``, ``Admitted`` and ``Finished`` (Kueue ``workload.Status`` collapsed to what the
engine can observe).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from statemodel.objects import FlavorResource, Workload
from statemodel.reasons import PendingReason


class WorkloadStatus(StrEnum):
    """Where a workload stands: waiting in a queue, holding quota, or done."""

    PENDING = "Pending"
    ADMITTED = "Admitted"
    FINISHED = "Finished"


PENDING: Final = WorkloadStatus.PENDING
ADMITTED: Final = WorkloadStatus.ADMITTED
FINISHED: Final = WorkloadStatus.FINISHED


class PendingCondition:
    """Why a workload waits, as Kueue reports its ``QuotaReserved=False`` condition: ``reason``
    (``statemodel.reasons.PendingReason``) and ``message`` (immutable)."""

    def __init__(self, reason: PendingReason, message: str) -> None:
        self.reason: Final = reason
        self.message: Final = message


class PodSetAssignment:
    """Engine-side assignment of one podSet: ``flavors`` resource → flavor, ``usage`` resource → total;
    with placement, ``topology`` is Kueue's ``topologyAssignment`` JSON (``None`` without one) and
    ``nodes`` the pods per node as sorted ``(node, pods)`` (``None`` when not placed)."""

    __slots__ = ("name", "count", "flavors", "usage", "topology", "nodes")

    def __init__(self, name: str, count: int, flavors: dict[str, str], usage: dict[str, int],
                 topology: dict | None = None, nodes: list[tuple[str, int]] | None = None) -> None:
        self.name = name
        self.count = count
        self.flavors = flavors
        self.usage = usage
        self.topology = topology
        self.nodes = nodes


class WorkloadInfo:
    """A workload known to the engine.

    Attributes:
        obj: the last applied ``Workload``.
        key: ``namespace/name``.
        order: queue order key ``(-priority, creation_ms, uid)`` (Kueue heap: priority desc,
            timestamp asc, UID asc).
        totals: per podSet, sorted ``(resource, podSet total)`` in base units (per-pod × count).
        status: a :class:`WorkloadStatus`.
        local_queue: ``namespace/queueName``; cluster_queue: the ClusterQueue it is queued in or holds
            quota of (``None`` when its LocalQueue is missing).
        assignment: podSet assignments while admitted; charge: quota held per ``(flavor, resource)``.
        borrowing: the admission's borrowing height (0 = within nominal).
        reason / message: Kueue ``QuotaReserved=False`` reason and message while pending (the message
            may be an object rendered by ``str``, see ``flavorassigner.NoFitMessage``).
        token: bumped whenever the workload is (re)queued or leaves a queue, to invalidate stale
            heap entries.  park: bumped whenever it is set aside or woken, to invalidate wake entries.
        queued_ms: event time it (last) entered the queue; admitted_ms: time of admission.
        observed: ``None``, or whether the engine agreed with an observed admission.
        preempted_by / preemption_reason: the workload (``namespace/name``) that preempted this one
            and the ``statemodel.reasons.PreemptionReason``; set by the ``Preempted`` decision, kept
            while it waits again (and, with ``releaseOn: Eviction``, while it is admitted awaiting its
            eviction: then it is *evicting*), cleared when it is admitted again (Kueue resets its
            ``Preempted`` condition on a new quota reservation).
        victims: keys of the workloads this one preempted for its current or awaited admission
            (cleared when it goes back to a queue after an eviction).
        preempting: it has just had its victims' quota released (``releaseOn: Decision``) and is tried
            first in the next cycle (Kueue's preemptor that waits for its own preemptions).
        preempted_in_step: it was preempted and released on the decision in the step being applied;
            it is no victim again in that step (``ClusterState.preempt``).
        nodes: what it holds on nodes while admitted with placement: ``(node, pods, amounts)`` with
            ``amounts`` resource → base units on that node (``[]`` when it holds none).
    """

    __slots__ = (
        "obj", "key", "order", "totals", "status", "local_queue", "cluster_queue", "assignment",
        "charge", "borrowing", "reason", "message", "token", "park", "queued_ms", "admitted_ms", "observed",
        "preempted_by", "preemption_reason", "victims", "preempting", "preempted_in_step", "nodes",
    )

    def __init__(self, obj: Workload, now_ms: int) -> None:
        self.key = obj.key
        self.status = PENDING
        self.cluster_queue: str | None = None
        self.assignment: list[PodSetAssignment] | None = None
        self.charge: dict[FlavorResource, int] = {}
        self.borrowing = 0
        self.reason: str | None = None
        self.message: object = ""
        self.token = 0
        self.park = 0
        self.queued_ms = now_ms
        self.admitted_ms: int | None = None
        self.observed: bool | None = None
        self.preempted_by: str | None = None
        self.preemption_reason: str | None = None
        self.victims: list[str] = []
        self.preempting = False
        self.preempted_in_step = False
        self.nodes: list[tuple[str, int, dict[str, int]]] = []
        self.set_object(obj)

    @property
    def evicting(self) -> bool:
        """Admitted but already chosen as a victim: it holds its quota until its eviction is
        observed (``releaseOn: Eviction``)."""
        return self.status == ADMITTED and self.preempted_by is not None

    def set_object(self, obj: Workload) -> None:
        """Adopt a (new version of the) Workload object and recompute derived request totals."""
        self.obj = obj
        self.local_queue = f"{obj.namespace}/{obj.queue_name}"
        self.order = (-obj.priority, obj.creation_ms, obj.uid)
        self.totals = [
            (ps.name, ps.count, tuple((res, amount * ps.count) for res, amount in ps.requests))
            for ps in obj.pod_sets
        ]
