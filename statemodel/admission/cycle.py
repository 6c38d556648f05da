"""The admission cycle, run to a fixpoint after every event (Kueue ``pkg/scheduler/scheduler.go``).

One cycle (reference/kueue.md §3.2):

1. take the head of every ClusterQueue that has one ready (one head per ClusterQueue per cycle);
2. nominate: an inactive or missing ClusterQueue sets the head aside with ``Suspended`` /
   ``Misconfigured``; otherwise assign flavors against the state as it is at the start of the cycle;
3. order the entries: lower borrowing height first, then higher priority, earlier creation time,
   and the ClusterQueue name as our documented final tie-break (Kueue leaves it to map order);
   with fair sharing enabled, by the DRS tournament instead (``fair_sharing_iterator``), which
   pops one entry at a time against the state as earlier entries left it;
4. process in that order, mutating the state: a head that does not fit is set aside (parked in
   BestEffortFIFO, blocking in StrictFIFO); a head that fitted at nomination but no longer fits after
   an earlier admission of this cycle stays at the head ("Workload no longer fits after processing
   another workload") and is tried again next cycle; otherwise, when the cluster places
   (``EngineConfig.spec.placement``), its gang is placed on nodes (``statemodel.placement``) — a
   gang that fits no node set is set aside like a head that does not fit its quota
   (``TopologyPlacementFailed``) — and it is admitted.

Cycles repeat until no ClusterQueue has a ready head, so decisions are a pure function of the
event prefix.  A set-aside workload is tried again only when something could make it fit: the
configuration changed (everything wakes), or — for ``WaitingForQuota`` — at least the missing
amount of a resource it is short of was released somewhere in its cohort tree (see
``WakeIndex``).  Skipping attempts that cannot succeed is our refinement of Kueue's periodic
requeue: it changes no outcome, only how often a doomed head is re-evaluated.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING, Final

from statemodel.admission.fair_sharing_iterator import FairSharingIterator
from statemodel.admission.flavorassigner import Assignment, assign_flavors
from statemodel.hierarchy import ClusterQueueEntry
from statemodel.objects import FlavorResource
from statemodel.placement.nodesets import PlacementFailure
from statemodel.preemption.context import PreemptionContext
from statemodel.preemption.preemptor import PreemptionOracle, make_oracle, may_preempt, shortage
from statemodel.queues.cluster_queue import BEST_EFFORT_FIFO, ClusterQueueQueue
from statemodel.quota.protocol import CLUSTER_QUEUE, PoolKey, QuotaModel, Shortfall
from statemodel.reasons import (
    NO_LONGER_FITS, OVERLAPPING_TARGETS, PENDING, WAITING_FOR_PREEMPTED_WORKLOADS, WAITING_FOR_QUOTA,
)

if TYPE_CHECKING:
    from statemodel.cluster import ClusterState
    from statemodel.workload import WorkloadInfo

WaitKey = tuple[PoolKey, FlavorResource]
"""What a waiter waits on: a pool of the quota model and one flavor-resource in it."""


class Waiter:
    """One parked option of a set-aside workload: it waits until every ``(fr, needed)`` of ``needs``
    is available at ClusterQueue ``cluster_queue``.  Valid while ``info.park == park``."""

    __slots__ = ("info", "park", "cluster_queue", "needs")

    def __init__(self, info: "WorkloadInfo", park: int, cluster_queue: str,
                 needs: list[tuple[FlavorResource, int]]) -> None:
        self.info = info
        self.park = park
        self.cluster_queue = cluster_queue
        self.needs = needs


def _met(model: QuotaModel, waiter: Waiter) -> bool:
    """Whether every need of a parked option is met now (read only: an unmet option stays parked
    where it is)."""
    for fr, val in waiter.needs:
        if model.available(waiter.cluster_queue, fr) < val:
            return False
    return True


class WakeIndex:
    """Who waits for how much quota, so that a release wakes only workloads it could help.

    A workload set aside with ``WaitingForQuota`` records, per flavor it could use, every resource
    it is short of, and waits on the largest shortage: ``val`` needed, ``available`` now.  When
    that one is met, the others are checked (cheaply, ``QuotaModel.available``, without a flavor
    assignment); the first one still unmet becomes what it waits on.  The quota model says how a
    shortage can be met (``QuotaModel.wake_rule``):

    * **at pool free** (Kueue: no lending limit on its path and no borrowing limit that binds below
      ``val``) — it fits exactly when its pool has ``val`` free (``QuotaModel.pool_free``).  Such
      workloads wait in per-(pool, fr) buckets by ``val``, each bucket ordered by Kueue's cycle order
      (priority, creation time, ClusterQueue name, uid).  When usage in the pool is released,
      ``affordable`` wakes the best-ordered waiters whose ``val`` fits in what the pool has free,
      charging each against that free capacity, so a release of 1 cpu wakes one 1-cpu workload.
      Kueue's cycle puts heads that fit within their ClusterQueue's nominal quota (borrowing height
      0) before those that borrow, whatever their priority, so before that walk ``affordable``
      wakes, per ClusterQueue with room under its nominal quota (``own_room``: one whose usage fell,
      or whose waiter parked within its room), the waiters that fit in that room, best order first,
      charged against the same free capacity — a higher-priority waiter that would borrow does not
      take the quota a non-borrowing one is owed; a ClusterQueue whose waiters there all need more
      than the pool has free is not read again until the pool can cover the least of them
      (``dormant``).  (Heights above 0 are still woken in priority
      order: a woken waiter whose quota is then taken by a lower-height head waits for the next
      release.)
    * **otherwise** — it can only fit after its ``available`` grows by the deficit, and
      ``available`` grows by at most what is released in its pool, so it waits on a running total
      of released quota per (pool, fr) reaching ``total_at_park + deficit``.

    A configuration change wakes everyone (``clear``).  Entries are invalidated lazily by the
    workload's ``park`` counter.  Costs: O(log n) per set-aside, per wake and per release, plus the
    model's calls (one ``wake_rule`` per parked option, one ``available`` per need checked).
    """

    def __init__(self) -> None:
        self.released: dict[WaitKey, int] = {}
        self.heaps: dict[WaitKey, list[tuple[int, int, Waiter]]] = {}
        self.buckets: dict[WaitKey, dict[int, list[tuple[int, int, str, str, int, Waiter]]]] = {}
        self.dirty: set[WaitKey] = set()
        self.woken: dict[str, WaitKey] = {}
        self.seq = 0
        # views of ``buckets`` for ``_within_nominal`` (rebuilt from it on restore, ``rebuild_views``):
        # an entry of ``by_queue`` counts while its seq is in ``parked`` (still in a bucket)
        self.by_queue: dict[tuple[WaitKey, str], dict[int, list[tuple[int, int, str, int, Waiter]]]] = {}
        self.parked: set[int] = set()
        self.own_room: dict[WaitKey, set[str]] = {}
        self.room_order: dict[WaitKey, list[str]] = {}  # per key, ``own_room``'s names as a heap
        # ClusterQueues not read until the budget covers their threshold (``_within_nominal``):
        # ``dormant`` their threshold, ``sleepers`` per threshold a name heap (an entry counts while
        # ``dormant`` still gives its ClusterQueue that threshold)
        self.dormant: dict[WaitKey, dict[str, int]] = {}
        self.sleepers: dict[WaitKey, dict[int, list[str]]] = {}
        # False: no ClusterQueue is made dormant, every one with a waiter fitting its room is read
        # at every walk — the same wakes, slower (the reference ``tests/property/test_wake_index``
        # compares against)
        self.dormancy = True

    def register(self, model: QuotaModel, cq_name: str, info: "WorkloadInfo", options: list[list[Shortfall]],
                 fresh: bool = False) -> None:
        """Remember that ``info`` (queued at ClusterQueue ``cq_name``) waits until one of ``options`` —
        per flavor, the ``WaitingForQuota`` shortfalls it has, the first one waited on — is met.
        ``fresh``: quota was released since the shortfalls were read (earlier in the same cycle), so
        what is available is read again and each option waits on its first need still short, from
        what is free now (the caller checked with :meth:`met_now` that none is met)."""
        info.park += 1
        for shorts in options:
            waiter = Waiter(info, info.park, cq_name, [((sf.flavor, sf.resource), sf.needed) for sf in shorts])
            if fresh:
                self._all_met(model, waiter)  # parks it on its first need still short
                continue
            first = shorts[0]
            self._wait(model, waiter, (first.flavor, first.resource), first.needed, first.available)

    def met_now(self, model: QuotaModel, cq_name: str, options: list[list[Shortfall]]) -> bool:
        """Whether every need of one of ``options`` (as for :meth:`register`) is available now at
        ClusterQueue ``cq_name`` — what a wake would check (``_all_met``).  O(needs × depth)."""
        for shorts in options:
            met = True
            for sf in shorts:
                if model.available(cq_name, (sf.flavor, sf.resource)) < sf.needed:
                    met = False
                    break
            if met:
                return True
        return False

    def _wait(self, model: QuotaModel, waiter: Waiter, fr: FlavorResource, val: int, free: int) -> None:
        """Park one option on the need ``fr`` (``val`` needed, ``free`` available now)."""
        rule = model.wake_rule(waiter.cluster_queue, fr, val)
        key = (rule.pool, fr)
        self.seq += 1
        if rule.at_pool_free:
            buckets = self.buckets.get(key)
            if buckets is None:
                buckets = self.buckets[key] = {}
            order = waiter.info.order
            heapq.heappush(buckets.setdefault(val, []),
                           (order[0], order[1], waiter.cluster_queue, order[2], self.seq, waiter))
            self._view(key, waiter, self.seq, val)
            nominal, _, usage = model.quota_numbers(CLUSTER_QUEUE, waiter.cluster_queue, fr)
            if nominal - usage >= val:
                self._to_read(key, waiter.cluster_queue)
        else:
            heapq.heappush(self.heaps.setdefault(key, []), (self.released.get(key, 0) + val - free, self.seq, waiter))

    def _view(self, key: WaitKey, waiter: Waiter, seq: int, val: int) -> None:
        """Add bucket entry ``seq`` (``val`` needed) to ``by_queue``."""
        order = waiter.info.order
        vals = self.by_queue.get((key, waiter.cluster_queue))
        if vals is None:
            vals = self.by_queue[(key, waiter.cluster_queue)] = {}
        mine = vals.get(val)
        if mine is None:
            mine = vals[val] = []
        elif len(mine) >= 32 and len(mine) & (len(mine) - 1) == 0:  # drop dead entries now and then
            mine[:] = [e for e in mine if self._live(e)]
            heapq.heapify(mine)
        heapq.heappush(mine, (order[0], order[1], order[2], seq, waiter))
        self.parked.add(seq)

    def _live(self, entry: tuple[int, int, str, int, Waiter]) -> bool:
        """Whether a ``by_queue`` entry is still parked in its bucket and current."""
        waiter = entry[4]
        return entry[3] in self.parked and waiter.park == waiter.info.park

    def rebuild_views(self) -> None:
        """Derive ``by_queue``, ``parked`` and ``own_room`` from ``buckets`` (after a restore).
        ``own_room`` gets every ClusterQueue with a waiter: a superset of the ClusterQueues with a
        waiter fitting its room, which is all ``_within_nominal`` acts on, so the wakes are the same."""
        self.by_queue.clear()
        self.parked.clear()
        self.own_room.clear()
        self.room_order.clear()
        self.dormant.clear()
        self.sleepers.clear()
        for key, vals in self.buckets.items():
            for val, heap in vals.items():
                for entry in heap:
                    waiter = entry[5]
                    self._view(key, waiter, entry[4], val)
                    self._to_read(key, waiter.cluster_queue)

    def _all_met(self, model: QuotaModel, waiter: Waiter) -> bool:
        """Whether every need of a parked option is met now; if not, re-park it on the first unmet one
        (cheap: one ``available`` per need, no flavor assignment)."""
        if waiter.park != waiter.info.park:
            return False
        for fr, val in waiter.needs:
            free = model.available(waiter.cluster_queue, fr)
            if free < val:
                self._wait(model, waiter, fr, val, free)
                return False
        return True

    def set_aside(self, info: "WorkloadInfo") -> None:
        """``info`` did not fit; if it had been woken on its pool's free quota, give that quota back
        so the next waiter in line gets its turn."""
        spent = self.woken.pop(info.key, None)
        if spent is not None:
            self.dirty.add(spent)

    def release(self, model: QuotaModel, cq_name: str, charge: dict[FlavorResource, int]) -> list["WorkloadInfo"]:
        """Account quota released at ClusterQueue ``cq_name``; return the deficit-waiters it reached
        and mark at-pool-free buckets of the pool for ``affordable``."""
        if not self.heaps and not self.buckets:
            return []
        pool = model.pool(cq_name)
        woken: list["WorkloadInfo"] = []
        for fr, amount in charge.items():
            key = (pool, fr)
            if key in self.buckets:
                self.dirty.add(key)
                if (key, cq_name) in self.by_queue:
                    self._to_read(key, cq_name)
            heap = self.heaps.get(key)
            if not heap:
                continue
            total = self.released[key] = self.released.get(key, 0) + amount
            due = []
            while heap and heap[0][0] <= total:
                due.append(heapq.heappop(heap)[2])
            if not heap:
                del self.heaps[key]
                del self.released[key]
            woken.extend(waiter.info for waiter in due if self._all_met(model, waiter))
        return woken

    def affordable(self, model: QuotaModel) -> list["WorkloadInfo"]:
        """Wake at-pool-free waiters of released pools, best order first, while the pool's free
        quota covers them; clears the release marks."""
        if not self.dirty:
            return []
        woken: list["WorkloadInfo"] = []
        self.woken.clear()
        for key in sorted(self.dirty):
            buckets = self.buckets.get(key)
            if buckets is None:
                continue
            budget = model.pool_free(key[0], key[1])
            budget = self._within_nominal(model, key, budget, woken)
            while budget > 0:
                best = None
                for val, heap in buckets.items():
                    if val > budget:
                        continue
                    while heap and heap[0][5].park != heap[0][5].info.park:
                        self.parked.discard(heapq.heappop(heap)[4])
                    if heap and (best is None or heap[0] < buckets[best][0]):
                        best = val
                if best is None:
                    break
                popped = heapq.heappop(buckets[best])
                self.parked.discard(popped[4])
                waiter = popped[5]
                if not self._all_met(model, waiter):
                    continue
                info = waiter.info
                woken.append(info)
                self.woken[info.key] = key
                info.park += 1
                budget -= best
            for val in [v for v, heap in buckets.items() if not heap]:
                del buckets[val]
            if not buckets:
                del self.buckets[key]
        self.dirty.clear()
        return woken

    def _within_nominal(self, model: QuotaModel, key: WaitKey, budget: int, woken: list["WorkloadInfo"]) -> int:
        """Wake the at-pool-free waiters of ``key`` that fit within their ClusterQueue's room under its
        nominal quota (``nominal - usage``), per ClusterQueue in name order and best order within it,
        while ``budget`` (the pool's free quota) covers them; returns what is left of the budget.

        The ClusterQueues read are those of ``own_room`` (to be read: usage fell there, or a waiter
        parked within its room) and the ``dormant`` ones whose threshold the budget still covers.  A
        ClusterQueue leaves ``own_room`` once no live waiter of its fits its room (its room then
        grows only by a release at it, which puts it back, or a configuration change, which wakes
        everyone).  One whose every waiter fitting its room was held only because it needs more than
        the budget becomes dormant with threshold ``t``, the least such need: until something at it
        changes (a release at it or a new waiter there puts it back in ``own_room``), reading it
        with a budget below ``t`` could wake nothing, so it is not read.  The walk ends when the
        budget does: a waiter needs a positive amount, so the ClusterQueues after that point could
        wake nothing.  Same wakes, in the same order, as reading every ClusterQueue with a waiter
        fitting its room.  Cost: O(log n) per ClusterQueue read (``own_room`` is kept in name order
        in ``room_order``, the dormant ones per threshold in ``sleepers``), and a dormant one is read
        only when the budget covers its threshold or something at it changed — not, as a plain walk
        would, every ClusterQueue holding a waiter the pool cannot cover, on every release
        (thousands at 10,000 ClusterQueues in one pool)."""
        if budget <= 0:  # nothing to hand out: every ClusterQueue keeps its place
            return budget
        rooms = self.own_room.get(key)
        dormant = self.dormant.get(key)
        if not rooms and not dormant:
            return budget
        if rooms is None:
            rooms = self.own_room[key] = set()
            self.room_order[key] = []
        order = self.room_order[key]  # name order, read lazily: the walk usually ends when the budget does
        keep: list[str] = []
        sleepers = self.sleepers.get(key, {})
        merge = [(names[0], t) for t, names in sleepers.items() if t <= budget and names]
        heapq.heapify(merge)  # the dormant ClusterQueues the budget covers, by name, per threshold
        to_sleep: list[tuple[str, int]] = []
        while budget > 0:
            cq = ""
            while merge:
                name, t = merge[0]
                if t > budget:  # the budget no longer covers this threshold: none of it can wake
                    heapq.heappop(merge)
                    continue
                if order and order[0] < name:
                    break
                names = sleepers[t]
                heapq.heappop(names)
                if names:
                    heapq.heapreplace(merge, (names[0], t))
                else:
                    heapq.heappop(merge)
                    del sleepers[t]
                if dormant is not None and dormant.get(name) == t:
                    del dormant[name]
                    cq = name
                    break
            if not cq:
                if not order:
                    break
                cq = heapq.heappop(order)
                rooms.discard(cq)
            vals = self.by_queue.get((key, cq))
            nominal, _, usage = model.quota_numbers(CLUSTER_QUEUE, cq, key[1])
            room = nominal - usage
            if vals is None or room <= 0:  # a waiter always needs a positive amount
                continue
            least_over = 0  # the least need held because the budget does not cover it
            unmet = False  # a waiter the budget covers was held because another of its needs is unmet
            held: list[tuple[int, tuple[int, int, str, int, Waiter]]] = []
            while True:  # best order first among the waiters whose val fits the room
                best = -1
                for val, heap in vals.items():
                    if val > room:
                        continue
                    while heap and not self._live(heap[0]):
                        heapq.heappop(heap)
                    if heap and (best < 0 or heap[0] < vals[best][0]):
                        best = val
                if best < 0:
                    break
                entry = heapq.heappop(vals[best])
                waiter = entry[4]
                if best > budget or not _met(model, waiter):
                    if best > budget:
                        least_over = best if least_over == 0 else min(least_over, best)
                    else:
                        unmet = True
                    held.append((best, entry))
                    continue
                info = waiter.info
                woken.append(info)
                self.woken[info.key] = key
                info.park += 1
                budget -= best
                room -= best
            for val, entry in held:
                heapq.heappush(vals[val], entry)
            for val in [v for v, heap in vals.items() if not heap]:
                del vals[val]
            if not vals:
                del self.by_queue[(key, cq)]
            if unmet or (held and not self.dormancy):
                keep.append(cq)  # read again at every walk
            elif held:
                to_sleep.append((cq, least_over))
        for cq in keep:
            rooms.add(cq)
            heapq.heappush(order, cq)
        for cq, t in to_sleep:  # after the walk: the merge above reads the name heaps as they were
            self._sleep(key, cq, t)
        if dormant is not None and not dormant:
            del self.dormant[key]
            del self.sleepers[key]
        if not rooms:
            del self.own_room[key]
            del self.room_order[key]
        return budget

    def _sleep(self, key: WaitKey, cq: str, t: int) -> None:
        """Make ClusterQueue ``cq`` dormant for ``key`` with threshold ``t`` (see ``_within_nominal``)."""
        dormant = self.dormant.get(key)
        if dormant is None:
            dormant = self.dormant[key] = {}
        dormant[cq] = t
        sleepers = self.sleepers.get(key)
        if sleepers is None:
            sleepers = self.sleepers[key] = {}
        names = sleepers.get(t)
        if names is None:
            names = sleepers[t] = []
        elif len(names) >= 32 and len(names) & (len(names) - 1) == 0:  # drop stale names now and then
            names[:] = sorted({n for n in names if dormant.get(n) == t})
        heapq.heappush(names, cq)

    def _to_read(self, key: WaitKey, cq: str) -> None:
        """Put ClusterQueue ``cq`` in ``own_room`` for ``key`` (something at it changed): it is read
        at the next walk, and is no longer dormant."""
        rooms = self.own_room.get(key)
        if rooms is None:
            rooms = self.own_room[key] = set()
            self.room_order[key] = []
        if cq not in rooms:
            rooms.add(cq)
            heapq.heappush(self.room_order[key], cq)
        dormant = self.dormant.get(key)
        if dormant is not None and dormant.pop(cq, None) is not None and not dormant:
            del self.dormant[key]
            del self.sleepers[key]

    def clear(self) -> None:
        """Forget every waiter (after everyone was woken by a configuration change)."""
        self.released.clear()
        self.heaps.clear()
        self.buckets.clear()
        self.dirty.clear()
        self.woken.clear()
        self.by_queue.clear()
        self.parked.clear()
        self.own_room.clear()
        self.room_order.clear()
        self.dormant.clear()
        self.sleepers.clear()


class Candidate:
    """A ClusterQueue head nominated in one cycle, with its flavor assignment (Kueue ``entry``)."""

    __slots__ = ("borrowing", "order", "name", "info", "assignment", "entry", "queue", "oracle")

    def __init__(self, name: str, info: "WorkloadInfo", assignment: Assignment, entry: ClusterQueueEntry,
                 queue: ClusterQueueQueue, oracle: PreemptionOracle | None = None) -> None:
        self.oracle = oracle
        self.borrowing = assignment.borrowing
        self.order = info.order
        self.name = name
        self.info = info
        self.assignment = assignment
        self.entry = entry
        self.queue = queue

    def sort_key(self) -> tuple[int, int, int, int, str]:
        """Cycle order: a preemptor whose victims' quota was just released first (as Kueue's
        ``PrioritizePreemptorWorkloads``), then borrowing height, priority (higher first), creation
        time, ClusterQueue name."""
        order = self.order
        return (0 if self.info.preempting else 1, self.borrowing, order[0], order[1], self.name)


class ScopeGate:
    """KEP-4136 cohort admission scopes (seed 001, "Proposal", scenario 3; Kueue has not built them).

    Within a Cohort whose ``admissionScope`` is usage based, heads that fit within their
    ClusterQueue's nominal quota are admitted as usual.  Heads that would borrow, or do not fit
    ("sticking out"), form one strict FIFO queue over the scope, ordered by ClusterQueue usage,
    priority, creation time (then ClusterQueue name): only its first is tried, and while it waits
    for quota the others wait behind it.  ``blockers`` holds that first workload per scope once it
    did not fit; ``deferred`` the ClusterQueues whose heads wait behind it.
    """

    def __init__(self) -> None:
        self.blockers: dict[str, "WorkloadInfo"] = {}
        self.deferred: dict[str, set[str]] = {}

    def release(self, cluster: "ClusterState") -> None:
        """Let the heads behind a blocker that is no longer waiting (woken, admitted, gone) go again."""
        for scope in sorted(self.blockers):
            if not _set_aside(cluster, self.blockers[scope]):
                del self.blockers[scope]
                cluster.ready.update(self.deferred.pop(scope, ()))

    def clear(self, ready: set[str]) -> None:
        """Configuration changed: every deferred head goes again."""
        for names in self.deferred.values():
            ready.update(names)
        self.blockers.clear()
        self.deferred.clear()

    def filter(self, cluster: "ClusterState", candidates: list[Candidate]) -> tuple[list[Candidate], dict[str, str]]:
        """Keep the candidates to process this cycle; returns them and the scope of each kept
        sticking-out candidate (by ClusterQueue name)."""
        keep = []
        best: dict[str, tuple[tuple, Candidate]] = {}
        for cand in candidates:
            name, order = cand.name, cand.order
            scope = cluster.admission_scope(name) if (not cand.assignment.fits or cand.borrowing > 0) else None
            if scope is None:
                keep.append(cand)
                continue
            blocker = self.blockers.get(scope)
            if blocker is not None and blocker is not cand.info:
                self._defer(scope, cand, f"waiting behind {blocker.key} in the admission scope of cohort {scope}")
                continue
            key = (cluster.cluster_queue_score(name), order[0], order[1], name)
            current = best.get(scope)
            loser: Candidate | None = cand
            if current is None or key < current[0]:
                best[scope] = (key, cand)
                loser = current[1] if current is not None else None
            if loser is not None:
                self._defer(scope, loser, f"waiting for its turn in the admission scope of cohort {scope}")
        scopes = {}
        for scope, (_, cand) in best.items():
            keep.append(cand)
            scopes[cand.name] = scope
        return keep, scopes

    def _defer(self, scope: str, cand: Candidate, message: str) -> None:
        cand.info.reason = PENDING
        cand.info.message = message
        self.deferred.setdefault(scope, set()).add(cand.name)

    def outcome(self, cluster: "ClusterState", scope: str, info: "WorkloadInfo", admitted: bool) -> None:
        """The scope's first sticking-out head was admitted (the next goes) or set aside (it blocks)."""
        if admitted:
            self.blockers.pop(scope, None)
            cluster.ready.update(self.deferred.pop(scope, ()))
        else:
            self.blockers[scope] = info


