"""Parsers of the ``kueue.x-k8s.io`` API group: ResourceFlavor, Cohort, ClusterQueue, LocalQueue, Workload.

Object semantics follow Kueue ``apis/kueue/v1beta2``; objects of older versions reach these parsers
already upgraded (``statemodel.events.upcasters``).  Validation follows the Kueue validating webhooks
and CRD CEL rules (``pkg/webhooks/clusterqueue_webhook.go``, ``cohort_webhook.go``); a Workload's
effective per-pod requests follow Kueue ``workload.AdjustResources`` (limits as missing requests) and
Kubernetes ``component-helpers/resource.PodRequests`` (init containers, sidecars, overhead).

Each parser takes ``(object, metadata.name, event time in ms)`` and returns the typed object of
``statemodel.objects`` or raises :class:`~statemodel.errors.EventError`.  Pure; written as plain
hand-rolled checks for speed (one Workload event is a few microseconds).
"""

from __future__ import annotations

from typing import Any, Callable

from statemodel.errors import EventError
from statemodel.events.fields import (
    INT32_MAX,
    INT32_MIN,
    as_obj,
    choice,
    fail,
    flavor_map,
    int_in,
    members,
    opt_list,
    opt_name,
    opt_obj,
    positional_constructor,
    qmap,
    qmap_rel,
    rebase,
    req_name,
    req_str,
    shown,
    smap,
    type_problem,
)
from statemodel.events.placement import (
    parse_taints, parse_tolerations, pod_set_placement, topology_assignment_nodes, workload_placement,
)
from statemodel.events.names import label_problem, qualified_name_problem, subdomain_problem, text_problem
from statemodel.limits import (
    MAX_COVERED_RESOURCES,
    MAX_FLAVOR_RESOURCE_COMBINATIONS,
    MAX_FLAVOR_RESOURCES,
    MAX_FLAVORS,
    MAX_FLAVOR_TAINTS,
    MAX_POD_SETS,
    MAX_RESOURCE_GROUPS,
    MAX_TEXT_BYTES,
    MAX_TOTAL_COVERED_RESOURCES,
    MAX_TOTAL_FLAVORS,
)
from statemodel.objects import (
    Admission,
    AdmissionFairSharingStatus,
    AdmissionMode,
    BorrowWithinCohortPolicy,
    ClusterQueue,
    Cohort,
    FlavorFungibility,
    FlavorFungibilityPolicy,
    FlavorFungibilityPreference,
    FlavorQuotas,
    KubeObject,
    LocalQueue,
    PodSet,
    PodSetAssignment,
    PodSetPlacement,
    Preemption,
    PreemptionPolicy,
    QueueingStrategy,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    StopPolicy,
    Workload,
)
from statemodel.quantity import MAX_AMOUNT, parse_quantity, parse_weight_milli
from statemodel.timefmt import parse_time

API_VERSION = "kueue.x-k8s.io/v1beta2"
"""The version these parsers read; older versions are upgraded to it first."""

_new_workload = positional_constructor(Workload)
_new_pod_set = positional_constructor(PodSet)
_ADMISSION_MODE = members(*AdmissionMode)


def _weight(spec: dict, prefix: str) -> int:
    """``spec.fairSharing.weight`` in thousandths (Kueue default 1)."""
    fs = opt_obj(spec, "fairSharing", prefix)
    if fs is None:
        return 1000
    w = fs.get("weight")
    if w is None:
        return 1000
    return parse_weight_milli(w, f"{prefix}.fairSharing.weight")


def req_namespace(meta: dict) -> str:
    """``metadata.namespace`` (required) as a DNS-1123 label, as Kubernetes validates namespaces."""
    namespace = meta.get("namespace")
    if not isinstance(namespace, str) or not namespace:
        fail("object.metadata.namespace", "must not be empty" if namespace == "" else type_problem(namespace, "a string"))
    problem = label_problem(namespace)
    if problem is not None:
        fail("object.metadata.namespace", problem)
    return namespace


# --------------------------------------------------------------------------- quota objects


def _max_items(items: list, limit: int, path: str) -> None:
    """Kueue's CRD ``MaxItems``: reject a list longer than ``limit`` before looking at its items."""
    if len(items) > limit:
        fail(path, f"must have at most {limit} items, got {len(items)}")


