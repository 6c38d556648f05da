"""The generated default quota tree for a trace, with its nominal quotas derived from the trace's
own observed demand.

Shape (tenant paths and names: ``replay.sim.manifests.queue_names``)::

    root cohort <trace>                      holds the burst reserve (no limits: it is the root)
      └ pool cohort <trace>-<level>          one per tenant-path level above the group
          (e.g. dlrm-cn / dlrm-hn; openb-online / openb-batch)   shared pool + limits
          └ ClusterQueue <level>-<group>     one per tenant group          nominal + limits
              └ LocalQueue <group cq> in namespace <tenant>        one per tenant

**The rule** (:class:`QuotaRule`; every number per flavor and resource, base units):

1. Observed demand.  Each job that ran in the real cluster holds ``count × requests`` from its
   observed start (``scheduled_time``; the trace start for a preexisting job) for its observed
   run time, or to the trace end when it was never deleted.  Jobs that never started hold
   nothing.  This gives a step function of concurrent demand per ClusterQueue and per pool
   cohort over the trace span; statistics are **time-weighted** (the fraction of the trace's
   time the demand was at or below a level).
2. ClusterQueue: ``nominalQuota = ⌈p50⌉`` of its demand (``nominal_percentile``);
   ``borrowingLimit = ⌈peak⌉ − nominal`` (it can reach its own observed peak, if the cohort
   has it); ``lendingLimit = ⌊nominal × 0.5⌋`` (``lend_fraction``: half its guarantee stays).
3. Pool cohort (the parent of the ClusterQueues): own ``nominalQuota = max(0, ⌈p95⌉ of the
   pool's demand − Σ its ClusterQueues' nominal)`` (``pool_percentile``), a shared pool;
   ``borrowingLimit = max(0, ⌈peak × headroom⌉ − max(⌈p95⌉, Σ nominal))``: what it may take
   from the root's reserve; ``lendingLimit`` = its own nominal (it lends its shared pool, never
   its ClusterQueues' guarantees).
4. Root cohort: ``nominalQuota`` = the sum of its pools' borrowing limits (the burst reserve),
   so the whole tree can hold each pool's observed peak × ``headroom``.  When the ClusterQueues
   sit directly under the root, the root's quota is ``⌈peak × headroom⌉ − Σ nominal``.
5. Flavors: a job with a flavor (DLRM roles) counts in that flavor only.  A job without one
   (openb) is shared over the node flavors that have every resource it requests, in proportion
   to their capacity of its most specialised resource (:func:`flavor_weights`: GPU pods over the
   GPU models by GPU capacity, CPU pods over all flavors by cpu), and the statistics above are
   taken per flavor on these shares.  Without flavors or nodes: one flavor ``default``.
   (Node capacity is not a cap: openb's pod list fills under 1% of its 1,523 nodes.)
6. Admission fair sharing on: an ``EngineConfig`` with ``admissionFairSharing``
   (``usageHalfLifeTime`` 168h, ``usageSamplingInterval`` 5m, Kueue's documented example) and
   ``resourceWeights`` that score cores and GPUs (cpu 1, ``nvidia.com/gpu`` 10,
   ``alibaba.com/gpu-milli`` 0.01, every other resource 0: bytes would swamp the score), and
   ``admissionScope.admissionMode: UsageBasedAdmissionFairSharing`` on every ClusterQueue.

The trace's ``Topology`` objects come first, then its ResourceFlavors (a flavor names its
topology in ``spec.topologyName``).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal

from replay.sim.importers.jobs import ImportResult, Job, quantity_string
from replay.sim.manifests import QuotaConfig, queue_names

__all__ = ["QuotaRule", "generate_quota", "demand_intervals", "time_weighted"]

API = "kueue.x-k8s.io/v1beta2"
DEFAULT_FLAVOR = "default"
AFS_WEIGHTS = {"cpu": 1, "nvidia.com/gpu": 10, "alibaba.com/gpu-milli": 0.01}


@dataclass(frozen=True)
class QuotaRule:
    """Parameters of the generation rule (module docstring); the defaults are the documented rule.

    Attributes:
        nominal_percentile: ClusterQueue nominal = this time-weighted percentile of its demand.
        pool_percentile: pool cohort quota tops the pool up to this percentile of its demand.
        lend_fraction: ClusterQueue lendingLimit = ⌊nominal × this⌋.
        headroom: the tree can reach each pool's observed peak × this.
        half_life / sampling_interval: AFS ``usageHalfLifeTime`` / ``usageSamplingInterval``.
        afs: whether to turn admission fair sharing on.
    """

    nominal_percentile: float = 50.0
    pool_percentile: float = 95.0
    lend_fraction: float = 0.5
    headroom: float = 1.0
    half_life: str = "168h"
    sampling_interval: str = "5m"
    afs: bool = True

    def describe(self) -> str:
        """One line naming the parameters (goes into the manifest headers)."""
        return (f"nominal = p{self.nominal_percentile:g} of observed concurrent demand per ClusterQueue; "
                f"borrowingLimit = peak - nominal; lendingLimit = {self.lend_fraction:g} x nominal; "
                f"pool cohorts top up to p{self.pool_percentile:g}; root reserve up to peak x {self.headroom:g}")


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
                for key, store in (((cq, fk, res), cq_changes), ((pool, fk, res), pool_changes)):
                    lst = store.setdefault(key, [])
                    lst.append((iv[0], part))
                    lst.append((iv[1], -part))

    any_flavors = list(trace.capacity) if trace.capacity else [DEFAULT_FLAVOR]

    # quotas[(owner, flavor, res)] = [nominal, borrowingLimit or None, lendingLimit or None]
    quotas: dict[tuple[str, str, str], list] = {}
    owner_flavors: dict[str, list[str]] = {}
    owner_resources: dict[str, set[str]] = {}

    def put(owner: str, fk: str, res: str, nominal: int, borrow: int | None, lend: int | None) -> None:
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
    for cq, info in cq_info.items():
        for fk in sorted(info["flavors"]):
            for res in sorted(info["resources"]):
                (p_nom,), peak = time_weighted(cq_changes.get((cq, fk, res), []), span, [rule.nominal_percentile])
                nominal, peak = _ceil(p_nom), _ceil(peak)
                borrow = max(0, peak - nominal)
                lend = int(nominal * rule.lend_fraction)
                put(cq, fk, res, nominal, borrow, lend)
                key = (info["pool"], fk, res)
                nominal_sum[key] = nominal_sum.get(key, 0) + nominal
    reserve: dict[tuple[str, str], int] = {}
    for (pool, fk, res), summed in sorted(nominal_sum.items()):
        (p_pool,), peak = time_weighted(pool_changes.get((pool, fk, res), []), span, [rule.pool_percentile])
        p_pool = _ceil(p_pool)
        top = _ceil(peak * rule.headroom)
        own = max(0, p_pool - summed)
        if cohorts.get(pool) is None:  # the pool is the root
            put(pool, fk, res, max(0, top - summed), None, None)
            continue
        borrow = max(0, top - max(p_pool, summed))
        put(pool, fk, res, own, borrow, own)
        reserve[(fk, res)] = reserve.get((fk, res), 0) + borrow
    root_name = next(c for c, p in cohorts.items() if p is None)
    for (fk, res), amount in sorted(reserve.items()):
        put(root_name, fk, res, amount, None, None)

    def resource_groups(owner: str) -> list[dict]:
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
        rgs = resource_groups(c)
        if rgs:
            spec["resourceGroups"] = rgs
        objects.append({"apiVersion": API, "kind": "Cohort", "metadata": {"name": c}, "spec": spec})
    for cq in sorted(cq_info):
        spec = {"cohortName": cq_info[cq]["pool"], "queueingStrategy": "BestEffortFIFO",
                "resourceGroups": resource_groups(cq)}
        if rule.afs:
            spec["admissionScope"] = {"admissionMode": "UsageBasedAdmissionFairSharing"}
        objects.append({"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": cq}, "spec": spec})
    for ns, lq, cq in sorted(lqs):
        objects.append({"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": lq, "namespace": ns},
                        "spec": {"clusterQueue": cq}})
    notes = [f"generated quota tree for {root}: {len(cohorts)} cohorts, {len(cq_info)} ClusterQueues, "
             f"{len(lqs)} LocalQueues", rule.describe()]
    return QuotaConfig(objects, root, notes)
