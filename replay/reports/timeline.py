"""Time series of the demo report, bucketed on an epoch-aligned UTC grid: what the report's plots
draw over time (``replay.reports.plots``).

- :func:`bucket_edges`: the grid — the smallest of :data:`BUCKET_SIZES` that cuts the span into
  at most ``target`` buckets, edges at multiples of the size since the epoch (6 h buckets start at
  00:00, 06:00, 12:00 and 18:00 UTC).  Bucket ``i`` is ``[edges[i], edges[i+1])`` clipped to the span.
- :func:`wait_grid`: per ClusterQueue (quota group) and bucket, the p95 (or mean) wait of the
  workloads that became pending in that bucket and were admitted — the report's own waits
  (``Report.waited``: admission time − the time the workload last became pending), so the cells
  agree with the table's percentiles.  Workloads still pending at the end have no wait yet and
  are not in the grid (the table's "pending end" counts them).
- :func:`share_series`: per pool (:func:`pools`: the plots' top nodes) and each ClusterQueue below it, its
  **actual share** and its **fair share** of the pool, per bucket, for the pool's headline
  resource ``r`` (GPUs when it has GPU quota, else cpu):

  * actual share = ∫ usage_r of the ClusterQueue over the bucket / (guarantee_r of the pool ×
    bucket length) — the time-mean of what it held, as a fraction of the pool's guarantee (above
    the pool's share of 1 when the pool borrows from outside);
  * fair share = guarantee_r of the ClusterQueue / Σ guarantee_r of the *active* ClusterQueues of
    the pool, when the ClusterQueue is active in the bucket, else 0; active = it had a pending
    workload or held some of ``r`` at some moment of the bucket (Armada's fair share: weight / Σ
    weights of the queues with demand).  When every active queue's guarantee is 0, the active
    queues share equally.

  The guarantee is the report's ``NodeStats.nominal``: Kueue's nominal quota (a pool's includes
  its own shared quota and its ClusterQueues'), Koordinator's ``min``.  So the fair shares of a
  bucket sum to 1 (the whole pool, split in proportion to the guarantees of those who want it),
  and a ClusterQueue above its fair share runs on what others are entitled to.
- :func:`afs_series`: per LocalQueue, admission fair sharing's decayed usage and score (KEP-4136,
  docs/afs.md) at the end of every bucket, computed with the engine's own ledger
  (``statemodel.queues.afs.FairSharingLedgers``) from the archived history: the same charges and
  releases at the same times, so the values are the engine's exactly (the last sample equals the
  ``fair_sharing`` projection when it is taken at the engine's last clock).

All inputs are exact integers (ms, base units); shares are ``Fraction`` s and AFS values the
engine's ``Decimal`` s; only the plots convert them to floats.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

import sqlalchemy as sa

from replay.reports.tables import GPU, Report, percentile
from replay.store.db import reading
from statemodel import sql_schema as s
from statemodel.events.decode import parse_event
from statemodel.objects import (AdmissionMode, ClusterQueue, Cohort, EngineConfig, LocalQueue,
                                PreemptionReleaseOn)
from statemodel.quantity import parse_quantity
from statemodel.queues.afs import FairSharingLedgers, score

__all__ = ["BUCKETS", "BUCKET_SIZES", "bucket_edges", "leaves", "pools", "WaitGrid", "wait_grid", "ShareSeries", "share_series",
           "AfsSeries", "afs_series", "STATISTICS"]

MINUTE = 60_000
HOUR = 60 * MINUTE
DAY = 24 * HOUR
BUCKET_SIZES = (MINUTE, 5 * MINUTE, 15 * MINUTE, 30 * MINUTE, HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR,
                DAY, 2 * DAY, 7 * DAY, 14 * DAY, 28 * DAY)
"""Bucket sizes in ms, smallest first (:func:`bucket_edges` picks one)."""
STATISTICS = ("p95", "mean")
"""What a :class:`WaitGrid` cell can hold."""
INNER_KINDS = ("Cohort", "ParentQuota")


BUCKETS = 150
"""The default most buckets of :func:`bucket_edges`: every plot and table of a report uses one grid."""


def bucket_edges(start_ms: int, end_ms: int, target: int = BUCKETS) -> list[int]:
    """Edges of the bucket grid over ``[start_ms, end_ms]`` (module docstring): ``n + 1`` epoch
    multiples of one size, ``edges[0] <= start_ms``, ``edges[-1] >= end_ms``, ``n <= target`` unless
    even the largest size needs more; at least one bucket.

    Raises:
        ValueError: ``end_ms < start_ms`` or ``target < 1``.
    """
    if end_ms < start_ms or target < 1:
        raise ValueError(f"bucket_edges: need start <= end and target >= 1, got {start_ms}, {end_ms}, {target}")
    for size in BUCKET_SIZES:
        first = start_ms // size * size
        n = max(1, -(-(end_ms - first) // size))
        if n <= target:
            break
    return [first + i * size for i in range(n + 1)]


def _bucket_length(edges: list[int], i: int, start: int, end: int) -> int:
    return max(0, min(edges[i + 1], end) - max(edges[i], start))


def leaves(report: Report) -> list[str]:
    """The report's ClusterQueues (``koordinator``: leaf quota groups) in the table's order: the
    nodes no other node has as parent, Cohorts (parent quota groups) excepted."""
    parents = {n.parent for n in report.nodes}
    return [n.name for n in report.nodes if n.name not in parents and n.kind not in INNER_KINDS]


@dataclass(frozen=True)
class WaitGrid:
    """Waits per ClusterQueue and bucket (:func:`wait_grid`).

    Attributes:
        rows: ClusterQueue names, top to bottom.
        edges: the bucket grid (:func:`bucket_edges`).
        statistic: ``p95`` (nearest-rank, a wait that occurred) or ``mean`` (rounded to the ms).
        waits: ``waits[row][bucket]`` in ms; ``None`` where no admitted workload became pending.
        counts: ``counts[row][bucket]``: how many waits the cell summarizes.
    """

    rows: list[str]
    edges: list[int]
    statistic: str
    waits: list[list[int | None]]
    counts: list[list[int]]


def wait_grid(waited: dict[str, list[tuple[int, int]]], rows: list[str], edges: list[int],
              statistic: str = "p95") -> WaitGrid:
    """The wait heatmap's data: each ``(pending since, wait)`` of ``waited[row]`` goes to the bucket
    of its ``since`` (clamped into the grid); a cell is the ``statistic`` of its waits.

    Raises:
        ValueError: ``statistic`` is not one of :data:`STATISTICS`, or ``edges`` has fewer than two edges.
    """
    if statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {', '.join(STATISTICS)}, not {statistic!r}")
    if len(edges) < 2:
        raise ValueError("edges: need at least one bucket")
    n = len(edges) - 1
    grid: list[list[int | None]] = []
    counts: list[list[int]] = []
    for row in rows:
        cells: list[list[int]] = [[] for _ in range(n)]
        for since, wait in waited.get(row, ()):
            cells[min(n - 1, max(0, bisect_right(edges, since) - 1))].append(wait)
        values: list[int | None] = []
        for c in cells:
            if not c:
                values.append(None)
            elif statistic == "p95":
                c.sort()
                values.append(percentile(c, 95))
            else:
                values.append(round(Fraction(sum(c), len(c))))
        grid.append(values)
        counts.append([len(c) for c in cells])
    return WaitGrid(list(rows), list(edges), statistic, grid, counts)


@dataclass(frozen=True)
class ShareSeries:
    """Actual and fair share of the ClusterQueues of one pool (:func:`share_series`).

    Attributes:
        top: the pool (a top node of the report); resource: its headline resource.
        capacity: the pool's guarantee of ``resource`` (base units).
        queues: its ClusterQueues, in the table's order; guarantee: ClusterQueue → its guarantee.
        edges: the bucket grid.
        actual / fair: ClusterQueue → one ``Fraction`` per bucket (fractions of ``capacity``).
        active: ClusterQueue → per bucket, whether it had demand (module docstring).
    """

    top: str
    resource: str
    capacity: int
    queues: list[str]
    guarantee: dict[str, int]
    edges: list[int]
    actual: dict[str, list[Fraction]]
    fair: dict[str, list[Fraction]]
    active: dict[str, list[bool]]


def _spread(acc: list[int], edges: list[int], t0: int, t1: int, value: int) -> None:
    """Add ``value × overlap`` of ``[t0, t1)`` with each bucket to ``acc``."""
    i = max(0, bisect_right(edges, t0) - 1)
    while i < len(acc) and edges[i] < t1:
        overlap = min(t1, edges[i + 1]) - max(t0, edges[i])
        if overlap > 0:
            acc[i] += value * overlap
        i += 1


def _mark(flags: list[bool], edges: list[int], t0: int, t1: int) -> None:
    i = max(0, bisect_right(edges, t0) - 1)
    while i < len(flags) and edges[i] < t1:
        if min(t1, edges[i + 1]) > max(t0, edges[i]):
            flags[i] = True
        i += 1


def _leaf_buckets(changes: list[tuple[int, tuple[str, str], int]], resource: str, edges: list[int], start: int,
                  end: int) -> tuple[list[int], list[bool]]:
    """∫ usage of ``resource`` per bucket (base units × ms) and activity per bucket of one
    ClusterQueue's change stream; the state of an instant is the one after all its changes."""
    n = len(edges) - 1
    integral = [0] * n
    active = [False] * n
    level = pending = 0
    t_prev = start
    for t, (_, res), delta in changes:
        t = min(max(t, t_prev), end)
        if t > t_prev:
            if level:
                _spread(integral, edges, t_prev, t, level)
            if level or pending:
                _mark(active, edges, t_prev, t)
            t_prev = t
        if res == "":
            pending += delta
        elif res == resource:
            level += delta
    if end > t_prev:
        if level:
            _spread(integral, edges, t_prev, end, level)
        if level or pending:
            _mark(active, edges, t_prev, end)
    return integral, active


