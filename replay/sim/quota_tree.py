"""The generated default quota tree for a trace, sized from the trace's own observed demand so that
its peaks contend for quota.

Shape (tenant paths and names: ``replay.sim.manifests.queue_names``)::

    root cohort <trace>                      holds what the pools leave of the tree's total
      └ pool cohort <trace>-<level>          one per tenant-path level above the group
          (e.g. dlrm-cn / dlrm-hn; openb-online / openb-batch)   shared pool + limits
          └ ClusterQueue <level>-<group>     one per tenant group          nominal + limits
              └ LocalQueue <group cq> in namespace <tenant>        one per tenant

**The rule** (:class:`QuotaRule`; every number per flavor and resource, base units):

1. Observed demand.  Each job that ran in the real cluster holds ``count × requests`` from its
   observed start (``scheduled_time``; the trace start for a preexisting job) for its observed
   run time, or to the trace end when it was never deleted.  Jobs that never started hold
   nothing.  This gives a step function of concurrent demand per ClusterQueue, per pool cohort
   and for the whole trace over the trace span; statistics are **time-weighted** (the smallest
   level the demand is at or below for that share of the trace's time).
2. The tree's total ``T = ⌈p99⌉`` of the trace's whole concurrent demand (``total_percentile``),
   at most the flavor's node capacity where the trace has a node inventory.  The sum of every
   nominal quota in the tree is ``T`` (unless the ClusterQueues' medians alone exceed it, below):
   so the demand is above what the tree holds for about 1 % of the trace's time, and those peaks
   queue.  (Sizing to the peak, as an earlier rule did, let 27 of DLRM's 16,591 jobs wait at all.)
3. ClusterQueue: ``nominalQuota = ⌈p50⌉`` of its demand (``nominal_percentile``) — scaled down
   by ``T / Σ`` (rounded down) if the ClusterQueues' medians of a flavor sum to more than ``T``;
   ``borrowingLimit = ⌈peak⌉ − nominal`` (it can reach its own observed peak where the tree has
   room); ``lendingLimit = ⌊nominal × 0.5⌋`` (``lend_fraction``: half its guarantee stays).
4. Pool cohort (the parent of the ClusterQueues): own ``nominalQuota`` = its top-up to ``⌈p95⌉``
   of the pool's demand, ``max(0, p95 − Σ its ClusterQueues' nominal)`` (``pool_percentile``),
   out of what the ClusterQueues leave of ``T`` (the pools' top-ups are scaled down together,
   rounded down, when they do not fit); ``borrowingLimit = max(0, min(⌈peak⌉, T) − (own + Σ
   nominal))``: what it may take from the root; ``lendingLimit`` = its own nominal (it lends its
   shared pool, never its ClusterQueues' guarantees).
5. Root cohort: ``nominalQuota = T −`` everything below it (what the pools leave; 0 when they
   fill ``T``).  When the ClusterQueues sit directly under the root, it holds ``T − Σ nominal``.
6. ``--quota-scale F`` (``scale``): every number above — nominal, borrowingLimit, lendingLimit,
   at every level — is multiplied by ``F`` and rounded down to a base unit (exact: ``F`` is a
   ``Fraction``).  1 is the rule; 0.9 takes a tenth off every guarantee and limit.
7. Flavors: a job with a flavor (DLRM roles) counts in that flavor only.  A job without one
   (openb) is shared over the node flavors that have every resource it requests, in proportion
   to their capacity of its most specialised resource (:func:`flavor_weights`: GPU pods over the
   GPU models by GPU capacity, CPU pods over all flavors by cpu), and the statistics above are
   taken per flavor on these shares.  Without flavors or nodes: one flavor ``default``.
8. Admission fair sharing on: an ``EngineConfig`` with ``admissionFairSharing``
   (``usageHalfLifeTime`` 168h, ``usageSamplingInterval`` 5m, Kueue's documented example) and
   ``resourceWeights`` that score cores and GPUs (cpu 1, ``nvidia.com/gpu`` 10,
   ``alibaba.com/gpu-milli`` 0.01, every other resource 0: bytes would swamp the score), and
   ``admissionScope.admissionMode: UsageBasedAdmissionFairSharing`` on every ClusterQueue.

On DLRM (31 days) the rule gives ``T`` = 390,832 cores in ``cn`` (p99; peak 393,616, median
322,752) and 3,333 GPUs / 28,352 cores in ``hn`` (peak 3,412 GPUs); the ClusterQueues' medians sum
to 320,736 cores and 3,172 GPUs, the pool cohorts top up to p95 (389,072 cores; 3,319 GPUs) and
the root holds the rest (1,760 cores in ``cn``; 14 GPUs in ``hn``).  docs/demo.md has what it does
to the waits.

The trace's ``Topology`` objects come first, then its ResourceFlavors (a flavor names its
topology in ``spec.topologyName``).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from fractions import Fraction

from replay.sim.importers.jobs import ImportResult, Job, quantity_string
from replay.sim.manifests import QuotaConfig, queue_names

__all__ = ["QuotaRule", "generate_quota", "demand_intervals", "time_weighted", "parse_scale"]

API = "kueue.x-k8s.io/v1beta2"
DEFAULT_FLAVOR = "default"
AFS_WEIGHTS = {"cpu": 1, "nvidia.com/gpu": 10, "alibaba.com/gpu-milli": 0.01}


@dataclass(frozen=True)
class QuotaRule:
    """Parameters of the generation rule (module docstring); the defaults are the documented rule.

    Attributes:
        nominal_percentile: ClusterQueue nominal = this time-weighted percentile of its demand.
        pool_percentile: pool cohort quota tops the pool up to this percentile of its demand.
        total_percentile: the whole tree holds this time-weighted percentile of the trace's total
            concurrent demand per flavor and resource (capped at the flavor's node capacity).
        lend_fraction: ClusterQueue lendingLimit = ⌊nominal × this⌋.
        scale: every generated quota (nominal, borrowingLimit, lendingLimit) is multiplied by this
            and rounded down to a base unit (``--quota-scale``; 1 = the rule, < 1 tightens).
        half_life / sampling_interval: AFS ``usageHalfLifeTime`` / ``usageSamplingInterval``.
        afs: whether to turn admission fair sharing on.
    """

    nominal_percentile: float = 50.0
    pool_percentile: float = 95.0
    total_percentile: float = 99.0
    lend_fraction: float = 0.5
    scale: Fraction = Fraction(1)
    half_life: str = "168h"
    sampling_interval: str = "5m"
    afs: bool = True

    def describe(self) -> str:
        """One line naming the parameters (goes into the manifest headers)."""
        scaled = "" if self.scale == 1 else f"; every quota x {_decimal_text(self.scale)} (--quota-scale)"
        return (f"tree total = p{self.total_percentile:g} of the trace's total concurrent demand per flavor; "
                f"ClusterQueue nominal = p{self.nominal_percentile:g} of its demand; borrowingLimit = peak - nominal; "
                f"lendingLimit = {self.lend_fraction:g} x nominal; pool cohorts top up to "
                f"p{self.pool_percentile:g}; the root holds the rest of the total{scaled}")


def demand_intervals(job: Job, trace_start: int, trace_end: int) -> tuple[int, int] | None:
    """``(start, end)`` ms during which ``job`` held quota in the real cluster, clipped to the
    trace span, or ``None`` when it never started (or the interval is empty)."""
    if job.observed_start_ms is not None:
        start = job.observed_start_ms
    elif job.run_ms is not None:
        start = job.submit_ms
    else:
        return None
    end = start + job.run_ms if job.run_ms is not None else trace_end
    start, end = max(start, trace_start), min(end, trace_end)
    return (start, end) if end > start else None


def time_weighted(changes: list[tuple[int, int]], span: tuple[int, int], percentiles: list[float]) -> tuple[list[int], int]:
    """Time-weighted percentiles and peak of a step function.

    Args:
        changes: ``(time, delta)`` pairs; the level starts at 0 at ``span[0]``.
        span: ``(start, end)`` ms over which time is weighed.
        percentiles: 0–100.

    Returns:
        ``([level at each percentile], peak)``: the smallest level ``v`` such that the demand is
        ``≤ v`` for at least that share of the span.
    """
    start, end = span
    changes = sorted(changes)
    durations: dict[int, int] = {}
    level = peak = 0
    t = start
    i = 0
    while i < len(changes):
        at = changes[i][0]
        if at > t:
            durations[level] = durations.get(level, 0) + min(at, end) - t
            t = at
        while i < len(changes) and changes[i][0] == at:
            level += changes[i][1]
            i += 1
        peak = max(peak, level)
    if end > t:
        durations[level] = durations.get(level, 0) + end - t
    total = sum(durations.values())
    out = []
    levels = sorted(durations)
    for p in percentiles:
        need = total * p / 100.0
        acc = 0
        value = levels[-1] if levels else 0
        for lv in levels:
            acc += durations[lv]
            if acc >= need:
                value = lv
                break
        out.append(value)
    return out, peak


def _ceil(x: float) -> int:
    """Round up, ignoring binary noise below 1e-6 of a unit (sums of split float demand)."""
    return int(Decimal(repr(round(x, 6))).to_integral_value(rounding=ROUND_CEILING))


def _scaled(amount: int, scale: Fraction) -> int:
    """``⌊amount × scale⌋`` (exact)."""
    return int(amount * scale.numerator // scale.denominator)


def _decimal_text(x: Fraction) -> str:
    """A scale for display: ``0.5``, ``1.25``, ``2``."""
    return format(Decimal(x.numerator) / Decimal(x.denominator), "f").rstrip("0").rstrip(".") or "0"


def parse_scale(text: str, option: str = "--quota-scale") -> Fraction:
    """``--quota-scale``'s value as an exact ``Fraction`` (a decimal number > 0, e.g. ``0.5``).

    Raises:
        ValueError: not a decimal number, or not > 0 (the message names ``option``).
    """
    try:
        value = Fraction(text.strip())
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"{option}: {text!r} is not a number (e.g. 0.5 or 1.25)") from None
    if value <= 0:
        raise ValueError(f"{option}: {text!r} must be greater than 0")
    return value


def _tree_total(changes: list[tuple[int, int]], span: tuple[int, int], rule: QuotaRule, capacity: int | None) -> int:
    """The whole tree's quota of one flavor and resource (rule 2): ⌈the ``total_percentile`` of the
    total demand⌉, at most the flavor's node capacity where the trace has nodes."""
    (level,), _ = time_weighted(changes, span, [rule.total_percentile])
    total = _ceil(level)
    return total if capacity is None else min(total, capacity)


def flavor_weights(job: Job, capacity: dict[str, dict[str, int]]) -> dict[str, float]:
    """How a job's demand is shared over flavors (rule 5): its own flavor; else, with node
    capacity, the flavors whose nodes have every resource it requests, in proportion to their
    capacity of its most specialised resource (the requested resource fewest flavors have; ties
    by name) — GPU pods go to GPU flavors by GPU capacity, CPU pods to all flavors by cpu; else
    the single flavor ``default``."""
    if job.flavor is not None:
        return {job.flavor: 1.0}
    if not capacity:
        return {DEFAULT_FLAVOR: 1.0}
    wanted = [r for r, _ in job.requests]
    fits = [f for f, cap in capacity.items() if all(cap.get(r, 0) > 0 for r in wanted)]
    if not fits:
        return {next(iter(capacity)): 1.0}
    key = min(wanted, key=lambda r: (sum(1 for c in capacity.values() if c.get(r, 0) > 0), r)) if wanted else None
    if key is None:
        return {fits[0]: 1.0}
    total = sum(capacity[f][key] for f in fits)
    return {f: capacity[f][key] / total for f in fits}


def generate_quota(trace: ImportResult, rule: QuotaRule = QuotaRule()) -> QuotaConfig:
    """The default quota tree for ``trace`` (module docstring), as a :class:`QuotaConfig` whose
    objects are ready to apply or to write with ``replay.sim.manifests.write_manifests``.

    Raises:
        ValueError: the trace has no job.
    """
    if not trace.jobs:
        raise ValueError("no job to derive quotas from")
    root = trace.name
    span = (trace.trace_start_ms, trace.trace_end_ms)
    cq_info: dict[str, dict] = {}      # cq → {"pool": cohort, "flavors": set, "resources": set}
    lqs: set[tuple[str, str, str]] = set()
    cohorts: dict[str, str | None] = {}
    cq_changes: dict[tuple[str, str, str], list[tuple[int, int]]] = {}
    pool_changes: dict[tuple[str, str, str], list[tuple[int, int]]] = {}
    total_changes: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for job in trace.jobs:
        chain, cq, (ns, lq) = queue_names(root, job.tenant)
        parent = None
        for c in chain:
            cohorts.setdefault(c, parent)
            parent = c
        pool = chain[-1]
        info = cq_info.setdefault(cq, {"pool": pool, "flavors": set(), "resources": set()})
        weights = flavor_weights(job, trace.capacity)
        info["flavors"].update(weights)
        info["resources"].update(r for r, _ in job.requests)
        lqs.add((ns, lq, cq))
        iv = demand_intervals(job, *span)
        if iv is None:
            continue
        for res, amount in job.total().items():
            for fk, w in weights.items():
                part = amount * w
                total_changes.setdefault((fk, res), []).extend(((iv[0], part), (iv[1], -part)))
                for key, store in (((cq, fk, res), cq_changes), ((pool, fk, res), pool_changes)):
                    lst = store.setdefault(key, [])
                    lst.append((iv[0], part))
                    lst.append((iv[1], -part))

    any_flavors = list(trace.capacity) if trace.capacity else [DEFAULT_FLAVOR]

    # quotas[(owner, flavor, res)] = [nominal, borrowingLimit or None, lendingLimit or None]; an
    # owner is (kind, name): a ClusterQueue may share its name with a Cohort (a one-level tenant
    # named like the trace), and the two keep their own quotas
    quotas: dict[tuple[tuple[str, str], str, str], list] = {}
    owner_flavors: dict[tuple[str, str], list[str]] = {}
    owner_resources: dict[tuple[str, str], set[str]] = {}

    def put(owner: tuple[str, str], fk: str, res: str, nominal: int, borrow: int | None, lend: int | None) -> None:
        q = quotas.setdefault((owner, fk, res), [0, None, None])
        q[0] += nominal
        if borrow is not None:
            q[1] = (q[1] or 0) + borrow
        if lend is not None:
            q[2] = (q[2] or 0) + lend
        if fk not in owner_flavors.setdefault(owner, []):
            owner_flavors[owner].append(fk)
        owner_resources.setdefault(owner, set()).add(res)

    nominal_sum: dict[tuple[str, str, str], int] = {}
    cq_rows: list[tuple[str, str, str, int, int]] = []  # (cq, flavor, resource, p50, peak)
    flavor_cq_sum: dict[tuple[str, str], int] = {}
    for cq, info in sorted(cq_info.items()):
        for fk in sorted(info["flavors"]):
            for res in sorted(info["resources"]):
                (p_nom,), peak = time_weighted(cq_changes.get((cq, fk, res), []), span, [rule.nominal_percentile])
                cq_rows.append((cq, fk, res, _ceil(p_nom), _ceil(peak)))
                flavor_cq_sum[(fk, res)] = flavor_cq_sum.get((fk, res), 0) + _ceil(p_nom)
    total = {key: _tree_total(total_changes.get(key, []), span, rule, trace.capacity.get(key[0], {}).get(key[1]))
             for key in sorted(flavor_cq_sum)}
    for cq, fk, res, p50, peak in cq_rows:
        summed = flavor_cq_sum[(fk, res)]
        nominal = p50 if summed <= total[(fk, res)] else p50 * total[(fk, res)] // summed
        put(("ClusterQueue", cq), fk, res, nominal, max(0, peak - nominal), int(nominal * rule.lend_fraction))
        key = (cq_info[cq]["pool"], fk, res)
        nominal_sum[key] = nominal_sum.get(key, 0) + nominal
    # pool cohorts top up to their p95 out of what the ClusterQueues leave of the total
    wanted: dict[tuple[str, str, str], tuple[int, int]] = {}  # (pool, flavor, res) → (top-up, peak)
    for (pool, fk, res), summed in sorted(nominal_sum.items()):
        (p_pool,), peak = time_weighted(pool_changes.get((pool, fk, res), []), span, [rule.pool_percentile])
        wanted[(pool, fk, res)] = (0 if cohorts.get(pool) is None else max(0, _ceil(p_pool) - summed), _ceil(peak))
    below: dict[tuple[str, str], int] = {}  # (flavor, res) → Σ ClusterQueue nominal
    for (_, fk, res), summed in nominal_sum.items():
        below[(fk, res)] = below.get((fk, res), 0) + summed
    asked: dict[tuple[str, str], int] = {}
    for (pool, fk, res), (top_up, _) in wanted.items():
        asked[(fk, res)] = asked.get((fk, res), 0) + top_up
    own_of: dict[tuple[str, str, str], int] = {}
    for (pool, fk, res), (top_up, _) in sorted(wanted.items()):
        room = max(0, total[(fk, res)] - below[(fk, res)])
        own_of[(pool, fk, res)] = top_up if asked[(fk, res)] <= room else top_up * room // asked[(fk, res)]
    filled = dict(below)
    for (pool, fk, res), own in own_of.items():
        filled[(fk, res)] += own
    root_name = next(c for c, p in cohorts.items() if p is None)
    for (pool, fk, res), (_, peak) in sorted(wanted.items()):
        if cohorts.get(pool) is None:  # the ClusterQueues sit under the root: it holds the rest of the total
            continue
        own, summed = own_of[(pool, fk, res)], nominal_sum[(pool, fk, res)]
        borrow = max(0, min(peak, total[(fk, res)]) - (own + summed))
        put(("Cohort", pool), fk, res, own, borrow, own)
    for (fk, res) in sorted(total):
        put(("Cohort", root_name), fk, res, max(0, total[(fk, res)] - filled[(fk, res)]), None, None)
    if rule.scale != 1:
        for q in quotas.values():
            q[:] = [None if v is None else _scaled(v, rule.scale) for v in q]

    def resource_groups(owner: tuple[str, str]) -> list[dict]:
        flavors = owner_flavors.get(owner, [])
        if not flavors:
            return []
        order = [f for f in any_flavors if f in flavors] + sorted(f for f in flavors if f not in any_flavors)
        covered = sorted(owner_resources[owner])
        fl = []
        for f in order:
            resources = []
            for res in covered:
                nominal, borrow, lend = quotas.get((owner, f, res), [0, None, None])
                entry = {"name": res, "nominalQuota": quantity_string(res, nominal)}
                if borrow is not None:
                    entry["borrowingLimit"] = quantity_string(res, borrow)
                if lend is not None:
                    entry["lendingLimit"] = quantity_string(res, min(lend, nominal))
                resources.append(entry)
            fl.append({"name": f, "resources": resources})
        return [{"coveredResources": covered, "flavors": fl}]

    objects: list[dict] = []
    if rule.afs:
        resources = sorted({r for info in cq_info.values() for r in info["resources"]})
        weights = {r: AFS_WEIGHTS.get(r, 0) for r in resources}
        objects.append({"apiVersion": "quotaledger.io/v1alpha1", "kind": "EngineConfig", "metadata": {"name": "config"},
                        "spec": {"admissionFairSharing": {"usageHalfLifeTime": rule.half_life,
                                                          "usageSamplingInterval": rule.sampling_interval,
                                                          "resourceWeights": weights}}})
    known = {f["metadata"]["name"] for f in trace.flavors}
    objects += [dict(t) for t in trace.topologies]
    objects += [dict(f) for f in trace.flavors]
    used = sorted({f for fl in owner_flavors.values() for f in fl} - known)
    objects += [{"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": f},
                 "spec": {"nodeLabels": {"quotaledger.io/pool": f}}} for f in used]

    def depth(c: str) -> int:
        d = 0
        while cohorts[c] is not None:
            c, d = cohorts[c], d + 1  # type: ignore[assignment]
        return d

    for c in sorted(cohorts, key=lambda c: (depth(c), c)):
        spec: dict = {}
        if cohorts[c] is not None:
            spec["parentName"] = cohorts[c]
        rgs = resource_groups(("Cohort", c))
        if rgs:
            spec["resourceGroups"] = rgs
        objects.append({"apiVersion": API, "kind": "Cohort", "metadata": {"name": c}, "spec": spec})
    for cq in sorted(cq_info):
        spec = {"cohortName": cq_info[cq]["pool"], "queueingStrategy": "BestEffortFIFO",
                "resourceGroups": resource_groups(("ClusterQueue", cq))}
        if rule.afs:
            spec["admissionScope"] = {"admissionMode": "UsageBasedAdmissionFairSharing"}
        objects.append({"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": cq}, "spec": spec})
    for ns, lq, cq in sorted(lqs):
        objects.append({"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": lq, "namespace": ns},
                        "spec": {"clusterQueue": cq}})
    notes = [f"generated quota tree for {root}: {len(cohorts)} cohorts, {len(cq_info)} ClusterQueues, "
             f"{len(lqs)} LocalQueues", rule.describe()]
    return QuotaConfig(objects, root, notes)
