"""The ``kueue`` quota model: KEP-79 arithmetic on the cohort tree, maintained incrementally.

``KueueModel`` implements ``statemodel.quota.protocol.QuotaModel``; the functions below it work on
one ``QuotaNode`` each.

Semantics follow Kueue's ``pkg/cache/scheduler/resource_node.go`` (reference/kueue.md §1.3-1.6),
which is the incremental form of the seed's ``T(x, r)`` condition (seed 000, "Design Details"):

* ``subtree[fr]``: a ClusterQueue's nominal quota; a Cohort's own nominal plus, for every child,
  ``child.subtree - child.local`` (what the child makes visible to its parent).
* ``local[fr]``: ``max(0, subtree - lendingLimit)`` when a lending limit is set, else 0 — the part
  of the node's capacity its parent never sees (for a Cohort, computed from its subtree quota).
* ``usage[fr]``: a ClusterQueue's charged usage; a Cohort's sum over children of the usage that
  spills past the child's local quota, ``max(0, child.usage - child.local)``.

Every quantity is an integer in base units, keyed by ``(flavor, resource)``.  Changing the usage or
the quota of a node costs O(depth): only the contributions along the path to the root change.
Nodes are linked to their parent only when the parent's chain is acyclic (``statemodel.hierarchy``
keeps that rule), so every upward walk here terminates.
"""

from __future__ import annotations

from collections.abc import Callable

from statemodel.objects import FlavorResource, ResourceGroup, flavor_resource
from statemodel.quota.kueue_fair_sharing import dominant_resource_share
from statemodel.quota.protocol import (
    CLUSTER_QUEUE, COHORT, Entitlement, Fit, FitIfPreempting, FitResult, NoFit, PodSetTotals, PoolKey, Share,
    Shortfall, WakeRule,
)
from statemodel.reasons import EXCEEDS_MAX_QUOTA, WAITING_FOR_QUOTA


class QuotaNode:
    """A ClusterQueue or Cohort in the quota arithmetic.

    Attributes:
        name: object name.
        is_cluster_queue: ``True`` for a ClusterQueue (a leaf), ``False`` for a Cohort.
        parent: the Cohort node this node is linked to, or ``None`` (a root, or detached by a cycle).
        nominal / borrowing_limit / lending_limit: the spec quotas per ``(flavor, resource)``.
        child_quota: Σ over linked children of ``child.subtree - child.local``.
        subtree / local / usage: see the module docstring.
        cohort_children: linked child Cohorts (by name); ``cq_children``: number of linked ClusterQueues.
        height: Kueue ``getNodeHeight``: 0 for a ClusterQueue; for a Cohort the longest path to a leaf
            (1 when it has only ClusterQueue children, 0 when it has none).  Valid only while
            ``height_stale`` is false; read it through :func:`node_height`.
        height_stale: the children changed since ``height`` was computed.  Every ancestor of a stale node
            is stale too, so marking stops at the first stale ancestor (amortized O(1) per edge change,
            where eager upkeep would walk the whole chain on every change of a deep tree).
        over: per flavor-resource, the linked children whose usage exceeds their subtree quota (Kueue:
            not ``IsWithinNominalInResources``), keyed by their ``over_key`` — so a preemption search
            visits only the children that can hold candidates.
        over_key: ``(is_cluster_queue, name)``, made once: the key of this node in its parent's
            ``over`` index (the same tuple object each time, so the index finds it by identity).
        shared / shared_as: the node's last Dominant Resource Share (``KueueModel.share``) and the
            ``(configuration epoch, weight)`` it was computed for; ``shared`` is dropped whenever the
            node's usage changes (``add_usage``, ``_propagate``), a share depending on nothing else
            while the configuration stands.
        children_changed / children_simulated: changes of the usage of a linked child ClusterQueue —
            charges and releases counted, and simulated ones not yet undone (``KueueModel.children_version``).
    """

    __slots__ = (
        "name", "is_cluster_queue", "parent", "nominal", "borrowing_limit", "lending_limit",
        "child_quota", "subtree", "local", "usage", "cohort_children", "cq_children", "height", "height_stale", "over",
        "shared", "shared_as", "over_key", "children_changed", "children_simulated",
    )

    def __init__(self, name: str, is_cluster_queue: bool) -> None:
        self.name = name
        self.is_cluster_queue = is_cluster_queue
        self.parent: QuotaNode | None = None
        self.nominal: dict[FlavorResource, int] = {}
        self.borrowing_limit: dict[FlavorResource, int] = {}
        self.lending_limit: dict[FlavorResource, int] = {}
        self.child_quota: dict[FlavorResource, int] = {}
        self.subtree: dict[FlavorResource, int] = {}
        self.local: dict[FlavorResource, int] = {}
        self.usage: dict[FlavorResource, int] = {}
        self.cohort_children: dict[str, QuotaNode] = {}
        self.cq_children = 0
        self.height = 0
        self.height_stale = False
        self.over: dict[FlavorResource, dict[tuple[bool, str], QuotaNode]] = {}
        self.shared: Share | None = None
        self.shared_as: tuple[int, int] = (-1, 0)
        self.over_key = (is_cluster_queue, name)
        self.children_changed = 0
        self.children_simulated = 0

    def path_to_root(self) -> list["QuotaNode"]:
        """``[self, parent, ..., root]`` along linked parents."""
        path = [self]
        node = self.parent
        while node is not None:
            path.append(node)
            node = node.parent
        return path

    def flavor_resources(self) -> list[FlavorResource]:
        """Every ``(flavor, resource)`` this node has configured quota for, or non-zero subtree quota or
        usage, sorted (zero leftovers of children that moved away are not listed, so the answer does not
        depend on the order the configuration arrived in)."""
        return sorted(set(self.nominal) | {fr for fr, v in self.subtree.items() if v}
                      | {fr for fr, v in self.usage.items() if v})


