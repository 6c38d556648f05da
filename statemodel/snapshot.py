"""Engine snapshots: the complete state of an ``Engine`` as canonical bytes, and back.

``dump(engine)`` captures everything that can influence future decisions — hash chains, seen
event ids and counters, and per cluster one document per component — as sorted-key JSON (orjson),
zlib-compressed.  ``load(blob)`` rebuilds an engine that continues exactly as the original would
have: a snapshot plus the tail of the event log gives the same decisions, state and hash as
replaying everything (property-tested).

Components of a cluster, each ``{"version": n, ...}`` written and read by its own pair of
functions (``COMPONENTS``): ``objects`` (clock, decision counter, configuration objects),
``nodes`` (the node ledger's own document, ``statemodel.placement.nodes``),
``quotaModel`` (the model's name, its ``QuotaModel.version`` and its own ``dump`` document),
``hierarchy`` (Cohorts and ClusterQueues, which cohort edges are linked while a cycle exists),
``workloads`` (each with its pending message's failures as data and who preempted whom, version 3),
``queues`` (with each queue's sticky preemptor, version 2), ``wakeIndex``, ``fairSharing`` (AFS ledgers) and ``scopes``
(admission-scope gates), ``placement`` (Topologies, what each workload holds on nodes, who waits
for nodes, and — key ``pods``, only when there are any — the unit models' pods on nodes; absent in older snapshots, meaning none).  Derived data (subtree quota, cohort usage, node heights, caches) is
recomputed, not stored.  Decimal values are stored as exact strings.

Versions: a snapshot carries ``SNAPSHOT_FORMAT`` and the engine version.  Another engine version
is refused (it may decide differently); an older format or component version is upgraded by the
small pure ``dict -> dict`` functions in ``UPGRADES`` / ``COMPONENT_UPGRADES`` before it is read;
anything else is refused with ``SnapshotError`` — never misread — so the caller rebuilds from
events.  Known limit: workloads with equal priority, creation time *and* uid (an explicit duplicate
uid) may swap queue order after a restore.
"""

from __future__ import annotations

import dataclasses
import zlib
from decimal import Decimal
from typing import Any

import orjson

from statemodel import objects as objects_module
from statemodel.cluster import ClusterState
from statemodel.engine import Engine
from statemodel.queues.afs import DecayParams, UsageLedger
from statemodel.admission.cycle import Waiter
from statemodel.admission.flavorassigner import NoFitMessage, PodSetStatus
from statemodel.hierarchy import ClusterQueueEntry, CohortEntry
from statemodel.placement.nodes import NodeLedger, node_document
from statemodel.placement.nodesets import Attempt, PlacementFailure
from statemodel.queues.cluster_queue import ClusterQueueQueue
from statemodel.quota import registry
from statemodel.quota.protocol import Shortfall
from statemodel.reasons import PendingReason, PreemptionReason
from statemodel.version import ENGINE_VERSION
from statemodel.workload import PodSetAssignment, WorkloadInfo, WorkloadStatus

SNAPSHOT_FORMAT = 2
"""Version of the envelope (engine-wide fields and the list of per-cluster component documents)."""
_CLASSES = {cls.__name__: cls for cls in vars(objects_module).values()
            if isinstance(cls, type) and dataclasses.is_dataclass(cls)}
_FIELDS = {cls: tuple(f.name for f in dataclasses.fields(cls)) for cls in _CLASSES.values()}


class SnapshotError(ValueError):
    """The blob is not a snapshot this engine can restore: not a snapshot, another engine version,
    or a format / component version with no upgrade.  The caller rebuilds from events."""


# -- objects ------------------------------------------------------------------------------------

def _enc_workload(w: objects_module.Workload) -> list:
    """Fast path for the bulk of a snapshot: a Workload as a flat list (``_dec_workload``)."""
    return [w.namespace, w.name, w.uid, w.creation_ms, w.queue_name, w.priority,
            [[p.name, p.count, [list(r) for r in p.requests], p.min_count] for p in w.pod_sets],
            _enc(w.admission)] + ([] if w.placement is None else [_enc(w.placement)])


