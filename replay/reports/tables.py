"""The demo report: what happened to each ClusterQueue and Cohort, computed from the SQL store.

Input is what ``replay.sql_sink.replay_to_db`` archived for one cluster — the ``events`` and
``decisions`` tables (history) and the ``cohorts`` / ``cluster_queues`` / ``local_queues`` /
``quotas`` projections (the tree and its quotas, which the demo does not change during a run) —
plus, optionally, the trace's observed waits.  Every number is exact integer arithmetic on
milliseconds and base units (millicores, bytes, counts) until the final ratio (a ``Fraction``) or
percentile (an element of the data); rounding happens only when a number is displayed.

The history, read in archive order (``events.position``; the decisions an event caused right
after it, by ``seq``):

- a ``Workload`` ``Applied`` event enters its ClusterQueue (through its LocalQueue) as pending at
  the event time (the simulator gives no ``creationTimestamp``, so creation = event time); with
  ``status.admission`` (a job already running when the trace began) it holds that quota from
  then on instead, and is counted as *running at start*, not as admitted;
- an ``Admitted`` decision moves it from pending to holding ``podSetAssignments[].resourceUsage``
  in the decision's ClusterQueue (per flavor and resource); its wait is decision time − the time
  it last became pending; an ``Evicted`` / ``Preempted`` decision, or an observed
  ``WorkloadEvicted`` of a workload still holding quota, puts it back to pending;
- ``WorkloadFinished`` or a ``Deleted`` Workload ends it (releasing quota or leaving the queue).

Per node (ClusterQueue, or Cohort = everything in its subtree), over the span
``[start, end]`` (default: first to last archived event; the demo passes the simulation horizon):

- ``admitted``: ``Admitted`` decisions; ``waits``: their waits; ``observed``: the trace's own
  waits (e.g. DLRM ``scheduled_time − creation_time``) of the same workloads, where it has one.
  Percentiles are **nearest-rank**: p-th = the ⌈p·n/100⌉-th smallest value (so always a value
  that occurred).
- ``usage_ms[resource]``: ∫ usage dt summed over flavors (base units × ms); utilization =
  that / (nominal × span), where nominal is the sum of ``nominalQuota`` over the flavors and
  every node of the subtree (a Cohort's own quota included).  Above 100 % means it ran on
  borrowed quota.
- ``borrowing_ms``: time during which, for some flavor and resource, the subtree used more than
  its subtree nominal — it ran on quota from outside itself.  A root cohort cannot borrow.
- ``lent_ms``: time during which, for some flavor and resource, the node had unused lendable
  quota (``min(nominal − usage, lendingLimit)`` > 0; no ``lendingLimit`` = all of it) while its
  siblings under the same parent together used more than their own nominal plus the parent's own
  quota — so they were running on quota lent by their siblings, of which this node's spare was
  part (Kueue pools lendable quota and does not record which lender a borrower used).
- ``preempted``: ``Preempted`` decisions of the workloads of the node's ClusterQueues (the
  victim's ClusterQueue); ``lost_gpu_ms``: the work those preemptions threw away, in GPU × ms —
  for each, the run time between the victim's admission and the preemption times the GPUs
  (``nvidia.com/gpu``, all flavors) it held.  A preempted job restarts from scratch when admitted
  again (the simulator's rule), so that run is lost.  With ``releaseOn: Eviction`` the run is
  counted up to the decision (docs/preemption.md).
- ``pending_peak``: the most workloads pending at once (counted after all events of an instant,
  so a workload admitted by the event that submitted it never counts); ``pending_at_end``.
- ``pending_ms``: time with at least one pending workload; of that, ``pending_room_ms`` while the
  node's usage was below its nominal quota in every flavor and resource it has nominal quota of,
  and ``pending_idle_ms`` while its parent's subtree used less than the parent's subtree nominal
  (the children's nominal plus the parent's own) in every such flavor and resource (``None`` for
  a root) — the "stuck queue" signal: work waits although quota is idle.
- ``Report.jobs``: per submitted workload its ClusterQueue, priority class, first submission, last
  admission and finish (``replay.reports.summary`` derives JCT and bounded slowdown);
  ``Report.preemptions``: per ``Preempted`` decision its reason, the preemptor's and the victim's
  ClusterQueue and the GPU × ms lost.

Under the ``koordinator`` quota model (the cluster has ``elastic_quotas`` rows) the nodes are the
ElasticQuota groups (kind ``ParentQuota`` for ``is-parent`` groups, ``LeafQuota`` otherwise; the
root, system and default groups are not shown), read from that projection, and the units are
``v1`` Pods: a Pod ``Applied`` event enters the quota its ``quota.scheduling.koordinator.sh/name``
label names (else a quota named like its namespace, else the default group) as pending, or, with
``spec.nodeName``, holds its containers' requests from then on (running at start); decisions name
the quota in ``clusterQueue``.  The group's ``min`` plays the part of the nominal quota (a
parent's ``min`` already covers its children's: it is not added to them), so utilization is used
/ min and *borrowing* is time above min; ``lendable`` is the min of a group that lends
(``allow-lent-resource``), 0 otherwise; a parent's own share is its min minus its children's Σ
min.  Each group also reports its ``max``, ``runtime`` and ``used`` at the end of the history
(the projection).

Under the ``volcano`` quota model (the cluster has ``volcano_queues`` rows) the nodes are the
Volcano queues (kind ``ParentQueue`` for a queue with children, ``LeafQueue`` otherwise; Volcano's
own ``root`` and ``default`` queues are not shown) and the units are PodGroups: a simulator
``Batch`` applying a ``PodGroup`` and its ``Pod`` enters the group's ``spec.queue`` as pending, or,
with the pod bound to a node, holds the pod's requests from then on (running at start); deleting
the PodGroup withdraws it.  ``deserved`` plays the nominal quota as ``min`` does under
``koordinator`` (a parent's covers its children's), ``capability`` the most it may use,
``lendable`` is the deserved of a ``reclaimable`` queue; ``maximum`` / ``runtime`` / ``used`` are
its ``capability``, ``realCapability`` and ``allocated`` at the end.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TypeVar

import sqlalchemy as sa

from replay.store.db import SinkError, reading, redacted
from statemodel import sql_schema as s
from statemodel.quantity import parse_quantity

__all__ = ["NodeStats", "Report", "JobRecord", "PreemptionRecord", "build_report", "percentile", "GPU", "KOORDINATOR",
           "VOLCANO"]

GPU = "nvidia.com/gpu"
PENDING = ("", "")
"""Change key of the pending-workload count (flavor and resource keys are never empty)."""

Key = tuple[str, str]  # (flavor, resource)

KOORDINATOR = "koordinator"
"""``Report.model`` of a cluster that runs the ``koordinator`` quota model."""
VOLCANO = "volcano"
"""``Report.model`` of a cluster that runs the ``volcano`` quota model."""
VOLCANO_HIDDEN = ("root", "default")
"""Volcano's own queues, created by the model as upstream does; not report rows."""
POD_QUOTA_LABEL = "quota.scheduling.koordinator.sh/name"
SPECIAL_QUOTAS = ("koordinator-root-quota", "koordinator-system-quota", "koordinator-default-quota")
DEFAULT_QUOTA = "koordinator-default-quota"


