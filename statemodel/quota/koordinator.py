"""``koordinator``: Koordinator's multi-hierarchy elastic quota as a quota model (seed 002,
reference/koordinator.md §1-12, upstream ``pkg/scheduler/plugins/elasticquota/``).

The model owns its objects and units (``statemodel.quota.protocol.UnitModel``): ``ElasticQuota``
groups form a tree under ``koordinator-root-quota``; ``v1`` Pods are the admitted units.

* **Request** (§3) is aggregated bottom-up: a leaf's ``childRequest`` is the sum of its pods'
  requests (masked to its ``max`` keys), ``request = childRequest`` (a non-lending group:
  ``max(childRequest, min)``), and a parent's ``childRequest`` is the sum of its children's
  ``min(request, max)``.  Each change walks up only while the limited request changes.
* **Runtime** (§2, §4) is computed top-down, lazily: each parent keeps its children's runtimes
  until a child's limited request, min, weight or the parent's own runtime changes; then only that
  sibling set is recomputed (``koordinator_runtime.redistribute``, with min scaling when the total
  falls below the children's mins).  The root shares the cluster capacity minus what the system
  and default groups use.
* **Admission** (§7, PreFilter): ``used + request <= runtime`` of the pod's quota (``max`` without
  ``enableRuntimeQuota``), non-preemptible pods within ``min``, ancestors too with
  ``enableCheckParentQuota``; pending pods are tried by priority, creation time, key.
* **Inner-quota preemption** (§8, PostFilter): lower-priority preemptible pods of the same quota,
  the fewest needed so that ``used - preempted + request <= runtime``.
* **Recycling** (§9, ``monitorAllQuotas``): a group whose ``used`` stays above its runtime for more
  than ``delayEvictTime`` of event time loses pods, least important first, until it fits.
* **Nodes** (kube-scheduler's Filter after PreFilter): while the cluster has a Node, a pod that
  passes PreFilter is bound to one node it matches (``statemodel.placement.pods``) or stays
  ``Unschedulable`` with the placement stage's message, its quota waiting for nodes: it is tried
  again when a bound pod leaves its node or a Node / Topology changes.  A preemption is made only
  when the preemptor then fits a node with its victims' pods gone (upstream picks the victims node
  by node; here they are the quota's, and the node check comes after).  A lost node evicts its
  pods (``NodeFailures``).  Without any Node, admission is quota-only (docs/placement.md).

Decisions name the pod key as ``workload`` and the quota as ``clusterQueue``.  A cluster running this
model rejects Kueue's quota objects (``ClusterQueue``, ``Cohort``: ``ClusterState``); the Kueue side
of the seam answers as a model without ClusterQueue quota.  Pure.
"""

from __future__ import annotations

import heapq

from statemodel.errors import EventError
from statemodel.objects import GROUP_MAX_DEFAULT, ElasticQuota, ElasticQuotaArgs, EngineConfig, ObjectRef, Pod
from statemodel.quantity import add_amounts, format_quantity
from statemodel.quota.koordinator_runtime import Share, redistribute, scaled_mins
from statemodel.placement.pods import PodPlacement, decode_request, encode_request
from statemodel.quota.protocol import Shortfall, UnitDecision
from statemodel.quota.unit_seam import NoClusterQueueQuota
from statemodel.reasons import EXCEEDS_MAX_QUOTA, NODE_FAILURES, WAITING_FOR_QUOTA

NAME = "koordinator"
ROOT = "koordinator-root-quota"
SYSTEM = "koordinator-system-quota"
DEFAULT = "koordinator-default-quota"
"""The special groups (upstream ``extension.RootQuotaName`` / ``SystemQuotaName`` / ``DefaultQuotaName``)."""
LABEL_QUOTA_NAME = "quota.scheduling.koordinator.sh/name"
LABEL_PREEMPTIBLE = "quota.scheduling.koordinator.sh/preemptible"

PENDING = "Pending"
ADMITTED = "Admitted"
FINISHED = "Finished"
"""Pod statuses in the state JSON (the values of ``statemodel.workload.WorkloadStatus``)."""
UNSCHEDULABLE = "Unschedulable"
"""Pending reason of a pod that does not fit (the scheduler's ``PodScheduled=False`` reason)."""
PREEMPTION_REASON = "PreemptionByScheduler"
"""Reason of a ``Preempted`` decision (Kubernetes' ``DisruptionTarget`` reason for preemption)."""
UNSCHEDULABLE_FLUSH_MS = 300_000
"""kube-scheduler's ``podMaxInUnschedulablePodsDuration`` (5 min): unschedulable pods are tried again
that long after they failed even when no event woke them."""
REVOKE_REASON = "QuotaOverUsedRevoke"
"""Reason of an ``Evicted`` decision of the overuse revoke controller (recycling)."""

Resources = dict[str, int]


def _fmt(res: Resources) -> str:
    """A resource list as Go prints a ``ResourceList`` map, keys sorted: ``map[cpu:2 memory:1Gi]``."""
    return "map[" + " ".join(f"{r}:{format_quantity(r, res[r])}" for r in sorted(res)) + "]"


def _le(a: Resources, b: Resources) -> list[str]:
    """The dimensions where ``a <= b`` fails, checking only keys present in both (upstream
    ``quotav1.LessThanOrEqual``: it walks ``b`` and skips keys ``a`` lacks); sorted."""
    return sorted(r for r, limit in b.items() if r in a and a[r] > limit)


def _add(a: Resources, b: Resources, sign: int = 1) -> Resources:
    out = dict(a)
    for r, v in b.items():
        out[r] = out.get(r, 0) + sign * v
    return out


def _tally(a: Resources, b: Resources, sign: int = 1) -> Resources:
    """``a + sign * b`` without zero entries: a group's ``used`` is the same whether it was counted
    up and down or rebuilt from its pods (a snapshot)."""
    out = dict(a)
    add_amounts(out, b, sign)
    return out


def _mask(res: Resources, keys: Resources) -> Resources:
    return {r: v for r, v in res.items() if r in keys}


class Group:
    """One quota group with upstream ``QuotaInfo.CalculateInfo`` numbers (base units, per resource).

    ``guaranteed``: with ``ElasticQuotaGuaranteeUsage``, ``max(allocated, min)`` per resource
    (allocated: a leaf's used, a parent's children's Σ guaranteed; §6), else empty.
    ``children``: names of child groups, sorted.  ``pods``: keys of the pods associated with it
    (pending and running); ``running``: the keys of its running pods.
    ``calc_total``: the total its children's runtimes are valid for (``None`` = stale).
    ``served``: per resource where every child is given all it asks, the sum of the children's
    runtimes.  ``flexible``: the resources where, moreover, every child lends and has a positive
    weight, so the runtimes stay the requests for any total ≥ ``served`` (min scaling moves only
    ``autoScaleMin`` then).  ``overdrawn``: a served sum may exceed ``calc_total`` (a child's
    request grew before this group's own runtime did); checked at the next computation.
    ``dims``: the resources of the children's ``max``; ``min_sum``: per resource the children's
    Σ ``min`` (the base of min scaling).
    """

    __slots__ = ("name", "spec", "parent", "is_parent", "allow_lent", "min", "max", "weight",
                 "request", "child_request", "used", "np_used", "runtime", "guaranteed", "children", "pods", "running",
                 "calc_total",
                 "served", "flexible", "overdrawn", "dims", "min_sum")

    def __init__(self, name: str, parent: str | None) -> None:
        self.name = name
        self.spec: ElasticQuota | None = None
        self.parent = parent
        self.is_parent = True
        self.allow_lent = True
        self.min: Resources = {}
        self.max: Resources = {}
        self.weight: Resources = {}
        self.request: Resources = {}
        self.child_request: Resources = {}
        self.used: Resources = {}
        self.np_used: Resources = {}
        self.runtime: Resources = {}
        self.guaranteed: Resources = {}
        self.children: list[str] = []
        self.pods: dict[str, None] = {}
        self.running: dict[str, None] = {}
        self.calc_total: Resources | None = None
        self.served: dict[str, int] = {}
        self.flexible: dict[str, None] = {}
        self.overdrawn = False
        self.dims: list[str] = []
        self.min_sum: dict[str, int] = {}

    def limited(self) -> Resources:
        """``min(request, max)`` per ``max`` key (upstream ``getLimitRequestNoLock``)."""
        req = self.request
        return {r: (req.get(r, 0) if req.get(r, 0) < m else m) for r, m in self.max.items()}

    def derived_request(self) -> Resources:
        """``childRequest``, raised to ``min`` when the group does not lend (§3, §5)."""
        req = {r: v for r, v in self.child_request.items() if v}
        if not self.allow_lent:
            for r, m in self.min.items():
                if m > req.get(r, 0):
                    req[r] = m
        return req