def _mark(node: QuotaNode, fr: FlavorResource) -> None:
    """Keep ``node`` in its parent's ``over`` index for ``fr`` iff its usage exceeds its subtree quota."""
    parent = node.parent
    if parent is None:
        return
    key = node.over_key
    index = parent.over.get(fr)
    if node.usage.get(fr, 0) > node.subtree.get(fr, 0):
        if index is None:
            index = parent.over[fr] = {}
        index[key] = node
    elif index is not None and key in index:
        del index[key]


def _recompute_quota(node: QuotaNode, fr: FlavorResource) -> None:
    """Recompute ``subtree`` and ``local`` of one node for one fr from its spec and children."""
    sub = node.nominal.get(fr, 0) + node.child_quota.get(fr, 0)
    node.subtree[fr] = sub
    node.shared = None
    ll = node.lending_limit.get(fr)
    node.local[fr] = sub - ll if ll is not None and sub > ll else 0
    _mark(node, fr)


def _contribution(node: QuotaNode, fr: FlavorResource) -> tuple[int, int]:
    """What ``node`` passes to its parent for ``fr``: (quota visible to the parent, usage spilled into it)."""
    local = node.local.get(fr, 0)
    usage = node.usage.get(fr, 0)
    return node.subtree.get(fr, 0) - local, (usage - local if usage > local else 0)


def _propagate(node: QuotaNode, fr: FlavorResource, before: tuple[int, int]) -> None:
    """Carry the change of ``node``'s contribution (``before`` → now) up the linked chain."""
    while node.parent is not None:
        after = _contribution(node, fr)
        dq = after[0] - before[0]
        du = after[1] - before[1]
        if dq == 0 and du == 0:
            return
        parent = node.parent
        before = _contribution(parent, fr)
        if dq:
            parent.child_quota[fr] = parent.child_quota.get(fr, 0) + dq
            _recompute_quota(parent, fr)
        if du:
            parent.usage[fr] = parent.usage.get(fr, 0) + du
            parent.shared = None
            _mark(parent, fr)
        node = parent


def set_quotas(node: QuotaNode, resource_groups: tuple[ResourceGroup, ...]) -> None:
    """Replace the node's spec quotas by those of ``resource_groups`` and update every ancestor.

    Cost: O(number of flavor-resources × depth).
    """
    nominal: dict[FlavorResource, int] = {}
    borrowing: dict[FlavorResource, int] = {}
    lending: dict[FlavorResource, int] = {}
    for group in resource_groups:
        for flavor in group.flavors:
            for quota in flavor.resources:
                fr = flavor_resource(flavor.name, quota.name)
                nominal[fr] = quota.nominal
                if quota.borrowing_limit is not None:
                    borrowing[fr] = quota.borrowing_limit
                if quota.lending_limit is not None:
                    lending[fr] = quota.lending_limit
    touched = sorted(set(node.nominal) | set(nominal) | set(node.lending_limit) | set(lending))
    node.borrowing_limit = borrowing
    befores = {fr: _contribution(node, fr) for fr in touched}
    node.nominal = nominal
    node.lending_limit = lending
    for fr in touched:
        _recompute_quota(node, fr)
        _propagate(node, fr, befores[fr])
    for fr in touched:
        if fr not in nominal and not node.child_quota.get(fr) and not node.usage.get(fr):
            node.subtree.pop(fr, None)
            node.local.pop(fr, None)
            node.child_quota.pop(fr, None)


def add_usage(node: QuotaNode, fr: FlavorResource, amount: int) -> None:
    """Charge ``amount`` of ``fr`` to a ClusterQueue; the part beyond local quota spills upwards.

    Kueue ``addUsage`` (resource_node.go).  ``amount`` may be negative (a release).  O(depth).
    """
    while True:
        local = node.local.get(fr, 0)
        old = node.usage.get(fr, 0)
        new = old + amount
        node.usage[fr] = new
        node.shared = None
        parent = node.parent
        if parent is None:
            return
        _mark(node, fr)
        spill = (new - local if new > local else 0) - (old - local if old > local else 0)
        if spill == 0:
            return
        node = parent
        amount = spill


KeptShare = tuple[QuotaNode, Share, tuple[int, int], dict[FlavorResource, int]]
"""A node, its remembered share with ``shared_as``, and a copy of its usage when it was kept."""


def _kept_shares(leaf: QuotaNode) -> list[KeptShare]:
    """The remembered shares along ``leaf``'s path to the root, with a copy of each node's usage,
    before a simulated charge or release drops them (``add_usage``)."""
    kept: list[KeptShare] = []
    node: QuotaNode | None = leaf
    while node is not None:
        shared = node.shared
        if shared is not None:
            kept.append((node, shared, node.shared_as, dict(node.usage)))
        node = node.parent
    return kept


