"""Validation of v1 events (EVENTS.md) into typed values.

``decode_event`` turns one NDJSON line / Kafka message into an :class:`Event`; ``parse_event`` does the
same for an already-decoded JSON object.  Every rejection is an :class:`EventError` whose ``path`` names the
offending field (dotted, with list indices and ``[key]`` for map keys, Kubernetes ``field.Path`` style:
``object.spec.resourceGroups[0].flavors[1].resources[0].nominalQuota``,
``object.spec.podSets[0].requests[nvidia.com/gpu]``) and whose ``problem`` says what is wrong.

Object semantics follow Kueue ``apis/kueue/v1beta2`` (v1beta1 field names accepted for v1beta1 objects),
the Kueue validating webhooks / CRD CEL rules (``pkg/webhooks/clusterqueue_webhook.go``,
``cohort_webhook.go``), Kueue ``workload.AdjustResources`` (limits as missing requests) and Kubernetes
``component-helpers/resource.PodRequests`` for effective pod requests.

Pure: no I/O, clock, randomness or environment; stdlib + orjson only.  Written as plain hand-rolled
checks for speed (one Workload event is a few microseconds).
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal, InvalidOperation
from typing import Any, Callable, NoReturn

import orjson

from statemodel.errors import EventError
from statemodel.events.envelope import EVENT_TYPES, Event
from statemodel.objects import (
    Admission,
    AdmissionFairSharingConfig,
    AdmissionFairSharingStatus,
    ClusterQueue,
    Cohort,
    EngineConfig,
    FlavorFungibility,
    FlavorQuotas,
    KubeObject,
    LocalQueue,
    Node,
    ObjectRef,
    PodSet,
    PodSetAssignment,
    Preemption,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    Taint,
    Workload,
)
from statemodel.quantity import MAX_AMOUNT, parse_quantity, parse_weight_milli
from statemodel.timefmt import parse_duration, parse_time

__all__ = ["decode_event", "parse_event", "RESERVED_KIND_PROBLEM"]

RESERVED_KIND_PROBLEM = "kind reserved for the elastic/proportion quota model, not supported yet"

_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1
_SORT = orjson.OPT_SORT_KEYS
_EVENT_TYPES = frozenset(EVENT_TYPES)


# --------------------------------------------------------------------------- fast construction


def _positional_constructor(cls: type) -> Callable[..., Any]:
    """A constructor taking every field of a frozen, slotted dataclass positionally, in field order.

    Equivalent to ``cls(*args)`` for these plain-value classes (no ``__post_init__``, no converters), but
    about twice as fast: it sets the slots through their member descriptors instead of the frozen
    ``__init__``'s ``object.__setattr__`` calls.  Used for the per-event hot classes only.
    """
    fields = [f.name for f in dataclasses.fields(cls)]
    params = getattr(cls, "__dataclass_params__")
    if hasattr(cls, "__post_init__") or not params.frozen or "__slots__" not in cls.__dict__:
        raise TypeError(f"{cls.__name__} must be a frozen, slotted dataclass without __post_init__")
    ns: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    for f in fields:
        ns[f"_set_{f}"] = cls.__dict__[f].__set__
    body = "".join(f"    _set_{f}(o, {f})\n" for f in fields)
    src = f"def make({', '.join(fields)}):\n    o = _new(_cls)\n{body}    return o\n"
    exec(src, ns)  # noqa: S102 - generated from dataclass field names only
    return ns["make"]


_new_event = _positional_constructor(Event)
_new_workload = _positional_constructor(Workload)
_new_pod_set = _positional_constructor(PodSet)


# --------------------------------------------------------------------------- small helpers


def _fail(path: str, problem: str) -> NoReturn:
    raise EventError(path, problem)


def _type_problem(v: Any, what: str) -> str:
    return "required" if v is None else f"must be {what}"


def _obj(v: Any, path: str) -> dict:
    """``v`` as a JSON object (required)."""
    if isinstance(v, dict):
        return v
    _fail(path, _type_problem(v, "an object"))


def _opt_obj(d: dict, key: str, prefix: str) -> dict | None:
    """``d[key]`` as an object; ``None`` when absent or null."""
    v = d.get(key)
    if v is None or isinstance(v, dict):
        return v
    _fail(f"{prefix}.{key}", "must be an object")


def _opt_list(d: dict, key: str, prefix: str) -> list | None:
    """``d[key]`` as a list; ``None`` when absent or null."""
    v = d.get(key)
    if v is None or isinstance(v, list):
        return v
    _fail(f"{prefix}.{key}", "must be a list")


def _req_str(d: dict, key: str, prefix: str) -> str:
    """``d[key]`` as a non-empty string (required)."""
    v = d.get(key)
    if isinstance(v, str) and v:
        return v
    _fail(f"{prefix}.{key}", "must not be empty" if v == "" else _type_problem(v, "a string"))


def _opt_str(d: dict, key: str, prefix: str, default: Any) -> Any:
    """``d[key]`` as a string; ``default`` when absent, null or empty."""
    v = d.get(key)
    if v is None or v == "":
        return default
    if isinstance(v, str):
        return v
    _fail(f"{prefix}.{key}", "must be a string")


def _enum(d: dict, key: str, prefix: str, allowed: tuple[str, ...], default: Any, aliases: dict | None = None) -> Any:
    """``d[key]`` as one of ``allowed`` (``aliases`` mapped first); ``default`` when absent or null."""
    v = d.get(key)
    if v is None:
        return default
    if isinstance(v, str):
        if aliases and v in aliases:
            return aliases[v]
        if v in allowed:
            return v
        _fail(f"{prefix}.{key}", f"unsupported value {v!r}: must be one of {', '.join(allowed)}")
    _fail(f"{prefix}.{key}", "must be a string")


def _int(v: Any, path: str, lo: int, hi: int) -> int:
    """``v`` as a JSON integer in ``[lo, hi]`` (``bool`` rejected)."""
    if type(v) is not int:
        _fail(path, _type_problem(v, "an integer"))
    if v < lo:
        _fail(path, f"must be greater than or equal to {lo}, got {v}")
    if v > hi:
        _fail(path, f"must be less than or equal to {hi}, got {v}")
    return v


def _bool(d: dict, key: str, prefix: str, default: bool) -> bool:
    v = d.get(key)
    if v is None:
        return default
    if type(v) is bool:
        return v
    _fail(f"{prefix}.{key}", "must be a boolean")


def _qmap(v: Any, path: str) -> dict[str, int]:
    """A resource → quantity map in base units (zeros kept); ``None`` → ``{}``."""
    try:
        return _qmap_rel(v)
    except EventError as e:
        raise _rebase(path, e) from None


def _smap(v: Any, path: str) -> tuple[tuple[str, str], ...]:
    """A string → string map as sorted pairs.  ``None`` → ``()``."""
    if v is None:
        return ()
    if not isinstance(v, dict):
        _fail(path, "must be an object (string → string)")
    for k, s in v.items():
        if not isinstance(s, str):
            _fail(f"{path}[{k}]", "must be a string")
    return tuple(sorted(v.items()))


def _weight(spec: dict, prefix: str) -> int:
    """``spec.fairSharing.weight`` in thousandths (Kueue default 1)."""
    fs = _opt_obj(spec, "fairSharing", prefix)
    if fs is None:
        return 1000
    w = fs.get("weight")
    if w is None:
        return 1000
    return parse_weight_milli(w, f"{prefix}.fairSharing.weight")


# --------------------------------------------------------------------------- quota objects


def _resource_groups(spec: dict, prefix: str, is_cq: bool, has_parent: bool) -> tuple[ResourceGroup, ...]:
    """``spec.resourceGroups`` validated like Kueue's ClusterQueue/Cohort webhooks."""
    rgs = _opt_list(spec, "resourceGroups", prefix)
    if not rgs:
        return ()
    seen_res: set[str] = set()
    seen_flavors: set[str] = set()
    groups = []
    no_parent = "must be nil when cohort is empty" if is_cq else "must be nil when parent is empty"
    for gi, rg in enumerate(rgs):
        gp = f"{prefix}.resourceGroups[{gi}]"
        rg = _obj(rg, gp)
        covered_raw = rg.get("coveredResources")
        if not isinstance(covered_raw, list):
            _fail(f"{gp}.coveredResources", _type_problem(covered_raw, "a list of resource names"))
        if not covered_raw:
            _fail(f"{gp}.coveredResources", "must not be empty")
        for ri, res in enumerate(covered_raw):
            rp = f"{gp}.coveredResources[{ri}]"
            if not isinstance(res, str):
                _fail(rp, "must be a string")
            if not res:
                _fail(rp, "must not be empty")
            if res in seen_res:
                _fail(rp, f"duplicate resource {res!r}: a resource may be covered by only one resource group")
            seen_res.add(res)
        covered = tuple(covered_raw)
        flavors_raw = rg.get("flavors")
        if not isinstance(flavors_raw, list):
            _fail(f"{gp}.flavors", _type_problem(flavors_raw, "a list"))
        if not flavors_raw:
            _fail(f"{gp}.flavors", "must not be empty")
        flavors = []
        for fi, fl in enumerate(flavors_raw):
            fp = f"{gp}.flavors[{fi}]"
            fl = _obj(fl, fp)
            fname = _req_str(fl, "name", fp)
            if fname in seen_flavors:
                _fail(f"{fp}.name", f"duplicate flavor {fname!r}: a flavor may appear in only one resource group")
            seen_flavors.add(fname)
            res_raw = fl.get("resources")
            if not isinstance(res_raw, list):
                _fail(f"{fp}.resources", _type_problem(res_raw, "a list"))
            if len(res_raw) != len(covered):
                _fail(
                    f"{fp}.resources",
                    f"must list exactly the coveredResources in order ({len(covered)} resources), got {len(res_raw)}",
                )
            quotas = []
            for qi, rq in enumerate(res_raw):
                qp = f"{fp}.resources[{qi}]"
                rq = _obj(rq, qp)
                rname = _req_str(rq, "name", qp)
                if rname != covered[qi]:
                    _fail(f"{qp}.name", f"must be {covered[qi]!r} (coveredResources[{qi}]), got {rname!r}")
                nominal_raw = rq.get("nominalQuota")
                if nominal_raw is None:
                    _fail(f"{qp}.nominalQuota", "required")
                nominal = parse_quantity(rname, nominal_raw, f"{qp}.nominalQuota")
                borrowing = rq.get("borrowingLimit")
                if borrowing is not None:
                    borrowing = parse_quantity(rname, borrowing, f"{qp}.borrowingLimit")
                    if not has_parent:
                        _fail(f"{qp}.borrowingLimit", no_parent)
                lending = rq.get("lendingLimit")
                if lending is not None:
                    lending = parse_quantity(rname, lending, f"{qp}.lendingLimit")
                    if not has_parent:
                        _fail(f"{qp}.lendingLimit", no_parent)
                    if is_cq and lending > nominal:
                        _fail(f"{qp}.lendingLimit", "must be less than or equal to nominalQuota")
                quotas.append(ResourceQuota(rname, nominal, borrowing, lending))
            flavors.append(FlavorQuotas(fname, tuple(quotas)))
        groups.append(ResourceGroup(covered, tuple(flavors)))
    return tuple(groups)