def _dec_workload(row: list) -> objects_module.Workload:
    """A Workload of ``_enc_workload``; a row without placement constraints ends after the admission."""
    ns, name, uid, creation, queue, priority, pod_sets, admission = row[:8]
    return objects_module.Workload(
        ns, name, uid, creation, queue, priority,
        tuple(objects_module.PodSet(p[0], p[1], tuple((r, a) for r, a in p[2]), p[3]) for p in pod_sets),
        _dec(admission), _dec(row[8]) if len(row) > 8 else None)


def _enc(value: Any) -> Any:
    """Objects of ``statemodel.objects`` as ``[class name, field values...]``; tuples as lists."""
    fields = _FIELDS.get(type(value))
    if fields is not None:
        return [type(value).__name__, *[_enc(getattr(value, name)) for name in fields]]
    if isinstance(value, tuple):
        return {"t": [_enc(v) for v in value]}
    return value


def _dec(value: Any) -> Any:
    if isinstance(value, list):
        return _CLASSES[value[0]](*[_dec(v) for v in value[1:]])
    if isinstance(value, dict):
        return tuple(_dec(v) for v in value["t"])
    return value


def _frs(mapping: dict) -> list:
    return [[flavor, res, amount] for (flavor, res), amount in mapping.items()]


def _unfrs(rows: list) -> dict:
    return {(flavor, res): amount for flavor, res, amount in rows}


# -- components -----------------------------------------------------------------------------------
# Each component: dump(cluster) -> doc, load(cluster, doc) (into a fresh ClusterState, in COMPONENTS
# order, so a loader may rely on the components before it).


def _dump_objects(c: ClusterState) -> dict:
    return {"clock": c.clock_ms, "seq": c.seq, "config": _enc(c.config),
            "flavors": [_enc(o) for o in c.flavors.values()],
            "localQueues": [_enc(o) for o in c.local_queues.values()]}


def _load_objects(c: ClusterState, d: dict) -> None:
    c.clock_ms, c.seq = d["clock"], d["seq"]
    c.config = _dec(d["config"])
    c.flavors = {o.name: o for o in map(_dec, d["flavors"])}
    c.local_queues = {o.key: o for o in map(_dec, d["localQueues"])}


def _dump_nodes(c: ClusterState) -> dict:
    return {"nodes": c.nodes.document()}


def _load_nodes(c: ClusterState, d: dict) -> None:
    c.nodes = NodeLedger.from_document(d["nodes"])
    c.pod_nodes.ledger = c.nodes
    c.configure_pod_nodes()


def _dump_model(c: ClusterState) -> dict:
    return {"name": c.model.name, "modelVersion": c.model.version, "doc": c.model.dump()}


def _load_model(c: ClusterState, d: dict) -> None:
    try:
        model = registry.create(d["name"])
    except registry.UnknownQuotaModel as exc:
        raise SnapshotError(str(exc.args[0])) from None
    if d["modelVersion"] != model.version:
        raise SnapshotError(f"quota model {d['name']!r} document version {d['modelVersion']} cannot be read "
                            f"by version {model.version}")
    model.load(d["doc"])
    c.model = model
    c.hierarchy.model = model
    c.units = model if getattr(model, "admits_units", False) else None  # type: ignore[assignment]
    if c.units is not None:
        c.units.set_placer(c.pod_nodes)


def _dump_hierarchy(c: ClusterState) -> dict:
    h = c.hierarchy
    return {
        "cohorts": [{"name": n, "spec": _enc(e.spec), "parent": e.parent_name, "linked": e.linked}
                    for n, e in h.cohorts.items()],
        "clusterQueues": [{"name": n, "spec": _enc(e.spec), "cohort": e.cohort_name}
                          for n, e in h.cluster_queues.items()],
        "unlinked": sorted(h._unlinked),
    }