def _restore_shares(kept: list[KeptShare]) -> None:
    """After a simulation's undo: a node whose share was dropped and whose usage is again exactly what
    it was when kept gets the kept share back — a share depends only on the node's usage, quotas and
    weight and its parent's lendable, and ``shared_as`` still names the configuration and weight it
    was computed for, so it is the share ``KueueModel.share`` would compute."""
    for node, shared, shared_as, usage in kept:
        if node.shared is None and node.usage == usage:
            node.shared = shared
            node.shared_as = shared_as


def local_available(node: QuotaNode, fr: FlavorResource) -> int:
    """Kueue ``LocalAvailable``: ``max(0, local - usage)``."""
    free = node.local.get(fr, 0) - node.usage.get(fr, 0)
    return free if free > 0 else 0


def available(node: QuotaNode, fr: FlavorResource) -> int:
    """Kueue ``available(node, fr)``: what ``node`` could still take of ``fr`` now (may be negative).

    Kueue evaluates it top-down: ``available(n) = LocalAvailable(n) + min(cap(n), available(parent))``
    with ``cap(n) = storedInParent - usedInParent + borrowingLimit`` (no cap without a borrowing
    limit) and ``SubtreeQuota - Usage`` at the root.  Each step is ``x -> min(A, x + B)``, a family
    closed under composition, so this walks bottom-up once without building the path.  O(depth).
    """
    cap: int | None = None  # A of the composed function; None = unbounded
    shift = 0  # B of the composed function
    n = node
    parent = n.parent
    while parent is not None:
        local = n.local.get(fr, 0)
        usage = n.usage.get(fr, 0)
        free = local - usage if local > usage else 0
        bl = n.borrowing_limit.get(fr)
        if bl is not None:
            used_in_parent = usage - local if usage > local else 0
            step_cap = n.subtree.get(fr, 0) - local - used_in_parent + bl + free + shift
            if cap is None or step_cap < cap:
                cap = step_cap
        shift += free
        n = parent
        parent = n.parent
    result = n.subtree.get(fr, 0) - n.usage.get(fr, 0) + shift
    return result if cap is None or result < cap else cap


def potential_available(node: QuotaNode, fr: FlavorResource) -> int:
    """Kueue ``potentialAvailable``: the largest amount of ``fr`` ``node`` could ever hold (usage ignored)."""
    path = node.path_to_root()
    top = path[-1]
    avail = top.subtree.get(fr, 0)
    for i in range(len(path) - 2, -1, -1):
        n = path[i]
        avail += n.local.get(fr, 0)
        bl = n.borrowing_limit.get(fr)
        if bl is not None:
            cap = n.subtree.get(fr, 0) + bl
            if cap < avail:
                avail = cap
    return avail


def lendable(parent: QuotaNode) -> dict[str, int]:
    """Kueue ``calculateLendable(parent)`` (``fair_sharing.go``): per resource name, the sum of
    ``potentialAvailable(parent, fr)`` over the flavor-resources of the root's subtree quota — what the
    children of ``parent`` could borrow at most, the denominator of their Dominant Resource Share.
    Kueue's root lists every flavor-resource declared below it, zeros included; here a zero is not
    always carried up, so the flavor-resources are those of ``parent`` and its ancestors — the same
    sum, since a flavor-resource none of them holds has a potential of 0 at ``parent``.
    O(depth × flavor-resources)."""
    frs: set[FlavorResource] = set()
    node: QuotaNode | None = parent
    while node is not None:  # the root's flavor-resources, also those whose subtree quota is 0
        frs.update(node.subtree)
        node = node.parent
    out: dict[str, int] = {}
    for fr in sorted(frs):
        out[fr[1]] = out.get(fr[1], 0) + potential_available(parent, fr)
    return out


def borrowing_height(cq: QuotaNode, fr: FlavorResource, amount: int) -> int:
    """Kueue ``FindHeightOfLowestSubtreeThatFits``: 0 if ``amount`` more fits in the ClusterQueue's
    nominal quota (or it has no cohort); else the height of the lowest cohort whose subtree quota
    covers what has to be borrowed.  O(depth)."""
    return lowest_fitting_subtree(cq, fr, amount)[0]


def lowest_fitting_subtree(cq: QuotaNode, fr: FlavorResource, amount: int) -> tuple[int, bool]:
    """Kueue ``FindHeightOfLowestSubtreeThatFits`` with its second result: ``(height, whether the
    subtree that fits has a parent)`` — ``(0, has a cohort)`` when ``amount`` more fits in the
    ClusterQueue's nominal quota; the root's height and ``False`` when only the root covers it.
    O(depth)."""
    if cq.parent is None:
        return 0, False
    if cq.nominal.get(fr, 0) >= cq.usage.get(fr, 0) + amount:
        return 0, True
    remaining = amount - local_available(cq, fr)
    node = cq.parent
    while True:
        if node.subtree.get(fr, 0) >= node.usage.get(fr, 0) + remaining:
            return node_height(node), node.parent is not None
        if node.parent is None:
            return node_height(node), False
        remaining -= local_available(node, fr)
        node = node.parent


