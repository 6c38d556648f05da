"""Kueue's user-visible reasons (reference/kueue.md §6), one place for all of them.

``QuotaReserved=False`` reasons describe why a workload is pending; eviction reasons describe
why the engine took quota back.
"""

from __future__ import annotations

PENDING = "Pending"
PENDING_EVALUATION = "PendingEvaluation"
WAITING_FOR_QUOTA = "WaitingForQuota"
EXCEEDS_MAX_QUOTA = "ExceedsMaxQuota"
NO_MATCHING_FLAVOR = "NoMatchingFlavor"
MISCONFIGURED = "Misconfigured"
SUSPENDED = "Suspended"

CLUSTER_QUEUE_STOPPED = "ClusterQueueStopped"
LOCAL_QUEUE_STOPPED = "LocalQueueStopped"

SEVERITY = {WAITING_FOR_QUOTA: 1, EXCEEDS_MAX_QUOTA: 2, NO_MATCHING_FLAVOR: 3}
"""``NoFitReason`` ranking: per podSet the least severe flavor wins, across podSets the most severe."""

NO_LONGER_FITS = "Workload no longer fits after processing another workload"
