"""Engine snapshots: the complete state of an ``Engine`` as canonical bytes, and back.

``dump(engine)`` captures everything that can influence future decisions — objects, the quota
tree (including which cohort edges are linked while a cycle exists), every workload with its
queue state, the wake-up index, admission-scope gates, fair-sharing ledgers, hash chains, seen
event ids and counters — as sorted-key JSON (orjson), zlib-compressed.  ``load(blob)`` rebuilds an
engine that continues exactly as the original would have: a snapshot plus the tail of the event
log gives the same decisions, state and hash as replaying everything (property-tested).

Derived data (subtree quota, cohort usage, node heights, caches) is recomputed, not stored.
Decimal values are stored as exact strings.  The format carries ``SNAPSHOT_FORMAT`` and the
engine version; ``load`` refuses any other, since a different engine may decide differently.
Known limit: workloads with equal priority, creation time *and* uid (an explicit duplicate uid)
may swap queue order after a restore.
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
from statemodel.hierarchy import ClusterQueueEntry, CohortEntry
from statemodel.placement.nodes import NodeLedger, node_document
from statemodel.queues.cluster_queue import ClusterQueueQueue
from statemodel.quota.kueue import QuotaNode, _recompute_quota, add_usage, link
from statemodel.version import ENGINE_VERSION
from statemodel.workload import PodSetAssignment, WorkloadInfo, WorkloadStatus

SNAPSHOT_FORMAT = 1
_CLASSES = {cls.__name__: cls for cls in vars(objects_module).values()
            if isinstance(cls, type) and dataclasses.is_dataclass(cls)}
_FIELDS = {cls: tuple(f.name for f in dataclasses.fields(cls)) for cls in _CLASSES.values()}


class SnapshotError(ValueError):
    """The blob is not a snapshot this engine can restore (format or engine version differs)."""


# -- objects ------------------------------------------------------------------------------------

def _enc_workload(w: objects_module.Workload) -> list:
    """Fast path for the bulk of a snapshot: a Workload as a flat list (``_dec_workload``)."""
    return [w.namespace, w.name, w.uid, w.creation_ms, w.queue_name, w.priority,
            [[p.name, p.count, [list(r) for r in p.requests], p.min_count] for p in w.pod_sets],
            _enc(w.admission)]


def _dec_workload(row: list) -> objects_module.Workload:
    ns, name, uid, creation, queue, priority, pod_sets, admission = row
    return objects_module.Workload(
        ns, name, uid, creation, queue, priority,
        tuple(objects_module.PodSet(p[0], p[1], tuple((r, a) for r, a in p[2]), p[3]) for p in pod_sets),
        _dec(admission))


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


def _node_ref(node: QuotaNode) -> list:
    return [node.is_cluster_queue, node.name]


def _nodes_document(rows: list) -> list[dict]:
    """The node ledger's document of a cluster's ``nodes`` entry: as written, or upgraded from the
    encoding snapshots used before the ledger wrote its own (``_enc`` of each ``Node``, a list)."""
    return [node_document(_dec(row)) if isinstance(row, list) else row for row in rows]


# -- dump -----------------------------------------------------------------------------------------

def _dump_cluster(c: ClusterState) -> dict:
    h = c.hierarchy
    wake = c.wake_index
    params = c.afs.params

    def entry(e: tuple) -> list:
        info, park, node, cq_name, needs = e
        return [info.key, park, _node_ref(node), cq_name, [[list(fr), val] for fr, val in needs]]

    return {
        "name": c.name, "clock": c.clock_ms, "seq": c.seq, "config": _enc(c.config),
        "flavors": [_enc(o) for o in c.flavors.values()],
        "localQueues": [_enc(o) for o in c.local_queues.values()],
        "nodes": c.nodes.document(),
        "cohorts": [{"name": n, "spec": _enc(e.spec), "parent": e.parent_name, "linked": e.node.parent is not None,
                     "quota": [_frs(e.node.nominal), _frs(e.node.borrowing_limit), _frs(e.node.lending_limit)]}
                    for n, e in h.cohorts.items()],
        "clusterQueues": [{"name": n, "spec": _enc(e.spec), "cohort": e.cohort_name,
                           "quota": [_frs(e.node.nominal), _frs(e.node.borrowing_limit), _frs(e.node.lending_limit)],
                           "usage": _frs(e.node.usage)}
                          for n, e in h.cluster_queues.items()],
        "unlinked": sorted(h._unlinked),
        "workloads": [{
            "obj": _enc_workload(w.obj), "status": w.status, "cq": w.cluster_queue,
            "assignment": None if w.assignment is None else [[p.name, p.count, p.flavors, p.usage] for p in w.assignment],
            "charge": _frs(w.charge), "borrowing": w.borrowing, "reason": w.reason, "message": str(w.message),
            "park": w.park, "queued": w.queued_ms, "admitted": w.admitted_ms, "observed": w.observed,
        } for w in c.workloads.values()],
        "queues": [{"name": q.name, "strategy": q.strategy, "byUsage": q.by_usage, "members": list(q.members),
                    "parked": list(q.parked), "blocked": q.blocked.key if q.blocked is not None else None}
                   for q in c.queues.values()],
        "waiting": sorted(c.waiting),
        "byLocalQueue": {lq: list(m) for lq, m in c.by_local_queue.items()},
        "admittedBy": {cq: list(m) for cq, m in c.admitted.items()},
        "wake": {
            "released": [[list(k[0]), list(k[1]), v] for k, v in wake._released.items()],
            "heaps": [[list(k[0]), list(k[1]), [[t, s, entry(e)] for t, s, e in heap]] for k, heap in wake._heaps.items()],
            "buckets": [[list(k[0]), list(k[1]), _node_ref(root),
                         [[val, [[a, b, cq, d, s, entry(e)] for a, b, cq, d, s, e in heap]] for val, heap in vals.items()]]
                        for k, (root, vals) in wake._buckets.items()],
            "dirty": sorted([list(k[0]), list(k[1])] for k in wake.dirty),
            "woken": [[wl, list(k[0]), list(k[1])] for wl, k in wake._woken.items()],
            "seq": wake._seq,
        },
        "afs": None if params is None and not c.afs.ledgers else {
            "ledgers": [[k, l.anchor_ms, {r: str(v) for r, v in l.anchor.items()}, l.current, l.active_ms,
                         [[wl, at, {r: str(v) for r, v in amounts.items()}] for wl, (at, amounts) in l.penalties.items()],
                         l.version]
                        for k, l in c.afs.ledgers.items()],
        },
        "scopes": {"blockers": {s: i.key for s, i in c.scope_gate.blockers.items()},
                   "deferred": {s: sorted(n) for s, n in c.scope_gate.deferred.items()}},
    }


def dump(engine: Engine, clusters: list[str] | None = None) -> bytes:
    """The engine's complete state as zlib-compressed canonical JSON; with ``clusters``, only those
    clusters (their chains, seen ids and state; the event counters stay engine-wide)."""
    names = [n for n in engine.clusters if clusters is None or n in clusters]
    doc = {
        "format": SNAPSHOT_FORMAT, "engineVersion": ENGINE_VERSION,
        "counts": [engine.applied, engine.rejected, engine.duplicates],
        "chains": {name: engine.chains[name].hex() for name in names},
        "seen": {name: sorted(engine._seen[name]) for name in names},
        "clusters": [_dump_cluster(engine.clusters[name]) for name in names],
    }
    return zlib.compress(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS), 1)


# -- load -----------------------------------------------------------------------------------------

def _load_cluster(d: dict) -> ClusterState:
    c = ClusterState(d["name"])
    c.clock_ms, c.seq = d["clock"], d["seq"]
    c.config = _dec(d["config"])
    c.flavors = {o.name: o for o in map(_dec, d["flavors"])}
    c.local_queues = {o.key: o for o in map(_dec, d["localQueues"])}
    c.nodes = NodeLedger.from_document(_nodes_document(d["nodes"]))
    h = c.hierarchy

    def set_quota(node: QuotaNode, quota: list) -> None:
        node.nominal, node.borrowing_limit, node.lending_limit = (_unfrs(q) for q in quota)
        for fr in sorted(set(node.nominal) | set(node.lending_limit)):
            _recompute_quota(node, fr)

    for row in d["cohorts"]:
        e = h.cohorts[row["name"]] = CohortEntry(row["name"])
        e.spec, e.parent_name = _dec(row["spec"]), row["parent"]
        set_quota(e.node, row["quota"])
    for row in d["clusterQueues"]:
        e2 = h.cluster_queues[row["name"]] = ClusterQueueEntry(row["name"])
        e2.spec, e2.cohort_name = _dec(row["spec"]), row["cohort"]
        if e2.spec is not None:
            e2.rg_by_resource = {r: g for g in e2.spec.resource_groups for r in g.covered_resources}
            e2.covers_pods = "pods" in e2.rg_by_resource
        set_quota(e2.node, row["quota"])
    for row in d["cohorts"]:
        if row["parent"] is not None:
            h.cohorts[row["parent"]].child_cohorts.add(row["name"])
            if row["linked"]:
                link(h.cohorts[row["name"]].node, h.cohorts[row["parent"]].node)
    for row in d["clusterQueues"]:
        if row["cohort"] is not None:
            h.cohorts[row["cohort"]].child_cluster_queues.add(row["name"])
            link(h.cluster_queues[row["name"]].node, h.cohorts[row["cohort"]].node)
    for row in d["clusterQueues"]:
        node = h.cluster_queues[row["name"]].node
        for fr, amount in _unfrs(row["usage"]).items():
            add_usage(node, fr, amount)
    h._unlinked = set(d["unlinked"])

    for row in d["workloads"]:
        w = WorkloadInfo(_dec_workload(row["obj"]), row["queued"])
        w.status, w.cluster_queue, w.borrowing = WorkloadStatus(row["status"]), row["cq"], row["borrowing"]
        w.assignment = None if row["assignment"] is None else [PodSetAssignment(*p) for p in row["assignment"]]
        w.charge = _unfrs(row["charge"])
        w.reason, w.message, w.park = row["reason"], row["message"], row["park"]
        w.admitted_ms, w.observed = row["admitted"], row["observed"]
        c.workloads[w.key] = w
    wl = c.workloads
    for row in d["queues"]:
        q = c.queues[row["name"]] = ClusterQueueQueue(row["name"])
        q.strategy, q.by_usage = row["strategy"], row["byUsage"]
        for key in row["members"]:
            q.push(wl[key])
        for key in row["parked"]:
            q.parked[key] = wl[key]
        q.blocked = wl[row["blocked"]] if row["blocked"] is not None else None
    for w, row in zip(wl.values(), d["workloads"]):  # push() bumped them; wake entries refer to these
        w.park = row["park"]
    c.waiting = set(d["waiting"])
    c.by_local_queue = {lq: {k: wl[k] for k in keys} for lq, keys in d["byLocalQueue"].items()}
    c.admitted = {cq: {k: wl[k] for k in keys} for cq, keys in d["admittedBy"].items()}

    def node_of(ref: list) -> QuotaNode:
        return (h.cluster_queues[ref[1]] if ref[0] else h.cohorts[ref[1]]).node

    def entry(e: list) -> tuple:
        key, park, ref, cq_name, needs = e
        return (wl[key], park, node_of(ref), cq_name, [((fr[0], fr[1]), val) for fr, val in needs])

    def wkey(tree: list, fr: list) -> tuple:
        return ((tree[0], tree[1]), (fr[0], fr[1]))

    wake = c.wake_index
    wd = d["wake"]
    wake._released = {wkey(t, f): v for t, f, v in wd["released"]}
    wake._heaps = {wkey(t, f): [(th, s, entry(e)) for th, s, e in heap] for t, f, heap in wd["heaps"]}
    wake._buckets = {wkey(t, f): (node_of(root), {val: [(a, b, cq, x, s, entry(e)) for a, b, cq, x, s, e in heap]
                                                  for val, heap in vals})
                     for t, f, root, vals in wd["buckets"]}
    wake.dirty = {wkey(t, f) for t, f in wd["dirty"]}
    wake._woken = {k: wkey(t, f) for k, t, f in wd["woken"]}
    wake._seq = wd["seq"]

    if c.config.admission_fair_sharing is not None:
        c.afs.params = DecayParams(c.config.admission_fair_sharing)
    if d["afs"] is not None:
        for key, anchor_ms, anchor, current, active_ms, penalties, version in d["afs"]["ledgers"]:
            ledger = UsageLedger(anchor_ms, {r: Decimal(v) for r, v in anchor.items()})
            ledger.current, ledger.active_ms, ledger.version = current, active_ms, version
            ledger.penalties = {w: (at, {r: Decimal(v) for r, v in amounts.items()}) for w, at, amounts in penalties}
            c.afs.ledgers[key] = ledger
    c.scope_gate.blockers = {s: wl[k] for s, k in d["scopes"]["blockers"].items()}
    c.scope_gate.deferred = {s: set(n) for s, n in d["scopes"]["deferred"].items()}
    return c


def load(blob: bytes) -> Engine:
    """Rebuild an engine from ``dump`` output.

    Raises:
        SnapshotError: not a snapshot, or written by another format or engine version.
    """
    try:
        doc = orjson.loads(zlib.decompress(blob))
    except (zlib.error, orjson.JSONDecodeError) as exc:
        raise SnapshotError(f"not a quotaledger snapshot: {exc}") from exc
    if doc.get("format") != SNAPSHOT_FORMAT or doc.get("engineVersion") != ENGINE_VERSION:
        raise SnapshotError(f"snapshot format {doc.get('format')} / engine {doc.get('engineVersion')} "
                            f"cannot be restored by format {SNAPSHOT_FORMAT} / engine {ENGINE_VERSION}")
    engine = Engine()
    engine.applied, engine.rejected, engine.duplicates = doc["counts"]
    engine.chains = {name: bytes.fromhex(chain) for name, chain in doc["chains"].items()}
    engine._seen = {name: set(ids) for name, ids in doc["seen"].items()}
    for d in doc["clusters"]:
        engine.clusters[d["name"]] = _load_cluster(d)
    return engine
