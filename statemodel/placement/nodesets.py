"""Gang placement over NodeSets (seed 004 "NodeSets", reference/kai.md §2-4).

A gang — pod sets, each ``count`` pods with one per-pod request — is placed on nodes or not at
all.  Node sets come from layered subsetting plugins, composed as the seed's ``SubsetNodes``:
every plugin replaces each current set by its subsets of it (``AllNodes → P1, P2 → P1R1, P1R2,
P2R1``), and the first set in which the (sub)group fits wins:

1. the whole gang (KAI's root sub-group set) gets node sets from the **topology plugin** with the
   Workload's KAI constraint (``kai.scheduler/topology*`` annotations); without one it is
   ``[AllNodes]``;
2. inside the chosen set, each pod set in spec order (KAI's pod-set order) gets node sets from
   the **topology plugin** with its own constraint (Kueue ``topologyRequest`` on the topology of
   its flavor, ``spec.topologyName``, or the Workload's topology), then from the
   **flavor/affinity plugin** (the nodes of the set that match the flavor's ``nodeLabels``, the
   pod template's ``nodeSelector`` and required node affinity, and tolerate the node's
   ``NoSchedule`` / ``NoExecute`` taints); the pods are allocated on the first set where all fit.
   A pod set that fits nowhere rolls the gang back and the next root set is tried.

Topology plugin (KAI ``subSetNodesFn``): the search is scoped to the deepest domain that holds the
incoming set (the parent's chosen domain, or ``root``); the scope must hold the (sub)group's total
request or nothing is tried.  Candidate domains lie at the levels from the preferred level (or the
required one) up to the required level (or ``root`` without one); a domain is a candidate when its
free capacity covers the total request (KAI's ``getJobRatioToFreeResources`` ≤ 1; subtrees that
do not are skipped without visiting their nodes).  Order (KAI ``sortTree`` + ``reverseLevelOrder``):
deepest level first; within a level, left to right in the tree sorted at every domain by
``request / free`` descending (the most packed first, the largest resource ratio deciding; a
resource a domain lacks counts as 1000), ties by domain ID.

Within a set, pods go to nodes in this order (a ``spread`` or ``binpack`` node order of the cluster,
``EngineConfig.spec.placement.nodeOrder``): with a preferred level, first by KAI's topology node
score (``calculateNodeScores``: the i-th of n preferred-level domains in packing order scores
``floor((i+1)·10/n)``, higher first); then ``binpack`` (default, KAI's default placement
strategy): the node with the least free capacity of the requested resources first — per requested
resource, extended resources (GPUs) first, then cpu, then memory, the free share
``free · 10000 // allocatable``, compared as a tuple, ascending (``node_order``) — and a node is
filled before the next; ``spread``: the same key descending, re-evaluated after every pod; ties by
node name.

Failure is data (``PlacementFailure``): every node set tried and why it failed, with numbers, and a
summary in KAI's words — ``unschedulable on cluster`` with the resource the cluster lacks when its
total free capacity is short, else the fragmented domains (``node-group D can allocate only N of M
required pods``) and gang failures (``Resources were found for N pods while M are required for gang
scheduling``).  Pure and deterministic.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from functools import cmp_to_key
from typing import Final

from statemodel.objects import Node, NodeSelectorRequirement, PodSetPlacement, Toleration
from statemodel.placement.node_order import fullness, key_resources
from statemodel.placement.nodes import NodeLedger
from statemodel.placement.topology import ROOT, Domain, TopologyTree
from statemodel.quantity import format_quantity
from statemodel.taints import tolerates

BINPACK: Final = "binpack"
SPREAD: Final = "spread"
MISSING_RATIO: Final = 1000
"""KAI's ratio for a resource a domain does not have."""
SCORE_BUCKETS: Final = 10
"""KAI's topology node-score resolution (``floor((i+1)/n*10)``)."""
MAX_ATTEMPTS_SHOWN: Final = 8
"""Node sets listed in a failure message (the rest are counted)."""
MAX_DOMAINS_COUNTED: Final = 16
"""Domains of the top relevant level whose pod capacity a topology failure counts (by domain ID;
the rest are counted together), so a failure costs at most this many domains' nodes."""


class PodSetRequest:
    """One pod set to place: ``count`` pods of ``requests`` (per pod, base units), the flavor's
    ``node_labels``, the podSet's ``PodSetPlacement`` (or ``None``) and the ``topology`` name its
    own constraint refers to (``None`` = none).  ``grouped``: it is a member of a Kueue podSet
    group, whose ``SubGroupRequest`` carries its ``required`` / ``preferred`` level, so it is not
    applied again to the pod set alone."""

    __slots__ = ("name", "count", "requests", "node_labels", "constraint", "topology", "grouped")

    def __init__(self, name: str, count: int, requests: dict[str, int], node_labels: tuple[tuple[str, str], ...],
                 constraint: PodSetPlacement | None, topology: str | None, grouped: bool = False) -> None:
        self.name = name
        self.count = count
        self.requests = requests
        self.node_labels = node_labels
        self.constraint = constraint
        self.topology = topology
        self.grouped = grouped