def _resource_groups(spec: dict, prefix: str, is_cq: bool, has_parent: bool) -> tuple[ResourceGroup, ...]:
    """``spec.resourceGroups`` validated like Kueue's ClusterQueue/Cohort CRDs and webhooks.

    CRD limits (both kinds): at most ``MAX_RESOURCE_GROUPS`` groups, ``MAX_COVERED_RESOURCES`` covered
    resources and ``MAX_FLAVORS`` flavors per group, ``MAX_FLAVOR_RESOURCES`` resources per flavor; the
    ClusterQueue webhook also caps the totals (``MAX_TOTAL_FLAVORS``, ``MAX_TOTAL_COVERED_RESOURCES``) and
    the flavor-resources of one group (``MAX_FLAVOR_RESOURCE_COMBINATIONS``).  Every list is measured
    before its items are read.
    """
    rgs = opt_list(spec, "resourceGroups", prefix)
    if not rgs:
        return ()
    _max_items(rgs, MAX_RESOURCE_GROUPS, f"{prefix}.resourceGroups")
    if is_cq:
        total_flavors = total_covered = 0
        for rg in rgs:
            if isinstance(rg, dict):
                f = rg.get("flavors")
                c = rg.get("coveredResources")
                total_flavors += len(f) if isinstance(f, list) else 0
                total_covered += len(c) if isinstance(c, list) else 0
        if total_flavors > MAX_TOTAL_FLAVORS:
            fail(f"{prefix}.resourceGroups", "total number of flavors across all resourceGroups must be "
                 f"<= {MAX_TOTAL_FLAVORS}, got {total_flavors}")
        if total_covered > MAX_TOTAL_COVERED_RESOURCES:
            fail(f"{prefix}.resourceGroups", "total number of covered resources across all resourceGroups must be "
                 f"<= {MAX_TOTAL_COVERED_RESOURCES}, got {total_covered}")
    seen_res: set[str] = set()
    seen_flavors: set[str] = set()
    groups = []
    no_parent = "must be nil when cohort is empty" if is_cq else "must be nil when parent is empty"
    for gi, rg in enumerate(rgs):
        gp = f"{prefix}.resourceGroups[{gi}]"
        rg = as_obj(rg, gp)
        covered_raw = rg.get("coveredResources")
        if not isinstance(covered_raw, list):
            fail(f"{gp}.coveredResources", type_problem(covered_raw, "a list of resource names"))
        if not covered_raw:
            fail(f"{gp}.coveredResources", "must not be empty")
        _max_items(covered_raw, MAX_COVERED_RESOURCES, f"{gp}.coveredResources")
        for ri, res in enumerate(covered_raw):
            rp = f"{gp}.coveredResources[{ri}]"
            if not isinstance(res, str):
                fail(rp, "must be a string")
            if not res:
                fail(rp, "must not be empty")
            problem = qualified_name_problem(res)
            if problem is not None:
                fail(rp, problem)
            if res in seen_res:
                fail(rp, f"duplicate resource {res!r}: a resource may be covered by only one resource group")
            seen_res.add(res)
        covered = tuple(covered_raw)
        flavors_raw = rg.get("flavors")
        if not isinstance(flavors_raw, list):
            fail(f"{gp}.flavors", type_problem(flavors_raw, "a list"))
        if not flavors_raw:
            fail(f"{gp}.flavors", "must not be empty")
        _max_items(flavors_raw, MAX_FLAVORS, f"{gp}.flavors")
        if is_cq and len(flavors_raw) * len(covered) > MAX_FLAVOR_RESOURCE_COMBINATIONS:
            fail(gp, "number of flavor-resource combinations in a resourceGroup must be "
                 f"<= {MAX_FLAVOR_RESOURCE_COMBINATIONS}, got {len(flavors_raw) * len(covered)}")
        flavors = []
        for fi, fl in enumerate(flavors_raw):
            fp = f"{gp}.flavors[{fi}]"
            fl = as_obj(fl, fp)
            fname = req_name(fl, "name", fp)
            if fname in seen_flavors:
                fail(f"{fp}.name", f"duplicate flavor {fname!r}: a flavor may appear in only one resource group")
            seen_flavors.add(fname)
            res_raw = fl.get("resources")
            if not isinstance(res_raw, list):
                fail(f"{fp}.resources", type_problem(res_raw, "a list"))
            _max_items(res_raw, MAX_FLAVOR_RESOURCES, f"{fp}.resources")
            if len(res_raw) != len(covered):
                fail(
                    f"{fp}.resources",
                    f"must list exactly the coveredResources in order ({len(covered)} resources), got {len(res_raw)}",
                )
            quotas = []
            for qi, rq in enumerate(res_raw):
                qp = f"{fp}.resources[{qi}]"
                rq = as_obj(rq, qp)
                rname = req_str(rq, "name", qp)
                if rname != covered[qi]:
                    fail(f"{qp}.name", f"must be {covered[qi]!r} (coveredResources[{qi}]), got {shown(rname)}")
                nominal_raw = rq.get("nominalQuota")
                if nominal_raw is None:
                    fail(f"{qp}.nominalQuota", "required")
                nominal = parse_quantity(rname, nominal_raw, f"{qp}.nominalQuota")
                borrowing = rq.get("borrowingLimit")
                if borrowing is not None:
                    borrowing = parse_quantity(rname, borrowing, f"{qp}.borrowingLimit")
                    if not has_parent:
                        fail(f"{qp}.borrowingLimit", no_parent)
                lending = rq.get("lendingLimit")
                if lending is not None:
                    lending = parse_quantity(rname, lending, f"{qp}.lendingLimit")
                    if not has_parent:
                        fail(f"{qp}.lendingLimit", no_parent)
                    if is_cq and lending > nominal:
                        fail(f"{qp}.lendingLimit", "must be less than or equal to nominalQuota")
                quotas.append(ResourceQuota(rname, nominal, borrowing, lending))
            flavors.append(FlavorQuotas(fname, tuple(quotas)))
        groups.append(ResourceGroup(covered, tuple(flavors)))
    return tuple(groups)


