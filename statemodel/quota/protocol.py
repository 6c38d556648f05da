"""The quota-model seam: what the admission cycle, the hierarchy and the views ask of a cluster's
quota arithmetic, whichever model (``statemodel.quota.registry``) the cluster runs.

One model instance holds the numbers of one cluster.  Its nodes are named by ``(kind, name)``
with ``kind`` ``"ClusterQueue"`` (a leaf: workloads are queued at and charged to it) or
``"Cohort"`` (an inner node).  The hierarchy (``statemodel.hierarchy``) owns the edges and tells
the model which edges are linked; the model owns every number.  Quantities are integers in base
units (millicores for cpu, bytes for memory, counts otherwise), keyed by ``(flavor, resource)``.

Kueue's split is the template (reference/kueue.md §1.3-1.6): ``pkg/cache/hierarchy`` keeps the
tree, ``resource_node.go`` the arithmetic; a fit inside the scheduler is asked per flavor; a
what-if mutates usage and hands back an undo (its "simulate usage removal, then revert").

Results and rows are frozen records; a fit is one of :class:`Fit`, :class:`FitIfPreempting`
(fits once the caller preempts enough — it picks the victims) or :class:`NoFit`, each with the
shortfalls as data (:class:`Shortfall`).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Final, Protocol

from statemodel.objects import FlavorResource, ResourceGroup
from statemodel.placement.pods import PodPlacement
from statemodel.reasons import PendingReason

CLUSTER_QUEUE = "ClusterQueue"
"""Node kind of a leaf (workloads are queued at and charged to it)."""
COHORT = "Cohort"
"""Node kind of an inner node."""

PoolKey = tuple[bool, str]
"""An independent pool of quota (Kueue: a cohort tree), as ``(root is a ClusterQueue, root name)``;
totally ordered, so pools are visited in a stable order."""

PodSetTotals = list[tuple[str, int, tuple[tuple[str, int], ...]]]
"""A workload's request: per podSet ``(name, count, ((resource, total over the pods), ...))``."""


class _Record:
    """Base of the seam's records: immutable after construction (attributes are ``Final``; mypy and
    mypyc reject assignments), compared and hashed by value, shown with their fields."""

    def fields(self) -> tuple[object, ...]:
        """The field values in declaration order."""
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and isinstance(other, _Record) and other.fields() == self.fields()

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(self.fields())

    def __repr__(self) -> str:
        return f"{type(self).__name__}{self.fields()!r}"


class Shortfall(_Record):
    """Why a request does not fit (now) at one node, for one flavor-resource.

    Attributes:
        reason: ``ExceedsMaxQuota`` (never fits without a configuration change) or
            ``WaitingForQuota`` (fits once enough is released) — ``statemodel.reasons``.
        flavor / resource: the flavor-resource short.
        node: name of the node whose limit binds (Kueue: the ClusterQueue asked).
        needed: the amount asked, including what earlier podSets of the workload took.
        available: what the node offers: the maximum capacity for ``ExceedsMaxQuota``, the free
            quota (clamped at 0) for ``WaitingForQuota``.
    """

    def __init__(self, reason: PendingReason, flavor: str, resource: str, node: str, needed: int,
                 available: int) -> None:
        self.reason: Final = reason
        self.flavor: Final = flavor
        self.resource: Final = resource
        self.node: Final = node
        self.needed: Final = needed
        self.available: Final = available

    def fields(self) -> tuple[object, ...]:
        return (self.reason, self.flavor, self.resource, self.node, self.needed, self.available)


class Fit(_Record):
    """The request fits now.  ``borrowing``: how high above the leaf it reaches (Kueue's borrowing
    height: 0 = within the leaf's own quota); the cycle admits lower heights first."""

    def __init__(self, borrowing: int) -> None:
        self.borrowing: Final = borrowing

    def fields(self) -> tuple[object, ...]:
        return (self.borrowing,)


class FitIfPreempting(_Record):
    """The request fits once usage is taken back from admitted workloads; the caller chooses the
    victims (with ``QuotaModel.simulate_release``).  ``shortfalls``: what is missing now (reason
    ``WaitingForQuota``: every amount is within the maximum capacity, some above what is free).
    ``borrowing``: the largest borrowing height of the amounts that fit now."""

    def __init__(self, borrowing: int, shortfalls: tuple[Shortfall, ...]) -> None:
        self.borrowing: Final = borrowing
        self.shortfalls: Final = shortfalls

    def fields(self) -> tuple[object, ...]:
        return (self.borrowing, self.shortfalls)