class SubGroupRequest:
    """A set of pod sets placed together inside one node set (KAI's sub-group set): ``label``
    (``sub-group S`` for a KAI sub-group, ``group G`` for a Kueue podSet group), its constraint
    (``topology`` name, ``required`` / ``preferred`` level labels; ``None`` = none: the parent's
    set), and ``members`` — nested ``SubGroupRequest``s and ``PodSetRequest``s, placed in order
    inside the set chosen for it.  ``pod_sets``: every pod set under it."""

    __slots__ = ("label", "topology", "required", "preferred", "members", "pod_sets")

    def __init__(self, label: str, topology: str | None, required: str | None, preferred: str | None,
                 members: list[SubGroupRequest | PodSetRequest]) -> None:
        self.label = label
        self.topology = topology
        self.required = required
        self.preferred = preferred
        self.members = members
        self.pod_sets: list[PodSetRequest] = []
        for m in members:
            if isinstance(m, SubGroupRequest):
                self.pod_sets.extend(m.pod_sets)
            else:
                self.pod_sets.append(m)


class GangRequest:
    """A gang: ``key`` (``ns/name``), its pod sets in spec order, the constraint of the whole gang
    (``topology`` name, ``required`` / ``preferred`` level labels; ``None`` = none) and the
    ``members`` of its root set in allocation order (``SubGroupRequest``s and pod sets; ``None``:
    the pod sets, in order)."""

    __slots__ = ("key", "pod_sets", "topology", "required", "preferred", "members")

    def __init__(self, key: str, pod_sets: list[PodSetRequest], topology: str | None = None,
                 required: str | None = None, preferred: str | None = None,
                 members: list[SubGroupRequest | PodSetRequest] | None = None) -> None:
        self.key = key
        self.pod_sets = pod_sets
        self.topology = topology
        self.required = required
        self.preferred = preferred
        self.members = members


class PodSetPlaced:
    """Where one pod set went: ``nodes`` sorted ``(node, pods)``, ``levels`` / ``domains`` Kueue's
    ``topologyAssignment`` (the topology's levels, and per domain the label values top first and the
    pod count) when the pod set had a topology, else ``levels == ()``."""

    __slots__ = ("name", "nodes", "levels", "domains")

    def __init__(self, name: str, nodes: list[tuple[str, int]], levels: tuple[str, ...],
                 domains: list[tuple[tuple[str, ...], int]]) -> None:
        self.name = name
        self.nodes = nodes
        self.levels = levels
        self.domains = domains

    def topology_assignment(self) -> dict | None:
        """Kueue's ``topologyAssignment`` JSON (``levels``, ``domains[{values, count}]``), or ``None``."""
        if not self.levels:
            return None
        # keys in sorted order, as a snapshot (sorted-key JSON) gives them back
        return {"domains": [{"count": count, "values": list(values)} for values, count in self.domains],
                "levels": list(self.levels)}


class Attempt:
    """One node set tried (or refused before trying): ``stage`` (``topology``, ``nodes`` or
    ``gang``), ``pod_set`` (``None`` for the whole gang; a pod set's name, or ``sub-group S`` /
    ``group G`` for a KAI sub-group or a Kueue podSet group — names have no spaces), ``node_set``
    (a domain ID, ``root``, or ``all nodes``) and ``problem`` (text with numbers)."""

    __slots__ = ("stage", "pod_set", "node_set", "problem")

    def __init__(self, stage: str, pod_set: str | None, node_set: str, problem: str) -> None:
        self.stage = stage
        self.pod_set = pod_set
        self.node_set = node_set
        self.problem = problem

    def __str__(self) -> str:
        p = self.pod_set
        who = "" if p is None else f"{p}, " if " " in p else f"pod set {p}, "
        return f"<{who}{self.node_set}>: {self.problem}"


