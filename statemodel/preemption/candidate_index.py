"""Each ClusterQueue's admitted workloads in Kueue's candidate order, kept between victim searches
(Kueue ``common/ordering.go`` ``CandidatesOrdering``, reference/kueue.md §4.1).

Within one ClusterQueue Kueue's candidate order is: evicting first, then lower priority, more
recently admitted, and uid (our final key: the workload key, unique).  A victim search reads a
ClusterQueue's candidates from the front of that order and usually stops after a few, so sorting
every admitted workload of every ClusterQueue it visits, on every search, is the cost to avoid:
the index sorts a ClusterQueue's workloads once and keeps the result until the ClusterQueue's
admitted set (or a member's priority, admission time or eviction state) changes, which the cluster
state reports with :meth:`CandidateIndex.touch`.

Per Cohort the index also keeps its child ClusterQueues ordered by the key of their first workload
(:meth:`CandidateIndex.children_by_first`), so a search walks a Cohort's ClusterQueues in the order
their candidates come instead of opening every one of them (``candidates._Merge``; a Cohort of a
hundred ClusterQueues costs a search O(log) per ClusterQueue it reaches, not O(hundred) per
opening), and the smallest key of its subtree's admitted workloads
(:meth:`CandidateIndex.subtree_min`): a lower bound of every candidate below the Cohort, so a search
reads a subtree only once its bound comes first; a ClusterQueue's change moves it in its Cohort's
order and drops the bound of its ancestors, a change of the tree drops them all.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from typing import TYPE_CHECKING

from statemodel.objects import FlavorResource

if TYPE_CHECKING:
    from statemodel.hierarchy import Hierarchy
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
    built on first use and dropped by :meth:`touch`; per Cohort its child ClusterQueues by first key
    (:meth:`children_by_first`) and the smallest ``queue_key`` below it (:meth:`subtree_min`); over
    every ClusterQueue the lowest priority admitted (:meth:`lowest_priority`) and the least charge per
    flavor-resource (:meth:`least_charge`).  Costs: O(k log k) for
    a ClusterQueue of k admitted workloads once per change of that ClusterQueue, and O(log c) plus a
    move of c pointers to refile it among the c children of its Cohort; a Cohort's bound O(its child
    Cohorts) once per change below it; O(1) per read otherwise."""

    def __init__(self) -> None:
        self._queues: dict[str, OrderedQueue] = {}
        self._mins: dict[str, list[QueueKey]] = {}
        self._changed: set[str] = set()
        self._new = True  # nothing seen yet: the first refresh reads every ClusterQueue
        self.evicting_queues: set[str] = set()
        self._lowest: dict[str, int] = {}  # ClusterQueue -> priority of its first non-evicting workload
        self._lowest_count: dict[int, int] = {}  # priority -> ClusterQueues whose lowest it is
        self._by_first: dict[str, list[tuple[QueueKey, str]]] = {}  # Cohort -> children_by_first
        self._filed: dict[str, tuple[str, QueueKey]] = {}  # ClusterQueue -> (Cohort, key) in _by_first
        self._floors: dict[str, dict[FlavorResource, int]] = {}  # ClusterQueue -> its least charges
        self._floor_count: dict[FlavorResource, dict[int, int]] = {}  # fr -> least charge -> ClusterQueues
        self._floor_changed: set[str] = set()  # ClusterQueues whose least charges are to be recounted

    def touch(self, cluster_queue: str) -> None:
        """``cluster_queue``'s admitted workloads changed (one admitted, released, chosen as a victim
        awaiting eviction, given a new priority, or a candidate again at the end of the step it was
        preempted in)."""
        self._queues.pop(cluster_queue, None)
        self._changed.add(cluster_queue)

    def tree_changed(self) -> None:
        """The Cohort tree (or what a ClusterQueue belongs to) may have changed: drop every bound and
        every Cohort's order of its ClusterQueues."""
        self._mins.clear()
        self._by_first.clear()
        self._filed.clear()

    def refresh(self, admitted: "dict[str, dict[str, WorkloadInfo]]", hierarchy: "Hierarchy") -> None:
        """Bring the Cohort bounds and ``evicting_queues`` (the ClusterQueues holding an evicting
        workload) up to date with the ClusterQueues touched since the last call (every ClusterQueue
        of ``admitted`` on the first call: an index made for a restored state was never touched)."""
        if self._new:
            self._new = False
            self._changed.update(admitted)
        if not self._changed:
            return
        cohorts = hierarchy.cohorts
        lowest, count = self._lowest, self._lowest_count
        for cq in self._changed:  # order-free: every step only drops, counts or recomputes
            ordered = self.ordered(admitted, cq)
            if ordered.evicting:
                self.evicting_queues.add(cq)
            else:
                self.evicting_queues.discard(cq)
            was = lowest.pop(cq, None)
            if was is not None:
                left = count[was] - 1
                if left:
                    count[was] = left
                else:
                    del count[was]
            if ordered.keys:
                now = lowest[cq] = ordered.keys[0][0]
                count[now] = count.get(now, 0) + 1
            self._floor_changed.add(cq)
            entry = hierarchy.cluster_queues.get(cq)
            name = entry.cohort_name if entry is not None else None
            self._refile(cq, name, ordered.keys)
            while name is not None and name in self._mins:
                del self._mins[name]
                cohort = cohorts.get(name)
                name = cohort.parent_name if cohort is not None else None
        self._changed.clear()

    def _refloor(self, cq: str, ordered: OrderedQueue) -> None:
        """Recount ``cq``'s least charge per flavor-resource (over its candidates: the flavor-resources
        every one of them charges, each at the smallest amount charged) into ``least_charge``'s
        counts."""
        counts = self._floor_count
        for fr, amount in self._floors.pop(cq, {}).items():
            left = counts[fr][amount] - 1
            if left:
                counts[fr][amount] = left
            else:
                del counts[fr][amount]
                if not counts[fr]:
                    del counts[fr]
        members = ordered.evicting + ordered.rest
        if members:
            floor = dict(members[0].charge)
            for info in members[1:]:
                charge = info.charge
                for fr in list(floor):
                    amount = charge.get(fr, 0)
                    if amount <= 0:
                        del floor[fr]
                    elif amount < floor[fr]:
                        floor[fr] = amount
            floor = {fr: amount for fr, amount in floor.items() if amount > 0}
            self._floors[cq] = floor
            for fr, amount in floor.items():
                at = counts.setdefault(fr, {})
                at[amount] = at.get(amount, 0) + 1

    def least_charge(self, admitted: "dict[str, dict[str, WorkloadInfo]]") -> dict[FlavorResource, int]:
        """Per flavor-resource, an amount every candidate of every ClusterQueue charges at least (the
        flavor-resources some candidate does not charge are left out): what a victim search releases
        at the least by taking any one candidate (``QuotaModel.share_without_least``).  :meth:`refresh`
        first.  Kept per ClusterQueue: O(k) for a ClusterQueue of k admitted workloads once per change
        of it (counted here, not in ``refresh``, so searches that never ask pay nothing), then
        O(flavor-resources × distinct least charges)."""
        self._recount_floors(admitted)
        queues = len(self._floors)
        return {fr: min(at) for fr, at in self._floor_count.items() if sum(at.values()) == queues}

    def least_charge_of(self, admitted: "dict[str, dict[str, WorkloadInfo]]",
                        cluster_queue: str) -> dict[FlavorResource, int]:
        """:meth:`least_charge` over the candidates of one ClusterQueue (``{}`` when it has none).
        :meth:`refresh` first.  The caller must not change the dict."""
        self._recount_floors(admitted)
        return self._floors.get(cluster_queue, {})

    def _recount_floors(self, admitted: "dict[str, dict[str, WorkloadInfo]]") -> None:
        """Bring the least charges of the ClusterQueues changed since they were last counted up to date."""
        if self._floor_changed:
            for cq in self._floor_changed:  # order-free: each only drops and adds counts
                self._refloor(cq, self.ordered(admitted, cq))
            self._floor_changed.clear()

    def _refile(self, cq: str, cohort: str | None, keys: list[QueueKey]) -> None:
        """Move ``cq`` to its place by first key (``keys[0]``; out when it has none) in its Cohort's
        :meth:`children_by_first`, where that order is built."""
        filed = self._filed.pop(cq, None)
        if filed is not None:
            children = self._by_first.get(filed[0])
            if children is not None:
                del children[bisect_left(children, (filed[1], cq))]
        if keys and cohort is not None:
            children = self._by_first.get(cohort)
            if children is not None:
                insort(children, (keys[0], cq))
                self._filed[cq] = (cohort, keys[0])

    def children_by_first(self, admitted: "dict[str, dict[str, WorkloadInfo]]", hierarchy: "Hierarchy",
                          cohort: str) -> list[tuple[QueueKey, str]]:
        """``[(first key, ClusterQueue)]`` for the child ClusterQueues of ``cohort`` with a
        non-evicting admitted workload, ascending (``ordered(...).keys[0]``: the first candidate each
        can give); built on first use, then kept by :meth:`refresh` — call it first.  The caller must
        not change the list."""
        got = self._by_first.get(cohort)
        if got is None:
            got = []
            entry = hierarchy.cohorts.get(cohort)
            if entry is not None:
                for cq in entry.child_cluster_queues:
                    keys = self.ordered(admitted, cq).keys
                    if keys:
                        got.append((keys[0], cq))
                        self._filed[cq] = (cohort, keys[0])
            got.sort()
            self._by_first[cohort] = got
        return got

    def lowest_priority(self) -> int | None:
        """The lowest priority of any non-evicting admitted workload of any ClusterQueue (``None``
        when there is none): a bound below every candidate of every tree.  :meth:`refresh` first.
        O(distinct lowest priorities), kept by ``refresh`` in O(1) per ClusterQueue touched."""
        count = self._lowest_count
        return min(count) if count else None

    def lowest_of(self, cluster_queue: str) -> int | None:
        """The priority of ``cluster_queue``'s first non-evicting admitted workload in candidate order
        (its lowest; ``None`` when it has none): ``ordered(...).keys[0][0]`` without reading the
        list.  :meth:`refresh` first.  O(1)."""
        return self._lowest.get(cluster_queue)

    def subtree_min(self, admitted: "dict[str, dict[str, WorkloadInfo]]", hierarchy: "Hierarchy",
                    cohort: str) -> list[QueueKey]:
        """``[smallest queue_key]`` of the non-evicting admitted workloads of the ClusterQueues below
        ``cohort`` (through linked child Cohorts), ``[]`` when there is none; :meth:`refresh` first."""
        got = self._mins.get(cohort)
        if got is None:
            best: list[QueueKey] = []
            entry = hierarchy.cohorts.get(cohort)
            if entry is not None:
                children = self.children_by_first(admitted, hierarchy, cohort)
                if children:
                    best = [children[0][0]]
                for child in entry.child_cohorts:
                    if hierarchy.cohorts[child].linked:
                        below = self.subtree_min(admitted, hierarchy, child)
                        if below and (not best or below[0] < best[0]):
                            best = below
            got = self._mins[cohort] = best
        return got

    def ordered(self, admitted: "dict[str, dict[str, WorkloadInfo]]", cluster_queue: str) -> OrderedQueue:
        """``cluster_queue``'s members of ``admitted`` (``ClusterState.admitted``) in candidate order,
        without those preempted earlier in the step being applied (``WorkloadInfo.preempted_in_step``:
        no victim again in that step; the cluster state touches their ClusterQueue when the step
        ends)."""
        got = self._queues.get(cluster_queue)
        if got is None:
            keyed = sorted((queue_key(info), info) for info in admitted.get(cluster_queue, {}).values()
                           if not info.preempted_in_step)
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
