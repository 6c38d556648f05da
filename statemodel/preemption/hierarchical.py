"""Tree arithmetic the preemption search asks of the cohort tree (Kueue
``pkg/cache/scheduler`` helpers used by ``classical/hierarchical_preemption.go``; reference/kueue.md
§1.5-1.6, §4.2), through ``QuotaModel.quota_numbers`` so it sees every simulated release.

Nodes are ``(kind, name)`` as in ``statemodel.quota.protocol``; quantities are integers in base units.
"""

from __future__ import annotations

from statemodel.objects import FlavorResource
from statemodel.quota.protocol import QuotaModel


def borrowing_with(model: QuotaModel, kind: str, name: str, fr: FlavorResource, amount: int) -> bool:
    """Kueue ``BorrowingWith``: whether ``amount`` more of ``fr`` would take the node past its
    subtree quota (a ClusterQueue: past its nominal quota)."""
    subtree, _, usage = model.quota_numbers(kind, name, fr)
    return subtree < usage + amount
