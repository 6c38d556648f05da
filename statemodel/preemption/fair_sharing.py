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
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Final

from statemodel.objects import FairSharingPreemptionStrategy, PreemptionPolicy
from statemodel.preemption.candidates import (
    WITHIN_CLUSTER_QUEUE, Candidate, by_local_queue_usage, candidate_key, satisfies_policy,
)
from statemodel.preemption.classical import Target, fill_back, fits
from statemodel.preemption.context import PreemptionContext
from statemodel.preemption.hierarchical import borrowing_with
from statemodel.quota.protocol import CLUSTER_QUEUE, COHORT, Share
from statemodel.reasons import IN_CLUSTER_QUEUE, IN_COHORT_FAIR_SHARING, IN_COHORT_RECLAMATION, PreemptionReason

NEVER: Final = PreemptionPolicy.NEVER
LESS_THAN_OR_EQUAL_TO_FINAL_SHARE: Final = FairSharingPreemptionStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE
LESS_THAN_INITIAL_SHARE: Final = FairSharingPreemptionStrategy.LESS_THAN_INITIAL_SHARE

Node = tuple[str, str]
Weight = Callable[[str, str], int]
"""``(kind, name) -> fairSharing.weight`` in thousandths."""


def _subtree_cluster_queues(ctx: PreemptionContext, root: str) -> list[str]:
    """ClusterQueues linked below Cohort ``root``, by name."""
    out: list[str] = []
    stack = [root]
    cohorts = ctx.hierarchy.cohorts
    while stack:
        entry = cohorts.get(stack.pop())
        if entry is None:
            continue
        out.extend(entry.child_cluster_queues)
        stack.extend(c for c in sorted(entry.child_cohorts) if cohorts[c].linked)
    return sorted(out)


def _borrowing(ctx: PreemptionContext, cq: str) -> bool:
    """Kueue ``cqIsBorrowing``: above nominal quota on a flavor-resource needing preemption."""
    for fr in ctx.frs:
        nominal, _, usage = ctx.model.quota_numbers(CLUSTER_QUEUE, cq, fr)
        if nominal < usage:
            return True
    return False


def collect(ctx: PreemptionContext) -> list[Candidate]:
    """Kueue ``findCandidates`` for fair sharing, in Kueue's candidate order (module docstring)."""
    out: list[Candidate] = []
    policy = ctx.preemption.within_cluster_queue
    if policy != NEVER:
        for info in ctx.admitted.get(ctx.cluster_queue, {}).values():
            if ctx.uses_needed(info) and satisfies_policy(ctx.preemptor, info, policy):
                out.append(Candidate(info, ctx.cluster_queue, None, WITHIN_CLUSTER_QUEUE))
    path = ctx.model.path(ctx.cluster_queue)
    policy = ctx.preemption.reclaim_within_cohort
    if len(path) > 1 and policy != NEVER:
        for cq in _subtree_cluster_queues(ctx, path[-1][1]):
            if cq == ctx.cluster_queue or not _borrowing(ctx, cq):
                continue
            for info in ctx.admitted.get(cq, {}).values():
                if ctx.uses_needed(info) and satisfies_policy(ctx.preemptor, info, policy):
                    out.append(Candidate(info, cq, None, WITHIN_CLUSTER_QUEUE))
    out.sort(key=lambda c: candidate_key(ctx, c))
    return by_local_queue_usage(ctx, out)


class TargetOrdering:
    """Kueue ``TargetClusterQueueOrdering``: which ClusterQueue to take the next victim from.

    ``targets`` holds each ClusterQueue's candidates in order; ``pop`` takes the next one.  The
    tree is read through the quota model's ``path`` and the hierarchy's child lists (linked edges);
    shares through ``QuotaModel.share``, so every simulated release is seen.
    """

    def __init__(self, ctx: PreemptionContext, weight: Weight, candidates: list[Candidate]) -> None:
        self.ctx = ctx
        self.weight = weight
        path = ctx.model.path(ctx.cluster_queue)
        self.path: list[Node] = path
        self.preemptor_path: dict[Node, int] = {node: i for i, node in enumerate(path)}
        self.root: Node = path[-1]
        self.targets: dict[str, list[Candidate]] = {}
        for cand in candidates:
            self.targets.setdefault(cand.cluster_queue, []).append(cand)
        self.pruned: set[Node] = set()

    def share(self, node: Node) -> Share:
        """The node's share now."""
        return self.ctx.model.share(node[0], node[1], self.weight(node[0], node[1]))

    def has_workload(self, cq: str) -> bool:
        """Whether ``cq`` has a candidate left."""
        return bool(self.targets.get(cq))

    def pop(self, cq: str) -> Candidate:
        """Take ``cq``'s next candidate."""
        return self.targets[cq].pop(0)

    def drop(self, cq: str) -> None:
        """Kueue ``DropQueue``: take no more victims from ``cq``."""
        self.pruned.add((CLUSTER_QUEUE, cq))

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
        entry = self.ctx.hierarchy.cohorts[cohort]
        own = self.ctx.cluster_queue
        best_cq: str | None = None
        best_cq_key: tuple | None = None
        for cq in sorted(entry.child_cluster_queues):
            node = (CLUSTER_QUEUE, cq)
            if node in self.pruned:
                continue
            share = self.share(node)
            if (not share.borrowed and cq != own) or not self.has_workload(cq):
                self.pruned.add(node)
                continue
            key = share.key()
            if best_cq is None or best_cq_key is None or key > best_cq_key:
                best_cq, best_cq_key = cq, key
            elif key == best_cq_key and (candidate_key(self.ctx, self.targets[cq][0])
                                         < candidate_key(self.ctx, self.targets[best_cq][0])):
                best_cq = cq
        best_cohort: str | None = None
        best_cohort_key: tuple | None = None
        for child in sorted(entry.child_cohorts):
            node = (COHORT, child)
            if node in self.pruned or not self.ctx.hierarchy.cohorts[child].linked:
                continue
            share = self.share(node)
            if not share.borrowed and node not in self.preemptor_path:
                self.pruned.add(node)
                continue
            key = share.key()
            if best_cohort_key is None or key > best_cohort_key:
                best_cohort, best_cohort_key = child, key
        if best_cq is None and best_cohort is None:
            self.pruned.add((COHORT, cohort))
            return None
        if best_cohort is not None and (best_cq_key is None or (best_cohort_key is not None
                                                                 and best_cohort_key >= best_cq_key)):
            return self._next(best_cohort)
        return best_cq

    def almost_lcas(self, target_cq: str) -> tuple[Node, Node]:
        """Kueue ``getAlmostLCAs``: the preemptor's and the target's node just below their lowest
        common Cohort."""
        target_path = self.ctx.model.path(target_cq)
        for i, node in enumerate(target_path):
            at = self.preemptor_path.get(node)
            if at is not None and i > 0:
                return self.path[at - 1], target_path[i - 1]
        raise AssertionError("the target shares no Cohort with the preemptor")


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
        return preemptor_new.key() <= target_new.key()
    return preemptor_new.key() < target_old.key()


