"""Candidate collection and ordering of classical preemption (Kueue
``classical/candidate_generator.go``, ``classical/hierarchical_preemption.go``,
``common/ordering.go``, ``common/preemption_policy.go``; reference/kueue.md §4.1-4.2).

* **Same-queue candidates**: admitted workloads of the preemptor's ClusterQueue that its
  ``withinClusterQueue`` policy allows (reason ``InClusterQueue``).
* **Hierarchical walk** (only with a cohort and ``reclaimWithinCohort`` ≠ ``Never``): for each
  ancestor from the parent to the root, the ClusterQueues of its subtree outside the subtree already
  visited, descending only into Cohorts and ClusterQueues that are above their quota for a needed
  flavor-resource.  While the request fits in the quota of a subtree already climbed the preemptor
  has *hierarchical advantage*: the candidates found then form the **hierarchy** list (reason
  ``InCohortReclamation`` whatever the borrowing policy), the others the **priority** list, whose
  reason depends on ``borrowWithinCohort`` (``InCohortReclamation`` when the victim may only be
  reclaimed without the preemptor borrowing, else ``InCohortReclaimWhileBorrowing``).
* Each list is ordered by :func:`candidate_key`; the final order is: evicting candidates of the
  hierarchy, priority and same-queue lists, then the others in the same list order.

A candidate stays valid while its ClusterQueue, and every Cohort between it and the lowest common
ancestor with the preemptor, is above its quota for a needed flavor-resource (re-checked live as
victims are removed, :func:`is_valid`).  Only the relevant subtrees are visited: a Cohort within
its quota is not descended into.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING, Final

from statemodel.objects import BorrowWithinCohortPolicy, FlavorResource, PreemptionPolicy
from statemodel.preemption.candidate_index import CandidateIndex, OrderedQueue, QueueKey, queue_key
from statemodel.preemption.context import PreemptionContext
from statemodel.quota.protocol import CLUSTER_QUEUE, COHORT, QuotaModel
from statemodel.reasons import (
    IN_CLUSTER_QUEUE, IN_COHORT_RECLAIM_WHILE_BORROWING, IN_COHORT_RECLAMATION, PreemptionReason,
)

if TYPE_CHECKING:
    from statemodel.workload import WorkloadInfo

NEVER: Final = PreemptionPolicy.NEVER
LOWER_PRIORITY: Final = PreemptionPolicy.LOWER_PRIORITY
LOWER_OR_NEWER_EQUAL_PRIORITY: Final = PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY
ANY: Final = PreemptionPolicy.ANY
BORROW_NEVER: Final = BorrowWithinCohortPolicy.NEVER

# Kueue ``preemptionVariant``: why a candidate may be preempted.
WITHIN_CLUSTER_QUEUE: Final = 1
HIERARCHICAL_RECLAIM: Final = 2
RECLAIM_WITHOUT_BORROWING: Final = 3
RECLAIM_WHILE_BORROWING: Final = 4

_REASONS: dict[int, PreemptionReason] = {
    WITHIN_CLUSTER_QUEUE: IN_CLUSTER_QUEUE,
    HIERARCHICAL_RECLAIM: IN_COHORT_RECLAMATION,
    RECLAIM_WITHOUT_BORROWING: IN_COHORT_RECLAMATION,
    RECLAIM_WHILE_BORROWING: IN_COHORT_RECLAIM_WHILE_BORROWING,
}


class Candidate:
    """A workload the preemptor may preempt.

    Attributes:
        info: the admitted workload.  cluster_queue: the ClusterQueue it holds quota in.
        lca: name of the lowest common Cohort with the preemptor (``None`` for its own ClusterQueue).
        variant: one of the module's variant constants.  reason: the ``PreemptionReason`` it implies.
    """

    __slots__ = ("info", "cluster_queue", "lca", "variant", "reason")

    def __init__(self, info: "WorkloadInfo", cluster_queue: str, lca: str | None, variant: int) -> None:
        self.info = info
        self.cluster_queue = cluster_queue
        self.lca = lca
        self.variant = variant
        self.reason = _REASONS[variant]


def satisfies_policy(preemptor: "WorkloadInfo", candidate: "WorkloadInfo", policy: PreemptionPolicy) -> bool:
    """Kueue ``SatisfiesPreemptionPolicy``: ``LowerPriority`` — the candidate's priority is lower;
    ``LowerOrNewerEqualPriority`` — lower, or equal and the preemptor's queue-order timestamp (its
    creation time) strictly earlier; ``Any`` — always; ``Never`` — never."""
    if policy == NEVER:
        return False
    if policy == ANY:
        return True
    mine, theirs = preemptor.obj.priority, candidate.obj.priority
    if mine > theirs:
        return True
    return (policy == LOWER_OR_NEWER_EQUAL_PRIORITY and mine == theirs
            and preemptor.obj.creation_ms < candidate.obj.creation_ms)


def borrowing_forbidden(ctx: PreemptionContext) -> bool:
    """Kueue ``IsBorrowingWithinCohortForbidden``: ``borrowWithinCohort.policy`` is ``Never``."""
    return ctx.preemption.borrow_within_cohort_policy == BORROW_NEVER


def classify(ctx: PreemptionContext, info: "WorkloadInfo", cluster_queue: str, advantage: bool) -> int:
    """Kueue ``classifyPreemptionVariant``: 0 when ``info`` may not be preempted (uses no needed
    flavor-resource, or the policy forbids it), else its variant.  (A workload preempted earlier in
    the step is no candidate at all: ``CandidateIndex.ordered`` leaves it out.)"""
    if not ctx.uses_needed(info):
        return 0
    own = cluster_queue == ctx.cluster_queue
    policy = ctx.preemption.within_cluster_queue if own else ctx.preemption.reclaim_within_cohort
    if not satisfies_policy(ctx.preemptor, info, policy):
        return 0
    if own:
        return WITHIN_CLUSTER_QUEUE
    if advantage:
        return HIERARCHICAL_RECLAIM
    if borrowing_forbidden(ctx):
        return RECLAIM_WITHOUT_BORROWING
    theirs, mine = info.obj.priority, ctx.preemptor.obj.priority
    threshold = ctx.preemption.borrow_within_cohort_max_priority_threshold
    if theirs >= mine or (threshold is not None and theirs > threshold):
        return RECLAIM_WITHOUT_BORROWING
    return RECLAIM_WHILE_BORROWING


def candidate_key(ctx: PreemptionContext, cand: Candidate) -> tuple[int, int, int, int, str, str]:
    """Kueue ``CandidatesOrdering``: evicting first, other ClusterQueues before the preemptor's own,
    lower priority first, more recently admitted first, then uid and — our final key, unique — the
    workload key."""
    info = cand.info
    admitted = info.admitted_ms if info.admitted_ms is not None else 0
    return (0 if info.evicting else 1, 1 if cand.cluster_queue == ctx.cluster_queue else 0,
            info.obj.priority, -admitted, info.obj.uid, info.key)


def by_local_queue_usage(ctx: PreemptionContext, ordered: list[Candidate]) -> list[Candidate]:
    """Kueue ``CandidatesOrdering`` key 3 (KEP-4136: "when picking the candidates for preemption, with
    AdmissionScope equal ClusterQueue, Kueue orders workloads based on the LocalQueue resource usage
    when considering workloads within the same ClusterQueue"): among the candidates of one usage-based
    ClusterQueue with the same eviction status, the one whose LocalQueue has the higher usage goes
    first, ``candidate_key`` order otherwise.  ``ordered`` is in ``candidate_key`` order; each
    ClusterQueue's candidates are reordered among the positions they hold, so candidates of different
    ClusterQueues keep their order (Kueue's comparison is not transitive across ClusterQueues; this is
    our total order).  Unchanged when ``ctx.local_queue_usage`` is ``None`` (AFS off)."""
    usage_of = ctx.local_queue_usage
    if usage_of is None or len(ordered) < 2:
        return ordered
    slots: dict[tuple[str, bool], list[int]] = {}
    for i, cand in enumerate(ordered):
        slots.setdefault((cand.cluster_queue, cand.info.evicting), []).append(i)
    out = list(ordered)
    for positions in slots.values():
        if len(positions) < 2:
            continue
        members = [ordered[i] for i in positions]
        usages = [usage_of(c.info) for c in members]
        known = [u for u in usages if u is not None]
        if len(known) < len(usages):
            continue
        ranked = sorted(range(len(members)), key=lambda j: -known[j])  # stable: candidate_key among equals
        for pos, j in zip(positions, ranked):
            out[pos] = members[j]
    return out


class Source:
    """One ClusterQueue whose admitted workloads are candidates of a search: where it joins the
    preemptor's path (``lca``, ``None`` for the preemptor's own) and whether it was reached with
    hierarchical advantage."""

    __slots__ = ("cluster_queue", "lca", "advantage")

    def __init__(self, cluster_queue: str, lca: str | None, advantage: bool) -> None:
        self.cluster_queue = cluster_queue
        self.lca = lca
        self.advantage = advantage


def _collect_in_subtree(ctx: PreemptionContext, cohort: str, subtree_root: str, skip: str | None, advantage: bool,
                        out: list[Source]) -> None:
    """Kueue ``collectCandidatesInSubtree``: the ClusterQueues under ``cohort`` outside the child
    subtree ``skip`` whose workloads are candidates, descending only into nodes above their quota
    for a needed flavor-resource (the model's ``over_quota_children``, so the cost follows the nodes
    that borrow, not the size of the tree).  What ``collect`` reads at once when some workload is
    evicting; otherwise ``_Merge`` walks the same nodes lazily."""
    for kind, name in ctx.model.over_quota_children(cohort, ctx.frs):
        if kind == COHORT:
            if name != skip:
                _collect_in_subtree(ctx, name, subtree_root, skip, advantage, out)
        elif name != ctx.cluster_queue:
            out.append(Source(name, subtree_root, advantage))


def _over_quota_child_cohorts(ctx: PreemptionContext, cohort: str, skip: str | None) -> list[str]:
    """The linked child Cohorts of ``cohort`` other than ``skip`` above their quota for a needed
    flavor-resource (the Cohorts among ``over_quota_children``), by name; O(child Cohorts)."""
    cohorts = ctx.hierarchy.cohorts
    entry = cohorts.get(cohort)
    if entry is None:
        return []
    return [child for child in sorted(entry.child_cohorts)
            if child != skip and cohorts[child].linked and not ctx.model.within_nominal(COHORT, child, ctx.frs)]


def can_fit_without_borrowing(ctx: PreemptionContext, same_queue: list[Candidate]) -> bool:
    """Whether the preemptor could fit within its ClusterQueue's nominal quota at all: only victims of
    its own ClusterQueue (``same_queue``) lower that ClusterQueue's usage, so if the assignment
    exceeds the nominal quota even with all of them gone, no attempt without borrowing can succeed
    and candidates that may only be reclaimed without borrowing are of no use."""
    own: dict[FlavorResource, int] = {}
    for cand in same_queue:
        for fr, amount in cand.info.charge.items():
            own[fr] = own.get(fr, 0) + amount
    for fr, amount in ctx.usage.items():
        nominal, _, usage = ctx.model.quota_numbers(CLUSTER_QUEUE, ctx.cluster_queue, fr)
        if nominal < usage - own.get(fr, 0) + amount:
            return False
    return True


def _priority_bound(ctx: PreemptionContext, own: bool, advantage: bool, without_borrowing: bool) -> int | None:
    """The priority from which none of a source's workloads can be a candidate (``None``: no such
    bound); ``own``: the source is the preemptor's ClusterQueue, ``advantage``: it was reached with
    hierarchical advantage.  A ClusterQueue's workloads are read in ascending priority, so its scan
    stops there: ``LowerPriority`` admits only priorities below the preemptor's,
    ``LowerOrNewerEqualPriority`` also equal ones; a workload of another ClusterQueue reached
    without hierarchical advantage, when only the attempt with borrowing is left, must be
    ``InCohortReclaimWhileBorrowing``, which needs a priority below the preemptor's (``classify``)."""
    policy = ctx.preemption.within_cluster_queue if own else ctx.preemption.reclaim_within_cohort
    mine = ctx.preemptor.obj.priority
    bound: int | None = None
    if policy == LOWER_PRIORITY:
        bound = mine
    elif policy == LOWER_OR_NEWER_EQUAL_PRIORITY:
        bound = mine + 1
    if not own and not advantage and not without_borrowing and (bound is None or bound > mine):
        bound = mine
    return bound


