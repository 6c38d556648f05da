"""Pending queues of one ClusterQueue (Kueue ``pkg/cache/queue/cluster_queue.go``).

One heap per ClusterQueue, fed by all its LocalQueues, ordered by priority (desc), creation time
(asc), UID (asc).  ``QueueingStrategy`` decides what happens to a head that does not fit:

* ``BestEffortFIFO``: the head is **parked** (Kueue's inadmissible set) and the next workload
  becomes the head; parked workloads return when capacity that could make them fit is released
  or the configuration changes.
* ``StrictFIFO``: the head stays and **blocks** the queue until the same wake-up happens or a
  workload that sorts before it arrives.

Removal is lazy: heap entries carry the workload's token and stale ones are skipped.  Leaving the
queue or being woken also bumps the workload's ``park`` counter, which invalidates its wake-up
entries (``statemodel.scheduler.WakeIndex``).
"""

from __future__ import annotations

import heapq

from statemodel.workload import WorkloadInfo

STRICT_FIFO = "StrictFIFO"
BEST_EFFORT_FIFO = "BestEffortFIFO"


class ClusterQueueQueue:
    """Pending workloads of one ClusterQueue name (it may exist before its ClusterQueue object)."""

    __slots__ = ("name", "strategy", "_heap", "parked", "members", "blocked")

    def __init__(self, name: str) -> None:
        self.name = name
        self.strategy = BEST_EFFORT_FIFO
        self._heap: list[tuple[tuple[int, int, str], int, WorkloadInfo]] = []
        self.parked: dict[str, WorkloadInfo] = {}
        self.members: dict[str, WorkloadInfo] = {}
        self.blocked: WorkloadInfo | None = None

    def push(self, info: WorkloadInfo) -> None:
        """Add (or re-add) a pending workload to the active heap."""
        info.token += 1
        self.members[info.key] = info
        self.parked.pop(info.key, None)
        heapq.heappush(self._heap, (info.order, info.token, info))

    def remove(self, info: WorkloadInfo) -> None:
        """Take a workload out (admitted, finished, deleted or moved); O(1), heap entry goes stale."""
        if self.members.pop(info.key, None) is not None:
            info.token += 1
            info.park += 1
            self.parked.pop(info.key, None)
            if self.blocked is info:
                self.blocked = None

    def head(self) -> WorkloadInfo | None:
        """The first active workload in queue order, or ``None``."""
        heap = self._heap
        while heap:
            _, token, info = heap[0]
            if token == info.token and info.key in self.members and info.key not in self.parked:
                return info
            heapq.heappop(heap)
        return None

    def ready_head(self) -> WorkloadInfo | None:
        """The head to try this cycle: ``None`` when empty or blocked (StrictFIFO) on that head."""
        info = self.head()
        if info is None or info is self.blocked:
            return None
        return info

    def set_aside(self, info: WorkloadInfo) -> None:
        """A head that did not fit: park it (BestEffortFIFO) or block on it (StrictFIFO)."""
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
            info.token += 1
            heapq.heappush(self._heap, (info.order, info.token, info))
            return True
        return False

    def wake_all(self) -> None:
        """Return every parked workload and unblock the queue (configuration changed)."""
        if self.blocked is not None:
            self.blocked.park += 1
        self.blocked = None
        for info in self.parked.values():
            info.token += 1
            info.park += 1
            self._heap.append((info.order, info.token, info))
        self.parked.clear()
        heapq.heapify(self._heap)

    def __len__(self) -> int:
        return len(self.members)

    def ordered(self) -> list[WorkloadInfo]:
        """All pending members in queue order (Kueue visibility: heap + inadmissible, same comparator)."""
        return sorted(self.members.values(), key=lambda info: info.order)
