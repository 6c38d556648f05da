"""The binpack node order kept sorted, so an unconstrained pod set finds its nodes without visiting
every node (docs/placement.md "Costs").

The binpack key of a node for a set of requested resources ``R`` is Σ over ``r`` in ``R`` of
``free_r · 10000 // allocatable_r`` (0 for a resource the node lacks): its free share, in basis
points, of the resources a pod asks for (``statemodel.placement.nodesets``).  ``BinpackOrder`` keeps
the *open* nodes (schedulable, no ``NoSchedule`` / ``NoExecute`` taint: any pod without node
constraints may go there) sorted by ``(key, name)`` for one ``R``; the ledger updates it whenever a
node's free capacity changes, O(log n) to find plus a C-level list shift.  Iterating it from the
start gives exactly the binpack order of a scan over every open node.
"""

from __future__ import annotations

from bisect import bisect_left, insort


def fullness(free: dict[str, int], allocatable: dict[str, int], resources: tuple[str, ...]) -> int:
    """The binpack key (module docstring)."""
    key = 0
    for res in resources:
        cap = allocatable.get(res, 0)
        if cap > 0:
            key += free.get(res, 0) * 10000 // cap
    return key


class BinpackOrder:
    """Open nodes sorted by ``(binpack key for resources, name)``.  ``entries`` is the sorted list
    (read only); ``keys`` node -> its key."""

    __slots__ = ("resources", "entries", "keys")

    def __init__(self, resources: tuple[str, ...]) -> None:
        self.resources = resources
        self.entries: list[tuple[int, str]] = []
        self.keys: dict[str, int] = {}

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
