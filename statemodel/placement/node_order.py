"""The binpack node order, and that order kept sorted so an unconstrained pod set finds its nodes
without visiting every node (docs/placement.md "Costs").

The binpack key of a node for the resources ``R`` a pod asks for is, per resource of ``R`` in
``key_resources`` order — extended resources (GPUs and the like) by name first, then ``cpu``, then
``memory``: the scarce devices decide first — its free share in basis points,
``free_r · 10000 // allocatable_r`` (0 for a resource the node lacks); keys compare as tuples,
smaller (fuller) first.  ``BinpackOrder`` keeps the *open* nodes (schedulable, no ``NoSchedule`` /
``NoExecute`` taint: any pod without node constraints may go there) sorted by ``(key, name)`` for
one ``R``; the ledger updates it whenever a node's free capacity changes (a bisection plus a
C-level list shift).  The ledger keeps one such order per set of requested resources over the open
nodes, and one per (resources, node filter) over the nodes a pod set's node constraints admit
(flavor ``nodeLabels``, ``nodeSelector``, required node affinity, tolerations: ``admits``), so a
constrained pod set does not match every node again either.  A node can take a pod only if its first key component is at least
``request · 10000 // the largest allocatable of that resource``, so a walk starts there
(``start``); walking on gives exactly the binpack order of a scan over every open node.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable

from statemodel.objects import Node

_LAST = {"cpu": 1, "memory": 2}


def key_resources(resources: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """``resources`` in key order: extended resources by name, then ``cpu``, then ``memory``."""
    return tuple(sorted(resources, key=lambda r: (_LAST.get(r, 0), r)))


def fullness(free: dict[str, int], allocatable: dict[str, int], resources: tuple[str, ...]) -> tuple[int, ...]:
    """The binpack key over ``resources`` (already in ``key_resources`` order; module docstring)."""
    out = []
    for res in resources:
        cap = allocatable.get(res, 0)
        out.append(free.get(res, 0) * 10000 // cap if cap > 0 else 0)
    return tuple(out)


class BinpackOrder:
    """Nodes sorted by ``(binpack key for resources, name)``: the open nodes, or — with ``admits``
    (``admits(node, labels)``: whether a pod set's node constraints let its pods on the node) —
    the nodes it admits.  ``entries`` is the sorted list (read only); ``keys`` node -> its key."""

    __slots__ = ("resources", "admits", "entries", "keys")

    def __init__(self, resources: tuple[str, ...],
                 admits: Callable[[Node, dict[str, str]], bool] | None = None) -> None:
        self.resources = resources
        self.admits = admits
        self.entries: list[tuple[tuple[int, ...], str]] = []
        self.keys: dict[str, tuple[int, ...]] = {}

    def put(self, name: str, free: dict[str, int], allocatable: dict[str, int]) -> None:
        """Add node ``name`` or move it to its new key."""
        self.drop(name)
        key = fullness(free, allocatable, self.resources)
        self.keys[name] = key
        insort(self.entries, (key, name))

    def drop(self, name: str) -> None:
        """Take node ``name`` out (no-op when absent)."""
        old = self.keys.pop(name, None)
        if old is not None:
            entries = self.entries
            del entries[bisect_left(entries, (old, name))]

    def start(self, first_request: int, largest_allocatable: int) -> int:
        """Index of the first entry that could take a pod asking ``first_request`` of the first
        key resource, when no node has more than ``largest_allocatable`` of it."""
        if largest_allocatable <= 0:
            return len(self.entries)
        return bisect_left(self.entries, ((first_request * 10000 // largest_allocatable,), ""))