def _parse_resource_flavor(o: dict, name: str, v1beta1: bool, time_ms: int) -> ResourceFlavor:
    spec = _opt_obj(o, "spec", "object") or {}
    return ResourceFlavor(name, _smap(spec.get("nodeLabels"), "object.spec.nodeLabels"))


def _admission_mode(spec: dict, p: str) -> str | None:
    """``spec.admissionScope.admissionMode`` of a ClusterQueue or Cohort (KEP-4136), or ``None``."""
    scope = _opt_obj(spec, "admissionScope", p)
    if scope is None:
        return None
    sp = f"{p}.admissionScope"
    mode = _enum(scope, "admissionMode", sp, _ADMISSION_MODE, None)
    if mode is None:
        _fail(f"{sp}.admissionMode", "required")
    return mode


def _parse_cohort(o: dict, name: str, v1beta1: bool, time_ms: int) -> Cohort:
    p = "object.spec"
    spec = _opt_obj(o, "spec", "object") or {}
    parent = _opt_str(spec, "parent" if v1beta1 else "parentName", p, None)
    groups = _resource_groups(spec, p, False, parent is not None)
    return Cohort(name, parent, groups, _weight(spec, p), _admission_mode(spec, p))


_WITHIN_CQ = ("Never", "LowerPriority", "LowerOrNewerEqualPriority")
_RECLAIM = ("Never", "LowerPriority", "Any")
_BORROW_POLICY = ("Never", "LowerPriority")
_FUNGIBILITY = ("MayStopSearch", "TryNextFlavor")
_BORROW_ALIAS = {"Borrow": "MayStopSearch"}
_PREEMPT_ALIAS = {"Preempt": "MayStopSearch"}
_PREFERENCE = ("BorrowingOverPreemption", "PreemptionOverBorrowing")
_STOP_POLICY = ("None", "Hold", "HoldAndDrain")
_ADMISSION_MODE = ("UsageBasedAdmissionFairSharing", "NoAdmissionFairSharing")
_QUEUEING = ("BestEffortFIFO", "StrictFIFO")
_DEFAULT_PREEMPTION = Preemption()
_DEFAULT_FUNGIBILITY = FlavorFungibility()