def _load_hierarchy(c: ClusterState, d: dict) -> None:
    h = c.hierarchy
    for row in d["cohorts"]:
        e = h.cohorts[row["name"]] = CohortEntry(row["name"])
        e.spec, e.parent_name, e.linked = _dec(row["spec"]), row["parent"], row["linked"]
    for row in d["clusterQueues"]:
        e2 = h.cluster_queues[row["name"]] = ClusterQueueEntry(row["name"])
        e2.spec, e2.cohort_name = _dec(row["spec"]), row["cohort"]
        if e2.spec is not None:
            e2.rg_by_resource = {r: g for g in e2.spec.resource_groups for r in g.covered_resources}
            e2.covers_pods = "pods" in e2.rg_by_resource
        if e2.cohort_name is not None:
            h.cohorts[e2.cohort_name].child_cluster_queues.add(row["name"])
    for row in d["cohorts"]:
        if row["parent"] is not None:
            h.cohorts[row["parent"]].child_cohorts.add(row["name"])
            if row["linked"]:
                h.cohorts[row["parent"]].linked_children += 1
    h._unlinked = set(d["unlinked"])


def _failures(message: object) -> list | None:
    """A ``NoFitMessage``'s failures as ``[[podSet, [[reason, flavor, resource, node, needed,
    available, request], ...]], ...]``; ``None`` for a plain-text message."""
    if not isinstance(message, NoFitMessage):
        return None
    return [[ps, [[str(st.shortfall.reason), st.shortfall.flavor, st.shortfall.resource, st.shortfall.node,
                   st.shortfall.needed, st.shortfall.available, st.request] for st in statuses]]
            for ps, statuses in message.failures]


_PENDING_REASONS = {str(r): r for r in PendingReason}
_PREEMPTION_REASONS = {str(r): r for r in PreemptionReason}
_STATUSES = {str(st): st for st in WorkloadStatus}


def _message(text: str | None, failures: list | None, omitted: int) -> object:
    """The workload's message: the text as stored, or — when its failures were stored instead — the
    ``NoFitMessage`` they render (the text is derived, so it is not stored twice)."""
    if failures is None:
        return text
    return NoFitMessage([(ps, [PodSetStatus(Shortfall(_PENDING_REASONS[reason], flavor, res, node, needed,
                                                      available), request)
                               for reason, flavor, res, node, needed, available, request in statuses])
                         for ps, statuses in failures], omitted)


def _placement_failure(failure: PlacementFailure) -> list:
    """A pending workload's ``PlacementFailure`` as ``[summary, [[stage, podSet, nodeSet, problem], ...], short]``
    (its text is derived, but is stored as the message too)."""
    return [failure.summary, [[a.stage, a.pod_set, a.node_set, a.problem] for a in failure.attempts], failure.short]


def _dump_workloads(c: ClusterState) -> dict:
    rows = []
    for w in c.workloads.values():
        failures = _failures(w.message)
        rows.append({
            "obj": _enc_workload(w.obj), "status": w.status, "cq": w.cluster_queue,
            "assignment": None if w.assignment is None else [
                [p.name, p.count, p.flavors, p.usage] + ([] if p.nodes is None else [p.topology, p.nodes])
                for p in w.assignment],
            "charge": _frs(w.charge), "borrowing": w.borrowing, "reason": w.reason,
            "message": None if failures is not None else str(w.message), "failures": failures,
            "omitted": w.message.omitted if isinstance(w.message, NoFitMessage) else 0,
            "park": w.park, "queued": w.queued_ms, "admitted": w.admitted_ms, "observed": w.observed,
            "preemptedBy": w.preempted_by, "preemptionReason": w.preemption_reason, "victims": w.victims,
            "preempting": w.preempting,
            **({"placementFailure": _placement_failure(w.message)} if isinstance(w.message, PlacementFailure) else {}),
        })
    return {"workloads": rows}


def _assignment(row: list) -> PodSetAssignment:
    """A podSet assignment row: ``[name, count, flavors, usage]``, plus ``[topology, nodes]`` when placed."""
    if len(row) == 4:
        return PodSetAssignment(*row)
    name, count, flavors, usage, topology, nodes = row
    return PodSetAssignment(name, count, flavors, usage, topology, [(n, pods) for n, pods in nodes])


