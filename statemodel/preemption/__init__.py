"""Kueue preemption (``pkg/scheduler/preemption/``): who is evicted so that a pending workload fits.

``context`` holds what one victim search reads; ``hierarchical`` the tree arithmetic of KEP-79
cohorts the search asks (within nominal, fit in a subtree's quota); ``candidates`` collects and
orders the workloads the preemptor's ClusterQueue policy allows it to preempt; ``classical`` finds
Kueue's minimal victim set and answers the flavor assigner's "could preemption make this flavor
fit?".  Everything reaches quota through ``statemodel.quota.protocol.QuotaModel`` and simulates
releases with its undo-able what-if.
"""