def _parse_cluster_queue(o: dict, name: str, v1beta1: bool, time_ms: int) -> ClusterQueue:
    p = "object.spec"
    spec = _opt_obj(o, "spec", "object") or {}
    cohort = _opt_str(spec, "cohort" if v1beta1 else "cohortName", p, None)
    groups = _resource_groups(spec, p, True, cohort is not None)
    strategy = _enum(spec, "queueingStrategy", p, _QUEUEING, "BestEffortFIFO")

    preemption = _DEFAULT_PREEMPTION
    pr = _opt_obj(spec, "preemption", p)
    if pr is not None:
        pp = f"{p}.preemption"
        within = _enum(pr, "withinClusterQueue", pp, _WITHIN_CQ, "Never")
        reclaim = _enum(pr, "reclaimWithinCohort", pp, _RECLAIM, "Never")
        policy = "Never"
        threshold = None
        bwc = _opt_obj(pr, "borrowWithinCohort", pp)
        if bwc is not None:
            bp = f"{pp}.borrowWithinCohort"
            policy = _enum(bwc, "policy", bp, _BORROW_POLICY, "Never")
            t = bwc.get("maxPriorityThreshold")
            if t is not None:
                threshold = _int(t, f"{bp}.maxPriorityThreshold", _INT32_MIN, _INT32_MAX)
        if reclaim == "Never" and policy != "Never":
            _fail(pp, "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never")
        preemption = Preemption(within, reclaim, policy, threshold)

    fungibility = _DEFAULT_FUNGIBILITY
    ff = _opt_obj(spec, "flavorFungibility", p)
    if ff is not None:
        fp = f"{p}.flavorFungibility"
        borrow = _enum(ff, "whenCanBorrow", fp, _FUNGIBILITY, "MayStopSearch", _BORROW_ALIAS if v1beta1 else None)
        preempt = _enum(ff, "whenCanPreempt", fp, _FUNGIBILITY, "TryNextFlavor", _PREEMPT_ALIAS if v1beta1 else None)
        preference = _enum(ff, "preference", fp, _PREFERENCE, None)
        if preference is not None and (borrow != "TryNextFlavor" or preempt != "TryNextFlavor"):
            _fail(f"{fp}.preference", "only allowed when whenCanBorrow and whenCanPreempt are TryNextFlavor")
        fungibility = FlavorFungibility(borrow, preempt, preference)

    admission_mode = _admission_mode(spec, p)

    return ClusterQueue(
        name,
        cohort,
        groups,
        strategy,
        preemption,
        fungibility,
        _weight(spec, p),
        admission_mode,
        _enum(spec, "stopPolicy", p, _STOP_POLICY, "None"),
    )