def _load_workloads(c: ClusterState, d: dict) -> None:
    for row in d["workloads"]:
        w = WorkloadInfo(_dec_workload(row["obj"]), row["queued"])
        w.status, w.cluster_queue, w.borrowing = _STATUSES[row["status"]], row["cq"], row["borrowing"]
        w.assignment = None if row["assignment"] is None else [_assignment(p) for p in row["assignment"]]
        w.charge = _unfrs(row["charge"])
        w.reason, w.message, w.park = row["reason"], _message(row["message"], row["failures"], row.get("omitted", 0)), row["park"]
        w.admitted_ms, w.observed = row["admitted"], row["observed"]
        w.preempted_by = row["preemptedBy"]
        reason = row["preemptionReason"]
        w.preemption_reason = None if reason is None else _PREEMPTION_REASONS[reason]
        w.victims, w.preempting = list(row["victims"]), row["preempting"]
        failure = row.get("placementFailure")
        if failure is not None:
            w.message = PlacementFailure(failure[0], [Attempt(*a) for a in failure[1]], failure[2])
        c.workloads[w.key] = w


def _upgrade_workloads_1(doc: dict) -> dict:
    """``workloads`` version 1 → 2.  Version 1 kept only the text of a pending workload's message;
    version 2 keeps what it is short of instead (``failures``, the flavor assigner's ``NoFitMessage``
    as data, from which the text is rendered; ``message`` is ``null`` then).  A version-1 workload gets ``failures: null``: it restores with its message text and no
    structured shortfalls until the engine evaluates it again.  Pure."""
    return {**doc, "version": 2, "workloads": [{**row, "failures": None} for row in doc["workloads"]]}


def _upgrade_workloads_2(doc: dict) -> dict:
    """``workloads`` version 2 → 3.  Version 3 records preemption on each workload: ``preemptedBy``
    and ``preemptionReason`` (the victim's side), ``victims`` (the preemptor's side) and
    ``preempting`` (a preemptor tried first in the next cycle).  Engines writing version 2 never
    preempted, so every workload gets ``null`` / ``[]`` / ``false``.  Pure."""
    return {**doc, "version": 3, "workloads": [
        {**row, "preemptedBy": None, "preemptionReason": None, "victims": [], "preempting": False}
        for row in doc["workloads"]]}


def _dump_queues(c: ClusterState) -> dict:
    return {
        "queues": [{"name": q.name, "strategy": q.strategy, "byUsage": q.by_usage, "members": list(q.members),
                    "parked": list(q.parked), "blocked": q.blocked.key if q.blocked is not None else None,
                    "sticky": q.sticky.key if q.sticky is not None else None}
                   for q in c.queues.values()],
        "waiting": sorted(c.waiting),
        "byLocalQueue": {lq: list(m) for lq, m in c.by_local_queue.items()},
        "admittedBy": {cq: list(m) for cq, m in c.admitted.items()},
    }


def _load_queues(c: ClusterState, d: dict) -> None:
    wl = c.workloads
    parks = {key: w.park for key, w in wl.items()}
    for row in d["queues"]:
        q = c.queues[row["name"]] = ClusterQueueQueue(row["name"])
        q.strategy, q.by_usage = row["strategy"], row["byUsage"]
        for key in row["members"]:
            q.push(wl[key])
        for key in row["parked"]:
            q.parked[key] = wl[key]
        q.blocked = wl[row["blocked"]] if row["blocked"] is not None else None
        q.sticky = wl[row["sticky"]] if row["sticky"] is not None else None
    for key, park in parks.items():  # push() bumped them; wake entries refer to these
        wl[key].park = park
    c.waiting = set(d["waiting"])
    c.by_local_queue = {lq: {k: wl[k] for k in keys} for lq, keys in d["byLocalQueue"].items()}
    c.admitted = {cq: {k: wl[k] for k in keys} for cq, keys in d["admittedBy"].items()}


def _upgrade_queues_1(doc: dict) -> dict:
    """``queues`` version 1 → 2: each queue records its sticky preemptor (``sticky``); engines writing
    version 1 never preempted, so it is ``null``.  Pure."""
    return {**doc, "version": 2, "queues": [{**row, "sticky": None} for row in doc["queues"]]}


