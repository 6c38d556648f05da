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

from statemodel.admission.flavorassigner import assign_flavors, fits_now
from statemodel.objects import FlavorResource
from statemodel.queues.cluster_queue import BEST_EFFORT_FIFO
from statemodel.reasons import NO_LONGER_FITS, PENDING, WAITING_FOR_QUOTA
from statemodel.quota.kueue import QuotaNode, available

if TYPE_CHECKING:
    from statemodel.cluster import ClusterState
    from statemodel.workload import WorkloadInfo


class WakeIndex:
    """Who waits for how much quota, so that a release wakes only workloads it could help.

    A workload set aside with ``WaitingForQuota`` records, per flavor it could use, every resource
    it is short of, and waits on the largest shortage: ``val`` needed, ``available`` now.  When
    that one is met, the others are checked (cheaply, without a flavor assignment); the first one
    still unmet becomes what it waits on.  Two ways to wait on a shortage (``_wait``):

    * **root-bound**: no lending limit on its path and no borrowing limit that binds below
      ``val`` — it fits exactly when its tree's root has ``val`` free.  Such workloads wait in
      per-(tree, fr) buckets by ``val``, each bucket ordered by Kueue's cycle order (priority,
      creation time, ClusterQueue name, uid).  When usage in the tree is released, ``affordable``
      wakes the best-ordered waiters whose ``val`` fits in what the root has free, charging each
      against that free capacity, so a release of 1 cpu wakes one 1-cpu workload, not all of them.
    * **otherwise** (a borrowing limit binds, or lending limits make local quota visible): it can
      only fit after its ``available`` grows by the deficit, and ``available`` grows by at most
      what is released in its tree, so it waits on a running total of released quota per
      (tree, fr) reaching ``total_at_park + deficit``.

    A configuration change wakes everyone (``clear``).  Entries are invalidated lazily by the
    workload's ``park`` counter.  Costs: O(log n) per set-aside, per wake and per release.
    """

    def __init__(self) -> None:
        self._released: dict[tuple, int] = {}
        self._heaps: dict[tuple, list] = {}
        self._buckets: dict[tuple, tuple[QuotaNode, dict[int, list]]] = {}
        self.dirty: set[tuple] = set()
        self._woken: dict[str, tuple] = {}
        self._seq = 0

    @staticmethod
    def _tree(node: QuotaNode) -> tuple[QuotaNode, tuple[bool, str]]:
        root = node
        while root.parent is not None:
            root = root.parent
        return root, (root.is_cluster_queue, root.name)

    def register(self, node: QuotaNode, cq_name: str, info: "WorkloadInfo",
                 options: list[list[tuple[FlavorResource, int, int]]]) -> None:
        """Remember that ``info`` (queued at ClusterQueue ``node``) waits until one of ``options`` —
        per flavor, every ``(fr, needed, available now)`` it is short of — is met."""
        info.park += 1
        for needs in options:
            fr, val, free = needs[0]
            self._wait(node, cq_name, info, [(f, v) for f, v, _ in needs], fr, val, free)

    def _wait(self, node: QuotaNode, cq_name: str, info: "WorkloadInfo", needs: list[tuple[FlavorResource, int]],
              fr: FlavorResource, val: int, free: int) -> None:
        """Park one option on the need ``fr`` (``val`` needed, ``free`` available now)."""
        root, tree = self._tree(node)
        key = (tree, fr)
        self._seq += 1
        entry = (info, info.park, node, cq_name, needs)
        if _root_bound(node, fr, val):
            buckets = self._buckets.get(key)
            if buckets is None:
                buckets = self._buckets[key] = (root, {})
            order = info.order
            heapq.heappush(buckets[1].setdefault(val, []), (order[0], order[1], cq_name, order[2], self._seq, entry))
        else:
            heapq.heappush(self._heaps.setdefault(key, []), (self._released.get(key, 0) + val - free, self._seq, entry))

    def _all_met(self, entry: tuple) -> bool:
        """Whether every need of a parked option is met now; if not, re-park it on the first unmet one
        (cheap: O(needs × depth), no flavor assignment)."""
        info, park, node, cq_name, needs = entry
        if park != info.park:
            return False
        for fr, val in needs:
            free = available(node, fr)
            if free < val:
                self._wait(node, cq_name, info, needs, fr, val, free)
                return False
        return True

    def set_aside(self, info: "WorkloadInfo") -> None:
        """``info`` did not fit; if it had been woken on its tree's free quota, give that quota back
        so the next waiter in line gets its turn."""
        spent = self._woken.pop(info.key, None)
        if spent is not None:
            self.dirty.add(spent)

    def release(self, node: QuotaNode, charge: dict[FlavorResource, int]) -> list["WorkloadInfo"]:
        """Account quota released at ClusterQueue ``node``; return the deficit-waiters it reached
        and mark root-bound buckets of the tree for ``affordable``."""
        if not self._heaps and not self._buckets:
            return []
        _, tree = self._tree(node)
        woken: list["WorkloadInfo"] = []
        for fr, amount in charge.items():
            key = (tree, fr)
            if key in self._buckets:
                self.dirty.add(key)
            heap = self._heaps.get(key)
            if not heap:
                continue
            total = self._released[key] = self._released.get(key, 0) + amount
            due = []
            while heap and heap[0][0] <= total:
                due.append(heapq.heappop(heap)[2])
            if not heap:
                del self._heaps[key]
                del self._released[key]
            woken.extend(entry[0] for entry in due if self._all_met(entry))
        return woken

    def affordable(self) -> list["WorkloadInfo"]:
        """Wake root-bound waiters of released trees, best order first, while the root's free
        quota covers them; clears the release marks."""
        if not self.dirty:
            return []
        woken = []
        self._woken.clear()
        for key in sorted(self.dirty):
            if key not in self._buckets:
                continue
            root, buckets = self._buckets[key]
            fr = key[1]
            budget = root.subtree.get(fr, 0) - root.usage.get(fr, 0)
            while budget > 0:
                best = None
                for val, heap in buckets.items():
                    if val > budget:
                        continue
                    while heap and heap[0][5][1] != heap[0][5][0].park:
                        heapq.heappop(heap)
                    if heap and (best is None or heap[0] < buckets[best][0]):
                        best = val
                if best is None:
                    break
                entry = heapq.heappop(buckets[best])[5]
                if not self._all_met(entry):
                    continue
                info = entry[0]
                woken.append(info)
                self._woken[info.key] = key
                info.park += 1
                budget -= best
            for val in [v for v, heap in buckets.items() if not heap]:
                del buckets[val]
            if not buckets:
                del self._buckets[key]
        self.dirty.clear()
        return woken

    def clear(self) -> None:
        """Forget every waiter (after everyone was woken by a configuration change)."""
        self._released.clear()
        self._heaps.clear()
        self._buckets.clear()
        self.dirty.clear()
        self._woken.clear()


