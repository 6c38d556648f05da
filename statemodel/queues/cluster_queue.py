"""Pending queues of one ClusterQueue (Kueue ``pkg/cache/queue/cluster_queue.go``).

One queue per ClusterQueue, fed by all its LocalQueues, ordered by priority (desc), creation time
(asc), UID (asc).  With admission fair sharing (``UsageBasedAdmissionFairSharing``) the LocalQueue's
current score comes first (lower usage first, reference/kueue.md §5.5): the queue then keeps one
heap per LocalQueue and the head is the best of their heads, scored at the moment it is asked for,
since scores move with time and admissions.  The score function is passed in by the caller (the
cluster), so a queue holds no reference back to it.

``QueueingStrategy`` decides what happens to a head that does not fit:

* ``BestEffortFIFO``: the head is **parked** (Kueue's inadmissible set) and the next workload
  becomes the head; parked workloads return when capacity that could make them fit is released
  or the configuration changes.
* ``StrictFIFO``: the head stays and **blocks** the queue until the same wake-up happens or a
  workload that sorts before it arrives.

Removal is lazy: heap entries carry the workload's token and stale ones are skipped.  Leaving the
queue or being woken also bumps the workload's ``park`` counter, which invalidates its wake-up
entries (``statemodel.admission.cycle.WakeIndex``).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from decimal import Decimal
from typing import Final

from statemodel.objects import QueueingStrategy
from statemodel.workload import WorkloadInfo

STRICT_FIFO: Final = QueueingStrategy.STRICT_FIFO
BEST_EFFORT_FIFO: Final = QueueingStrategy.BEST_EFFORT_FIFO

Entry = tuple[tuple[int, int, str], int, WorkloadInfo]
Scorer = Callable[[str], Decimal]
"""LocalQueue key → its admission-fair-sharing score now."""


class ClusterQueueQueue:
    """Pending workloads of one ClusterQueue name (it may exist before its ClusterQueue object).

    Attributes:
        by_usage: AFS order (LocalQueue score first) instead of plain priority order.
        members: every pending workload queued here; parked: the BestEffortFIFO set-aside ones;
        blocked: the StrictFIFO head that did not fit (or a preemptor waiting for its victims' eviction).
        sticky: a preemptor that issued preemptions: the head regardless of order until it is admitted,
            leaves or is set aside (Kueue's sticky preemptor, reference/kueue.md §3.1).
    """

    __slots__ = ("name", "strategy", "by_usage", "_heaps", "parked", "members", "blocked", "_per_local_queue",
                 "sticky")

    def __init__(self, name: str) -> None:
        self.name = name
        self.strategy: str = BEST_EFFORT_FIFO
        self.by_usage = False
        self._heaps: dict[str, list[Entry]] = {}
        self.parked: dict[str, WorkloadInfo] = {}
        self.members: dict[str, WorkloadInfo] = {}
        self.blocked: WorkloadInfo | None = None
        self._per_local_queue: dict[str, int] = {}
        self.sticky: WorkloadInfo | None = None

    def _enter(self, info: WorkloadInfo) -> None:
        info.token += 1
        heap_key = info.local_queue if self.by_usage else ""
        heap = self._heaps.get(heap_key)
        if heap is None:
            heap = self._heaps[heap_key] = []
        heapq.heappush(heap, (info.order, info.token, info))

    def set_by_usage(self, by_usage: bool) -> None:
        """Switch between plain and AFS order; rebuilds the heaps from the active members."""
        if by_usage == self.by_usage:
            return
        self.by_usage = by_usage
        self._heaps = {}
        for info in self.members.values():
            if info.key not in self.parked:
                self._enter(info)

    def push(self, info: WorkloadInfo) -> None:
        """Add (or re-add) a pending workload to contention."""
        if info.key not in self.members:
            self._per_local_queue[info.local_queue] = self._per_local_queue.get(info.local_queue, 0) + 1
        self.members[info.key] = info
        self.parked.pop(info.key, None)
        self._enter(info)

    def remove(self, info: WorkloadInfo) -> None:
        """Take a workload out (admitted, finished, deleted or moved); O(1), heap entry goes stale."""
        if self.members.pop(info.key, None) is not None:
            left = self._per_local_queue[info.local_queue] - 1
            if left:
                self._per_local_queue[info.local_queue] = left
            else:
                del self._per_local_queue[info.local_queue]
            info.token += 1
            info.park += 1
            self.parked.pop(info.key, None)
            if self.blocked is info:
                self.blocked = None
            if self.sticky is info:
                self.sticky = None

    def _top(self, heap: list[Entry]) -> WorkloadInfo | None:
        members, parked = self.members, self.parked
        while heap:
            _, token, info = heap[0]
            if token == info.token and info.key in members and info.key not in parked:
                return info
            heapq.heappop(heap)
        return None

    def head(self, scorer: Scorer) -> WorkloadInfo | None:
        """The sticky preemptor, else the first active workload in queue order, or ``None``
        (``scorer`` is used in AFS order)."""
        sticky = self.sticky
        if sticky is not None and sticky.key not in self.parked:
            return sticky
        if not self.by_usage:
            heap = self._heaps.get("")
            return self._top(heap) if heap else None
        if len(self._heaps) == 1:  # one LocalQueue: its score cannot change the order
            for heap in self._heaps.values():
                return self._top(heap)
        best: WorkloadInfo | None = None
        best_key: tuple | None = None
        for lq_key in sorted(self._heaps):
            info = self._top(self._heaps[lq_key])
            if info is None:
                continue
            key = (scorer(lq_key), info.order)
            if best_key is None or key < best_key:
                best, best_key = info, key
        return best

    def ready_head(self, scorer: Scorer) -> WorkloadInfo | None:
        """The head to try this cycle: ``None`` when empty or blocked (StrictFIFO) on that head."""
        info = self.head(scorer)
        if info is None or info is self.blocked:
            return None
        return info

    def set_aside(self, info: WorkloadInfo) -> None:
        """A head that did not fit: park it (BestEffortFIFO) or block on it (StrictFIFO); it is no
        longer sticky."""
        if self.sticky is info:
            self.sticky = None
        if self.strategy == STRICT_FIFO:
            self.blocked = info
        else:
            self.parked[info.key] = info

    def wake(self, info: WorkloadInfo) -> bool:
        """Return a parked or blocking workload to contention; ``True`` if anything changed."""
        info.park += 1
        if self.blocked is info:
            self.blocked = None
            return True
        if self.parked.pop(info.key, None) is not None:
            self._enter(info)
            return True
        return False

    def wake_local_queue_heads(self) -> bool:
        """Return the first parked workload of every LocalQueue (in priority order) to contention, so
        the AFS order can pick among the LocalQueues' heads; ``True`` if anything changed."""
        heads: dict[str, WorkloadInfo] = {}
        for info in self.parked.values():
            best = heads.get(info.local_queue)
            if best is None or info.order < best.order:
                heads[info.local_queue] = info
        blocked = self.blocked
        changed = blocked is not None
        if blocked is not None:
            blocked.park += 1
            self.blocked = None
        for lq_key in sorted(heads):
            changed = self.wake(heads[lq_key]) or changed
        return changed

    def wake_all(self) -> None:
        """Return every parked workload and unblock the queue (configuration changed)."""
        if self.blocked is not None:
            self.blocked.park += 1
        self.blocked = None
        parked = list(self.parked.values())
        self.parked.clear()
        for info in parked:
            info.park += 1
            self._enter(info)

    def usage_ordered(self) -> bool:
        """Whether AFS order matters here: ordered by usage and fed by more than one LocalQueue."""
        return self.by_usage and len(self._per_local_queue) > 1

    def ordered(self, scorer: Scorer) -> list[WorkloadInfo]:
        """All pending members in queue order (Kueue visibility: heap + inadmissible, same comparator)."""
        if not self.by_usage:
            return sorted(self.members.values(), key=lambda info: info.order)
        scores = {lq: scorer(lq) for lq in sorted({info.local_queue for info in self.members.values()})}
        return sorted(self.members.values(), key=lambda info: (scores[info.local_queue], info.order))