def _parse_resource_flavor(o: dict, name: str, time_ms: int) -> ResourceFlavor:
    spec = opt_obj(o, "spec", "object") or {}
    taints = parse_taints(spec, "nodeTaints", "object.spec")
    if len(taints) > MAX_FLAVOR_TAINTS:
        fail("object.spec.nodeTaints", f"must have at most {MAX_FLAVOR_TAINTS} items, got {len(taints)}")
    tolerations = parse_tolerations(spec, "object.spec")
    if len(tolerations) > MAX_FLAVOR_TAINTS:
        fail("object.spec.tolerations", f"must have at most {MAX_FLAVOR_TAINTS} items, got {len(tolerations)}")
    return ResourceFlavor(name, smap(spec.get("nodeLabels"), "object.spec.nodeLabels"),
                          opt_name(spec, "topologyName", "object.spec"), taints, tolerations)


def _admission_mode(spec: dict, p: str) -> AdmissionMode | None:
    """``spec.admissionScope.admissionMode`` of a ClusterQueue or Cohort (KEP-4136), or ``None``."""
    scope = opt_obj(spec, "admissionScope", p)
    if scope is None:
        return None
    sp = f"{p}.admissionScope"
    mode = choice(scope, "admissionMode", sp, _ADMISSION_MODE, None)
    if mode is None:
        fail(f"{sp}.admissionMode", "required")
    return mode


def _parse_cohort(o: dict, name: str, time_ms: int) -> Cohort:
    p = "object.spec"
    spec = opt_obj(o, "spec", "object") or {}
    parent = opt_name(spec, "parentName", p)
    groups = _resource_groups(spec, p, False, parent is not None)
    return Cohort(name, parent, groups, _weight(spec, p), _admission_mode(spec, p))


_NEVER = PreemptionPolicy.NEVER
_WITHIN_CQ = members(_NEVER, PreemptionPolicy.LOWER_PRIORITY, PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY)
_RECLAIM = members(_NEVER, PreemptionPolicy.LOWER_PRIORITY, PreemptionPolicy.ANY)
_BORROW_POLICY = members(*BorrowWithinCohortPolicy)
_FUNGIBILITY = members(*FlavorFungibilityPolicy)
_TRY_NEXT = FlavorFungibilityPolicy.TRY_NEXT_FLAVOR
_PREFERENCE = members(*FlavorFungibilityPreference)
_STOP_POLICY = members(*StopPolicy)
_QUEUEING = members(*QueueingStrategy)
_DEFAULT_PREEMPTION = Preemption()
_DEFAULT_FUNGIBILITY = FlavorFungibility()


