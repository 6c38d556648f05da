"""The placement stage of the ``kueue`` model's admission (DESIGN "The engine as stages").

After the quota model says a Workload fits, ``PlacementStage.place`` builds its gang — each podSet
with its assigned flavors' ``nodeLabels`` and topology (``ResourceFlavor.spec.topologyName``), its
constraints, and the Workload's KAI constraint — and places it over NodeSets
(``statemodel.placement.nodesets``).  The stage also keeps who waits for nodes: a Workload whose gang
fits its quota but not the nodes waits (``TopologyPlacementFailed``) until capacity is freed on
nodes — a placed workload's release wakes the waiters whose total request the cluster's free
capacity now covers (a necessary condition; each woken one is placed again), and a configuration
change (a node added, relabelled, uncordoned; a Topology changed) wakes everyone, as it already
does for quota.  Costs: one scan of the waiters per release of a placed workload.
"""

from __future__ import annotations

from statemodel.objects import ResourceFlavor
from statemodel.placement.nodes import NodeLedger
from statemodel.placement.nodesets import GangRequest, Placer, PlacementFailure, PodSetPlaced, PodSetRequest
from statemodel.workload import PodSetAssignment, WorkloadInfo


class PlacementStage:
    """Placement for one cluster: ``place``, ``charge`` (observed nodes), ``release`` and the
    waiters.  ``waiting``: workload key -> (workload, its gang's total request in base units)."""

    def __init__(self) -> None:
        self.waiting: dict[str, tuple[WorkloadInfo, dict[str, int]]] = {}

    def gang(self, info: WorkloadInfo, pod_sets: list[PodSetAssignment],
             flavors: dict[str, ResourceFlavor]) -> GangRequest:
        """The ``GangRequest`` of ``info`` admitted with ``pod_sets`` (its flavor assignment): per
        podSet its per-pod requests, the ``nodeLabels`` of every flavor it was assigned, the topology
        of the first of those flavors (by resource name) naming one — else the Workload's KAI
        topology — and its ``PodSetPlacement``."""
        obj = info.obj
        request = obj.placement
        constraints = {c.pod_set: c for c in request.pod_sets} if request is not None else {}
        kai_topology = request.topology if request is not None else None
        per_pod = {ps.name: ps for ps in obj.pod_sets}
        out = []
        for psa in pod_sets:
            spec = per_pod.get(psa.name)
            if spec is None:
                continue
            labels: dict[str, str] = {}
            topology = None
            for _, flavor_name in sorted(psa.flavors.items()):
                flavor = flavors.get(flavor_name)
                if flavor is None:
                    continue
                labels.update(flavor.node_labels)
                if topology is None:
                    topology = flavor.topology_name
            out.append(PodSetRequest(psa.name, psa.count, dict(spec.requests), tuple(sorted(labels.items())),
                                     constraints.get(psa.name), topology or kai_topology))
        if request is None:
            return GangRequest(info.key, out)
        return GangRequest(info.key, out, request.topology, request.required, request.preferred)

    def place(self, ledger: NodeLedger, node_order: str, info: WorkloadInfo, pod_sets: list[PodSetAssignment],
              flavors: dict[str, ResourceFlavor]) -> list[PodSetAssignment] | PlacementFailure:
        """Place ``info``'s gang; on success the nodes are charged, ``info.nodes`` records them and
        the returned podSet assignments carry ``topology`` / ``nodes``."""
        gang = self.gang(info, pod_sets, flavors)
        result = Placer(ledger, node_order).place(gang)
        if isinstance(result, PlacementFailure):
            return result
        by_name: dict[str, PodSetPlaced] = {p.name: p for p in result}
        requests = {ps.name: ps.requests for ps in gang.pod_sets}
        info.nodes = [(node, pods, {res: amount * pods for res, amount in requests[p.name].items() if amount})
                      for p in result for node, pods in p.nodes]
        self.waiting.pop(info.key, None)
        out = []
        for psa in pod_sets:
            placed = by_name.get(psa.name)
            out.append(PodSetAssignment(psa.name, psa.count, psa.flavors, psa.usage,
                                        placed.topology_assignment() if placed is not None else None,
                                        list(placed.nodes) if placed is not None else None))
        return out

    def charge(self, ledger: NodeLedger, info: WorkloadInfo, pod_sets: list[tuple[str, tuple[tuple[str, int], ...]]]) -> None:
        """Charge an observed admission's nodes as given: per podSet name, ``(node, pods)`` pairs, each
        pod with the podSet's per-pod request."""
        per_pod = {ps.name: ps.requests for ps in info.obj.pod_sets}
        held = []
        for name, nodes in pod_sets:
            requests = per_pod.get(name, ())
            for node, pods in nodes:
                amounts = {res: amount * pods for res, amount in requests if amount}
                ledger.allocate(info.key, node, pods, amounts)
                held.append((node, pods, amounts))
        info.nodes = held

    def release(self, ledger: NodeLedger, info: WorkloadInfo) -> list[WorkloadInfo]:
        """Give back what ``info`` holds on nodes; returns the waiters that may fit now (in key order)."""
        if not info.nodes:
            return []
        for node, pods, amounts in info.nodes:
            ledger.allocate(info.key, node, pods, amounts, -1)
        info.nodes = []
        if not self.waiting:
            return []
        free = ledger.free_totals()
        woken = []
        for key in sorted(self.waiting):
            waiter, total = self.waiting[key]
            if all(free.get(res, 0) >= amount for res, amount in total.items()):
                woken.append(waiter)
                del self.waiting[key]
        return woken

    def wait(self, info: WorkloadInfo, gang_total: dict[str, int]) -> None:
        """``info`` fits its quota but not the nodes: it waits for freed node capacity."""
        self.waiting[info.key] = (info, gang_total)

    def forget(self, key: str) -> None:
        """``key`` no longer waits (admitted elsewhere, finished, deleted, or everyone was woken)."""
        self.waiting.pop(key, None)