def pools(report: Report) -> list[tuple[str, str]]:
    """``(pool, headline resource)`` of the share series: the report's top nodes, or — when the top
    nodes are ClusterQueues themselves (they sit directly under the root cohort) — their parents,
    with GPUs as the headline when one of them has GPU quota."""
    leaf_names = set(leaves(report))
    inner = [t for t in report.top if t not in leaf_names]
    if inner or not report.top:
        return [(t, report.headline[t]) for t in inner]
    parents: dict[str, str] = {}
    by_name = {n.name: n for n in report.nodes}
    for t in report.top:
        parent = by_name[t].parent
        if parent is not None:
            parents[parent] = GPU if GPU in (report.headline.get(t), parents.get(parent)) else "cpu"
    return sorted(parents.items())


def share_series(report: Report, edges: list[int]) -> list[ShareSeries]:
    """Actual vs fair share per pool (module docstring, :func:`pools`), one :class:`ShareSeries`
    per pool that has a guarantee of its headline resource and ClusterQueues below it."""
    by_name = {n.name: n for n in report.nodes}
    leaf_names = leaves(report)
    out: list[ShareSeries] = []
    n = len(edges) - 1
    start, end = report.start_ms, report.end_ms
    for top, res in pools(report):
        node = by_name.get(top)
        capacity = node.nominal.get(res, 0) if node is not None else 0
        queues = [q for q in leaf_names if _below(by_name, q, top)]
        if capacity <= 0 or not queues:
            continue
        guarantee = {q: by_name[q].nominal.get(res, 0) for q in queues}
        actual: dict[str, list[Fraction]] = {}
        active: dict[str, list[bool]] = {}
        for q in queues:
            integral, flags = _leaf_buckets(report.changes.get(q, []), res, edges, start, end)
            actual[q] = [Fraction(integral[i], capacity * length) if (length := _bucket_length(edges, i, start, end))
                         else Fraction(0) for i in range(n)]
            active[q] = flags
        fair: dict[str, list[Fraction]] = {q: [] for q in queues}
        for i in range(n):
            on = [q for q in queues if active[q][i]]
            total = sum(guarantee[q] for q in on)
            for q in queues:
                if not active[q][i]:
                    fair[q].append(Fraction(0))
                elif total:
                    fair[q].append(Fraction(guarantee[q], total))
                else:
                    fair[q].append(Fraction(1, len(on)))
        out.append(ShareSeries(top, res, capacity, queues, guarantee, list(edges), actual, fair, active))
    return out


