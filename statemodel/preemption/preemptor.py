"""The scheduler's side of preemption (Kueue ``scheduler.go`` + ``preemption.go`` ``GetTargets``,
``IssuePreemptions``, ``preemptionMessage``; ``flavorassigner.go`` ``fitsResourceQuota``): when a
ClusterQueue may look for victims at all, the flavor assigner's oracle, the context of a whole
assignment's search, and the texts of a ``Preempted`` decision.

The victim search itself is pluggable (``Search``): classical preemption
(``statemodel.preemption.classical.find_targets``) by default; a fair-sharing search has the same
shape.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from statemodel.objects import BorrowWithinCohortPolicy, ClusterQueue, FlavorResource, PreemptionPolicy
from statemodel.preemption.candidate_index import CandidateIndex
from statemodel.preemption.classical import NO_FIT, Target, find_targets, preemption_mode
from statemodel.preemption.context import PreemptionContext
from statemodel.quantity import format_quantity
from statemodel.quota.protocol import CLUSTER_QUEUE, QuotaModel

if TYPE_CHECKING:
    from statemodel.hierarchy import Hierarchy
    from statemodel.workload import WorkloadInfo

NEVER: Final = PreemptionPolicy.NEVER
BORROW_NEVER: Final = BorrowWithinCohortPolicy.NEVER

Search = Callable[[PreemptionContext], list[Target]]
"""A victim search: the targets whose release lets the context's preemptor fit, ``[]`` if none."""


def may_preempt(spec: ClusterQueue) -> bool:
    """Whether a ClusterQueue's ``spec.preemption`` allows any preemption (``withinClusterQueue`` or
    ``reclaimWithinCohort`` not ``Never``); when not, the flavor assigner never asks the oracle and
    the cycle behaves exactly as without preemption."""
    p = spec.preemption
    return p.within_cluster_queue != NEVER or p.reclaim_within_cohort != NEVER


def can_preempt_while_borrowing(spec: ClusterQueue, fair_sharing: bool) -> bool:
    """Kueue ``canPreemptWhileBorrowing``: ``borrowWithinCohort.policy`` is not ``Never``, or fair
    sharing is on and ``reclaimWithinCohort`` is not ``Never``."""
    p = spec.preemption
    return p.borrow_within_cohort_policy != BORROW_NEVER or (fair_sharing and p.reclaim_within_cohort != NEVER)


class PreemptionOracle:
    """The flavor assigner's oracle for one head (Kueue ``fitsResourceQuota`` + ``SimulatePreemption``).

    Called with ``(fr, amount)`` that does not fit now: runs the victim search for that
    flavor-resource alone when the amount is within the ClusterQueue's nominal quota, or it fits in a
    subtree below the root (hierarchical advantage), or the ClusterQueue may preempt while
    borrowing; otherwise ``NO_FIT``.  Returns ``(mode, borrowing height after the preemptions)``
    (``statemodel.preemption.classical``); with ``NO_FIT`` or ``NO_CANDIDATES`` the height is 0 (the
    flavor assigner reads the height only of a flavor it may preempt in, so it is not computed).
    ``searched`` keeps each search's targets by
    ``(fr, amount)``: while the state is the one the oracle saw (nothing admitted, reserved or
    preempted since), the head's own search for an assignment that needs exactly that amount of
    that flavor-resource alone has the same answer (:meth:`targets_for`).
    """

    def __init__(self, model: QuotaModel, hierarchy: "Hierarchy", admitted: "dict[str, dict[str, WorkloadInfo]]",
                 preemptor: "WorkloadInfo", spec: ClusterQueue, fair_sharing: bool, search: Search,
                 index: CandidateIndex | None = None) -> None:
        self.model = model
        self.hierarchy = hierarchy
        self.admitted = admitted
        self.preemptor = preemptor
        self.spec = spec
        self.while_borrowing = can_preempt_while_borrowing(spec, fair_sharing)
        self.search = search
        self.index = index
        self.searched: dict[tuple[FlavorResource, int], list[Target]] = {}

    def __call__(self, fr: FlavorResource, amount: int) -> tuple[int, int]:
        model, leaf = self.model, self.spec.name
        # the policy first: when it allows preempting while borrowing, the quota is not read
        if not (self.while_borrowing or model.quota_numbers(CLUSTER_QUEUE, leaf, fr)[0] >= amount
                or model.lowest_fitting_subtree(leaf, fr, amount)[1]):
            return NO_FIT, 0
        ctx = PreemptionContext(model, self.hierarchy, self.admitted, self.preemptor, leaf, self.spec.preemption,
                                [fr], {fr: amount}, self.index)
        ctx.wants_height = True
        targets = self.searched[(fr, amount)] = self.search(ctx)
        return preemption_mode(ctx, fr, amount, targets, 0)

    def targets_for(self, frs: list[FlavorResource], usage: dict[FlavorResource, int]) -> list[Target] | None:
        """The remembered targets of a search whose context needs ``usage`` with only ``frs`` needing
        preemption, when the oracle ran exactly that search; ``None`` otherwise."""
        if len(frs) != 1 or len(usage) != 1:
            return None
        fr = frs[0]
        amount = usage.get(fr)
        return None if amount is None else self.searched.get((fr, amount))


def make_oracle(model: QuotaModel, hierarchy: "Hierarchy", admitted: "dict[str, dict[str, WorkloadInfo]]",
                preemptor: "WorkloadInfo", spec: ClusterQueue, fair_sharing: bool = False,
                search: Search = find_targets, index: CandidateIndex | None = None) -> PreemptionOracle:
    """The flavor assigner's oracle for ``preemptor`` in ClusterQueue ``spec`` (:class:`PreemptionOracle`);
    its searches read ``index`` (the cluster state's candidate index) when given."""
    return PreemptionOracle(model, hierarchy, admitted, preemptor, spec, fair_sharing, search, index)


def cluster_queue_path(model: QuotaModel, leaf: str) -> str:
    """Kueue ``buildCQPath``: ``/root/.../cohort/clusterQueue``."""
    return "/" + "/".join(name for _, name in reversed(model.path(leaf)))


def shortage(ctx: PreemptionContext) -> str:
    """The numbers that made the preemption necessary: per flavor-resource needing preemption, what
    the preemptor's assignment asks and what its ClusterQueue had available (before the victims)."""
    parts = []
    for fr in ctx.frs:
        free = ctx.model.available(ctx.cluster_queue, fr)
        flavor, res = fr
        parts.append(f"{res} in flavor {flavor}: requested {format_quantity(res, ctx.usage.get(fr, 0))}, "
                     f"available {format_quantity(res, free if free > 0 else 0)}")
    return "preemptor needs " + "; ".join(parts)


def preemption_message(model: QuotaModel, preemptor: "WorkloadInfo", preemptor_cq: str, target: Target,
                       numbers: str) -> str:
    """Kueue ``preemptionMessage`` (without the JobUID: events carry no job labels) followed by the
    numbers (``shortage``)."""
    return (f"Preempted to accommodate a workload (UID: {preemptor.obj.uid}) due to {target.reason.human}; "
            f"preemptor path: {cluster_queue_path(model, preemptor_cq)}; "
            f"preemptee path: {cluster_queue_path(model, target.cluster_queue)}; {numbers}")