def _set_aside(cluster: "ClusterState", info: "WorkloadInfo") -> bool:
    """Whether ``info`` is pending and parked or blocking in its queue."""
    queue = cluster.queues.get(info.cluster_queue) if info.cluster_queue else None
    return (queue is not None and info.key in queue.members
            and (info.key in queue.parked or queue.blocked is info))


def run_cycles(cluster: "ClusterState") -> None:
    """Run admission cycles until no ClusterQueue has a ready head; decisions go to ``cluster``.

    The quota model is asked ``fit`` once per flavor tried at nomination and ``fits`` once per
    admission after an earlier one in the same cycle.
    """
    ready = cluster.ready
    queues = cluster.queues
    hierarchy_cqs = cluster.hierarchy.cluster_queues
    model = cluster.model
    wake_index = cluster.wake_index
    gate = cluster.scope_gate
    scorer = cluster.local_queue_score
    scoped = cluster.has_admission_scopes()
    placing = cluster.placing()
    while True:
        if wake_index.dirty:
            cluster.wake(wake_index.affordable(model))
        if gate.blockers:
            gate.release(cluster)
        if not ready:
            return
        names = sorted(ready) if len(ready) > 1 else list(ready)
        ready.clear()
        candidates: list[Candidate] = []
        for name in names:
            queue = queues[name]
            info = queue.ready_head(scorer)
            if info is None:
                continue
            inactive = cluster.inactive_reason(name)
            if inactive is not None:
                cluster.set_aside_all(queue, inactive)
                continue
            entry = hierarchy_cqs[name]
            spec = entry.spec
            oracle = None
            if spec is not None and may_preempt(spec):
                oracle = make_oracle(model, cluster.hierarchy, cluster.admitted, info, spec,
                                     cluster.config.fair_sharing_enable, cluster.preemption_search,
                                     cluster.candidate_index)
            candidates.append(Candidate(name, info, assign_flavors(model, entry, info, cluster.flavors, oracle), entry, queue, oracle))
        scopes: dict[str, str] = {}
        if scoped:
            candidates, scopes = gate.filter(cluster, candidates)
        order: list[Candidate] | FairSharingIterator
        if cluster.config.fair_sharing_enable:
            hierarchy = cluster.hierarchy
            order = FairSharingIterator(model, hierarchy.fair_weight, candidates)
        else:
            candidates.sort(key=Candidate.sort_key)
            order = candidates
        admitted_any = False
        released = False  # quota given back in this cycle (victims released on the decision)
        targeted: dict[str, bool] = {}
        reserved: list[tuple[str, dict[FlavorResource, int]]] = []
        for cand in order:
            name, info, assignment, queue = cand.name, cand.info, cand.assignment, cand.queue
            info.preempting = False
            outcome = _NOT_TRIED
            if assignment.preempting:
                outcome = _preempt(cluster, cand, targeted, not admitted_any)
                if outcome == _ISSUED:
                    model.charge(name, assignment.usage)  # reserved for the rest of the cycle (Kueue)
                    reserved.append((name, assignment.usage))
                    admitted_any = True
                    released = released or cluster.releases_on_decision()
                    if isinstance(order, FairSharingIterator):
                        order.refresh()  # victims' usage changed anywhere in the tree
                    if name in scopes:
                        gate.outcome(cluster, scopes[name], info, False)
                    continue
            if not assignment.fits:
                info.reason = assignment.reason
                info.message = OVERLAPPING_TARGETS if outcome == _OVERLAP else assignment.message
                if released and assignment.wake and wake_index.met_now(model, name, assignment.wake):
                    # victims released after this head was nominated freed what it waits for: it is
                    # offered again in the next cycle, as Kueue requeues its inadmissible workloads
                    # when an evicted workload gives back its quota
                    ready.add(name)
                    if name in scopes:
                        gate.outcome(cluster, scopes[name], info, False)
                    continue
                _park(cluster, cand, released)
                if name in scopes:
                    gate.outcome(cluster, scopes[name], info, False)
                continue
            if admitted_any and not model.fits(name, assignment.usage):
                info.reason = WAITING_FOR_QUOTA
                info.message = NO_LONGER_FITS
                ready.add(name)
                continue
            placed = None
            if placing:
                placed = cluster.place(info, assignment)
                if placed is None:
                    _park_for_nodes(cluster, cand)
                    if name in scopes:
                        gate.outcome(cluster, scopes[name], info, False)
                    continue
            cluster.admit(info, cand.entry, queue, assignment, placed)
            admitted_any = True
            ready.add(name)
            if name in scopes:
                gate.outcome(cluster, scopes[name], info, True)
        for name, usage in reserved:
            model.release(name, usage)