def _parse_local_queue(o: dict, name: str, v1beta1: bool, time_ms: int) -> LocalQueue:
    p = "object.spec"
    namespace = _req_str(o["metadata"], "namespace", "object.metadata")
    spec = _obj(o.get("spec"), p)
    cq = _req_str(spec, "clusterQueue", p)
    weight = _weight(spec, p)
    stop = _enum(spec, "stopPolicy", p, _STOP_POLICY, "None")
    afs = None
    status = _opt_obj(o, "status", "object")
    if status is not None:
        fs = _opt_obj(status, "fairSharing", "object.status")
        if fs is not None:
            a = _opt_obj(fs, "admissionFairSharingStatus", "object.status.fairSharing")
            if a is not None:
                ap = "object.status.fairSharing.admissionFairSharingStatus"
                consumed = _qmap(a.get("consumedResources"), f"{ap}.consumedResources")
                last = a.get("lastUpdate")
                if last is None:
                    _fail(f"{ap}.lastUpdate", "required")
                afs = AdmissionFairSharingStatus(tuple(sorted(consumed.items())), parse_time(last, f"{ap}.lastUpdate"))
    return LocalQueue(namespace, name, cq, weight, stop, afs)


# --------------------------------------------------------------------------- workloads
#
# The hot path (one Workload per event) builds no path strings unless something fails: helpers raise
# EventError with a path *relative* to the value they were given ("", ".count", "[cpu]"), and each caller
# re-raises with its own prefix (zero-cost ``try`` in CPython 3.11).


_AMOUNTS: dict[tuple[str, str], int] = {}
"""Memo of ``(resource, quantity string) → amount`` for valid quantities (bounded; cleared when full)."""
_AMOUNTS_MAX = 65536


def _rebase(prefix: str, e: EventError) -> EventError:
    return EventError(prefix + e.path, e.problem)


def _qmap_rel(v: Any) -> dict[str, int]:
    """A resource → quantity map in base units (zeros kept); ``None`` → ``{}``.  Relative error paths."""
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise EventError("", "must be an object (resource → quantity)")
    out = {}
    cache = _AMOUNTS
    for res, q in v.items():
        if type(q) is str:
            amount = cache.get((res, q))
            if amount is not None:
                out[res] = amount
                continue
        if not res:
            raise EventError("", "resource name must not be empty")
        try:
            amount = parse_quantity(res, q, "")
        except EventError as e:
            raise EventError(f"[{res}]", e.problem) from None
        if type(q) is str:
            if len(cache) >= _AMOUNTS_MAX:
                cache.clear()
            cache[(res, q)] = amount
        out[res] = amount
    return out


def _container_requests(c: Any) -> dict[str, int]:
    """Requests of one container, limits filling missing requests (Kueue ``UseLimitsAsMissingRequestsInPod``)."""
    if not isinstance(c, dict):
        raise EventError("", _type_problem(c, "an object"))
    res = c.get("resources")
    if res is None:
        return {}
    if not isinstance(res, dict):
        raise EventError(".resources", "must be an object")
    try:
        req = _qmap_rel(res.get("requests"))
    except EventError as e:
        raise _rebase(".resources.requests", e) from None
    limits = res.get("limits")
    if limits is not None:
        try:
            lim = _qmap_rel(limits)
        except EventError as e:
            raise _rebase(".resources.limits", e) from None
        for k, v in lim.items():
            if k not in req:
                req[k] = v
    return req