def _mark_height_stale(node: QuotaNode | None) -> None:
    """The children of ``node`` changed: its height and its ancestors' heights are stale."""
    while node is not None and not node.height_stale:
        node.height_stale = True
        node = node.parent


def node_height(node: QuotaNode) -> int:
    """``node.height``, first recomputed for ``node`` and every stale node below it (post-order, with an
    explicit stack: no recursion on the depth of the tree).  Cost: the number of stale nodes below."""
    if not node.height_stale:
        return node.height
    stack: list[tuple[QuotaNode, bool]] = [(node, False)]
    while stack:
        n, children_done = stack.pop()
        if not children_done:
            stack.append((n, True))
            for child in n.cohort_children.values():
                if child.height_stale:
                    stack.append((child, False))
            continue
        height = 1 if (n.cq_children or n.cohort_children) else 0
        for child in n.cohort_children.values():
            if child.height + 1 > height:
                height = child.height + 1
        n.height = height
        n.height_stale = False
    return node.height


def link(child: QuotaNode, parent: QuotaNode) -> None:
    """Attach ``child`` under ``parent``: its visible quota and spilled usage join the parent's chain."""
    child.parent = parent
    if child.is_cluster_queue:
        parent.cq_children += 1
    else:
        parent.cohort_children[child.name] = child
    for fr in sorted(set(child.subtree) | set(child.usage)):
        _mark(child, fr)
        quota_up, usage_up = _contribution(child, fr)
        before = _contribution(parent, fr)
        if quota_up:
            parent.child_quota[fr] = parent.child_quota.get(fr, 0) + quota_up
        _recompute_quota(parent, fr)
        if usage_up:
            parent.usage[fr] = parent.usage.get(fr, 0) + usage_up
        _propagate(parent, fr, before)
    _mark_height_stale(parent)


def unlink(child: QuotaNode) -> None:
    """Detach ``child`` from its parent, removing its contribution from every ancestor."""
    parent = child.parent
    if parent is None:
        return
    for fr in sorted(set(child.subtree) | set(child.usage)):
        quota_up, usage_up = _contribution(child, fr)
        before = _contribution(parent, fr)
        if quota_up:
            parent.child_quota[fr] = parent.child_quota.get(fr, 0) - quota_up
        _recompute_quota(parent, fr)
        if usage_up:
            parent.usage[fr] = parent.usage.get(fr, 0) - usage_up
        _propagate(parent, fr, before)
    if child.is_cluster_queue:
        parent.cq_children -= 1
    else:
        del parent.cohort_children[child.name]
    key = child.over_key
    for index in parent.over.values():
        index.pop(key, None)
    child.parent = None
    _mark_height_stale(parent)


def root_bound(node: QuotaNode, fr: FlavorResource, val: int) -> bool:
    """Whether ``val`` of ``fr`` would fit at ClusterQueue ``node`` given only enough free quota at
    its root: no lending limit on the path and every borrowing-limit cap allows ``val``."""
    n = node
    while n.parent is not None:
        if fr in n.lending_limit:
            return False
        bl = n.borrowing_limit.get(fr)
        if bl is not None:
            usage = n.usage.get(fr, 0)
            if n.subtree.get(fr, 0) - (usage if usage > 0 else 0) + bl < val:
                return False
        n = n.parent
    return True


def _quota_rows(rows: list) -> dict[FlavorResource, int]:
    return {(flavor, res): amount for flavor, res, amount in rows}


def _rows(mapping: dict[FlavorResource, int]) -> list:
    return [[flavor, res, amount] for (flavor, res), amount in mapping.items()]


