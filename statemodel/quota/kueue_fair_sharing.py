"""Dominant Resource Share of a node of the ``kueue`` model (Kueue ``pkg/cache/scheduler/fair_sharing.go``).

Semantics (reference/kueue.md §3.4):

* A root (no linked parent) has share 0 and does not borrow.
* The node borrows on every flavor-resource of its quota (a ClusterQueue: its ``nominalQuota``
  entries; a Cohort: its subtree quota) where ``usage - subtree > 0``; the amounts are summed per
  resource name across flavors.
* ``lendable(resource)`` = Σ over the flavor-resources of that resource in the **root**'s subtree
  quota of ``potentialAvailable(parent, fr)`` — the parent's view, so a borrowing limit on the
  parent shrinks it.
* ``ratio(resource) = borrowed * 1000 / lendable`` (resources with nothing lendable are skipped);
  the share is the largest ratio, ties to the alphabetically first resource.

Every number is an integer in base units; the ratio is exact, kept as the integer pair
``borrowed * 1000`` over ``lendable`` and compared by cross-multiplication (Kueue divides
float64).  The weight enters only in ``statemodel.quota.protocol.Share``.  Cost: O(flavor-resources
of the node); the parent's lendable (``statemodel.quota.kueue.lendable``) is memoized by the model,
as it changes only with specs and edges, never with usage.
"""

from __future__ import annotations

from statemodel.objects import FlavorResource
from statemodel.quota.protocol import Share


def dominant_resource_share(quotas: dict[FlavorResource, int], usage: dict[FlavorResource, int], weight_milli: int,
                            parent_lendable: dict[str, int]) -> Share:
    """Kueue ``dominantResourceShare(node, nil)`` of a node that has a parent, as a ``Share``.

    Args:
        quotas: the node's subtree quota per flavor-resource (a ClusterQueue: its nominal quota,
            every declared entry, zeros included).
        usage: the node's usage per flavor-resource.
        weight_milli: the node's ``fairSharing.weight`` in thousandths.
        parent_lendable: ``lendable`` of the node's parent per resource name (see the module docstring).
    """
    borrowing: dict[str, int] = {}
    borrowed: list[FlavorResource] = []
    for fr, quota in quotas.items():
        amount = usage.get(fr, 0) - quota
        if amount > 0:
            borrowing[fr[1]] = borrowing.get(fr[1], 0) + amount
            borrowed.append(fr)
    if not borrowing:
        return Share.none(weight_milli)
    best_num, best_den = 0, 1  # the largest ratio so far, compared by cross-multiplication
    dominant = ""
    for resource in sorted(borrowing):
        available = parent_lendable.get(resource, 0)
        if available > 0:
            num = borrowing[resource] * 1000
            if num * best_den > best_num * available:
                best_num, best_den = num, available
                dominant = resource
    borrowed.sort()
    return Share(tuple(borrowed), best_num, best_den, dominant, weight_milli)
