"""Kueue's user-visible reasons (reference/kueue.md §6), one place for all of them.

``QuotaReserved=False`` reasons describe why a workload is pending; eviction reasons describe
why the engine took quota back; preemption reasons say why a victim was chosen.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final


class PendingReason(StrEnum):
    """Reason of ``QuotaReserved=False``: why a workload is pending."""

    PENDING = "Pending"
    PENDING_EVALUATION = "PendingEvaluation"
    WAITING_FOR_QUOTA = "WaitingForQuota"
    EXCEEDS_MAX_QUOTA = "ExceedsMaxQuota"
    NO_MATCHING_FLAVOR = "NoMatchingFlavor"
    MISCONFIGURED = "Misconfigured"
    SUSPENDED = "Suspended"
    WAITING_FOR_PREEMPTED_WORKLOADS = "WaitingForPreemptedWorkloads"
    TOPOLOGY_PLACEMENT_FAILED = "TopologyPlacementFailed"


class PreemptionReason(StrEnum):
    """Reason of a ``Preempted`` decision (Kueue's ``Preempted`` condition reasons,
    ``apis/kueue/v1beta2/workload_types.go``); ``human`` is the phrase Kueue's eviction message uses."""

    IN_CLUSTER_QUEUE = "InClusterQueue"
    IN_COHORT_RECLAMATION = "InCohortReclamation"
    IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"
    IN_COHORT_FAIR_SHARING = "InCohortFairSharing"

    @property
    def human(self) -> str:
        """Kueue ``HumanReadablePreemptionReasons`` (``pkg/scheduler/preemption/preemption.go``)."""
        return _HUMAN[self.value]


_HUMAN = {
    "InClusterQueue": "prioritization in the ClusterQueue",
    "InCohortReclamation": "reclamation within the cohort",
    "InCohortReclaimWhileBorrowing": "reclamation within the cohort while borrowing",
    "InCohortFairSharing": "Fair Sharing within the cohort",
}


class EvictionReason(StrEnum):
    """Reason of an ``Evicted`` decision: why the engine took quota back."""

    CLUSTER_QUEUE_STOPPED = "ClusterQueueStopped"
    LOCAL_QUEUE_STOPPED = "LocalQueueStopped"
    NODE_FAILURES = "NodeFailures"


# The members under short names, as the engine modules import them.
PENDING: Final = PendingReason.PENDING
PENDING_EVALUATION: Final = PendingReason.PENDING_EVALUATION
WAITING_FOR_QUOTA: Final = PendingReason.WAITING_FOR_QUOTA
EXCEEDS_MAX_QUOTA: Final = PendingReason.EXCEEDS_MAX_QUOTA
NO_MATCHING_FLAVOR: Final = PendingReason.NO_MATCHING_FLAVOR
MISCONFIGURED: Final = PendingReason.MISCONFIGURED
SUSPENDED: Final = PendingReason.SUSPENDED
WAITING_FOR_PREEMPTED_WORKLOADS: Final = PendingReason.WAITING_FOR_PREEMPTED_WORKLOADS
TOPOLOGY_PLACEMENT_FAILED: Final = PendingReason.TOPOLOGY_PLACEMENT_FAILED

IN_CLUSTER_QUEUE: Final = PreemptionReason.IN_CLUSTER_QUEUE
IN_COHORT_RECLAMATION: Final = PreemptionReason.IN_COHORT_RECLAMATION
IN_COHORT_RECLAIM_WHILE_BORROWING: Final = PreemptionReason.IN_COHORT_RECLAIM_WHILE_BORROWING
IN_COHORT_FAIR_SHARING: Final = PreemptionReason.IN_COHORT_FAIR_SHARING

CLUSTER_QUEUE_STOPPED: Final = EvictionReason.CLUSTER_QUEUE_STOPPED
LOCAL_QUEUE_STOPPED: Final = EvictionReason.LOCAL_QUEUE_STOPPED
NODE_FAILURES: Final = EvictionReason.NODE_FAILURES

NODE_FAILURES_MESSAGE = "Workload eviction triggered due to multiple TAS assigned node failures, including: {nodes}"
"""Kueue's node-failure eviction message (``pkg/controller/tas``, ``nodeMultipleFailuresEvictionMessageFormat``)."""

SEVERITY = {WAITING_FOR_QUOTA: 1, EXCEEDS_MAX_QUOTA: 2, NO_MATCHING_FLAVOR: 3}
"""``NoFitReason`` ranking: per podSet the least severe flavor wins, across podSets the most severe."""

NO_LONGER_FITS = "Workload no longer fits after processing another workload"
OVERLAPPING_TARGETS = "Workload has overlapping preemption targets with another workload"
