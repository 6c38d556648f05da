"""The placement part of the demo report: node utilization per GPU model, GPU fragmentation over
time, and simulated waits with and without placement next to the trace's observed ones.

Computed from the SQL store (``build_placement_report``): the archived ``v1`` ``Node`` events (a
node's labels and allocatable), the Workloads' per-pod requests (``podSets[].requests``, else the
sum of the template's container requests), and the ``Admitted`` decisions' ``nodes`` (pod set →
node → pods, docs/placement.md), replayed in archive order (decisions right after the event that
caused them):

* a workload holds ``pods × per-pod request`` on each node its ``Admitted`` decision names, until
  it finishes (``WorkloadFinished``), is deleted, evicted (``WorkloadEvicted``) or its decision is
  ``Evicted`` / ``Preempted`` (then it is pending again);
* a workload is pending from its ``Applied`` Workload event to its ``Admitted`` decision (and
  again after an eviction); each of its pod sets is then a *pending pod set*: a per-pod shape, a
  pod count and a required topology level (``Topology`` events give the levels).
* a ``v1`` Pod of the pod-scheduling models is such a unit too: under ``koordinator`` the pod itself
  (one pod), under ``volcano`` its PodGroup (annotation ``scheduling.k8s.io/group-name``; the
  group's ``Admitted`` decisions count its pods per node, each with the pod's request).

**Node utilization** (:class:`GroupUtilization`): per node group (the value of
:data:`MODEL_LABEL`, the GPU model, else of :data:`POOL_LABEL`, else ``-``) and resource,
``∫ allocated dt / ∫ allocatable dt`` over the span — time-weighted, exact integers.

**GPU fragmentation** (:class:`FragmentationSample`), sampled at ``samples`` evenly spaced
instants: *free* = the GPUs not allocated on schedulable nodes; *fragmented* = the free GPUs that
no pending pod set could use.  A pending pod set (a gang: all its pods or none) can use a node's
free GPUs when one of its pods fits there (every resource of its per-pod request ≤ the node's
free amount) **and** its whole gang fits in the node's domain at its required topology level
(``podSets[].topologyRequest.required`` or ``kai.scheduler/topology-required-placement``; the
domain is the nodes sharing the label values from the top level down to that level, as KAI
builds domain ids; without a required level the domain is the whole cluster).  Node selectors,
taints and the flavor's ``nodeLabels`` are not considered, so the figure is a lower bound of what
the placement stage could not use.  While no pending pod set asks for GPUs nothing is withheld
from anyone, and the figure is 0.  The GPU measure is ``alibaba.com/gpu-milli`` (thousandths of a
GPU, so GPU-sharing pods count) when the nodes have it, else ``nvidia.com/gpu``.

**Waits** (:class:`WaitRow`, ``wait_rows``): per ClusterQueue (openb: its QoS class), the
simulated admission − submission of the run with placement and of the same inputs without it,
next to the trace's observed waits (scheduled − created), nearest-rank percentiles.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import sqlalchemy as sa

from replay.reports.page import duration, percent
from replay.reports.tables import percentile
from replay.sim.importers.lingjun import POOL_LABEL
from replay.sim.importers.openb import GPU_MILLI, MODEL_LABEL
from replay.sim.manifests import queue_names
from replay.sim.simulator import SimulationResult
from replay.store.db import reading
from statemodel import sql_schema as s
from statemodel.quantity import parse_quantity

__all__ = ["GroupUtilization", "FragmentationSample", "PendingPodSet", "WaitRow", "PlacementReport", "build_placement_report",
           "placement_from_history", "HistoryItem",
           "fragmentation_at", "wait_rows", "write_fragmentation_plot", "placement_html", "placement_document",
           "wait_percentiles"]

GPU = "nvidia.com/gpu"
REPORTED = ("nvidia.com/gpu", GPU_MILLI, "cpu", "memory")
"""Resources reported in the utilization table, in this order (those the nodes have)."""
DEFAULT_SAMPLES = 300
KAI_TOPOLOGY = "kai.scheduler/topology"
KAI_REQUIRED = "kai.scheduler/topology-required-placement"
VOLCANO_GROUP = "scheduling.k8s.io/group-name"
"""The annotation naming a Volcano pod's PodGroup."""