def _below(by_name: dict, name: str, top: str) -> bool:
    seen = set()
    node = by_name.get(name)
    while node is not None and node.name not in seen:
        if node.name == top:
            return True
        seen.add(node.name)
        node = by_name.get(node.parent) if node.parent is not None else None
    return False


# --------------------------------------------------------------------------- admission fair sharing


@dataclass(frozen=True)
class AfsSeries:
    """Admission fair sharing per LocalQueue over time (:func:`afs_series`).

    Attributes:
        times: sample times (epoch ms): the end of each bucket, clipped to the span.
        local_queues: ``namespace/name``, by ClusterQueue then key; cluster_queue: LocalQueue → its
            ClusterQueue.
        resource_weights: resource → ``resourceWeights`` value (default 1) of the configuration in
            force at the end.
        usage: LocalQueue → per sample, ``Σ_r weight(r) × (consumed_r + penalty_r)`` in score units
            (cores for cpu, base units otherwise): its score at a LocalQueue weight of 1
            (``statemodel.queues.afs.score``).
        score: LocalQueue → per sample, the score (KEP-4136 ``usage / LocalQueue weight``); ``Infinity``
            for a weight of 0; ``None`` while admission fair sharing is off.
        weight: LocalQueue → its ``fairSharing.weight`` at the end (default 1).
    """

    times: list[int]
    local_queues: list[str]
    cluster_queue: dict[str, str]
    resource_weights: dict[str, Decimal]
    usage: dict[str, list[Decimal | None]]
    score: dict[str, list[Decimal | None]]
    weight: dict[str, Decimal]