class KueueModel:
    """Kueue's KEP-79 cohorts as a ``QuotaModel`` (``resource_node.go`` semantics, see the module
    docstring): nominal quota, borrowing and lending limits, usage spilling up the linked tree.

    ``fit`` asks, per resource of one flavor: above ``potentialAvailable`` ⇒ ``ExceedsMaxQuota``;
    above ``available`` (clamped at 0) ⇒ ``WaitingForQuota``; otherwise it fits with the largest
    ``borrowing_height``.  When no resource exceeds the maximum capacity but some wait for quota the
    answer is ``FitIfPreempting`` (taking usage back could make it fit; whether the ClusterQueue may
    preempt is the caller's policy), otherwise ``NoFit``.  Demand is ignored.  ``potentialAvailable``
    is memoized per (ClusterQueue, flavor-resource), and the lendable capacity under each Cohort (the
    denominator of its children's Dominant Resource Share, ``statemodel.quota.kueue_fair_sharing``),
    until a spec or an edge changes; a ClusterQueue's ``path`` until an edge changes or a node goes.
    A pool is a cohort tree, keyed by its root.
    """

    name = "kueue"
    version = 1
    tracks_demand = False

    def __init__(self) -> None:
        self._cqs: dict[str, QuotaNode] = {}
        self._cohorts: dict[str, QuotaNode] = {}
        self._max: dict[tuple[str, FlavorResource], int] = {}
        self._lendable: dict[str, dict[str, int]] = {}
        self._paths: dict[str, list[tuple[str, str]]] = {}
        self._epoch = 0  # bumped by every change of specs or edges: remembered shares are stale
        self._fits: dict[int, Fit] = {}
        self._mutations = 0
        self._rows: dict[tuple[QuotaNode, FlavorResource], tuple[int, int]] = {}
        self._rows_at = -1
        self._local_below_map: dict[str, set[FlavorResource]] = {}
        self._local_below_at = -1

    def node(self, kind: str, name: str) -> QuotaNode:
        """The node ``(kind, name)``, created when first named."""
        nodes = self._cqs if kind == CLUSTER_QUEUE else self._cohorts
        n = nodes.get(name)
        if n is None:
            n = nodes[name] = QuotaNode(name, kind == CLUSTER_QUEUE)
        return n

    def _find(self, kind: str, name: str) -> QuotaNode | None:
        """The node ``(kind, name)``, or ``None`` when the model does not hold it."""
        return (self._cqs if kind == CLUSTER_QUEUE else self._cohorts).get(name)

    def set_spec(self, kind: str, name: str, resource_groups: tuple[ResourceGroup, ...]) -> None:
        """``set_quotas`` on the node."""
        self._mutations += 1
        set_quotas(self.node(kind, name), resource_groups)
        self._max.clear()
        self._epoch += 1
        self._lendable.clear()

    def remove(self, kind: str, name: str) -> None:
        """Forget the node."""
        self._mutations += 1
        (self._cqs if kind == CLUSTER_QUEUE else self._cohorts).pop(name, None)
        self._paths.clear()
        self._epoch += 1

    def link(self, kind: str, name: str, parent: str) -> None:
        """``link`` the node under Cohort ``parent``."""
        self._mutations += 1
        link(self.node(kind, name), self.node(COHORT, parent))
        self._max.clear()
        self._epoch += 1
        self._lendable.clear()
        self._paths.clear()

    def unlink(self, kind: str, name: str) -> None:
        """``unlink`` the node from its parent."""
        self._mutations += 1
        node = self.node(kind, name)
        if node.parent is not None:
            unlink(node)
            self._max.clear()
            self._epoch += 1
            self._lendable.clear()
            self._paths.clear()

    def demand(self, leaf: str, request: PodSetTotals, delta: int) -> None:
        """Ignored: KEP-79 entitlements do not depend on pending requests."""

    def fit(self, leaf: str, request: list[tuple[FlavorResource, int]]) -> FitResult:
        """Kueue's per-flavor check in ``flavorassigner`` (see the class docstring)."""
        node = self._cqs[leaf]
        memo = self._max
        shortfalls: list[Shortfall] = []
        borrow = 0
        exceeds = False
        for fr, val in request:
            cap = memo.get((leaf, fr))
            if cap is None:
                cap = memo[(leaf, fr)] = potential_available(node, fr)
            if val > cap:
                shortfalls.append(Shortfall(EXCEEDS_MAX_QUOTA, fr[0], fr[1], leaf, val, cap))
                exceeds = True
                continue
            free = available(node, fr)
            if free < 0:
                free = 0
            if val > free:
                shortfalls.append(Shortfall(WAITING_FOR_QUOTA, fr[0], fr[1], leaf, val, free))
                continue
            height = borrowing_height(node, fr, val)
            if height > borrow:
                borrow = height
        if shortfalls:
            if exceeds:
                return NoFit(tuple(shortfalls))
            return FitIfPreempting(borrow, tuple(shortfalls))
        fit = self._fits.get(borrow)
        if fit is None:
            fit = self._fits[borrow] = Fit(borrow)
        return fit

    def fits(self, leaf: str, usage: dict[FlavorResource, int]) -> bool:
        """Every amount within ``available`` (Kueue's re-check before admitting)."""
        node = self._cqs[leaf]
        for fr, amount in usage.items():
            if amount > available(node, fr):
                return False
        return True

    def charge(self, leaf: str, usage: dict[FlavorResource, int]) -> None:
        """``add_usage`` per flavor-resource."""
        self._add(leaf, usage, 1)

    def release(self, leaf: str, usage: dict[FlavorResource, int]) -> None:
        """``add_usage`` of the negated amounts."""
        self._add(leaf, usage, -1)

    def _add(self, leaf: str, usage: dict[FlavorResource, int], sign: int, counted: bool = True) -> None:
        """``add_usage`` of ``sign`` times each amount at ClusterQueue ``leaf``; ``counted`` (a charge or
        release, not a simulated one) moves the parent's ``children_changed`` on."""
        self._mutations += 1
        node = self._cqs[leaf]
        for fr, amount in usage.items():
            add_usage(node, fr, sign * amount)
        if counted and node.parent is not None:
            node.parent.children_changed += 1

    def _simulate(self, leaf: str, usage: dict[FlavorResource, int], sign: int) -> Callable[[], None]:
        """``_add`` now, counted in the parent's ``children_simulated`` until undone; the returned
        function adds it back (integer arithmetic: exact) and keeps the remembered shares of the path
        that the round trip left as they were (``_kept_shares``)."""
        node = self._cqs[leaf]
        kept = _kept_shares(node)
        self._add(leaf, usage, sign, counted=False)
        parent = node.parent
        if parent is not None:
            parent.children_simulated += 1

        def undo() -> None:
            self._add(leaf, usage, -sign, counted=False)
            if parent is not None:
                parent.children_simulated -= 1
            _restore_shares(kept)
        return undo

    def simulate_release(self, leaf: str, usage: dict[FlavorResource, int]) -> Callable[[], None]:
        """Release now; the returned function charges it back (``_simulate``)."""
        return self._simulate(leaf, usage, -1)

    def simulate_charge(self, leaf: str, usage: dict[FlavorResource, int]) -> Callable[[], None]:
        """Charge now; the returned function releases it again (``_simulate``)."""
        return self._simulate(leaf, usage, 1)

    def share(self, kind: str, name: str, weight_milli: int) -> Share:
        """Kueue ``DominantResourceShare`` of the node (``kueue_fair_sharing``); a root, or a node the
        model does not hold, does not borrow.  O(flavor-resources) once the parent's lendable is
        memoized; O(1) while the node's usage and the configuration are as when it was last asked
        (``QuotaNode.shared``)."""
        node = self._find(kind, name)
        if node is None:
            return Share.none(weight_milli)
        parent = node.parent
        if parent is None:
            return Share.none(weight_milli)
        got = node.shared
        if got is not None and node.shared_as == (self._epoch, weight_milli):
            return got
        got = node.shared = self._share_of(node, parent, node.usage, weight_milli)
        node.shared_as = (self._epoch, weight_milli)
        return got

    def share_without(self, kind: str, name: str, weight_milli: int, leaf: str,
                      usage: dict[FlavorResource, int]) -> Share:
        """``share`` of the node with ``usage`` released at ClusterQueue ``leaf``: the release's spill
        is carried up from the leaf as ``add_usage`` carries it (the part beyond each node's local
        quota), into local numbers instead of the nodes, and stops where it reaches nothing more;
        the node's share is then computed from its usage with that spill taken off.  Nothing is
        changed or remembered.  O(depth × flavor-resources of ``usage``) and one
        ``dominant_resource_share``."""
        target = self._find(kind, name)
        if target is None:
            return Share.none(weight_milli)
        above = target.parent
        if above is None:
            return Share.none(weight_milli)
        node = self._cqs[leaf]
        deltas: list[tuple[FlavorResource, int]] = [(fr, -amount) for fr, amount in usage.items() if amount]
        while node is not target:
            parent = node.parent
            if parent is None or not deltas:  # off the leaf's path, or the release stops below
                return self.share(kind, name, weight_milli)
            spilled: list[tuple[FlavorResource, int]] = []
            for fr, delta in deltas:
                local = node.local.get(fr, 0)
                old = node.usage.get(fr, 0)
                new = old + delta
                spill = (new - local if new > local else 0) - (old - local if old > local else 0)
                if spill:
                    spilled.append((fr, spill))
            deltas = spilled
            node = parent
        if not deltas:
            return self.share(kind, name, weight_milli)
        after = dict(target.usage)
        for fr, delta in deltas:
            after[fr] = after.get(fr, 0) + delta
        return self._share_of(target, above, after, weight_milli)

    def share_without_least(self, kind: str, name: str, weight_milli: int,
                            least: dict[FlavorResource, int]) -> Share:
        """A bound of ``share_without(kind, name, weight_milli, leaf, usage)`` from above, over every
        ClusterQueue ``leaf`` below the node and every ``usage`` of at least ``least`` on each
        flavor-resource: the node's share with ``least`` taken off its usage — except on the
        flavor-resources where a node below it keeps local quota (a ``lendingLimit``), where a
        release may stop spilling before it reaches the node, so nothing is taken off.  Without local
        quota on the way a release spills up whole (``add_usage``), and a share only falls with usage.
        Nothing is changed or remembered but the flavor-resources with local quota below each Cohort
        (per configuration: O(nodes × depth) once after a change of specs or edges).  O(flavor-resources
        of ``least``) and one share computation otherwise."""
        target = self._find(kind, name)
        if target is None or target.parent is None:
            return Share.none(weight_milli)
        kept = self._local_below().get(name) if kind == COHORT else None
        after = dict(target.usage)
        taken = False
        for fr, amount in least.items():
            if amount > 0 and (kept is None or fr not in kept) and fr in after:
                after[fr] = after[fr] - amount if after[fr] > amount else 0
                taken = True
        if not taken:
            return self.share(kind, name, weight_milli)
        return self._share_of(target, target.parent, after, weight_milli)

    def _local_below(self) -> dict[str, set[FlavorResource]]:
        """Per Cohort, the flavor-resources on which a node below it (not itself) keeps local quota;
        remembered until a spec or an edge changes."""
        if self._local_below_at != self._epoch:
            below: dict[str, set[FlavorResource]] = {}
            for node in [*self._cqs.values(), *self._cohorts.values()]:
                frs = {fr for fr, local in node.local.items() if local > 0}
                if not frs:
                    continue
                parent = node.parent
                while parent is not None:
                    below.setdefault(parent.name, set()).update(frs)
                    parent = parent.parent
            self._local_below_map = below
            self._local_below_at = self._epoch
        return self._local_below_map

    def _share_of(self, node: QuotaNode, parent: QuotaNode, usage: dict[FlavorResource, int],
                  weight_milli: int) -> Share:
        """Kueue ``DominantResourceShare`` of ``node`` (whose parent is ``parent``) were its usage
        ``usage``; the parent's lendable memoized."""
        available = self._lendable.get(parent.name)
        if available is None:
            available = self._lendable[parent.name] = lendable(parent)
        if node.is_cluster_queue:
            quotas = node.nominal
        else:  # Kueue's cohort lists every flavor-resource below it, zeros included
            quotas = {fr: node.subtree.get(fr, 0) for fr in usage} | node.subtree
        return dominant_resource_share(quotas, usage, weight_milli, available)

    def in_use(self, leaf: str) -> bool:
        """Any non-zero usage at the ClusterQueue."""
        return any(self._cqs[leaf].usage.values())

    def available(self, leaf: str, fr: FlavorResource) -> int:
        """Kueue ``available`` of the ClusterQueue."""
        return available(self._cqs[leaf], fr)

    def quota_numbers(self, kind: str, name: str, fr: FlavorResource) -> tuple[int, int, int]:
        """The node's ``subtree``, ``local`` and ``usage`` of ``fr``."""
        node = self._find(kind, name)
        if node is None:
            return 0, 0, 0
        return node.subtree.get(fr, 0), node.local.get(fr, 0), node.usage.get(fr, 0)

    def within_nominal(self, kind: str, name: str, frs: list[FlavorResource]) -> bool:
        """Usage at most subtree quota for every one of ``frs`` (``QuotaModel.within_nominal``)."""
        node = self._find(kind, name)
        if node is None:
            return True
        usage, subtree = node.usage, node.subtree
        for fr in frs:
            if usage.get(fr, 0) > subtree.get(fr, 0):
                return False
        return True

    def lowest_fitting_subtree(self, leaf: str, fr: FlavorResource, amount: int) -> tuple[int, bool]:
        """``lowest_fitting_subtree`` of the ClusterQueue."""
        return lowest_fitting_subtree(self._cqs[leaf], fr, amount)

    def children_version(self, cohort: str) -> tuple[int, int] | None:
        """The configuration epoch and the Cohort's ``children_changed`` (``(epoch, -1)`` for a Cohort
        the model does not hold), or ``None`` while a simulated change of a child ClusterQueue is not
        undone (``children_simulated``)."""
        node = self._cohorts.get(cohort)
        if node is None:
            return (self._epoch, -1)
        return (self._epoch, node.children_changed) if node.children_simulated == 0 else None

    def over_quota_children(self, cohort: str, frs: list[FlavorResource]) -> list[tuple[str, str]]:
        """From the Cohort's ``over`` index: its children above their quota for one of ``frs``, sorted."""
        node = self._cohorts.get(cohort)
        if node is None:
            return []
        found: dict[tuple[bool, str], bool] = {}
        for fr in frs:
            index = node.over.get(fr)
            if index:
                for key in index:
                    found[key] = True
        return sorted((CLUSTER_QUEUE if is_cq else COHORT, name) for is_cq, name in found)

    def pool(self, leaf: str) -> PoolKey:
        """The root of the ClusterQueue's linked tree."""
        root = self._cqs[leaf]
        while root.parent is not None:
            root = root.parent
        return (root.is_cluster_queue, root.name)

    def pool_free(self, pool: PoolKey, fr: FlavorResource) -> int:
        """The root's ``subtree - usage``."""
        root = (self._cqs if pool[0] else self._cohorts).get(pool[1])
        if root is None:
            return 0
        return root.subtree.get(fr, 0) - root.usage.get(fr, 0)

    def wake_rule(self, leaf: str, fr: FlavorResource, needed: int) -> WakeRule:
        """At the root's free quota when ``root_bound``, else after the deficit is released."""
        node = self._cqs[leaf]
        return WakeRule(self.pool(leaf), root_bound(node, fr, needed))

    def path(self, leaf: str) -> list[tuple[str, str]]:
        """The ClusterQueue and its linked Cohorts up to the root (remembered: callers must not
        change the list)."""
        got = self._paths.get(leaf)
        if got is None:
            got = self._paths[leaf] = [(CLUSTER_QUEUE if n.is_cluster_queue else COHORT, n.name)
                                       for n in self._cqs[leaf].path_to_root()]
        return got

    def entitlements(self, kind: str, name: str, frs: list[FlavorResource] | None = None) -> list[Entitlement]:
        """Rows straight from the node's arithmetic (``available`` not clamped); none for a node the
        model does not hold (an implicit cohort named only by an edge left unlinked by a cycle).

        ``available`` and ``potentialAvailable`` are computed top-down and remembered per node until the
        model changes (``_mutations`` counts every change), so the rows of every node of a tree cost O(tree size) in all,
        not O(depth) each — a 100,000-level chain renders in linear time.
        """
        node = self._find(kind, name)
        out: list[Entitlement] = []
        if node is None:
            return out
        for fr in (node.flavor_resources() if frs is None else frs):
            avail, potential = self._row_memo(node, fr)
            out.append(Entitlement(kind, name, fr[0], fr[1], node.nominal.get(fr, 0), node.borrowing_limit.get(fr),
                                   node.lending_limit.get(fr), node.subtree.get(fr, 0), node.local.get(fr, 0),
                                   node.usage.get(fr, 0), avail, potential))
        return out

    def _row_memo(self, node: QuotaNode, fr: FlavorResource) -> tuple[int, int]:
        """``(available, potential_available)`` of ``node`` for ``fr``, from its nearest remembered ancestor
        down (Kueue's top-down definitions: ``available(n) = min(cap(n), available(parent) + free(n))``,
        ``potential(n) = min(subtree(n) + borrowingLimit(n), potential(parent) + local(n))``)."""
        if self._rows_at != self._mutations:
            self._rows.clear()
            self._rows_at = self._mutations
        memo = self._rows
        path: list[QuotaNode] = []
        n: QuotaNode | None = node
        while n is not None and (n, fr) not in memo:
            path.append(n)
            n = n.parent
        for m in reversed(path):
            parent = m.parent
            if parent is None:
                value = (m.subtree.get(fr, 0) - m.usage.get(fr, 0), m.subtree.get(fr, 0))
            else:
                above_avail, above_potential = memo[(parent, fr)]
                local = m.local.get(fr, 0)
                usage = m.usage.get(fr, 0)
                free = local - usage if local > usage else 0
                avail = above_avail + free
                potential = above_potential + local
                bl = m.borrowing_limit.get(fr)
                if bl is not None:
                    used_in_parent = usage - local if usage > local else 0
                    cap = m.subtree.get(fr, 0) - local - used_in_parent + bl + free
                    if cap < avail:
                        avail = cap
                    pcap = m.subtree.get(fr, 0) + bl
                    if pcap < potential:
                        potential = pcap
                value = (avail, potential)
            memo[(m, fr)] = value
        return memo[(node, fr)]

    def dump(self) -> dict:
        """Spec quotas, links and ClusterQueue usage; derived numbers are recomputed by ``load``.

        Shape: ``{"cohorts": [[name, parent|null, [nominal, borrowingLimit, lendingLimit]]],
        "clusterQueues": [[name, parent|null, [...quotas], usage]]}``, each quota list as
        ``[[flavor, resource, amount], ...]``, in creation order.
        """
        def quotas(n: QuotaNode) -> list:
            return [_rows(n.nominal), _rows(n.borrowing_limit), _rows(n.lending_limit)]

        return {
            "cohorts": [[n.name, n.parent.name if n.parent is not None else None, quotas(n)]
                        for n in self._cohorts.values()],
            "clusterQueues": [[n.name, n.parent.name if n.parent is not None else None, quotas(n), _rows(n.usage)]
                              for n in self._cqs.values()],
        }

    def load(self, doc: dict) -> None:
        """Rebuild from ``dump``: quotas, then links, then usage (as the original was built)."""
        self._mutations += 1
        self._paths.clear()
        self._epoch += 1
        for name, _, quota in doc["cohorts"]:
            _load_quota(self.node(COHORT, name), quota)
        for name, _, quota, _ in doc["clusterQueues"]:
            _load_quota(self.node(CLUSTER_QUEUE, name), quota)
        for name, parent, _ in doc["cohorts"]:
            if parent is not None:
                link(self._cohorts[name], self.node(COHORT, parent))
        for name, parent, _, _ in doc["clusterQueues"]:
            if parent is not None:
                link(self._cqs[name], self.node(COHORT, parent))
        for name, _, _, usage in doc["clusterQueues"]:
            node = self._cqs[name]
            for fr, amount in _quota_rows(usage).items():
                add_usage(node, fr, amount)

    def advantage_level(self, leaf: str,
                        requests: list[tuple[FlavorResource, int]]) -> tuple[list[tuple[str, str]], int]:
        """``(path(leaf), level)``: the index along the path of the first node whose subtree quota takes
        what is left of ``requests`` on top of its usage, each amount less the unused local quota
        (``max(0, local - usage)``) of every node below it, clamped at 0 — Kueue
        ``QuantitiesFitInQuota`` folded up the hierarchical preemption walk (``classical/
        hierarchical_preemption.go``); ``len(path)`` when no node takes it.  One walk of the linked
        chain, O(depth × len(requests)); ``requests`` is not changed."""
        path = self.path(leaf)
        needs = [amount for _, amount in requests]
        node: QuotaNode | None = self._cqs[leaf]
        level = 0
        while node is not None:
            fits = True
            subtree, local, usage = node.subtree, node.local, node.usage
            for j in range(len(needs)):
                fr = requests[j][0]
                amount = needs[j]
                used = usage.get(fr, 0)
                if subtree.get(fr, 0) < used + amount:
                    fits = False
                own = local.get(fr, 0)
                free = own - used if own > used else 0
                needs[j] = amount - free if amount > free else 0
            if fits:
                return path, level
            level += 1
            node = node.parent
        return path, level

    def borrowing_children(self, cohort: str, frs: list[FlavorResource]) -> list[tuple[str, str]]:
        """From the Cohort's ``over`` index: child Cohorts above their subtree quota on any
        flavor-resource, child ClusterQueues above their nominal quota on one of ``frs``, sorted."""
        node = self._cohorts.get(cohort)
        if node is None:
            return []
        found: dict[tuple[bool, str], bool] = {}
        for fr, index in node.over.items():
            needed = fr in frs
            for key in index:
                if needed or not key[0]:
                    found[key] = True
        return sorted((CLUSTER_QUEUE if is_cq else COHORT, name) for is_cq, name in found)


def _load_quota(node: QuotaNode, quota: list) -> None:
    node.nominal, node.borrowing_limit, node.lending_limit = (_quota_rows(q) for q in quota)
    for fr in sorted(set(node.nominal) | set(node.lending_limit)):
        _recompute_quota(node, fr)