class PlacementFailure:
    """Why a gang could not be placed: ``summary`` (KAI's wording, with numbers) and ``attempts``
    (every node set tried, in order).  ``str()`` is the pending message.  ``short``: how many more
    pods the nodes must be able to take before another attempt can succeed — for a gang of one pod
    set without topology or node constraints, its count minus what the nodes could take (alike pods
    on distinct nodes: that bound is exact); 1 (any change) otherwise."""

    __slots__ = ("summary", "attempts", "short")

    def __init__(self, summary: str, attempts: list[Attempt], short: int = 1) -> None:
        self.summary = summary
        self.attempts = attempts
        self.short = short

    def __str__(self) -> str:
        shown = [str(a) for a in self.attempts[:MAX_ATTEMPTS_SHOWN]]
        more = len(self.attempts) - MAX_ATTEMPTS_SHOWN
        if more > 0:
            shown.append(f"({more} more node sets)")
        return self.summary if not shown else f"{self.summary}; tried: " + "; ".join(shown)


# -- node predicates ----------------------------------------------------------------------------

def _requirement_matches(req: NodeSelectorRequirement, labels: dict[str, str]) -> bool:
    value = labels.get(req.key)
    op = req.operator
    if op == "In":
        return value is not None and value in req.values
    if op == "NotIn":
        return value is None or value not in req.values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    try:
        number = int(value) if value is not None else None
    except ValueError:
        return False
    if number is None:
        return False
    return number > int(req.values[0]) if op == "Gt" else number < int(req.values[0])


def node_matches(node: Node, labels: dict[str, str], ps: PodSetRequest) -> str | None:
    """Why ``node`` cannot take pods of ``ps`` whatever its free capacity (``None`` = it can):
    unschedulable; a flavor ``nodeLabels`` / ``nodeSelector`` label missing or different; no
    required node-affinity term matches; a ``NoSchedule`` / ``NoExecute`` taint not tolerated
    (Kubernetes' ``NodeUnschedulable``, ``NodeAffinity`` and ``TaintToleration`` filters)."""
    if node.unschedulable:
        return "node(s) were unschedulable"
    for key, value in ps.node_labels:
        if labels.get(key) != value:
            return "node(s) didn't match the flavor's node labels"
    c = ps.constraint
    if c is None:
        tolerations: tuple[Toleration, ...] = ()
    else:
        for key, value in c.node_selector:
            if labels.get(key) != value:
                return "node(s) didn't match Pod's node affinity/selector"
        if c.affinity and not any(all(_requirement_matches(r, labels) for r in term) for term in c.affinity):
            return "node(s) didn't match Pod's node affinity/selector"
        tolerations = c.tolerations
    for taint in node.taints:
        if taint.effect != "PreferNoSchedule" and not tolerates(tolerations, taint.key, taint.value, taint.effect):
            return "node(s) had untolerated taint"
    return None


# -- arithmetic ------------------------------------------------------------------------------------

def _pods_fitting(free: dict[str, int], wanted: list[tuple[str, int]], limit: int) -> int:
    """How many pods requesting ``wanted`` (``(resource, amount)`` pairs, amounts > 0) fit in
    ``free``, at most ``limit``; 0 on a node replaced with less than it holds (its free is negative)."""
    fit = limit
    for res, amount in wanted:
        have = free.get(res, 0) // amount
        if have < fit:
            if have <= 0:
                return 0
            fit = have
    return fit


def _covers(free: dict[str, int], total: dict[str, int]) -> bool:
    for res, amount in total.items():
        if amount > 0 and free.get(res, 0) < amount:
            return False
    return True


def _ratio(total: dict[str, int], free: dict[str, int]) -> tuple[int, int]:
    """KAI ``getJobRatioToFreeResources``: the largest ``request / free`` over the requested
    resources, exactly, as ``(numerator, denominator)`` (denominator > 0; ``(0, 1)`` for no
    request); compare two with ``_by_ratio_descending``."""
    num, den = 0, 1
    for res, amount in total.items():
        if amount <= 0:
            continue
        have = free.get(res, 0)
        n, d = (MISSING_RATIO, 1) if have <= 0 else (amount, have)
        if n * den > num * d:
            num, den = n, d
    return num, den


def _by_ratio_descending(a: tuple[tuple[int, int], Domain], b: tuple[tuple[int, int], Domain]) -> int:
    """Order two ``(_ratio, domain)`` pairs by ratio, largest first (integer cross-multiplication)."""
    (an, ad), (bn, bd) = a[0], b[0]
    return bn * ad - an * bd


def _shortage(total: dict[str, int], free: dict[str, int]) -> str:
    """``res requested X, available Y`` for every resource ``free`` cannot cover."""
    parts = [f"{res} requested {format_quantity(res, amount)}, available {format_quantity(res, max(free.get(res, 0), 0))}"
             for res, amount in sorted(total.items()) if amount > free.get(res, 0)]
    return ", ".join(parts)