def _root_bound(node: QuotaNode, fr: FlavorResource, val: int) -> bool:
    """Whether ``val`` of ``fr`` would fit at ClusterQueue ``node`` given only enough free quota at
    its root: no lending limit on the path and every borrowing-limit cap allows ``val``."""
    n = node
    while n.parent is not None:
        if fr in n.lending_limit:
            return False
        bl = n.borrowing_limit.get(fr)
        if bl is not None:
            usage = n.usage.get(fr, 0)
            if n.subtree.get(fr, 0) - (usage if usage > 0 else 0) + bl < val:
                return False
        n = n.parent
    return True


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

    def filter(self, cluster: "ClusterState", entries: list) -> tuple[list, dict[str, str]]:
        """Keep the entries to process this cycle; returns them and the scope of each kept
        sticking-out entry (by ClusterQueue name)."""
        keep = []
        best: dict[str, tuple] = {}
        for entry in entries:
            borrowing, order, name, info, assignment = entry[0], entry[1], entry[2], entry[3], entry[4]
            scope = cluster.admission_scope(name) if (not assignment.fits or borrowing > 0) else None
            if scope is None:
                keep.append(entry)
                continue
            blocker = self.blockers.get(scope)
            if blocker is not None and blocker is not info:
                self._defer(scope, entry, f"waiting behind {blocker.key} in the admission scope of cohort {scope}")
                continue
            key = (cluster.cluster_queue_score(name), order[0], order[1], name)
            current = best.get(scope)
            if current is None or key < current[0]:
                best[scope] = (key, entry)
                entry = current[1] if current is not None else None
            if entry is not None:
                self._defer(scope, entry, f"waiting for its turn in the admission scope of cohort {scope}")
        scopes = {}
        for scope, (_, entry) in best.items():
            keep.append(entry)
            scopes[entry[2]] = scope
        return keep, scopes

    def _defer(self, scope: str, entry: tuple, message: str) -> None:
        entry[3].reason = PENDING
        entry[3].message = message
        self.deferred.setdefault(scope, set()).add(entry[2])

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
    """Run admission cycles until no ClusterQueue has a ready head; decisions go to ``cluster``."""
    ready = cluster.ready
    queues = cluster.queues
    hierarchy_cqs = cluster.hierarchy.cluster_queues
    max_capacity = cluster.max_capacity
    wake_index = cluster.wake_index
    gate = cluster.scope_gate
    scorer = cluster.local_queue_score
    scoped = cluster.has_admission_scopes()
    while True:
        if wake_index.dirty:
            cluster.wake_affordable()
        if gate.blockers:
            gate.release(cluster)
        if not ready:
            return
        names = sorted(ready) if len(ready) > 1 else list(ready)
        ready.clear()
        entries = []
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
            assignment = assign_flavors(entry, info, max_capacity)
            entries.append((assignment.borrowing, info.order, name, info, assignment, entry, queue))
        scopes: dict[str, str] = {}
        if scoped:
            entries, scopes = gate.filter(cluster, entries)
        entries.sort(key=lambda e: (e[0], e[1][0], e[1][1], e[2]))
        admitted_any = False
        for _, _, name, info, assignment, entry, queue in entries:
            if not assignment.fits:
                info.reason = assignment.reason
                info.message = assignment.message
                queue.set_aside(info)
                cluster.waiting.add(name)
                cluster.wake_index.set_aside(info)
                if assignment.wake:
                    cluster.wake_index.register(entry.node, name, info, assignment.wake)
                if queue.strategy == BEST_EFFORT_FIFO:
                    ready.add(name)
                if name in scopes:
                    gate.outcome(cluster, scopes[name], info, False)
                continue
            if admitted_any and not fits_now(entry, assignment.usage):
                info.reason = WAITING_FOR_QUOTA
                info.message = NO_LONGER_FITS
                ready.add(name)
                continue
            cluster.admit(info, entry, queue, assignment)
            admitted_any = True
            ready.add(name)
            if name in scopes:
                gate.outcome(cluster, scopes[name], info, True)