def _dump_wake_index(c: ClusterState) -> dict:
    wake = c.wake_index

    def waiter(w: Waiter) -> list:
        return [w.info.key, w.park, w.cluster_queue, [[list(fr), val] for fr, val in w.needs]]

    return {
        "released": [[list(k[0]), list(k[1]), v] for k, v in wake.released.items()],
        "heaps": [[list(k[0]), list(k[1]), [[t, s, waiter(w)] for t, s, w in heap]] for k, heap in wake.heaps.items()],
        "buckets": [[list(k[0]), list(k[1]),
                     [[val, [[a, b, cq, u, s, waiter(w)] for a, b, cq, u, s, w in heap]] for val, heap in vals.items()]]
                    for k, vals in wake.buckets.items()],
        "dirty": sorted([list(k[0]), list(k[1])] for k in wake.dirty),
        "woken": [[wl, list(k[0]), list(k[1])] for wl, k in wake.woken.items()],
        "seq": wake.seq,
    }


def _load_wake_index(c: ClusterState, d: dict) -> None:
    wl = c.workloads

    def waiter(row: list) -> Waiter:
        key, park, cq_name, needs = row
        return Waiter(wl[key], park, cq_name, [((fr[0], fr[1]), val) for fr, val in needs])

    def wkey(pool: list, fr: list) -> tuple:
        return ((pool[0], pool[1]), (fr[0], fr[1]))

    wake = c.wake_index
    wake.released = {wkey(t, f): v for t, f, v in d["released"]}
    wake.heaps = {wkey(t, f): [(th, s, waiter(w)) for th, s, w in heap] for t, f, heap in d["heaps"]}
    wake.buckets = {wkey(t, f): {val: [(a, b, cq, u, s, waiter(w)) for a, b, cq, u, s, w in heap] for val, heap in vals}
                    for t, f, vals in d["buckets"]}
    wake.dirty = {wkey(t, f) for t, f in d["dirty"]}
    wake.woken = {k: wkey(t, f) for k, t, f in d["woken"]}
    wake.seq = d["seq"]
    wake.rebuild_views()


def _dump_fair_sharing(c: ClusterState) -> dict:
    if c.afs.params is None and not c.afs.ledgers:
        return {"ledgers": None}
    return {"ledgers": [[k, l.anchor_ms, {r: str(v) for r, v in l.anchor.items()}, l.current, l.active_ms,
                         [[wl, at, {r: str(v) for r, v in amounts.items()}] for wl, (at, amounts) in l.penalties.items()],
                         l.version]
                        for k, l in c.afs.ledgers.items()]}


def _load_fair_sharing(c: ClusterState, d: dict) -> None:
    if c.config.admission_fair_sharing is not None:
        c.afs.params = DecayParams(c.config.admission_fair_sharing)
    for key, anchor_ms, anchor, current, active_ms, penalties, version in d["ledgers"] or ():
        ledger = UsageLedger(anchor_ms, {r: Decimal(v) for r, v in anchor.items()})
        ledger.current, ledger.active_ms, ledger.version = current, active_ms, version
        ledger.penalties = {w: (at, {r: Decimal(v) for r, v in amounts.items()}) for w, at, amounts in penalties}
        c.afs.ledgers[key] = ledger


def _dump_scopes(c: ClusterState) -> dict:
    return {"blockers": {s: i.key for s, i in c.scope_gate.blockers.items()},
            "deferred": {s: sorted(n) for s, n in c.scope_gate.deferred.items()}}


def _load_scopes(c: ClusterState, d: dict) -> None:
    wl = c.workloads
    c.scope_gate.blockers = {s: wl[k] for s, k in d["blockers"].items()}
    c.scope_gate.deferred = {s: set(n) for s, n in d["deferred"].items()}


def _dump_placement(c: ClusterState) -> dict:
    return {"topologies": [_enc(t) for t in c.nodes.topology_objects()],
            "held": [[w.key, [[node, pods, amounts] for node, pods, amounts in w.nodes]]
                     for w in c.workloads.values() if w.nodes],
            "waiting": [[key, total, short, gained] for key, (_, total, short, gained) in c.placement.waiting.items()],
            **({"pods": [[key, node, amounts] for key, (node, amounts) in c.pod_nodes.held.items()]}
               if c.pod_nodes.held else {})}


