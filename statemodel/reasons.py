"""Kueue's user-visible reasons (reference/kueue.md §6), one place for all of them.

``QuotaReserved=False`` reasons describe why a workload is pending; eviction reasons describe
why the engine took quota back.
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


class EvictionReason(StrEnum):
    """Reason of an ``Evicted`` decision: why the engine took quota back."""

    CLUSTER_QUEUE_STOPPED = "ClusterQueueStopped"
    LOCAL_QUEUE_STOPPED = "LocalQueueStopped"


# The members under short names, as the engine modules import them.
PENDING: Final = PendingReason.PENDING
PENDING_EVALUATION: Final = PendingReason.PENDING_EVALUATION
WAITING_FOR_QUOTA: Final = PendingReason.WAITING_FOR_QUOTA
EXCEEDS_MAX_QUOTA: Final = PendingReason.EXCEEDS_MAX_QUOTA
NO_MATCHING_FLAVOR: Final = PendingReason.NO_MATCHING_FLAVOR
MISCONFIGURED: Final = PendingReason.MISCONFIGURED
SUSPENDED: Final = PendingReason.SUSPENDED

CLUSTER_QUEUE_STOPPED: Final = EvictionReason.CLUSTER_QUEUE_STOPPED
LOCAL_QUEUE_STOPPED: Final = EvictionReason.LOCAL_QUEUE_STOPPED

SEVERITY = {WAITING_FOR_QUOTA: 1, EXCEEDS_MAX_QUOTA: 2, NO_MATCHING_FLAVOR: 3}
"""``NoFitReason`` ranking: per podSet the least severe flavor wins, across podSets the most severe."""

NO_LONGER_FITS = "Workload no longer fits after processing another workload"
