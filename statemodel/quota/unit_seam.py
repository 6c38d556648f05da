"""The Kueue side of the seam for a model that admits its own units (``UnitModel``): such a cluster
holds no ``ClusterQueue`` quota, so the admission cycle's questions get the answers of a model
without ClusterQueues (nothing charged, nothing available, each ClusterQueue its own pool).

A unit model inherits :class:`NoClusterQueueQuota` instead of repeating these answers.  Pure.
"""

from __future__ import annotations

from collections.abc import Callable

from statemodel.objects import FlavorResource, ResourceGroup
from statemodel.quota.protocol import (
    CLUSTER_QUEUE, Entitlement, FitResult, NoFit, PodSetTotals, PoolKey, Share, Shortfall, WakeRule,
)
from statemodel.reasons import EXCEEDS_MAX_QUOTA


class NoClusterQueueQuota:
    """``QuotaModel`` answers of a model whose cluster holds no ClusterQueue quota."""

    tracks_demand = False

    def set_spec(self, kind: str, name: str, resource_groups: tuple[ResourceGroup, ...]) -> None:
        """Kueue specs are not quota here."""

    def remove(self, kind: str, name: str) -> None:
        """Kueue nodes are not tracked."""

    def link(self, kind: str, name: str, parent: str) -> None:
        """Kueue edges are not tracked."""

    def unlink(self, kind: str, name: str) -> None:
        """Kueue edges are not tracked."""

    def demand(self, leaf: str, request: PodSetTotals, delta: int) -> None:
        """Not called (``tracks_demand`` is false)."""

    def fit(self, leaf: str, request: list[tuple[FlavorResource, int]]) -> FitResult:
        """A ClusterQueue has no quota under this model: ``ExceedsMaxQuota`` with 0 available."""
        return NoFit(tuple(Shortfall(EXCEEDS_MAX_QUOTA, f, r, leaf, amount, 0) for (f, r), amount in request))

    def fits(self, leaf: str, usage: dict[FlavorResource, int]) -> bool:
        """Only an empty usage (no ClusterQueue quota)."""
        return not any(usage.values())

    def charge(self, leaf: str, usage: dict[FlavorResource, int]) -> None:
        """Observed Kueue admissions hold no quota here."""

    def release(self, leaf: str, usage: dict[FlavorResource, int]) -> None:
        """Nothing was charged."""

    def simulate_release(self, leaf: str, usage: dict[FlavorResource, int]) -> Callable[[], None]:
        """Nothing to release; the undo does nothing."""
        return lambda: None

    def simulate_charge(self, leaf: str, usage: dict[FlavorResource, int]) -> Callable[[], None]:
        """Nothing to charge; the undo does nothing."""
        return lambda: None

    def share(self, kind: str, name: str, weight_milli: int) -> Share:
        """No borrowing of ClusterQueue quota: ``Share.none``."""
        return Share.none(weight_milli)

    def share_without(self, kind: str, name: str, weight_milli: int, leaf: str,
                      usage: dict[FlavorResource, int]) -> Share:
        """No borrowing of ClusterQueue quota, released or not: ``Share.none``."""
        return Share.none(weight_milli)

    def share_without_least(self, kind: str, name: str, weight_milli: int,
                            least: dict[FlavorResource, int]) -> Share:
        """No borrowing of ClusterQueue quota: ``Share.none``."""
        return Share.none(weight_milli)

    def in_use(self, leaf: str) -> bool:
        """No ClusterQueue holds usage."""
        return False

    def available(self, leaf: str, fr: FlavorResource) -> int:
        """0: no ClusterQueue quota."""
        return 0

    def quota_numbers(self, kind: str, name: str, fr: FlavorResource) -> tuple[int, int, int]:
        """No quota: ``(0, 0, 0)``."""
        return (0, 0, 0)

    def within_nominal(self, kind: str, name: str, frs: list[FlavorResource]) -> bool:
        """Always (nothing is charged)."""
        return True

    def over_quota_children(self, cohort: str, frs: list[FlavorResource]) -> list[tuple[str, str]]:
        """None (nothing is charged)."""
        return []

    def children_version(self, cohort: str) -> tuple[int, int] | None:
        """Always the same: nothing is ever charged, and a child's share is always ``Share.none``."""
        return (0, 0)

    def lowest_fitting_subtree(self, leaf: str, fr: FlavorResource, amount: int) -> tuple[int, bool]:
        """Nothing fits anywhere: height 0, no advantage."""
        return (0, False)

    def pool(self, leaf: str) -> PoolKey:
        """Each ClusterQueue alone."""
        return (True, leaf)

    def pool_free(self, pool: PoolKey, fr: FlavorResource) -> int:
        """0: no ClusterQueue quota."""
        return 0

    def wake_rule(self, leaf: str, fr: FlavorResource, needed: int) -> WakeRule:
        """Waits on released quota of its own (never any)."""
        return WakeRule((True, leaf), False)

    def path(self, leaf: str) -> list[tuple[str, str]]:
        """Just the ClusterQueue."""
        return [(CLUSTER_QUEUE, leaf)]

    def entitlements(self, kind: str, name: str, frs: list[FlavorResource] | None = None) -> list[Entitlement]:
        """No Kueue rows."""
        return []

    def advantage_level(self, leaf: str,
                        requests: list[tuple[FlavorResource, int]]) -> tuple[list[tuple[str, str]], int]:
        """Just the ClusterQueue, whose quota is 0: level 0 only when nothing is asked, else 1 (none)."""
        return self.path(leaf), 0 if all(amount <= 0 for _, amount in requests) else 1

    def borrowing_children(self, cohort: str, frs: list[FlavorResource]) -> list[tuple[str, str]]:
        """None (nothing is charged)."""
        return []