def _pod_requests(tspec: dict) -> dict[str, int]:
    """Effective per-pod requests of a pod spec (Kubernetes ``component-helpers/resource.PodRequests``).

    ``max(sum(containers) + sum(sidecars), max over init containers of (own + earlier sidecars))`` + overhead;
    a sidecar (init container with ``restartPolicy: Always``) peaks at the cumulative sidecar total so far.
    """
    containers = tspec.get("containers")
    if containers is None:
        containers = ()
    elif not isinstance(containers, list):
        raise EventError(".containers", "must be a list")
    reqs: dict[str, int] = {}
    for i, c in enumerate(containers):
        try:
            creq = _container_requests(c)
        except EventError as e:
            raise _rebase(f".containers[{i}]", e) from None
        for k, v in creq.items():
            reqs[k] = reqs.get(k, 0) + v
    inits = tspec.get("initContainers")
    if inits is not None:
        if not isinstance(inits, list):
            raise EventError(".initContainers", "must be a list")
        sidecars: dict[str, int] = {}
        init_peak: dict[str, int] = {}
        for i, c in enumerate(inits):
            try:
                creq = _container_requests(c)
            except EventError as e:
                raise _rebase(f".initContainers[{i}]", e) from None
            rp = c.get("restartPolicy")
            if rp is not None and not isinstance(rp, str):
                raise EventError(f".initContainers[{i}].restartPolicy", "must be a string")
            if rp == "Always":
                for k, v in creq.items():
                    reqs[k] = reqs.get(k, 0) + v
                    sidecars[k] = sidecars.get(k, 0) + v
                peak = sidecars
            else:
                peak = creq
                for k, v in sidecars.items():
                    peak[k] = peak.get(k, 0) + v
            for k, v in peak.items():
                if v > init_peak.get(k, 0):
                    init_peak[k] = v
        for k, v in init_peak.items():
            if v > reqs.get(k, 0):
                reqs[k] = v
    overhead = tspec.get("overhead")
    if overhead is not None:
        try:
            oh = _qmap_rel(overhead)
        except EventError as e:
            raise _rebase(".overhead", e) from None
        for k, v in oh.items():
            reqs[k] = reqs.get(k, 0) + v
    for k, v in reqs.items():
        if v > MAX_AMOUNT:
            raise EventError("", f"effective request of {k!r} too large")
    return reqs


def _pod_set(ps: Any) -> PodSet:
    """One ``spec.podSets[i]``; relative error paths."""
    if not isinstance(ps, dict):
        raise EventError("", _type_problem(ps, "an object"))
    name = ps.get("name")
    if name is None:
        name = "main"  # Kueue CRD default
    elif not isinstance(name, str) or not name:
        raise EventError(".name", "must not be empty" if name == "" else "must be a string")
    count = ps.get("count")
    count = 1 if count is None else _int(count, ".count", 0, _INT32_MAX)
    min_count = ps.get("minCount")
    if min_count is not None:
        min_count = _int(min_count, ".minCount", 1, _INT32_MAX)
        if min_count > count:
            raise EventError(".minCount", f"must be less than or equal to count ({count})")
    requests = ps.get("requests")
    template = ps.get("template")
    if requests is not None:
        if template is not None:
            raise EventError("", "give either requests or template, not both")
        try:
            reqs = _qmap_rel(requests)
        except EventError as e:
            raise _rebase(".requests", e) from None
    elif template is not None:
        if not isinstance(template, dict):
            raise EventError(".template", "must be an object")
        tspec = template.get("spec")
        if not isinstance(tspec, dict):
            raise EventError(".template.spec", _type_problem(tspec, "an object"))
        try:
            reqs = _pod_requests(tspec)
        except EventError as e:
            raise _rebase(".template.spec", e) from None
    else:
        raise EventError("", "one of requests or template is required")
    return _new_pod_set(name, count, tuple(sorted([kv for kv in reqs.items() if kv[1]])), min_count)


def _pod_sets(raw: Any) -> tuple[PodSet, ...]:
    """``spec.podSets``: non-empty, unique names; relative error paths."""
    if not isinstance(raw, list):
        raise EventError("", _type_problem(raw, "a list"))
    if not raw:
        raise EventError("", "must not be empty")
    out: list[PodSet] = []
    for i, ps in enumerate(raw):
        try:
            pod_set = _pod_set(ps)
        except EventError as e:
            raise _rebase(f"[{i}]", e) from None
        for prev in out:
            if prev.name == pod_set.name:
                raise EventError(f"[{i}].name", f"duplicate podSet name {pod_set.name!r}")
        out.append(pod_set)
    return tuple(out)


def _admission_rel(a: Any) -> Admission:
    """Kueue ``status.admission`` (clusterQueue, podSetAssignments; resourceUsage is the podSet total)."""
    if not isinstance(a, dict):
        raise EventError("", _type_problem(a, "an object"))
    cq = _req_str(a, "clusterQueue", "")
    raw = a.get("podSetAssignments")
    if not isinstance(raw, list):
        raise EventError(".podSetAssignments", _type_problem(raw, "a list"))
    if not raw:
        raise EventError(".podSetAssignments", "must not be empty")
    out = []
    names = set()
    for i, psa in enumerate(raw):
        ip = f".podSetAssignments[{i}]"
        if not isinstance(psa, dict):
            raise EventError(ip, _type_problem(psa, "an object"))
        name = _req_str(psa, "name", ip)
        if name in names:
            raise EventError(f"{ip}.name", f"duplicate podSet name {name!r}")
        names.add(name)
        flavors = _smap(psa.get("flavors"), f"{ip}.flavors")
        for res, fl in flavors:
            if not fl:
                raise EventError(f"{ip}.flavors[{res}]", "must not be empty")
        try:
            usage = _qmap_rel(psa.get("resourceUsage"))
        except EventError as e:
            raise _rebase(f"{ip}.resourceUsage", e) from None
        flavored = dict(flavors)
        for res, amount in usage.items():
            if amount and res not in flavored:
                raise EventError(f"{ip}.resourceUsage[{res}]", f"resource {res!r} has no flavor in flavors")
        count = _int(psa.get("count"), f"{ip}.count", 0, _INT32_MAX)
        out.append(PodSetAssignment(name, flavors, tuple(sorted(usage.items())), count))
    return Admission(cq, tuple(out))


