"""The admission cycle, run to a fixpoint after every event (Kueue ``pkg/scheduler/scheduler.go``).

One cycle (reference/kueue.md §3.2):

1. take the head of every ClusterQueue that has one ready (one head per ClusterQueue per cycle);
2. nominate: an inactive or missing ClusterQueue sets the head aside with ``Suspended`` /
   ``Misconfigured``; otherwise assign flavors against the state as it is at the start of the cycle;
3. order the entries: lower borrowing height first, then higher priority, earlier creation time,
   and the ClusterQueue name as our documented final tie-break (Kueue leaves it to map order);
4. process in that order, mutating the state: a head that does not fit is set aside (parked in
   BestEffortFIFO, blocking in StrictFIFO); a head that fitted at nomination but no longer fits after
   an earlier admission of this cycle stays at the head ("Workload no longer fits after processing
   another workload") and is tried again next cycle; otherwise it is admitted.

Cycles repeat until no ClusterQueue has a ready head, so decisions are a pure function of the
event prefix.  A set-aside workload is tried again only when something could make it fit: the
configuration changed (everything wakes), or — for ``WaitingForQuota`` — at least the missing
amount of a resource it is short of was released somewhere in its cohort tree (see
``WakeIndex``).  Skipping attempts that cannot succeed is our refinement of Kueue's periodic
requeue: it changes no outcome, only how often a doomed head is re-evaluated.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

from statemodel.flavorassigner import assign_flavors, fits_now
from statemodel.objects import FlavorResource
from statemodel.queues import BEST_EFFORT_FIFO
from statemodel.reasons import NO_LONGER_FITS, WAITING_FOR_QUOTA
from statemodel.resource_node import QuotaNode

if TYPE_CHECKING:
    from statemodel.cluster import ClusterState
    from statemodel.workload import WorkloadInfo


class WakeIndex:
    """Who is waiting for how much quota to be released, per cohort tree and ``(flavor, resource)``.

    A workload short of ``d`` of ``fr`` cannot fit until its ``available(fr)`` grows by ``d``; that
    only happens when usage in its tree drops (configuration changes wake everyone anyway), and
    ``available`` grows by at most what was released.  So each tree keeps a running total of
    released quota per fr and a min-heap of thresholds ``total_at_park + d``; a release pops the
    thresholds it reached.  Cost: O(log n) per parked workload and per wake.
    """

    def __init__(self) -> None:
        self._released: dict[tuple, int] = {}
        self._heaps: dict[tuple, list] = {}
        self._seq = 0

    @staticmethod
    def _tree(node: QuotaNode) -> tuple[bool, str]:
        root = node.root()
        return root.is_cluster_queue, root.name

    def register(self, node: QuotaNode, info: "WorkloadInfo", shortages: list[tuple[FlavorResource, int]]) -> None:
        """Remember that ``info`` (queued at ClusterQueue ``node``) waits for any of ``shortages``."""
        tree = self._tree(node)
        for fr, deficit in shortages:
            key = (tree, fr)
            self._seq += 1
            heapq.heappush(self._heaps.setdefault(key, []), (self._released.get(key, 0) + deficit, self._seq, info))

    def release(self, node: QuotaNode, charge: dict[FlavorResource, int]) -> list["WorkloadInfo"]:
        """Account quota released at ClusterQueue ``node``; return the workloads whose threshold it reached."""
        if not self._heaps:
            return []
        tree = self._tree(node)
        woken = []
        for fr, amount in charge.items():
            key = (tree, fr)
            heap = self._heaps.get(key)
            if not heap:
                continue
            total = self._released[key] = self._released.get(key, 0) + amount
            while heap and heap[0][0] <= total:
                woken.append(heapq.heappop(heap)[2])
            if not heap:
                del self._heaps[key]
                del self._released[key]
        return woken

    def clear(self) -> None:
        """Forget every threshold (after everyone was woken by a configuration change)."""
        self._released.clear()
        self._heaps.clear()


def run_cycles(cluster: "ClusterState") -> None:
    """Run admission cycles until no ClusterQueue has a ready head; decisions go to ``cluster``."""
    ready = cluster.ready
    queues = cluster.queues
    hierarchy_cqs = cluster.hierarchy.cluster_queues
    flavors = cluster.flavors
    while ready:
        names = sorted(ready)
        ready.clear()
        entries = []
        for name in names:
            queue = queues[name]
            info = queue.ready_head()
            if info is None:
                continue
            inactive = cluster.inactive_reason(name)
            if inactive is not None:
                cluster.set_aside_all(queue, inactive)
                continue
            entry = hierarchy_cqs[name]
            assignment = assign_flavors(entry, flavors, info)
            entries.append((assignment.borrowing, info.order, name, info, assignment, entry, queue))
        entries.sort(key=lambda e: (e[0], e[1][0], e[1][1], e[2]))
        admitted_any = False
        for _, _, name, info, assignment, entry, queue in entries:
            if not assignment.fits:
                info.reason = assignment.reason
                info.message = assignment.message
                queue.set_aside(info)
                cluster.waiting.add(name)
                if assignment.wake:
                    cluster.wake_index.register(entry.node, info, assignment.wake)
                if queue.strategy == BEST_EFFORT_FIFO:
                    ready.add(name)
                continue
            if admitted_any and not fits_now(entry, assignment.usage):
                info.reason = WAITING_FOR_QUOTA
                info.message = NO_LONGER_FITS
                ready.add(name)
                continue
            cluster.admit(info, entry, queue, assignment)
            admitted_any = True
            ready.add(name)