class NoFit(_Record):
    """The request does not fit; ``shortfalls`` in request order (never empty)."""

    def __init__(self, shortfalls: tuple[Shortfall, ...]) -> None:
        self.shortfalls: Final = shortfalls

    def fields(self) -> tuple[object, ...]:
        return (self.shortfalls,)


FitResult = Fit | FitIfPreempting | NoFit


class Entitlement(_Record):
    """One row of what a node is entitled to, for one flavor-resource (views, projections, explain).

    Attributes:
        kind / name: the node.  flavor / resource: the flavor-resource.
        nominal: the node's own quota.  borrowing_limit / lending_limit: ``None`` = no limit.
        subtree_quota: the quota of the node and what its children make visible to it.
        local_quota: the part of the subtree its parent never sees (kept for the node itself).
        usage: charged usage (a Cohort: what spills into it from below).
        available: what the node could take now (may be negative when over-admitted).
        potential_available: the most it could ever hold (usage ignored).
    """

    def __init__(self, kind: str, name: str, flavor: str, resource: str, nominal: int, borrowing_limit: int | None,
                 lending_limit: int | None, subtree_quota: int, local_quota: int, usage: int, available: int,
                 potential_available: int) -> None:
        self.kind: Final = kind
        self.name: Final = name
        self.flavor: Final = flavor
        self.resource: Final = resource
        self.nominal: Final = nominal
        self.borrowing_limit: Final = borrowing_limit
        self.lending_limit: Final = lending_limit
        self.subtree_quota: Final = subtree_quota
        self.local_quota: Final = local_quota
        self.usage: Final = usage
        self.available: Final = available
        self.potential_available: Final = potential_available

    def fields(self) -> tuple[object, ...]:
        return (self.kind, self.name, self.flavor, self.resource, self.nominal, self.borrowing_limit,
                self.lending_limit, self.subtree_quota, self.local_quota, self.usage, self.available,
                self.potential_available)


class WakeRule(_Record):
    """How a ``WaitingForQuota`` shortfall can become satisfiable (used by ``admission.cycle.WakeIndex``).

    Attributes:
        pool: the pool releases in which may help.
        at_pool_free: ``True`` — it fits exactly when ``pool_free(pool, fr)`` reaches the amount
            needed (nothing else on the path binds); ``False`` — it can fit only after at least the
            deficit (needed − available) has been released in the pool.
    """

    def __init__(self, pool: PoolKey, at_pool_free: bool) -> None:
        self.pool: Final = pool
        self.at_pool_free: Final = at_pool_free

    def fields(self) -> tuple[object, ...]:
        return (self.pool, self.at_pool_free)


MAX_WEIGHTED_SHARE: Final = 9223372036854775807
"""``weightedShare`` of a zero-weight node that borrows (Kueue: ``math.MaxInt64``)."""

class ShareOrder:
    """An exact total-order key of a :class:`Share` (Kueue ``CompareDRS``), in integers: the pair
    ``(rank, numerator / denominator)`` compared lexicographically, the rational by
    cross-multiplication (``denominator > 0``), so no ``Fraction`` is built or compared.  It orders
    exactly as :meth:`Share.key`; :meth:`negated` reverses the order (for a min-heap of the highest).

    Attributes:
        rank: 1 for a zero-weight borrower (above everything else), 0 otherwise (-1, 0 when negated).
        numerator / denominator: the compared value — the weighted share ``ratio / weight`` (rank 0)
            or the unweighted ``ratio`` (rank 1) — not reduced; ``denominator > 0``.
    """

    __slots__ = ("rank", "numerator", "denominator")

    def __init__(self, rank: int, numerator: int, denominator: int) -> None:
        self.rank: Final = rank
        self.numerator: Final = numerator
        self.denominator: Final = denominator

    # Order: by rank, then by numerator / denominator compared by cross-multiplication; each
    # operator is written out (a heap or a tuple key compares these by the hundred thousand per pass).

    def __lt__(self, other: "ShareOrder") -> bool:
        if self.rank != other.rank:
            return self.rank < other.rank
        return self.numerator * other.denominator < other.numerator * self.denominator

    def __le__(self, other: "ShareOrder") -> bool:
        if self.rank != other.rank:
            return self.rank < other.rank
        return self.numerator * other.denominator <= other.numerator * self.denominator

    def __gt__(self, other: "ShareOrder") -> bool:
        if self.rank != other.rank:
            return self.rank > other.rank
        return self.numerator * other.denominator > other.numerator * self.denominator

    def __ge__(self, other: "ShareOrder") -> bool:
        if self.rank != other.rank:
            return self.rank > other.rank
        return self.numerator * other.denominator >= other.numerator * self.denominator

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ShareOrder):
            return False
        return self.rank == other.rank and self.numerator * other.denominator == other.numerator * self.denominator

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        value = Fraction(self.numerator, self.denominator)
        return hash((self.rank, value))

    def __repr__(self) -> str:
        return f"ShareOrder({self.rank}, {self.numerator}/{self.denominator})"

    def negated(self) -> "ShareOrder":
        """The key that sorts in the opposite order."""
        return ShareOrder(-self.rank, -self.numerator, self.denominator)


