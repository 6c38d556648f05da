"""KEP-79 quota arithmetic on one node of the cohort tree, maintained incrementally.

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

from statemodel.objects import FlavorResource, ResourceGroup


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
            (1 when it has only ClusterQueue children, 0 when it has none).
    """

    __slots__ = (
        "name", "is_cluster_queue", "parent", "nominal", "borrowing_limit", "lending_limit",
        "child_quota", "subtree", "local", "usage", "cohort_children", "cq_children", "height",
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


def _recompute_quota(node: QuotaNode, fr: FlavorResource) -> None:
    """Recompute ``subtree`` and ``local`` of one node for one fr from its spec and children."""
    sub = node.nominal.get(fr, 0) + node.child_quota.get(fr, 0)
    node.subtree[fr] = sub
    ll = node.lending_limit.get(fr)
    node.local[fr] = sub - ll if ll is not None and sub > ll else 0


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
                fr = (flavor.name, quota.name)
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
        parent = node.parent
        if parent is None:
            return
        spill = (new - local if new > local else 0) - (old - local if old > local else 0)
        if spill == 0:
            return
        node = parent
        amount = spill


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


def borrowing_height(cq: QuotaNode, fr: FlavorResource, amount: int) -> int:
    """Kueue ``FindHeightOfLowestSubtreeThatFits``: 0 if ``amount`` more fits in the ClusterQueue's
    nominal quota (or it has no cohort); else the height of the lowest cohort whose subtree quota
    covers what has to be borrowed.  O(depth)."""
    if cq.parent is None or cq.nominal.get(fr, 0) >= cq.usage.get(fr, 0) + amount:
        return 0
    remaining = amount - local_available(cq, fr)
    node = cq.parent
    while True:
        if node.subtree.get(fr, 0) >= node.usage.get(fr, 0) + remaining:
            return node.height
        if node.parent is None:
            return node.height
        remaining -= local_available(node, fr)
        node = node.parent


def _update_height(node: QuotaNode | None) -> None:
    """Recompute cohort heights from ``node`` upwards while they change."""
    while node is not None:
        height = 1 if (node.cq_children or node.cohort_children) else 0
        for child in node.cohort_children.values():
            if child.height + 1 > height:
                height = child.height + 1
        if height == node.height:
            return
        node.height = height
        node = node.parent


def link(child: QuotaNode, parent: QuotaNode) -> None:
    """Attach ``child`` under ``parent``: its visible quota and spilled usage join the parent's chain."""
    child.parent = parent
    if child.is_cluster_queue:
        parent.cq_children += 1
    else:
        parent.cohort_children[child.name] = child
    for fr in sorted(set(child.subtree) | set(child.usage)):
        quota_up, usage_up = _contribution(child, fr)
        before = _contribution(parent, fr)
        if quota_up:
            parent.child_quota[fr] = parent.child_quota.get(fr, 0) + quota_up
        _recompute_quota(parent, fr)
        if usage_up:
            parent.usage[fr] = parent.usage.get(fr, 0) + usage_up
        _propagate(parent, fr, before)
    _update_height(parent)


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
    child.parent = None
    _update_height(parent)