def _load_placement(c: ClusterState, d: dict) -> None:
    """Topologies, then what each workload holds on nodes (re-charged on the ledger, which the
    ``nodes`` component restored empty), then who waits for nodes."""
    for t in d["topologies"]:
        c.nodes.apply_topology(_dec(t))
    for key, held in d["held"]:
        w = c.workloads[key]
        w.nodes = [(node, pods, dict(amounts)) for node, pods, amounts in held]
        for node, pods, amounts in w.nodes:
            c.nodes.allocate(key, node, pods, amounts)
    c.placement.waiting = {key: [c.workloads[key], dict(total), short, gained]
                           for key, total, short, gained in d["waiting"]}
    for key, node, amounts in d.get("pods", ()):
        c.pod_nodes.held[key] = (node, dict(amounts))
        c.nodes.allocate(key, node, 1, dict(amounts))


OPTIONAL_COMPONENTS: dict[str, dict] = {"placement": {"version": 1, "topologies": [], "held": [], "waiting": []}}
"""Components a snapshot written before they existed lacks, with the document that means "empty"."""


COMPONENTS: dict[str, tuple[int, Any, Any]] = {
    "objects": (1, _dump_objects, _load_objects),
    "nodes": (1, _dump_nodes, _load_nodes),
    "quotaModel": (1, _dump_model, _load_model),
    "hierarchy": (1, _dump_hierarchy, _load_hierarchy),
    "workloads": (3, _dump_workloads, _load_workloads),
    "queues": (2, _dump_queues, _load_queues),
    "wakeIndex": (1, _dump_wake_index, _load_wake_index),
    "fairSharing": (1, _dump_fair_sharing, _load_fair_sharing),
    "scopes": (1, _dump_scopes, _load_scopes),
    "placement": (1, _dump_placement, _load_placement),
}
"""Component name → (current version, dump, load), in load order."""

COMPONENT_UPGRADES: dict[tuple[str, int], Any] = {("workloads", 1): _upgrade_workloads_1,
                                                   ("workloads", 2): _upgrade_workloads_2,
                                                   ("queues", 1): _upgrade_queues_1}
"""``(component, version) -> pure function`` turning that version's document into the next version's."""


# -- upgrades of older formats ----------------------------------------------------------------------

def _upgrade_format_1(doc: dict) -> dict:
    """Format 1 (one flat document per cluster, the quota tree inside the hierarchy rows, wake-up
    entries naming quota nodes) → format 2 (component documents).  Pure."""
    def waiter(e: list) -> list:
        key, park, _node, cq_name, needs = e
        return [key, park, cq_name, needs]

    clusters = []
    for d in doc["clusters"]:
        wake = d["wake"]
        linked = {row["name"]: row["parent"] if row["linked"] else None for row in d["cohorts"]}
        components = {
            "objects": {"version": 1, "clock": d["clock"], "seq": d["seq"], "config": d["config"],
                        "flavors": d["flavors"], "localQueues": d["localQueues"]},
            "nodes": {"version": 1, "nodes": [node_document(_dec(row)) for row in d["nodes"]]},
            "quotaModel": {"version": 1, "name": "kueue", "modelVersion": 1, "doc": {
                "cohorts": [[row["name"], linked[row["name"]], row["quota"]] for row in d["cohorts"]],
                "clusterQueues": [[row["name"], row["cohort"], row["quota"], row["usage"]]
                                  for row in d["clusterQueues"]]}},
            "hierarchy": {"version": 1,
                          "cohorts": [{"name": r["name"], "spec": r["spec"], "parent": r["parent"],
                                       "linked": r["linked"]} for r in d["cohorts"]],
                          "clusterQueues": [{"name": r["name"], "spec": r["spec"], "cohort": r["cohort"]}
                                            for r in d["clusterQueues"]],
                          "unlinked": d["unlinked"]},
            "workloads": {"version": 1, "workloads": d["workloads"]},
            "queues": {"version": 1, "queues": d["queues"], "waiting": d["waiting"],
                       "byLocalQueue": d["byLocalQueue"], "admittedBy": d["admittedBy"]},
            "wakeIndex": {"version": 1, "released": wake["released"],
                          "heaps": [[t, f, [[th, s, waiter(e)] for th, s, e in heap]] for t, f, heap in wake["heaps"]],
                          "buckets": [[t, f, [[val, [[a, b, cq, u, s, waiter(e)] for a, b, cq, u, s, e in heap]]
                                              for val, heap in vals]] for t, f, _root, vals in wake["buckets"]],
                          "dirty": wake["dirty"], "woken": wake["woken"], "seq": wake["seq"]},
            "fairSharing": {"version": 1, "ledgers": None if d["afs"] is None else d["afs"]["ledgers"]},
            "scopes": {"version": 1, **d["scopes"]},
        }
        clusters.append({"name": d["name"], "components": components})
    return {**doc, "format": 2, "clusters": clusters}


