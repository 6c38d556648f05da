"""What one victim search reads (Kueue ``preemptionCtx`` + ``HierarchicalPreemptionCtx``).

The cycle builds a :class:`PreemptionContext` for a head whose flavor assignment needs preemption
(or for one flavor-resource, when the flavor assigner asks whether preemption could make a flavor
fit).  The search only reads it and simulates releases on its quota model, undoing every one of
them before it returns.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING

from statemodel.objects import FlavorResource, Preemption
from statemodel.preemption.candidate_index import CandidateIndex
from statemodel.quota.protocol import QuotaModel

if TYPE_CHECKING:
    from statemodel.hierarchy import Hierarchy
    from statemodel.workload import WorkloadInfo


class PreemptionContext:
    """One preemptor, its ClusterQueue and what it needs.

    Attributes:
        model: the cluster's quota model (read; releases are simulated and undone).
        hierarchy: the Cohort / ClusterQueue tree (child lists for the walks down a subtree).
        admitted: workloads holding quota per ClusterQueue name (``ClusterState.admitted``; evicting
            victims are still in it).
        preemptor: the pending workload.
        cluster_queue: its ClusterQueue's name.  preemption: that ClusterQueue's ``spec.preemption``.
        frs: the flavor-resources whose assigned flavor needs preemption (Kueue
            ``flavorResourcesNeedPreemption``), sorted; a candidate must use one of them.
        usage: the preemptor's whole assignment per ``(flavor, resource)`` in base units — what has
            to fit once the victims are gone.
        local_queue_usage: the admission-fair-sharing usage of an admitted workload's LocalQueue when
            its ClusterQueue is usage based (Kueue ``LocalQueueFSUsage``), else ``None``; ``None`` as a
            whole when admission fair sharing is off (``candidates.by_local_queue_usage``).
        index: each ClusterQueue's admitted workloads in candidate order (``candidate_index``): the
            one given (the cluster state's, kept between searches), else a fresh one.
        wants_height: set by the flavor assigner's oracle, whose context needs one flavor-resource
            (``frs[0]``): a search that finds victims may leave in ``height`` the borrowing height
            of ``usage[frs[0]]`` (``QuotaModel.lowest_fitting_subtree``) read while its victims
            are still released, so ``classical.preemption_mode`` need not release them again.
        height: that height, or ``None`` when the search did not compute it.
    """

    __slots__ = ("model", "hierarchy", "admitted", "preemptor", "cluster_queue", "preemption", "frs", "usage",
                 "local_queue_usage", "index", "_fr_index", "wants_height", "height")

    def __init__(self, model: QuotaModel, hierarchy: "Hierarchy", admitted: "dict[str, dict[str, WorkloadInfo]]",
                 preemptor: "WorkloadInfo", cluster_queue: str, preemption: Preemption,
                 frs: list[FlavorResource], usage: dict[FlavorResource, int],
                 index: CandidateIndex | None = None) -> None:
        self.model = model
        self.hierarchy = hierarchy
        self.admitted = admitted
        self.preemptor = preemptor
        self.cluster_queue = cluster_queue
        self.preemption = preemption
        self.frs = sorted(frs)
        self.usage = usage
        self._fr_index = {fr: True for fr in self.frs}
        self.local_queue_usage: "Callable[[WorkloadInfo], Decimal | None] | None" = None
        self.index = index if index is not None else CandidateIndex()
        self.wants_height = False
        self.height: int | None = None

    def uses_needed(self, info: "WorkloadInfo") -> bool:
        """Kueue ``WorkloadUsesResources``: whether ``info`` holds a non-zero amount of a
        flavor-resource that needs preemption."""
        index = self._fr_index
        for fr, amount in info.charge.items():
            if amount and fr in index:
                return True
        return False