class _Merge:
    """The candidates of a group of sources in candidate order, produced on demand.

    ``evicting``: the evicting candidates, all at hand (sorted; they are few).  The others come from
    one heap of entries ``(key, kind, i)``:

    * a **source** (kind 1): a ClusterQueue whose workloads are candidates, at the key of its next
      unread workload (its ``OrderedQueue.rest`` read from the front, the scan stopped at
      ``_priority_bound``);
    * an unopened **Cohort** (kind 0, ``cohorts``: ``(cohort, lca)``) at the smallest key below it
      (``CandidateIndex.subtree_min``, a lower bound): opened when it reaches the top — its child
      Cohorts above quota become unopened entries, its ClusterQueues a walk — so subtrees whose
      workloads all sort after the victims found are never read;
    * a **walk** (kind 2) over a Cohort's child ClusterQueues in the order of their first workload
      (``CandidateIndex.children_by_first``), at the key of the next one: when it reaches the top,
      that ClusterQueue becomes a source if it is above its quota for a needed flavor-resource (and
      is not the preemptor's own), and the walk moves on.  So a Cohort's ClusterQueues are read as
      their candidates come, not all when it opens.  A ClusterQueue's quota is judged when the walk
      reaches it, later than an opening would: simulated releases since can only have brought it
      within quota, and then ``is_valid`` rejects every one of its workloads for the rest of the
      attempt anyway (usage only falls during an attempt), so the valid candidates are the same.

    Only the heap's top source is classified (``top``).  Every source of a group has the same
    ``advantage``.  Keys are unique (they end in the workload key), so the order is total.
    """

    def __init__(self, ctx: PreemptionContext, index: CandidateIndex, sources: list[Source],
                 cohorts: list[tuple[str, str]], walks: list[tuple[str, str]], advantage: bool,
                 without_borrowing: bool) -> None:
        self.ctx = ctx
        self.index = index
        self.advantage = advantage
        self.without_borrowing = without_borrowing
        self.sources: list[Source] = []
        self.lists: list[OrderedQueue] = []
        self.bounds: list[int | None] = []
        self.pos: list[int] = []
        self.cohorts: list[tuple[str, str]] = []
        self.walk_lists: list[list[tuple[QueueKey, str]]] = []
        self.walk_pos: list[int] = []
        self.walk_lca: list[str] = []
        self.heap: list[tuple[QueueKey, int, int]] = []
        self.evicting_keyed: list[tuple[QueueKey, Candidate]] = []
        self.own_bound = _priority_bound(ctx, True, False, without_borrowing)
        self.other_bound = _priority_bound(ctx, False, advantage, without_borrowing)
        for source in sources:
            self._add_source(source)
        for cohort, lca in cohorts:
            self._add_cohort(cohort, lca)
        for cohort, lca in walks:
            self._add_walk(cohort, lca)
        heapq.heapify(self.heap)
        self.evicting_keyed.sort(key=lambda kc: kc[0])
        self.evicting = [cand for _, cand in self.evicting_keyed]
        self.top: Candidate | None = None
        self._settle()

    def _add_source(self, source: Source) -> None:
        """A ClusterQueue joins: its evicting candidates are collected, its first workload's key goes
        on the heap (not yet ordered: callers heapify or push); one with neither an evicting workload
        nor a first workload below its bound is not kept."""
        ordered = self.index.ordered(self.ctx.admitted, source.cluster_queue)
        bound = self.own_bound if source.cluster_queue == self.ctx.cluster_queue else self.other_bound
        if not ordered.evicting and not (ordered.rest and (bound is None or ordered.keys[0][0] < bound)):
            return
        i = len(self.sources)
        self.sources.append(source)
        self.lists.append(ordered)
        self.bounds.append(bound)
        self.pos.append(0)
        if ordered.rest and (bound is None or ordered.keys[0][0] < bound):
            self.heap.append((ordered.keys[0], 1, i))
        for info in ordered.evicting:
            cand = self._candidate(info, source)
            if cand is not None:
                self.evicting_keyed.append((queue_key(info), cand))

    def _add_cohort(self, cohort: str, lca: str) -> None:
        """A Cohort joins unopened, on the heap at the smallest key below it (callers heapify or push)."""
        low = self.index.subtree_min(self.ctx.admitted, self.ctx.hierarchy, cohort)
        bound = self.other_bound
        if low and (bound is None or low[0][0] < bound):
            self.heap.append((low[0], 0, len(self.cohorts)))
        self.cohorts.append((cohort, lca))

    def _add_walk(self, cohort: str, lca: str) -> None:
        """A walk over ``cohort``'s ClusterQueues joins, at its first one's key (callers heapify or
        push); none when no first key is below the bound (the order is ascending, so none after)."""
        children = self.index.children_by_first(self.ctx.admitted, self.ctx.hierarchy, cohort)
        bound = self.other_bound
        if children and (bound is None or children[0][0][0] < bound):
            self.heap.append((children[0][0], 2, len(self.walk_lists)))
            self.walk_lists.append(children)
            self.walk_pos.append(0)
            self.walk_lca.append(lca)

    def _open(self, i: int) -> None:
        """Replace the heap's top, unopened Cohort ``i``, by its child Cohorts above quota (unopened)
        and a walk over its ClusterQueues."""
        heap = self.heap
        heapq.heappop(heap)
        cohort, lca = self.cohorts[i]
        start = len(heap)
        for child in _over_quota_child_cohorts(self.ctx, cohort, None):
            self._add_cohort(child, lca)
        self._add_walk(cohort, lca)
        added = heap[start:]
        del heap[start:]
        for entry in added:
            heapq.heappush(heap, entry)

    def _walk(self, w: int) -> None:
        """The heap's top, walk ``w``, reached its next ClusterQueue: the walk moves on (or ends) and
        the ClusterQueue becomes a source when it is above its quota for a needed flavor-resource
        and is not the preemptor's own."""
        heap = self.heap
        children, pos = self.walk_lists[w], self.walk_pos[w]
        name = children[pos][1]
        pos += 1
        self.walk_pos[w] = pos
        bound = self.other_bound
        if pos < len(children) and (bound is None or children[pos][0][0] < bound):
            heapq.heapreplace(heap, (children[pos][0], 2, w))
        else:
            heapq.heappop(heap)
        ctx = self.ctx
        if name != ctx.cluster_queue and not ctx.model.within_nominal(CLUSTER_QUEUE, name, ctx.frs):
            start = len(heap)
            self._add_source(Source(name, self.walk_lca[w], self.advantage))
            if len(heap) > start:
                heapq.heappush(heap, heap.pop())

    def _candidate(self, info: "WorkloadInfo", source: Source) -> Candidate | None:
        """``info`` of ``source`` as a candidate, ``None`` when it is none."""
        variant = classify(self.ctx, info, source.cluster_queue, source.advantage)
        if variant and (self.without_borrowing or variant != RECLAIM_WITHOUT_BORROWING):
            return Candidate(info, source.cluster_queue, source.lca, variant)
        return None

    def _step(self, i: int) -> None:
        """Source ``i`` (the heap's top) moves to its next workload."""
        pos = self.pos[i] + 1
        self.pos[i] = pos
        ordered, bound = self.lists[i], self.bounds[i]
        if pos < len(ordered.rest) and (bound is None or ordered.keys[pos][0] < bound):
            heapq.heapreplace(self.heap, (ordered.keys[pos], 1, i))
        else:
            heapq.heappop(self.heap)

    def _settle(self) -> None:
        """Open Cohorts, walk ClusterQueues and classify the heap's top until it is a candidate
        (``top``) or the heap is empty."""
        heap = self.heap
        while heap:
            _, kind, i = heap[0]
            if kind == 0:
                self._open(i)
                continue
            if kind == 2:
                self._walk(i)
                continue
            cand = self._candidate(self.lists[i].rest[self.pos[i]], self.sources[i])
            if cand is not None:
                self.top = cand
                return
            self._step(i)
        self.top = None

    def empty(self) -> bool:
        """Whether no non-evicting candidate is left."""
        return self.top is None

    def pop(self) -> Candidate:
        """The next non-evicting candidate (the group must not be empty)."""
        cand = self.top
        assert cand is not None
        self._step(self.heap[0][2])
        self._settle()
        return cand