class _AfsReplay:
    """The engine's AFS bookkeeping, fed from the archive: charges and releases of admitted
    workloads per LocalQueue, entry penalties where the engine gives them (``statemodel.cluster``:
    a ClusterQueue in ``UsageBasedAdmissionFairSharing`` mode, or under a usage-based admission
    scope), configuration changes as the engine applies them."""

    def __init__(self, unscored: frozenset[str] = frozenset()) -> None:
        self.unscored = unscored
        self.afs = FairSharingLedgers()
        self.config = EngineConfig()
        self.local_queues: dict[str, LocalQueue] = {}
        self.cluster_queues: dict[str, ClusterQueue] = {}
        self.cohorts: dict[str, Cohort] = {}
        self.workload_lq: dict[str, str] = {}
        self.held: dict[str, tuple[str, dict[str, int]]] = {}  # workload → (LocalQueue, usage per resource)
        self.ever_on = False

    def penalized(self, cq_name: str) -> bool:
        if self.afs.params is None:
            return False
        cq = self.cluster_queues.get(cq_name)
        if cq is not None and cq.admission_mode == AdmissionMode.USAGE_BASED_ADMISSION_FAIR_SHARING:
            return True
        mode = None  # the topmost Cohort with an admissionScope decides
        name = cq.cohort if cq is not None else None
        seen: set[str] = set()
        while name is not None and name not in seen:
            seen.add(name)
            cohort = self.cohorts.get(name)
            if cohort is None:
                break
            if cohort.admission_mode is not None:
                mode = cohort.admission_mode
            name = cohort.parent
        return mode == AdmissionMode.USAGE_BASED_ADMISSION_FAIR_SHARING

    def charge(self, key: str, cq: str, usage: dict[str, int], now: int) -> None:
        if key in self.held:
            self.release(key, now)
        lq = self.workload_lq.get(key)
        if lq is None:
            return
        self.held[key] = (lq, usage)
        self.afs.charged(lq, key, usage, now, self.penalized(cq))

    def release(self, key: str, now: int) -> None:
        held = self.held.pop(key, None)
        if held is not None:
            self.afs.released(held[0], key, held[1], now)

    def set_config(self, config: EngineConfig, now: int) -> None:
        self.config = config
        self.afs.configure(config.admission_fair_sharing, now, [(lq, usage) for lq, usage in self.held.values()])
        if self.afs.params is not None:
            self.ever_on = True
            for key in self.local_queues:
                self.afs.ledger(key, now)

    def applied_config_object(self, raw: dict, now: int) -> None:
        """An ``Applied`` EngineConfig, LocalQueue, ClusterQueue or Cohort (decoded as the engine does)."""
        obj = parse_event(raw).obj
        if isinstance(obj, EngineConfig):
            self.set_config(obj, now)
        elif isinstance(obj, LocalQueue):
            self.local_queues[obj.key] = obj
            if obj.afs_status is not None:
                self.afs.seed(obj.key, tuple((res, v) for res, v in obj.afs_status.consumed_resources
                                             if res not in self.unscored), obj.afs_status.last_update_ms)
            if self.afs.params is not None:
                self.afs.ledger(obj.key, now)
        elif isinstance(obj, ClusterQueue):
            self.cluster_queues[obj.name] = obj
        elif isinstance(obj, Cohort):
            self.cohorts[obj.name] = obj

    def event(self, env: dict, now: int) -> None:
        """One applied event (its envelope) at engine time ``now``."""
        kind = env.get("type")
        if kind == "Batch":
            for inner in env.get("events") or ():
                self.event({"time": now, **inner}, now)
            return
        obj = env.get("object") or {}
        okind = obj.get("kind")
        if kind == "Applied" and okind in ("EngineConfig", "LocalQueue", "ClusterQueue", "Cohort"):
            self.applied_config_object({"id": env.get("id", "x"), "time": now, "type": "Applied", "object": obj}, now)
        elif kind == "Applied" and okind == "Workload":
            meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
            ns = meta.get("namespace", "default")
            key = f"{ns}/{meta.get('name')}"
            self.workload_lq[key] = f"{ns}/{spec.get('queueName')}"
            admission = (obj.get("status") or {}).get("admission")
            if isinstance(admission, dict):
                self.charge(key, admission.get("clusterQueue", ""), _flat_usage(admission, self.unscored), now)
        elif kind == "WorkloadAdmitted" and isinstance(env.get("admission"), dict):
            self.charge(env.get("workload", ""), env["admission"].get("clusterQueue", ""),
                        _flat_usage(env["admission"], self.unscored), now)
        elif kind in ("WorkloadFinished", "WorkloadEvicted"):
            self.release(env.get("workload", ""), now)
        elif kind == "Deleted" and okind == "Workload":
            meta = obj.get("metadata") or {}
            self.release(f"{meta.get('namespace', 'default')}/{meta.get('name')}", now)
        elif kind == "Deleted" and okind == "EngineConfig":
            self.set_config(EngineConfig(), now)
        elif kind == "Deleted" and okind == "LocalQueue":
            meta = obj.get("metadata") or {}
            self.local_queues.pop(f"{meta.get('namespace', 'default')}/{meta.get('name')}", None)
        elif kind == "Deleted" and okind == "ClusterQueue":
            self.cluster_queues.pop((obj.get("metadata") or {}).get("name"), None)
        elif kind == "Deleted" and okind == "Cohort":
            self.cohorts.pop((obj.get("metadata") or {}).get("name"), None)

    def decision(self, kind: str, workload: str, cq: str | None, payload: dict, now: int) -> None:
        if kind == "Admitted":
            self.charge(workload, cq or "", _flat_usage(payload, self.unscored), now)
        elif kind == "Evicted" or (kind == "Preempted"
                                   and self.config.preemption_release_on == PreemptionReleaseOn.DECISION):
            self.release(workload, now)

    def sample(self, lq: str, now: int) -> tuple[Decimal | None, Decimal | None]:
        params = self.afs.params
        if params is None:
            return None, None
        consumed, penalty, _ = self.afs.totals([lq], now)
        spec = self.local_queues.get(lq)
        weight = spec.fair_weight_milli if spec is not None else 1000
        usage = score(params, consumed, penalty, 1000)  # the score at weight 1
        return usage, usage if weight == 1000 else score(params, consumed, penalty, weight)