class Failure:
    """Why PreFilter refuses a pod (§7), as numbers; the upstream message and the shortfalls are
    derived from them when read (a pod may fail many times before anyone looks).

    Attributes:
        kind: ``runtime`` (the quota's own runtime, or ``max`` without ``enableRuntimeQuota``),
            ``nonPreemptible`` (non-preemptible used against ``min``) or ``parent`` (an ancestor,
            ``enableCheckParentQuota``).
        topo: the quota names from the checked level down to the pod's quota (one name unless
            ``parent``).
        limit: the bound checked (runtime, max or min); used: what the checked level uses (its
            non-preemptible used for ``nonPreemptible``); request: the pod's masked request;
            exceed: the dimensions over the bound, sorted.  Base units; never modified.
    """

    __slots__ = ("kind", "topo", "limit", "used", "request", "exceed")

    def __init__(self, kind: str, topo: list[str], limit: Resources, used: Resources, request: Resources,
                 exceed: list[str]) -> None:
        self.kind = kind
        self.topo = topo
        self.limit = limit
        self.used = used
        self.request = request
        self.exceed = exceed

    def message(self) -> str:
        """Upstream's Unschedulable message (``plugin.go`` PreFilter, ``checkQuotaRecursive``)."""
        dims = " ".join(self.exceed)
        if self.kind == "nonPreemptible":
            return (f"Insufficient non-preemptible quotas, quotaName: {self.topo[0]}, min: {_fmt(self.limit)}, "
                    f"nonPreemptibleUsed: {_fmt(self.used)}, pod's request: {_fmt(self.request)}, "
                    f"exceedDimensions: [{dims}]")
        if self.kind == "parent":
            return (f"Insufficient quotas, quotaNameTopo: [{' '.join(self.topo)}], runtime: {_fmt(self.limit)}, "
                    f"used: {_fmt(self.used)}, pod's request: {_fmt(self.request)}, exceedDimensions: [{dims}]")
        return (f"Insufficient quotas, quotaName: {self.topo[0]}, runtime: {_fmt(self.limit)}, used: "
                f"{_fmt(self.used)}, pod's request: {_fmt(self.request)}, exceedDimensions: [{dims}]")

    def shortfalls(self) -> list[Shortfall]:
        """Per exceeded dimension: needed = used + request, available = the bound, at the checked
        level (``WaitingForQuota``)."""
        node = self.topo[0]
        return [Shortfall(WAITING_FOR_QUOTA, "", r, node, self.used.get(r, 0) + self.request.get(r, 0),
                          self.limit.get(r, 0)) for r in self.exceed]


class PodInfo:
    """A pod known to the model: its object, quota, status and pending reason.

    ``request``: the effective request masked to its quota's ``max`` keys (what quota counts).
    ``message`` / ``shortfalls``: of the last attempt, derived from ``failure`` when it failed
    PreFilter, else as noted (``note``).
    """

    __slots__ = ("key", "obj", "quota", "request", "status", "reason", "failure", "_message", "_shortfalls",
                 "admitted_ms", "observed", "non_preemptible")

    def __init__(self, obj: Pod) -> None:
        self.key = obj.key
        self.obj = obj
        self.non_preemptible = False
        self.set_object(obj)
        self.quota = DEFAULT
        self.request: Resources = {}
        self.status = PENDING
        self.reason: str | None = None
        self.failure: Failure | None = None
        self._message = ""
        self._shortfalls: list[Shortfall] = []
        self.admitted_ms: int | None = None
        self.observed: bool | None = None

    @property
    def message(self) -> str:
        """The message of the last attempt (``""`` when there is none)."""
        failure = self.failure
        return failure.message() if failure is not None else self._message

    @property
    def shortfalls(self) -> list[Shortfall]:
        """The shortfalls of the last attempt."""
        failure = self.failure
        return failure.shortfalls() if failure is not None else self._shortfalls

    def note(self, reason: str | None, message: str, shortfalls: list[Shortfall] | None = None) -> None:
        """Record the outcome of something other than a failed PreFilter."""
        self.reason, self.failure, self._message = reason, None, message
        self._shortfalls = shortfalls if shortfalls is not None else []

    def fail(self, failure: Failure) -> None:
        """Record a failed PreFilter (reason ``Unschedulable``)."""
        self.reason, self.failure, self._message, self._shortfalls = UNSCHEDULABLE, failure, "", []

    def set_object(self, obj: Pod) -> None:
        """Take ``obj`` as the pod's current object; ``non_preemptible``: label ``preemptible: "false"``
        (upstream ``IsPodNonPreemptible``)."""
        self.obj = obj
        self.non_preemptible = dict(obj.labels).get(LABEL_PREEMPTIBLE) == "false"

    def order(self) -> tuple[int, int, str]:
        """Scheduling order: priority (higher first), creation time, key."""
        return (-self.obj.priority, self.obj.creation_ms, self.key)