def _parse_cluster_queue(o: dict, name: str, time_ms: int) -> ClusterQueue:
    p = "object.spec"
    spec = opt_obj(o, "spec", "object") or {}
    cohort = opt_name(spec, "cohortName", p)
    groups = _resource_groups(spec, p, True, cohort is not None)
    strategy = choice(spec, "queueingStrategy", p, _QUEUEING, QueueingStrategy.BEST_EFFORT_FIFO)

    preemption = _DEFAULT_PREEMPTION
    pr = opt_obj(spec, "preemption", p)
    if pr is not None:
        pp = f"{p}.preemption"
        within = choice(pr, "withinClusterQueue", pp, _WITHIN_CQ, _NEVER)
        reclaim = choice(pr, "reclaimWithinCohort", pp, _RECLAIM, _NEVER)
        policy = BorrowWithinCohortPolicy.NEVER
        threshold = None
        bwc = opt_obj(pr, "borrowWithinCohort", pp)
        if bwc is not None:
            bp = f"{pp}.borrowWithinCohort"
            policy = choice(bwc, "policy", bp, _BORROW_POLICY, BorrowWithinCohortPolicy.NEVER)
            t = bwc.get("maxPriorityThreshold")
            if t is not None:
                threshold = int_in(t, f"{bp}.maxPriorityThreshold", INT32_MIN, INT32_MAX)
        if reclaim == _NEVER and policy != BorrowWithinCohortPolicy.NEVER:
            fail(pp, "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never")
        preemption = Preemption(within, reclaim, policy, threshold)

    fungibility = _DEFAULT_FUNGIBILITY
    ff = opt_obj(spec, "flavorFungibility", p)
    if ff is not None:
        fp = f"{p}.flavorFungibility"
        borrow = choice(ff, "whenCanBorrow", fp, _FUNGIBILITY, FlavorFungibilityPolicy.MAY_STOP_SEARCH)
        preempt = choice(ff, "whenCanPreempt", fp, _FUNGIBILITY, _TRY_NEXT)
        preference = choice(ff, "preference", fp, _PREFERENCE, None)
        if preference is not None and (borrow != _TRY_NEXT or preempt != _TRY_NEXT):
            fail(f"{fp}.preference", "only allowed when whenCanBorrow and whenCanPreempt are TryNextFlavor")
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
        choice(spec, "stopPolicy", p, _STOP_POLICY, StopPolicy.NONE),
    )


def _parse_local_queue(o: dict, name: str, time_ms: int) -> LocalQueue:
    p = "object.spec"
    namespace = req_namespace(o["metadata"])
    spec = as_obj(o.get("spec"), p)
    cq = req_name(spec, "clusterQueue", p)
    weight = _weight(spec, p)
    stop = choice(spec, "stopPolicy", p, _STOP_POLICY, StopPolicy.NONE)
    afs = None
    status = opt_obj(o, "status", "object")
    if status is not None:
        fs = opt_obj(status, "fairSharing", "object.status")
        if fs is not None:
            a = opt_obj(fs, "admissionFairSharingStatus", "object.status.fairSharing")
            if a is not None:
                ap = "object.status.fairSharing.admissionFairSharingStatus"
                consumed = qmap(a.get("consumedResources"), f"{ap}.consumedResources")
                last = a.get("lastUpdate")
                if last is None:
                    fail(f"{ap}.lastUpdate", "required")
                afs = AdmissionFairSharingStatus(tuple(sorted(consumed.items())), parse_time(last, f"{ap}.lastUpdate"))
    return LocalQueue(namespace, name, cq, weight, stop, afs)


# --------------------------------------------------------------------------- workloads
#
# The hot path (one Workload per event) builds no path strings unless something fails: these helpers
# raise with relative paths and each caller rebases them (statemodel.events.fields).

def _container_requests(c: Any) -> dict[str, int]:
    """Requests of one container, limits filling missing requests (Kueue ``UseLimitsAsMissingRequestsInPod``)."""
    if not isinstance(c, dict):
        raise EventError("", type_problem(c, "an object"))
    res = c.get("resources")
    if res is None:
        return {}
    if not isinstance(res, dict):
        raise EventError(".resources", "must be an object")
    try:
        req = qmap_rel(res.get("requests"))
    except EventError as e:
        raise rebase(".resources.requests", e) from None
    limits = res.get("limits")
    if limits is not None:
        try:
            lim = qmap_rel(limits)
        except EventError as e:
            raise rebase(".resources.limits", e) from None
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
            raise rebase(f".containers[{i}]", e) from None
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
                raise rebase(f".initContainers[{i}]", e) from None
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
            oh = qmap_rel(overhead)
        except EventError as e:
            raise rebase(".overhead", e) from None
        for k, v in oh.items():
            reqs[k] = reqs.get(k, 0) + v
    for k, v in reqs.items():
        if v > MAX_AMOUNT:
            raise EventError("", f"effective request of {k!r} too large")
    return reqs