def _parse_admission(a: Any, path: str) -> Admission:
    try:
        return _admission_rel(a)
    except EventError as e:
        raise _rebase(path, e) from None


def _parse_workload(o: dict, name: str, v1beta1: bool, time_ms: int) -> Workload:
    meta = o["metadata"]
    namespace = meta.get("namespace")
    if not isinstance(namespace, str) or not namespace:
        _fail("object.metadata.namespace", "must not be empty" if namespace == "" else _type_problem(namespace, "a string"))
    uid = meta.get("uid")
    if uid is None or uid == "":
        uid = f"{namespace}/{name}"
    elif not isinstance(uid, str):
        _fail("object.metadata.uid", "must be a string")
    created = meta.get("creationTimestamp")
    created = time_ms if created is None else parse_time(created, "object.metadata.creationTimestamp")
    spec = o.get("spec")
    if not isinstance(spec, dict):
        _fail("object.spec", _type_problem(spec, "an object"))
    queue = spec.get("queueName")
    if not isinstance(queue, str) or not queue:
        _fail("object.spec.queueName", "must not be empty" if queue == "" else _type_problem(queue, "a string"))
    priority = spec.get("priority")
    priority = 0 if priority is None else _int(priority, "object.spec.priority", _INT32_MIN, _INT32_MAX)
    try:
        pod_sets = _pod_sets(spec.get("podSets"))
    except EventError as e:
        raise _rebase("object.spec.podSets", e) from None
    admission = None
    status = o.get("status")
    if status is not None:
        if not isinstance(status, dict):
            _fail("object.status", "must be an object")
        a = status.get("admission")
        if a is not None:
            admission = _parse_admission(a, "object.status.admission")
            ps_names = {ps.name for ps in pod_sets}
            for i, psa in enumerate(admission.pod_set_assignments):
                if psa.name not in ps_names:
                    _fail(f"object.status.admission.podSetAssignments[{i}].name", f"no podSet named {psa.name!r}")
    return _new_workload(namespace, name, uid, created, queue, priority, pod_sets, admission)


# --------------------------------------------------------------------------- nodes and config


_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def _parse_node(o: dict, name: str, v1beta1: bool, time_ms: int) -> Node:
    labels = _smap(o["metadata"].get("labels"), "object.metadata.labels")
    status = _opt_obj(o, "status", "object") or {}
    alloc = _qmap(status.get("allocatable"), "object.status.allocatable")
    spec = _opt_obj(o, "spec", "object") or {}
    unschedulable = _bool(spec, "unschedulable", "object.spec", False)
    taints = []
    for i, t in enumerate(_opt_list(spec, "taints", "object.spec") or ()):
        tp = f"object.spec.taints[{i}]"
        t = _obj(t, tp)
        key = _req_str(t, "key", tp)
        value = _opt_str(t, "value", tp, "")
        effect = _enum(t, "effect", tp, _TAINT_EFFECTS, None)
        if effect is None:
            _fail(f"{tp}.effect", "required")
        taints.append(Taint(key, value, effect))
    return Node(name, labels, tuple(sorted(alloc.items())), unschedulable, tuple(taints))


_STRATEGIES = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")
_ALLOWED_STRATEGY_LISTS = (
    ("LessThanOrEqualToFinalShare",),
    ("LessThanInitialShare",),
    ("LessThanOrEqualToFinalShare", "LessThanInitialShare"),
)
_DEFAULT_STRATEGIES = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")


def _milli_number(v: Any, path: str) -> int:
    """A JSON number ≥ 0 as exact thousandths (``0.5`` → 500)."""
    if type(v) is int:
        m = v * 1000
    elif type(v) is float:
        try:
            d = Decimal(repr(v)).scaleb(3)
        except InvalidOperation:  # pragma: no cover - repr of a float is always a valid Decimal
            _fail(path, "must be a number")
        if not d.is_finite():
            _fail(path, "must be a finite number")
        if d != d.to_integral_value():
            _fail(path, f"must be a multiple of 0.001, got {v!r}")
        m = int(d)
    else:
        _fail(path, "must be a number")
    if m < 0:
        _fail(path, f"must not be negative, got {v!r}")
    if m > MAX_AMOUNT:
        _fail(path, "too large")
    return m