class _Group:
    """One of Kueue's candidate lists (hierarchy, priority, same queue): its evicting candidates and
    the others, either all at hand (ordered by LocalQueue usage under admission fair sharing) or
    produced on demand (``_Merge``)."""

    __slots__ = ("evicting", "rest", "merge")

    def __init__(self, ctx: PreemptionContext, index: CandidateIndex, sources: list[Source],
                 cohorts: list[tuple[str, str]], walks: list[tuple[str, str]], advantage: bool,
                 without_borrowing: bool) -> None:
        merge = _Merge(ctx, index, sources, cohorts, walks, advantage, without_borrowing)
        evicting = merge.evicting
        rest: list[Candidate] = []
        if ctx.local_queue_usage is not None:
            while not merge.empty():
                rest.append(merge.pop())
            ordered = by_local_queue_usage(ctx, evicting + rest)
            evicting = ordered[:len(evicting)]
            rest = ordered[len(evicting):]
        self.evicting = evicting
        self.rest = rest
        self.merge = merge

    def empty(self) -> bool:
        """Whether the list has no candidate."""
        return not self.evicting and not self.rest and self.merge.empty()


class CandidateList:
    """Kueue ``candidateIterator``: the candidates in search order, produced on demand, and the two
    facts the attempt plan needs.

    Attributes:
        same_queue: every candidate of the preemptor's own ClusterQueue (in search order).
        no_other_queue: no candidate comes from another ClusterQueue.
        no_hierarchical: the hierarchy list is empty.
    """

    def __init__(self, groups: list[_Group], same_queue: list[Candidate]) -> None:
        self.same_queue = same_queue
        self.no_other_queue = groups[0].empty() and groups[1].empty()
        self.no_hierarchical = groups[0].empty()
        self._seen: list[Candidate] = []
        for group in groups:
            self._seen.extend(group.evicting)
        self._groups = groups
        self._next_group = 0
        self._at = 0

    def get(self, i: int) -> Candidate | None:
        """The ``i``-th candidate in search order, ``None`` past the last."""
        seen = self._seen
        while len(seen) <= i and self._next_group < len(self._groups):
            group = self._groups[self._next_group]
            if self._at < len(group.rest):
                seen.append(group.rest[self._at])
                self._at += 1
            elif not group.merge.empty():
                seen.append(group.merge.pop())
            else:
                self._next_group += 1
                self._at = 0
        return seen[i] if i < len(seen) else None


