"""The node inventory of one cluster: core ``v1`` ``Node`` objects and the cluster's capacity.

A ``NodeLedger`` keeps every applied ``Node`` (allocatable in integer base units per resource,
labels, taints, ``spec.unschedulable``) by name, and the per-resource sum of ``status.allocatable``
over the *schedulable* nodes (``spec.unschedulable`` false) — the cluster's total capacity as
EVENTS.md defines it for the models that need one (Koordinator's root quota, Volcano's deserved).
The totals are kept incrementally: applying, replacing or deleting a node costs O(its resources),
never O(nodes).  Taints do not take a node out of the totals (a taint keeps pods away only if
they do not tolerate it; that is placement's business), only ``unschedulable`` does.

Placement state (docs/placement.md): per node what placed pods hold (``allocated``, integer base
units) and which workloads hold it; per ``Topology`` a ``TopologyTree`` whose domains keep their
free capacity; and the cluster-wide free capacity over schedulable nodes.  ``allocate`` /
``release`` cost O(resources × (1 + levels of each topology)), never O(nodes).  A node replaced by
a new version keeps its allocations; a node's free capacity is ``allocatable - allocated`` while
it is schedulable and nothing while it is not.

Determinism: every listing is sorted by node name or resource name; insertion order never shows.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Final

from statemodel.objects import Node, Taint, Topology
from statemodel.placement.node_order import BinpackOrder
from statemodel.placement.topology import TopologyTree
from statemodel.quantity import add_amounts

MAX_FILTERED_ORDERS: Final = 32
"""Kept filtered binpack orders (``NodeLedger.filtered_order``) at most: building one more drops
the least recently used (rebuilt on its next use), so memory and the cost of a charge stay bounded
however many distinct node constraints the pod sets bring."""


def node_document(node: Node) -> dict:
    """One node as JSON-ready data: ``name``, ``labels`` and ``allocatable`` (base units) as maps,
    ``unschedulable``, ``taints`` as ``[key, value, effect]`` lists in the object's order.  The
    snapshot entry of a node (``NodeLedger.document``)."""
    return {"name": node.name, "labels": dict(node.labels), "allocatable": dict(node.allocatable),
            "unschedulable": node.unschedulable, "taints": [[t.key, t.value, t.effect] for t in node.taints]}


def node_from_document(doc: dict) -> Node:
    """The ``Node`` of a ``node_document`` (labels and allocatable sorted by name, as the parser
    builds them).

    Raises:
        KeyError / TypeError / ValueError: ``doc`` is not a node document.
    """
    return Node(doc["name"], tuple(sorted(doc["labels"].items())), tuple(sorted(doc["allocatable"].items())),
                bool(doc["unschedulable"]), tuple(Taint(k, v, e) for k, v, e in doc["taints"]))


class NodeLedger:
    """The nodes of one cluster by name, with per-resource totals over the schedulable ones.

    Read API: ``get(name)``, ``len``, ``in``, ``names()`` and ``nodes()`` (sorted by name),
    ``total(resource) -> int`` and ``totals() -> {resource: int}`` (base units: millicores for
    cpu, bytes for memory, counts otherwise), ``view()`` (the state JSON section),
    ``document()`` / ``from_document()`` (the snapshot section).
    """

    __slots__ = ("_nodes", "_totals", "_allocated", "_holders", "_free", "_node_free", "_labels", "_names",
                 "_plain", "_allocatable", "_largest", "_orders", "_filtered", "topologies", "_topology_objects")

    def __init__(self) -> None:
        self._nodes: dict[str, Node] = {}
        self._totals: dict[str, int] = {}
        """resource -> sum of allocatable over schedulable nodes; resources whose sum is 0 absent"""
        self._allocated: dict[str, dict[str, int]] = {}
        """node -> resource -> what placed pods hold there (nodes holding nothing absent)"""
        self._holders: dict[str, dict[str, int]] = {}
        """node -> workload key -> pods it has there"""
        self._free: dict[str, int] = {}
        """resource -> free capacity summed over schedulable nodes"""
        self._node_free: dict[str, dict[str, int]] = {}
        """node -> resource -> free (``allocatable - allocated``; ``{}`` while unschedulable)"""
        self._labels: dict[str, dict[str, str]] = {}
        """node -> its labels as a map"""
        self._plain: dict[str, None] = {}
        """the open nodes: schedulable, no NoSchedule / NoExecute taint (any pod without node
        constraints may go there)"""
        self._allocatable: dict[str, dict[str, int]] = {}
        self._largest: dict[str, int] | None = None
        """resource -> largest allocatable over the nodes (``None`` until computed again)"""
        self._orders: dict[tuple[str, ...], BinpackOrder] = {}
        """requested resources -> the open nodes in binpack order (built on first use)"""
        self._filtered: dict[tuple[tuple[str, ...], Hashable], BinpackOrder] = {}
        """(requested resources, node filter) -> the nodes the filter admits in binpack order
        (built on first use; a node's membership is decided again only when it is applied), least
        recently used first, at most ``MAX_FILTERED_ORDERS``"""
        self._names: list[str] | None = []
        """the node names, sorted (``None`` until listed again after a node came or went)"""
        self.topologies: dict[str, TopologyTree] = {}
        self._topology_objects: dict[str, Topology] = {}

    def apply(self, node: Node) -> None:
        """Add ``node``, or replace the node of the same name (its old allocatable leaves the totals
        first; its allocations stay).  O(resources × topology levels)."""
        old = self._nodes.get(node.name)
        if old is not None:
            self._count(old, -1)
        else:
            self._names = None
        self._nodes[node.name] = node
        self._labels[node.name] = dict(node.labels)
        self._allocatable[node.name] = dict(node.allocatable)
        self._largest = None
        self._node_free[node.name] = self._compute_free(node)
        if node.unschedulable or any(t.effect != "PreferNoSchedule" for t in node.taints):
            self._plain.pop(node.name, None)
            for order in self._orders.values():
                order.drop(node.name)
        else:
            self._plain[node.name] = None
            for order in self._orders.values():
                order.put(node.name, self._node_free[node.name], self._allocatable[node.name])
        labels = self._labels[node.name]
        for order in self._filtered.values():
            if order.admits(node, labels):  # type: ignore[misc]
                order.put(node.name, self._node_free[node.name], self._allocatable[node.name])
            else:
                order.drop(node.name)
        self._count(node, 1)

    def delete(self, name: str) -> Node | None:
        """Remove the node ``name``; returns it, or ``None`` when there was none (a no-op).  What
        was allocated on it is forgotten (the caller evicts its holders first)."""
        old = self._nodes.get(name)
        if old is not None:
            self._count(old, -1)
            del self._nodes[name]
            del self._node_free[name]
            del self._labels[name]
            del self._allocatable[name]
            self._largest = None
            self._plain.pop(name, None)
            for order in self._orders.values():
                order.drop(name)
            for order in self._filtered.values():
                order.drop(name)
            self._allocated.pop(name, None)
            self._holders.pop(name, None)
            self._names = None
        return old

    def _count(self, node: Node, sign: int) -> None:
        """Add (``sign`` 1) or take out (-1) ``node`` from the totals, the free sums and the topologies."""
        free = self.free(node.name)
        if sign < 0:
            for tree in self.topologies.values():
                tree.remove(node.name, free)
        else:
            labels = dict(node.labels)
            for tree in self.topologies.values():
                tree.add(node.name, labels, free)
        add_amounts(self._free, free, sign)
        if node.unschedulable:
            return
        totals = self._totals
        for resource, amount in node.allocatable:
            total = totals.get(resource, 0) + sign * amount
            if total:
                totals[resource] = total
            else:
                totals.pop(resource, None)

    # -- placement ---------------------------------------------------------------------------

    def free(self, name: str) -> dict[str, int]:
        """What node ``name`` has free per resource (``allocatable - allocated``; ``{}`` when it is
        unschedulable or unknown).  Base units.  The ledger's own map, kept incrementally: read it,
        do not change it."""
        return self._node_free.get(name, _EMPTY)

    def _compute_free(self, node: Node) -> dict[str, int]:
        if node.unschedulable:
            return {}
        allocated = self._allocated.get(node.name)
        if allocated is None:
            return dict(node.allocatable)
        out = dict(node.allocatable)
        for res, amount in allocated.items():
            out[res] = out.get(res, 0) - amount
        return out

    def labels(self, name: str) -> dict[str, str]:
        """The labels of node ``name`` as a map (the ledger's own: read only; ``{}`` when unknown)."""
        return self._labels.get(name, {})

    def plain(self) -> dict[str, None]:
        """Names of the open nodes: schedulable, without a ``NoSchedule`` / ``NoExecute`` taint (the
        ledger's own map: read only)."""
        return self._plain

    def allocatable(self, name: str) -> dict[str, int]:
        """Node ``name``'s allocatable as a map (the ledger's own: read only; ``{}`` when unknown)."""
        return self._allocatable.get(name, {})

    def binpack_order(self, resources: tuple[str, ...]) -> BinpackOrder:
        """The open nodes in binpack order for pods requesting ``resources`` (in
        ``node_order.key_resources`` order; ``statemodel.placement.node_order``; the ledger's own:
        read only).  Built on first use, O(nodes log nodes); kept up to date after that."""
        order = self._orders.get(resources)
        if order is None:
            order = self._orders[resources] = BinpackOrder(resources)
            for name in self._plain:
                order.put(name, self._node_free[name], self._allocatable[name])
        return order

    def filtered_order(self, resources: tuple[str, ...], signature: Hashable,
                       admits: Callable[[Node, dict[str, str]], bool]) -> BinpackOrder:
        """The nodes ``admits(node, labels)`` lets pods on, in binpack order for pods requesting
        ``resources`` (as ``binpack_order``); ``signature`` names the filter (equal signatures must
        mean equal filters).  Built on first use, O(nodes log nodes); after that kept up to date on
        every charge and release (O(log nodes) per order holding the node) and node change (the
        filter is asked again for that node only).  At most ``MAX_FILTERED_ORDERS`` are kept: a new
        one drops the least recently used, rebuilt when next asked for (an order is a function of
        the nodes, so which ones are kept never changes a placement).  The ledger's own: read only."""
        key = (resources, signature)
        filtered = self._filtered
        order = filtered.pop(key, None)
        if order is None:
            order = BinpackOrder(resources, admits)
            labels = self._labels
            for name, node in self._nodes.items():
                if admits(node, labels[name]):
                    order.put(name, self._node_free[name], self._allocatable[name])
            if len(filtered) >= MAX_FILTERED_ORDERS:
                del filtered[next(iter(filtered))]
        filtered[key] = order
        return order

    def largest_allocatable(self, resource: str) -> int:
        """The largest allocatable of ``resource`` over the nodes (0 when none has it); O(nodes)
        after a node came, went or changed, else cached."""
        cached = self._largest
        if cached is None:
            cached = self._largest = {}
            for allocatable in self._allocatable.values():
                for res, amount in allocatable.items():
                    if amount > cached.get(res, 0):
                        cached[res] = amount
        return cached.get(resource, 0)

    def free_of(self) -> dict[str, dict[str, int]]:
        """Every node's ``free`` map by name (the ledger's own: read only)."""
        return self._node_free

    def free_totals(self) -> dict[str, int]:
        """Free capacity per resource summed over the schedulable nodes (base units)."""
        return self._free

    def allocated(self, name: str) -> dict[str, int]:
        """What placed pods hold on node ``name`` per resource (``{}`` when nothing)."""
        return self._allocated.get(name, {})

    def holders(self, name: str) -> list[str]:
        """Keys of the workloads with pods on node ``name``, sorted."""
        return sorted(self._holders.get(name, {}))

    def allocate(self, key: str, name: str, pods: int, amounts: dict[str, int], sign: int = 1) -> None:
        """Charge (``sign`` 1) or give back (-1) ``amounts`` (the total of ``pods`` pods of workload
        ``key``) on node ``name``; the domains and the free sums follow.  Unknown nodes are
        ignored (an observed admission may name a node the engine has not seen)."""
        node = self._nodes.get(name)
        if node is None:
            return
        allocated = self._allocated.setdefault(name, {})
        add_amounts(allocated, amounts, sign)
        if not allocated:
            del self._allocated[name]
        holders = self._holders.setdefault(name, {})
        left = holders.get(key, 0) + sign * pods
        if left > 0:
            holders[key] = left
        else:
            holders.pop(key, None)
            if not holders:
                del self._holders[name]
        if node.unschedulable:
            return
        add_amounts(self._node_free[name], amounts, -sign)
        if name in self._plain:
            for order in self._orders.values():
                order.put(name, self._node_free[name], self._allocatable[name])
        for order in self._filtered.values():
            if name in order.keys:
                order.put(name, self._node_free[name], self._allocatable[name])
        add_amounts(self._free, amounts, -sign)
        for tree in self.topologies.values():
            tree.change(name, amounts, -sign)

    def apply_topology(self, topology: Topology) -> None:
        """Add or replace a ``Topology``: its tree is built over the current nodes (O(nodes × levels))."""
        tree = TopologyTree(topology)
        for node in self._nodes.values():
            tree.add(node.name, dict(node.labels), self.free(node.name))
        self.topologies[topology.name] = tree
        self._topology_objects[topology.name] = topology

    def delete_topology(self, name: str) -> bool:
        """Remove the ``Topology`` ``name``; whether there was one."""
        self._topology_objects.pop(name, None)
        return self.topologies.pop(name, None) is not None

    def topology_objects(self) -> list[Topology]:
        """The applied ``Topology`` objects, sorted by name."""
        return [self._topology_objects[n] for n in sorted(self._topology_objects)]

    def get(self, name: str) -> Node | None:
        """The node ``name``, or ``None``."""
        return self._nodes.get(name)

    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, name: object) -> bool:
        return name in self._nodes

    def names(self) -> list[str]:
        """Node names, sorted (the ledger's own list, kept until a node comes or goes: read only)."""
        names = self._names
        if names is None:
            names = self._names = sorted(self._nodes)
        return names

    def nodes(self) -> list[Node]:
        """The nodes, sorted by name."""
        nodes = self._nodes
        return [nodes[name] for name in sorted(nodes)]

    def total(self, resource: str) -> int:
        """Sum of ``resource`` allocatable over the schedulable nodes (base units; 0 when none has it)."""
        return self._totals.get(resource, 0)

    def totals(self) -> dict[str, int]:
        """Every resource's ``total``, sorted by resource name; resources summing to 0 are left out."""
        return dict(sorted(self._totals.items()))

    def view(self) -> dict:
        """The state JSON's ``nodes`` section: by node name (sorted), ``allocatable`` and
        ``allocated`` (base units, resources sorted), ``labels``, ``taints`` (``{key, value,
        effect}`` objects), ``unschedulable`` and ``workloads`` (keys of the workloads with pods
        there, sorted)."""
        return {node.name: {"allocatable": dict(node.allocatable),
                            "allocated": dict(sorted(self.allocated(node.name).items())),
                            "labels": dict(node.labels),
                            "taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in node.taints],
                            "unschedulable": node.unschedulable, "workloads": self.holders(node.name)}
                for node in self.nodes()}

    def topology_view(self) -> dict:
        """The state JSON's ``topologies`` section: by Topology name (sorted), ``levels`` and
        ``domains`` — per level label, domain ID (sorted) -> ``{nodes, free}`` (node count, free
        base units per resource, sorted)."""
        out = {}
        for name in sorted(self.topologies):
            tree = self.topologies[name]
            out[name] = {"levels": list(tree.levels), "domains": {
                label: {d_id: {"nodes": len(d.nodes), "free": dict(sorted(d.free.items()))}
                        for d_id, d in sorted(tree.by_level[i].items())}
                for i, label in enumerate(tree.levels)}}
        return out

    def document(self) -> list[dict]:
        """The ledger's snapshot document: ``node_document`` of every node, sorted by name (the
        totals are derived, so not stored)."""
        return [node_document(node) for node in self.nodes()]

    @classmethod
    def from_document(cls, doc: list[dict]) -> "NodeLedger":
        """The ledger of a ``document`` (totals recomputed).

        Raises:
            KeyError / TypeError / ValueError: ``doc`` is not a ledger document.
        """
        ledger = cls()
        for entry in doc:
            ledger.apply(node_from_document(entry))
        return ledger


_EMPTY: dict[str, int] = {}