def _parse_engine_config(o: dict, name: str, v1beta1: bool, time_ms: int) -> EngineConfig:
    p = "object.spec"
    spec = _opt_obj(o, "spec", "object") or {}
    afs = None
    a = _opt_obj(spec, "admissionFairSharing", p)
    if a is not None:
        ap = f"{p}.admissionFairSharing"
        hl = a.get("usageHalfLifeTime")
        half_life = 0 if hl is None else parse_duration(hl, f"{ap}.usageHalfLifeTime")
        si = a.get("usageSamplingInterval")
        interval = 300_000 if si is None else parse_duration(si, f"{ap}.usageSamplingInterval")
        if interval <= 0:
            _fail(f"{ap}.usageSamplingInterval", "must be greater than 0")
        weights_raw = _opt_obj(a, "resourceWeights", ap) or {}
        weights = []
        for res, w in weights_raw.items():
            if not res:
                _fail(f"{ap}.resourceWeights", "resource name must not be empty")
            weights.append((res, _milli_number(w, f"{ap}.resourceWeights[{res}]")))
        rp = a.get("resetInactivityPeriod")
        reset = 0 if rp is None else parse_duration(rp, f"{ap}.resetInactivityPeriod")
        afs = AdmissionFairSharingConfig(half_life, interval, tuple(sorted(weights)), reset)
    enable = False
    strategies: tuple[str, ...] = _DEFAULT_STRATEGIES
    fs = _opt_obj(spec, "fairSharing", p)
    if fs is not None:
        fp = f"{p}.fairSharing"
        enable = _bool(fs, "enable", fp, False)
        raw = _opt_list(fs, "preemptionStrategies", fp)
        if raw:
            for i, s in enumerate(raw):
                if s not in _STRATEGIES:
                    _fail(
                        f"{fp}.preemptionStrategies[{i}]",
                        f"unsupported value {s!r}: must be one of {', '.join(_STRATEGIES)}"
                        if isinstance(s, str)
                        else "must be a string",
                    )
            strategies = tuple(raw)
            if strategies not in _ALLOWED_STRATEGY_LISTS:
                _fail(
                    f"{fp}.preemptionStrategies",
                    "must be [LessThanOrEqualToFinalShare], [LessThanInitialShare] or "
                    "[LessThanOrEqualToFinalShare, LessThanInitialShare]",
                )
    return EngineConfig(afs, enable, strategies)


# --------------------------------------------------------------------------- kinds

_Parser = Callable[[dict, str, bool, int], KubeObject]

# apiVersion → kind → (parser, namespaced, is v1beta1)
_KINDS: dict[str, dict[str, tuple[_Parser, bool, bool]]] = {}
for _api, _old in (("kueue.x-k8s.io/v1beta2", False), ("kueue.x-k8s.io/v1beta1", True)):
    _KINDS[_api] = {
        "ResourceFlavor": (_parse_resource_flavor, False, _old),
        "Cohort": (_parse_cohort, False, _old),
        "ClusterQueue": (_parse_cluster_queue, False, _old),
        "LocalQueue": (_parse_local_queue, True, _old),
        "Workload": (_parse_workload, True, _old),
    }
_KINDS["v1"] = {"Node": (_parse_node, False, False)}
_KINDS["quotaledger.io/v1alpha1"] = {"EngineConfig": (_parse_engine_config, False, False)}
_RESERVED = {"scheduling.sigs.k8s.io/v1alpha1": "ElasticQuota", "scheduling.volcano.sh/v1beta1": "Queue"}


def _kind_of(o: dict) -> tuple[_Parser, bool, bool, str, str]:
    """Look up ``(parser, namespaced, v1beta1, kind, name)`` of an object; validates apiVersion/kind/metadata.name."""
    api = o.get("apiVersion")
    if not isinstance(api, str) or not api:
        _fail("object.apiVersion", "must not be empty" if api == "" else _type_problem(api, "a string"))
    kind = o.get("kind")
    if not isinstance(kind, str) or not kind:
        _fail("object.kind", "must not be empty" if kind == "" else _type_problem(kind, "a string"))
    kinds = _KINDS.get(api)
    if kinds is None:
        reserved = _RESERVED.get(api)
        if reserved is None:
            _fail("object.apiVersion", f"unknown apiVersion {api!r}")
        if kind == reserved:
            _fail("object.kind", RESERVED_KIND_PROBLEM)
        _fail("object.kind", f"unknown kind {kind!r} for apiVersion {api!r}")
    entry = kinds.get(kind)
    if entry is None:
        _fail("object.kind", f"unknown kind {kind!r} for apiVersion {api!r}")
    meta = o.get("metadata")
    if not isinstance(meta, dict):
        _fail("object.metadata", _type_problem(meta, "an object"))
    name = _req_str(meta, "name", "object.metadata")
    return entry[0], entry[1], entry[2], kind, name


def _parse_object(o: Any, time_ms: int) -> KubeObject:
    if not isinstance(o, dict):
        _fail("object", _type_problem(o, "an object"))
    parser, _, v1beta1, _, name = _kind_of(o)
    return parser(o, name, v1beta1, time_ms)


