"""The node inventory of one cluster: core ``v1`` ``Node`` objects and the cluster's capacity.

A ``NodeLedger`` keeps every applied ``Node`` (allocatable in integer base units per resource,
labels, taints, ``spec.unschedulable``) by name, and the per-resource sum of ``status.allocatable``
over the *schedulable* nodes (``spec.unschedulable`` false) — the cluster's total capacity as
EVENTS.md defines it for the models that need one (Koordinator's root quota, Volcano's deserved).
The totals are kept incrementally: applying, replacing or deleting a node costs O(its resources),
never O(nodes).  Taints do not take a node out of the totals (a taint keeps pods away only if
they do not tolerate it; that is placement's business), only ``unschedulable`` does.

Determinism: every listing is sorted by node name or resource name; insertion order never shows.
"""

from __future__ import annotations

from statemodel.objects import Node, Taint


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

    __slots__ = ("_nodes", "_totals")

    def __init__(self) -> None:
        self._nodes: dict[str, Node] = {}
        self._totals: dict[str, int] = {}
        """resource -> sum of allocatable over schedulable nodes; resources whose sum is 0 absent"""

    def apply(self, node: Node) -> None:
        """Add ``node``, or replace the node of the same name (its old allocatable leaves the totals
        first).  O(resources of the old and the new object)."""
        old = self._nodes.get(node.name)
        if old is not None:
            self._count(old, -1)
        self._nodes[node.name] = node
        self._count(node, 1)

    def delete(self, name: str) -> Node | None:
        """Remove the node ``name``; returns it, or ``None`` when there was none (a no-op)."""
        old = self._nodes.pop(name, None)
        if old is not None:
            self._count(old, -1)
        return old

    def _count(self, node: Node, sign: int) -> None:
        if node.unschedulable:
            return
        totals = self._totals
        for resource, amount in node.allocatable:
            total = totals.get(resource, 0) + sign * amount
            if total:
                totals[resource] = total
            else:
                totals.pop(resource, None)

    def get(self, name: str) -> Node | None:
        """The node ``name``, or ``None``."""
        return self._nodes.get(name)

    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, name: object) -> bool:
        return name in self._nodes

    def names(self) -> list[str]:
        """Node names, sorted."""
        return sorted(self._nodes)

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
        """The state JSON's ``nodes`` section: by node name (sorted), ``allocatable`` (base units),
        ``labels``, ``taints`` (``{key, value, effect}`` objects) and ``unschedulable``."""
        return {node.name: {"allocatable": dict(node.allocatable), "labels": dict(node.labels),
                            "taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in node.taints],
                            "unschedulable": node.unschedulable}
                for node in self.nodes()}

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