def _flat_usage(admission: dict, skip: frozenset[str] = frozenset()) -> dict[str, int]:
    """``podSetAssignments[].resourceUsage`` summed per resource over pod sets and flavors (AFS sums
    flavors), without the resources in ``skip``."""
    out: dict[str, int] = {}
    assignments = admission.get("podSetAssignments")
    for i, ps in enumerate(assignments if isinstance(assignments, list) else ()):
        for res, value in (ps.get("resourceUsage") or {}).items():
            if res not in skip:
                out[res] = out.get(res, 0) + parse_quantity(res, value,
                                                            f"podSetAssignments[{i}].resourceUsage.{res}")
    return out


def _engine_configs(raw: dict) -> list[EngineConfig]:
    """The EngineConfig objects an archived event applies (itself or inside a ``Batch``)."""
    if raw.get("type") == "Batch":
        return [c for inner in raw.get("events") or () for c in _engine_configs({"time": raw.get("time"), **inner})]
    obj = raw.get("object") or {}
    if raw.get("type") != "Applied" or obj.get("kind") != "EngineConfig":
        return []
    config = parse_event({"id": raw.get("id", "x"), "time": raw.get("time", 0), "type": "Applied", "object": obj}).obj
    return [config] if isinstance(config, EngineConfig) else []


