"""``hardlimit``: a flat quota model used only by the tests, built on the quota-model seam alone.

Every ClusterQueue has a hard limit per flavor-resource — its ``nominalQuota`` — and nothing else:
no cohorts (Cohort specs and edges are accepted and ignored), no borrowing, no lending.  A request
fits iff ``usage + request <= limit`` for each of its flavor-resources; above the limit itself it
is ``ExceedsMaxQuota``.  Each ClusterQueue is its own pool.  Pending demand is tracked per
ClusterQueue and resource (``pending``), to show that the engine reports it.
"""

from __future__ import annotations

from collections.abc import Callable

from statemodel.objects import FlavorResource, ResourceGroup
from statemodel.quota.protocol import (
    CLUSTER_QUEUE, Entitlement, Fit, FitResult, NoFit, PodSetTotals, PoolKey, Share, Shortfall, WakeRule,
)
from statemodel.reasons import EXCEEDS_MAX_QUOTA, WAITING_FOR_QUOTA

NAME = "hardlimit"


def _rows(mapping: dict[FlavorResource, int]) -> list:
    return [[f, r, v] for (f, r), v in mapping.items()]


def _unrows(rows: list) -> dict[FlavorResource, int]:
    return {(f, r): v for f, r, v in rows}


class HardLimitModel:
    """The ``hardlimit`` model (see the module docstring); implements ``QuotaModel``."""

    name = NAME
    version = 1
    tracks_demand = True

    def __init__(self) -> None:
        self.limits: dict[str, dict[FlavorResource, int]] = {}
        self.usage: dict[str, dict[FlavorResource, int]] = {}
        self.pending: dict[str, dict[str, int]] = {}

    def set_spec(self, kind: str, name: str, resource_groups: tuple[ResourceGroup, ...]) -> None:
        if kind != CLUSTER_QUEUE:
            return
        self.limits[name] = {(f.name, q.name): q.nominal for g in resource_groups for f in g.flavors
                             for q in f.resources}
        self.usage.setdefault(name, {})

    def remove(self, kind: str, name: str) -> None:
        if kind == CLUSTER_QUEUE:
            self.limits.pop(name, None)
            self.usage.pop(name, None)

    def link(self, kind: str, name: str, parent: str) -> None:
        """Cohorts play no part here."""

    def unlink(self, kind: str, name: str) -> None:
        """Cohorts play no part here."""

    def demand(self, leaf: str, request: PodSetTotals, delta: int) -> None:
        pending = self.pending.setdefault(leaf, {})
        for _, _, totals in request:
            for res, amount in totals:
                left = pending.get(res, 0) + delta * amount
                if left:
                    pending[res] = left
                else:
                    pending.pop(res, None)
        if not pending:
            del self.pending[leaf]

    def fit(self, leaf: str, request: list[tuple[FlavorResource, int]]) -> FitResult:
        limits, usage = self.limits[leaf], self.usage[leaf]
        shortfalls = []
        for fr, amount in request:
            limit = limits.get(fr, 0)
            free = max(0, limit - usage.get(fr, 0))
            if amount > limit:
                shortfalls.append(Shortfall(EXCEEDS_MAX_QUOTA, fr[0], fr[1], leaf, amount, limit))
            elif amount > free:
                shortfalls.append(Shortfall(WAITING_FOR_QUOTA, fr[0], fr[1], leaf, amount, free))
        return NoFit(tuple(shortfalls)) if shortfalls else Fit(0)

    def fits(self, leaf: str, usage: dict[FlavorResource, int]) -> bool:
        return all(amount <= self.available(leaf, fr) for fr, amount in usage.items())

    def charge(self, leaf: str, usage: dict[FlavorResource, int]) -> None:
        held = self.usage[leaf]
        for fr, amount in usage.items():
            held[fr] = held.get(fr, 0) + amount

    def release(self, leaf: str, usage: dict[FlavorResource, int]) -> None:
        held = self.usage[leaf]
        for fr, amount in usage.items():
            held[fr] = held.get(fr, 0) - amount

    def simulate_release(self, leaf: str, usage: dict[FlavorResource, int]) -> Callable[[], None]:
        self.release(leaf, usage)
        return lambda: self.charge(leaf, usage)

    def simulate_charge(self, leaf: str, usage: dict[FlavorResource, int]) -> Callable[[], None]:
        self.charge(leaf, usage)
        return lambda: self.release(leaf, usage)

    def share(self, kind: str, name: str, weight_milli: int) -> Share:
        """Nothing is ever borrowed here."""
        return Share.none(weight_milli)

    def in_use(self, leaf: str) -> bool:
        return any(self.usage[leaf].values())

    def available(self, leaf: str, fr: FlavorResource) -> int:
        return self.limits[leaf].get(fr, 0) - self.usage[leaf].get(fr, 0)

    def quota_numbers(self, kind: str, name: str, fr: FlavorResource) -> tuple[int, int, int]:
        if kind != CLUSTER_QUEUE or name not in self.limits:
            return 0, 0, 0
        return self.limits[name].get(fr, 0), 0, self.usage[name].get(fr, 0)

    def lowest_fitting_subtree(self, leaf: str, fr: FlavorResource, amount: int) -> tuple[int, bool]:
        return 0, False

    def over_quota_children(self, cohort: str, frs: list[FlavorResource]) -> list[tuple[str, str]]:
        return []

    def children_version(self, cohort: str) -> tuple[int, int] | None:
        return (0, 0)

    def pool(self, leaf: str) -> PoolKey:
        return (True, leaf)

    def pool_free(self, pool: PoolKey, fr: FlavorResource) -> int:
        return self.available(pool[1], fr) if pool[1] in self.limits else 0

    def wake_rule(self, leaf: str, fr: FlavorResource, needed: int) -> WakeRule:
        return WakeRule((True, leaf), True)

    def path(self, leaf: str) -> list[tuple[str, str]]:
        return [(CLUSTER_QUEUE, leaf)]

    def entitlements(self, kind: str, name: str, frs: list[FlavorResource] | None = None) -> list[Entitlement]:
        if kind != CLUSTER_QUEUE:
            return []
        limits, usage = self.limits[name], self.usage[name]
        keys = sorted(set(limits) | {fr for fr, v in usage.items() if v}) if frs is None else frs
        return [Entitlement(kind, name, fr[0], fr[1], limits.get(fr, 0), None, None, limits.get(fr, 0), 0,
                            usage.get(fr, 0), self.available(name, fr), limits.get(fr, 0)) for fr in keys]

    def advantage_level(self, leaf: str,
                        requests: list[tuple[FlavorResource, int]]) -> tuple[list[tuple[str, str]], int]:
        numbers = [(self.quota_numbers(CLUSTER_QUEUE, leaf, fr), amount) for fr, amount in requests]
        return self.path(leaf), 0 if all(limit >= used + amount for (limit, _, used), amount in numbers) else 1

    def dump(self) -> dict:
        return {"limits": {n: _rows(v) for n, v in self.limits.items()},
                "usage": {n: _rows(v) for n, v in self.usage.items()},
                "pending": self.pending}

    def load(self, doc: dict) -> None:
        self.limits = {n: _unrows(v) for n, v in doc["limits"].items()}
        self.usage = {n: _unrows(v) for n, v in doc["usage"].items()}
        self.pending = {n: dict(v) for n, v in doc["pending"].items()}

    def borrowing_children(self, cohort: str, frs: list[FlavorResource]) -> list[tuple[str, str]]:
        return []