_NOT_TRIED: Final = 0
_ISSUED: Final = 1
_NO_TARGETS: Final = 2
_OVERLAP: Final = 3


def _park(cluster: "ClusterState", cand: Candidate, fresh: bool = False) -> None:
    """A head that cannot be admitted now waits (parked or blocking) until released quota or a
    configuration change could help; a BestEffortFIFO queue offers its next head.  ``fresh``: quota
    was released in this cycle after the head's nomination (``WakeIndex.register``)."""
    name, info, queue = cand.name, cand.info, cand.queue
    wake_index = cluster.wake_index
    queue.set_aside(info)
    cluster.waiting.add(name)
    wake_index.set_aside(info)
    if cand.assignment.wake:
        wake_index.register(cluster.model, name, info, cand.assignment.wake, fresh)
    if queue.strategy == BEST_EFFORT_FIFO:
        cluster.ready.add(name)


def _park_for_nodes(cluster: "ClusterState", cand: Candidate) -> None:
    """A head that fits its quota but not the nodes (``TopologyPlacementFailed``) waits until node
    capacity is freed or the configuration changes (``statemodel.placement.stage``)."""
    name, info, queue = cand.name, cand.info, cand.queue
    queue.set_aside(info)
    cluster.waiting.add(name)
    cluster.wake_index.set_aside(info)
    total: dict[str, int] = {}
    for ps in cand.assignment.pod_sets:
        for res, amount in ps.usage.items():
            total[res] = total.get(res, 0) + amount
    failure = info.message
    cluster.placement.wait(info, total, failure.short if isinstance(failure, PlacementFailure) else 1)
    if queue.strategy == BEST_EFFORT_FIFO:
        cluster.ready.add(name)