Ranked = TypeVar("Ranked", int, Fraction)


def percentile(values: list[Ranked], p: int) -> Ranked | None:
    """Nearest-rank percentile of sorted ``values`` (integers or exact fractions): the ⌈p·n/100⌉-th
    smallest (``None`` when empty)."""
    if not values:
        return None
    rank = max(1, (p * len(values) + 99) // 100)
    return values[rank - 1]


@dataclass
class NodeStats:
    """Report numbers of one ClusterQueue or Cohort (module docstring for the definitions).

    Attributes:
        kind: ``"Cohort"`` or ``"ClusterQueue"``; name; parent (cohort name or ``None``); depth
            (0 = a root).
        admitted / running_at_start / pending_at_end: workload counts.
        waits_ms / observed_waits_ms: sorted waits in ms (simulated; the trace's own).
        usage_ms: resource → ∫ usage dt (base units × ms), all flavors.
        nominal: resource → nominal quota of the subtree (base units), all flavors.
        borrowing_ms / lent_ms / span_ms: ms.
        pending_peak: workloads pending at once, at most.
        preempted: ``Preempted`` decisions of its workloads; lost_gpu_ms: GPU × ms of the runs they ended.
        maximum / runtime / used: ``koordinator``: the group's ``max``, and its ``runtime`` and
            ``used`` at the end of the history; ``volcano``: the queue's ``capability``,
            ``realCapability`` and ``allocated`` at the end (resource → base units); empty otherwise.
        pending_ms: time with at least one pending workload; pending_room_ms: of that, time during
            which its usage was below its nominal quota in every flavor and resource it has nominal
            quota of (unused guarantee while work waits); pending_idle_ms: of ``pending_ms``, time
            during which its parent's subtree used less than the parent's subtree nominal in every
            such flavor and resource (idle quota in the cohort), ``None`` for a root.
    """

    kind: str
    name: str
    parent: str | None
    depth: int
    admitted: int = 0
    running_at_start: int = 0
    pending_at_end: int = 0
    waits_ms: list[int] = field(default_factory=list)
    observed_waits_ms: list[int] = field(default_factory=list)
    usage_ms: dict[str, int] = field(default_factory=dict)
    nominal: dict[str, int] = field(default_factory=dict)
    borrowing_ms: int = 0
    lent_ms: int = 0
    span_ms: int = 0
    pending_peak: int = 0
    preempted: int = 0
    lost_gpu_ms: int = 0
    maximum: dict[str, int] = field(default_factory=dict)
    runtime: dict[str, int] = field(default_factory=dict)
    used: dict[str, int] = field(default_factory=dict)
    pending_ms: int = 0
    pending_room_ms: int = 0
    pending_idle_ms: int | None = None

    def utilization(self, resource: str) -> Fraction | None:
        """Time-weighted usage / (nominal × span) of ``resource``; ``None`` without nominal quota."""
        nominal = self.nominal.get(resource, 0)
        if nominal <= 0 or self.span_ms <= 0:
            return None
        return Fraction(self.usage_ms.get(resource, 0), nominal * self.span_ms)

    def share(self, ms: int) -> Fraction | None:
        """``ms`` as a fraction of the span."""
        return Fraction(ms, self.span_ms) if self.span_ms > 0 else None


@dataclass
class JobRecord:
    """One submitted workload (Workload, Pod or PodGroup) of the history.

    Attributes:
        key: ``ns/name``; cluster_queue: its ClusterQueue (quota group, Volcano queue).
        priority_class: ``spec.priorityClassName``, else ``priority <spec.priority>``, else ``(none)``.
        submitted_ms: when it entered its queue first; admitted_ms: its last admission (``None``:
            never admitted); finished_ms: when it finished while holding quota (``None``: it did not
            finish within the history).  Epoch ms.
    """

    key: str
    cluster_queue: str
    priority_class: str
    submitted_ms: int
    admitted_ms: int | None = None
    finished_ms: int | None = None


@dataclass(frozen=True)
class PreemptionRecord:
    """One ``Preempted`` decision: its ``reason`` (Kueue's, e.g. ``InCohortReclamation``), the
    preemptor's ClusterQueue (``None`` when the decision does not name it), the victim's
    ClusterQueue, and the GPU × ms of the run it ended (``lost_gpu_ms``, as ``NodeStats``)."""

    reason: str
    preemptor_cluster_queue: str | None
    victim_cluster_queue: str
    lost_gpu_ms: int


@dataclass
class Report:
    """The whole report of one cluster.

    Attributes:
        cluster / start_ms / end_ms: what and when.
        nodes: every Cohort and ClusterQueue, depth-first from the roots (children by name).
        top: names of the nodes the plots show: the children of the (first) root cohort, or the
            roots themselves when there is no cohort level below them.
        headline: top node → the resource its plot shows (``nvidia.com/gpu`` when the subtree has
            GPU quota, else ``cpu``).
        usage_series: top node → ``[(time ms, usage of its headline resource)]``: the value after
            each instant at which it changed, starting with ``(start, 0)``.
        pending_series: top node → ``[(time ms, pending workloads)]``, the same way.
        limits: top node → ``(subtree nominal, nominal + borrowingLimit or None)`` of its headline
            resource (``koordinator``: ``(min, max)``).
        model: the quota model of the cluster: ``kueue``, :data:`KOORDINATOR` or :data:`VOLCANO`.
        changes: ClusterQueue (quota group) → ``[(time ms, (flavor, resource), delta)]`` in history
            order: its usage changes, and its pending count under the key ``("", "")``; what the time
            series of ``replay.reports.timeline`` are computed from.
        waited: ClusterQueue → ``[(pending since ms, wait ms)]`` of each admission, in history order
            (the waits of ``waits_ms`` with the time the workload last became pending).
        jobs: one record per workload submitted during the history (not those running at its
            start), in submission order.
        preemptions: one record per ``Preempted`` decision, in decision order.
    """

    cluster: str
    start_ms: int
    end_ms: int
    nodes: list[NodeStats]
    model: str = "kueue"
    top: list[str] = field(default_factory=list)
    headline: dict[str, str] = field(default_factory=dict)
    usage_series: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    pending_series: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    limits: dict[str, tuple[int, int | None]] = field(default_factory=dict)
    changes: dict[str, list[tuple[int, Key, int]]] = field(default_factory=dict)
    waited: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    jobs: list[JobRecord] = field(default_factory=list)
    preemptions: list[PreemptionRecord] = field(default_factory=list)

    def node(self, name: str, kind: str | None = None) -> NodeStats:
        """The node called ``name`` (of ``kind`` when given: a Cohort and a ClusterQueue may share a name).

        Raises:
            KeyError: no such node.
        """
        for n in self.nodes:
            if n.name == name and (kind is None or n.kind == kind):
                return n
        raise KeyError(name)


# --------------------------------------------------------------------------- reading the store


@dataclass
class _Tree:
    cohort_parent: dict[str, str | None]  # inner node → parent
    cq_cohort: dict[str, str | None]  # leaf → parent
    lq_cq: dict[str, str]
    own: dict[tuple[str, str], dict[Key, tuple[int, int | None, int | None]]]  # (kind, name) → key → quota
    model: str = "kueue"
    inner: str = "Cohort"
    leaf: str = "ClusterQueue"
    quota_names: set[str] = field(default_factory=set)  # koordinator: every quota a pod may name
    parent_own: dict[str, dict[Key, int]] = field(default_factory=dict)  # koordinator: min − Σ children's min
    end: dict[str, tuple[dict[str, int], dict[str, int], dict[str, int]]] = field(default_factory=dict)


@dataclass
class _History:
    changes: dict[str, list[tuple[int, Key, int]]]  # ClusterQueue → [(time, key, delta)] in time order
    admitted: dict[str, int]
    running_at_start: dict[str, int]
    waits: dict[str, list[int]]
    waited: dict[str, list[tuple[int, int]]]  # ClusterQueue → [(pending since, wait)]
    observed: dict[str, list[int]]
    preempted: dict[str, int]
    lost_gpu_ms: dict[str, int]
    first_ms: int | None
    last_ms: int | None
    jobs: dict[str, JobRecord] = field(default_factory=dict)
    preemptions: list[PreemptionRecord] = field(default_factory=list)


def _read_tree(conn: sa.Connection, cluster: str) -> _Tree:
    eq = s.elastic_quotas.c
    groups = list(conn.execute(sa.select(eq.name, eq.parent, eq.is_parent, eq.allow_lent_resource, eq.min, eq.max,
                                         eq.runtime, eq.used).where(eq.cluster == cluster).order_by(eq.name)))
    if groups:
        return _elastic_tree(groups)
    vq = s.volcano_queues.c
    queues = list(conn.execute(sa.select(vq.name, vq.parent, vq.reclaimable, vq.deserved, vq.capability,
                                         vq.real_capability, vq.allocated).where(vq.cluster == cluster)
                               .order_by(vq.name)))
    if queues:
        return _volcano_tree(queues)
    cohort_parent = {r.name: r.parent for r in conn.execute(
        sa.select(s.cohorts.c.name, s.cohorts.c.parent).where(s.cohorts.c.cluster == cluster))}
    cq_cohort = {r.name: r.cohort for r in conn.execute(
        sa.select(s.cluster_queues.c.name, s.cluster_queues.c.cohort).where(s.cluster_queues.c.cluster == cluster))}
    lq_cq = {r.key: r.cluster_queue for r in conn.execute(
        sa.select(s.local_queues.c.key, s.local_queues.c.cluster_queue).where(s.local_queues.c.cluster == cluster))}
    q = s.quotas.c
    own: dict[tuple[str, str], dict[Key, tuple[int, int | None, int | None]]] = {}
    for r in conn.execute(sa.select(q.node_kind, q.node_name, q.flavor, q.resource, q.nominal, q.borrowing_limit,
                                    q.lending_limit).where(q.cluster == cluster)):
        kind = "Cohort" if r.node_kind == "cohort" else "ClusterQueue"
        own.setdefault((kind, r.node_name), {})[(r.flavor, r.resource)] = (r.nominal, r.borrowing_limit,
                                                                            r.lending_limit)
    return _Tree(cohort_parent, cq_cohort, lq_cq, own)


def _elastic_tree(groups: list) -> _Tree:
    """The ``koordinator`` tree from ``elastic_quotas`` rows (module docstring)."""
    tree = _Tree({}, {}, {}, {}, KOORDINATOR, "ParentQuota", "LeafQuota")
    shown = {g.name for g in groups if g.name not in SPECIAL_QUOTAS}
    tree.quota_names = {g.name for g in groups}
    child_min: dict[str, dict[Key, int]] = {}
    for g in groups:
        if g.name not in shown:
            continue
        parent = g.parent if g.parent in shown else None
        kind = tree.inner if g.is_parent else tree.leaf
        (tree.cohort_parent if g.is_parent else tree.cq_cohort)[g.name] = parent
        mins, maxs = g.min or {}, g.max or {}
        tree.own[(kind, g.name)] = {("", r): (mins.get(r, 0), maxs[r] - mins.get(r, 0) if r in maxs else None,
                                              mins.get(r, 0) if g.allow_lent_resource else 0)
                                    for r in sorted(set(mins) | set(maxs))}
        tree.end[g.name] = (dict(maxs), dict(g.runtime or {}), dict(g.used or {}))
        if parent is not None:
            acc = child_min.setdefault(parent, {})
            for r, v in mins.items():
                acc[("", r)] = acc.get(("", r), 0) + v
    for g in groups:
        if g.name in shown and g.is_parent:
            below = child_min.get(g.name, {})
            tree.parent_own[g.name] = {("", r): max(0, v - below.get(("", r), 0)) for r, v in (g.min or {}).items()}
    return tree


def _volcano_tree(queues: list) -> _Tree:
    """The ``volcano`` tree from ``volcano_queues`` rows (module docstring): ``deserved`` plays the
    nominal quota, ``capability`` the most it may use; a parent's deserved covers its children's."""
    tree = _Tree({}, {}, {}, {}, VOLCANO, "ParentQueue", "LeafQueue")
    shown = {q.name for q in queues if q.name not in VOLCANO_HIDDEN}
    tree.quota_names = {q.name for q in queues}
    parents = {q.parent for q in queues if q.name in shown}
    child_deserved: dict[str, dict[Key, int]] = {}
    for q in queues:
        if q.name not in shown:
            continue
        parent = q.parent if q.parent in shown else None
        inner = q.name in parents
        (tree.cohort_parent if inner else tree.cq_cohort)[q.name] = parent
        deserved, capability = q.deserved or {}, q.capability or {}
        tree.own[(tree.inner if inner else tree.leaf, q.name)] = {
            ("", r): (deserved.get(r, 0), capability[r] - deserved.get(r, 0) if r in capability else None,
                      deserved.get(r, 0) if q.reclaimable else 0)
            for r in sorted(set(deserved) | set(capability))}
        tree.end[q.name] = (dict(capability), dict(q.real_capability or {}), dict(q.allocated or {}))
        if parent is not None:
            acc = child_deserved.setdefault(parent, {})
            for r, v in deserved.items():
                acc[("", r)] = acc.get(("", r), 0) + v
    for q in queues:
        if q.name in shown and q.name in parents:
            below = child_deserved.get(q.name, {})
            tree.parent_own[q.name] = {("", r): max(0, v - below.get(("", r), 0))
                                       for r, v in (q.deserved or {}).items()}
    return tree


def _volcano_batch(events: list, t: int, hold: Callable[[str, str, int, dict[Key, int]], None],
                   enqueue: Callable[[str, str, int, dict], None], release: Callable[[str, int], None]) -> None:
    """A simulator ``Batch`` under the ``volcano`` model: a ``PodGroup`` and its ``Pod`` applied
    (submitted: pending in the group's ``spec.queue``; the pod bound to a node: running at start) or
    deleted (withdrawn).  The unit is the PodGroup (decisions name it); its usage is its pod's requests."""
    groups = {}
    pods = {}
    for sub in events:
        obj = (sub or {}).get("object") or {}
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace', 'default')}/{meta.get('name')}"
        if sub.get("type") == "Deleted" and obj.get("kind") == "PodGroup":
            release(key, t)
        elif sub.get("type") == "Applied" and obj.get("kind") == "PodGroup":
            groups[key] = obj
        elif sub.get("type") == "Applied" and obj.get("kind") == "Pod":
            pods[key] = obj
    for key, group in groups.items():
        spec = group.get("spec") or {}
        pod = pods.get(key) or {}
        queue = spec.get("queue") or "default"
        if (pod.get("spec") or {}).get("nodeName"):
            hold(key, queue, t, _pod_usage(pod))
        else:
            enqueue(key, queue, t, pod.get("spec") or {})


def _pod_quota(obj: dict, tree: _Tree) -> str:
    """The quota of an archived Pod (upstream ``GetQuotaName``, without the ``namespaces`` annotation)."""
    meta = obj.get("metadata") or {}
    label = (meta.get("labels") or {}).get(POD_QUOTA_LABEL)
    if label:
        return label if label in tree.quota_names else DEFAULT_QUOTA
    ns = meta.get("namespace", "default")
    return ns if ns in tree.quota_names else DEFAULT_QUOTA


def _pod_usage(obj: dict) -> dict[Key, int]:
    """A Pod's containers' requests, summed per resource (flavor ``""``)."""
    out: dict[Key, int] = {}
    for i, c in enumerate((obj.get("spec") or {}).get("containers") or ()):
        for res, value in ((c.get("resources") or {}).get("requests") or {}).items():
            out[("", res)] = out.get(("", res), 0) + parse_quantity(
                res, value, f"spec.containers[{i}].resources.requests.{res}")
    return out


def _priority_class(spec: dict) -> str:
    """The priority class of a Workload's, Pod's or PodGroup's ``spec`` (``JobRecord.priority_class``)."""
    name = spec.get("priorityClassName")
    if isinstance(name, str) and name:
        return name
    value = spec.get("priority")
    return f"priority {value}" if isinstance(value, int) and not isinstance(value, bool) else "(none)"


def _usage(assignments: object) -> dict[Key, int]:
    """``podSetAssignments`` → (flavor, resource) → podSet-total usage in base units."""
    out: dict[Key, int] = {}
    for i, ps in enumerate(assignments if isinstance(assignments, list) else ()):
        flavors = ps.get("flavors") or {}
        for res, value in (ps.get("resourceUsage") or {}).items():
            key = (flavors.get(res, ""), res)
            out[key] = out.get(key, 0) + parse_quantity(res, value, f"podSetAssignments[{i}].resourceUsage.{res}")
    return out


def _read_history(conn: sa.Connection, cluster: str, tree: _Tree, observed: dict[str, int]) -> _History:
    e, d = s.events.c, s.decisions.c
    by_cause: dict[int, list] = {}
    for r in conn.execute(sa.select(d.cause_position, d.decision_time_ms, d.type, d.workload, d.cluster_queue,
                                    d.payload).where(d.cluster == cluster).order_by(d.seq)):
        by_cause.setdefault(r.cause_position, []).append(r)
    h = _History({}, {}, {}, {}, {}, {}, {}, {}, None, None)
    queued: dict[str, tuple[str, int]] = {}        # pending workload → (ClusterQueue, since)
    holding: dict[str, tuple[str, dict[Key, int]]] = {}  # admitted workload → (ClusterQueue, usage)
    held_since: dict[str, int] = {}                # admitted workload → when it got its quota

    def change(cq: str, t: int, key: Key, delta: int) -> None:
        h.changes.setdefault(cq, []).append((t, key, delta))

    def release(key: str, t: int, finished: bool = False) -> None:
        if key in holding:
            cq, usage = holding.pop(key)
            for k, v in usage.items():
                change(cq, t, k, -v)
            if finished and key in h.jobs:
                h.jobs[key].finished_ms = t
        elif key in queued:
            cq, _ = queued.pop(key)
            change(cq, t, PENDING, -1)

    def hold(key: str, cq: str, t: int, usage: dict[Key, int]) -> None:
        """A unit already running when the history starts (an observed admission)."""
        holding[key] = (cq, usage)
        held_since[key] = t
        for k, v in usage.items():
            change(cq, t, k, v)
        h.running_at_start[cq] = h.running_at_start.get(cq, 0) + 1

    def enqueue(key: str, cq: str, t: int, spec: dict) -> None:
        """A submitted unit enters its queue as pending."""
        queued[key] = (cq, t)
        change(cq, t, PENDING, 1)
        if key in observed:
            h.observed.setdefault(cq, []).append(observed[key])
        h.jobs[key] = JobRecord(key, cq, _priority_class(spec), t)

    q = (sa.select(e.position, e.event_time_ms, e.type, e.payload)
         .where(e.cluster == cluster, e.status == "applied").order_by(e.position))
    for r in conn.execution_options(yield_per=5000).execute(q):
        t = r.event_time_ms
        h.first_ms = t if h.first_ms is None else h.first_ms
        h.last_ms = t
        payload = r.payload or {}
        obj = payload.get("object") or {}
        if r.type == "Applied" and obj.get("kind") == "Workload":
            meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
            ns = meta.get("namespace", "default")
            key = f"{ns}/{meta.get('name')}"
            admission = (obj.get("status") or {}).get("admission")
            release(key, t)  # a re-applied workload replaces the old one
            if admission:
                hold(key, admission.get("clusterQueue", ""), t, _usage(admission.get("podSetAssignments")))
            else:
                cq = tree.lq_cq.get(f"{ns}/{spec.get('queueName')}")
                if cq is not None:
                    enqueue(key, cq, t, spec)
        elif r.type == "Applied" and obj.get("kind") == "Pod" and tree.model == KOORDINATOR:
            meta = obj.get("metadata") or {}
            key = f"{meta.get('namespace', 'default')}/{meta.get('name')}"
            phase = (obj.get("status") or {}).get("phase")
            if key in holding or key in queued:  # an update of a known pod: it stays where it is
                if phase in ("Succeeded", "Failed"):
                    release(key, t)
            elif phase not in ("Succeeded", "Failed"):
                cq = _pod_quota(obj, tree)
                if (obj.get("spec") or {}).get("nodeName"):
                    hold(key, cq, t, _pod_usage(obj))
                else:
                    enqueue(key, cq, t, obj.get("spec") or {})
        elif r.type == "Batch" and tree.model == VOLCANO:
            _volcano_batch(payload.get("events") or [], t, hold, enqueue, release)
        elif r.type == "WorkloadFinished":
            release(payload.get("workload", ""), t, finished=True)
        elif r.type == "WorkloadEvicted" and payload.get("workload") in holding:  # observed: back to its queue
            key = payload["workload"]
            cq, usage = holding.pop(key)
            for k, v in usage.items():
                change(cq, t, k, -v)
            queued[key] = (cq, t)
            change(cq, t, PENDING, 1)
        elif r.type == "Deleted" and obj.get("kind") in ("Workload", "Pod"):
            meta = obj.get("metadata") or {}
            release(f"{meta.get('namespace', 'default')}/{meta.get('name')}", t)
        for dec in by_cause.get(r.position, ()):
            dt, wl = dec.decision_time_ms, dec.workload
            if dec.type == "Admitted":
                cq = dec.cluster_queue
                if wl in queued:
                    old_cq, since = queued.pop(wl)
                    change(old_cq, dt, PENDING, -1)
                    h.waits.setdefault(cq, []).append(dt - since)
                    h.waited.setdefault(cq, []).append((since, dt - since))
                usage = _usage(dec.payload.get("podSetAssignments"))
                holding[wl] = (cq, usage)
                held_since[wl] = dt
                for k, v in usage.items():
                    change(cq, dt, k, v)
                h.admitted[cq] = h.admitted.get(cq, 0) + 1
                if wl in h.jobs:
                    h.jobs[wl].admitted_ms = dt
            elif wl in holding:  # Evicted / Preempted: back to its queue
                cq, usage = holding.pop(wl)
                if dec.type == "Preempted":
                    h.preempted[cq] = h.preempted.get(cq, 0) + 1
                    gpus = sum(v for (_, res), v in usage.items() if res == GPU)
                    lost = gpus * (dt - held_since.get(wl, dt))
                    h.lost_gpu_ms[cq] = h.lost_gpu_ms.get(cq, 0) + lost
                    h.preemptions.append(PreemptionRecord(str(dec.payload.get("reason") or "(none)"),
                                                          dec.payload.get("preemptorClusterQueue"), cq, lost))
                for k, v in usage.items():
                    change(cq, dt, k, -v)
                queued[wl] = (cq, dt)
                change(cq, dt, PENDING, 1)
    return h


# --------------------------------------------------------------------------- sweeping the step functions


@dataclass
class _Child:
    name: str
    nominal: dict[Key, int]
    lendable: dict[Key, int]
    level: dict[Key, int] = field(default_factory=dict)
    since: dict[Key, int] = field(default_factory=dict)
    integral: dict[Key, int] = field(default_factory=dict)
    over: int = 0          # keys with level > nominal
    pending: int = 0
    stats: NodeStats | None = None


def _sweep(children: list[_Child], streams: list[list[tuple[int, Key, int]]], parent_own: dict[Key, int] | None,
           start: int, end: int, series: dict[int, str] | None = None,
           report: Report | None = None) -> None:
    """One pass over the merged changes of a parent's children (``streams[i]`` belongs to child
    ``i``): usage integrals, borrowing, lent and pending numbers of every child (``parent_own``:
    the parent's own nominal quota; ``None`` for roots, which share nothing and lend to no one);
    with ``series`` (child index → headline resource) also the plot series into ``report``."""
    merged = heapq.merge(*[[(t, i, k, v) for t, k, v in st] for i, st in enumerate(streams)], key=lambda c: c[0])
    borrowed: dict[Key, int] = {}  # Σ over children of max(0, level − nominal)
    pool: dict[Key, int] = {}  # the parent's subtree nominal: Σ children's nominal + its own
    for c in children:
        for k, v in c.nominal.items():
            pool[k] = pool.get(k, 0) + v
    for k, v in (parent_own or {}).items():
        pool[k] = pool.get(k, 0) + v
    pool_level: dict[Key, int] = {}  # Σ over children of level
    guaranteed = [sorted(k for k, v in c.nominal.items() if v > 0) for c in children]
    if parent_own is not None:
        for c in children:
            assert c.stats is not None
            c.stats.pending_idle_ms = 0
    t_prev = start

    def close_interval(t: int) -> None:
        dt = t - t_prev
        if dt <= 0:
            return
        short = () if parent_own is None else [k for k, b in borrowed.items() if b > parent_own.get(k, 0)]
        for i, c in enumerate(children):
            st = c.stats
            assert st is not None
            if c.over:
                st.borrowing_ms += dt
            elif short and any(min(c.nominal.get(k, 0) - c.level.get(k, 0), c.lendable.get(k, 0)) > 0 for k in short):
                st.lent_ms += dt
            if c.pending > 0:
                st.pending_ms += dt
                keys = guaranteed[i]
                if keys and all(c.level.get(k, 0) < c.nominal[k] for k in keys):
                    st.pending_room_ms += dt
                if st.pending_idle_ms is not None and keys and \
                        all(pool_level.get(k, 0) < pool.get(k, 0) for k in keys):
                    st.pending_idle_ms += dt

    def record(t: int) -> None:
        for c in children:
            st = c.stats
            assert st is not None
            st.pending_peak = max(st.pending_peak, c.pending)
        if series is not None and report is not None:
            for i, res in series.items():
                c = children[i]
                for points, value in ((report.usage_series[c.name], sum(v for (_, r), v in c.level.items() if r == res)),
                                      (report.pending_series[c.name], c.pending)):
                    if points[-1][1] != value:
                        points.append((t, value))

    current: int | None = None
    for t, i, key, delta in merged:
        t = min(max(t, start), end)
        if t != current:
            if current is not None:
                record(current)
            close_interval(t)
            t_prev = max(t_prev, t)
            current = t
        c = children[i]
        if key == PENDING:
            c.pending += delta
            continue
        old = c.level.get(key, 0)
        new = old + delta
        c.integral[key] = c.integral.get(key, 0) + old * (t - c.since.get(key, start))
        c.since[key] = t
        c.level[key] = new
        nominal = c.nominal.get(key, 0)
        c.over += (new > nominal) - (old > nominal)
        borrowed[key] = borrowed.get(key, 0) + max(0, new - nominal) - max(0, old - nominal)
        pool_level[key] = pool_level.get(key, 0) + delta
    if current is not None:
        record(current)
    close_interval(end)
    for c in children:
        st = c.stats
        assert st is not None
        for key, level in c.level.items():
            c.integral[key] = c.integral.get(key, 0) + level * (end - c.since.get(key, start))
        for (_, res), v in c.integral.items():
            st.usage_ms[res] = st.usage_ms.get(res, 0) + v
        st.pending_at_end = c.pending


def build_report(url: str, cluster: str, *, observed_waits: dict[str, int] | None = None,
                 start_ms: int | None = None, end_ms: int | None = None) -> Report:
    """The report of ``cluster`` from the SQL store at ``url`` (module docstring).

    Args:
        url: SQLAlchemy URL of a store written by ``replay.sql_sink.replay_to_db``.
        cluster: the cluster (the demo: the trace name).
        observed_waits: workload key (``ns/name``) → the trace's own wait in ms, where it has one.
        start_ms / end_ms: the span (epoch ms); default: first / last archived event of the cluster.

    Raises:
        SinkError: the store cannot be read, has no schema, or holds no event of ``cluster``.
        EventError: an archived quantity cannot be read (the message names the field).
    """
    with reading(url) as conn:
        tree = _read_tree(conn, cluster)
        hist = _read_history(conn, cluster, tree, observed_waits or {})
    if hist.first_ms is None or hist.last_ms is None:
        raise SinkError(f"{redacted(url)} holds no event of cluster {cluster!r}")
    start = hist.first_ms if start_ms is None else start_ms
    end = max(start, hist.last_ms if end_ms is None else end_ms)
    return _compute(cluster, tree, hist, start, end)


def _compute(cluster: str, tree: _Tree, hist: _History, start: int, end: int) -> Report:
    children: dict[str | None, list[tuple[str, str]]] = {}
    inner, leaf = tree.inner, tree.leaf
    for name, parent in tree.cohort_parent.items():
        children.setdefault(parent, []).append((inner, name))
    for name, cohort in tree.cq_cohort.items():
        children.setdefault(cohort, []).append((leaf, name))
    for lst in children.values():
        lst.sort(key=lambda kn: (kn[1], kn[0]))
    nodes: list[NodeStats] = []
    subtree_cqs: dict[tuple[str, str], list[str]] = {}
    nominal: dict[tuple[str, str], dict[Key, int]] = {}

    def finish(node: NodeStats) -> None:
        """A node's subtree totals, once every child is finished."""
        kind, name = node.kind, node.name
        total = dict((k, q[0]) for k, q in tree.own.get((kind, name), {}).items())
        cqs = [name] if kind == leaf else []
        for ck, cn in (children.get(name, []) if kind == inner else []):
            cqs += subtree_cqs[(ck, cn)]
            if tree.model in (KOORDINATOR, VOLCANO):  # a parent's min / deserved covers its children's
                continue
            for k, v in nominal[(ck, cn)].items():
                total[k] = total.get(k, 0) + v
        subtree_cqs[(kind, name)] = cqs
        nominal[(kind, name)] = total
        for (_, res), v in total.items():
            node.nominal[res] = node.nominal.get(res, 0) + v
        for cq in cqs:
            node.admitted += hist.admitted.get(cq, 0)
            node.running_at_start += hist.running_at_start.get(cq, 0)
            node.waits_ms += hist.waits.get(cq, [])
            node.observed_waits_ms += hist.observed.get(cq, [])
            node.preempted += hist.preempted.get(cq, 0)
            node.lost_gpu_ms += hist.lost_gpu_ms.get(cq, 0)
        node.waits_ms.sort()
        node.observed_waits_ms.sort()
        if name in tree.end:
            node.maximum, node.runtime, node.used = tree.end[name]

    def walk(kind: str, name: str) -> None:
        """Nodes in pre-order, finished in post-order, with an explicit stack (no recursion on depth)."""
        stack: list[tuple[str, str, str | None, int, NodeStats | None]] = [(kind, name, None, 0, None)]
        while stack:
            k, n, parent, depth, done = stack.pop()
            if done is not None:
                finish(done)
                continue
            node = NodeStats(k, n, parent, depth, span_ms=end - start)
            nodes.append(node)
            stack.append((k, n, parent, depth, node))
            kids = children.get(n, []) if k == inner else []
            for ck, cn in reversed(kids):
                stack.append((ck, cn, n, depth + 1, None))

    roots = children.get(None, [])
    for kind, name in roots:
        walk(kind, name)
    by_id = {(n.kind, n.name): n for n in nodes}
    report = Report(cluster, start, end, nodes, tree.model, changes=hist.changes, waited=hist.waited,
                    jobs=list(hist.jobs.values()), preemptions=list(hist.preemptions))

    def child(kind: str, name: str) -> _Child:
        own = tree.own.get((kind, name), {})
        total = nominal[(kind, name)]
        lendable = {k: (q[2] if q[2] is not None else total.get(k, 0)) for k, q in own.items()}
        for k in total:
            lendable.setdefault(k, total[k])
        return _Child(name, total, lendable, stats=by_id[(kind, name)])

    def stream(kind: str, name: str) -> list[tuple[int, Key, int]]:
        cqs = subtree_cqs[(kind, name)]
        if len(cqs) == 1:
            return hist.changes.get(cqs[0], [])
        return list(heapq.merge(*[hist.changes.get(cq, []) for cq in cqs], key=lambda c: c[0]))

    first_root = next((kn for kn in roots if kn[0] == inner), None)
    top = children.get(first_root[1], []) if first_root is not None else roots
    parents: list[tuple[str | None, list[tuple[str, str]]]] = [(None, roots)]
    parents += [(n.name, children.get(n.name, [])) for n in nodes if n.kind == inner]
    for parent, kids in parents:
        if not kids:
            continue
        cs = [child(k, n) for k, n in kids]
        series = None
        if kids is top:
            series = {}
            for i, (k, n) in enumerate(kids):
                quota = tree.own.get((k, n), {}) if tree.model == KOORDINATOR else {}
                res = GPU if any(r == GPU and v > 0 for (_, r), v in nominal[(k, n)].items()) or \
                    any(r == GPU and (q[1] or 0) > 0 for (_, r), q in quota.items()) else "cpu"
                series[i] = res
                report.top.append(n)
                report.headline[n] = res
                report.usage_series[n] = [(start, 0)]
                report.pending_series[n] = [(start, 0)]
                nom = sum(v for (_, r), v in nominal[(k, n)].items() if r == res)
                limits = [q[1] for (_, r), q in tree.own.get((k, n), {}).items() if r == res]
                capped = bool(limits) and all(b is not None for b in limits)
                report.limits[n] = (nom, nom + sum(b or 0 for b in limits) if capped else None)
        if parent is None:
            own = None
        elif tree.model in (KOORDINATOR, VOLCANO):
            own = tree.parent_own.get(parent, {})
        else:
            own = {k: q[0] for k, q in tree.own.get((inner, parent), {}).items()}
        _sweep(cs, [stream(k, n) for k, n in kids], own, start, end, series, report)
    return report
