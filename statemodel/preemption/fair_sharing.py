"""Fair-sharing preemption (Kueue ``preemption.go`` ``fairPreemptions``, ``fairsharing/*.go``;
reference/kueue.md §4.4).

1. **Candidates**: admitted workloads of the preemptor's ClusterQueue its ``withinClusterQueue``
   policy allows; and, when it has a cohort and ``reclaimWithinCohort`` is not ``Never``, those of
   every other ClusterQueue of the whole cohort tree that borrows (usage above nominal quota) on a
   flavor-resource needing preemption, allowed by ``reclaimWithinCohort`` (``borrowWithinCohort``
   is ignored).  Kueue's candidate order (``candidates.candidate_key``; by LocalQueue usage inside a
   usage-based ClusterQueue, ``candidates.by_local_queue_usage``).
2. The preemptor's request is charged to its ClusterQueue for the whole search (shares include it).
3. **Target ClusterQueues** (:class:`TargetOrdering`, Kueue ``TargetClusterQueueOrdering``): from the
   root, repeatedly descend to the child with the highest share — pruning ClusterQueues that do not
   borrow (the preemptor's own excepted) or have no candidate left, and Cohorts that do not borrow
   unless on the preemptor's path — ties between ClusterQueues to the one whose next candidate sorts
   first, between a Cohort and a ClusterQueue to the Cohort.
4. **First strategy**, per target: the preemptor's own ClusterQueue gives its next candidate
   (``InClusterQueue``); if the preemptor's ClusterQueue, request included, is within nominal quota
   on every flavor-resource needing preemption, the target's next candidate goes
   (``InCohortReclamation``, Kueue's ``FairSharingPreemptWithinNominal``); otherwise the shares of
   the two *almost lowest common ancestors* (the children of the lowest common Cohort on the
   preemptor's and the target's side) decide, candidate by candidate:
   ``LessThanOrEqualToFinalShare`` — preemptor's share ≤ target's share after removing the candidate;
   ``LessThanInitialShare`` — preemptor's share < target's share before.  A candidate that passes is
   preempted (``InCohortFairSharing``) and the target is chosen again; one that fails is kept for
   the second strategy.  (A preemptor with an infinite share — weight 0 — cannot pass against a
   finite target: its candidates go straight to the retry list.)
5. **Second strategy** (when configured and the first did not make the request fit): over the retry
   candidates, per target ClusterQueue once, ``LessThanInitialShare`` decides whether its next
   candidate goes.
6. If the request fits, the victims not needed are given back (``classical.fill_back``, borrowing
   allowed); otherwise there are no targets.  Every simulated change is undone before returning.

Early ends, same answers (docs/preemption.md): a search that can remove nothing answers ``[]``
before its walk (:func:`may_remove`); in the first strategy a target below the preemptor's side
gives its candidates to the retry list at once (its first: the only one the second strategy could
take), and the search ends once no strategy can pass any more (:func:`_may_pass`); a target side
whose candidates all fail the first strategy (``QuotaModel.share_without_least``), or one that fails
the second, is passed over whole; what the second strategy may still need below a Cohort is read
when its walk gets there (:class:`RetryList`); a Cohort's starting heap of ClusterQueues is kept
for the next search while its children's usage stays the same (:class:`KeptHeaps`).
``LessThanOrEqualToFinalShare`` reads the target's share without a candidate from the quota model
(``QuotaModel.share_without``) instead of simulating the release, and is not asked again of a
candidate whose charge covers one that failed it against the same state (:func:`_covers_any`).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Final

from statemodel.objects import FairSharingPreemptionStrategy, FlavorResource, PreemptionPolicy
from statemodel.preemption.candidates import (
    WITHIN_CLUSTER_QUEUE, Candidate, by_local_queue_usage, candidate_key, satisfies_policy,
)
from statemodel.preemption.classical import Target, fill_back, fits
from statemodel.preemption.context import PreemptionContext
from statemodel.preemption.hierarchical import borrowing_with
from statemodel.quota.protocol import CLUSTER_QUEUE, COHORT, Share, ShareOrder
from statemodel.reasons import IN_CLUSTER_QUEUE, IN_COHORT_FAIR_SHARING, IN_COHORT_RECLAMATION, PreemptionReason

if TYPE_CHECKING:
    from statemodel.workload import WorkloadInfo

NEVER: Final = PreemptionPolicy.NEVER
LOWER_PRIORITY: Final = PreemptionPolicy.LOWER_PRIORITY
LOWER_OR_NEWER_EQUAL_PRIORITY: Final = PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY
LESS_THAN_OR_EQUAL_TO_FINAL_SHARE: Final = FairSharingPreemptionStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE
LESS_THAN_INITIAL_SHARE: Final = FairSharingPreemptionStrategy.LESS_THAN_INITIAL_SHARE

Node = tuple[str, str]
HeapEntry = tuple[int, int, tuple, str, int]
"""A ClusterQueue in its Cohort's heap (``TargetOrdering._best_cluster_queue``): its share's key
negated (``TargetOrdering._heap_key``: rank, scaled value), its next candidate's ``candidate_key``,
its name and the ``version`` the entry was made at."""
Weight = Callable[[str, str], int]
"""``(kind, name) -> fairSharing.weight`` in thousandths."""


class KeptHeaps:
    """Per Cohort off a preemptor's path and per flavor-resources needing preemption, the heap of its
    child ClusterQueues as the first strategy's walk builds it on entering the Cohort
    (:meth:`TargetOrdering._best_cluster_queue`), kept from one search to the next while
    ``QuotaModel.children_version`` of the Cohort stays the same: the children's usage, and so their
    shares, whether they borrow and which are above quota, are then as when it was built, and a
    search entering the Cohort starts from a copy of the same heap — the same entries, built in the
    same order, at the same common denominator — instead of reading every child's share again.
    Kept only for a Cohort off the preemptor's path (its own ClusterQueue's share, request charged,
    is no child's there), built and reused only while no child's usage is simulated (the version is
    ``None`` then: the search released a candidate there) and with no child pruned in the search.
    The owner clears it when the configuration changes (weights are not in the version).  Cost: a
    dict read per Cohort entered, a copy of the heap on a hit."""

    def __init__(self) -> None:
        self.heaps: dict[tuple[str, tuple[FlavorResource, ...]],
                         tuple[tuple[int, int], tuple[HeapEntry, ...], int, tuple[str, ...]]] = {}

    def clear(self) -> None:
        """Forget every heap (the configuration changed)."""
        self.heaps.clear()


class RetryList:
    """What the first strategy leaves to the second (Kueue's ``retryCandidates``): the candidates it
    read (``candidates``), and the Cohorts below which every ClusterQueue its walk (``ordering``)
    can still reach gives its first candidate (``TargetOrdering.give_first``), read only when the
    second strategy's walk first enters the Cohort it sits in (``below``; ``TargetOrdering.reachable``
    from the nearest of them down)."""

    def __init__(self, ordering: "TargetOrdering", candidates: list[Candidate], below: set[str]) -> None:
        self.ordering = ordering
        self.candidates = candidates
        self.below = below


class TargetOrdering:
    """Kueue ``TargetClusterQueueOrdering``: which ClusterQueue to take the next victim from.

    ``targets`` holds each ClusterQueue's candidates in order; ``pop`` takes the next one.  Given no
    candidate list (the first strategy), a ClusterQueue's candidates are read from the candidate
    index the first time the walk reaches it (Kueue ``findCandidates``, module docstring, step 1):
    the walk never reaches a ClusterQueue below a Cohort that does not borrow off the preemptor's
    path, and such a Cohort cannot start borrowing while releases are simulated, so those
    candidates, which Kueue collects, can never be chosen.  Whether another ClusterQueue borrows
    for that rule is judged as at the start of the search (``released`` adds back what was
    simulated away).  The tree is read through the quota model's ``path``, its index of children
    above their quota (``over_quota_children``: the child ClusterQueues that can hold candidates)
    and the hierarchy's child Cohorts (linked edges, sorted once per search); shares through
    ``QuotaModel.share``, remembered per node until a simulated release below it (``changed``).
    """

    def __init__(self, ctx: PreemptionContext, weight: Weight, candidates: list[Candidate] | None,
                 later: "RetryList | None" = None, kept: KeptHeaps | None = None) -> None:
        self.ctx = ctx
        self.later = later  # the second strategy: Cohorts whose candidates are read on first use
        self.kept = kept  # the first strategy: Cohorts' starting heaps kept between searches
        self.later_reach: dict[str, bool] = {}
        self.weight = weight
        path = ctx.model.path(ctx.cluster_queue)
        self.path: list[Node] = path
        self.preemptor_path: dict[Node, int] = {node: i for i, node in enumerate(path)}
        self.root: Node = path[-1]
        self.lazy = candidates is None
        self.targets: dict[str, list[Candidate]] = {}
        for cand in candidates or []:
            self.targets.setdefault(cand.cluster_queue, []).append(cand)
        self.listed: dict[str, list[str]] = {}  # Cohort -> its child ClusterQueues given candidates
        for cq in self.targets:
            above = ctx.model.path(cq)
            if len(above) > 1:
                self.listed.setdefault(above[1][1], []).append(cq)
        self.pruned: set[Node] = set()
        self.shares: dict[Node, Share] = {}
        self.keys: dict[Node, ShareOrder] = {}
        self.least_keys: dict[Node, ShareOrder] = {}
        self.least: dict[FlavorResource, int] | None = None
        self.children: dict[str, list[str]] = {}
        self.released: dict[str, dict[FlavorResource, int]] = {}
        self.heaps: dict[str, list[HeapEntry]] = {}
        self.scales: dict[str, int] = {}
        self.version: dict[str, int] = {}
        self.passes_over = False  # the first strategy under LessThanOrEqualToFinalShare (:meth:`_pass_over`)
        self.deferred: list[tuple[Node, Node]] = []  # (mine, theirs) passed over unread: ``_first_strategy``

    def share(self, node: Node) -> Share:
        """The node's share now."""
        got = self.shares.get(node)
        if got is None:
            got = self.shares[node] = self.ctx.model.share(node[0], node[1], self.weight(node[0], node[1]))
        return got

    def key(self, node: Node) -> ShareOrder:
        """``Share.order`` of the node's share now."""
        got = self.keys.get(node)
        if got is None:
            got = self.keys[node] = self.share(node).order()
        return got

    def least_key(self, node: Node) -> ShareOrder:
        """``Share.order`` of ``QuotaModel.share_without_least`` of the node now, with the least any
        one candidate below it releases (a ClusterQueue: ``CandidateIndex.least_charge_of`` its own;
        a Cohort: ``CandidateIndex.least_charge`` of all): no candidate below the node leaves it a
        higher share."""
        got = self.least_keys.get(node)
        if got is None:
            ctx = self.ctx
            if node[0] == CLUSTER_QUEUE:
                least = ctx.index.least_charge_of(ctx.admitted, node[1])
            else:
                everyone = self.least
                if everyone is None:
                    everyone = self.least = ctx.index.least_charge(ctx.admitted)
                least = everyone
            share = ctx.model.share_without_least(node[0], node[1], self.weight(node[0], node[1]), least)
            got = self.least_keys[node] = share.order()
        return got

    def changed(self, cq: str, charge: dict[FlavorResource, int]) -> None:
        """``charge`` of ``cq`` was released in the simulation: forget the shares on its path."""
        for node in self.ctx.model.path(cq):
            self.shares.pop(node, None)
            self.keys.pop(node, None)
            self.least_keys.pop(node, None)
        released = self.released.setdefault(cq, {})
        for fr, amount in charge.items():
            released[fr] = released.get(fr, 0) + amount
        self.version[cq] = self.version.get(cq, 0) + 1

    def _candidates(self, cq: str) -> list[Candidate]:
        """``cq``'s candidates in Kueue's order (read on first use when lazy)."""
        got = self.targets.get(cq)
        if got is None:
            got = self.targets[cq] = self._collect(cq) if self.lazy else []
        return got

    def _collect(self, cq: str) -> list[Candidate]:
        """Kueue ``findCandidates`` restricted to ``cq`` (:meth:`_policy`)."""
        ctx = self.ctx
        policy = self._policy(cq)
        if policy == NEVER:
            return []
        out = [Candidate(info, cq, None, WITHIN_CLUSTER_QUEUE) for info in _eligible(ctx, cq, policy)]
        return by_local_queue_usage(ctx, out)

    def _policy(self, cq: str) -> PreemptionPolicy:
        """The policy ``cq``'s workloads are candidates by (Kueue ``findCandidates``): the preemptor's
        own ClusterQueue by its ``withinClusterQueue`` policy; another, if it borrowed on a
        flavor-resource needing preemption at the start of the search, by ``reclaimWithinCohort``
        (``Never`` otherwise)."""
        ctx = self.ctx
        if cq == ctx.cluster_queue:
            return ctx.preemption.within_cluster_queue
        policy = ctx.preemption.reclaim_within_cohort if len(self.path) > 1 else NEVER
        if policy != NEVER and not self._borrowed_at_start(cq):
            return NEVER
        return policy

    def _borrowed_at_start(self, cq: str) -> bool:
        """Kueue ``cqIsBorrowing`` as at the start of the search: above nominal quota on a
        flavor-resource needing preemption, counting what the search has released of it since."""
        released = self.released.get(cq, {})
        for fr in self.ctx.frs:
            nominal, _, usage = self.ctx.model.quota_numbers(CLUSTER_QUEUE, cq, fr)
            if nominal < usage + released.get(fr, 0):
                return True
        return False

    def has_workload(self, cq: str) -> bool:
        """Whether ``cq`` has a candidate left."""
        return bool(self._candidates(cq))

    def pop(self, cq: str) -> Candidate:
        """Take ``cq``'s next candidate."""
        self.version[cq] = self.version.get(cq, 0) + 1
        return self._candidates(cq).pop(0)

    def give_first(self, cq: str, into: list[Candidate]) -> None:
        """Take every candidate ``cq`` has left, giving the second strategy the one it could take:
        the first in Kueue's candidate order (``candidate_key``), into ``into``.  The second strategy
        sorts its candidates that way and takes at most one per ClusterQueue, the first, so the
        others need not be read: a ClusterQueue not read yet gives its first eligible workload
        (the candidate index's order is that order within one ClusterQueue; ordering by LocalQueue
        usage, ``by_local_queue_usage``, only reorders the first strategy's)."""
        self.version[cq] = self.version.get(cq, 0) + 1
        got = self.targets.get(cq)
        if got is None:
            got = []
            policy = self._policy(cq)
            if policy != NEVER:
                info = next(_eligible(self.ctx, cq, policy), None)
                if info is not None:
                    got = [Candidate(info, cq, None, WITHIN_CLUSTER_QUEUE)]
        if got:
            ctx = self.ctx
            into.append(min(got, key=lambda cand: candidate_key(ctx, cand)))
        self.targets[cq] = []

    def exhausted(self, node: Node) -> bool:
        """Whether the walk can take nothing more below ``node``: pruned, or a ClusterQueue without
        a candidate left."""
        return node in self.pruned or (node[0] == CLUSTER_QUEUE and not self.has_workload(node[1]))

    def drop(self, cq: str) -> None:
        """Kueue ``DropQueue``: take no more victims from ``cq``."""
        self.pruned.add((CLUSTER_QUEUE, cq))

    def _child_cohorts(self, cohort: str) -> list[str]:
        """The Cohort's linked child Cohorts, by name."""
        got = self.children.get(cohort)
        if got is None:
            cohorts = self.ctx.hierarchy.cohorts
            got = self.children[cohort] = sorted(c for c in cohorts[cohort].child_cohorts if cohorts[c].linked)
        return got

    def _may_target(self, cohort: str) -> list[str]:
        """The child ClusterQueues of ``cohort`` that can be targets now — a superset of those
        :meth:`_entry` keeps, so the heap skips the rest of the Cohort's children.  Given candidate
        lists (the second strategy), the ClusterQueues that have one (``listed``: filed by parent
        Cohort once per ordering, so a Cohort's are read in O(its children), not O(all targets)).
        Read lazily (the first strategy), a ClusterQueue other than the preemptor's has a candidate
        only if it borrowed on a flavor-resource needing preemption at the start of the search
        (``_collect``), and only this ordering's simulated releases lowered its usage since: so it
        is above its nominal quota on one of them now (``QuotaModel.over_quota_children``) or it is
        in ``released``."""
        ctx = self.ctx
        model = ctx.model
        parent = (COHORT, cohort)
        if self.lazy:
            out = [name for kind, name in model.over_quota_children(cohort, ctx.frs) if kind == CLUSTER_QUEUE]
            more: list[str] = list(self.released)
        else:
            out = list(self.listed.get(cohort, ()))
            more = []
            later = self.later
            if later is not None and self._later_reaches(cohort):
                for cq in later.ordering.reachable(cohort)[0]:
                    extra: list[Candidate] = []
                    later.ordering.give_first(cq, extra)
                    if extra:
                        have = self.targets.get(cq, [])
                        self.targets[cq] = sorted(have + extra, key=lambda cand: candidate_key(ctx, cand))
                        if not have:
                            out.append(cq)
        own = ctx.cluster_queue
        if self.preemptor_path.get(parent) == 1:
            more.append(own)
        for cq in more:
            path = model.path(cq)
            if len(path) > 1 and path[1] == parent and cq not in out:
                out.append(cq)
        return out

    def __iter__(self) -> Iterator[str]:
        own = self.ctx.cluster_queue
        if self.root[0] == CLUSTER_QUEUE:
            while (CLUSTER_QUEUE, own) not in self.pruned and self.has_workload(own):
                yield own
            return
        while self.root not in self.pruned:
            target = self._next(self.root[1])
            if target is not None:
                yield target

    def _next(self, cohort: str) -> str | None:
        """Kueue ``nextTarget``: the ClusterQueue below ``cohort`` to take a victim from, or ``None``
        when everything below it is pruned (it is then pruned too)."""
        child_cohorts = self._child_cohorts(cohort)
        best_cq, best_cq_key = self._best_cluster_queue(cohort)
        best_cohort: str | None = None
        best_cohort_key: ShareOrder | None = None
        for child in child_cohorts:
            node = (COHORT, child)
            if node in self.pruned:
                continue
            share = self.share(node)
            if not share.borrowed and node not in self.preemptor_path:
                self.pruned.add(node)
                continue
            key = self.key(node)
            if best_cohort_key is None or key > best_cohort_key:
                best_cohort, best_cohort_key = child, key
        if best_cq is None and best_cohort is None:
            self.pruned.add((COHORT, cohort))
            return None
        if best_cohort is not None and (best_cq_key is None or (best_cohort_key is not None
                                                                 and best_cohort_key >= best_cq_key)):
            if self.passes_over and self._pass_over(cohort, (COHORT, best_cohort)):
                return None  # chosen again from the root
            return self._next(best_cohort)
        return best_cq

    def _entry(self, cohort: str, cq: str) -> HeapEntry | None:
        """``cq``'s place in its Cohort's heap (highest share first, then the next candidate first),
        or ``None`` — and ``cq`` pruned — when it does not borrow (the preemptor's own excepted) or
        has no candidate left."""
        node = (CLUSTER_QUEUE, cq)
        share = self.share(node)
        if (not share.borrowed and cq != self.ctx.cluster_queue) or not self.has_workload(cq):
            self.pruned.add(node)
            return None
        rank, value = self._heap_key(cohort, self.key(node))
        return (rank, value, candidate_key(self.ctx, self._candidates(cq)[0]), cq, self.version.get(cq, 0))

    def _heap_key(self, cohort: str, order: ShareOrder) -> tuple[int, int]:
        """``order`` negated as two integers, which order the Cohort's heap as ``ShareOrder.negated``
        would, compared without a call: ``-rank`` and ``-numerator / denominator`` scaled to the
        heap's common denominator (``scales``; every entry's value is a multiple of it, so equal
        shares give equal integers).  A denominator that does not divide it grows it to their
        least common multiple and multiplies every value in the heap by the same factor, which
        keeps their order and so the heap."""
        numerator = order.numerator
        if numerator == 0:
            return -order.rank, 0
        denominator = order.denominator
        scale = self.scales.get(cohort, 1)
        if scale % denominator:
            grown = scale // math.gcd(scale, denominator) * denominator
            factor = grown // scale
            heap = self.heaps.get(cohort)
            if heap is not None:
                for i, (rank, value, cand_key, cq, version) in enumerate(heap):
                    heap[i] = (rank, value * factor, cand_key, cq, version)
            self.scales[cohort] = scale = grown
        return -order.rank, -numerator * (scale // denominator)

    def _best_cluster_queue(self, cohort: str) -> tuple[str | None, ShareOrder | None]:
        """The child ClusterQueue of ``cohort`` with the highest share (ties: the one whose next
        candidate sorts first) and its share's key; ``(None, None)`` when every one is pruned.

        A heap per Cohort, built on the first visit of the search and kept: an entry is stale once
        its ClusterQueue's share was forgotten (``changed``) or its next candidate taken (``pop``).
        Both only lower its place (simulated releases only lower shares; the candidate order is
        ascending), so a stale entry reaches the top no later than its fresh one would, and is
        replaced there (or dropped, when pruned): the top after that is the scan's answer.  The
        heap starts with stale entries too — the share now and the empty key ``()``, which sorts
        before every candidate's, version -1 — so a ClusterQueue's candidates are read only when it
        reaches the top.  Entries compare as tuples of integers (:meth:`_heap_key`), so the heap's
        comparisons make no Python call up to the candidate key.  Cost: O(borrowing children)
        cached shares on the first visit (:meth:`_may_target`), O(log children) and the candidates'
        reading per stale entry after."""
        heap = self.heaps.get(cohort)
        if heap is None:
            heap = self._first_heap(cohort)
        pruned, version = self.pruned, self.version
        while heap:
            top = heap[0]
            cq = top[3]
            if (CLUSTER_QUEUE, cq) in pruned:
                heapq.heappop(heap)
            elif top[4] != version.get(cq, 0):
                if top[4] < 0 and self.passes_over and self._pass_over(cohort, (CLUSTER_QUEUE, cq)):
                    heapq.heappop(heap)
                    continue
                entry = self._entry(cohort, cq)
                if entry is None:
                    heapq.heappop(heap)
                else:
                    heapq.heapreplace(heap, entry)
            else:
                return cq, self.key((CLUSTER_QUEUE, cq))
        return None, None

    def _first_heap(self, cohort: str) -> list[HeapEntry]:
        """The Cohort's heap on the first visit (:meth:`_best_cluster_queue`): an entry per child
        ClusterQueue that may be a target (:meth:`_may_target`), not pruned, and borrowing (or the
        preemptor's own) — those that do not borrow are pruned.  Off the preemptor's path it is
        taken from, or left in, ``kept`` (:class:`KeptHeaps`)."""
        ctx = self.ctx
        kept = self.kept if (COHORT, cohort) not in self.preemptor_path else None
        stamp = ctx.model.children_version(cohort) if kept is not None else None
        key = (cohort, tuple(ctx.frs)) if stamp is not None else None
        if kept is not None and key is not None:
            got = kept.heaps.get(key)
            if got is not None and got[0] == stamp:
                heap = self.heaps[cohort] = list(got[1])
                self.scales[cohort] = got[2]
                for cq in got[3]:
                    self.pruned.add((CLUSTER_QUEUE, cq))
                return heap
        heap = self.heaps[cohort] = []
        own = ctx.cluster_queue
        lent: list[str] = []  # children that do not borrow: pruned
        for cq in self._may_target(cohort):
            node = (CLUSTER_QUEUE, cq)
            if node in self.pruned:
                key = None  # this search's own view: not for the next one
                continue
            if not self.share(node).borrowed and cq != own:
                self.pruned.add(node)
                lent.append(cq)
                continue
            rank, value = self._heap_key(cohort, self.key(node))
            heap.append((rank, value, (), cq, -1))
        heapq.heapify(heap)
        if kept is not None and key is not None and stamp is not None:
            kept.heaps[key] = (stamp, tuple(heap), self.scales.get(cohort, 1), tuple(lent))
        return heap

    def _pass_over(self, cohort: str, node: Node) -> bool:
        """The first strategy under ``LessThanOrEqualToFinalShare``, at ``node``, a child of
        ``cohort`` off the preemptor's path, before anything below it is read — a child Cohort as the
        walk is about to descend into it, a child ClusterQueue as it reaches the top of the Cohort's
        heap: whether ``node`` is passed over unread (pruned, and listed in ``deferred`` for
        :func:`_first_strategy`).  Only when ``cohort`` is on the preemptor's path: ``node`` is then
        the side of every target below it, against the preemptor's side there (``mine``).

        So it is when even the least release (:meth:`least_key`) leaves ``node`` below ``mine`` — no
        candidate below it can pass now — and the walk would choose its targets one after the other
        before anything below ``mine`` changes, while nothing else changes their test (``mine``'s
        share falls only when something below it is taken).  That holds when ``node``'s share is at
        least ``mine``'s (else its targets could not pass, which the strategy handles itself) and:
        a Cohort stays the highest child of ``cohort`` until emptied; a ClusterQueue strictly above
        ``mine`` comes before it at ``cohort``, a Cohort or a ClusterQueue.  A ClusterQueue level
        with ``mine`` qualifies only when ``mine`` is the preemptor's own ClusterQueue whose next
        candidate is not evicting (or that has none): Kueue's candidate order puts another
        ClusterQueue's candidates before the preemptor's own, evicting first, so ``node`` comes
        before it."""
        at = self.preemptor_path.get((COHORT, cohort))
        if at is None or node in self.preemptor_path:
            return False
        mine = self.path[at - 1]
        mine_key = self.key(mine)
        key = self.key(node)
        if key < mine_key or not self.least_key(node) < mine_key:
            return False
        if key == mine_key and node[0] == CLUSTER_QUEUE:
            if at != 1:
                return False
            own_next = self._candidates(self.ctx.cluster_queue)
            if own_next and own_next[0].info.evicting:
                return False
        self.pruned.add(node)
        self.deferred.append((mine, node))
        return True

    def reachable(self, cohort: str) -> tuple[list[str], list[str]]:
        """What the walk can still reach just below ``cohort``: its child ClusterQueues not pruned and
        borrowing (or the preemptor's own), in its heap (the heap's entries, or :meth:`_may_target`
        for a Cohort the walk has not entered yet, as its heap would be built); and its child
        Cohorts not pruned and borrowing or on the preemptor's path.  Read only; O(children)."""
        own = self.ctx.cluster_queue
        pruned = self.pruned
        heap = self.heaps.get(cohort)
        cqs = []
        for cq in [entry[3] for entry in heap] if heap is not None else self._may_target(cohort):
            node = (CLUSTER_QUEUE, cq)
            if node not in pruned and (cq == own or self.share(node).borrowed):
                cqs.append(cq)
        cohorts = []
        for child in self._child_cohorts(cohort):
            node = (COHORT, child)
            if node not in pruned and (self.share(node).borrowed or node in self.preemptor_path):
                cohorts.append(child)
        return cqs, cohorts

    def _later_reaches(self, cohort: str) -> bool:
        """The second strategy: whether ``cohort`` is one of the Cohorts the first strategy left to
        be read on first use (``later.below``) or one its walk could still reach below the nearest
        of them (:meth:`reachable`, step by step)."""
        got = self.later_reach.get(cohort)
        if got is None:
            later = self.later
            assert later is not None
            if cohort in later.below:
                got = True
            else:
                entry = self.ctx.hierarchy.cohorts.get(cohort)
                parent = entry.parent_name if entry is not None else None
                got = (parent is not None and self._later_reaches(parent)
                       and cohort in later.ordering.reachable(parent)[1])
            self.later_reach[cohort] = got
        return got

    def prune(self, cohort: str) -> None:
        """Take nothing more below ``cohort``: the walk no longer enters it, and its candidates not
        read yet are never read."""
        self.pruned.add((COHORT, cohort))

    def common_cohort(self, mine: Node) -> str:
        """The lowest common Cohort of the preemptor and a target whose almost lowest common
        ancestor on the preemptor's side is ``mine`` (:meth:`almost_lcas`)."""
        return self.path[self.preemptor_path[mine] + 1][1]

    def almost_lcas(self, target_cq: str) -> tuple[Node, Node]:
        """Kueue ``getAlmostLCAs``: the preemptor's and the target's node just below their lowest
        common Cohort."""
        target_path = self.ctx.model.path(target_cq)
        for i, node in enumerate(target_path):
            at = self.preemptor_path.get(node)
            if at is not None and i > 0:
                return self.path[at - 1], target_path[i - 1]
        raise AssertionError("the target shares no Cohort with the preemptor")


def _eligible(ctx: PreemptionContext, cq: str, policy: PreemptionPolicy) -> Iterator["WorkloadInfo"]:
    """The admitted workloads of ``cq`` that ``policy`` (not ``Never``) lets the context's preemptor
    preempt and that use a flavor-resource needing preemption, in the candidate index's order
    (evicting first, then ascending priority; without those preempted earlier in the step), read
    lazily."""
    ordered = ctx.index.ordered(ctx.admitted, cq)
    for info in ordered.evicting:
        if ctx.uses_needed(info) and satisfies_policy(ctx.preemptor, info, policy):
            yield info
    mine = ctx.preemptor.obj.priority
    bound = mine if policy == LOWER_PRIORITY else mine + 1 if policy == LOWER_OR_NEWER_EQUAL_PRIORITY else None
    for info in ordered.rest:
        if bound is not None and info.obj.priority >= bound:
            return  # ascending priority: no later workload satisfies the policy
        if ctx.uses_needed(info) and satisfies_policy(ctx.preemptor, info, policy):
            yield info


def may_remove(ctx: PreemptionContext, weight: Weight) -> bool:
    """Whether the search can preempt anything at all, read off the state before it starts (the
    preemptor's request charged); when not, :func:`find_targets` answers ``[]`` at once — the answer
    of the whole search, which only succeeds after a removal.

    ``True`` when the preemptor's own ClusterQueue has a candidate (step 4 always takes it), when its
    ClusterQueue stays within nominal quota (``InCohortReclamation`` takes any target's), or when,
    for some Cohort on the preemptor's path, a borrowing child off the path
    (``QuotaModel.borrowing_children``: every target's almost lowest common ancestor is one) has a
    share at least the preemptor's side's there.  Otherwise no strategy can pass: until the first
    removal every share is the initial one, a target's share without a candidate is at most its
    initial share, and both strategies need the preemptor's side at most the target's side
    (``LessThanOrEqualToFinalShare``: ≤ final ≤ initial; ``LessThanInitialShare``: < initial),
    so nothing is ever removed.  Cost: O(depth × borrowing children) cached shares, and the own
    ClusterQueue's candidates up to the first one."""
    own = ctx.cluster_queue
    policy = ctx.preemption.within_cluster_queue
    if policy != NEVER and next(_eligible(ctx, own, policy), None) is not None:
        return True
    if len(ctx.model.path(own)) == 1 or ctx.preemption.reclaim_within_cohort == NEVER:
        return False
    return _within_nominal(ctx) or _may_pass(ctx, weight)


def _may_pass(ctx: PreemptionContext, weight: Weight, ordering: TargetOrdering | None = None) -> bool:
    """Whether, for some Cohort on the preemptor's path, a borrowing child off the path
    (``QuotaModel.borrowing_children``) has a share now at least the preemptor's side's there — the
    only nodes a candidate can pass a strategy against (:func:`_cannot_pass`).  Given the first
    strategy's ``ordering``, a child whose share equals the preemptor's side's does not count once
    the ordering has nothing left below it: the second strategy needs the target's side strictly
    above.  The ClusterQueues the ordering has released from count too, whether or not they still
    borrow on a flavor-resource needing preemption: their candidates were collected when they did,
    and the walk still takes them while they borrow on any.  O(depth × borrowing children), shares
    as the quota model remembers them."""
    model = ctx.model
    path = model.path(ctx.cluster_queue)
    for i in range(1, len(path)):
        mine = path[i - 1]
        mine_key = model.share(mine[0], mine[1], weight(mine[0], mine[1])).order()
        children = model.borrowing_children(path[i][1], ctx.frs)
        if ordering is not None and ordering.released:
            children = children + [(CLUSTER_QUEUE, cq) for cq in ordering.released
                                   if model.path(cq)[1] == path[i] and (CLUSTER_QUEUE, cq) not in children]
        for child in children:
            if child == mine:
                continue
            key = model.share(child[0], child[1], weight(child[0], child[1])).order()
            if key > mine_key or (key == mine_key and (ordering is None or not ordering.exhausted(child))):
                return True
    return False


def _may_lower(ordering: TargetOrdering, mine: Node, retry: list[Candidate],
               deferred: list[tuple[Node, Node]]) -> bool:
    """Whether the second strategy might remove a candidate of ``retry`` below the preemptor's side
    ``mine`` (a node of the preemptor's path), and so lower that side's share.

    Level by level up the preemptor's path: its own ClusterQueue's share never falls (the first
    strategy takes its candidates itself; none is retried).  A retry candidate whose lowest common
    Cohort with the preemptor is ``path[j]`` has sides ``path[j - 1]`` and ``theirs``
    (:meth:`TargetOrdering.almost_lcas`; ``deferred`` gives such pairs of sides passed over unread,
    each as if it held a candidate); the second strategy takes it only if ``theirs``'s share is then
    strictly above ``path[j - 1]``'s, and a share only falls — so it may be taken only if ``theirs``
    is above now, or ``path[j - 1]``'s share may fall itself.  ``path[j]``'s share may
    fall once a candidate below it may be taken.  O(retry × depth)."""
    at = ordering.preemptor_path
    top = at[mine]
    if top == 0:
        return False
    at_level: dict[int, list[Node]] = {}  # j -> the ``theirs`` side of each retry candidate there
    sides = [ordering.almost_lcas(cand.cluster_queue) for cand in retry] + deferred
    for side, theirs in sides:
        j = at[side] + 1
        if j <= top:
            at_level.setdefault(j, []).append(theirs)
    for j in range(1, top + 1):  # path[j - 1]'s share cannot fall: may path[j]'s?
        side_order = ordering.key(ordering.path[j - 1])
        for theirs in at_level.get(j, ()):
            if ordering.key(theirs) > side_order:
                return True
    return False


def _cannot_pass(preemptor_new: Share, target_old: Share) -> bool:
    """Whether no candidate of a target can pass either strategy while the preemptor's side keeps its
    share: the target's side is below it now, and removing candidates only lowers a share, so
    ``LessThanOrEqualToFinalShare`` (preemptor ≤ final ≤ initial) and ``LessThanInitialShare``
    (preemptor < initial) both fail."""
    return target_old.order() < preemptor_new.order()


def _fits(ctx: PreemptionContext) -> bool:
    """Kueue ``workloadFitsForFairSharing``: the request fits (borrowing allowed) with its own
    simulated charge taken out again."""
    undo = ctx.model.simulate_release(ctx.cluster_queue, ctx.usage)
    ok = fits(ctx, True)
    undo()
    return ok


def _strategy_passes(strategy: FairSharingPreemptionStrategy, preemptor_new: Share, target_old: Share,
                     target_new: Share | None) -> bool:
    """Kueue ``LessThanOrEqualToFinalShare`` / ``LessThanInitialShare``."""
    if strategy == LESS_THAN_OR_EQUAL_TO_FINAL_SHARE:
        assert target_new is not None
        return preemptor_new.order() <= target_new.order()
    return preemptor_new.order() < target_old.order()


Removed = list[tuple[Candidate, Callable[[], None]]]


def _remove(ctx: PreemptionContext, ordering: TargetOrdering, cand: Candidate, reason: PreemptionReason,
            removed: Removed) -> None:
    """Preempt ``cand`` in the simulation, for ``reason``."""
    cand.reason = reason
    removed.append((cand, ctx.model.simulate_release(cand.cluster_queue, cand.info.charge)))
    ordering.changed(cand.cluster_queue, cand.info.charge)


def _covers_any(charge: dict[FlavorResource, int], failed: list[dict[FlavorResource, int]]) -> bool:
    """Whether ``charge`` is at least one of the charges ``failed`` on every flavor-resource (either
    one's missing entries counting as 0).  Removing more usage never raises a share (a release
    spills up no less, and a share grows with usage), so within one state a candidate charging at
    least what a candidate that failed ``LessThanOrEqualToFinalShare`` charged fails it too."""
    for other in failed:
        covers = True
        for fr, amount in other.items():
            if charge.get(fr, 0) < amount:
                covers = False
                break
        if covers:
            for fr, amount in charge.items():  # an entry only ``charge`` has: not below 0
                if amount < 0 and fr not in other:
                    covers = False
                    break
        if covers:
            return True
    return False


def _within_nominal(ctx: PreemptionContext) -> bool:
    """Kueue ``queueWithinNominalInResourcesNeedingPreemption`` (request already charged)."""
    for fr in ctx.frs:
        if borrowing_with(ctx.model, CLUSTER_QUEUE, ctx.cluster_queue, fr, 0):
            return False
    return True


def _first_strategy(ctx: PreemptionContext, weight: Weight, strategy: FairSharingPreemptionStrategy,
                    removed: Removed, kept: KeptHeaps | None = None) -> tuple[bool, RetryList | None]:
    """Kueue ``runFirstFsStrategy``: ``(fits, retry list)``; the retry list is ``None`` when the
    request fits, and when no strategy can remove anything more (:func:`_may_pass`), so the search
    has failed.  The second strategy takes at most one candidate per ClusterQueue, the first in
    candidate order, so a ClusterQueue given away unread gives only that one
    (:meth:`TargetOrdering.give_first`).

    A target whose share is below the preemptor's side's (:func:`_cannot_pass`) gives its candidates
    to the retry list at once, and so does every target the walk can still reach below their lowest
    common Cohort: none of them can pass.  That Cohort is pruned; what the walk could reach below it
    is left to the second strategy to read when it first gets there (:class:`RetryList`), or not at
    all when the second strategy could not take it either: it needs a target's side strictly above
    the preemptor's side, a target's share only falls, and the preemptor's side's share falls only if
    the second strategy removes a retry candidate below it, which :func:`_may_lower` rules out —
    then they would only be chosen, fail and be dropped, changing nothing.  (The target's own first
    candidate stands for them in :func:`_may_lower`: its side is the highest among theirs, and none
    changes once the Cohort is pruned.)  The first time since the last removal that a target cannot
    pass, the whole tree is checked: with no candidate of the preemptor's own ClusterQueue left and
    no borrowing node's share reaching the preemptor's side's, nothing changes any share any more
    and every later target would fail the same way, in this strategy and the second.

    Under ``LessThanOrEqualToFinalShare`` (and the preemptor's ClusterQueue above nominal quota) the
    walk passes over, unread, a target side none of whose candidates can pass
    (:meth:`TargetOrdering._pass_over`: even the least
    release leaves it below the preemptor's side, :meth:`TargetOrdering.least_key`), when it
    would choose its targets one after the other with nothing changing meanwhile.  Their candidates
    go to the retry list (a Cohort's read on first use, as above) only when the strategy ends with
    one and the second strategy could take from that side — above the preemptor's side now, or
    :func:`_may_lower`.

    ``LessThanOrEqualToFinalShare`` tests a candidate with ``QuotaModel.share_without`` (the target
    side's share were the candidate released; nothing is simulated), and a candidate whose charge
    covers that of one which failed during the same visit of the target (no removal in between, so
    the same state) fails without a test (:func:`_covers_any`)."""
    ordering = TargetOrdering(ctx, weight, None, kept=kept)
    retry: list[Candidate] = []
    final = strategy == LESS_THAN_OR_EQUAL_TO_FINAL_SHARE
    within_nominal = _within_nominal(ctx)
    ordering.passes_over = final and not within_nominal
    deferred = ordering.deferred  # (mine, theirs): sides given to the retry list unread
    drained: list[Node] = []  # mine: what the walk can still reach below its lowest common Cohort
    model = ctx.model
    checked = False  # the whole tree was checked since the last removal
    for cq in ordering:
        if cq == ctx.cluster_queue:
            _remove(ctx, ordering, ordering.pop(cq), IN_CLUSTER_QUEUE, removed)
            if _fits(ctx):
                return True, None
            checked = False
            continue
        if within_nominal:
            _remove(ctx, ordering, ordering.pop(cq), IN_COHORT_RECLAMATION, removed)
            if _fits(ctx):
                return True, None
            continue
        mine, theirs = ordering.almost_lcas(cq)
        preemptor_new, target_old = ordering.share(mine), ordering.share(theirs)
        if preemptor_new.zero_weight_borrows() and not target_old.zero_weight_borrows():
            ordering.give_first(cq, retry)
            continue
        if _cannot_pass(preemptor_new, target_old):
            if not checked:
                checked = True
                if not ordering.has_workload(ctx.cluster_queue) and not _may_pass(ctx, weight, ordering):
                    return False, None
            ordering.prune(ordering.common_cohort(mine))  # the rest below it cannot pass either
            if _may_lower(ordering, mine, retry, deferred):  # else none can pass the second strategy either
                ordering.give_first(cq, retry)
                drained.append(mine)
            continue
        their_weight = weight(theirs[0], theirs[1])
        failed: list[dict[FlavorResource, int]] = []  # charges that failed the final share here
        while ordering.has_workload(cq):
            cand = ordering.pop(cq)
            if final:
                charge = cand.info.charge
                passed = False
                if not _covers_any(charge, failed):  # else it fails as the one it covers did
                    target_new = model.share_without(theirs[0], theirs[1], their_weight, cq, charge)
                    passed = preemptor_new.order() <= target_new.order()
                    if not passed:
                        failed.append(charge)
            else:
                passed = _strategy_passes(strategy, preemptor_new, target_old, None)
            if passed:
                _remove(ctx, ordering, cand, IN_COHORT_FAIR_SHARING, removed)
                if _fits(ctx):
                    return True, None
                checked = False
                break  # shares changed: choose the target again
            retry.append(cand)
    below = {ordering.common_cohort(mine) for mine in drained if _may_lower(ordering, mine, retry, deferred)}
    for mine, theirs in deferred:
        if ordering.key(theirs) > ordering.key(mine) or _may_lower(ordering, mine, retry, deferred):
            if theirs[0] == COHORT:
                below.add(theirs[1])
            else:
                ordering.give_first(theirs[1], retry)
    return False, RetryList(ordering, retry, below)


def _second_strategy(ctx: PreemptionContext, weight: Weight, retry: "RetryList", removed: Removed) -> bool:
    """Kueue ``runSecondFsStrategy`` (rule S2-b, ``LessThanInitialShare``, once per ClusterQueue).
    A target that fails where its side is a Cohort prunes that side: the walk would choose every
    other target below it in turn, each failing the same way, as nothing changes meanwhile."""
    ordering = TargetOrdering(ctx, weight, sorted(retry.candidates, key=lambda c: candidate_key(ctx, c)), retry)
    for cq in ordering:
        mine, theirs = ordering.almost_lcas(cq)
        passed = _strategy_passes(LESS_THAN_INITIAL_SHARE, ordering.share(mine), ordering.share(theirs), None)
        cand = ordering.pop(cq)
        if passed:
            _remove(ctx, ordering, cand, IN_COHORT_FAIR_SHARING, removed)
            if _fits(ctx):
                return True
        elif theirs[0] == COHORT:
            ordering.prune(theirs[1])  # every ClusterQueue below it fails the same way while nothing changes
        ordering.drop(cq)
    return False


def find_targets(ctx: PreemptionContext, strategies: tuple[FairSharingPreemptionStrategy, ...],
                 weight: Weight, heaps: KeptHeaps | None = None) -> list[Target]:
    """The victims of fair-sharing preemption for the context's preemptor (module docstring), in the
    order chosen; ``[]`` when the strategies cannot make it fit.  ``strategies``: the configured
    ``preemptionStrategies`` (non-empty); ``heaps``: the Cohorts' starting heaps kept between the
    searches of one cluster state (:class:`KeptHeaps`; the same victims without it).  The quota
    model is left exactly as found."""
    model = ctx.model
    ctx.index.refresh(ctx.admitted, ctx.hierarchy)
    undo_request = model.simulate_charge(ctx.cluster_queue, ctx.usage)
    if not may_remove(ctx, weight):
        undo_request()
        return []
    removed: Removed = []
    ok, retry = _first_strategy(ctx, weight, strategies[0], removed, heaps)
    if not ok and retry is not None and len(strategies) > 1:
        ok = _second_strategy(ctx, weight, retry, removed)
    undo_request()
    if not ok:
        for _, undo in reversed(removed):
            undo()
        return []
    kept = fill_back(ctx, removed, True)
    for _, undo in reversed(kept):
        undo()
    return [Target(cand) for cand, _ in kept]
