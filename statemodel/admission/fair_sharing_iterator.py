"""The order of a cycle's heads under fair sharing: Kueue's DRS tournament (``fair_sharing_iterator.go``).

Used instead of the classical order when ``EngineConfig.spec.fairSharing.enable`` (reference/kueue.md
§3.3).  Each pop runs a tournament over the cohort tree of one pool: every Cohort offers one head,
the best of its children's offers — a child ClusterQueue offers its head, a child Cohort the winner
of its own tournament — and the root's winner is popped.  At a Cohort, an offer is ranked by:

0. a preemptor whose victims' quota was just released (``releaseOn: Decision``) first, as in the
   classical order (Kueue's ``PrioritizePreemptorWorkloads``), so the quota goes to it;
1. whether the child node (the ClusterQueue, or the child Cohort) would borrow, with the head
   admitted, on a flavor-resource the head asks for — non-borrowing first (Kueue's
   ``FairSharingPrioritizeNonBorrowing``, on by default);
2. the child node's Dominant Resource Share with the head admitted (``Share.order``, Kueue
   ``CompareDRS``) — lower first;
3. higher priority; 4. earlier queue-order time;
5. the ClusterQueue name — our documented final tie-break (Kueue keeps whichever offer came first
   from map iteration).

Pops see the quota as it is then: the caller processes each popped head (admits it, or not) before
asking for the next, so later tournaments include earlier admissions, as in Kueue.  Pools (cohort
trees) are independent, so they are served one after the other in ``PoolKey`` order (Kueue picks a
random ClusterQueue's tree per pop); a ClusterQueue without a cohort is a pool of its own.

Cost: Kueue recomputes every head's share at every level on every pop.  Here a Cohort remembers its
winner and each child's offer, and only the nodes on the path of a ClusterQueue whose head was
popped are recomputed (after a preemption, whose victims may sit anywhere in the tree, everything
is: ``refresh``): a pop costs O(depth × (fan-out + the
model's cost of a simulated charge and a share)), not O(heads × depth).  The shares are the same
numbers Kueue compares: a node's share depends only on its own usage and quota, which change only
on that path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from statemodel.quota.protocol import CLUSTER_QUEUE, PoolKey, QuotaModel, ShareOrder

if TYPE_CHECKING:
    from statemodel.admission.cycle import Candidate

Node = tuple[str, str]
"""A node of the quota tree as ``(kind, name)``."""

OfferKey = tuple[bool, bool, ShareOrder, int, int, str]
"""How an offer ranks at a Cohort (see the module docstring); lower is better."""


class _Tree:
    """The part of one pool's tree that holds this cycle's heads, with the tournament's memory."""

    __slots__ = ("root", "parent", "children", "entries", "best", "offers", "dirty")

    def __init__(self, root: Node) -> None:
        self.root = root
        self.parent: dict[Node, Node] = {}
        self.children: dict[Node, list[Node]] = {}
        self.entries: dict[Node, "Candidate"] = {}
        self.best: dict[Node, "Candidate | None"] = {}
        self.offers: dict[Node, OfferKey] = {}
        self.dirty: set[Node] = set()


class FairSharingIterator:
    """Pops a cycle's candidates in fair-sharing order (see the module docstring).

    Args:
        model: the cluster's quota model (``simulate_charge``, ``share``, ``path``, ``pool``).
        weight: ``(kind, name) -> fairSharing.weight`` in thousandths.
        candidates: the cycle's heads, at most one per ClusterQueue.
    """

    def __init__(self, model: QuotaModel, weight: Callable[[str, str], int], candidates: list["Candidate"]) -> None:
        self.model = model
        self.weight = weight
        self.trees: dict[PoolKey, _Tree] = {}
        for cand in candidates:
            path = [(kind, name) for kind, name in model.path(cand.name)]
            pool = model.pool(cand.name)
            tree = self.trees.get(pool)
            if tree is None:
                tree = self.trees[pool] = _Tree(path[-1])
            tree.entries[path[0]] = cand
            for child, parent in zip(path, path[1:]):
                if child in tree.parent:
                    break
                tree.parent[child] = parent
                tree.children.setdefault(parent, []).append(child)
            tree.dirty.update(path)
        for tree in self.trees.values():
            for kids in tree.children.values():
                kids.sort()

    def __iter__(self) -> Iterator["Candidate"]:
        for pool in sorted(self.trees):
            tree = self.trees[pool]
            while True:
                cand = self._winner(tree, tree.root) if tree.root[0] != CLUSTER_QUEUE else tree.entries.get(tree.root)
                if cand is None:
                    break
                leaf = (CLUSTER_QUEUE, cand.name)
                del tree.entries[leaf]
                self._mark(tree, leaf)
                yield cand

    def refresh(self) -> None:
        """Usage changed elsewhere than at the popped head's ClusterQueue (victims were preempted):
        every offer is recomputed at the next pop."""
        for tree in self.trees.values():
            tree.dirty.update(tree.parent)
            tree.dirty.add(tree.root)

    @staticmethod
    def _mark(tree: _Tree, node: Node | None) -> None:
        while node is not None:
            tree.dirty.add(node)
            node = tree.parent.get(node)

    def _winner(self, tree: _Tree, node: Node) -> "Candidate | None":
        """The head Cohort ``node`` offers its parent (recomputed only when dirty)."""
        if node not in tree.dirty:
            return tree.best.get(node)
        offers: list[tuple[Node, "Candidate"]] = []
        for child in tree.children.get(node, ()):
            if child in tree.dirty:
                tree.offers.pop(child, None)
            if child[0] == CLUSTER_QUEUE:
                tree.dirty.discard(child)
                offer = tree.entries.get(child)
            else:
                offer = self._winner(tree, child)
            if offer is not None:
                offers.append((child, offer))
        best: "Candidate | None" = offers[0][1] if offers else None
        if len(offers) > 1:  # a lone offer needs no share
            best_key: OfferKey | None = None
            for child, offer in offers:
                key = tree.offers.get(child)
                if key is None:
                    key = tree.offers[child] = self._offer_key(child, offer)
                if best_key is None or key < best_key:
                    best, best_key = offer, key
        tree.dirty.discard(node)
        tree.best[node] = best
        return best

    def _offer_key(self, child: Node, cand: "Candidate") -> OfferKey:
        """Rank of ``cand`` offered by ``child``: the child's share with ``cand`` admitted."""
        usage = cand.assignment.usage
        undo = self.model.simulate_charge(cand.name, usage)
        share = self.model.share(child[0], child[1], self.weight(child[0], child[1]))
        undo()
        order = cand.order
        return (not cand.info.preempting, share.borrowing_on(usage), share.order(), order[0], order[1], cand.name)
