"""The placement stage of the ``kueue`` model's admission (DESIGN "The engine as stages").

After the quota model says a Workload fits, ``PlacementStage.place`` builds its gang — each podSet
with its assigned flavors' ``nodeLabels`` and topology (``ResourceFlavor.spec.topologyName``), its
constraints, and the Workload's KAI constraint — and places it over NodeSets
(``statemodel.placement.nodesets``).  The stage also keeps who waits for nodes: a Workload whose gang
fits its quota but not the nodes waits (``TopologyPlacementFailed``) until capacity is freed on
nodes, or the configuration changes (a node added, relabelled, uncordoned; a Topology changed:
everyone wakes, as for quota).  A waiter records how many more pods the nodes must take before it
can fit (``PlacementFailure.short``); each release of a placed workload adds, per waiter, the pods
of its pod sets that the freed nodes can take now but could not before, and wakes those whose
gain reaches their shortfall while the cluster's free capacity covers their total request (both
necessary: nothing else makes room on nodes).  Costs: one scan of the waiters per release of a
placed workload, O(freed nodes × pod sets) each.
"""

from __future__ import annotations

from dataclasses import replace

from statemodel.objects import PodSetPlacement, ResourceFlavor, SubGroup, Toleration
from statemodel.placement.nodes import NodeLedger
from statemodel.placement.nodesets import (
    GangRequest, Placer, PlacementFailure, PodSetPlaced, PodSetRequest, SubGroupRequest,
)
from statemodel.workload import PodSetAssignment, WorkloadInfo


class PlacementStage:
    """Placement for one cluster: ``place``, ``charge`` (observed nodes), ``release`` and the
    waiters.  ``waiting``: workload key -> ``[workload, its gang's total request in base units,
    pods short, pods gained since]``.  ``kept_orders``: ``Placer``'s switch (false: every pod set
    is placed by the scan, the reference the property tests compare the kept orders with)."""

    def __init__(self) -> None:
        self.waiting: dict[str, list] = {}
        self.kept_orders = True

    def gang(self, info: WorkloadInfo, pod_sets: list[PodSetAssignment],
             flavors: dict[str, ResourceFlavor]) -> GangRequest:
        """The ``GangRequest`` of ``info`` admitted with ``pod_sets`` (its flavor assignment): per
        podSet its per-pod requests, the ``nodeLabels`` of every flavor it was assigned, the topology
        of the first of those flavors (by resource name) naming one — else the Workload's KAI
        topology — and its ``PodSetPlacement``, with the ``tolerations`` of those flavors added to
        the pod template's (Kueue adds a flavor's ``spec.tolerations`` to the pods it admits)."""
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
            added: list[Toleration] = []
            for _, flavor_name in sorted(psa.flavors.items()):
                flavor = flavors.get(flavor_name)
                if flavor is None:
                    continue
                labels.update(flavor.node_labels)
                if topology is None:
                    topology = flavor.topology_name
                added.extend(t for t in flavor.tolerations if t not in added)
            constraint = constraints.get(psa.name)
            if added:
                constraint = (PodSetPlacement(psa.name, tolerations=tuple(added)) if constraint is None
                              else replace(constraint, tolerations=constraint.tolerations + tuple(
                                  t for t in added if t not in constraint.tolerations)))
            grouped = constraint is not None and constraint.pod_set_group_name is not None
            out.append(PodSetRequest(psa.name, psa.count, dict(spec.requests), tuple(sorted(labels.items())),
                                     constraint, topology or kai_topology, grouped))
        if request is None:
            return GangRequest(info.key, out)
        return GangRequest(info.key, out, request.topology, request.required, request.preferred,
                           _members(out, request.sub_groups, kai_topology))

    def place(self, ledger: NodeLedger, node_order: str, info: WorkloadInfo, pod_sets: list[PodSetAssignment],
              flavors: dict[str, ResourceFlavor]) -> list[PodSetAssignment] | PlacementFailure:
        """Place ``info``'s gang; on success the nodes are charged, ``info.nodes`` records them and
        the returned podSet assignments carry ``topology`` / ``nodes``."""
        gang = self.gang(info, pod_sets, flavors)
        result = Placer(ledger, node_order, self.kept_orders).place(gang)
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
        released: dict[str, dict[str, int]] = {}
        for node, _, amounts in info.nodes:
            mine = released.setdefault(node, {})
            for res, amount in amounts.items():
                mine[res] = mine.get(res, 0) + amount
        info.nodes = []
        if not self.waiting:
            return []
        free = ledger.free_totals()
        free_of = ledger.free_of()
        freed = [(free_of[n], released[n]) for n in sorted(released) if n in free_of]
        woken = []
        for key in sorted(self.waiting):
            entry = self.waiting[key]
            waiter, total = entry[0], entry[1]
            for ps in waiter.obj.pod_sets:
                for now, amounts in freed:
                    entry[3] += _fit(now, ps.requests, {}) - _fit(now, ps.requests, amounts)
            if entry[3] >= entry[2] and all(free.get(res, 0) >= amount for res, amount in total.items()):
                woken.append(waiter)
                del self.waiting[key]
        return woken

    def wait(self, info: WorkloadInfo, gang_total: dict[str, int], short: int) -> None:
        """``info`` fits its quota but not the nodes: it waits until the nodes can take ``short``
        more of its pods (``PlacementFailure.short``)."""
        self.waiting[info.key] = [info, gang_total, short, 0]

    def forget(self, key: str) -> None:
        """``key`` left its queue (admitted, finished, deleted, moved): it no longer waits here."""
        self.waiting.pop(key, None)


