"""Topology domains over the nodes of one cluster, with free capacity kept per domain.

A ``TopologyTree`` is built from one ``Topology`` (levels of node labels, top level first) as KAI's
topology plugin builds it (reference/kai.md §1, ``initializeTopologyTree`` /
``addNodeDataToTopology`` / ``calcDomainId``):

* a node that has **every** level label belongs to one domain per level, plus the synthetic
  ``root`` domain; a node lacking any level label is outside the topology;
* a domain's ID is the node's label values from the top level down to the domain's level, joined
  by ``.`` (rack ``r1`` of zone ``z1`` is ``z1.r1``), so equal names under different parents stay
  distinct.

Each domain keeps ``free`` — per resource, the sum over its nodes of what the node has free
(``allocatable - allocated``, 0 on an unschedulable node) — incrementally: adding, removing or
changing the free capacity of a node costs O(levels × resources), never O(nodes).  Domain
``nodes`` are kept as insertion-ordered dicts and listed sorted, so nothing depends on hash order.
"""

from __future__ import annotations

from statemodel.objects import Topology
from statemodel.quantity import add_amounts

ROOT = "root"
"""ID (and level name) of the synthetic top domain."""


class Domain:
    """One topology domain.

    Attributes:
        id: the dotted label values down to this level (``ROOT`` for the root).
        level: index into the tree's levels (-1 for the root).  value: this level's label value.
        parent: the enclosing domain (``None`` for the root).  children: by ID.
        nodes: names of the member nodes (values unused).  free: resource -> free base units.
    """

    __slots__ = ("id", "level", "value", "parent", "children", "nodes", "free")

    def __init__(self, domain_id: str, level: int, value: str, parent: "Domain | None") -> None:
        self.id = domain_id
        self.level = level
        self.value = value
        self.parent = parent
        self.children: dict[str, Domain] = {}
        self.nodes: dict[str, None] = {}
        self.free: dict[str, int] = {}

    def path(self) -> list["Domain"]:
        """This domain and its ancestors up to (and including) the root, bottom first."""
        out: list[Domain] = []
        d: Domain | None = self
        while d is not None:
            out.append(d)
            d = d.parent
        return out

    def contains(self, other: "Domain") -> bool:
        """Whether ``other`` is this domain or lies inside it."""
        d: Domain | None = other
        while d is not None and d.level >= self.level:
            if d is self:
                return True
            d = d.parent
        return False


class TopologyTree:
    """The domains of one ``Topology`` over the nodes that carry all its level labels.

    Read API: ``levels``, ``root``, ``level_index(label)``, ``by_level[i]`` (domain ID -> Domain),
    ``leaf(node)`` (the node's deepest domain, ``None`` when outside), ``values(node)`` (its label
    values, top first).
    """

    __slots__ = ("name", "levels", "root", "by_level", "_leaf")

    def __init__(self, topology: Topology) -> None:
        self.name = topology.name
        self.levels = topology.levels
        self.root = Domain(ROOT, -1, ROOT, None)
        self.by_level: list[dict[str, Domain]] = [{} for _ in topology.levels]
        self._leaf: dict[str, Domain] = {}

    def level_index(self, label: str) -> int | None:
        """Index of the level whose node label is ``label``, or ``None``."""
        try:
            return self.levels.index(label)
        except ValueError:
            return None

    def leaf(self, node: str) -> Domain | None:
        """The deepest domain of ``node``, ``None`` when the node is outside the topology."""
        return self._leaf.get(node)

    def values(self, node: str) -> list[str]:
        """The node's label values for every level, top first (``[]`` when outside)."""
        leaf = self._leaf.get(node)
        return [] if leaf is None else [d.value for d in reversed(leaf.path()[:-1])]

    def add(self, name: str, labels: dict[str, str], free: dict[str, int]) -> None:
        """Add node ``name`` (with ``labels``) holding ``free`` to its domains, if it has every level label."""
        values = []
        for label in self.levels:
            value = labels.get(label)
            if value is None:
                return
            values.append(value)
        parent = self.root
        parent.nodes[name] = None
        domain_id = ""
        for i, value in enumerate(values):
            domain_id = value if i == 0 else f"{domain_id}.{value}"
            d = parent.children.get(domain_id)
            if d is None:
                d = parent.children[domain_id] = self.by_level[i][domain_id] = Domain(domain_id, i, value, parent)
            d.nodes[name] = None
            parent = d
        self._leaf[name] = parent
        self.change(name, free, 1)

    def remove(self, name: str, free: dict[str, int]) -> None:
        """Take node ``name`` (holding ``free``) out; domains left without nodes disappear."""
        leaf = self._leaf.pop(name, None)
        if leaf is None:
            return
        for d in leaf.path():
            add_amounts(d.free, free, -1)
            del d.nodes[name]
            if not d.nodes and d.parent is not None:
                del d.parent.children[d.id]
                del self.by_level[d.level][d.id]

    def change(self, name: str, delta: dict[str, int], sign: int) -> None:
        """Add ``sign × delta`` to the free capacity of node ``name``'s domains (no-op when outside)."""
        leaf = self._leaf.get(name)
        if leaf is None:
            return
        d: Domain | None = leaf
        while d is not None:
            add_amounts(d.free, delta, sign)
            d = d.parent
