"""Each ClusterQueue's admitted workloads in Kueue's candidate order, kept between victim searches
(Kueue ``common/ordering.go`` ``CandidatesOrdering``, reference/kueue.md §4.1).

Within one ClusterQueue Kueue's candidate order is: evicting first, then lower priority, more
recently admitted, and uid (our final key: the workload key, unique).  A victim search reads a
ClusterQueue's candidates from the front of that order and usually stops after a few, so sorting
every admitted workload of every ClusterQueue it visits, on every search, is the cost to avoid:
the index sorts a ClusterQueue's workloads once and keeps the result until the ClusterQueue's
admitted set (or a member's priority, admission time or eviction state) changes, which the cluster
state reports with :meth:`CandidateIndex.touch`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from statemodel.workload import WorkloadInfo

QueueKey = tuple[int, int, str, str]
"""``(priority, -admission time in ms, uid, workload key)``: the candidate order inside one
ClusterQueue among workloads of the same eviction state (ascending = preempted first)."""


def queue_key(info: "WorkloadInfo") -> QueueKey:
    """The workload's place in its ClusterQueue's candidate order (``QueueKey``); a workload without
    an admission time sorts as admitted at 0 (Kueue: the zero time)."""
    admitted = info.admitted_ms if info.admitted_ms is not None else 0
    return (info.obj.priority, -admitted, info.obj.uid, info.key)


class OrderedQueue:
    """One ClusterQueue's admitted workloads in candidate order.

    Attributes:
        evicting: the evicting ones (``WorkloadInfo.evicting``), in ``queue_key`` order.
        rest: the others, in ``queue_key`` order.  keys: ``queue_key`` of each of ``rest``.
    """

    __slots__ = ("evicting", "rest", "keys")

    def __init__(self, evicting: list["WorkloadInfo"], rest: list["WorkloadInfo"], keys: list[QueueKey]) -> None:
        self.evicting = evicting
        self.rest = rest
        self.keys = keys


class CandidateIndex:
    """Per ClusterQueue name, its admitted workloads in candidate order (:class:`OrderedQueue`),
    built on first use and dropped by :meth:`touch`.  Costs: O(k log k) for a ClusterQueue of k
    admitted workloads once per change of that ClusterQueue; O(1) per read otherwise."""

    def __init__(self) -> None:
        self._queues: dict[str, OrderedQueue] = {}

    def touch(self, cluster_queue: str) -> None:
        """``cluster_queue``'s admitted workloads changed (one admitted, released, chosen as a victim
        awaiting eviction, or given a new priority)."""
        self._queues.pop(cluster_queue, None)

    def clear(self) -> None:
        """Forget everything (the admitted sets were replaced)."""
        self._queues.clear()

    def ordered(self, admitted: "dict[str, dict[str, WorkloadInfo]]", cluster_queue: str) -> OrderedQueue:
        """``cluster_queue``'s members of ``admitted`` (``ClusterState.admitted``) in candidate order."""
        got = self._queues.get(cluster_queue)
        if got is None:
            keyed = sorted((queue_key(info), info) for info in admitted.get(cluster_queue, {}).values())
            evicting: list["WorkloadInfo"] = []
            rest: list["WorkloadInfo"] = []
            keys: list[QueueKey] = []
            for key, info in keyed:
                if info.evicting:
                    evicting.append(info)
                else:
                    rest.append(info)
                    keys.append(key)
            got = self._queues[cluster_queue] = OrderedQueue(evicting, rest, keys)
        return got
