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

from typing import TYPE_CHECKING, Final

from statemodel.objects import BorrowWithinCohortPolicy, FlavorResource, PreemptionPolicy
from statemodel.preemption.context import PreemptionContext
from statemodel.preemption.hierarchical import quantities_fit_in_quota, within_nominal
from statemodel.quota.protocol import CLUSTER_QUEUE, COHORT
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


class CandidateList:
    """Kueue ``candidateIterator``: the ordered candidates and the two facts the attempt plan needs.

    Attributes:
        candidates: in search order (see the module docstring).
        no_other_queue: no candidate comes from another ClusterQueue.
        no_hierarchical: the hierarchy list is empty.
    """

    __slots__ = ("candidates", "no_other_queue", "no_hierarchical")

    def __init__(self, candidates: list[Candidate], no_other_queue: bool, no_hierarchical: bool) -> None:
        self.candidates = candidates
        self.no_other_queue = no_other_queue
        self.no_hierarchical = no_hierarchical


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
    flavor-resource, or the policy forbids it), else its variant."""
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


def _from_cluster_queue(ctx: PreemptionContext, cq_name: str, lca: str | None, advantage: bool,
                        out: list[Candidate], without_borrowing: bool = True) -> None:
    """The candidates among ``cq_name``'s admitted workloads; ``without_borrowing=False`` leaves out
    those that may only be reclaimed without the preemptor borrowing (no attempt could use them)."""
    for info in ctx.admitted.get(cq_name, {}).values():
        variant = classify(ctx, info, cq_name, advantage)
        if variant and (without_borrowing or variant != RECLAIM_WITHOUT_BORROWING):
            out.append(Candidate(info, cq_name, lca, variant))


def _collect_in_subtree(ctx: PreemptionContext, cohort: str, subtree_root: str, skip: str | None, advantage: bool,
                        out: list[Candidate], without_borrowing: bool) -> None:
    """Kueue ``collectCandidatesInSubtree``: candidates under ``cohort`` outside the child subtree
    ``skip``, descending only into nodes above their quota for a needed flavor-resource (the model's
    ``over_quota_children``, so the cost follows the nodes that borrow, not the size of the tree)."""
    for kind, name in ctx.model.over_quota_children(cohort, ctx.frs):
        if kind == COHORT:
            if name != skip:
                _collect_in_subtree(ctx, name, subtree_root, skip, advantage, out, without_borrowing)
        elif name != ctx.cluster_queue:
            _from_cluster_queue(ctx, name, subtree_root, advantage, out, without_borrowing)


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


def collect(ctx: PreemptionContext) -> CandidateList:
    """Kueue ``NewCandidateIterator``: every candidate in search order (module docstring), leaving
    out those only an attempt without borrowing could use when no such attempt can succeed
    (:func:`can_fit_without_borrowing`; the search's result is the same).  Cost: the preemptor's own
    admitted workloads plus the admitted workloads of the ClusterQueues above their quota in the
    subtrees visited."""
    same: list[Candidate] = []
    if ctx.preemption.within_cluster_queue != NEVER:
        _from_cluster_queue(ctx, ctx.cluster_queue, None, False, same)
    hier: list[Candidate] = []
    prio: list[Candidate] = []
    path = ctx.model.path(ctx.cluster_queue)
    if len(path) > 1 and ctx.preemption.reclaim_within_cohort != NEVER:
        without_borrowing = can_fit_without_borrowing(ctx, same)
        advantage, remaining = quantities_fit_in_quota(ctx.model, CLUSTER_QUEUE, ctx.cluster_queue, ctx.usage)
        previous: str | None = None
        for _, cohort in path[1:]:
            _collect_in_subtree(ctx, cohort, cohort, previous, advantage, hier if advantage else prio,
                                without_borrowing)
            fits, remaining = quantities_fit_in_quota(ctx.model, COHORT, cohort, remaining)
            advantage = advantage or fits
            previous = cohort
    ordered: list[Candidate] = []
    later: list[Candidate] = []
    for group in (hier, prio, same):
        group.sort(key=lambda c: candidate_key(ctx, c))
        for cand in by_local_queue_usage(ctx, group):
            (ordered if cand.info.evicting else later).append(cand)
    ordered.extend(later)
    return CandidateList(ordered, not hier and not prio, not hier)


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
    if within_nominal(model, CLUSTER_QUEUE, cand.cluster_queue, frs):
        return False
    for kind, name in model.path(cand.cluster_queue)[1:]:
        if name == cand.lca:
            break
        if within_nominal(model, kind, name, frs):
            return False
    return True