Removed = list[tuple[Candidate, Callable[[], None]]]


def _remove(ctx: PreemptionContext, cand: Candidate, reason: PreemptionReason, removed: Removed) -> None:
    """Preempt ``cand`` in the simulation, for ``reason``."""
    cand.reason = reason
    removed.append((cand, ctx.model.simulate_release(cand.cluster_queue, cand.info.charge)))


def _within_nominal(ctx: PreemptionContext) -> bool:
    """Kueue ``queueWithinNominalInResourcesNeedingPreemption`` (request already charged)."""
    for fr in ctx.frs:
        if borrowing_with(ctx.model, CLUSTER_QUEUE, ctx.cluster_queue, fr, 0):
            return False
    return True


def _first_strategy(ctx: PreemptionContext, weight: Weight, candidates: list[Candidate],
                    strategy: FairSharingPreemptionStrategy, removed: Removed) -> tuple[bool, list[Candidate]]:
    """Kueue ``runFirstFsStrategy``: ``(fits, retry candidates)``."""
    ordering = TargetOrdering(ctx, weight, candidates)
    retry: list[Candidate] = []
    within_nominal = _within_nominal(ctx)
    model = ctx.model
    for cq in ordering:
        if cq == ctx.cluster_queue:
            _remove(ctx, ordering.pop(cq), IN_CLUSTER_QUEUE, removed)
            if _fits(ctx):
                return True, []
            continue
        if within_nominal:
            _remove(ctx, ordering.pop(cq), IN_COHORT_RECLAMATION, removed)
            if _fits(ctx):
                return True, []
            continue
        mine, theirs = ordering.almost_lcas(cq)
        preemptor_new, target_old = ordering.share(mine), ordering.share(theirs)
        if preemptor_new.zero_weight_borrows() and not target_old.zero_weight_borrows():
            while ordering.has_workload(cq):
                retry.append(ordering.pop(cq))
            continue
        while ordering.has_workload(cq):
            cand = ordering.pop(cq)
            target_new: Share | None = None
            if strategy == LESS_THAN_OR_EQUAL_TO_FINAL_SHARE:
                undo = model.simulate_release(cq, cand.info.charge)
                target_new = ordering.share(theirs)
                undo()
            if _strategy_passes(strategy, preemptor_new, target_old, target_new):
                _remove(ctx, cand, IN_COHORT_FAIR_SHARING, removed)
                if _fits(ctx):
                    return True, []
                break  # shares changed: choose the target again
            retry.append(cand)
    return False, retry


def _second_strategy(ctx: PreemptionContext, weight: Weight, retry: list[Candidate], removed: Removed) -> bool:
    """Kueue ``runSecondFsStrategy`` (rule S2-b, ``LessThanInitialShare``, once per ClusterQueue)."""
    ordering = TargetOrdering(ctx, weight, sorted(retry, key=lambda c: candidate_key(ctx, c)))
    for cq in ordering:
        mine, theirs = ordering.almost_lcas(cq)
        passed = _strategy_passes(LESS_THAN_INITIAL_SHARE, ordering.share(mine), ordering.share(theirs), None)
        cand = ordering.pop(cq)
        if passed:
            _remove(ctx, cand, IN_COHORT_FAIR_SHARING, removed)
            if _fits(ctx):
                return True
        ordering.drop(cq)
    return False


def find_targets(ctx: PreemptionContext, strategies: tuple[FairSharingPreemptionStrategy, ...],
                 weight: Weight) -> list[Target]:
    """The victims of fair-sharing preemption for the context's preemptor (module docstring), in the
    order chosen; ``[]`` when the strategies cannot make it fit.  ``strategies``: the configured
    ``preemptionStrategies`` (non-empty).  The quota model is left exactly as found."""
    candidates = collect(ctx)
    if not candidates:
        return []
    model = ctx.model
    undo_request = model.simulate_charge(ctx.cluster_queue, ctx.usage)
    removed: Removed = []
    ok, retry = _first_strategy(ctx, weight, candidates, strategies[0], removed)
    if not ok and len(strategies) > 1:
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