Shape = tuple[tuple[str, int], ...]
"""A per-pod request: sorted ``(resource, base units)`` pairs."""


@dataclass
class GroupUtilization:
    """Utilization of one resource over one node group.

    Attributes:
        group: the label value (GPU model, pool, or ``-``); nodes: nodes of the group at the end;
        resource; allocatable: the group's allocatable at the end (base units);
        allocated_ms / allocatable_ms: ∫ allocated dt and ∫ allocatable dt (base units × ms).
    """

    group: str
    nodes: int
    resource: str
    allocatable: int
    allocated_ms: int
    allocatable_ms: int

    @property
    def utilization(self) -> Fraction | None:
        """``allocated_ms / allocatable_ms`` (``None`` when nothing was allocatable)."""
        return Fraction(self.allocated_ms, self.allocatable_ms) if self.allocatable_ms else None


@dataclass(frozen=True)
class FragmentationSample:
    """GPU fragmentation at one instant (module docstring), in the report's GPU measure.

    Attributes:
        time_ms: the instant; free: GPUs free on schedulable nodes; fragmented: the part of
        ``free`` no pending pod set could use; pending: pending pod sets that ask for GPUs.
    """

    time_ms: int
    free: int
    fragmented: int
    pending: int


@dataclass
class WaitRow:
    """Waits of one ClusterQueue's jobs (ms): observed, simulated with and without placement.

    Each ``*_waits`` list is sorted; ``*_never`` counts the jobs the run never admitted."""

    queue: str
    jobs: int
    observed_waits: list[int] = field(default_factory=list)
    placed_waits: list[int] = field(default_factory=list)
    placed_never: int = 0
    unplaced_waits: list[int] = field(default_factory=list)
    unplaced_never: int = 0


@dataclass
class PlacementReport:
    """The placement report of one cluster (module docstring).

    Attributes:
        cluster; start_ms / end_ms: the span; gpu_resource: the GPU measure and gpu_unit its amount
        per GPU (1000 for ``alibaba.com/gpu-milli``, else 1); utilization: per group and resource,
        groups by name; fragmentation: the samples in time order; waits: per ClusterQueue, by name.
    """

    cluster: str
    start_ms: int
    end_ms: int
    gpu_resource: str
    gpu_unit: int
    utilization: list[GroupUtilization]
    fragmentation: list[FragmentationSample]
    waits: list[WaitRow] = field(default_factory=list)

    def fragmented_share(self) -> Fraction | None:
        """Σ fragmented / Σ free over the samples where some GPU pod set was pending (``None``: never)."""
        free = sum(p.free for p in self.fragmentation if p.pending)
        return Fraction(sum(p.fragmented for p in self.fragmentation if p.pending), free) if free else None


def _group(labels: dict[str, str]) -> str:
    return labels.get(MODEL_LABEL) or labels.get(POOL_LABEL) or "-"


def _amounts(raw: object, path: str) -> dict[str, int]:
    return {res: parse_quantity(res, v, f"{path}.{res}") for res, v in (raw or {}).items()}  # type: ignore[union-attr]


def _pod_request(ps: dict, path: str) -> dict[str, int]:
    """A podSet's per-pod request: ``requests``, else the sum of the template's container requests."""
    if ps.get("requests") is not None:
        return _amounts(ps["requests"], f"{path}.requests")
    total: dict[str, int] = {}
    containers = (((ps.get("template") or {}).get("spec") or {}).get("containers")) or []
    for i, c in enumerate(containers):
        for res, amount in _amounts((c.get("resources") or {}).get("requests"), f"{path}.containers[{i}]").items():
            total[res] = total.get(res, 0) + amount
    return total