def _preempt(cluster: "ClusterState", cand: Candidate, targeted: dict[str, bool], as_nominated: bool) -> int:
    """A head whose assignment needs preemption: find the victims against the state as it is now
    (earlier heads of this cycle included) and issue the preemptions (Kueue ``processEntry``).
    ``as_nominated``: nothing was admitted, reserved or preempted since the heads were nominated,
    so a search the head's oracle already ran on the same request is not run again.

    Returns ``_ISSUED`` when preemptions were issued (or are in flight): the head waits with
    ``WaitingForPreemptedWorkloads`` — with ``releaseOn: Decision`` it is tried first in the next
    cycle, with ``Eviction`` it blocks its queue until a victim's eviction is observed (or released
    quota could make one of its flavors fit).  Returns
    ``_NO_TARGETS`` when there is no victim set (Kueue ``PreemptionNoCandidates``) and ``_OVERLAP``
    when the victims overlap with those of an earlier head of this cycle; the caller sets the head
    aside (``WaitingForQuota``)."""
    name, info, assignment, entry = cand.name, cand.info, cand.assignment, cand.entry
    spec = entry.spec
    assert spec is not None, "only active ClusterQueues nominate"
    ctx = PreemptionContext(cluster.model, cluster.hierarchy, cluster.admitted, info, name, spec.preemption,
                            assignment.preempt_frs, assignment.usage, cluster.candidate_index)
    known = cand.oracle.targets_for(ctx.frs, ctx.usage) if as_nominated and cand.oracle is not None else None
    targets = known if known is not None else cluster.preemption_search(ctx)
    if not targets:
        return _NO_TARGETS
    for t in targets:
        if t.info.key in targeted:
            return _OVERLAP
    for t in targets:
        targeted[t.info.key] = True
    numbers = shortage(ctx)
    message = f"{assignment.message}. Pending the preemption of {len(targets)} workload(s)"
    cluster.preempt(info, name, targets, numbers)
    info.reason = WAITING_FOR_PREEMPTED_WORKLOADS
    info.message = message
    cand.queue.sticky = info
    if cluster.releases_on_decision():
        info.preempting = True
        cluster.ready.add(name)
    else:
        # Kueue's sticky preemptor: it stays at the head of its queue, blocking what is behind it,
        # until a victim's release (or released quota, or a configuration change) wakes it
        cand.queue.blocked = info
        cluster.waiting.add(name)
        cluster.wake_index.set_aside(info)
        if assignment.wake:
            cluster.wake_index.register(cluster.model, name, info, assignment.wake)
    return _ISSUED
