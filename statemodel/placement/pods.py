"""Pods of the pod-scheduling models (``koordinator``, ``volcano``) on the cluster's nodes.

A unit model that admits ``v1`` Pods asks ``PodPlacement`` to bind the pods it admits, as
kube-scheduler's filters and Volcano's allocate action do after the quota check: each pod goes on
one node that matches its ``nodeSelector``, required node affinity and tolerations and has room
(the placement stage's predicates and node order, ``statemodel.placement.nodesets``).

* ``place(key, pods, at_least)``: the pods in the order given, one at a time (Volcano's allocate
  binds task by task; kube-scheduler one pod per cycle); a pod that fits no node is skipped; when
  fewer than ``at_least`` were bound, every bind of the call is rolled back (Volcano's gang plugin
  discards the statement of a job that is not ready).  When the first pod carries KAI's topology
  annotations (``kai.scheduler/topology`` and a required / preferred level, copied on every pod of
  the job by the pod grouper) the pods are placed together as one gang inside one domain, all or
  nothing (KAI's topology plugin on the job's root set).
* ``bind(key, requests, node)``: an observed binding (``spec.nodeName``), charged as given.
* ``release(key)``: the pod left its node (finished, evicted, deleted).

The ledger holds each pod under its own key, so a lost node names the pods to evict.  Active only
while the cluster has a node: a history without any ``Node`` keeps quota-only admission
(docs/placement.md, "Pod-scheduling models").  Pure and deterministic.
"""

from __future__ import annotations

from statemodel.objects import NodeSelectorRequirement, PlacementRequest, Pod, PodSetPlacement, Toleration
from statemodel.placement.nodes import NodeLedger
from statemodel.placement.nodesets import BINPACK, GangRequest, Placer, PlacementFailure, PodSetRequest


class PodPlacement:
    """The nodes of one cluster's pods (module docstring).  ``held``: pod key -> ``(node, what it
    holds there per resource, base units)``; ``node_order``: ``binpack`` or ``spread``
    (``EngineConfig.spec.placement.nodeOrder``); ``enabled``: false when
    ``EngineConfig.spec.placement.enable`` is ``false`` (quota-only admission, what pods already
    hold stays charged until they leave)."""

    def __init__(self, ledger: NodeLedger, node_order: str = BINPACK) -> None:
        self.ledger = ledger
        self.node_order = node_order
        self.enabled = True
        self.held: dict[str, tuple[str, dict[str, int]]] = {}

    @property
    def active(self) -> bool:
        """Whether pods are placed: enabled and the cluster has at least one Node."""
        return self.enabled and len(self.ledger) > 0

    def place(self, key: str, pods: list[Pod], at_least: int) -> tuple[list[tuple[Pod, str]], PlacementFailure | None]:
        """Bind ``pods`` (of unit ``key``) in order, each on a node it matches; returns the pods bound
        with their nodes (charged on the ledger) and the failure of the first pod that could not be
        bound (``None`` when all were).  Fewer than ``at_least`` bound: nothing is kept and the
        list is empty.  With KAI topology annotations on the first pod: all of ``pods`` in one
        gang, or none (``at_least`` is then every pod)."""
        first = pods[0].placement if pods else None
        if first is not None and first.topology is not None:
            return self._place_gang(key, pods, first)
        placer = Placer(self.ledger, self.node_order)
        bound: list[tuple[Pod, str]] = []
        failure: PlacementFailure | None = None
        for pod in pods:
            result = placer.place(GangRequest(pod.key, [_request(pod)]))
            if isinstance(result, PlacementFailure):
                if failure is None:
                    failure = result
                continue
            node = result[0].nodes[0][0]
            self.held[pod.key] = (node, _amounts(pod))
            bound.append((pod, node))
        if len(bound) < at_least:
            for pod, _ in bound:
                self.release(pod.key)
            return [], failure
        return bound, failure

    def _place_gang(self, key: str, pods: list[Pod], request: PlacementRequest) -> tuple[list[tuple[Pod, str]],
                                                                                          PlacementFailure | None]:
        gang = GangRequest(key, [_request(pod) for pod in pods], request.topology, request.required,
                           request.preferred)
        result = Placer(self.ledger, self.node_order).place(gang)
        if isinstance(result, PlacementFailure):
            return [], result
        where = {p.name: p.nodes[0][0] for p in result}
        bound = []
        for pod in pods:
            node, amounts = where[pod.key], _amounts(pod)
            self.ledger.allocate(key, node, 1, amounts, -1)  # held under the pod's own key
            self.ledger.allocate(pod.key, node, 1, amounts)
            self.held[pod.key] = (node, amounts)
            bound.append((pod, node))
        return bound, None

    def bind(self, key: str, requests: tuple[tuple[str, int], ...], node: str) -> None:
        """Charge pod ``key`` on ``node`` as observed (a node the ledger does not know holds nothing)."""
        self.release(key)
        if node not in self.ledger:
            return
        amounts = {res: amount for res, amount in requests if amount}
        self.ledger.allocate(key, node, 1, amounts)
        self.held[key] = (node, amounts)

    def release(self, key: str) -> bool:
        """Give back what pod ``key`` holds on its node; whether it held anything."""
        held = self.held.pop(key, None)
        if held is None:
            return False
        self.ledger.allocate(key, held[0], 1, held[1], -1)
        return True

    def node_of(self, key: str) -> str | None:
        """The node pod ``key`` is bound to, ``None`` when it holds none."""
        held = self.held.get(key)
        return held[0] if held is not None else None

    def pods_on(self, node: str) -> list[str]:
        """Keys of the pods bound to ``node``, sorted."""
        return [k for k in self.ledger.holders(node) if k in self.held]