def _unscored(conn: sa.Connection, cluster: str) -> frozenset[str]:
    """The resources every admission fair sharing configuration of the history weighs 0: they never
    count in a score, so the series does not track them (a resource a configuration does not
    name weighs 1)."""
    e = s.events.c
    zero: set[str] | None = None
    for (payload,) in conn.execute(sa.select(e.payload).where(
            e.cluster == cluster, e.status == "applied", sa.cast(e.payload, sa.Text).like("%EngineConfig%"))):
        for config in _engine_configs(payload or {}):
            afs = config.admission_fair_sharing
            if afs is None:
                continue
            weighed_zero = {res for res, milli in afs.resource_weights_milli if milli == 0}
            zero = weighed_zero if zero is None else zero & weighed_zero
    return frozenset(zero or ())


def afs_series(url: str, cluster: str, edges: list[int], start_ms: int, end_ms: int) -> AfsSeries | None:
    """Admission fair sharing per LocalQueue at the end of each bucket of ``edges`` (clipped to
    ``[start_ms, end_ms]``), from one ordered pass over the cluster's archived events and decisions
    (module docstring); ``None`` when the history never turns admission fair sharing on.

    A decision is applied at its own time: before its cause event when it is earlier (admissions
    the engine runs at sampling instants before an event), else after it.  Resources that every
    configuration of the history weighs 0 are left out of the ledgers: they never count in a score,
    and the others' values do not depend on them (the DLRM tree weighs 2 of its 5 resources).

    Raises:
        SinkError: the store cannot be read.
        EventError: an archived object or quantity cannot be read (the message names the field).
    """
    times = sorted({min(max(e, start_ms), end_ms) for e in edges[1:]})
    samples: dict[str, list[tuple[Decimal | None, Decimal | None]]] = {}
    lqs_seen: dict[str, None] = {}
    k = 0

    def sample_until(now: int) -> None:
        nonlocal k
        while k < len(times) and times[k] < now:
            t = times[k]
            for lq in replay.local_queues:
                lqs_seen[lq] = None
            for lq in lqs_seen:
                samples.setdefault(lq, [(None, None)] * k).append(replay.sample(lq, t))
            k += 1

    e, d = s.events.c, s.decisions.c
    replay = _AfsReplay()
    with reading(url) as conn:
        replay.unscored = _unscored(conn, cluster)
        by_cause: dict[int, list] = {}
        for r in conn.execute(sa.select(d.cause_position, d.decision_time_ms, d.type, d.workload, d.cluster_queue,
                                        d.payload).where(d.cluster == cluster).order_by(d.seq)):
            by_cause.setdefault(r.cause_position, []).append(r)
        clock: int | None = None
        rows = conn.execution_options(yield_per=5000).execute(
            sa.select(e.position, e.event_time_ms, e.payload).where(e.cluster == cluster, e.status == "applied")
            .order_by(e.position))
        for r in rows:
            t = r.event_time_ms
            clock = t if clock is None or t > clock else clock
            decisions = by_cause.get(r.position, ())
            early = [x for x in decisions if x.decision_time_ms < clock]
            for x in early:
                sample_until(x.decision_time_ms + 1)
                replay.decision(x.type, x.workload, x.cluster_queue, x.payload, x.decision_time_ms)
            sample_until(clock)
            replay.event(r.payload or {}, clock)
            for x in decisions:
                if x.decision_time_ms >= clock:
                    replay.decision(x.type, x.workload, x.cluster_queue, x.payload, x.decision_time_ms)
    sample_until(end_ms + 1)
    if not replay.ever_on:
        return None
    cq_of = {key: lq.cluster_queue for key, lq in replay.local_queues.items()}
    order = sorted(samples, key=lambda key: (cq_of.get(key, ""), key))
    params = replay.afs.params
    weights = dict(sorted(params.weights.items())) if params is not None else {}
    return AfsSeries(times, order, {key: cq_of.get(key, "") for key in order}, weights,
                     {key: [u for u, _ in samples[key]] for key in order},
                     {key: [sc for _, sc in samples[key]] for key in order},
                     {key: Decimal(lq.fair_weight_milli if (lq := replay.local_queues.get(key)) is not None else 1000)
                      / 1000 for key in order})