def pod_requests(tspec: dict, path: str) -> dict[str, int]:
    """Effective per-pod requests of the pod spec ``tspec`` found at ``path`` (the rules of
    ``_pod_requests``; zero amounts kept), for the parsers of other groups (the core ``v1`` Pod).

    Raises:
        EventError: a container's requests, limits or the overhead are invalid (path under ``path``).
    """
    try:
        return _pod_requests(tspec)
    except EventError as e:
        raise rebase(path, e) from None


def _pod_set(ps: Any) -> PodSet:
    """One ``spec.podSets[i]``; relative error paths."""
    if not isinstance(ps, dict):
        raise EventError("", type_problem(ps, "an object"))
    name = ps.get("name")
    if name is None:
        name = "main"  # Kueue CRD default
    elif not isinstance(name, str) or not name:
        raise EventError(".name", "must not be empty" if name == "" else "must be a string")
    else:
        problem = label_problem(name)  # Kueue PodSetReference
        if problem is not None:
            raise EventError(".name", problem)
    count = ps.get("count")
    count = 1 if count is None else int_in(count, ".count", 0, INT32_MAX)
    min_count = ps.get("minCount")
    if min_count is not None:
        min_count = int_in(min_count, ".minCount", 1, INT32_MAX)
        if min_count > count:
            raise EventError(".minCount", f"must be less than or equal to count ({count})")
    requests = ps.get("requests")
    template = ps.get("template")
    if requests is not None:
        if template is not None:
            raise EventError("", "give either requests or template, not both")
        try:
            reqs = qmap_rel(requests)
        except EventError as e:
            raise rebase(".requests", e) from None
    elif template is not None:
        if not isinstance(template, dict):
            raise EventError(".template", "must be an object")
        tspec = template.get("spec")
        if not isinstance(tspec, dict):
            raise EventError(".template.spec", type_problem(tspec, "an object"))
        try:
            reqs = _pod_requests(tspec)
        except EventError as e:
            raise rebase(".template.spec", e) from None
    else:
        raise EventError("", "one of requests or template is required")
    return _new_pod_set(name, count, tuple(sorted([kv for kv in reqs.items() if kv[1]])), min_count)


def _pod_sets(raw: Any) -> tuple[tuple[PodSet, ...], list[PodSetPlacement]]:
    """``spec.podSets``: 1 to ``MAX_POD_SETS`` (Kueue CRD), unique names, and the placement
    constraints of those that have any (``statemodel.events.placement``); relative error paths."""
    if not isinstance(raw, list):
        raise EventError("", type_problem(raw, "a list"))
    if not raw:
        raise EventError("", "must not be empty")
    if len(raw) > MAX_POD_SETS:
        raise EventError("", f"must have at most {MAX_POD_SETS} items, got {len(raw)}")
    out: list[PodSet] = []
    placements: list[PodSetPlacement] = []
    names: set[str] = set()
    for i, ps in enumerate(raw):
        try:
            pod_set = _pod_set(ps)
            placement = pod_set_placement(ps, pod_set.name)
        except EventError as e:
            raise rebase(f"[{i}]", e) from None
        if pod_set.name in names:
            raise EventError(f"[{i}].name", f"duplicate podSet name {pod_set.name!r}")
        names.add(pod_set.name)
        out.append(pod_set)
        if placement is not None:
            placements.append(placement)
    return tuple(out), placements