def per_node(nodes: list[str]) -> list[tuple[str, int]]:
    """Pods per node of a list of node names (one per pod), sorted by node."""
    counts: dict[str, int] = {}
    for node in nodes:
        counts[node] = counts.get(node, 0) + 1
    return sorted(counts.items())


def _amounts(pod: Pod) -> dict[str, int]:
    return {res: amount for res, amount in pod.requests if amount}


def _request(pod: Pod) -> PodSetRequest:
    """One pod as a pod set of one (named by the pod's key) with its node constraints."""
    request = pod.placement
    constraint = request.pod_sets[0] if request is not None and request.pod_sets else None
    return PodSetRequest(pod.key, 1, _amounts(pod), (), constraint, None)


def encode_request(request: PlacementRequest | None) -> list | None:
    """A pod's ``PlacementRequest`` as JSON-ready lists (a snapshot row; ``decode_request`` reads it)."""
    if request is None:
        return None
    return [request.topology, request.required, request.preferred,
            [[c.pod_set, [list(x) for x in c.node_selector],
              [[[r.key, r.operator, list(r.values)] for r in term] for term in c.affinity],
              [[t.key, t.operator, t.value, t.effect] for t in c.tolerations],
              c.required, c.preferred, c.unconstrained, c.pod_set_group_name] for c in request.pod_sets]]


def decode_request(row: list | None) -> PlacementRequest | None:
    """The ``PlacementRequest`` of an ``encode_request`` row."""
    if row is None:
        return None
    topology, required, preferred, pod_sets = row
    return PlacementRequest(topology, required, preferred, tuple(
        PodSetPlacement(name, tuple((k, v) for k, v in selector),
                        tuple(tuple(NodeSelectorRequirement(k, op, tuple(values)) for k, op, values in term)
                              for term in affinity),
                        tuple(Toleration(k, op, v, e) for k, op, v, e in tolerations),
                        req, pref, unconstrained, group)
        for name, selector, affinity, tolerations, req, pref, unconstrained, group in pod_sets))