class Share(_Record):
    """A node's Dominant Resource Share (Kueue ``DRS``, ``pkg/cache/scheduler/fair_sharing.go``).

    Attributes:
        borrowed: the ``(flavor, resource)`` pairs on which the node's usage exceeds its quota,
            sorted (empty: not borrowing).
        numerator / denominator: the unweighted share ``ratio``, exact and not reduced
            (``denominator > 0``): the largest over resources of
            ``borrowed(resource) * 1000 / lendable(resource)`` (0 when not borrowing, or when nothing
            of the borrowed resources is lendable).
        resource: the resource that gave ``ratio`` (alphabetically first on ties; ``""`` when 0).
        weight_milli: the node's ``fairSharing.weight`` in thousandths (0 allowed).

    Comparison is Kueue's ``CompareDRS``, as the total-order keys :meth:`key` (exact rationals) and
    :meth:`order` (the same order in integers, for the hot paths): two zero-weight borrowers compare
    by ``ratio``; a zero-weight borrower is above everything else; the others compare by the
    weighted share ``ratio / weight``.  Exact rationals replace Kueue's float64.
    """

    def __init__(self, borrowed: tuple[FlavorResource, ...], numerator: int, denominator: int, resource: str,
                 weight_milli: int) -> None:
        self.borrowed: Final = borrowed
        self.numerator: Final = numerator
        self.denominator: Final = denominator
        self.resource: Final = resource
        self.weight_milli: Final = weight_milli
        self._order: ShareOrder | None = None  # :meth:`order`, derived once

    @property
    def ratio(self) -> Fraction:
        """The unweighted share as an exact rational."""
        return Fraction(self.numerator, self.denominator)

    def fields(self) -> tuple[object, ...]:
        return (self.borrowed, self.ratio, self.resource, self.weight_milli)

    @staticmethod
    def none(weight_milli: int) -> "Share":
        """The share of a node that borrows nothing (a root, or within its quota)."""
        return Share((), 0, 1, "", weight_milli)

    def borrowing_on(self, usage: dict[FlavorResource, int]) -> bool:
        """Kueue ``IsBorrowingOn``: whether the node borrows on a flavor-resource ``usage`` asks for."""
        for fr in self.borrowed:
            if usage.get(fr, 0) > 0:
                return True
        return False

    def zero_weight_borrows(self) -> bool:
        """Weight 0 and a non-zero share (Kueue ``zeroWeightBorrows``)."""
        return self.weight_milli == 0 and self.numerator != 0

    def precise(self) -> Fraction:
        """``ratio / weight`` exactly (Kueue ``PreciseWeightedShare``); for a zero-weight borrower,
        whose share is +∞, use :meth:`key` or :meth:`weighted_share` instead (this returns ``ratio``)."""
        if self.numerator == 0 or self.weight_milli == 0:
            return self.ratio
        return Fraction(self.numerator * 1000, self.denominator * self.weight_milli)

    def key(self) -> tuple[int, Fraction]:
        """Total-order key of Kueue's ``CompareDRS`` (lower is preferred for admission, higher for
        preemption), in exact rationals; :meth:`order` orders the same way without them."""
        return (1, self.ratio) if self.zero_weight_borrows() else (0, self.precise())

    def order(self) -> ShareOrder:
        """:meth:`key` as a :class:`ShareOrder` (same order, integer arithmetic); computed on the first
        call, a function of the fields."""
        got = self._order
        if got is None:
            if self.zero_weight_borrows():
                got = ShareOrder(1, self.numerator, self.denominator)
            elif self.numerator == 0 or self.weight_milli == 0:
                got = ShareOrder(0, self.numerator, self.denominator)
            else:
                got = ShareOrder(0, self.numerator * 1000, self.denominator * self.weight_milli)
            self._order = got
        return got

    def weighted_share(self) -> int:
        """Kueue's ``status.fairSharing.weightedShare``: ``ceil(ratio / weight)``, or
        ``MAX_WEIGHTED_SHARE`` for a zero-weight borrower (``roundedWeightedShare``)."""
        if self.zero_weight_borrows():
            return MAX_WEIGHTED_SHARE
        if self.numerator == 0 or self.weight_milli == 0:
            return -((-self.numerator) // self.denominator)
        return -((-self.numerator * 1000) // (self.denominator * self.weight_milli))


class QuotaModel(Protocol):
    """What a quota model implements; one instance per cluster.

    Nodes spring into existence on first reference (``set_spec`` or ``link``); ``remove`` forgets a
    node that has no spec, no children, no link and no usage.  Every method is deterministic and
    does no I/O.  Errors: calls about a leaf the model never heard of raise ``KeyError`` (the
    engine only asks about ClusterQueues in the hierarchy).
    """

    name: str
    """The registry name (``EngineConfig.spec.quotaModel``)."""
    version: int
    """Version of the ``dump`` document; bumped when its shape or meaning changes."""
    tracks_demand: bool
    """Whether the model reads pending demand; when ``False`` the engine does not call ``demand``."""

    def set_spec(self, kind: str, name: str, resource_groups: tuple[ResourceGroup, ...]) -> None:
        """Replace the node's quotas (``()`` = none: the object was deleted or is implicit)."""

    def remove(self, kind: str, name: str) -> None:
        """Forget a node the hierarchy dropped (unlinked, without spec, children or usage)."""

    def link(self, kind: str, name: str, parent: str) -> None:
        """Link node ``(kind, name)`` under Cohort ``parent`` (the hierarchy guarantees no loop)."""

    def unlink(self, kind: str, name: str) -> None:
        """Undo ``link`` (no-op when not linked)."""

    def demand(self, leaf: str, request: PodSetTotals, delta: int) -> None:
        """A pending request entered (``delta`` = 1) or left (``-1``) the queue of ClusterQueue ``leaf``
        (for models whose entitlements depend on demand; called only when ``tracks_demand``)."""

    def fit(self, leaf: str, request: list[tuple[FlavorResource, int]]) -> FitResult:
        """Whether ``request`` — one flavor's ``((flavor, resource), amount)`` for one podSet, amounts
        including what earlier podSets of the workload took in that flavor — fits at ``leaf`` now."""

    def fits(self, leaf: str, usage: dict[FlavorResource, int]) -> bool:
        """Whether a whole assignment's ``usage`` still fits at ``leaf`` (the re-check after earlier
        admissions of the same cycle)."""

    def charge(self, leaf: str, usage: dict[FlavorResource, int]) -> None:
        """Add admitted ``usage`` to ``leaf`` (over quota is allowed: observed admissions)."""

    def release(self, leaf: str, usage: dict[FlavorResource, int]) -> None:
        """Take back ``usage`` charged to ``leaf``."""

    def simulate_release(self, leaf: str, usage: dict[FlavorResource, int]) -> Callable[[], None]:
        """Release ``usage`` at ``leaf`` for a what-if; call the returned function to restore the
        exact state before (undo in reverse order when nesting)."""

    def simulate_charge(self, leaf: str, usage: dict[FlavorResource, int]) -> Callable[[], None]:
        """Charge ``usage`` at ``leaf`` for a what-if (Kueue ``SimulateUsageAddition``); call the returned
        function to restore the exact state before."""

    def share(self, kind: str, name: str, weight_milli: int) -> Share:
        """The Dominant Resource Share of node ``(kind, name)`` now, with fairSharing weight
        ``weight_milli`` (thousandths); a model without borrowing answers ``Share.none``.  Used by the
        fair-sharing ordering of the cycle, fair-sharing preemption and the views."""

    def share_without(self, kind: str, name: str, weight_milli: int, leaf: str,
                      usage: dict[FlavorResource, int]) -> Share:
        """The Dominant Resource Share node ``(kind, name)`` would have with ``usage`` released at
        ClusterQueue ``leaf`` — exactly ``share`` between ``simulate_release(leaf, usage)`` and its
        undo, without changing the model or what it remembers (Kueue's ``LessThanOrEqualToFinalShare``
        asks it per candidate, ``fairsharing/strategy.go``).  A node off ``leaf``'s path, or above
        where the release stops spilling, answers its share now.  Cost: O(depth × flavor-resources
        of ``usage``) and one share computation."""

    def share_without_least(self, kind: str, name: str, weight_milli: int,
                            least: dict[FlavorResource, int]) -> Share:
        """A bound from above of ``share_without(kind, name, weight_milli, leaf, usage)`` over every
        ClusterQueue ``leaf`` below node ``(kind, name)`` and every ``usage`` of at least ``least`` on
        each flavor-resource: when it is below a preemptor's share, no candidate below the node can
        pass ``LessThanOrEqualToFinalShare`` (fair-sharing preemption reads it to pass over a whole
        subtree).  Cost: O(flavor-resources of ``least``) and one share computation."""

    def in_use(self, leaf: str) -> bool:
        """Whether ``leaf`` holds any non-zero usage (a deleted ClusterQueue stays until it drains)."""

    def available(self, leaf: str, fr: FlavorResource) -> int:
        """What ``leaf`` could take of ``fr`` now (may be negative)."""

    def quota_numbers(self, kind: str, name: str, fr: FlavorResource) -> tuple[int, int, int]:
        """``(subtree quota, local quota, usage)`` of node ``(kind, name)`` for ``fr`` (see
        :class:`Entitlement`; a ClusterQueue's subtree quota is its nominal quota) — what the
        preemption search (``statemodel.preemption``) reads while it simulates releases.  A node the
        model does not hold answers ``(0, 0, 0)``."""

    def within_nominal(self, kind: str, name: str, frs: list[FlavorResource]) -> bool:
        """Kueue ``IsWithinNominalInResources``: for every ``fr`` of ``frs``, the usage of node
        ``(kind, name)`` is at most its subtree quota (a ClusterQueue's: its nominal quota) — the
        ``quota_numbers`` comparison in one call, as the preemption search asks it of every
        ClusterQueue it reaches.  A node the model does not hold is within."""

    def over_quota_children(self, cohort: str, frs: list[FlavorResource]) -> list[tuple[str, str]]:
        """``(kind, name)`` of the linked children of Cohort ``cohort`` whose usage exceeds their subtree
        quota for at least one of ``frs`` (Kueue: not ``IsWithinNominalInResources``), sorted — the
        only children a preemption search descends into.  Cost: proportional to the answer."""

    def children_version(self, cohort: str) -> tuple[int, int] | None:
        """A version of the usage of the child ClusterQueues of Cohort ``cohort``: a pair that changes
        whenever one of them is charged or released, or the configuration changes, and never comes
        back; ``None`` while a simulated charge or release of one of them (``simulate_charge``,
        ``simulate_release``) is not undone.  So two equal versions mean every child ClusterQueue's
        usage, share and borrowing are the same (a fair-sharing search reuses its starting heap of
        the Cohort's ClusterQueues by it, ``statemodel.preemption.fair_sharing.KeptHeaps``).  O(1)."""

    def lowest_fitting_subtree(self, leaf: str, fr: FlavorResource, amount: int) -> tuple[int, bool]:
        """Kueue ``FindHeightOfLowestSubtreeThatFits``: ``(height, may reclaim in hierarchy)`` — the
        borrowing height at which ``amount`` more of ``fr`` fits by quota (0 = within the leaf's
        nominal quota), and whether that subtree is strictly below the root (the leaf then has
        hierarchical advantage over workloads using that subtree's quota from outside)."""

    def pool(self, leaf: str) -> PoolKey:
        """The pool ``leaf`` belongs to now."""

    def pool_free(self, pool: PoolKey, fr: FlavorResource) -> int:
        """Unused quota of ``fr`` in ``pool`` as a whole (0 for a pool that no longer exists)."""

    def wake_rule(self, leaf: str, fr: FlavorResource, needed: int) -> WakeRule:
        """What release can make ``needed`` of ``fr`` fit at ``leaf`` (see :class:`WakeRule`)."""

    def path(self, leaf: str) -> list[tuple[str, str]]:
        """``(kind, name)`` from ``leaf`` up to the root of its pool."""

    def entitlements(self, kind: str, name: str, frs: list[FlavorResource] | None = None) -> list[Entitlement]:
        """Rows of node ``(kind, name)`` for ``frs`` (default: every flavor-resource it has quota or
        usage for), sorted by ``(flavor, resource)``."""

    def dump(self) -> dict:
        """The model's state as a JSON-ready document (read back by ``load``)."""

    def load(self, doc: dict) -> None:
        """Restore a fresh model from ``dump`` output of the same ``version``."""

    def advantage_level(self, leaf: str,
                        requests: list[tuple[FlavorResource, int]]) -> tuple[list[tuple[str, str]], int]:
        """``(path(leaf), level)`` for the hierarchical preemption walk (Kueue ``QuantitiesFitInQuota``
        folded up ``classical/hierarchical_preemption.go``): ``level`` is the index along the path of
        the first node whose subtree quota takes what is left of ``requests`` (``(flavor-resource,
        amount)`` pairs in base units) on top of its usage, each amount less the unused local quota
        (``max(0, local quota - usage)``) of every node below it; ``len(path)`` when none does.  So
        the preemptor fits without borrowing iff ``level == 0``, and has hierarchical advantage at the
        Cohort ``path[i]`` iff ``level < i``.  One call instead of one ``quota_numbers`` per node and
        flavor-resource (the numbers are the same)."""

    def borrowing_children(self, cohort: str, frs: list[FlavorResource]) -> list[tuple[str, str]]:
        """``(kind, name)`` of the linked children of Cohort ``cohort`` that borrow: child Cohorts whose
        usage exceeds their subtree quota on any flavor-resource, child ClusterQueues whose usage
        exceeds their nominal quota on one of ``frs``, sorted — the children below which a
        fair-sharing preemption search can find a victim (``statemodel.preemption.fair_sharing``).
        A Cohort the model does not hold has none.  Cost: proportional to the answer."""


UnitDecision = tuple[str, str, str, dict[str, int], int, str | None, str | None, str | None,
                     list[tuple[str, int]] | None]
"""A decision a unit model made: ``(type, unit key, quota name, usage per resource, borrowing,
preemptor, reason, message, nodes)``; ``type`` is a ``statemodel.decisions.DecisionType`` value;
``nodes``: for an ``Admitted`` unit whose pods were placed, pods per node (sorted), else ``None``."""


class UnitModel(Protocol):
    """A quota model that owns its own objects and admitted units (Koordinator: ``ElasticQuota``
    groups and ``v1`` Pods) instead of Kueue's ClusterQueues and Workloads; the cluster hands it
    those objects, the lifecycle events naming its units and the node capacity, and asks it to run
    admission after every event.  A model is one when it has ``admits_units = True``."""

    admits_units: bool

    def validate(self, changes: list[object]) -> None:
        """Check the ``Applied`` objects and ``Deleted`` references of one event (a Batch: all of
        them, as one change) against the model's state, as upstream's validating webhooks do.

        Raises:
            EventError: naming the field and the rule broken; nothing was changed.
        """

    def apply_object(self, obj: object) -> bool:
        """Apply an object of the model's kinds; ``False`` when it is not one (nothing changed)."""

    def delete_object(self, kind: str, key: str) -> bool:
        """Delete an object of the model's kinds by kind and key; ``False`` when it is not one."""

    def lifecycle(self, event_type: str, key: str, reason: str | None) -> bool:
        """An observed ``WorkloadAdmitted`` / ``WorkloadEvicted`` / ``WorkloadFinished`` naming unit
        ``key``; ``False`` when the model has no such unit."""

    def configure(self, config: object) -> None:
        """The cluster's ``EngineConfig`` changed (the model reads its own section)."""

    def set_capacity(self, totals: dict[str, int]) -> None:
        """The cluster's capacity per resource (schedulable nodes' allocatable, base units)."""

    def run(self, now_ms: int) -> list[UnitDecision]:
        """Run admission (and the model's timed work) at engine time ``now_ms`` to a fixpoint."""

    def set_placer(self, placer: PodPlacement) -> None:
        """The cluster's pods on nodes (``statemodel.placement.pods``): the model binds the pods it
        admits through it while it is ``active`` (the cluster has a Node), and releases them."""

    def nodes_changed(self) -> None:
        """A Node or Topology was applied or deleted: every unit waiting for nodes is tried again."""

    def node_lost(self, pods: list[str], message: str) -> list[UnitDecision]:
        """The node the pods ``pods`` (keys) are bound to is gone or cordoned: each is evicted (back
        to pending, ``Evicted`` with reason ``NodeFailures`` and ``message``), in key order."""

    def explain(self, key: str) -> dict | None:
        """Why unit ``key`` is where it is (JSON-ready), ``None`` when the model has no such unit."""

    def view(self) -> dict:
        """The model's sections of the state JSON (e.g. ``elasticQuotas`` and ``pods``)."""
