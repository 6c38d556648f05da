"""Pending queues: the per-ClusterQueue queue and its ordering, admission fair sharing (KEP-4136)."""
