"""A node inventory as the engine's input objects: ``v1`` ``Node``, Kueue ``ResourceFlavor`` and
``kueue.x-k8s.io/v1alpha1`` ``Topology``, each as ``kubectl get -o json`` prints it (EVENTS.md
"Additions ... placement").

What every node importer returns (:class:`NodeInventory`) and the builders they share, so a Node
or a Topology is shaped in one place:

* ``Node``: ``metadata.name``, ``metadata.labels``, ``status.allocatable`` (quantity strings of
  integer base units), and ``spec.unschedulable`` / ``spec.taints`` only when set.
* ``Topology``: ``spec.levels[].nodeLabel``, top level first (Kueue's and KAI's CRD shape; KAI
  builds a domain's id from the label values top-down, so a rack label value reused under two
  spines names two racks).
* ``ResourceFlavor``: ``spec.nodeLabels`` (the labels that select its nodes) and, over a
  topology, ``spec.topologyName`` (Kueue TAS).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from replay.sim.importers.jobs import BadRow, quantity_string

__all__ = ["NodeInventory", "node_object", "topology_object", "flavor_object", "capacity_of",
           "TOPOLOGY_API", "FLAVOR_API", "HOSTNAME_LABEL"]

TOPOLOGY_API = "kueue.x-k8s.io/v1alpha1"
FLAVOR_API = "kueue.x-k8s.io/v1beta2"
HOSTNAME_LABEL = "kubernetes.io/hostname"
"""The well-known node label Kueue and KAI accept as the lowest topology level only."""


@dataclass(slots=True)
class NodeInventory:
    """The nodes of a cluster and what selects them.

    Attributes:
        name: the inventory's name (``openb``, ``lingjun``, or the mapping's ``name``).
        nodes: ``v1`` ``Node`` objects in file order.
        flavors: ResourceFlavor objects selecting the nodes (one per value of the flavor label).
        capacity: per flavor, the summed node allocatable in base units (the quota generator shares
            a job's demand over flavors by it: ``replay.sim.quota_tree.flavor_weights``).
        topologies: ``Topology`` objects over the nodes' labels (empty without a topology).
        bad_rows: rows skipped, with their line numbers and reasons.
    """

    name: str
    nodes: list[dict] = field(default_factory=list)
    flavors: list[dict] = field(default_factory=list)
    capacity: dict[str, dict[str, int]] = field(default_factory=dict)
    topologies: list[dict] = field(default_factory=list)
    bad_rows: list[BadRow] = field(default_factory=list)


def node_object(name: str, labels: dict[str, str], allocatable: dict[str, int], unschedulable: bool = False,
                taints: list[dict] | None = None) -> dict:
    """A ``v1`` ``Node``: ``allocatable`` in base units (cpu millicores, bytes, counts) becomes
    quantity strings (``replay.sim.importers.jobs.quantity_string``, read back exactly by the
    engine); ``spec`` only when the node is unschedulable or tainted."""
    obj: dict = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": dict(labels)},
                 "status": {"allocatable": {r: quantity_string(r, a) for r, a in allocatable.items()}}}
    spec: dict = {}
    if unschedulable:
        spec["unschedulable"] = True
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    if spec:
        obj["spec"] = spec
    return obj


def topology_object(name: str, levels: list[str]) -> dict:
    """A ``kueue.x-k8s.io/v1alpha1`` ``Topology`` with ``spec.levels`` (node labels, top level first)."""
    return {"apiVersion": TOPOLOGY_API, "kind": "Topology", "metadata": {"name": name},
            "spec": {"levels": [{"nodeLabel": label} for label in levels]}}


def flavor_object(name: str, node_labels: dict[str, str], topology: str | None = None) -> dict:
    """A ResourceFlavor selecting the nodes that carry ``node_labels``; with ``topology``, its
    ``spec.topologyName`` (Kueue TAS: the flavor's nodes form that topology's domains)."""
    spec: dict = {"nodeLabels": dict(node_labels)}
    if topology is not None:
        spec["topologyName"] = topology
    return {"apiVersion": FLAVOR_API, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def capacity_of(groups: dict[str, list[dict[str, int]]]) -> dict[str, dict[str, int]]:
    """Per flavor, the per-resource sum of its nodes' allocatable (``groups``: flavor → the
    nodes' allocatable in base units); flavors and resources in the order first seen."""
    out: dict[str, dict[str, int]] = {}
    for flavor, allocs in groups.items():
        cap = out.setdefault(flavor, {})
        for alloc in allocs:
            for res, amount in alloc.items():
                cap[res] = cap.get(res, 0) + amount
    return out