def _parse_ref(o: Any) -> ObjectRef:
    if not isinstance(o, dict):
        _fail("object", _type_problem(o, "an object"))
    _, namespaced, _, kind, name = _kind_of(o)
    namespace = _req_str(o["metadata"], "namespace", "object.metadata") if namespaced else ""
    return ObjectRef(kind, namespace, name)


def _workload_key(raw: dict) -> str:
    v = raw.get("workload")
    if not isinstance(v, str):
        _fail("workload", _type_problem(v, "a string 'namespace/name'"))
    ns, sep, name = v.partition("/")
    if not sep or not ns or not name or "/" in name:
        _fail("workload", f"must be 'namespace/name', got {v!r}")
    return v


# --------------------------------------------------------------------------- envelope


def _parse(raw: Any, default_cluster: str, default_time: int | None, nested: bool) -> Event:
    if not isinstance(raw, dict):
        _fail("", "event must be a JSON object")
    eid = raw.get("id")
    if not isinstance(eid, str) or not eid:
        _fail("id", "must not be empty" if eid == "" else _type_problem(eid, "a string"))
    try:
        t = raw.get("time")
        if t is None and default_time is not None:
            time_ms = default_time
        else:
            time_ms = parse_time(t, "time") if t is not None else _fail("time", "required")
        cluster = raw.get("cluster")
        if cluster is None:
            cluster = default_cluster
        elif not isinstance(cluster, str) or not cluster:
            _fail("cluster", "must not be empty" if cluster == "" else "must be a string")
        etype = raw.get("type")
        if not isinstance(etype, str):
            _fail("type", _type_problem(etype, "a string"))
        if etype not in _EVENT_TYPES:
            _fail("type", f"unknown type {etype!r}: must be one of {', '.join(EVENT_TYPES)}")
        v = raw.get("v")
        if v is not None and (type(v) is not int or v != 1):
            _fail("v", f"unsupported version {v!r}: must be 1")

        obj = ref = workload = admission = reason = None
        events: tuple[Event, ...] = ()
        if etype == "Applied":
            obj = _parse_object(raw.get("object"), time_ms)
        elif etype == "Deleted":
            ref = _parse_ref(raw.get("object"))
        elif etype == "WorkloadAdmitted":
            workload = _workload_key(raw)
            admission = _parse_admission(raw.get("admission"), "admission")
        elif etype == "WorkloadEvicted":
            workload = _workload_key(raw)
            reason = raw.get("reason")
            if reason is None:
                reason = "Evicted"
            elif not isinstance(reason, str):
                _fail("reason", "must be a string")
        elif etype == "WorkloadFinished":
            workload = _workload_key(raw)
        elif etype == "Batch":
            if nested:
                _fail("type", "a Batch may not contain a Batch")
            inner = raw.get("events")
            if not isinstance(inner, list):
                _fail("events", _type_problem(inner, "a list of events"))
            if not inner:
                _fail("events", "must not be empty")
            parsed = []
            for i, ev in enumerate(inner):
                try:
                    parsed.append(_parse(ev, cluster, time_ms, True))
                except EventError as e:
                    raise EventError(f"events[{i}].{e.path}" if e.path else f"events[{i}]", e.problem) from None
            events = tuple(parsed)
        try:
            canonical = orjson.dumps(raw, option=_SORT)
        except (orjson.JSONEncodeError, TypeError) as e:
            _fail("", f"not representable as JSON: {e}")
    except EventError as e:
        e.event_id = eid
        raise
    return _new_event(eid, time_ms, cluster, etype, canonical, obj, ref, workload, admission, reason, events)


def parse_event(raw: dict, *, default_cluster: str = "default") -> Event:
    """Validate one decoded event (a JSON object) and build the typed :class:`Event`.

    Args:
        raw: the event as decoded JSON (``dict``), EVENTS.md "Envelope": ``id``, ``time``, optional ``cluster``
            (default ``default_cluster``), ``type`` (one of ``EVENT_TYPES``), optional ``v`` (must be 1), and
            the payload of the type.
        default_cluster: cluster of events that do not name one.

    Returns:
        An :class:`Event`; ``canonical`` is ``orjson.dumps(raw, OPT_SORT_KEYS)``.  Inner events of a ``Batch``
        default ``time``/``cluster`` to the batch's, and each has the canonical form of its own raw object.

    Raises:
        EventError: ``path`` names the field (``object.spec.podSets[0].count``; inside a batch prefixed with
        ``events[i].``), ``problem`` says what is wrong, ``event_id`` is the (outer) ``id`` when readable.
    """
    return _parse(raw, default_cluster, None, False)


def decode_event(line: bytes | str, *, default_cluster: str = "default") -> Event:
    """Decode one JSON text (an NDJSON line or a Kafka message value) and validate it with :func:`parse_event`.

    Raises:
        EventError: with path ``""`` for invalid JSON, invalid UTF-8 or a top-level value that is not an object;
        otherwise as :func:`parse_event`.
    """
    try:
        raw = orjson.loads(line)
    except orjson.JSONDecodeError as e:
        raise EventError("", f"invalid JSON: {e}") from None
    if not isinstance(raw, dict):
        raise EventError("", "event must be a JSON object")
    return _parse(raw, default_cluster, None, False)