def _members(pod_sets: list[PodSetRequest], sub_groups: tuple[SubGroup, ...],
             kai_topology: str | None) -> list[SubGroupRequest | PodSetRequest] | None:
    """The root set's members (``GangRequest.members``), or ``None`` when there are no podSet
    groups or sub-groups.  A Kueue podSet group becomes a ``SubGroupRequest`` with its members'
    shared level, on their topology, at the place of its first pod set.  KAI sub-groups become
    nested ``SubGroupRequest``s (a level without a topology name uses the Workload's), each
    holding the pod sets whose pods select it; the root holds its top sub-groups (in the
    annotation's order), then the pod sets outside every sub-group (KAI: child sets before
    pod-sets); a sub-group without pods is left out (KAI returns its set unchanged)."""
    if not sub_groups and not any(ps.grouped for ps in pod_sets):
        return None
    direct: dict[str | None, list[SubGroupRequest | PodSetRequest]] = {}
    groups: dict[str, SubGroupRequest] = {}
    for ps in pod_sets:
        c = ps.constraint
        home = c.sub_group if c is not None else None
        if ps.grouped and c is not None and c.pod_set_group_name is not None:
            group = groups.get(c.pod_set_group_name)
            if group is not None:
                group.members.append(ps)
                group.pod_sets.append(ps)
                continue
            group = groups[c.pod_set_group_name] = SubGroupRequest(
                f"group {c.pod_set_group_name}", ps.topology, c.required, c.preferred, [ps])
            direct.setdefault(home, []).append(group)
        else:
            direct.setdefault(home, []).append(ps)
    children: dict[str | None, list[SubGroup]] = {}
    for g in sub_groups:
        children.setdefault(g.parent, []).append(g)
    return _tree(None, children, direct, kai_topology)


def _tree(parent: str | None, children: dict[str | None, list[SubGroup]],
          direct: dict[str | None, list[SubGroupRequest | PodSetRequest]],
          kai_topology: str | None) -> list[SubGroupRequest | PodSetRequest]:
    """The members of sub-group ``parent`` (``None``: the root): its child sub-groups that hold
    pods, in order, then the pod sets (and podSet groups) directly in it."""
    members: list[SubGroupRequest | PodSetRequest] = []
    for g in children.get(parent, []):
        inner = _tree(g.name, children, direct, kai_topology)
        if inner:
            members.append(SubGroupRequest(f"sub-group {g.name}", g.topology or kai_topology, g.required,
                                           g.preferred, inner))
    members.extend(direct.get(parent, []))
    return members


def _fit(free: dict[str, int], requests: tuple[tuple[str, int], ...], less: dict[str, int]) -> int:
    """How many pods of ``requests`` fit in ``free - less`` (no upper bound but the free capacity;
    a pod requesting nothing counts as one)."""
    n = -1
    for res, amount in requests:
        if amount > 0:
            have = (free.get(res, 0) - less.get(res, 0)) // amount
            if have <= 0:
                return 0
            if n < 0 or have < n:
                n = have
    return 1 if n < 0 else n