def collect(ctx: PreemptionContext) -> CandidateList:
    """Kueue ``NewCandidateIterator``: the candidates in search order (module docstring), leaving
    out those only an attempt without borrowing could use when no such attempt can succeed
    (:func:`can_fit_without_borrowing`; the search's result is the same).  ``ctx.index`` holds each
    ClusterQueue's admitted workloads in candidate order.

    Unless some workload is evicting (those go first, so every subtree is read at once), the
    subtrees are read lazily (``_Merge``): each Cohort of the preemptor's path gives a walk over its
    ClusterQueues by first workload and its child Cohorts above quota as unopened entries.  A node
    reached while the search has simulated releases may be within quota although it was not at the
    start; it is then left out, and so is everything below it, but ``is_valid`` would reject all
    their workloads for the rest of that attempt anyway (usage only falls during an attempt).  So
    the valid candidates an attempt reads are the same as with every subtree read at the start,
    provided each attempt starts from a fresh list on the unsimulated state
    (``classical.find_targets`` does).

    Cost: the preemptor's own candidates, and per candidate actually read O(log entries) plus the
    ClusterQueues and Cohorts whose first key comes before it; a ClusterQueue's workloads past the
    last one that can be a candidate (``_priority_bound``) are not read."""
    index = ctx.index
    index.refresh(ctx.admitted, ctx.hierarchy)
    own = [Source(ctx.cluster_queue, None, False)] if ctx.preemption.within_cluster_queue != NEVER else []
    same = _Group(ctx, index, own, [], [], False, True)
    same_list = list(same.evicting) + list(same.rest)
    while not same.merge.empty():
        same_list.append(same.merge.pop())
    same.rest = same_list[len(same.evicting):]
    # per group (hierarchy, priority): sources read at once, unopened Cohorts, walks
    sources: tuple[list[Source], list[Source]] = ([], [])
    cohorts: tuple[list[tuple[str, str]], list[tuple[str, str]]] = ([], [])
    walks: tuple[list[tuple[str, str]], list[tuple[str, str]]] = ([], [])
    lazy = not index.evicting_queues
    without_borrowing = True
    # the path and where the request first fits a subtree's quota (Kueue ``QuantitiesFitInQuota``
    # folded up the path, one model call): the preemptor has hierarchical advantage at path[i]
    # once a node below it took the request
    path, level = ctx.model.advantage_level(ctx.cluster_queue, list(ctx.usage.items()))
    if len(path) > 1 and ctx.preemption.reclaim_within_cohort != NEVER:
        without_borrowing = can_fit_without_borrowing(ctx, same_list)
        # the lowest priority admitted: when it is at or above a group's bound, no ClusterQueue has
        # a candidate for that group (evicting ones aside: lazy only)
        floor = index.lowest_priority()
        previous: str | None = None
        for i in range(1, len(path)):
            cohort = path[i][1]
            advantage = level < i
            group = 0 if advantage else 1
            if not lazy:
                _collect_in_subtree(ctx, cohort, cohort, previous, advantage, sources[group])
            elif floor is not None:
                bound = _priority_bound(ctx, False, advantage, without_borrowing)
                if bound is None or floor < bound:
                    walks[group].append((cohort, cohort))
                    for child in _over_quota_child_cohorts(ctx, cohort, previous):
                        cohorts[group].append((child, cohort))
            previous = cohort
    groups = [_Group(ctx, index, sources[0], cohorts[0], walks[0], True, without_borrowing),
              _Group(ctx, index, sources[1], cohorts[1], walks[1], False, without_borrowing), same]
    return CandidateList(groups, same_list)