def _admission_rel(a: Any) -> Admission:
    """Kueue ``status.admission`` (clusterQueue, podSetAssignments; resourceUsage is the podSet total)."""
    if not isinstance(a, dict):
        raise EventError("", type_problem(a, "an object"))
    cq = req_name(a, "clusterQueue", "")
    raw = a.get("podSetAssignments")
    if not isinstance(raw, list):
        raise EventError(".podSetAssignments", type_problem(raw, "a list"))
    if not raw:
        raise EventError(".podSetAssignments", "must not be empty")
    if len(raw) > MAX_POD_SETS:
        raise EventError(".podSetAssignments", f"must have at most {MAX_POD_SETS} items, got {len(raw)}")
    out = []
    names = set()
    for i, psa in enumerate(raw):
        ip = f".podSetAssignments[{i}]"
        if not isinstance(psa, dict):
            raise EventError(ip, type_problem(psa, "an object"))
        name = req_str(psa, "name", ip)
        problem = label_problem(name)
        if problem is not None:
            raise EventError(f"{ip}.name", problem)
        if name in names:
            raise EventError(f"{ip}.name", f"duplicate podSet name {name!r}")
        names.add(name)
        flavors = flavor_map(psa.get("flavors"), f"{ip}.flavors")
        try:
            usage = qmap_rel(psa.get("resourceUsage"))
        except EventError as e:
            raise rebase(f"{ip}.resourceUsage", e) from None
        flavored = dict(flavors)
        for res, amount in usage.items():
            if amount and res not in flavored:
                raise EventError(f"{ip}.resourceUsage[{res}]", f"resource {res!r} has no flavor in flavors")
        count = int_in(psa.get("count"), f"{ip}.count", 0, INT32_MAX)
        nodes = topology_assignment_nodes(psa.get("topologyAssignment"), f"{ip}.topologyAssignment", count)
        out.append(PodSetAssignment(name, flavors, tuple(sorted(usage.items())), count, nodes))
    return Admission(cq, tuple(out))


def parse_admission(a: Any, path: str) -> Admission:
    """Kueue ``status.admission`` (also the ``admission`` of ``WorkloadAdmitted``); errors under ``path``."""
    try:
        return _admission_rel(a)
    except EventError as e:
        raise rebase(path, e) from None


def _parse_workload(o: dict, name: str, time_ms: int) -> Workload:
    meta = o["metadata"]
    namespace = req_namespace(meta)
    uid = meta.get("uid")
    if uid is None or uid == "":
        uid = f"{namespace}/{name}"
    elif not isinstance(uid, str):
        fail("object.metadata.uid", "must be a string")
    else:
        problem = text_problem(uid, MAX_TEXT_BYTES)
        if problem is not None:
            fail("object.metadata.uid", problem)
    created = meta.get("creationTimestamp")
    created = time_ms if created is None else parse_time(created, "object.metadata.creationTimestamp")
    spec = o.get("spec")
    if not isinstance(spec, dict):
        fail("object.spec", type_problem(spec, "an object"))
    queue = spec.get("queueName")
    if not isinstance(queue, str) or not queue:
        fail("object.spec.queueName", "must not be empty" if queue == "" else type_problem(queue, "a string"))
    problem = subdomain_problem(queue)  # Kueue LocalQueueName
    if problem is not None:
        fail("object.spec.queueName", problem)
    priority = spec.get("priority")
    priority = 0 if priority is None else int_in(priority, "object.spec.priority", INT32_MIN, INT32_MAX)
    try:
        pod_sets, placements = _pod_sets(spec.get("podSets"))
    except EventError as e:
        raise rebase("object.spec.podSets", e) from None
    placement = workload_placement(meta, placements, [(ps.name, ps.count) for ps in pod_sets])
    admission = None
    status = o.get("status")
    if status is not None:
        if not isinstance(status, dict):
            fail("object.status", "must be an object")
        a = status.get("admission")
        if a is not None:
            admission = parse_admission(a, "object.status.admission")
            ps_names = {ps.name for ps in pod_sets}
            for i, psa in enumerate(admission.pod_set_assignments):
                if psa.name not in ps_names:
                    fail(f"object.status.admission.podSetAssignments[{i}].name", f"no podSet named {psa.name!r}")
    return _new_workload(namespace, name, uid, created, queue, priority, pod_sets, admission, placement)


KINDS: dict[str, dict[str, tuple[Callable[[dict, str, int], KubeObject], bool]]] = {
    API_VERSION: {
        "ResourceFlavor": (_parse_resource_flavor, False),
        "Cohort": (_parse_cohort, False),
        "ClusterQueue": (_parse_cluster_queue, False),
        "LocalQueue": (_parse_local_queue, True),
        "Workload": (_parse_workload, True),
    },
}
"""apiVersion → kind → ``(parser, namespaced)``."""