class NodeSet:
    """A set of nodes to try: ``label`` (domain ID, ``root`` or ``all nodes``), the ``domain`` it
    is (``None`` for all nodes) in ``tree``, and ``nodes`` (sorted names; given, or — ``None`` —
    the domain's nodes, listed when first read: most candidate domains are never tried)."""

    __slots__ = ("label", "domain", "tree", "_nodes")

    def __init__(self, label: str, domain: Domain | None, tree: TopologyTree | None,
                 nodes: list[str] | None) -> None:
        self.label = label
        self.domain = domain
        self.tree = tree
        self._nodes = nodes

    @property
    def nodes(self) -> list[str]:
        """The member node names, sorted."""
        nodes = self._nodes
        if nodes is None:
            nodes = self._nodes = sorted(self.domain.nodes) if self.domain is not None else []
        return nodes


class Placer:
    """Places one gang on a ``NodeLedger`` (module docstring).  ``place`` returns the pod sets
    placed (and has charged the ledger) or a ``PlacementFailure`` (and changed nothing).  Like KAI's
    statement, every pod is charged on the ledger as it is placed, so the domains a later pod set
    sorts see the earlier ones, and a failed set is rolled back.  ``kept_orders`` false: every pod
    set is placed by the scan of its node set (``_eligible`` + ``_allocate``), never by a kept binpack
    order — the reference the kept orders must reproduce (the property tests compare the two)."""

    def __init__(self, ledger: NodeLedger, node_order: str = BINPACK, kept_orders: bool = True) -> None:
        self.ledger = ledger
        self.node_order = node_order
        self.kept_orders = kept_orders
        self.attempts: list[Attempt] = []
        self.charged: list[tuple[str, int, dict[str, int]]] = []
        """what this attempt has charged so far (KAI's statement): rolled back when a set fails"""
        self.placed: list[PodSetPlaced] = []
        self.key = ""
        self.room = -1
        """what the nodes could take of the last pod set tried on a set (pods)"""

    # -- the gang --------------------------------------------------------------------------

    def place(self, gang: GangRequest) -> list[PodSetPlaced] | PlacementFailure:
        """Place ``gang``; on success the ledger is charged for every pod (``NodeLedger.allocate``)."""
        self.attempts = []
        self.key = gang.key
        total = _gang_total(gang.pod_sets)
        count = sum(ps.count for ps in gang.pod_sets)
        cluster_free = self.ledger.free_totals()
        if not _covers(cluster_free, total):
            return PlacementFailure(
                f"unschedulable on cluster: not enough resources in the cluster to allocate the job: "
                f"{_shortage(total, cluster_free)}", [])
        everything = NodeSet("all nodes", None, None, self.ledger.names())
        root_sets: Iterable[NodeSet]
        if gang.topology is None:
            root_sets = [everything]
        else:
            root_sets = self._topology_sets(None, gang.topology, gang.required, gang.preferred, everything,
                                            total, count)
        members: list[SubGroupRequest | PodSetRequest] = list(gang.pod_sets) if gang.members is None else gang.members
        for node_set in root_sets:
            self.charged = []
            self.placed = []
            if all(self._place_member(m, node_set) for m in members):
                return self.placed
            self._rollback(0)
        failure = self._failure(count)
        only = gang.pod_sets[0] if len(gang.pod_sets) == 1 else None
        if (gang.topology is None and gang.members is None and only is not None and only.constraint is None
                and not only.node_labels and self.room >= 0):
            failure.short = max(1, only.count - self.room)
        return failure

    def _rollback(self, mark: int) -> None:
        """Give back every charge made after the first ``mark`` ones (KAI ``stmt.Rollback``)."""
        allocate = self.ledger.allocate
        for node, pods, amounts in reversed(self.charged[mark:]):
            allocate(self.key, node, pods, amounts, -1)
        del self.charged[mark:]

    def _failure(self, count: int) -> PlacementFailure:
        fragments = [a for a in self.attempts if a.stage == "topology" and "can allocate only" in a.problem]
        gang = [a for a in self.attempts if a.stage == "gang"]
        if fragments:
            detail = f"free capacity is fragmented across node groups: {fragments[0].problem}"
        elif gang:
            detail = gang[0].problem
        elif self.attempts:
            detail = self.attempts[0].problem
        else:
            detail = f"no node set can hold the {count} pods"
        return PlacementFailure(f"unschedulable on cluster: {detail}", self.attempts)

    # -- sub-groups ------------------------------------------------------------------------

    def _place_member(self, member: SubGroupRequest | PodSetRequest, parent: NodeSet) -> bool:
        if isinstance(member, SubGroupRequest):
            return self._place_sub_group(member, parent)
        return self._place_pod_set(member, parent)

    def _place_sub_group(self, group: SubGroupRequest, parent: NodeSet) -> bool:
        """KAI ``allocateSubGroupSet``: the topology plugin with the group's constraint and total
        request gives the node sets inside ``parent``; on the first where every member fits (in
        order, recursively) the group is placed; a set where one does not is rolled back."""
        sets: Iterable[NodeSet] = [parent]
        if group.topology is not None and (group.required or group.preferred):
            total = _gang_total(group.pod_sets)
            count = sum(ps.count for ps in group.pod_sets)
            sets = self._topology_sets(group.label, group.topology, group.required, group.preferred, parent,
                                       total, count)
        for node_set in sets:
            mark = len(self.charged)
            placed = len(self.placed)
            if all(self._place_member(m, node_set) for m in group.members):
                return True
            self._rollback(mark)
            del self.placed[placed:]
        return False

    # -- one pod set -----------------------------------------------------------------------

    def _place_pod_set(self, ps: PodSetRequest, parent: NodeSet) -> bool:
        c = ps.constraint
        sets: Iterable[NodeSet] = [parent]
        if c is not None and ps.topology is not None and (c.required or c.preferred) and not ps.grouped:
            total = {res: amount * ps.count for res, amount in ps.requests.items() if amount}
            sets = self._topology_sets(ps.name, ps.topology, c.required, c.preferred, parent, total, ps.count)
        sliced = c is not None and c.slice_required is not None
        for node_set in sets:
            nodes = self._fill_slices(ps, node_set) if sliced else self._fill(ps, node_set)
            if nodes is not None:
                tree = self.ledger.topologies.get(ps.topology) if ps.topology is not None else None
                self.placed.append(_placed(ps.name, nodes, tree))
                return True
        return False

    def _fill(self, ps: PodSetRequest, node_set: NodeSet) -> list[tuple[str, int]] | None:
        """Every pod of ``ps`` on the nodes of ``node_set`` (charged: sorted ``(node, pods)``), or
        ``None`` (nothing charged, the attempt recorded)."""
        fast = self._binpack_everywhere(ps, node_set) if self.kept_orders else None
        if fast == []:
            return None
        if fast is not None:
            return fast
        fitting = self._eligible(ps, node_set)
        if fitting is None:
            return None
        return self._allocate(ps, fitting, node_set)

    def _fill_slices(self, ps: PodSetRequest, node_set: NodeSet) -> list[tuple[str, int]] | None:
        """Kueue's slices: the ``count / podSetSliceSize`` slices of ``ps`` one after the other,
        each in one domain at ``podSetSliceRequiredTopology`` inside ``node_set`` — the first
        (most packed, KAI's order) that holds it; ``None`` (nothing charged) when a slice fits in
        no domain or the slice level is above the pod set's own level."""
        c = ps.constraint
        assert c is not None and c.slice_required is not None and c.slice_size is not None
        tree = self.ledger.topologies.get(ps.topology) if ps.topology is not None else None
        if tree is None:
            self.attempts.append(Attempt("topology", ps.name, node_set.label,
                                         f"slice topology {c.slice_required} requested, but the pod set has no topology"))
            return None
        own = c.required if c.required is not None else c.preferred
        level = tree.level_index(c.slice_required)
        own_level = tree.level_index(own) if own is not None else -1
        if level is not None and own_level is not None and own_level > level:
            self.attempts.append(Attempt("topology", ps.name, node_set.label,
                                         f"podset slice topology {c.slice_required} is above the podset topology {own}"))
            return None
        size = c.slice_size
        one = PodSetRequest(ps.name, size, ps.requests, ps.node_labels, c, ps.topology, ps.grouped)
        total = {res: amount * size for res, amount in ps.requests.items() if amount}
        mark = len(self.charged)
        nodes: dict[str, int] = {}
        for _ in range(ps.count // size):
            got = None
            for domain in self._topology_sets(ps.name, tree.name, c.slice_required, None, node_set, total, size):
                got = self._fill(one, domain)
                if got is not None:
                    break
            if got is None:
                self._rollback(mark)
                return None
            for name, pods in got:
                nodes[name] = nodes.get(name, 0) + pods
        return sorted(nodes.items())

    def _binpack_everywhere(self, ps: PodSetRequest, node_set: NodeSet) -> list[tuple[str, int]] | None:
        """A pod set on all nodes in binpack order without a preferred level: walk a sorted binpack
        order the ledger keeps (``statemodel.placement.node_order``) instead of every node — the
        open nodes for a pod set without node constraints, else the nodes its constraints admit
        (``NodeLedger.filtered_order``, keyed by ``_filter_signature``) — and charge the first
        nodes that can hold the pods: the same nodes, in the same order, as the scan of
        ``_eligible`` + ``_allocate`` picks.  ``None`` (nothing charged) when it does not apply;
        ``[]`` (nothing charged, the gang failure recorded as ``_eligible`` words it) when the pods
        do not all fit; with no matching node at all, ``None`` so that the scan says why."""
        c = ps.constraint
        if (node_set.domain is not None or node_set.tree is not None or self.node_order != BINPACK
                or (c is not None and c.preferred)):
            return None
        resources = key_resources([res for res, amount in ps.requests.items() if amount > 0])
        wanted = [(res, ps.requests[res]) for res in resources]
        ledger = self.ledger
        free_of = ledger.free_of()
        left = ps.count
        chosen: list[tuple[str, int]] = []
        signature = _filter_signature(ps)
        if signature is None:
            order = ledger.binpack_order(resources)
        else:
            order = ledger.filtered_order(resources, signature,
                                          lambda node, labels: node_matches(node, labels, ps) is None)
        entries = order.entries
        start = order.start(wanted[0][1], ledger.largest_allocatable(wanted[0][0])) if wanted else 0
        for i in range(start, len(entries)):
            name = entries[i][1]
            fit = _pods_fitting(free_of[name], wanted, left)
            if fit:
                chosen.append((name, fit))
                left -= fit
                if not left:
                    break
        if left:
            matched = len(order.keys)
            if not matched:
                return None
            self.room = room = ps.count - left
            self.attempts.append(Attempt("gang", ps.name, node_set.label,
                                         f"Resources were found for {room} pods while {ps.count} are required for "
                                         f"gang scheduling ({matched}/{len(node_set.nodes)} nodes match)"))
            return []
        chosen.sort()
        for name, pods in chosen:
            amounts = {res: amount * pods for res, amount in wanted}
            ledger.allocate(self.key, name, pods, amounts)
            self.charged.append((name, pods, amounts))
        return chosen

    def _eligible(self, ps: PodSetRequest, node_set: NodeSet) -> list[tuple[str, int]] | None:
        """The flavor/affinity plugin, with each matching node's room: ``(node, pods of ps it can
        take)`` for the nodes of ``node_set`` that match ``ps`` and have room, or ``None`` (with an
        attempt recorded) when none matches or together they cannot hold every pod (the pods of
        one pod set are alike, so what each node can take adds up: KAI's gang failure)."""
        ledger = self.ledger
        free_of = ledger.free_of()
        plain_nodes = ledger.plain()
        count = ps.count
        wanted = [(res, amount) for res, amount in sorted(ps.requests.items()) if amount > 0]
        c = ps.constraint
        plain = not ps.node_labels and (c is None or not (c.node_selector or c.affinity))
        fitting = []
        reasons: dict[str, int] = {}
        matched = room = 0
        for name in node_set.nodes:
            free = free_of.get(name)
            if free is None:
                continue
            if not plain or name not in plain_nodes:
                why = node_matches(ledger.get(name), ledger.labels(name), ps)  # type: ignore[arg-type]
                if why is not None:
                    reasons[why] = reasons.get(why, 0) + 1
                    continue
            matched += 1
            fit = _pods_fitting(free, wanted, count)
            if fit:
                fitting.append((name, fit))
                room += fit
        self.room = room
        if not matched:
            detail = ", ".join(f"{n} {why}" for why, n in sorted(reasons.items())) or "no nodes"
            self.attempts.append(Attempt("nodes", ps.name, node_set.label,
                                         f"0/{len(node_set.nodes)} nodes are available: {detail}"))
            return None
        if room < count:
            self.attempts.append(Attempt("gang", ps.name, node_set.label,
                                         f"Resources were found for {room} pods while {count} are required for "
                                         f"gang scheduling ({matched}/{len(node_set.nodes)} nodes match)"))
            return None
        return fitting

    def _allocate(self, ps: PodSetRequest, fitting: list[tuple[str, int]], node_set: NodeSet) -> list[tuple[str, int]]:
        """Put every pod of ``ps`` on the ``fitting`` nodes (which can hold them all) in the node
        order, charging the ledger."""
        requests = ps.requests
        scores = self._preferred_scores(ps, node_set)
        free_of = self.ledger.free_of()
        keyed = [(scores.get(name, 0), self._fullness(name, free_of[name], requests), name, fit)
                 for name, fit in fitting]
        spread = self.node_order == SPREAD
        keyed.sort(key=lambda k: (-k[0], _negated(k[1]) if spread else k[1], k[2]))
        left = ps.count
        chosen: dict[str, int] = {}
        if spread:
            # one pod at a time on the node with the most free share; a node's key falls as it fills
            heap = [(-score, _negated(key), name, fit) for score, key, name, fit in keyed]
            heapq.heapify(heap)
            while left and heap:
                neg_score, _, name, fit = heapq.heappop(heap)
                chosen[name] = chosen.get(name, 0) + 1
                left -= 1
                if fit > 1:
                    free = dict(free_of[name])
                    for res, amount in requests.items():
                        free[res] = free.get(res, 0) - amount * chosen[name]
                    heapq.heappush(heap, (neg_score, _negated(self._fullness(name, free, requests)), name, fit - 1))
        else:
            for _, _, name, fit in keyed:
                if not left:
                    break
                take = min(fit, left)
                chosen[name] = take
                left -= take
        for name, pods in sorted(chosen.items()):
            amounts = {res: amount * pods for res, amount in requests.items() if amount}
            self.ledger.allocate(self.key, name, pods, amounts)
            self.charged.append((name, pods, amounts))
        return sorted(chosen.items())

    def _fullness(self, name: str, free: dict[str, int], requests: dict[str, int]) -> tuple[int, ...]:
        """The binpack key (``statemodel.placement.node_order``): per requested resource, extended
        ones first, the free share in basis points."""
        return fullness(free, self.ledger.allocatable(name),
                        key_resources([res for res, amount in requests.items() if amount]))

    def _preferred_scores(self, ps: PodSetRequest, node_set: NodeSet) -> dict[str, int]:
        """KAI's topology node scores for the preferred level of ``ps`` (module docstring); ``{}``
        without a preferred level."""
        c = ps.constraint
        tree = self.ledger.topologies.get(ps.topology) if ps.topology is not None else None
        if c is None or c.preferred is None or tree is None:
            return {}
        level = tree.level_index(c.preferred)
        scope = node_set.domain if node_set.tree is tree and node_set.domain is not None else tree.root
        if level is None or scope.level >= level:
            return {}
        total = {res: amount * ps.count for res, amount in ps.requests.items() if amount}
        domains = _level_order(scope, level, total, prune=False)[level]
        n = len(domains)
        scores = {}
        for i, d in enumerate(domains):
            score = (i + 1) * SCORE_BUCKETS // n
            for name in d.nodes:
                scores[name] = score
        return scores

    # -- the topology plugin ---------------------------------------------------------------

    def _topology_sets(self, pod_set: str | None, topology: str, required: str | None, preferred: str | None,
                       incoming: NodeSet, total: dict[str, int], count: int) -> Iterator[NodeSet]:
        """KAI ``subSetNodesFn`` for one (sub)group (module docstring), yielded lazily: a domain's
        children are sorted only when the walk reaches it, so the sets after the first that fits
        cost nothing.  The caller must leave the ledger as it found it between two sets (a set
        that fails is rolled back), so the order is the one computed up front.  Yields nothing,
        with attempts recorded, when no domain can hold the (sub)group."""
        tree = self.ledger.topologies.get(topology)
        if tree is None:
            self.attempts.append(Attempt("topology", pod_set, "all nodes", f"Requested topology {topology} does not exist"))
            return
        lowest = preferred if preferred is not None else required
        lo = tree.level_index(lowest) if lowest is not None else None
        hi = tree.level_index(required) if required is not None else -1
        if lo is None or hi is None:
            missing = lowest if lo is None else required
            self.attempts.append(Attempt("topology", pod_set, "all nodes",
                                         f"topology {topology} has no level {missing}"))
            return
        if hi > lo:  # a required level below the preferred one bounds the search at itself
            lo = hi
        scope = incoming.domain if incoming.tree is tree and incoming.domain is not None else tree.root
        requirement = required if required is not None else preferred
        if not _covers(scope.free, total):
            where = "the cluster" if scope.id == ROOT else scope.id
            self.attempts.append(Attempt("topology", pod_set, scope.id,
                                         f"topology {topology}, requirement {requirement} couldn't be satisfied: "
                                         f"not enough resources in {where} to allocate the job: "
                                         f"{_shortage(total, scope.free)}"))
            return
        inside = None if incoming.domain is None and incoming.tree is None else set(incoming.nodes)
        top = scope.level if scope.level >= lo else max(hi, scope.level)
        memo: dict[str, list[Domain]] = {}
        found = False
        for level in range(max(lo, scope.level), top - 1, -1):
            for d in _domains_at(scope, level, total, memo):
                if inside is None:
                    found = True
                    yield NodeSet(d.id, d, tree, None)
                    continue
                nodes = sorted(n for n in d.nodes if n in inside)
                if nodes:
                    found = True
                    yield NodeSet(d.id, d, tree, nodes)
        if not found:
            self._fragmented(pod_set, tree, scope, top, total, count, requirement or ROOT)

    def _fragmented(self, pod_set: str | None, tree: TopologyTree, scope: Domain, top: int, total: dict[str, int],
                    count: int, requirement: str) -> None:
        """No domain at a relevant level holds the request: KAI's per-domain errors of the top
        relevant level (how many pods each domain could take), then the requirement error."""
        each = [(res, amount // count if count else amount) for res, amount in sorted(total.items())]
        per_pod = [(res, amount) for res, amount in each if amount > 0]
        domains = sorted((d for d in (tree.by_level[top].values() if top >= 0 else [tree.root]) if scope.contains(d)),
                         key=lambda d: d.id)
        free_of = self.ledger.free_of()
        for d in domains[:MAX_DOMAINS_COUNTED]:
            fit = sum(_pods_fitting(free_of.get(n, {}), per_pod, count) for n in d.nodes)
            self.attempts.append(Attempt("topology", pod_set, d.id,
                                         f"node-group {d.id} can allocate only {fit} of {count} required pods"))
        if len(domains) > MAX_DOMAINS_COUNTED:
            self.attempts.append(Attempt("topology", pod_set, scope.id,
                                         f"{len(domains) - MAX_DOMAINS_COUNTED} more node-groups at level "
                                         f"{tree.levels[top]} cannot hold the job either"))
        self.attempts.append(Attempt("topology", pod_set, scope.id,
                                     f"topology {tree.name}, requirement {requirement} couldn't be satisfied"))


def _level_order(scope: Domain, deepest: int, total: dict[str, int], prune: bool) -> dict[int, list[Domain]]:
    """The domains under ``scope`` down to level ``deepest`` per level, left to right in the tree
    sorted for packing (children by ``request / free`` descending, then ID); with ``prune`` only
    the domains whose free capacity covers ``total`` (a subtree that does not is not entered)."""
    out: dict[int, list[Domain]] = {}
    frontier = [scope]
    while frontier:
        nxt: list[Domain] = []
        for d in frontier:
            if d.level >= deepest:
                continue
            nxt.extend(_sorted_children(d, total, prune))
        for d in nxt:
            out.setdefault(d.level, []).append(d)
        frontier = nxt
    return out


def _sorted_children(d: Domain, total: dict[str, int], prune: bool) -> list[Domain]:
    """The children of ``d`` in packing order (``_level_order``), with ``prune`` only those whose
    free capacity covers ``total``."""
    keyed = [(_ratio(total, c.free), c) for c in d.children.values() if not prune or _covers(c.free, total)]
    keyed.sort(key=lambda k: k[1].id)
    keyed.sort(key=cmp_to_key(_by_ratio_descending))  # stable: equal ratios stay in ID order
    return [c for _, c in keyed]


def _domains_at(scope: Domain, level: int, total: dict[str, int], memo: dict[str, list[Domain]]) -> Iterator[Domain]:
    """The domains at ``level`` under ``scope`` whose free capacity covers ``total``, in the order
    ``_level_order(scope, level, total, prune=True)[level]`` lists them (``scope`` itself at its
    own level), yielded lazily: a domain's children are sorted (and kept in ``memo`` by domain ID)
    when the walk first enters it — left to right at every level is a depth-first walk."""
    if scope.level >= level:
        yield scope
        return
    children = memo.get(scope.id)
    if children is None:
        children = memo[scope.id] = _sorted_children(scope, total, prune=True)
    for c in children:
        if c.level == level:
            yield c
        else:
            yield from _domains_at(c, level, total, memo)

def _filter_signature(ps: PodSetRequest) -> tuple | None:
    """What ``node_matches`` reads of ``ps`` — flavor ``nodeLabels``, ``nodeSelector``, required
    node affinity, tolerations — as a hashable key; ``None`` when it has none of them (the open
    nodes are its nodes)."""
    c = ps.constraint
    if c is None or not (c.node_selector or c.affinity or c.tolerations):
        return (ps.node_labels, (), (), ()) if ps.node_labels else None
    return (ps.node_labels, c.node_selector, c.affinity, c.tolerations)


def _negated(key: tuple[int, ...]) -> tuple[int, ...]:
    """A key that sorts in the opposite order (``spread``)."""
    return tuple(-k for k in key)


def _gang_total(pod_sets: list[PodSetRequest]) -> dict[str, int]:
    total: dict[str, int] = {}
    for ps in pod_sets:
        for res, amount in ps.requests.items():
            if amount:
                total[res] = total.get(res, 0) + amount * ps.count
    return total


def _placed(name: str, nodes: list[tuple[str, int]], tree: TopologyTree | None) -> PodSetPlaced:
    if tree is None:
        return PodSetPlaced(name, nodes, (), [])
    domains: dict[tuple[str, ...], int] = {}
    for node, pods in nodes:
        values = tuple(tree.values(node))
        if values:
            domains[values] = domains.get(values, 0) + pods
    return PodSetPlaced(name, nodes, tree.levels, sorted(domains.items()))