class KoordinatorModel(NoClusterQueueQuota):
    """The ``koordinator`` quota model (module docstring); a ``UnitModel``, and a ``QuotaModel`` through
    :class:`NoClusterQueueQuota` (its ClusterQueues hold no quota)."""

    name = NAME
    version = 1
    admits_units = True

    def __init__(self) -> None:
        self.args = ElasticQuotaArgs()
        self.capacity: Resources = {}
        self.specs: dict[str, ElasticQuota] = {}
        self.spec_children: dict[str, dict[str, None]] = {}
        self.child_min: dict[str, Resources] = {}
        self.child_min_keys: dict[str, dict[str, int]] = {}
        self.groups: dict[str, Group] = {}
        self.pods: dict[str, PodInfo] = {}
        self.over_since: dict[str, int] = {}
        self.wake_all = False
        self.active: dict[str, None] = {}
        self.fresh: dict[str, None] = {}
        self.watch: dict[str, None] = {}
        self.watch_all = False
        self.flush: list[tuple[int, str]] = []
        self.flush_due: dict[str, int] = {}
        self.placer: PodPlacement | None = None
        self.node_waiting: dict[str, None] = {}
        """Quotas with pending pods that passed PreFilter but fit no node (tried again when a bound
        pod leaves its node or the nodes change)."""
        root = self.groups[ROOT] = Group(ROOT, None)
        root.allow_lent = True
        for name in (SYSTEM, DEFAULT):
            g = self.groups[name] = Group(name, None)
            g.is_parent = False
            g.max = dict(GROUP_MAX_DEFAULT)

    # -- configuration ---------------------------------------------------------------------------

    def configure(self, config: object) -> None:
        """Adopt ``spec.koordinator`` of an ``EngineConfig`` (upstream defaults when absent)."""
        args = config.koordinator if isinstance(config, EngineConfig) and config.koordinator else ElasticQuotaArgs()
        gate_changed = args.guarantee_usage != self.args.guarantee_usage
        self.args = args
        for name, maximum in ((SYSTEM, args.system_quota_group_max), (DEFAULT, args.default_quota_group_max)):
            if name not in self.specs:
                self._respec_special(self.groups[name], dict(maximum), {})
        for group in self.groups.values():
            group.calc_total = None
            if gate_changed:
                group.guaranteed = {}
        if gate_changed:  # lending and guarantees follow the gate: every quota is derived again
            for spec in list(self.specs.values()):
                if spec.name not in (SYSTEM, DEFAULT):
                    self._apply_quota(spec)
        self._touch()

    def set_capacity(self, totals: dict[str, int]) -> None:
        """The cluster total the root shares (schedulable nodes' allocatable)."""
        if totals != self.capacity:
            self.capacity = dict(totals)
            self._touch()

    def set_placer(self, placer: PodPlacement) -> None:
        """Bind admitted pods through ``placer`` while it is active (the cluster has a Node)."""
        self.placer = placer

    def nodes_changed(self) -> None:
        """A Node or Topology changed: the quotas waiting for nodes are tried again."""
        self._nodes_freed()

    def _nodes_freed(self) -> None:
        if self.node_waiting:
            self.active.update(self.node_waiting)
            self.node_waiting = {}

    def _unbind(self, info: PodInfo) -> None:
        """Pod ``info`` left its node (if it had one): what waits for nodes is tried again."""
        placer = self.placer
        if placer is not None and placer.release(info.key):
            self._nodes_freed()

    def _bind_observed(self, info: PodInfo) -> None:
        """An observed binding (``spec.nodeName``) is charged on that node as given."""
        placer = self.placer
        node = info.obj.node_name
        if placer is not None and node is not None:
            placer.bind(info.key, info.obj.requests, node)

    def node_lost(self, pods: list[str], message: str) -> list[UnitDecision]:
        """Evict the admitted pods ``pods`` of a lost node (``NodeFailures``); they are pending again."""
        out: list[UnitDecision] = []
        for key in sorted(pods):
            info = self.pods.get(key)
            if info is None:
                continue
            if info.status == ADMITTED:
                quota = info.quota
                self._release(info)
                info.note("PendingEvaluation", f"Evicted: {message}")
                out.append(("Evicted", key, quota, {}, 0, None, NODE_FAILURES, message, None))
            self._unbind(info)
        return out

    def _place(self, info: PodInfo, victims: list[PodInfo]) -> str | None:
        """The node ``info`` is bound to (charged), with its ``victims``' pods off their nodes; ``None``
        when it fits no node: the victims keep their nodes, ``info`` is ``Unschedulable`` with the
        placement stage's message and its quota waits for nodes."""
        placer = self.placer
        assert placer is not None
        saved = [(v, placer.node_of(v.key)) for v in victims]
        for v, _ in saved:
            placer.release(v.key)
        bound, failure = placer.place(info.key, [info.obj], 1)
        if bound:
            if any(node is not None for _, node in saved):
                self._nodes_freed()
            return bound[0][1]
        for v, node in saved:
            if node is not None:
                placer.bind(v.key, v.obj.requests, node)
        info.note(UNSCHEDULABLE, str(failure))
        self.node_waiting[info.quota] = None
        return None

    def _touch(self) -> None:
        """Something that may help every pending pod changed (configuration, capacity, a quota): all
        are tried again at the next ``run`` (and the revoke monitor looks at every group)."""
        self.wake_all = True
        self.watch_all = True

    def _stale(self, parent: Group) -> None:
        """``parent``'s children's runtimes must be shared again; with the revoke monitor on, they are
        watched (a runtime that shrinks may start an overuse)."""
        parent.calc_total = None
        if self.args.monitor_all_quotas:
            for child in parent.children:
                self.watch[child] = None

    def _wake(self, quota: str) -> None:
        """Pending pods of ``quota`` are tried again at the next ``run`` (upstream's queueing hints:
        a pod of the same quota was deleted or released, or a pod arrived)."""
        self.active[quota] = None

    # -- validation (upstream webhooks, §10) -----------------------------------------------------

    def validate(self, changes: list[object]) -> None:
        """Reject a change that upstream's validating webhooks would refuse (module docstring of
        ``statemodel.events.koordinator`` for the checks done at decoding):

        * root and system quotas cannot be modified; root, system and default cannot be deleted;
        * the parent must exist (in the tree after the change) and have ``is-parent=true``, unless
          the quota is directly under root; the parent chain has no loop;
        * ``is-parent`` cannot become false while the quota has children, nor true while pods are
          bound to it; a quota with children or pods cannot be deleted;
        * unless ``allow-force-update``: below the first level, Σ siblings' min + own min <= the
          parent's min; a parent's children's mins sum to at most its own min
          (``LessThanOrEqualCompletely``: every key, a missing key counts 0);
        * a pod may not be associated with a parent quota.

        Raises:
            EventError: the field and the rule (nothing is changed).
        """
        quota_changes = any(isinstance(c, ElasticQuota) or (isinstance(c, ObjectRef) and c.kind == "ElasticQuota")
                            for c in changes)
        specs = dict(self.specs) if quota_changes else self.specs
        touched: list[str] = []
        changed: dict[str, None] = {}
        pods: list[Pod] = []
        for change in changes:
            if isinstance(change, ElasticQuota):
                if change.name in (ROOT, SYSTEM):
                    raise EventError("object.metadata.name", f"quota {change.name} cannot be modified")
                specs[change.name] = change
                touched.append(change.name)
                changed[change.name] = None
            elif isinstance(change, ObjectRef) and change.kind == "ElasticQuota":
                if change.name in (ROOT, SYSTEM, DEFAULT):
                    raise EventError("object.metadata.name", f"quota {change.name} cannot be deleted")
                if any(spec.parent == change.name for spec in specs.values()):
                    raise EventError("object.metadata.name", f"quota {change.name} has child quotas")
                group = self.groups.get(change.name)
                if group is not None and any(self.pods[k].status != FINISHED for k in group.pods):
                    raise EventError("object.metadata.name", f"quota {change.name} has pods")
                specs.pop(change.name, None)
                changed[change.name] = None
            elif isinstance(change, Pod):
                pods.append(change)
        sums: dict[str, tuple[int, Resources]] = {}
        for name in touched:
            if name in specs:
                self._validate_quota(specs[name], specs, changed, sums)
        for pod in pods:
            quota = self._associate(pod, specs)
            target = specs.get(quota)
            if target is not None and target.is_parent:
                raise EventError(f"object.metadata.labels[{LABEL_QUOTA_NAME}]",
                                 f"pod cannot be associated with parent quota {quota}")

    def _children_after(self, parent: str, specs: dict[str, ElasticQuota], changed: dict[str, None],
                        sums: dict[str, tuple[int, Resources]]) -> tuple[int, Resources]:
        """How many child quotas ``parent`` has after the change and their Σ ``min`` (every key some
        child's min names, zero or not), from the running sums adjusted for the ``changed`` names;
        memoised in ``sums``.  O(changed × resources)."""
        known = sums.get(parent)
        if known is not None:
            return known
        count = len(self.spec_children.get(parent, {}))
        total = dict(self.child_min.get(parent, {}))
        keys = dict(self.child_min_keys.get(parent, {}))
        for name in changed:
            for spec, sign in ((self.specs.get(name), -1), (specs.get(name), 1)):
                if spec is not None and spec.parent == parent:
                    count += sign
                    for r, v in spec.min:
                        total[r] = total.get(r, 0) + sign * v
                        keys[r] = keys.get(r, 0) + sign
        result = (count, {r: total[r] for r in sorted(keys) if keys[r] > 0})
        sums[parent] = result
        return result

    def _count_min(self, eq: ElasticQuota, sign: int) -> None:
        """Add (``sign`` 1) or take out (-1) ``eq``'s min in its parent's running Σ children's min."""
        total = self.child_min.setdefault(eq.parent, {})
        keys = self.child_min_keys.setdefault(eq.parent, {})
        for r, v in eq.min:
            total[r] = total.get(r, 0) + sign * v
            keys[r] = keys.get(r, 0) + sign

    def _validate_quota(self, eq: ElasticQuota, specs: dict[str, ElasticQuota], changed: dict[str, None],
                        sums: dict[str, tuple[int, Resources]]) -> None:
        labels = "object.metadata.labels"
        children, children_min = self._children_after(eq.name, specs, changed, sums)
        old = self.specs.get(eq.name)
        if not eq.is_parent and children:
            raise EventError(f"{labels}[quota.scheduling.koordinator.sh/is-parent]",
                             f"quota {eq.name} has child quotas and must stay a parent")
        if eq.is_parent and (old is None or not old.is_parent):
            group = self.groups.get(eq.name)
            if group is not None and any(self.pods[k].status == ADMITTED for k in group.pods):
                raise EventError(f"{labels}[quota.scheduling.koordinator.sh/is-parent]",
                                 f"quota {eq.name} has bound pods and cannot become a parent")
        parent_field = f"{labels}[quota.scheduling.koordinator.sh/parent]"
        if eq.parent != ROOT:
            pspec = specs.get(eq.parent)
            if pspec is None:
                raise EventError(parent_field, f"parent quota {eq.parent} does not exist")
            if not pspec.is_parent:
                raise EventError(parent_field, f"parent quota {eq.parent} is not a parent (is-parent is not true)")
            seen = {eq.name}
            parent = eq.parent
            while parent != ROOT and parent in specs:
                if parent in seen:
                    raise EventError(parent_field, f"the parent chain of quota {eq.name} loops through {parent}")
                seen.add(parent)
                parent = specs[parent].parent
        if eq.allow_force_update:
            return
        if eq.parent != ROOT:
            _, total = self._children_after(eq.parent, specs, changed, sums)
            pmin = dict(specs[eq.parent].min)
            over = sorted(r for r, v in total.items() if v > pmin.get(r, 0))
            if over:
                raise EventError("object.spec.min", f"the min of the children of {eq.parent} sums to "
                                 f"{_fmt(total)}, more than its min {_fmt(pmin)} ({', '.join(over)})")
        if children:
            own = dict(eq.min)
            over = sorted(r for r, v in children_min.items() if v > own.get(r, 0))
            if over:
                raise EventError("object.spec.min", f"the min of the children of {eq.name} sums to "
                                 f"{_fmt(children_min)}, more than its min {_fmt(own)} ({', '.join(over)})")

    # -- objects ---------------------------------------------------------------------------------

    def apply_object(self, obj: object) -> bool:
        """Apply an ``ElasticQuota`` or a ``Pod``; ``False`` for any other object."""
        if isinstance(obj, ElasticQuota):
            self._apply_quota(obj)
            return True
        if isinstance(obj, Pod):
            self._apply_pod(obj)
            return True
        return False

    def delete_object(self, kind: str, key: str) -> bool:
        """Delete an ``ElasticQuota`` (by name) or a ``Pod`` (by ``ns/name``)."""
        if kind == "ElasticQuota":
            self._delete_quota(key)
            return True
        if kind == "Pod":
            info = self.pods.pop(key, None)
            if info is not None:
                self._forget(info)
                self._unbind(info)
            return True
        return False

    def _apply_quota(self, eq: ElasticQuota) -> None:
        name = eq.name
        old_spec = self.specs.get(name)
        if old_spec is not None:
            self.spec_children.get(old_spec.parent, {}).pop(name, None)
            self._count_min(old_spec, -1)
        self.specs[name] = eq
        self.spec_children.setdefault(eq.parent, {})[name] = None
        self._count_min(eq, 1)
        group = self.groups.get(name)
        if name in (SYSTEM, DEFAULT):
            assert group is not None
            self._respec_special(group, dict(eq.max), dict(eq.min))
        else:
            if group is None:
                group = self.groups[name] = Group(name, None)
            else:
                self._detach(group)
            group.spec = eq
            group.parent = eq.parent
            group.is_parent = eq.is_parent
            group.allow_lent = eq.allow_lent_resource and not self.args.guarantee_usage
            group.min = dict(eq.min)
            group.max = dict(eq.max)
            group.weight = dict(eq.shared_weight) if eq.shared_weight is not None else dict(eq.max)
            self._recount(group)
            self._attach(group)
        self._reassociate()
        self._touch()

    def _respec_special(self, group: Group, maximum: Resources, minimum: Resources) -> None:
        group.max = maximum
        group.min = minimum
        group.weight = dict(maximum)
        self._recount(group)

    def _delete_quota(self, name: str) -> None:
        group = self.groups.get(name)
        if name in (ROOT, SYSTEM, DEFAULT) or group is None or group.spec is None:
            return
        spec = self.specs.pop(name)
        self.spec_children.get(spec.parent, {}).pop(name, None)
        self._count_min(spec, -1)
        for key in list(group.pods):
            self._move(self.pods[key], DEFAULT)
        self._detach(group)
        if group.children:  # still a parent of placeholders' children: keep it as a placeholder
            group.spec = None
            group.min, group.max, group.weight = {}, {}, {}
            group.parent = ROOT
            self._recount(group)
            self._attach(group)
        else:
            del self.groups[name]
        self.over_since.pop(name, None)
        self._reassociate()
        self._touch()

    def _parent_group(self, name: str) -> Group:
        group = self.groups.get(name)
        if group is None:  # a parent named before it exists: a placeholder under root until it comes
            group = self.groups[name] = Group(name, ROOT)
            self._insert_child(self.groups[ROOT], name)
        return group

    def _insert_child(self, parent: Group, name: str) -> None:
        children = parent.children
        if name not in children:
            children.append(name)
            children.sort()
        self._stale(parent)

    def _detach(self, group: Group) -> None:
        """Take ``group`` out of its parent: its limited request and used leave the ancestors."""
        if group.parent is None or group.parent not in self.groups:
            return
        parent = self.groups[group.parent]
        self._propagate(parent, {r: -v for r, v in group.limited().items()})
        self._add_used_from(parent, group.used, -1)
        if group.name in parent.children:
            parent.children.remove(group.name)
        self._stale(parent)
        self._guarantee(parent)

    def _attach(self, group: Group) -> None:
        assert group.parent is not None
        parent = self._parent_group(group.parent)
        self._insert_child(parent, group.name)
        self._propagate(parent, group.limited())
        self._add_used_from(parent, group.used, 1)
        self._guarantee(group)
        self._guarantee(parent)

    def _recount(self, group: Group) -> None:
        """Recompute a group's own numbers from its pods (its ``max`` keys may have changed)."""
        child: Resources = {}
        for name in group.children:
            child = _add(child, self.groups[name].limited())
        used: Resources = {}
        np_used: Resources = {}
        for key in group.pods:
            info = self.pods[key]
            info.request = _mask(dict(info.obj.requests), group.max)
            if info.status == FINISHED:
                continue
            child = _add(child, info.request)
            if info.status == ADMITTED:
                used = _tally(used, info.request)
                if info.non_preemptible:
                    np_used = _tally(np_used, info.request)
        for name in group.children:
            used = _tally(used, self.groups[name].used)
        group.child_request = {r: v for r, v in child.items() if v > 0}
        group.request = group.derived_request()
        group.used = used
        group.np_used = np_used
        self._stale(group)
        self._guarantee(group)

    def _guarantee(self, group: Group) -> None:
        """With ``ElasticQuotaGuaranteeUsage`` (§6, upstream ``recursiveUpdateGroupTreeWithDeltaAllocated``):
        recompute ``group``'s ``guaranteed = max(allocated, min)`` (allocated: its used for a leaf,
        its children's Σ guaranteed for a parent) and carry a change up; each change makes the
        sibling set it belongs to share again (the guarantee is a floor there).  Root, system and
        default groups have none."""
        if not self.args.guarantee_usage:
            return
        node: Group | None = group
        while node is not None and node.parent is not None and node.name != ROOT:
            if node.children:
                allocated: Resources = {}
                for name in node.children:
                    allocated = _add(allocated, self.groups[name].guaranteed)
            else:
                allocated = dict(node.used)
            for r, m in node.min.items():
                if m > allocated.get(r, 0) or r not in allocated:
                    allocated[r] = m
            if allocated == node.guaranteed:
                return
            node.guaranteed = allocated
            parent = self.groups.get(node.parent)
            if parent is not None:
                self._stale(parent)
            node = parent

    # -- request and used up the tree (§3) --------------------------------------------------------

    def _propagate(self, group: Group, delta: Resources) -> None:
        """Add ``delta`` to ``group.childRequest`` and carry the change of its limited request up.

        Only the resources in ``delta`` are touched at each level (O(depth × changed resources)).
        A parent's sibling set is marked for re-sharing only when the change can alter it: a child
        that stayed hungry (limited request above its runtime before and after, in every changed
        dimension) is never capped in any round of the water-filling, so its request plays no part
        in the result and the cached runtimes stay exact."""
        while delta:
            if group.name == ROOT:  # its children's sibling set was marked by the child's step
                req = group.request
                for r, d in delta.items():
                    v = req.get(r, 0) + d
                    if v:
                        req[r] = v
                    else:
                        req.pop(r, None)
                group.child_request = req
                return
            creq, req, mx = group.child_request, group.request, group.max
            lends = group.allow_lent
            up: Resources = {}
            moved: list[tuple[str, int, int]] = []
            for r, d in delta.items():
                before = req.get(r, 0)
                c = creq.get(r, 0) + d
                if c > 0:
                    creq[r] = c
                else:
                    creq.pop(r, None)
                    c = 0
                if not lends:
                    floor = group.min.get(r, 0)
                    if floor > c:
                        c = floor
                if c:
                    req[r] = c
                else:
                    req.pop(r, None)
                cap = mx.get(r)
                if cap is not None:
                    old_l = before if before < cap else cap
                    new_l = c if c < cap else cap
                    if new_l != old_l:
                        up[r] = new_l - old_l
                        moved.append((r, old_l, new_l))
            if group.parent is None:  # system / default: outside the tree
                return
            parent = self.groups[group.parent]
            if moved and parent.calc_total is not None:
                runtime = group.runtime
                for r, old_l, new_l in moved:
                    rt = runtime.get(r)
                    if rt is not None and old_l > rt and new_l > rt:
                        continue
                    if not self._still_served(parent, group, r, new_l):
                        self._stale(parent)
                        break
            delta = up
            group = parent

    def _still_served(self, parent: Group, child: Group, r: str, limited: int) -> bool:
        """When ``parent``'s children were all given what they ask in ``r`` and still are with
        ``child``'s new limited request, set ``child``'s runtime and keep the others (the
        water-filling would end the same way: the pool covers every borrower); ``False`` otherwise.

        In a flexible resource (every child lends, every weight positive) the new sum may exceed
        the total the set was computed for: the parent's own runtime follows later in the same walk
        up, and ``_calc`` checks the sum against it (``overdrawn``)."""
        served = parent.served.get(r)
        old = child.runtime.get(r)
        if served is None or old is None or parent.calc_total is None:
            return False
        if r in parent.flexible:
            take = limited
        else:
            floor = max(self._auto_min_of(child, r), child.guaranteed.get(r, 0))
            if limited > floor and child.weight.get(r, 0) <= 0:
                return False
            take = limited if limited > floor or child.allow_lent else floor
        total = served - old + take
        if total > parent.calc_total.get(r, 0):
            if r not in parent.flexible:
                return False
            parent.overdrawn = True
        parent.served[r] = total
        child.runtime[r] = take
        if self.args.monitor_all_quotas and take < old:
            self.watch[child.name] = None
            for name in child.children:
                self.watch[name] = None
        return True

    def _add_used_from(self, group: Group | None, amount: Resources, sign: int) -> None:
        watch = self.args.monitor_all_quotas and sign > 0
        while group is not None and group.name != ROOT:
            group.used = _tally(group.used, amount, sign)
            if watch:
                self.watch[group.name] = None
            group = self.groups.get(group.parent) if group.parent is not None else None

    # -- runtime (§2, §4) --------------------------------------------------------------------------

    def _root_total(self) -> Resources:
        total = dict(self.capacity)
        for name in (SYSTEM, DEFAULT):
            for r, v in self.groups[name].used.items():
                total[r] = total.get(r, 0) - v
        return total

    def _calc(self, parent: Group, total: Resources) -> None:
        """Recompute the runtimes of ``parent``'s children from ``total`` unless they still hold.

        They hold when the total is unchanged (and no served sum was overdrawn), and, in a resource
        whose total changed, when the set is flexible and served in full within the new total (every
        child keeps its request; only ``autoScaleMin`` follows the total, and it is derived on
        demand).  Otherwise every resource of the set is shared again (``redistribute``)."""
        old_total = parent.calc_total
        if old_total is not None:
            if not parent.overdrawn and old_total == total:
                return
            served, flexible = parent.served, parent.flexible
            holds = True
            for r in parent.dims:
                t = total.get(r, 0)
                s = served.get(r)
                if r in flexible and s is not None and s <= t:
                    continue
                if t != old_total.get(r, 0) or (s is not None and s > t):
                    holds = False
                    break
            if holds:
                parent.calc_total = dict(total)
                parent.overdrawn = False
                return
        self._share(parent, total)

    def _share(self, parent: Group, total: Resources) -> None:
        """Share ``total`` among ``parent``'s children in every resource of their ``max``."""
        groups = self.groups
        children = [groups[n] for n in parent.children]
        dims: dict[str, None] = {}
        for child in children:
            child.runtime = {}
            for r in child.max:
                dims[r] = None
        scale = self.args.enable_min_quota_scale
        served: dict[str, int] = {}
        flexible: dict[str, None] = {}
        min_sum: dict[str, int] = {}
        for r in sorted(dims):
            members = [c for c in children if r in c.max]
            t = total.get(r, 0)
            mins = [c.min.get(r, 0) for c in members]
            min_sum[r] = sum(mins)
            autos = scaled_mins(t, mins) if scale else mins
            shares = []
            lending = True
            for c, auto in zip(members, autos):
                req = c.request.get(r, 0)
                mx = c.max[r]
                weight = c.weight.get(r, 0)
                lending = lending and c.allow_lent and weight > 0
                shares.append(Share(c.name, req if req < mx else mx, auto, c.guaranteed.get(r, 0), weight,
                                    c.allow_lent))
            whole = 0
            full = True
            for c, share, rt in zip(members, shares, redistribute(t, shares)):
                c.runtime[r] = rt
                whole += rt
                full = full and (share.request <= max(share.min, share.guarantee) or rt == share.request)
            if full and whole <= t:
                served[r] = whole
                if lending:
                    flexible[r] = None
        parent.served = served
        parent.flexible = flexible
        parent.overdrawn = False
        parent.dims = sorted(dims)
        parent.min_sum = min_sum
        parent.calc_total = dict(total)
        if self.args.monitor_all_quotas:  # a parent whose runtime moved: its children's shares move too
            for child in children:
                if child.children:
                    for name in child.children:
                        self.watch[name] = None

    def _auto_min_of(self, group: Group, r: str) -> int:
        """``autoScaleMin`` of ``group`` in ``r`` for the total its parent last shared (§4): its
        ``min`` unless min scaling is on and that total is below the children's Σ ``min``; then
        ``floor(total · min / Σ min)``, 0 for a total ≤ 0 (``koordinator_runtime.scaled_mins``)."""
        m = group.min.get(r, 0)
        parent = self.groups.get(group.parent) if group.parent is not None else None
        if parent is None or parent.calc_total is None or not self.args.enable_min_quota_scale:
            return m
        whole = parent.min_sum.get(r, 0)
        t = parent.calc_total.get(r, 0)
        if t >= whole:
            return m
        return t * m // whole if t > 0 else 0

    def auto_scale_min(self, name: str) -> Resources:
        """``autoScaleMin`` of quota ``name`` (upstream field): per resource of its ``min`` that its
        ``max`` also has, the min after min scaling (``_auto_min_of``); empty for the special groups.
        Call ``runtime`` first for numbers as of now."""
        group = self.groups[name]
        if group.parent is None:
            return {}
        return {r: self._auto_min_of(group, r) for r in sorted(group.min) if r in group.max}

    def runtime(self, name: str) -> Resources:
        """The runtime of quota ``name`` now (its ``max`` for the system and default groups)."""
        group = self.groups[name]
        if group.parent is None:
            if name == ROOT:
                return self._root_total()
            group.runtime = dict(group.max)
            return group.runtime
        path = []
        node: Group | None = group
        while node is not None and node.name != ROOT:
            path.append(node)
            node = self.groups.get(node.parent) if node.parent is not None else None
        total = self._root_total()
        parent = self.groups[ROOT]
        for node in reversed(path):
            self._calc(parent, total)
            total = node.runtime
            parent = node
        return group.runtime

    # -- pods --------------------------------------------------------------------------------------

    def _associate(self, pod: Pod, specs: dict[str, ElasticQuota]) -> str:
        """The quota of ``pod`` (upstream ``GetQuotaName``): the quota-name label (the default group
        when it names no quota), else a quota named like the namespace, else the quota whose
        ``namespaces`` annotation lists it (first by name), else the default group."""
        label = dict(pod.labels).get(LABEL_QUOTA_NAME)
        if label:
            return label if label in specs or label in (SYSTEM, DEFAULT) else DEFAULT
        if pod.namespace in specs:
            return pod.namespace
        for name in sorted(specs):
            if pod.namespace in specs[name].namespaces:
                return name
        return DEFAULT

    def _apply_pod(self, pod: Pod) -> None:
        info = self.pods.get(pod.key)
        was_admitted = False
        admitted_ms = None
        if info is not None:
            was_admitted = info.status == ADMITTED
            admitted_ms = info.admitted_ms
            self._forget(info)
        if info is None or info.status == FINISHED:
            info = self.pods[pod.key] = PodInfo(pod)
            was_admitted = False
        info.set_object(pod)
        info.status = PENDING
        if pod.phase in ("Succeeded", "Failed"):
            info.status = FINISHED
            self._unbind(info)
            return
        self._enter(info, self._associate(pod, self.specs))
        if was_admitted:
            self._charge(info, info.observed)
            info.admitted_ms = admitted_ms
        elif pod.node_name is not None:
            self._charge(info, self._prefilter(info) is None)
            self._bind_observed(info)

    def _enter(self, info: PodInfo, quota: str) -> None:
        """Count a (not finished) pod's request in ``quota``."""
        group = self.groups[quota]
        info.quota = quota
        info.request = _mask(dict(info.obj.requests), group.max)
        group.pods[info.key] = None
        self._propagate(group, info.request)
        self.fresh[info.key] = None

    def _forget(self, info: PodInfo) -> None:
        """Take a pod's request (and used, when admitted) out of its quota."""
        group = self.groups[info.quota]
        if info.status == ADMITTED:
            self._release(info)
        if info.status != FINISHED:
            self._propagate(group, {r: -v for r, v in info.request.items()})
        group.pods.pop(info.key, None)
        self._wake(info.quota)

    def _move(self, info: PodInfo, quota: str) -> None:
        """Re-associate a pod (its quota was deleted or a better match appeared)."""
        admitted = info.status == ADMITTED
        observed, admitted_ms = info.observed, info.admitted_ms
        self._forget(info)
        if info.status == FINISHED:
            info.quota = quota
            return
        info.status = PENDING
        self._enter(info, quota)
        if admitted:
            self._charge(info, observed)
            info.admitted_ms = admitted_ms

    def _reassociate(self) -> None:
        """Pending pods follow the quotas that exist now (PreFilter asks ``GetQuotaName`` every cycle)."""
        for info in list(self.pods.values()):
            if info.status == PENDING:
                quota = self._associate(info.obj, self.specs)
                if quota != info.quota:
                    self._move(info, quota)

    def _charge(self, info: PodInfo, observed: bool | None) -> None:
        group = self.groups[info.quota]
        info.status = ADMITTED
        info.observed = observed
        info.note(None, "")
        group.running[info.key] = None
        self._add_used_from(group, info.request, 1)
        self._guarantee(group)
        if info.non_preemptible:
            group.np_used = _tally(group.np_used, info.request)
        if group.parent is None:  # system / default used shrink what the root shares
            self._stale(self.groups[ROOT])

    def _release(self, info: PodInfo) -> None:
        group = self.groups[info.quota]
        info.status = PENDING
        info.admitted_ms = None
        group.running.pop(info.key, None)
        self._add_used_from(group, info.request, -1)
        self._guarantee(group)
        if info.non_preemptible:
            group.np_used = _tally(group.np_used, info.request, -1)
        if group.parent is None:
            self._stale(self.groups[ROOT])
        self._wake(info.quota)

    def lifecycle(self, event_type: str, key: str, reason: str | None) -> bool:
        """Observed ``WorkloadAdmitted`` (charge as given), ``WorkloadEvicted`` (release, pending again),
        ``WorkloadFinished`` (release, finished) of pod ``key``."""
        info = self.pods.get(key)
        if info is None:
            return False
        if event_type == "WorkloadAdmitted" and info.status == PENDING:
            self._charge(info, self._prefilter(info) is None)
            self._bind_observed(info)
        elif event_type == "WorkloadEvicted" and info.status == ADMITTED:
            self._release(info)
            self._unbind(info)
            info.note("PendingEvaluation", f"Evicted: {reason or 'Evicted'}")
        elif event_type == "WorkloadFinished" and info.status != FINISHED:
            self._forget(info)
            self._unbind(info)
            info.status = FINISHED
            info.note(None, "")
        return True

    # -- admission (§7, §8) ------------------------------------------------------------------------

    def _prefilter(self, info: PodInfo) -> Failure | None:
        """What fails for ``info`` now (upstream ``PreFilter``): the first failed check, ``None`` when
        it fits."""
        group = self.groups[info.quota]
        req = info.request
        limit = self.runtime(group.name) if self.args.enable_runtime_quota else group.max
        exceed = _le(_add(group.used, req), limit)
        if exceed:
            return Failure("runtime", [group.name], dict(limit), group.used, req, exceed)
        if info.non_preemptible:
            exceed = _le(_add(group.np_used, req), group.min)
            if exceed:
                return Failure("nonPreemptible", [group.name], group.min, group.np_used, req, exceed)
        if self.args.enable_check_parent_quota:
            topo = [group.name]
            node = self.groups.get(group.parent) if group.parent is not None else None
            while node is not None and node.name != ROOT:
                topo.insert(0, node.name)
                limit = node.runtime if self.args.enable_runtime_quota else node.max
                exceed = _le(_add(node.used, req), limit)
                if exceed:
                    return Failure("parent", topo, dict(limit), node.used, req, exceed)
                node = self.groups.get(node.parent) if node.parent is not None else None
        return None

    def _victims(self, info: PodInfo) -> list[PodInfo] | None:
        """Inner-quota preemption (upstream ``SelectVictimsOnNode`` with ``canPreempt``): the fewest
        lower-priority preemptible pods of the same quota, reprieved most important first, such that
        ``used - victims + request <= runtime``; ``None`` when that cannot be reached."""
        if info.obj.preemption_policy == "Never":
            return None
        group = self.groups[info.quota]
        if group.name == DEFAULT and self.args.disable_default_quota_preemption:
            return None
        priority = info.obj.priority
        pods = self.pods
        candidates = [v for v in (pods[k] for k in group.running)
                      if not v.non_preemptible and v.obj.priority < priority]
        if not candidates:
            return None
        limit = self.runtime(group.name) if self.args.enable_runtime_quota else group.max
        used = group.used
        for v in candidates:
            used = _add(used, v.request, -1)
        if _le(_add(used, info.request), limit):
            return None
        candidates.sort(key=lambda v: (-v.obj.priority, v.admitted_ms or 0, v.key))
        victims = []
        for v in candidates:
            trial = _add(used, v.request)
            if _le(_add(trial, info.request), limit):
                victims.append(v)
            else:
                used = trial
        return victims

    def run(self, now_ms: int) -> list[UnitDecision]:
        """Recycle over-used groups (when monitored), then try the pending pods that may fit now
        until nothing changes; returns the decisions in order.

        Which pods are tried follows upstream's queueing hints (``isSchedulableAfterPodDeletion`` /
        ``isSchedulableAfterQuotaChanged``) and kube-scheduler's flush of unschedulable pods: a
        released or deleted pod wakes the pending pods of its own quota, a new pod is tried, a
        quota, node or configuration change wakes every pod, and a quota whose pods were left
        unschedulable is tried again ``UNSCHEDULABLE_FLUSH_MS`` later; a new pod (or one that moved
        to another quota) is tried alone.  The woken pods are tried by
        priority, creation time, key; a pod asking what an earlier pod of the same quota, priority
        and kind failed with in the same pass fails the same way without being checked again.
        """
        out: list[UnitDecision] = []
        if self.args.monitor_all_quotas and self.args.enable_runtime_quota:
            self._revoke(now_ms, out)
        flush, due = self.flush, self.flush_due
        while flush and flush[0][0] <= now_ms:
            at, name = heapq.heappop(flush)
            if due.get(name) == at:
                del due[name]
                self.active[name] = None
        while True:
            if self.wake_all:
                self.wake_all = False
                self.active, self.fresh = {}, {}
                candidates = [p for p in self.pods.values() if p.status == PENDING]
            elif self.active or self.fresh:
                names, self.active = self.active, {}
                keys, self.fresh = self.fresh, {}
                candidates = []
                for name in names:
                    group = self.groups.get(name)
                    if group is not None:
                        candidates += [p for p in (self.pods[k] for k in group.pods) if p.status == PENDING]
                candidates += [p for p in (self.pods.get(k) for k in keys)
                               if p is not None and p.status == PENDING and p.quota not in names]
            else:
                return out
            candidates.sort(key=PodInfo.order)
            failed: dict[str, dict[tuple, PodInfo]] = {}
            for info in candidates:
                if info.status != PENDING:
                    continue
                group = self.groups[info.quota]
                same = (info.obj.requests, info.obj.priority, info.non_preemptible, info.obj.preemption_policy)
                seen = failed.get(group.name)
                earlier = seen.get(same) if seen is not None else None
                if earlier is not None:
                    if earlier.failure is not None:
                        info.fail(earlier.failure)
                    continue
                failure = self._prefilter(info)
                victims: list[PodInfo] = []
                if failure is not None:
                    found = self._victims(info) if failure.kind == "runtime" else None
                    if found is None:
                        info.fail(failure)
                        if failure.kind != "parent":
                            failed.setdefault(group.name, {})[same] = info
                        if group.name not in due:
                            due[group.name] = at = now_ms + UNSCHEDULABLE_FLUSH_MS
                            heapq.heappush(flush, (at, group.name))
                        continue
                    victims = found
                nodes = None
                placer = self.placer
                if placer is not None and placer.active:
                    node = self._place(info, victims)
                    if node is None:
                        continue
                    nodes = [(node, 1)]
                for v in victims:
                    message = (f"preempted by {info.key} in quota {group.name}: runtime "
                               f"{_fmt(self.runtime(group.name))}, used {_fmt(group.used)}, "
                               f"preemptor's request {_fmt(info.request)}")
                    self._release(v)
                    self._unbind(v)
                    v.note("PendingEvaluation", f"Preempted: {message}")
                    out.append(("Preempted", v.key, group.name, {}, 0, info.key, PREEMPTION_REASON, message, None))
                self._charge(info, None)
                failed.pop(group.name, None)
                info.admitted_ms = now_ms
                over_min = bool(_le(group.used, group.min)) if group.min else bool(group.used)
                out.append(("Admitted", info.key, group.name, dict(info.obj.requests), 1 if over_min else 0,
                            None, None, None, nodes))

    def _revoke(self, now_ms: int, out: list[UnitDecision]) -> None:
        """The overuse revoke controller (§9): continuous overuse for more than ``delayEvictTime``
        evicts pods least important first until ``used <= runtime``.

        The monitor runs at the instants ``k · revokePodInterval`` of event time.  The state is
        constant between events, and a monitor instant at the time of an event sees the state before
        it: a group found over at an event at ``t`` was last under at the instant
        ``floor(t / interval) · interval``, and is recycled at the first monitor instant more than
        ``delayEvictTime`` after that, i.e. at the first event at or after it (still over then); the
        clock restarts at the last instant at or before that event.

        Only groups that may have changed are looked at (a due-time index instead of every group at
        every event): the groups already over their runtime (their clock runs), groups whose used
        grew, and children of sibling sets whose runtimes were shared again; every group after a
        configuration, capacity or quota change.  Groups are visited by name."""
        delay = self.args.delay_evict_time_ms
        period = self.args.revoke_pod_interval_ms
        tick = now_ms - now_ms % period  # the monitor's last instant at or before now
        if self.watch_all:
            names = list(self.groups)
        else:
            names = list(self.over_since) + list(self.watch)
        seen: dict[str, None] = {}
        while names:  # sharing a runtime again may watch the next level: follow it down now
            for name in names:
                if name in self.groups and name not in seen:
                    seen[name] = None
                    self.runtime(name)
            names = [n for n in self.watch if n not in seen]
        self.watch, self.watch_all = {}, False
        for name in sorted(n for n in seen if self.groups[n].used and n not in (ROOT, SYSTEM)):
            group = self.groups[name]
            runtime = self.runtime(name)
            if not _le(group.used, runtime):
                self.over_since.pop(name, None)
                continue
            since = self.over_since.setdefault(name, tick)
            if now_ms < since + (delay // period + 1) * period:
                continue
            self.over_since[name] = tick
            pods = [self.pods[k] for k in group.pods if self.pods[k].status == ADMITTED]
            pods.sort(key=lambda p: (p.obj.priority, -(p.admitted_ms or 0), p.key))
            used = dict(group.used)
            removed = []
            for p in pods:
                if not _le(used, runtime):
                    break
                if p.non_preemptible:
                    continue
                used = _mask(_add(used, p.request, -1), p.request)
                removed.append(p)
            if not _le(used, runtime):
                for p in reversed(list(removed)):
                    if not _le(_add(used, p.request), runtime):
                        used = _add(used, p.request)
                        removed.remove(p)
            for p in removed:
                message = (f"quota {name} used {_fmt(group.used)} above its runtime {_fmt(runtime)} for more than "
                           f"{delay // 1000}s")
                self._release(p)
                self._unbind(p)
                p.note("PendingEvaluation", f"Evicted: {message}")
                out.append(("Evicted", p.key, name, {}, 0, None, REVOKE_REASON, message, None))

    # -- views and snapshots -----------------------------------------------------------------------

    def explain(self, key: str) -> dict | None:
        """Why pod ``key`` is where it is: status, quota, the reason and message of its last attempt,
        PreFilter now (``preFilter``: upstream's message, ``None`` when it would pass; ``shortfalls``:
        the numbers, ``shortBy = needed - available``), request, and
        for every level from its quota up to the root the numbers its runtime comes from, per
        resource of the pod's request: what the parent shares (``parentTotal``), ``min`` /
        ``autoScaleMin`` / ``guaranteed`` (the floor is the larger of the last two), ``max``,
        ``sharedWeight``, ``request`` and ``limitedRequest``
        (``min(request, max)``), the part it plays in the water-filling (``borrower``: asks more than
        its min and shares the rest by weight; ``lender``: asks less and lends the rest; ``keepsMin``:
        does not lend), ``used`` and ``runtime``; ``None`` for an unknown pod.  Base units.  While the
        cluster has a Node, ``node``: the node the pod is bound to (``None``: none); a pod that fits
        no node says why in ``message`` (the placement stage's words, every node set tried)."""
        info = self.pods.get(key)
        if info is None:
            return None
        self.runtime(info.quota)
        resources = sorted(info.request)
        levels = []
        node: Group | None = self.groups[info.quota]
        while node is not None:
            parent = self.groups.get(node.parent) if node.parent is not None else None
            if node.parent is None:
                total = self._root_total() if node.name == ROOT else node.max
                runtime = total
            else:
                total = self._root_total() if node.parent == ROOT else self.groups[node.parent].runtime
                runtime = node.runtime
            per: dict[str, dict] = {}
            for r in resources:
                auto = self._auto_min_of(node, r) if r in node.max else node.min.get(r, 0)
                guaranteed = node.guaranteed.get(r, 0)
                floor = auto if auto > guaranteed else guaranteed
                limited = min(node.request.get(r, 0), node.max.get(r, 0)) if r in node.max else 0
                role = "borrower" if limited > floor else ("lender" if node.allow_lent else "keepsMin")
                per[r] = {"parentTotal": total.get(r, 0), "min": node.min.get(r, 0), "autoScaleMin": auto,
                          "guaranteed": guaranteed,
                          "max": node.max.get(r), "sharedWeight": node.weight.get(r, 0),
                          "request": node.request.get(r, 0), "limitedRequest": limited, "role": role,
                          "used": node.used.get(r, 0), "runtime": runtime.get(r, 0)}
            levels.append({"quota": node.name, "parent": node.parent, "allowLentResource": node.allow_lent,
                           "resources": per})
            node = parent
        failure = self._prefilter(info) if info.status == PENDING else None
        return {"pod": key, "status": info.status, "quota": info.quota, "priority": info.obj.priority,
                "preemptible": not info.non_preemptible, "nodeName": info.obj.node_name,
                **({"node": self.placer.node_of(key)} if self.placer is not None and self.placer.active else {}),
                "reason": info.reason, "message": info.message,
                "preFilter": failure.message() if failure is not None else None,
                "shortfalls": [{"reason": str(s.reason), "resource": s.resource, "quota": s.node, "needed": s.needed,
                                "available": s.available, "shortBy": s.needed - s.available}
                               for s in (failure.shortfalls() if failure is not None else [])],
                "request": dict(info.obj.requests), "levels": levels}

    def quota_groups(self) -> list[tuple[Group, Resources]]:
        """Every quota group sorted by name with its runtime now (the root: what it shares), runtimes
        brought up to date first; for views and projections (read, do not modify)."""
        for name in self.groups:
            self.runtime(name)
        return [(self.groups[name], self._root_total() if name == ROOT else self.groups[name].runtime)
                for name in sorted(self.groups)]

    def view(self) -> dict:
        """``elasticQuotas`` (by name, upstream field names, base units) and ``pods`` (by ``ns/name``;
        with ``node``, the node a pod is bound to, while the cluster has a Node)."""
        quotas = {}
        for g, runtime in self.quota_groups():
            quotas[g.name] = {
                "parent": g.parent, "isParent": g.is_parent, "min": dict(sorted(g.min.items())),
                "max": dict(sorted(g.max.items())), "autoScaleMin": self.auto_scale_min(g.name),
                "sharedWeight": dict(sorted(g.weight.items())), "request": dict(sorted(g.request.items())),
                "childRequest": dict(sorted(g.child_request.items())), "used": dict(sorted(g.used.items())),
                "nonPreemptibleUsed": dict(sorted(g.np_used.items())),
                "runtime": dict(sorted(runtime.items())),
                "guaranteed": dict(sorted(g.guaranteed.items())), "allowLentResource": g.allow_lent,
                "pods": len(g.pods)}
        pods = {}
        placer = self.placer if self.placer is not None and self.placer.active else None
        for key in sorted(self.pods):
            p = self.pods[key]
            pods[key] = {"quota": p.quota, "status": p.status, "priority": p.obj.priority,
                         **({"node": placer.node_of(key)} if placer is not None else {}),
                         "requests": dict(p.obj.requests), "nodeName": p.obj.node_name,
                         "preemptible": not p.non_preemptible, "reason": p.reason, "message": p.message,
                         "observed": p.observed,
                         "shortfalls": [{"reason": str(s.reason), "resource": s.resource, "quota": s.node,
                                         "needed": s.needed, "available": s.available} for s in p.shortfalls]}
        return {"elasticQuotas": quotas, "pods": pods}

    def dump(self) -> dict:
        """Specs in application order, pods with status, the clock of overuse, capacity and args."""
        return {"args": _enc_args(self.args), "capacity": self.capacity,
                "specs": [_enc_quota(s) for s in self.specs.values()],
                "pods": [[_enc_pod(p.obj), p.quota, p.status, p.reason, p.message,
                          [[str(s.reason), s.resource, s.node, s.needed, s.available] for s in p.shortfalls],
                          p.admitted_ms, p.observed] for p in self.pods.values()],
                "overSince": self.over_since, "flush": [list(f) for f in sorted(self.flush)],
                **({"nodeWaiting": list(self.node_waiting)} if self.node_waiting else {})}

    def load(self, doc: dict) -> None:
        """Rebuild from ``dump`` output (derived numbers recomputed)."""
        self.configure(EngineConfig(koordinator=_dec_args(doc["args"])))
        self.capacity = dict(doc["capacity"])
        for raw in doc["specs"]:
            self._apply_quota(_dec_quota(raw))
        for obj, quota, status, reason, message, shorts, admitted_ms, observed in doc["pods"]:
            pod = _dec_pod(obj)
            info = self.pods[pod.key] = PodInfo(pod)
            if status != FINISHED:
                self._enter(info, quota)
                if status == ADMITTED:
                    self._charge(info, observed)
            else:
                info.quota = quota
            info.status = status
            info.note(reason, message, [
                Shortfall(WAITING_FOR_QUOTA if r == str(WAITING_FOR_QUOTA) else EXCEEDS_MAX_QUOTA, "", res, node, needed,
                          available) for r, res, node, needed, available in shorts])
            info.admitted_ms = admitted_ms
            info.observed = observed
        self.over_since = dict(doc["overSince"])
        self.flush = [(at, name) for at, name in doc["flush"]]
        heapq.heapify(self.flush)
        self.flush_due = {}
        for at, name in self.flush:
            if self.flush_due.get(name, -1) < at:
                self.flush_due[name] = at
        self.wake_all = False
        self.active, self.fresh = {}, {}
        self.watch, self.watch_all = {}, False
        self.node_waiting = dict.fromkeys(doc.get("nodeWaiting", ()))


def _pairs(rows: list) -> tuple[tuple[str, int], ...]:
    return tuple((str(k), v) for k, v in rows)


def _enc_args(a: ElasticQuotaArgs) -> list:
    return [a.delay_evict_time_ms, a.monitor_all_quotas, a.enable_check_parent_quota, a.enable_runtime_quota,
            a.enable_min_quota_scale, a.disable_default_quota_preemption, [list(p) for p in a.default_quota_group_max],
            [list(p) for p in a.system_quota_group_max], a.guarantee_usage, a.revoke_pod_interval_ms]


def _dec_args(row: list) -> ElasticQuotaArgs:
    interval = row[9] if len(row) > 9 else 1000  # snapshots written before revokePodInterval was kept
    return ElasticQuotaArgs(row[0], row[1], row[2], row[3], row[4], row[5], _pairs(row[6]), _pairs(row[7]), row[8],
                            interval)


def _enc_quota(q: ElasticQuota) -> list:
    return [q.name, q.namespace, [list(p) for p in q.min], [list(p) for p in q.max], q.parent, q.is_parent,
            q.allow_lent_resource, None if q.shared_weight is None else [list(p) for p in q.shared_weight],
            list(q.namespaces), q.allow_force_update]


def _dec_quota(row: list) -> ElasticQuota:
    return ElasticQuota(row[0], row[1], _pairs(row[2]), _pairs(row[3]), row[4], row[5], row[6],
                        None if row[7] is None else _pairs(row[7]), tuple(row[8]), row[9])


def _enc_pod(p: Pod) -> list:
    return [p.namespace, p.name, p.uid, p.creation_ms, p.priority, [list(r) for r in p.requests],
            [list(lb) for lb in p.labels], [list(a) for a in p.annotations], p.node_name, p.phase,
            p.preemption_policy] + ([] if p.placement is None else [encode_request(p.placement)])


def _dec_pod(row: list) -> Pod:
    """A Pod of ``_enc_pod``; a row without placement constraints ends after the preemption policy."""
    return Pod(row[0], row[1], row[2], row[3], row[4], _pairs(row[5]), tuple((k, v) for k, v in row[6]),
               tuple((k, v) for k, v in row[7]), row[8], row[9], row[10],
               decode_request(row[11]) if len(row) > 11 else None)