def may_have_candidates(ctx: PreemptionContext) -> bool:
    """A cheap necessary condition for :func:`collect` to find any candidate: ``False`` only when no
    workload can be one, so a search may return "no victim set" at once (most searches of a loaded
    cohort end there: a head whose priority no admitted workload in reach is below).

    It asks the same questions as ``collect`` without building its lists: an evicting workload
    anywhere (those are candidates whatever the bounds) answers ``True``; otherwise the preemptor's
    own ClusterQueue, then for each Cohort from its parent to the root (none when no admitted
    workload anywhere is below the level's bound, ``CandidateIndex.lowest_priority``), every child
    above its quota outside the subtree already climbed, is read only for its lowest priority
    (``CandidateIndex.lowest_of``; a Cohort: the priority of ``subtree_min``) against the priority
    bound that ``collect``'s list for that level uses (``_priority_bound``, with the same
    hierarchical advantage and the same "can it fit without borrowing" answer, both from one
    ``QuotaModel.advantage_level`` call: without own candidates that answer has nothing to
    subtract).  Every check over-approximates the candidates (a lowest priority below the bound may
    still fail ``classify``; a Cohort's bound covers ClusterQueues within quota too), so ``False``
    is exact and ``True`` only means "search".  Cost: O(depth) plus one read per child above quota
    of each Cohort on the path, no allocation per candidate."""
    index = ctx.index
    admitted, hierarchy = ctx.admitted, ctx.hierarchy
    index.refresh(admitted, hierarchy)
    if index.evicting_queues:
        return True
    if ctx.preemption.within_cluster_queue != NEVER:
        lowest = index.lowest_of(ctx.cluster_queue)
        bound = _priority_bound(ctx, True, False, True)
        if lowest is not None and (bound is None or lowest < bound):
            return True
    if ctx.preemption.reclaim_within_cohort == NEVER:
        return False
    floor = index.lowest_priority()
    widest = _priority_bound(ctx, False, True, True)  # the policy's own bound: no level's is wider
    if floor is None or (widest is not None and floor >= widest):
        return False
    # one model call for the path and where the request first fits a subtree's quota: at the
    # preemptor's ClusterQueue it answers "can it fit without borrowing" (a ClusterQueue's subtree
    # quota is its nominal quota: ``can_fit_without_borrowing`` without own candidates), above it
    # the hierarchical advantage of each level (Kueue ``QuantitiesFitInQuota`` folded up the path)
    model = ctx.model
    path, level = model.advantage_level(ctx.cluster_queue, list(ctx.usage.items()))
    if len(path) < 2:
        return False
    without_borrowing = level == 0
    plain = _priority_bound(ctx, False, False, without_borrowing)
    ahead = widest if without_borrowing else _priority_bound(ctx, False, True, False)
    previous: str | None = None
    for i in range(1, len(path)):
        cohort = path[i][1]
        bound = ahead if level < i else plain
        if bound is None or floor < bound:
            for kind, name in model.over_quota_children(cohort, ctx.frs):
                if kind == COHORT:
                    if name == previous:
                        continue
                    low = index.subtree_min(admitted, hierarchy, name)
                    if low and (bound is None or low[0][0] < bound):
                        return True
                elif name != ctx.cluster_queue:
                    lowest = index.lowest_of(name)
                    if lowest is not None and (bound is None or lowest < bound):
                        return True
        previous = cohort
    return False


def is_valid(ctx: PreemptionContext, cand: Candidate, borrow: bool) -> bool:
    """Kueue ``candidateIsValid``: own-ClusterQueue candidates always; with ``borrow`` a candidate that
    may only be reclaimed without borrowing is not; otherwise its ClusterQueue and every Cohort below
    the lowest common ancestor must still be above their quota for a needed flavor-resource (checked
    against the current simulated state)."""
    if cand.cluster_queue == ctx.cluster_queue:
        return True
    if borrow and cand.variant == RECLAIM_WITHOUT_BORROWING:
        return False
    model, frs = ctx.model, ctx.frs
    if model.within_nominal(CLUSTER_QUEUE, cand.cluster_queue, frs):
        return False
    for kind, name in model.path(cand.cluster_queue)[1:]:
        if name == cand.lca:
            break
        if model.within_nominal(kind, name, frs):
            return False
    return True