@dataclass(frozen=True, order=True)
class PendingPodSet:
    """A pending pod set as the fragmentation figure sees it.

    Attributes:
        shape: the per-pod request (sorted ``(resource, base units)``); count: its pods (a gang:
        all or none); domain: the node labels naming its required topology domain, top level
        down to the required level (``()``: no required level, the whole cluster is one domain).
    """

    shape: Shape
    count: int
    domain: tuple[str, ...] = ()


def _pods_fitting(free: dict[str, int], shape: Shape) -> int:
    """How many pods of ``shape`` fit in ``free`` (0 when any resource is short)."""
    return min((free.get(r, 0) // a for r, a in shape), default=0)


def fragmentation_at(time_ms: int, nodes: dict[str, tuple[dict[str, int], bool, dict[str, str]]],
                     allocated: dict[str, dict[str, int]], pending: list[PendingPodSet],
                     gpu: str) -> FragmentationSample:
    """One sample (module docstring).

    Args:
        nodes: name → (allocatable, schedulable, labels); allocated: name → resource → base units;
        pending: every pending pod set (those that ask for no ``gpu`` are left out here);
        gpu: the GPU measure.

    A pod set can use a node's free GPUs when one of its pods fits there and its whole gang fits
    in the node's domain (the nodes with the same values of the pod set's ``domain`` labels; a
    node lacking one is outside every domain of that level).
    """
    sets = sorted({p for p in pending if dict(p.shape).get(gpu, 0) > 0})
    free: dict[str, dict[str, int]] = {}
    for name in sorted(nodes):
        cap, schedulable, _ = nodes[name]
        if schedulable:
            used = allocated.get(name, {})
            free[name] = {r: a - used.get(r, 0) for r, a in cap.items()}
    usable: set[str] = set()
    for ps in sets:
        by_domain: dict[tuple[str, ...], list[tuple[str, int]]] = {}
        for name, f in free.items():
            labels = nodes[name][2]
            if any(label not in labels for label in ps.domain):
                continue
            pods = _pods_fitting(f, ps.shape)
            if pods:
                by_domain.setdefault(tuple(labels[label] for label in ps.domain), []).append((name, pods))
        for members in by_domain.values():
            if sum(pods for _, pods in members) >= ps.count:
                usable.update(name for name, _ in members)
    free_total = fragmented = 0
    for name, f in free.items():
        g = f.get(gpu, 0)
        if g > 0:
            free_total += g
            if sets and name not in usable:
                fragmented += g
    return FragmentationSample(time_ms, free_total, fragmented,
                               sum(1 for p in pending if dict(p.shape).get(gpu, 0) > 0))


class _Sweep:
    """The replay of the module docstring: nodes, allocations, pending pod sets, integrals, samples."""

    def __init__(self, start: int, end: int, samples: int) -> None:
        self.nodes: dict[str, tuple[dict[str, int], bool, dict[str, str]]] = {}
        self.topologies: dict[str, tuple[str, ...]] = {}    # Topology name → levels, top first
        self.group_of: dict[str, str] = {}
        self.allocated: dict[str, dict[str, int]] = {}
        self.requests: dict[str, dict[str, tuple[dict[str, int], int, str | None, str | None]]] = {}
        # workload → pod set → (per-pod request, count, required level label, topology name)
        self.holding: dict[str, list[tuple[str, dict[str, int], int]]] = {}
        self.pending: dict[str, list[PendingPodSet]] = {}
        self.alloc_sum: dict[tuple[str, str], int] = {}
        self.cap_sum: dict[tuple[str, str], int] = {}
        self.alloc_ms: dict[tuple[str, str], int] = {}
        self.cap_ms: dict[tuple[str, str], int] = {}
        self.start, self.end = start, end
        self.last = start
        n = max(1, samples)
        self.grid = [start + (end - start) * (i + 1) // n for i in range(n)] if end > start else [start]
        self.next = 0
        self.gpu = GPU
        self.samples: list[FragmentationSample] = []

    def advance(self, t: int) -> None:
        """Take the samples due before ``t`` and integrate up to ``t`` (within the span)."""
        while self.next < len(self.grid) and self.grid[self.next] < t:
            self._integrate(self.grid[self.next])
            pending = [p for sets in self.pending.values() for p in sets]
            self.samples.append(fragmentation_at(self.grid[self.next], self.nodes, self.allocated, pending, self.gpu))
            self.next += 1
        self._integrate(t)

    def _integrate(self, t: int) -> None:
        t = min(max(t, self.start), self.end)
        if t <= self.last:
            return
        dt = t - self.last
        for k, v in self.alloc_sum.items():
            self.alloc_ms[k] = self.alloc_ms.get(k, 0) + v * dt
        for k, v in self.cap_sum.items():
            self.cap_ms[k] = self.cap_ms.get(k, 0) + v * dt
        self.last = t

    def _add(self, sums: dict[tuple[str, str], int], group: str, amounts: dict[str, int], sign: int) -> None:
        for r, a in amounts.items():
            sums[(group, r)] = sums.get((group, r), 0) + sign * a

    def node(self, name: str, labels: dict[str, str] | None, alloc: dict[str, int], schedulable: bool) -> None:
        old = self.nodes.pop(name, None)
        if old is not None and old[1]:
            self._add(self.cap_sum, self.group_of[name], old[0], -1)
        if labels is None:  # deleted
            return
        self.group_of[name] = _group(labels)
        self.nodes[name] = (alloc, schedulable, labels)
        if schedulable:
            self._add(self.cap_sum, self.group_of[name], alloc, 1)
        if GPU_MILLI in alloc:
            self.gpu = GPU_MILLI

    def release(self, key: str) -> None:
        for node, per_pod, pods in self.holding.pop(key, ()):
            used = self.allocated.setdefault(node, {})
            for r, a in per_pod.items():
                used[r] = used.get(r, 0) - a * pods
            if node in self.group_of:
                self._add(self.alloc_sum, self.group_of[node], {r: a * pods for r, a in per_pod.items()}, -1)

    def queue(self, key: str) -> None:
        sets = self.requests.get(key)
        if sets is not None:
            self.pending[key] = [PendingPodSet(tuple(sorted((r, a) for r, a in req.items() if a)), count,
                                               self.domain(level, topology))
                                 for req, count, level, topology in sets.values()]

    def domain(self, level: str | None, topology: str | None) -> tuple[str, ...]:
        """The labels from the top level down to ``level`` in ``topology`` (else the first Topology,
        by name, that has the level); ``()`` without a level or when no Topology has it."""
        if level is None:
            return ()
        names = [topology] if topology in self.topologies else sorted(self.topologies)
        for name in names:
            levels = self.topologies[name]  # type: ignore[index]
            if level in levels:
                return levels[: levels.index(level) + 1]
        return ()

    def admit(self, key: str, placed: dict) -> None:
        self.pending.pop(key, None)
        sets = self.requests.get(key, {})
        held = []
        for ps, by_node in sorted(placed.items()):
            per_pod = sets[ps][0] if ps in sets else {}
            for node, pods in sorted(by_node.items()):
                used = self.allocated.setdefault(node, {})
                for r, a in per_pod.items():
                    used[r] = used.get(r, 0) + a * pods
                if node in self.group_of:
                    self._add(self.alloc_sum, self.group_of[node], {r: a * pods for r, a in per_pod.items()}, 1)
                held.append((node, per_pod, pods))
        self.holding[key] = held


HistoryItem = tuple[int, str, dict, list[tuple[str, str, dict]]]
"""One archived event: ``(time ms, type, envelope payload, [(decision type, workload, decision payload)])``,
the decisions it caused in order."""


def placement_from_history(cluster: str, history: Iterable[HistoryItem], *, start_ms: int, end_ms: int,
                           samples: int = DEFAULT_SAMPLES) -> PlacementReport:
    """The placement report (module docstring) of a history given as :data:`HistoryItem` s in order;
    ``waits`` is left empty (``wait_rows`` fills it from the simulations).

    Raises:
        EventError: a quantity cannot be read (the message names the field).
    """
    sweep = _Sweep(start_ms, max(start_ms, end_ms), samples)
    for t, kind, payload, decisions in history:
        sweep.advance(t)
        _apply_event(sweep, kind, payload)
        for dtype, workload, dpayload in decisions:
            if dtype == "Admitted":
                sweep.admit(workload, dpayload.get("nodes") or {})
            else:  # Evicted / Preempted: the nodes are free, the workload waits again
                sweep.release(workload)
                sweep.queue(workload)
    sweep.advance(sweep.end + 1)
    groups: dict[str, int] = {}
    for name in sweep.nodes:
        groups[sweep.group_of[name]] = groups.get(sweep.group_of[name], 0) + 1
    util = []
    for group in sorted(groups):
        for res in REPORTED:
            if (group, res) in sweep.cap_ms:
                util.append(GroupUtilization(group, groups[group], res, sweep.cap_sum.get((group, res), 0),
                                             sweep.alloc_ms.get((group, res), 0), sweep.cap_ms[(group, res)]))
    return PlacementReport(cluster, start_ms, sweep.end, sweep.gpu, 1000 if sweep.gpu == GPU_MILLI else 1, util,
                           sweep.samples)


def build_placement_report(url: str, cluster: str, *, start_ms: int, end_ms: int,
                           samples: int = DEFAULT_SAMPLES) -> PlacementReport:
    """The placement report of ``cluster`` from the SQL store at ``url`` over ``[start_ms, end_ms]``:
    its applied events in archive order, each with the decisions it caused
    (:func:`placement_from_history`).

    Raises:
        SinkError: the store cannot be read or has no quotaledger schema.
        EventError: an archived quantity cannot be read (the message names the field).
    """
    with reading(url) as conn:
        e, d = s.events.c, s.decisions.c
        by_cause: dict[int, list[tuple[str, str, dict]]] = {}
        for r in conn.execute(sa.select(d.cause_position, d.type, d.workload, d.payload)
                              .where(d.cluster == cluster).order_by(d.seq)):
            by_cause.setdefault(r.cause_position, []).append((r.type, r.workload, r.payload or {}))
        q = (sa.select(e.position, e.event_time_ms, e.type, e.payload)
             .where(e.cluster == cluster, e.status == "applied").order_by(e.position))
        rows = ((r.event_time_ms, r.type, r.payload or {}, by_cause.get(r.position, []))
                for r in conn.execution_options(yield_per=5000).execute(q))
        return placement_from_history(cluster, rows, start_ms=start_ms, end_ms=end_ms, samples=samples)


def _apply_event(sweep: _Sweep, kind: str, payload: dict) -> None:
    obj = payload.get("object") or {}
    okind = obj.get("kind")
    meta = obj.get("metadata") or {}
    if okind == "Topology":
        levels = tuple(lv.get("nodeLabel", "") for lv in (obj.get("spec") or {}).get("levels") or ())
        if kind == "Deleted":
            sweep.topologies.pop(meta.get("name", ""), None)
        else:
            sweep.topologies[meta.get("name", "")] = levels
    elif okind == "Node":
        if kind == "Deleted":
            sweep.node(meta.get("name", ""), None, {}, False)
        else:
            alloc = _amounts((obj.get("status") or {}).get("allocatable"), "object.status.allocatable")
            sweep.node(meta.get("name", ""), dict(meta.get("labels") or {}), alloc,
                       not (obj.get("spec") or {}).get("unschedulable", False))
    elif okind == "Workload":
        key = f"{meta.get('namespace', 'default')}/{meta.get('name')}"
        sweep.release(key)
        sweep.pending.pop(key, None)
        if kind == "Deleted":
            sweep.requests.pop(key, None)
            return
        pod_sets = (obj.get("spec") or {}).get("podSets") or []
        notes = meta.get("annotations") or {}
        kai_level, kai_topology = notes.get(KAI_REQUIRED), notes.get(KAI_TOPOLOGY)
        sweep.requests[key] = {
            ps.get("name", "main"): (_pod_request(ps, f"object.spec.podSets[{i}]"), int(ps.get("count", 1)),
                                     (ps.get("topologyRequest") or {}).get("required") or kai_level, kai_topology)
            for i, ps in enumerate(pod_sets)}
        if not (obj.get("status") or {}).get("admission"):
            sweep.queue(key)
    elif okind == "Pod":
        _apply_pod(sweep, kind, obj, meta)
    elif kind == "WorkloadFinished":
        key = payload.get("workload", "")
        sweep.release(key)
        sweep.pending.pop(key, None)
    elif kind == "WorkloadEvicted":
        key = payload.get("workload", "")
        if key in sweep.holding:
            sweep.release(key)
            sweep.queue(key)


def _apply_pod(sweep: _Sweep, kind: str, obj: dict, meta: dict) -> None:
    """A Pod event: the unit it belongs to (the pod, or its Volcano PodGroup) asks one pod of its
    request, pending unless the pod is already bound (``spec.nodeName``)."""
    namespace = meta.get("namespace", "default")
    notes = meta.get("annotations") or {}
    group = notes.get(VOLCANO_GROUP)
    key = f"{namespace}/{group}" if group else f"{namespace}/{meta.get('name')}"
    if kind == "Deleted":
        if not group:
            sweep.release(key)
            sweep.pending.pop(key, None)
            sweep.requests.pop(key, None)
        return
    spec = obj.get("spec") or {}
    sweep.requests[key] = {"main": (_pod_request({"template": {"spec": spec}}, "object.spec"), 1,
                                    notes.get(KAI_REQUIRED), notes.get(KAI_TOPOLOGY))}
    if key not in sweep.holding and not spec.get("nodeName"):
        sweep.queue(key)


def wait_rows(root: str, placed: SimulationResult, unplaced: SimulationResult | None) -> list[WaitRow]:
    """Per ClusterQueue (``replay.sim.manifests.queue_names`` of each job's tenant under ``root``,
    sorted by name): the observed waits, and the waits of the run with placement (``placed``) and
    without it (``unplaced``, may be ``None``), in ms, sorted."""
    rows: dict[str, WaitRow] = {}
    for key, job in placed.job_of.items():
        cq = queue_names(root, job.tenant)[1]
        row = rows.setdefault(cq, WaitRow(cq, 0))
        row.jobs += 1
        if job.observed_wait_ms is not None:
            row.observed_waits.append(job.observed_wait_ms)
        if job.preexisting:
            continue
        for run, waits, never in ((placed, row.placed_waits, "placed_never"), (unplaced, row.unplaced_waits,
                                                                                "unplaced_never")):
            if run is None:
                continue
            at = run.admitted_at.get(key)
            if at is None:
                setattr(row, never, getattr(row, never) + 1)
            else:
                waits.append(at - job.submit_ms)
    for row in rows.values():
        row.observed_waits.sort()
        row.placed_waits.sort()
        row.unplaced_waits.sort()
    return [rows[k] for k in sorted(rows)]


def placement_document(report: PlacementReport) -> dict:
    """The report's exact numbers as JSON-ready data (``report.json`` key ``placement``): integers
    only (ms, base units, base units × ms); ratios are left to the reader."""
    return {"gpuResource": report.gpu_resource, "gpuUnit": report.gpu_unit,
            "utilization": [{"group": u.group, "nodes": u.nodes, "resource": u.resource, "allocatable": u.allocatable,
                             "allocatedMs": u.allocated_ms, "allocatableMs": u.allocatable_ms} for u in report.utilization],
            "fragmentation": [[p.time_ms, p.free, p.fragmented, p.pending] for p in report.fragmentation],
            "waits": [{"clusterQueue": w.queue, "jobs": w.jobs, "observedMs": w.observed_waits,
                       "withPlacementMs": w.placed_waits, "withPlacementNever": w.placed_never,
                       "withoutPlacementMs": w.unplaced_waits, "withoutPlacementNever": w.unplaced_never}
                      for w in report.waits]}


def write_fragmentation_plot(report: PlacementReport, out: str | Path) -> Path | None:
    """``fragmentation.png`` in ``out``: free GPUs and the fragmented part over time (days since the
    start), and the pending GPU pod sets on a second axis; ``None`` (nothing written) without samples.

    Raises:
        OSError: the file cannot be written.
    """
    if not report.fragmentation:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    unit = report.gpu_unit
    xs = [(p.time_ms - report.start_ms) / 86_400_000 for p in report.fragmentation]
    fig, ax = plt.subplots(figsize=(11, 4.2))
    ax.plot(xs, [p.free / unit for p in report.fragmentation], color="#4c72b0", lw=1.2, label="free GPUs")
    ax.fill_between(xs, [p.fragmented / unit for p in report.fragmentation], color="#dd8452", alpha=0.6,
                    label="fragmented: free GPUs no pending pod set could use")
    ax.set_xlabel("days since the start")
    ax.set_ylabel("GPUs")
    ax.grid(alpha=0.3)
    ax2 = ax.twinx()
    ax2.plot(xs, [p.pending for p in report.fragmentation], color="#55a868", lw=0.8, ls="--",
             label="pending GPU pod sets")
    ax2.set_ylabel("pending pod sets")
    lines = ax.get_legend_handles_labels()
    lines2 = ax2.get_legend_handles_labels()
    ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], loc="upper left", fontsize=8)
    ax.set_title(f"{report.cluster}: GPU fragmentation ({report.gpu_resource})", loc="left", fontsize=11)
    fig.tight_layout()
    path = Path(out) / "fragmentation.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def wait_percentiles(waits: list[int]) -> str:
    """p50/p95 of sorted waits (ms) as durations (``0s/3h26m``); ``-`` when there is none."""
    return "/".join(duration(percentile(waits, p)) for p in (50, 95)) if waits else "-"


def placement_html(report: PlacementReport) -> str:
    """The report's HTML section (utilization and wait tables, the fragmentation summary) for the
    demo page (``replay.reports.page``)."""
    e = html.escape
    util = "".join(f"<tr><td>{e(u.group)}</td><td>{u.nodes:,}</td><td>{e(u.resource)}</td><td>{u.allocatable:,}</td>"
                   f"<td>{percent(u.utilization)}</td></tr>\n" for u in report.utilization)
    waits = "".join(f"<tr><td>{e(w.queue)}</td><td>{w.jobs:,}</td><td>{wait_percentiles(w.observed_waits)}</td>"
                    f"<td>{wait_percentiles(w.placed_waits)}</td><td>{w.placed_never:,}</td><td>{wait_percentiles(w.unplaced_waits)}</td>"
                    f"<td>{w.unplaced_never:,}</td></tr>\n" for w in report.waits)
    peak = max(report.fragmentation, key=lambda p: (p.fragmented, -p.time_ms), default=None)
    frag = (f"<p>GPU fragmentation ({e(report.gpu_resource)}): {percent(report.fragmented_share())} of the free GPUs "
            f"could not be used by any pending pod set, over the {len(report.fragmentation):,} samples where one was "
            f"pending; peak {peak.fragmented / report.gpu_unit:,.1f} GPUs at day "
            f"{(peak.time_ms - report.start_ms) / 86_400_000:.1f}.</p>") if peak is not None else ""
    return f"""<h2>Placement</h2>
<p>Node utilization = ∫ allocated / ∫ allocatable over the span, per node group (GPU model) and resource
(docs/demo.md "Placement").</p>
<table><thead><tr><th>group</th><th>nodes</th><th>resource</th><th>allocatable</th><th>utilization</th></tr></thead>
<tbody>{util}</tbody></table>
{frag}
<p>Waits (p50/p95) per ClusterQueue: observed in the trace, simulated with placement, simulated without it
(never: jobs the run never admitted).</p>
<table><thead><tr><th>ClusterQueue</th><th>jobs</th><th>observed</th><th>with placement</th><th>never</th>
<th>without placement</th><th>never</th></tr></thead>
<tbody>{waits}</tbody></table>
"""