UPGRADES: dict[int, Any] = {1: _upgrade_format_1}
"""``format -> pure function`` turning a document of that format into the next format."""


# -- dump / load ------------------------------------------------------------------------------------

def dump(engine: Engine, clusters: list[str] | None = None) -> bytes:
    """The engine's complete state as zlib-compressed canonical JSON; with ``clusters``, only those
    clusters (their chains, seen ids and state; the event counters stay engine-wide)."""
    names = [n for n in engine.clusters if clusters is None or n in clusters]
    doc = {
        "format": SNAPSHOT_FORMAT, "engineVersion": ENGINE_VERSION,
        "counts": [engine.applied, engine.rejected, engine.duplicates],
        "chains": {name: engine.chains[name].hex() for name in names},
        "seen": {name: sorted(engine._seen[name]) for name in names},
        "clusters": [{"name": name, "components": {
            component: {"version": version, **dumper(engine.clusters[name])}
            for component, (version, dumper, _) in COMPONENTS.items()}} for name in names],
    }
    return zlib.compress(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS), 1)


def _load_cluster(d: dict) -> ClusterState:
    c = ClusterState(d["name"])
    components = d["components"]
    for component, (version, _, loader) in COMPONENTS.items():
        part = components.get(component) or OPTIONAL_COMPONENTS.get(component)
        if part is None:
            raise SnapshotError(f"cluster {d['name']!r}: component {component!r} missing")
        while part["version"] != version:
            upgrade = COMPONENT_UPGRADES.get((component, part["version"]))
            if upgrade is None:
                raise SnapshotError(f"cluster {d['name']!r}: {component!r} version {part['version']} cannot be "
                                    f"read by version {version}")
            part = upgrade(part)
        loader(c, part)
    return c


def load(blob: bytes) -> Engine:
    """Rebuild an engine from ``dump`` output (of this format, or an older one upgraded on the way).

    Raises:
        SnapshotError: not a snapshot, written by another engine version, or a format or component
            version that cannot be upgraded (the caller then rebuilds from events).
    """
    try:
        doc = orjson.loads(zlib.decompress(blob))
    except (zlib.error, orjson.JSONDecodeError) as exc:
        raise SnapshotError(f"not a quotaledger snapshot: {exc}") from exc
    if not isinstance(doc, dict) or doc.get("engineVersion") != ENGINE_VERSION:
        raise SnapshotError(f"snapshot of engine {doc.get('engineVersion') if isinstance(doc, dict) else None} "
                            f"cannot be restored by engine {ENGINE_VERSION}")
    while doc.get("format") != SNAPSHOT_FORMAT:
        upgrade = UPGRADES.get(doc.get("format"))  # type: ignore[arg-type]
        if upgrade is None:
            raise SnapshotError(f"snapshot format {doc.get('format')} cannot be restored by format {SNAPSHOT_FORMAT}")
        doc = upgrade(doc)
    engine = Engine()
    engine.applied, engine.rejected, engine.duplicates = doc["counts"]
    engine.chains = {name: bytes.fromhex(chain) for name, chain in doc["chains"].items()}
    engine._seen = {name: set(ids) for name, ids in doc["seen"].items()}
    for d in doc["clusters"]:
        engine.clusters[d["name"]] = _load_cluster(d)
    return engine
