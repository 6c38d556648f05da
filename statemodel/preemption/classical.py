"""Classical (non-fair-sharing) preemption: Kueue's minimal victim set (``preemption.go``
``classicalPreemptions``, ``fillBackWorkloads``, ``preemption_oracle.go``; reference/kueue.md §4.2).

The search (:func:`find_targets`) runs one or two *attempts*, each allowing the preemptor to borrow
or not once the victims are gone:

* only ``[borrow]`` when no candidate comes from another ClusterQueue, or when
  ``borrowWithinCohort`` is ``Never`` and the preemptor's ClusterQueue is not strictly under its
  nominal quota for every flavor-resource that needs preemption;
* ``[no borrow, borrow]`` when ``borrowWithinCohort`` is ``Never`` and there is no candidate with
  hierarchical advantage;
* ``[borrow, no borrow]`` otherwise.

An attempt releases valid candidates in order (``QuotaModel.simulate_release``) until the whole
assignment fits (an attempt without borrowing that cannot succeed even once every victim of the
preemptor's own ClusterQueue is gone is skipped: same result, none of the work) (every amount within ``available``; without borrowing also within the ClusterQueue's
nominal quota), then *fills back*: walking the removed victims backwards from the one before the
last, each is re-admitted and dropped from the targets if the preemptor still fits.  Every
simulated release is undone before the function returns; the result is Kueue's "minimal-ish" set
(no single victim can be dropped), not an optimum.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from statemodel.objects import FlavorResource
from statemodel.preemption.candidates import (
    Candidate, borrowing_forbidden, can_fit_without_borrowing, collect, is_valid, may_have_candidates,
)
from statemodel.preemption.context import PreemptionContext
from statemodel.preemption.hierarchical import borrowing_with
from statemodel.quota.protocol import CLUSTER_QUEUE
from statemodel.reasons import PreemptionReason

# Kueue ``preemptionMode`` of one flavor, ordered worst to best.
NO_FIT: Final = 0
NO_CANDIDATES: Final = 1
PREEMPT: Final = 2
RECLAIM: Final = 3
FIT: Final = 4


class Target:
    """One victim: the workload, the ClusterQueue it holds quota in, and why it is preempted."""

    __slots__ = ("info", "cluster_queue", "reason")

    def __init__(self, cand: Candidate) -> None:
        self.info = cand.info
        self.cluster_queue = cand.cluster_queue
        self.reason: PreemptionReason = cand.reason


def fits(ctx: PreemptionContext, borrow: bool) -> bool:
    """Kueue ``workloadFits``: every amount of the preemptor's assignment within what its ClusterQueue
    has available (clamped at 0) and, when ``borrow`` is ``False``, within its nominal quota."""
    model, leaf = ctx.model, ctx.cluster_queue
    for fr, amount in ctx.usage.items():
        if not borrow and borrowing_with(model, CLUSTER_QUEUE, leaf, fr, amount):
            return False
        free = model.available(leaf, fr)
        if amount > (free if free > 0 else 0):
            return False
    return True


def under_nominal(ctx: PreemptionContext) -> bool:
    """Kueue ``queueUnderNominalInResourcesNeedingPreemption``: usage strictly below nominal quota for
    every flavor-resource that needs preemption."""
    for fr in ctx.frs:
        nominal, _, usage = ctx.model.quota_numbers(CLUSTER_QUEUE, ctx.cluster_queue, fr)
        if nominal <= usage:
            return False
    return True


def fill_back(ctx: PreemptionContext, removed: list[tuple[Candidate, Callable[[], None]]],
               borrow: bool) -> list[tuple[Candidate, Callable[[], None]]]:
    """Kueue ``fillBackWorkloads``: re-admit victims (all but the last, backwards) the preemptor does
    not need.  Returns the victims still released, in removal order; those put back are charged again."""
    keep = [True] * len(removed)
    undos = [undo for _, undo in removed]
    for i in range(len(removed) - 2, -1, -1):
        undos[i]()
        if fits(ctx, borrow):
            keep[i] = False
        else:
            cand = removed[i][0]
            undos[i] = ctx.model.simulate_release(cand.cluster_queue, cand.info.charge)
    return [(removed[i][0], undos[i]) for i in range(len(removed)) if keep[i]]


def find_targets(ctx: PreemptionContext) -> list[Target]:
    """The victims whose release lets the preemptor's assignment fit (module docstring), in the
    order they were chosen; ``[]`` when no set of valid candidates suffices.  The quota model is
    left exactly as found (simulated releases commute: usage arithmetic is exact).  A search
    without any candidate ends before the lists are built (``candidates.may_have_candidates``)."""
    if not may_have_candidates(ctx):
        return []
    cands = collect(ctx)
    same_queue = cands.same_queue
    forbidden = borrowing_forbidden(ctx)
    if cands.no_other_queue or (forbidden and not under_nominal(ctx)):
        attempts: tuple[bool, ...] = (True,)
    elif forbidden and cands.no_hierarchical:
        attempts = (False, True)
    else:
        attempts = (True, False)
    model = ctx.model
    for borrow in attempts:
        if not borrow and not can_fit_without_borrowing(ctx, same_queue):
            continue
        if borrow != attempts[0]:
            cands = collect(ctx)  # a fresh list on the unsimulated state (candidates.collect)
        removed: list[tuple[Candidate, Callable[[], None]]] = []
        i = 0
        while True:
            cand = cands.get(i)
            if cand is None:
                break
            i += 1
            if not is_valid(ctx, cand, borrow):
                continue
            removed.append((cand, model.simulate_release(cand.cluster_queue, cand.info.charge)))
            if fits(ctx, borrow):
                kept = fill_back(ctx, removed, borrow)
                if ctx.wants_height:  # read with the victims still released (preemption_mode)
                    fr = ctx.frs[0]
                    ctx.height = model.lowest_fitting_subtree(ctx.cluster_queue, fr, ctx.usage[fr])[0]
                for _, undo in reversed(kept):
                    undo()
                return [Target(cand) for cand, _ in kept]
        for _, undo in reversed(removed):
            undo()
    return []


def release_all(ctx: PreemptionContext, targets: list[Target]) -> Callable[[], None]:
    """Simulate the release of every target; the returned function undoes it."""
    undos = [ctx.model.simulate_release(t.cluster_queue, t.info.charge) for t in targets]

    def undo() -> None:
        for u in reversed(undos):
            u()
    return undo


def preemption_mode(ctx: PreemptionContext, fr: FlavorResource, amount: int, targets: list[Target],
                    height: int | None = None) -> tuple[int, int]:
    """Kueue ``PreemptionOracle.SimulatePreemption`` for one flavor-resource (``ctx.frs == [fr]``,
    ``ctx.usage == {fr: amount}``) given the ``targets`` a victim search (classical:
    :func:`find_targets`) found for ``ctx``: ``(mode, borrowing height after the preemptions)`` —
    ``RECLAIM`` when every victim is in another ClusterQueue, ``PREEMPT`` when one is in the
    preemptor's own, ``NO_CANDIDATES`` when there is no victim set, with the height as things are —
    or ``height`` when the caller gives one (it has it, or does not read it).  With victims, the
    height the search left in ``ctx.height`` (read with those victims released,
    ``PreemptionContext.wants_height``) is taken as is; without it the victims are released,
    the height read, and the releases undone."""
    model, leaf = ctx.model, ctx.cluster_queue
    if not targets:
        return NO_CANDIDATES, height if height is not None else model.lowest_fitting_subtree(leaf, fr, amount)[0]
    if ctx.height is not None:
        return _mode(leaf, targets), ctx.height
    undo = release_all(ctx, targets)
    height = model.lowest_fitting_subtree(leaf, fr, amount)[0]
    undo()
    return _mode(leaf, targets), height


def _mode(leaf: str, targets: list[Target]) -> int:
    """``PREEMPT`` when a victim is in the preemptor's ClusterQueue ``leaf``, else ``RECLAIM``."""
    for t in targets:
        if t.cluster_queue == leaf:
            return PREEMPT
    return RECLAIM
