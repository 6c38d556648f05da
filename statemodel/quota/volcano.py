"""``volcano``: Volcano's queues as a quota model (seed 003, reference/volcano.md §0-6, upstream
``pkg/scheduler/plugins/proportion`` and ``capacity``, ``pkg/scheduler/actions``).

The model owns its objects and units (``statemodel.quota.protocol.UnitModel``): ``Queue``s form a
tree under ``root`` (``root`` and ``default`` exist from the start, as upstream creates them);
``PodGroup``s are the admitted units, gangs of the ``v1`` Pods that name them in the
``scheduling.k8s.io/group-name`` annotation.

* **Numbers per queue** (reference §1.2): ``allocated`` (running pods), ``request`` (allocated +
  pending pods), ``inqueue`` (the min resources an Inqueue group reserves; a Running group its
  min not yet allocated), ``elastic`` (allocated beyond a group's min).  Each queue keeps its own
  numbers and the sums of its subtree (what the hierarchical capacity plugin reads at ancestors);
  a change walks up the parent chain.
* **Deserved**: ``proportion`` water-fills the cluster total (schedulable nodes' allocatable) over
  the queues that hold a PodGroup by weight, capped by realCapability and request
  (``volcano_deserved.water_fill``, exact fractions); ``capacity`` takes ``spec.deserved`` (flat),
  or computes the tree top-down (``enabledHierarchy``: ``volcano_deserved.hierarchical``).
* **Actions**, after every event, to a fixpoint: *enqueue* (Pending → Inqueue when the queue is
  Open and ``minResources + allocated + inqueue - elastic <= realCapability``, at every ancestor
  with hierarchy), *allocate* (queues in the plugin's order, groups by priority then creation,
  pods bound while the plugin's allocatable check and the cluster's free capacity allow; a group
  whose bound pods do not reach ``minMember`` is rolled back: gang all-or-nothing), *reclaim* (a
  queue whose pending pod is within what it may take, ``Preemptive``, evicts running pods of other,
  reclaimable queues that the plugin's ``Reclaimable`` accepts, siblings first, the queue that would
  be scheduled last first, lowest priority first; the gang rule keeps every victim group at
  ``minMember``; committed only when the reclaiming group becomes ready).
* **Nodes** (Volcano's predicates and gang plugin): while the cluster has a Node, the pods allocate
  chose are bound one at a time, in task order, each to a node it matches
  (``statemodel.placement.pods``); a pod that fits no node stays pending, and a group that would
  not reach ``minMember`` bound pods binds none (``NotEnoughResources`` with the placement stage's
  message) and waits for capacity freed on nodes or a Node / Topology change.  Reclaim commits
  only when the reclaiming pods fit nodes with the victims' pods gone (upstream evicts node by
  node; here the victims are chosen by queue, and the node check comes after).  A lost node evicts
  its pods (``NodeFailures``).  Without any Node, the cluster's total free capacity is the only
  check (docs/placement.md).

Decisions: ``Admitted`` names the PodGroup (``ns/name``) with the usage of the pods bound in that
step (again when more pods of a running group are bound later); ``Evicted`` names the pod, reason
``reclaim`` (upstream's ``stmt.Evict(reclaimee, "reclaim")``), preemptor the reclaiming group.
Pure.
"""

from __future__ import annotations

import bisect
import functools
import heapq
from collections import ChainMap
from collections.abc import Mapping
from fractions import Fraction

from statemodel.errors import EventError
from statemodel.events.volcano import DEFAULT_QUEUE, ROOT
from statemodel.objects import EngineConfig, ObjectRef, Pod, PodGroup, Queue, VolcanoArgs
from statemodel.quantity import add_amounts, format_quantity
from statemodel.placement.pods import PodPlacement, decode_request, encode_request, per_node
from statemodel.quota.protocol import UnitDecision
from statemodel.quota.unit_seam import NoClusterQueueQuota
from statemodel.reasons import NODE_FAILURES
from statemodel.quota.volcano_deserved import (
    capacity_deserved, effective_capability, hierarchical, real_capability, water_fill, within,
)

NAME = "volcano"
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
"""The annotation naming a pod's PodGroup (upstream ``KubeGroupNameAnnotationKey``)."""
MAX_QUEUE_DEPTH = 5
"""The queue webhook's ``--max-queue-depth`` default."""

PENDING, INQUEUE, RUNNING, COMPLETED = "Pending", "Inqueue", "Running", "Completed"
"""PodGroup phases (upstream ``PodGroupPhase``)."""
POD_PENDING, POD_RUNNING, POD_FINISHED = "Pending", "Running", "Finished"
"""Pod states of the model (a bound pod is ``Running``)."""
RECLAIM_REASON = "reclaim"
"""Reason of an ``Evicted`` decision of the reclaim action (upstream's eviction reason)."""
QUOTA_INSUFFICIENT = "queue resource quota insufficient"
"""Upstream's PodGroup event when enqueueing is rejected by the queue's realCapability."""
MAX_TOURNAMENTS = 8
"""How many allocate tournaments (one per set of need classes that fit a free capacity) are kept up
to date; a dropped one is built again, O(queues), when needed."""
MAX_ROUNDS = 64
"""Upper bound of enqueue/allocate/reclaim rounds after one event (a reclaim that makes room for a
group may let another queue reclaim in turn; each round either changes nothing or moves pods)."""

Resources = dict[str, int]
_ZERO = Fraction(0)


def _delta(new: Resources, old: Resources) -> Resources:
    """``new - old`` per dimension, zeros left out."""
    if new == old:
        return {}
    out = dict(new)
    add_amounts(out, old, -1)
    return out


def _exceeded(left: Resources, right: Resources) -> Resources:
    """``ExceededPart(left, right)``: per dimension ``max(0, left - right)``, zeros left out."""
    return {r: v - right.get(r, 0) for r, v in left.items() if v > right.get(r, 0)}


def _held(alloc: Resources, inq: Resources, elastic: Resources) -> Resources:
    """What a group holds for enqueueing: ``allocated + inqueue - elastic``."""
    held = dict(alloc)
    add_amounts(held, inq)
    add_amounts(held, elastic, -1)
    return held


def _short(queue: str, resource: str, needed: int, available: int) -> dict:
    """A shortfall as state JSON (keys in sorted order, as a snapshot restores them)."""
    return {"available": available, "needed": needed, "queue": queue, "resource": resource}


class QueueInfo:
    """One queue: its spec, tree edges and numbers (own and subtree sums), and the derived
    ``capability`` (effective), ``real`` (realCapability), ``guarantee`` and ``deserved``."""

    __slots__ = ("name", "spec", "parent", "children", "groups", "allocated", "request", "inqueue", "elastic",
                 "h_allocated", "h_request", "h_inqueue", "h_elastic", "capability", "real", "guarantee",
                 "deserved", "exact", "live", "waiting", "pending", "ordered", "untried", "fits", "since", "sums")

    def __init__(self, spec: Queue) -> None:
        self.name = spec.name
        self.spec = spec
        self.parent: str | None = None if spec.name == ROOT else spec.parent
        self.children: list[str] = []
        self.sums: tuple[Resources, Resources] | None = None
        """Σ ``spec.guarantee`` and Σ ``spec.deserved`` of ``children`` (the webhook's sibling check;
        computed when first asked, kept up to date as children are added)."""
        self.groups: dict[str, None] = {}
        self.allocated: Resources = {}
        self.request: Resources = {}
        self.inqueue: Resources = {}
        self.elastic: Resources = {}
        self.h_allocated: Resources = {}
        self.h_request: Resources = {}
        self.h_inqueue: Resources = {}
        self.h_elastic: Resources = {}
        self.capability: Resources = {}
        self.real: Resources = {}
        self.guarantee: Resources = {}
        self.deserved: dict[str, Fraction] = {}
        self.exact: list[tuple[str, int, int]] = []
        """``(resource, numerator, denominator)`` of each positive ``deserved`` (what the share reads)."""
        self.live = 0
        """Number of its PodGroups that are not Completed (proportion builds a queue only then)."""
        self.waiting: dict[str, None] = {}
        """Its Inqueue / Running groups with pending pods (what allocate and reclaim look at)."""
        self.pending: dict[str, None] = {}
        """Its Pending groups (what enqueue looks at)."""
        self.since = 0
        """When it last joined ``VolcanoModel.pending_queues`` (a counter: that dict's order)."""
        self.ordered: list[GroupInfo] | None = None
        """``waiting`` in job order (``None``: to be sorted again)."""
        self.untried = 0
        """Its waiting groups not tried since they changed (``GroupInfo.blocked`` empty)."""
        self.fits: dict[int, int] = {}
        """Per need class (``VolcanoModel._class_of``), how many of its waiting groups last stopped by
        the cluster's free capacity (``blocked == "cluster"``) have a pending pod of that class: what
        a freeing event's tournament asks (``QueueTournament``)."""


class GroupInfo:
    """One PodGroup: its object (``None`` while only pods name it), phase, pods and contribution."""

    __slots__ = ("key", "pg", "phase", "pods", "alloc", "pending", "inq", "elastic", "reason", "message",
                 "shortfalls", "queue", "priority", "blocked", "indexed", "need", "classes")

    def __init__(self, key: str) -> None:
        self.key = key
        self.pg: PodGroup | None = None
        self.phase = PENDING
        self.pods: dict[str, None] = {}
        self.alloc: Resources = {}
        self.pending: Resources = {}
        self.inq: Resources = {}
        self.elastic: Resources = {}
        self.reason = ""
        self.message = ""
        self.shortfalls: list[dict] = []
        self.queue = ""
        self.priority = 0
        """The job's priority: the highest ``spec.priority`` of its pods."""
        self.blocked = ""
        """What stopped its last allocation: ``cluster`` (free capacity), ``quota`` (the queue's
        deserved / realCapability) or ``""`` (not tried since it changed)."""
        self.indexed: tuple[str, str] = ("", "")
        """``(queue, "waiting" | "pending")`` of the queue index it is in, ``("", "")`` for none."""
        self.need: list[Resources] = []
        """The requests of its pending pods (what the free-capacity filter looks at)."""
        self.classes: tuple[int, ...] = ()
        """The need classes of its pending pods, distinct and sorted."""


class PodInfo:
    """A pod of a PodGroup: its object, state and whether it was bound as observed."""

    __slots__ = ("key", "obj", "group", "state", "observed", "request", "cls")

    def __init__(self, obj: Pod, group: str) -> None:
        self.key = obj.key
        self.obj = obj
        self.group = group
        self.state = POD_PENDING
        self.observed = False
        self.request: Resources = {r: v for r, v in obj.requests if v}
        self.cls = -1
        """Its need class: the model's number for its request (``VolcanoModel._class_of``)."""

    def order(self) -> tuple[int, int, str]:
        """Task order: priority (higher first), creation, key."""
        return (-self.obj.priority, self.obj.creation_ms, self.key)


def _ancestor_limit(specs: Mapping[str, Queue], start: str, resource: str) -> tuple[str, int] | None:
    """``(queue, capability)`` of the nearest queue from ``start`` up (``root`` excluded) whose
    capability names ``resource``, or ``None`` when none does (Volcano's webhook compares a queue's
    capability with its nearest capped ancestor's)."""
    ancestor = start
    while ancestor != ROOT:
        limit = effective_capability(dict(specs[ancestor].capability)).get(resource)
        if limit is not None:
            return ancestor, limit
        ancestor = specs[ancestor].parent
    return None


def _implicit(name: str) -> Queue:
    """The ``root`` (not reclaimable) and ``default`` queues as upstream creates them (weight 1)."""
    return Queue(name, ROOT, 1, (), (), (), name != ROOT, 0, "Open", 0)


class TourEntry:
    """A queue's entry in its parent's heap of the allocate tournament (``VolcanoModel._tour_sync``):
    what ``_compare_queues`` reads when ``name`` (the first participant of ``owner``'s subtree) meets
    a participant of a sibling subtree — priority (negated: higher first), the share of ``owner``
    (hierarchy; flat: of ``name``) as an exact fraction ``num / den`` (compared by
    cross-multiplying), deserved before best-effort (``flag``, capacity), creation, name."""

    __slots__ = ("prio", "num", "den", "flag", "creation", "name", "owner")

    def __init__(self, prio: int, num: int, den: int, flag: int, creation: int, name: str, owner: str) -> None:
        self.prio = prio
        self.num = num
        self.den = den
        self.flag = flag
        self.creation = creation
        self.name = name
        self.owner = owner

    def __lt__(self, other: TourEntry) -> bool:
        if self.prio != other.prio:
            return self.prio < other.prio
        left, right = self.num * other.den, other.num * self.den
        if left != right:
            return left < right
        if self.flag != other.flag:
            return self.flag < other.flag
        if self.creation != other.creation:
            return self.creation < other.creation
        return self.name < other.name

    def same(self, other: TourEntry) -> bool:
        """Whether both entries say the same (an unchanged entry keeps its place in the heap)."""
        return (self.prio == other.prio and self.num == other.num and self.den == other.den
                and self.flag == other.flag and self.creation == other.creation and self.name == other.name
                and self.owner == other.owner)


class QueueTournament:
    """One allocate tournament over the queue tree (``VolcanoModel._tour_sync``).  A queue takes part
    while it has waiting groups, is not left out of the action under way, and either entered that
    action (``VolcanoModel._tour_in``: its candidate not tried since it changed, or any of its groups
    when it is relaxed, holds a changed group or ``retry_all``, fits the free capacity) or has a group
    last stopped by the cluster with a pending pod of one of ``classes`` (the need classes that fit
    the free capacity at the start of an action after an event that freed capacity)."""

    __slots__ = ("classes", "built", "heaps", "entry", "best", "dirty")

    def __init__(self, classes: frozenset[int]) -> None:
        self.classes = classes
        self.built = False
        """Whether it is built for the current tree and deserved."""
        self.heaps: dict[str, list[TourEntry]] = {}
        """Per queue (``""``: above the tops), a heap of its children's entries (lazily invalidated)."""
        self.entry: dict[str, TourEntry | None] = {}
        """Per queue, its current entry in its parent's heap (``None``: no participant below it)."""
        self.best: dict[str, str | None] = {}
        """Per queue, the first participant of its subtree in queue order."""
        self.dirty: dict[str, None] = {}
        """The queues whose share or participation changed since it was last brought up to date."""


class VolcanoModel(NoClusterQueueQuota):
    """The ``volcano`` quota model (module docstring); a ``QuotaModel`` and a ``UnitModel``."""

    name = NAME
    version = 1
    admits_units = True

    def __init__(self) -> None:
        self.args = VolcanoArgs()
        self.capacity: Resources = {}
        self.specs: dict[str, Queue] = {ROOT: _implicit(ROOT), DEFAULT_QUEUE: _implicit(DEFAULT_QUEUE)}
        self.queues: dict[str, QueueInfo] = {}
        self.groups: dict[str, GroupInfo] = {}
        self.pods: dict[str, PodInfo] = {}
        self.used: Resources = {}
        """Σ allocated over every queue (what the nodes hold)."""
        self.stale = True
        self.retry_all = True
        """Every waiting group is tried at the next ``run`` (queues, capacity or deserved changed)."""
        self.fresh: dict[str, None] = {}
        """Groups applied, given pods or pods back to pending since the last ``run``."""
        self.relaxed: set[str] = set()
        """Leaf queues whose held resources went down since the last ``run``."""
        self.freed = False
        """The cluster's allocated went down since the last ``run``."""
        self.reclaimable_alloc: Resources = {}
        """Σ allocated of the reclaimable queues (nothing to reclaim while it is empty)."""
        self._shares: dict[str, tuple[int, int]] = {}
        """``share_ratio`` per queue, dropped when its allocated or deserved changes."""
        self._chains: dict[str, list[QueueInfo]] = {}
        self.waiting_queues: dict[str, None] = {}
        """Queues with waiting groups (``QueueInfo.waiting`` not empty)."""
        self.pending_queues: dict[str, None] = {}
        """Queues with Pending groups (``QueueInfo.pending`` not empty)."""
        self._joined = 0
        """How many times a queue joined ``pending_queues`` (``QueueInfo.since``)."""
        self._tours: dict[tuple[int, ...], QueueTournament] = {}
        """The allocate tournaments kept up to date, by their need classes (sorted), least recently used
        first (at most ``MAX_TOURNAMENTS``; a dropped one is built again when needed)."""
        self._class_ids: dict[tuple[tuple[str, int], ...], int] = {}
        """Need classes: a number per distinct pod request (``_class_of``)."""
        self._class_reqs: list[Resources] = []
        """The request of each need class."""
        self._class_refs: list[int] = []
        """Per need class, its count over the queues' ``fits``."""
        self._present: dict[int, None] = {}
        """The need classes some cluster-stopped waiting group has (``_class_refs`` above 0)."""
        self._tour_off: dict[str, None] = {}
        """Waiting queues left out of the allocate action under way (no candidate that can bind)."""
        self._tour_in: dict[str, None] = {}
        """Queues that take part in the allocate action under way with a group not tried since it
        changed (or any group: relaxed, holding a changed group, ``retry_all``) that fits the free
        capacity at its start."""
        self._untried: dict[str, None] = {}
        """Queues with a waiting group not tried since it changed (``QueueInfo.untried`` above 0)."""
        self.placer: PodPlacement | None = None
        self._rebuild_tree()

    def _class_of(self, request: Resources) -> int:
        """The need class of a pod request: one number per distinct request (dimensions sorted), so
        a freeing event asks which classes fit its free capacity once instead of once per group."""
        key = tuple(sorted(request.items()))
        cls = self._class_ids.get(key)
        if cls is None:
            cls = self._class_ids[key] = len(self._class_reqs)
            self._class_reqs.append(dict(request))
            self._class_refs.append(0)
        return cls

    # -- configuration ---------------------------------------------------------------------------

    def configure(self, config: object) -> None:
        """Adopt ``spec.volcano`` of an ``EngineConfig`` (``proportion`` when absent)."""
        args = config.volcano if isinstance(config, EngineConfig) and config.volcano else VolcanoArgs()
        if args != self.args:
            self.args = args
            self.stale = self.retry_all = True

    def set_capacity(self, totals: dict[str, int]) -> None:
        """The cluster total (schedulable nodes' allocatable)."""
        if totals != self.capacity:
            self.capacity = dict(totals)
            self.stale = self.retry_all = True

    def set_placer(self, placer: PodPlacement) -> None:
        """Bind the pods allocate chooses through ``placer`` while it is active (the cluster has a Node)."""
        self.placer = placer

    def nodes_changed(self) -> None:
        """A Node or Topology changed: every waiting group is tried again."""
        self.retry_all = True

    def node_lost(self, pods: list[str], message: str) -> list[UnitDecision]:
        """Evict the running pods ``pods`` of a lost node (``NodeFailures``): pending again, their
        groups tried again."""
        out: list[UnitDecision] = []
        touched: dict[str, GroupInfo] = {}
        for key in sorted(pods):
            pod = self.pods.get(key)
            if pod is None:
                continue
            group = self.groups[pod.group]
            if pod.state == POD_RUNNING:
                pod.state = POD_PENDING
                group.reason, group.message = "Evicted", f"Evicted: {message}"
                self.fresh[group.key] = None
                out.append(("Evicted", key, group.queue, dict(pod.request), 0, None, NODE_FAILURES, message, None))
            touched[group.key] = group
        for group in touched.values():
            self._refresh(group)
        return out

    def _bind(self, group: GroupInfo, pods: list[PodInfo], at_least: int) -> tuple[list[PodInfo], str]:
        """Bind ``pods`` of ``group`` to nodes (``PodPlacement.place``): the pods bound, or none and
        the placement stage's message when fewer than ``at_least`` could be."""
        placer = self.placer
        assert placer is not None
        bound, failure = placer.place(group.key, [p.obj for p in pods], at_least)
        return [self.pods[p.key] for p, _ in bound], str(failure) if failure is not None else ""

    @property
    def hierarchy(self) -> bool:
        """Whether the capacity plugin runs with ``enabledHierarchy``."""
        return self.args.plugin == "capacity" and self.args.enabled_hierarchy

    def _rebuild_tree(self) -> None:
        """Queues and edges from ``specs``, numbers from the groups (after a queue change)."""
        self.queues = {name: QueueInfo(spec) for name, spec in self.specs.items()}
        self.waiting_queues, self.pending_queues = {}, {}
        self._chains = {}
        self._shares = {}
        self._tours = {}
        self._class_refs = [0] * len(self._class_reqs)
        self._present = {}
        self._untried = {}
        for name in sorted(self.queues):
            info = self.queues[name]
            if info.parent is not None and info.parent in self.queues:
                self.queues[info.parent].children.append(name)
        self.used = {}
        self.reclaimable_alloc = {}
        for group in self.groups.values():
            group.indexed = ("", "")
            if group.pg is not None:
                self.queues_for(group)
            self._index(group)
        self.stale = self.retry_all = True

    def queues_for(self, group: GroupInfo) -> None:
        """Enter ``group``'s contribution into its queue (if that queue exists)."""
        queue = self.queues.get(group.queue)
        if queue is None:
            return
        queue.groups[group.key] = None
        if group.phase != COMPLETED and group.pg is not None:
            queue.live += 1
        self._contribute(queue, group, 1)

    def _contribute(self, queue: QueueInfo, group: GroupInfo, sign: int) -> None:
        request = dict(group.alloc)
        add_amounts(request, group.pending)
        self._move(queue, group.alloc, request, group.inq, group.elastic, sign)

    def _move(self, queue: QueueInfo, alloc: Resources, request: Resources, inq: Resources, elastic: Resources,
              sign: int) -> None:
        """Add ``sign`` × these amounts to ``queue``'s numbers and its chain's subtree sums."""
        if alloc:
            self._tour_touch(queue.name)
            add_amounts(queue.allocated, alloc, sign)
            add_amounts(self.used, alloc, sign)
            if queue.spec.reclaimable:
                add_amounts(self.reclaimable_alloc, alloc, sign)
        if request:
            add_amounts(queue.request, request, sign)
        if inq:
            add_amounts(queue.inqueue, inq, sign)
        if elastic:
            add_amounts(queue.elastic, elastic, sign)
        shares = self._shares
        node: QueueInfo | None = queue
        while node is not None:
            if alloc:
                shares.pop(node.name, None)
                add_amounts(node.h_allocated, alloc, sign)
            if request:
                add_amounts(node.h_request, request, sign)
            if inq:
                add_amounts(node.h_inqueue, inq, sign)
            if elastic:
                add_amounts(node.h_elastic, elastic, sign)
            node = self.queues.get(node.parent) if node.parent is not None else None

    def _refresh(self, group: GroupInfo) -> None:
        """Recompute ``group``'s numbers and phase from its pods and move them into its queue; note
        what went down (capacity freed, a queue relaxed) for the next ``run`` and re-index it."""
        queue = self.queues.get(group.queue)
        old_alloc, old_pending, old_inq, old_elastic = group.alloc, group.pending, group.inq, group.elastic
        if queue is not None and group.phase != COMPLETED and group.pg is not None:
            queue.live -= 1
        alloc: Resources = {}
        pending: Resources = {}
        need: list[Resources] = []
        kinds: dict[int, None] = {}
        running = 0
        finished = 0
        placer = self.placer
        held = placer.held if placer is not None else None
        for key in group.pods:
            pod = self.pods[key]
            if pod.state == POD_RUNNING:
                add_amounts(alloc, pod.request)
                running += 1
                if (held is not None and pod.observed and key not in held and pod.obj.node_name is not None
                        and placer.active):  # type: ignore[union-attr]
                    placer.bind(key, pod.obj.requests, pod.obj.node_name)  # type: ignore[union-attr]
                continue
            if held and key in held:
                placer.release(key)  # type: ignore[union-attr]
            if pod.state == POD_PENDING:
                add_amounts(pending, pod.request)
                need.append(pod.request)
                kinds[pod.cls] = None
            else:
                finished += 1
        group.alloc, group.pending, group.need = alloc, pending, need
        classes = tuple(sorted(kinds))
        if classes != group.classes:
            counted = group.indexed[1] == "waiting" and group.blocked == "cluster"
            if counted:
                self._count(self.queues[group.indexed[0]], group, "cluster", -1)
            group.classes = classes
            if counted:
                self._count(self.queues[group.indexed[0]], group, "cluster", 1)
        pg = group.pg
        if pg is not None:
            if running and running >= pg.min_member:
                group.phase = RUNNING
            elif group.phase == RUNNING:
                group.phase = INQUEUE
            if finished and not running and not pending:
                group.phase = COMPLETED
            minimum = dict(pg.min_resources or ())
            if group.phase == INQUEUE:
                group.inq = {r: v for r, v in minimum.items() if v}
            elif group.phase == RUNNING and pg.min_resources is not None:
                group.inq = _exceeded(minimum, alloc)
            else:
                group.inq = {}
            group.elastic = _exceeded(alloc, minimum)
        else:
            group.inq, group.elastic = {}, {}
        group.priority = max((self.pods[k].obj.priority for k in group.pods), default=0)
        if queue is not None:
            d_alloc = _delta(alloc, old_alloc)
            d_request = dict(d_alloc)
            add_amounts(d_request, _delta(pending, old_pending))
            self._move(queue, d_alloc, d_request, _delta(group.inq, old_inq), _delta(group.elastic, old_elastic), 1)
            if group.phase != COMPLETED and group.pg is not None:
                queue.live += 1
            if any(alloc.get(r, 0) < v for r, v in old_alloc.items()):
                self.freed = True
                self._relax(queue)
            else:
                old_held = _held(old_alloc, old_inq, old_elastic)
                new_held = _held(alloc, group.inq, group.elastic)
                if any(new_held.get(r, 0) < v for r, v in old_held.items()):
                    self._relax(queue)
        if self.args.plugin == "proportion":
            self.stale = self.retry_all = True
        self._index(group)

    def _inqueue(self, group: GroupInfo, queue: QueueInfo) -> None:
        """``group`` (Pending, in ``queue``, its numbers current) enters Inqueue.  What ``_refresh``
        would do after setting the phase, without going over the pods that did not change: the phase
        stays Inqueue (a Pending group that is current has fewer running pods than ``minMember`` and
        is not finished), ``inq`` becomes its ``minResources``, ``alloc``, ``pending`` and
        ``elastic`` stay, and the queue gets the change of ``inq``."""
        group.phase = INQUEUE
        pg = group.pg
        assert pg is not None
        old_inq = group.inq
        group.inq = {r: v for r, v in (pg.min_resources or ()) if v}
        d_inq = _delta(group.inq, old_inq)
        if d_inq:
            self._move(queue, {}, {}, d_inq, {}, 1)
            old_held = _held(group.alloc, old_inq, group.elastic)
            new_held = _held(group.alloc, group.inq, group.elastic)
            if any(new_held.get(r, 0) < v for r, v in old_held.items()):
                self._relax(queue)
        if self.args.plugin == "proportion":
            self.stale = self.retry_all = True
        self._index(group)

    def _relax(self, queue: QueueInfo) -> None:
        """``queue``'s (and its ancestors') held resources went down: its waiting groups are tried
        again; an inner queue with a finite realCapability relaxes every leaf below (all are tried)."""
        self.relaxed.add(queue.name)
        if self.hierarchy:
            for node in self._chain(queue)[1:]:
                if node.real:
                    self.retry_all = True

    def _index(self, group: GroupInfo) -> None:
        """Keep ``group`` in its queue's ``waiting`` or ``pending`` index (or in none)."""
        where = ("", "")
        queue = self.queues.get(group.queue)
        if group.pg is not None and queue is not None:
            if group.phase == PENDING:
                where = (queue.name, "pending")
            elif group.phase in (INQUEUE, RUNNING) and group.pending:
                where = (queue.name, "waiting")
        if where == group.indexed:
            if where[1] == "waiting" and queue is not None:
                queue.ordered = None  # its priority may have changed
            return
        old_q, old_kind = group.indexed
        old = self.queues.get(old_q)
        if old is not None:
            if old_kind == "waiting":
                old.ordered = None
                self._count(old, group, group.blocked, -1)
                old.waiting.pop(group.key, None)
                if not old.waiting:
                    self.waiting_queues.pop(old_q, None)
                    self._tour_touch(old_q)
            else:
                old.pending.pop(group.key, None)
                if not old.pending:
                    self.pending_queues.pop(old_q, None)
        if queue is not None and where[0]:
            if where[1] == "waiting":
                queue.ordered = None
                queue.waiting[group.key] = None
                self._count(queue, group, group.blocked, 1)
                if queue.name not in self.waiting_queues:
                    self.waiting_queues[queue.name] = None
                    self._tour_touch(queue.name)
            else:
                queue.pending[group.key] = None
                if queue.name not in self.pending_queues:
                    self._joined += 1
                    queue.since = self._joined
                    self.pending_queues[queue.name] = None
        group.indexed = where

    def _block(self, group: GroupInfo, why: str) -> None:
        """Set what stopped ``group``'s last allocation (``GroupInfo.blocked``), keeping its queue's
        counts of candidates (``QueueInfo.untried`` / ``fits``) when it is waiting."""
        if why == group.blocked:
            return
        queue_name, kind = group.indexed
        if kind == "waiting":
            queue = self.queues[queue_name]
            self._count(queue, group, group.blocked, -1)
            self._count(queue, group, why, 1)
        group.blocked = why

    def _count(self, queue: QueueInfo, group: GroupInfo, why: str, sign: int) -> None:
        """Count a waiting group of ``queue`` blocked by ``why`` in or out (a cluster-stopped one with
        its need classes); a queue that gains its first or loses its last need class is re-evaluated
        in the tournaments."""
        if why == "":
            queue.untried += sign
            if sign > 0:
                self._untried[queue.name] = None
            elif not queue.untried:
                del self._untried[queue.name]
        elif why == "cluster":
            fits, refs = queue.fits, self._class_refs
            for cls in group.classes:
                n = fits.get(cls, 0) + sign
                if n:
                    fits[cls] = n
                else:
                    del fits[cls]
                if n == (1 if sign > 0 else 0):
                    self._tour_touch(queue.name)
                refs[cls] += sign
                if refs[cls] == (1 if sign > 0 else 0):
                    if sign > 0:
                        self._present[cls] = None
                    else:
                        del self._present[cls]

    def _derive(self) -> None:
        """Recompute capability, realCapability, guarantee and deserved of every queue (whoever made
        them stale also set ``retry_all``)."""
        self.stale = False
        self._shares.clear()
        self._tours = {}
        queues = self.queues
        total_g: Resources = {}
        for q in queues.values():
            add_amounts(total_g, dict(q.spec.guarantee))
        if self.hierarchy:
            children = {name: q.children for name, q in queues.items()}
            caps, reals, gs, ds = hierarchical(
                children, {n: effective_capability(dict(q.spec.capability)) for n, q in queues.items()},
                {n: dict(q.spec.guarantee) for n, q in queues.items()},
                {n: dict(q.spec.deserved) for n, q in queues.items()}, ROOT)
            for name, q in queues.items():
                q.capability, q.real = caps.get(name, {}), reals.get(name, {})
                q.guarantee = gs.get(name, {})
                q.deserved = {r: Fraction(v) for r, v in ds.get(name, {}).items()}
                q.exact = [(r, v, 1) for r, v in ds.get(name, {}).items() if v > 0]
            return
        for q in queues.values():
            q.capability = effective_capability(dict(q.spec.capability))
            q.guarantee = dict(q.spec.guarantee)
            q.real = real_capability(q.capability, self.capacity, total_g, q.guarantee)
            if self.args.plugin == "capacity":
                q.deserved = {r: Fraction(v) for r, v in
                              capacity_deserved(dict(q.spec.deserved), q.real, q.guarantee).items()}
            else:
                q.deserved = {}
        if self.args.plugin == "proportion":
            session = [(n, q.spec.weight, q.real, q.request, q.guarantee) for n, q in sorted(queues.items())
                       if q.live]
            for name, deserved in water_fill(self.capacity, session).items():
                queues[name].deserved = {r: v for r, v in deserved.items() if v}
        for q in queues.values():
            q.exact = [(r, d.numerator, d.denominator) for r, d in q.deserved.items() if d > 0]

    # -- validation (upstream webhooks, reference §6) ----------------------------------------------

    def validate(self, changes: list[object]) -> None:
        """Reject a change upstream's queue and PodGroup webhooks would refuse, checked against the
        tree after the whole change (a Batch as one):

        * deleting ``root`` or ``default``, or a queue that has children;
        * a parent that does not exist, a parent chain loop, a depth above 5;
        * a queue becoming a parent while it holds PodGroups;
        * a child's capability above the nearest ancestor's (below root) that names the resource;
        * Σ children's guarantee / deserved above the parent's (parents other than root);
        * a new PodGroup in a missing queue, in ``root`` or a queue with children, or in a queue
          that is not Open.

        Raises:
            EventError: naming the field and the rule broken; nothing was changed.
        """
        touched: list[str] = []
        new_groups: list[PodGroup] = []
        applied: dict[str, Queue] = {}
        deletes = False
        for obj in changes:
            if isinstance(obj, Queue):
                applied[obj.name] = obj
                touched.append(obj.name)
            elif isinstance(obj, PodGroup):
                if obj.key not in self.groups or self.groups[obj.key].pg is None:
                    new_groups.append(obj)
            elif isinstance(obj, ObjectRef) and obj.kind == "Queue":
                if obj.name in (ROOT, DEFAULT_QUEUE):
                    raise EventError("object.metadata.name", f"the {obj.name} queue can not be deleted")
                deletes = True
                touched.append(obj.name)
        if not touched and not new_groups:
            return
        # the specs after the change: the applied Queues over the current specs (not a copy of all
        # of them per Queue event), or, when the change deletes a queue, a copy changed in order
        specs: Mapping[str, Queue] = ChainMap(applied, self.specs)
        if deletes:
            after = dict(self.specs)
            for obj in changes:
                if isinstance(obj, Queue):
                    after[obj.name] = obj
                elif isinstance(obj, ObjectRef) and obj.kind == "Queue":
                    after.pop(obj.name, None)
            specs = after
        additive = all(name in specs and name not in self.specs for name in touched)
        kids = self._kids(specs, touched, [pg.queue for pg in new_groups], additive)
        for name in touched:
            if name not in specs:
                if kids.get(name):
                    raise EventError("object.metadata.name", f"queue {name} has child queues "
                                                             f"{', '.join(kids[name])}: delete them first")
                continue
            if name == ROOT:
                continue
            self._check_queue(name, specs, kids, additive)
        for pg in new_groups:
            q = specs.get(pg.queue)
            if q is None:
                raise EventError("object.spec.queue", f"unable to find job queue {pg.queue!r}")
            if pg.queue == ROOT or kids.get(pg.queue):
                raise EventError("object.spec.queue", f"can only submit PodGroup to a leaf queue; queue "
                                                      f"{pg.queue!r} has child queues")
            if q.state != "Open":
                raise EventError("object.spec.queue", f"can only submit PodGroup to queue with state `Open`, "
                                                      f"queue `{pg.queue}` status is `{q.state}`")

    def _kids(self, specs: Mapping[str, Queue], touched: list[str], looked_at: list[str],
              additive: bool) -> dict[str, list[str]]:
        """Children (sorted names) per queue of ``specs``, the tree after the change.  When the change
        only adds queues or PodGroups (``additive``, the usual case) the lists come from the current
        tree plus the new queues, for the queues the checks look at (the touched queues, their
        parents and ``looked_at``); otherwise from every spec."""
        if additive:
            kids: dict[str, list[str]] = {}
            new = {name: specs[name].parent for name in touched}
            for key in [k for name in touched for k in (name, specs[name].parent)] + looked_at:
                if key not in kids:
                    queue = self.queues.get(key)
                    kids[key] = sorted((queue.children if queue is not None else [])
                                       + [n for n, parent in new.items() if parent == key])
            return {k: v for k, v in kids.items() if v}
        kids = {}
        for name in sorted(specs):
            if name != ROOT:
                kids.setdefault(specs[name].parent, []).append(name)
        return kids

    def _check_queue(self, name: str, specs: Mapping[str, Queue], kids: dict[str, list[str]],
                     additive: bool) -> None:
        q = specs[name]
        seen = {name}
        depth = 1
        parent = q.parent
        while parent != ROOT:
            if parent not in specs:
                raise EventError("object.spec.parent", f"parent queue {parent!r} of queue {name!r} does not exist")
            if parent in seen:
                raise EventError("object.spec.parent", f"queue {name!r} is in a parent cycle")
            seen.add(parent)
            depth += 1
            parent = specs[parent].parent
        if depth > MAX_QUEUE_DEPTH:
            raise EventError("object.spec.parent", f"queue depth {depth} exceeds the maximum {MAX_QUEUE_DEPTH}")
        if q.parent != ROOT and not any(c != name for c in kids.get(q.parent, [])) and \
                self._holds_groups(q.parent):
            raise EventError("object.spec.parent", f"queue {q.parent!r} holds PodGroups and cannot become a parent")
        own_cap = effective_capability(dict(q.capability))
        for r, v in sorted(own_cap.items()):
            bound = _ancestor_limit(specs, q.parent, r)
            if bound is not None and v > bound[1]:
                raise EventError(f"object.spec.capability[{r}]",
                                 f"capability {v} is greater than {bound[1]} of ancestor queue {bound[0]!r}")
        for child in kids.get(name, []):
            self._check_child_capability(child, specs, kids)
        for parent in (q.parent, name):
            if parent == ROOT or not kids.get(parent):
                continue
            p = specs[parent]
            guarantees, deserveds = self._kid_sums(parent, specs, kids[parent], additive)
            for field, own, total in (("guarantee", dict(p.guarantee), guarantees),
                                      ("deserved", dict(p.deserved), deserveds)):
                for r, v in sorted(total.items()):
                    if v > own.get(r, 0):
                        raise EventError(f"object.spec.{field}", f"the children of queue {parent!r} ask {field} "
                                                                  f"{r} {v}, above its {own.get(r, 0)}")

    def _kid_sums(self, parent: str, specs: Mapping[str, Queue], kids: list[str],
                  additive: bool) -> tuple[Resources, Resources]:
        """Σ ``spec.guarantee`` and Σ ``spec.deserved`` over ``kids`` (``parent``'s children after the
        change, as ``specs`` has them).  When the change only adds queues the current children's sums
        are the ones ``QueueInfo.sums`` keeps and only the new children are added to them, so adding
        the n-th child of a queue does not sum the n - 1 before it again."""
        queue = self.queues.get(parent)
        guarantees: Resources = {}
        deserveds: Resources = {}
        if additive and queue is not None:
            if queue.sums is None:
                kept: tuple[Resources, Resources] = ({}, {})
                for child in queue.children:
                    add_amounts(kept[0], dict(self.specs[child].guarantee))
                    add_amounts(kept[1], dict(self.specs[child].deserved))
                queue.sums = kept
            add_amounts(guarantees, queue.sums[0])
            add_amounts(deserveds, queue.sums[1])
            kids = [child for child in kids if child not in self.specs]
        for child in kids:
            add_amounts(guarantees, dict(specs[child].guarantee))
            add_amounts(deserveds, dict(specs[child].deserved))
        return guarantees, deserveds

    def _check_child_capability(self, child: str, specs: Mapping[str, Queue], kids: dict[str, list[str]]) -> None:
        """A descendant of a changed queue still within its nearest capped ancestor's capability (depth
        ≤ ``MAX_QUEUE_DEPTH``, so the recursion is bounded)."""
        cap = effective_capability(dict(specs[child].capability))
        for r, v in sorted(cap.items()):
            bound = _ancestor_limit(specs, specs[child].parent, r)
            if bound is not None and v > bound[1]:
                raise EventError(f"object.spec.capability[{r}]",
                                 f"child queue {child!r} has capability {v}, above {bound[1]} of {bound[0]!r}")
        for grandchild in kids.get(child, []):
            self._check_child_capability(grandchild, specs, kids)

    def _holds_groups(self, name: str) -> bool:
        queue = self.queues.get(name)
        return queue is not None and any(self.groups[k].phase != COMPLETED for k in queue.groups)

    # -- objects ------------------------------------------------------------------------------------

    def apply_object(self, obj: object) -> bool:
        """Apply a Queue, PodGroup or Pod naming a PodGroup; ``False`` for any other object."""
        if isinstance(obj, Queue):
            if obj.name in self.specs or obj.parent not in self.queues or any(
                    g.queue == obj.name for g in self.groups.values()):
                self.specs[obj.name] = obj
                self._rebuild_tree()
                return True
            self._add_queue(obj)
            return True
        if isinstance(obj, PodGroup):
            self._apply_group(obj)
            return True
        if isinstance(obj, Pod):
            group = dict(obj.annotations).get(GROUP_ANNOTATION)
            if group is None:
                return False
            self._apply_pod(obj, f"{obj.namespace}/{group}")
            return True
        return False

    def _add_queue(self, spec: Queue) -> None:
        """A new queue under an existing parent that no PodGroup names yet: what ``_rebuild_tree``
        would build, without rebuilding the other queues (validation keeps a new name from being
        anyone's parent)."""
        self.specs[spec.name] = spec
        info = self.queues[spec.name] = QueueInfo(spec)
        assert info.parent is not None
        parent = self.queues[info.parent]
        bisect.insort(parent.children, spec.name)
        if parent.sums is not None:
            add_amounts(parent.sums[0], dict(spec.guarantee))
            add_amounts(parent.sums[1], dict(spec.deserved))
        self._shares.pop(info.parent, None)
        self._tours = {}
        self.stale = self.retry_all = True

    def delete_object(self, kind: str, key: str) -> bool:
        """Delete a Queue, PodGroup or Pod of a PodGroup by kind and key; ``False`` otherwise."""
        if kind == "Queue":
            if self.specs.pop(key, None) is not None:
                self._rebuild_tree()
            return True
        if kind == "PodGroup":
            group = self.groups.get(key)
            if group is not None and group.pg is not None:
                self._set_queue(group, None)
                group.pg, group.phase = None, PENDING
                if not group.pods:
                    del self.groups[key]
            return True
        if kind == "Pod":
            pod = self.pods.get(key)
            if pod is None:
                return False
            group = self.groups[pod.group]
            pod.state = POD_FINISHED
            self._refresh(group)
            del group.pods[key]
            del self.pods[key]
            self._refresh(group)
            if group.pg is None and not group.pods:
                del self.groups[group.key]
            return True
        return False

    def _group(self, key: str) -> GroupInfo:
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = GroupInfo(key)
        return group

    def _set_queue(self, group: GroupInfo, pg: PodGroup | None) -> None:
        queue = self.queues.get(group.queue)
        if queue is not None:
            self._contribute(queue, group, -1)
            queue.groups.pop(group.key, None)
            if group.phase != COMPLETED and group.pg is not None:
                queue.live -= 1
            if group.alloc:
                self.freed = True
            self._relax(queue)
        group.pg = pg
        group.queue = pg.queue if pg is not None else ""
        if pg is not None:
            self.queues_for(group)
        self.fresh[group.key] = None
        self._index(group)
        if self.args.plugin == "proportion":  # the queues in the session changed
            self.stale = self.retry_all = True

    def _apply_group(self, pg: PodGroup) -> None:
        group = self._group(pg.key)
        self._set_queue(group, pg)
        if group.pods or group.phase != PENDING or group.alloc or group.pending or group.inq or group.elastic:
            self._refresh(group)
        # else: a PodGroup without pods yet (it comes before them in its Batch) whose numbers are the
        # empty ones; a refresh would compute the same empty numbers and Pending phase, and
        # ``_set_queue`` already indexed it and marked what it changed.

    def _apply_pod(self, obj: Pod, group_key: str) -> None:
        pod = self.pods.get(obj.key)
        if pod is not None and pod.group != group_key:
            self.delete_object("Pod", obj.key)
            pod = None
        group = self._group(group_key)
        if pod is None:
            pod = self.pods[obj.key] = PodInfo(obj, group_key)
            group.pods[obj.key] = None
        else:
            pod.obj = obj
            pod.request = {r: v for r, v in obj.requests if v}
        pod.cls = self._class_of(pod.request)
        if obj.phase in ("Succeeded", "Failed"):
            pod.state = POD_FINISHED
        elif obj.node_name is not None and pod.state == POD_PENDING:
            pod.state, pod.observed = POD_RUNNING, True
        self.fresh[group_key] = None
        self._refresh(group)

    def lifecycle(self, event_type: str, key: str, reason: str | None) -> bool:
        """Observed ``WorkloadAdmitted`` / ``WorkloadEvicted`` / ``WorkloadFinished`` of a pod or a
        PodGroup (all its pods): bound as given, back to pending, finished."""
        pod = self.pods.get(key)
        if pod is not None:
            pods = [pod]
            group = self.groups[pod.group]
        elif key in self.groups:
            group = self.groups[key]
            pods = [self.pods[k] for k in group.pods]
        else:
            return False
        for p in pods:
            if event_type == "WorkloadAdmitted" and p.state == POD_PENDING:
                p.state, p.observed = POD_RUNNING, True
            elif event_type == "WorkloadEvicted" and p.state == POD_RUNNING:
                p.state = POD_PENDING
                self.fresh[group.key] = None
                group.reason, group.message = "Evicted", f"Evicted: {reason or 'Evicted'}"
            elif event_type == "WorkloadFinished" and p.state != POD_FINISHED:
                p.state = POD_FINISHED
        if event_type == "WorkloadFinished" and pod is None and group.pg is not None:
            self._refresh(group)
            if group.phase != COMPLETED:
                queue = self.queues.get(group.queue)
                if queue is not None:
                    self._contribute(queue, group, -1)
                    queue.live -= 1
                group.phase = COMPLETED
                group.inq, group.elastic = {}, {}
                if queue is not None:
                    self._contribute(queue, group, 1)
                    self._relax(queue)
                self._index(group)
                if self.args.plugin == "proportion":
                    self.stale = self.retry_all = True
            return True
        self._refresh(group)
        return True

    # -- plugin functions --------------------------------------------------------------------------

    def _chain(self, queue: QueueInfo) -> list[QueueInfo]:
        """``queue`` and its ancestors up to the root (leaf first; cached until the tree changes)."""
        out = self._chains.get(queue.name)
        if out is None:
            out = [queue]
            while out[-1].parent is not None and out[-1].parent in self.queues:
                out.append(self.queues[out[-1].parent])
            self._chains[queue.name] = out
        return out

    def queue_share(self, queue: QueueInfo) -> Fraction:
        """``max`` over deserved's dimensions of ``allocated / deserved`` (upstream ``updateShare``); the
        capacity plugin's best-effort queue (no deserved) has share 1."""
        num, den = self.share_ratio(queue)
        return Fraction(num, den)

    def share_ratio(self, queue: QueueInfo) -> tuple[int, int]:
        """``queue_share`` as integers ``(numerator, denominator)``, denominator > 0, not reduced
        (compared by cross-multiplying; cached until the queue's allocated or deserved changes)."""
        cached = self._shares.get(queue.name)
        if cached is not None:
            return cached
        allocated = queue.h_allocated if self.hierarchy else queue.allocated
        if not queue.deserved:
            share = (1, 1) if self.args.plugin == "capacity" else (0, 1)
        else:
            num, den = 0, 1
            for r, d_num, d_den in queue.exact:  # allocated / (d_num / d_den)
                a = allocated.get(r, 0) * d_den
                if a * den > num * d_num:
                    num, den = a, d_num
            share = (num, den)
        self._shares[queue.name] = share
        return share

    def _compare_queues(self, a: QueueInfo, b: QueueInfo) -> int:
        """``QueueOrderFn`` then the session's fallback (creation, name): negative when ``a`` goes first."""
        if a.spec.priority != b.spec.priority:
            return -1 if a.spec.priority > b.spec.priority else 1
        if self.hierarchy:
            la, lb = self._chain(a), self._chain(b)
            i, j = len(la) - 1, len(lb) - 1  # both end at the root
            while i > 0 and j > 0 and la[i - 1] is lb[j - 1]:
                i -= 1
                j -= 1
            c = self._compare_share(la[i - 1] if i > 0 else a, lb[j - 1] if j > 0 else b)
        else:
            c = self._compare_share(a, b)
        if c:
            return c
        if a.spec.creation_ms != b.spec.creation_ms:
            return -1 if a.spec.creation_ms < b.spec.creation_ms else 1
        return -1 if a.name < b.name else (1 if a.name > b.name else 0)

    def _compare_share(self, a: QueueInfo, b: QueueInfo) -> int:
        na, da = self.share_ratio(a)
        nb, db = self.share_ratio(b)
        left, right = na * db, nb * da
        if left != right:
            return -1 if left < right else 1
        if self.args.plugin == "capacity" and bool(a.deserved) != bool(b.deserved):
            return -1 if a.deserved else 1
        return 0

    def _allocatable(self, queue: QueueInfo, extra: Resources, request: Resources) -> list[tuple[str, str, int, int]]:
        """What blocks binding ``request`` to ``queue`` now (``extra``: tentatively bound in this step):
        ``(queue, resource, needed, available)`` per failing dimension; empty when allocatable."""
        out: list[tuple[str, str, int, int]] = []
        if self.args.plugin == "proportion":
            used = dict(queue.allocated)
            add_amounts(used, extra)
            for r in sorted(request):
                v = request[r]
                if v > 0 and used.get(r, 0) + v > queue.deserved.get(r, _ZERO):
                    out.append((queue.name, r, v, max(0, int(queue.deserved.get(r, _ZERO)) - used.get(r, 0))))
            return out
        levels = self._chain(queue) if self.hierarchy else [queue]
        for level in levels:
            used = dict(level.h_allocated if self.hierarchy else level.allocated)
            add_amounts(used, extra)
            for r in within(used, request, level.real):
                out.append((level.name, r, request[r], max(0, level.real[r] - used.get(r, 0))))
        return out

    def _node_fit(self, extra: Resources, request: Resources) -> list[str]:
        """Dimensions where the cluster's free capacity cannot hold ``request``."""
        used = dict(self.used)
        add_amounts(used, extra)
        return [r for r in sorted(request) if request[r] > 0 and used.get(r, 0) + request[r] > self.capacity.get(r, 0)]

    def _enqueueable(self, group: GroupInfo, queue: QueueInfo) -> list[tuple[str, str, int, int]]:
        """``minResources + allocated + inqueue - elastic <= realCapability`` on minResources'
        dimensions, at the leaf (and every ancestor with hierarchy): the failing ``(queue,
        resource, needed, available)``."""
        pg = group.pg
        assert pg is not None
        if pg.min_resources is None:
            return []
        need = {r: v for r, v in pg.min_resources if v > 0}
        out = []
        for level in (self._chain(queue) if self.hierarchy else [queue]):
            if self.hierarchy:
                a, i, e = level.h_allocated, level.h_inqueue, level.h_elastic
            else:
                a, i, e = level.allocated, level.inqueue, level.elastic
            for r in sorted(need):
                cap = level.real.get(r)
                if cap is None:
                    continue
                held = a.get(r, 0) + i.get(r, 0) - e.get(r, 0)
                if held + need[r] > cap:
                    out.append((level.name, r, need[r], max(0, cap - held)))
        return out

    # -- actions -----------------------------------------------------------------------------------

    def run(self, now_ms: int) -> list[UnitDecision]:
        """enqueue, allocate, reclaim, repeated while reclaim evicts (at most ``MAX_ROUNDS``).

        A group is tried again only when something it waits for may have changed (``retry_all``,
        ``fresh``, ``relaxed``, ``freed``): a group not tried would fail as it did, so the decisions
        are those of trying every group every time; its message stays that of its last attempt."""
        out: list[UnitDecision] = []
        if not self.pending_queues and not self.waiting_queues:
            return out  # no group to enqueue, allocate or reclaim for: nothing can happen
        for _ in range(MAX_ROUNDS):
            if self.stale:
                self._derive()
            retry_all, fresh, relaxed, freed = self.retry_all, self.fresh, self.relaxed, self.freed
            self.retry_all, self.fresh, self.relaxed, self.freed = False, {}, set(), False
            for key in self._enqueue(retry_all, fresh, relaxed):
                fresh[key] = None
            if self.stale:
                self._derive()
            retry_all = retry_all or self.retry_all
            self._allocate(out, retry_all, fresh, relaxed, freed)
            if self.stale:
                self._derive()
            if not self._reclaim(out):
                break
        return out

    def _ordered_queues(self, names: list[str]) -> list[QueueInfo]:
        return sorted((self.queues[n] for n in names), key=functools.cmp_to_key(self._compare_queues))

    def _group_order(self, group: GroupInfo) -> tuple[int, int, str]:
        """``JobOrderFn``: priority (higher first), then creation, then key."""
        pg = group.pg
        assert pg is not None
        return (-group.priority, pg.creation_ms, group.key)

    def _enqueue(self, retry_all: bool, fresh: dict[str, None], relaxed: set[str]) -> list[str]:
        """Pending PodGroups become Inqueue (round-robin over queues in queue order); returns them."""
        per_queue: dict[str, list[GroupInfo]] = {}
        if retry_all:
            names = list(self.pending_queues)
        else:  # only queues a group of which may enqueue now, in the order of pending_queues
            chosen = {name: None for name in relaxed if name in self.pending_queues}
            for key in fresh:
                group = self.groups.get(key)
                if group is not None and group.indexed[1] == "pending":
                    chosen[group.indexed[0]] = None
            names = sorted(chosen, key=lambda n: self.queues[n].since)
        for name in names:
            queue = self.queues[name]
            whole = retry_all or queue.name in relaxed
            groups = [self.groups[k] for k in queue.pending if whole or k in fresh]
            if groups:
                per_queue[queue.name] = groups
        if not per_queue:
            return []
        lists = [sorted(per_queue[q.name], key=self._group_order) for q in self._ordered_queues(list(per_queue))]
        enqueued: list[str] = []
        for i in range(max(len(x) for x in lists)):
            for groups in lists:
                if i >= len(groups):
                    continue
                group = groups[i]
                queue = self.queues[group.queue]
                if queue.spec.state != "Open":
                    group.reason, group.message = "QueueNotOpen", f"queue {queue.name} is {queue.spec.state}"
                    group.shortfalls = []
                    continue
                if self.hierarchy and queue.children:
                    group.reason, group.message = "NotLeafQueue", f"queue {queue.name} is not a leaf queue"
                    group.shortfalls = []
                    continue
                blocked = self._enqueueable(group, queue)
                if blocked:
                    group.reason, group.message = "NotEnqueueable", QUOTA_INSUFFICIENT + ": " + "; ".join(
                        f"queue {q} {r}: needs {format_quantity(r, n)}, available {format_quantity(r, a)}"
                        for q, r, n, a in blocked)
                    group.shortfalls = [_short(*b) for b in blocked]
                    continue
                group.reason, group.message, group.shortfalls = "", "", []
                self._inqueue(group, queue)
                enqueued.append(group.key)
        return enqueued

    def _fits_free(self, group: GroupInfo, free: Resources) -> bool:
        """Whether some pending pod of ``group`` fits the cluster's free capacity (a group none of whose
        pods fits cannot bind anything)."""
        for request in group.need:
            for r, v in request.items():
                if v > free.get(r, 0):
                    break
            else:
                return True
        return False

    def _allocate(self, out: list[UnitDecision], retry_all: bool, fresh: dict[str, None], relaxed: set[str],
                  freed: bool) -> bool:
        """Bind pods of Inqueue / Running groups: the queue first in queue order (not overused, for
        proportion) gives its first group a try; a gang short of ``minMember`` is rolled back.  Only
        groups that may succeed are looked at (``run``): one not tried since it changed, any in a
        relaxed queue or a queue holding a changed group (every one with ``retry_all``), and after an
        event that freed capacity one stopped by the cluster.  A queue takes part only if, when the
        action starts, it has such a candidate with a pending pod that fits the free capacity: the
        queues of the first kinds are looked at once, in name order (their first fitting candidate
        is kept), the cluster-stopped ones are found through their need classes (``QueueInfo.fits``,
        ``_fitting``) without visiting the others.  A queue's next candidate is found lazily, in job
        order, when it comes first again; a queue without one leaves the action.

        The queue that goes first comes from a tournament over the queue tree (``_tour_sync``, one kept
        per set of fitting need classes; ``_winner`` over the entrants' chains when no class fits):
        each queue's first participant is the first, by ``_compare_queues``, of itself and its
        children's first participants.  Between participants of different children that comparison
        is a total order (priority, the child's share, deserved first, creation, name), so the winner
        is well defined; it is the queue ``_compare_queues`` puts before every other participant
        whenever there is such a queue.  (At equal shares of sibling branches ``_compare_queues``
        falls back to the leaves' creation and name and can be cyclic; upstream's heap, like a linear
        scan, then picks by visiting order.)  So an event costs O(depth × log siblings) per queue
        that takes part and per kept tournament its changes touch, not a pass over every queue with
        waiting groups."""
        free = {r: v - self.used.get(r, 0) for r, v in self.capacity.items()}
        lists: dict[str, list[GroupInfo]] = {}
        at: dict[str, int] = {}

        def advance(name: str) -> GroupInfo | None:
            queue = self.queues[name]
            groups = lists.get(name)
            if groups is None:
                groups = lists[name] = self._sorted_waiting(queue)
                at[name] = 0
            whole = retry_all or name in relaxed
            i = at[name]
            while i < len(groups):
                g = groups[i]
                i += 1
                if g.key not in queue.waiting:
                    continue
                if whole or g.key in fresh or not g.blocked or (freed and g.blocked == "cluster"):
                    if self._fits_free(g, free):
                        at[name] = i
                        return g
                    self._block(g, "cluster")
            at[name] = i
            return None

        heads: dict[str, GroupInfo] = {}
        changed = False
        off = self._tour_off
        entrants = self._tour_in
        if retry_all:
            self._tours = {}  # every waiting queue may enter: built again, O(queues), as after a tree change
            looked: list[str] = sorted(self.waiting_queues)
        else:
            names: dict[str, None] = dict.fromkeys(self._untried)
            for name in relaxed:
                names[name] = None
            for key in fresh:
                group = self.groups.get(key)
                if group is not None and group.indexed[1] == "waiting":
                    names[group.indexed[0]] = None
            looked = sorted(n for n in names if n in self.waiting_queues)
        for name in looked:
            head = advance(name)
            if head is not None:
                heads[name] = head
                entrants[name] = None
        classes = self._fitting(free) if freed or retry_all else ()
        if not entrants and not classes:
            return False  # no queue has a candidate that fits the free capacity
        tour = self._tournament(classes) if classes else None
        if tour is not None and not retry_all:
            for name in entrants:
                self._tour_touch(name)
        try:
            while True:
                if tour is not None:
                    self._tour_sync(tour)
                    first = tour.best.get("")
                else:
                    first = self._winner([name for name in entrants if name not in off])
                if first is None:
                    break
                queue = self.queues[first]
                head = heads.pop(first, None)
                if head is None:
                    head = advance(first)
                if head is None:
                    off[first] = None
                    self._tour_touch(first)
                    continue
                group = head
                if self.args.plugin == "proportion" and self._overused(queue):
                    group.reason, group.message = "NotEnoughResources", f"queue {queue.name} is overused"
                    self._block(group, "quota")
                    off[first] = None
                    self._tour_touch(first)
                    continue
                if not self._fits_free(group, free):
                    self._block(group, "cluster")  # the free capacity shrank since it was found
                elif self._try_allocate(group, queue, out):
                    changed = True
                    free = {r: v - self.used.get(r, 0) for r, v in self.capacity.items()}
                    if not any(v > 0 for v in free.values()):
                        break
                nxt = advance(first)
                if nxt is not None:
                    heads[first] = nxt
                else:
                    off[first] = None
                    self._tour_touch(first)
        finally:
            if retry_all:
                self._tours = {}
            elif tour is not None:  # (without a tournament no kept one looked at the entrants)
                for name in off:
                    self._tour_touch(name)
                for name in entrants:
                    self._tour_touch(name)
            off.clear()
            entrants.clear()
        return changed

    def _fitting(self, free: Resources) -> tuple[int, ...]:
        """The need classes of cluster-stopped groups whose request fits ``free`` (sorted)."""
        reqs = self._class_reqs
        out = []
        for cls in self._present:
            for r, v in reqs[cls].items():
                if v > free.get(r, 0):
                    break
            else:
                out.append(cls)
        out.sort()
        return tuple(out)

    def _tournament(self, classes: tuple[int, ...]) -> QueueTournament:
        """The tournament for these need classes, most recently used from now on."""
        tour = self._tours.pop(classes, None)
        if tour is None:
            tour = QueueTournament(frozenset(classes))
            if len(self._tours) >= MAX_TOURNAMENTS:
                del self._tours[next(iter(self._tours))]
        self._tours[classes] = tour
        return tour

    # -- queue order as a tournament ------------------------------------------------------------------

    def _tour_key(self, node: QueueInfo, winner: QueueInfo) -> TourEntry:
        """The entry of ``node`` (whose first participant is ``winner``) in its parent's heap."""
        of = node if self.hierarchy else winner
        flag = (0 if of.deserved else 1) if self.args.plugin == "capacity" else 0
        num, den = self.share_ratio(of)
        return TourEntry(-winner.spec.priority, num, den, flag, winner.spec.creation_ms, winner.name, node.name)

    def _tour_sync(self, tour: QueueTournament) -> None:
        """Bring the tournament up to date: each queue keeps its first participant (a queue with
        waiting groups not left out of the running action) of its subtree in queue order, from a heap
        of its children's entries and itself; a change re-evaluates its chain only
        (O(depth × log siblings)).  Built again when the tree or the deserved changed."""
        queues = self.queues
        if not tour.built:
            tour.built = True
            tour.heaps, tour.entry, tour.best = {}, {}, {}
            dirty: dict[str, None] = dict.fromkeys(sorted(queues))
        else:
            dirty = tour.dirty
            if not dirty:
                return
        tour.dirty = {}
        todo: dict[str, int] = {}
        for name in dirty:
            q = queues.get(name)
            if q is None:
                continue
            chain = self._chain(q)
            for k, node in enumerate(chain):
                if node.name in todo:
                    break
                todo[node.name] = len(chain) - k
        for name in sorted(todo, key=lambda n: (-todo[n], n)):
            self._tour_eval(tour, name)
        self._tour_eval(tour, "")

    def _winner(self, names: list[str]) -> str | None:
        """The tournament's first queue when only ``names`` take part (the entrants of an action with no
        fitting need class): the same comparisons as ``_tour_eval``, over the chains of ``names`` only
        (O(len(names) × depth)), so no kept tournament is needed."""
        if len(names) <= 1:
            return names[0] if names else None
        depth: dict[str, int] = {}
        for name in names:
            chain = self._chain(self.queues[name])
            for k, node in enumerate(chain):
                if node.name in depth:
                    break
                depth[node.name] = len(chain) - k
        below: dict[str, TourEntry] = {}  # per queue ("": above the tops), its children's best entry so far
        taking = dict.fromkeys(names)
        for name in sorted(depth, key=lambda n: (-depth[n], n)):
            q = self.queues[name]
            best = below.get(name)
            if name in taking:
                own = self._tour_key(q, q)
                if best is None or own < best:
                    best = own
            assert best is not None
            entry = self._tour_key(q, self.queues[best.name])
            parent = q.parent if q.parent is not None and q.parent in self.queues else ""
            other = below.get(parent)
            if other is None or entry < other:
                below[parent] = entry
        return below[""].name

    def _tour_touch(self, name: str) -> None:
        """``name``'s share or participation changed: re-evaluate it in every tournament."""
        for tour in self._tours.values():
            tour.dirty[name] = None

    def _tour_eval(self, tour: QueueTournament, name: str) -> None:
        """Re-evaluate one queue (``""``: the tops) and its entry in its parent's heap."""
        heaps, entry = tour.heaps, tour.entry
        best: TourEntry | None = None
        heap = heaps.get(name)
        if heap:
            while heap and entry.get(heap[0].owner) is not heap[0]:
                heapq.heappop(heap)
            if len(heap) > 2 * len(self.queues[name].children if name else self.queues) + 16:
                heap[:] = [e for e in heap if entry.get(e.owner) is e]  # drop the stale entries
                heapq.heapify(heap)
            if heap:
                best = heap[0]
        if not name:
            tour.best[name] = best.name if best is not None else None
            return
        q = self.queues[name]
        if (name in self.waiting_queues and name not in self._tour_off
                and (name in self._tour_in or (q.fits and not tour.classes.isdisjoint(q.fits)))):
            own = self._tour_key(q, q)
            if best is None or own < best:
                best = own
        winner = best.name if best is not None else None
        tour.best[name] = winner
        new = self._tour_key(q, self.queues[winner]) if winner is not None else None
        old = entry.get(name)
        if new is None:
            if old is not None:
                entry[name] = None
        elif old is None or not new.same(old):
            entry[name] = new
            parent = q.parent if q.parent is not None and q.parent in self.queues else ""
            heapq.heappush(heaps.setdefault(parent, []), new)

    def _sorted_waiting(self, queue: QueueInfo) -> list[GroupInfo]:
        """``queue``'s waiting groups in job order (cached until one of them changes)."""
        groups = queue.ordered
        if groups is None:
            groups = sorted((self.groups[k] for k in queue.waiting), key=self._group_order)
            queue.ordered = groups
        return groups

    def _overused(self, queue: QueueInfo) -> bool:
        """Proportion's ``OverusedFn``: ``deserved <= allocated`` in every dimension."""
        return all(queue.deserved.get(r, _ZERO) <= queue.allocated.get(r, 0)
                   for r in set(queue.deserved) | set(queue.allocated)) if (queue.deserved or queue.allocated) \
            else True

    def _try_allocate(self, group: GroupInfo, queue: QueueInfo, out: list[UnitDecision]) -> bool:
        pg = group.pg
        assert pg is not None
        pending = sorted((self.pods[k] for k in group.pods if self.pods[k].state == POD_PENDING),
                         key=PodInfo.order)
        running = sum(1 for k in group.pods if self.pods[k].state == POD_RUNNING)
        extra: Resources = {}
        chosen: list[PodInfo] = []
        blocked: list[tuple[str, str, int, int]] = []
        why = ""
        for pod in pending:
            quota = self._allocatable(queue, extra, pod.request)
            nodes = self._node_fit(extra, pod.request)
            if nodes:
                why = "cluster"
            elif quota and not why:
                why = "quota"
            if quota or nodes:
                if not blocked:
                    blocked = quota + [("cluster", r, pod.request[r],
                                        max(0, self.capacity.get(r, 0) - self.used.get(r, 0) - extra.get(r, 0)))
                                       for r in nodes]
                continue
            chosen.append(pod)
            add_amounts(extra, pod.request)
        if not chosen or running + len(chosen) < max(pg.min_member, 1):
            self._block(group, why or "quota")  # too few pods: tried again when pods arrive (fresh)
            if running < pg.min_member:
                ready = running + len(chosen)
                group.reason = "NotEnoughResources" if len(pending) + running >= pg.min_member else "NotEnoughTasks"
                group.message = (f"{pg.min_member - ready}/{len(group.pods)} tasks in gang unschedulable: "
                                 + ("; ".join(f"{q} {r}: needs {format_quantity(r, n)}, available "
                                              f"{format_quantity(r, a)}" for q, r, n, a in blocked)
                                    if blocked else f"{len(group.pods)} pods, minMember {pg.min_member}"))
                group.shortfalls = [_short(*b) for b in blocked]
            return False
        where: list[tuple[str, int]] | None = None
        placer = self.placer
        if placer is not None and placer.active:
            chosen, problem = self._bind(group, chosen, max(pg.min_member - running, 1))
            if not chosen:
                self._block(group, "cluster")
                group.reason = "NotEnoughResources"
                group.message = (f"{max(pg.min_member - running, 1)}/{len(group.pods)} tasks in gang unschedulable: "
                                 f"{problem}")
                group.shortfalls = []
                return False
            where = per_node([placer.node_of(p.key) or "" for p in chosen])
        self._block(group, why)
        for pod in chosen:
            pod.state = POD_RUNNING
        self._refresh(group)
        group.reason, group.message, group.shortfalls = "", "", []
        self._admitted(group, queue, chosen, None, out, where)
        return True

    def _admitted(self, group: GroupInfo, queue: QueueInfo, pods: list[PodInfo], preemptor: str | None,
                  out: list[UnitDecision], nodes: list[tuple[str, int]] | None) -> None:
        usage: Resources = {}
        for pod in pods:
            add_amounts(usage, pod.request)
        over = 1 if any(queue.allocated.get(r, 0) > queue.deserved.get(r, _ZERO) for r in queue.allocated) else 0
        out.append(("Admitted", group.key, queue.name, usage, over, preemptor, None,
                    "bound " + ", ".join(p.key for p in pods), nodes))

    # -- reclaim -----------------------------------------------------------------------------------

    def _preemptive(self, queue: QueueInfo, extra: Resources, request: Resources) -> bool:
        """May ``queue`` reclaim for a pod asking ``request`` (``PreemptiveFn``)?"""
        if self.args.plugin == "proportion":
            return not self._allocatable(queue, extra, request)
        if self._allocatable(queue, extra, request):
            return False
        levels = [queue]
        if self.hierarchy and self.args.ancestor_reclaim_level:
            chain = self._chain(queue)
            levels += [q for q in chain[1:self.args.ancestor_reclaim_level + 1] if q.name != ROOT]
        for level in levels:
            used = dict(level.h_allocated if self.hierarchy else level.allocated)
            add_amounts(used, extra)
            add_amounts(used, request)
            if any(request[r] > 0 and used.get(r, 0) <= level.deserved.get(r, _ZERO) for r in request):
                return True
        return False

    def _common_depth(self, a: QueueInfo, b: QueueInfo) -> int:
        """Depth of the deepest common ancestor of two queues (root = 0; flat plugins: 0)."""
        if not self.hierarchy:
            return 0
        la, lb = self._chain(a)[::-1], self._chain(b)[::-1]
        i = 0
        while i + 1 < len(la) and i + 1 < len(lb) and la[i + 1] is lb[i + 1]:
            i += 1
        return i

    def _victims(self, reclaimer: QueueInfo, request: Resources) -> list[PodInfo]:
        """Running pods of other reclaimable queues, in victim order: deeper common ancestor with the
        reclaimer first (siblings, then cousins), then the queue that would be scheduled last (reverse
        queue order), lower weight, then within a queue the group scheduled last (reverse job order)
        and its pods lowest priority, latest first."""
        pods = [p for p in self.pods.values() if p.state == POD_RUNNING]
        by_queue: dict[str, list[PodInfo]] = {}
        for p in pods:
            group = self.groups[p.group]
            q = self.queues.get(group.queue)
            if q is None or q is reclaimer or not q.spec.reclaimable or group.pg is None:
                continue
            if not any(r in request for r in p.request):
                continue
            by_queue.setdefault(q.name, []).append(p)
        queues = self._ordered_queues(list(by_queue))
        rank = {q.name: i for i, q in enumerate(queues)}
        queues.sort(key=lambda q: (-self._common_depth(reclaimer, q), -rank[q.name], q.spec.weight))
        out: list[PodInfo] = []
        for q in queues:
            members = by_queue[q.name]
            members.sort(key=lambda p: (self._group_order(self.groups[p.group]), p.order()), reverse=True)
            out.extend(members)
        return out

    def _reclaimable(self, reclaimer: QueueInfo, victim: PodInfo, allocated: dict[str, Resources],
                     gang: dict[str, int]) -> bool:
        """The plugin's ``ReclaimableFn`` and the gang rule for one victim, with the running copies
        of ``allocated`` (per queue) and of running pods per group; updates them when accepted."""
        group = self.groups[victim.group]
        pg = group.pg
        assert pg is not None
        running = gang.get(group.key)
        if running is None:
            running = sum(1 for k in group.pods if self.pods[k].state == POD_RUNNING)
        if not (pg.min_member <= running - 1 or pg.min_member == 1):
            return False
        queue = self.queues[group.queue]
        levels = [queue]
        if self.args.plugin == "proportion":
            alloc = allocated.setdefault(queue.name, dict(queue.allocated))
            if all(alloc.get(r, 0) <= queue.deserved.get(r, _ZERO) for r in alloc):
                return False
        else:
            key = queue.name
            alloc = allocated.setdefault(key, dict(queue.h_allocated if self.hierarchy else queue.allocated))
            after = dict(alloc)
            add_amounts(after, victim.request, -1)
            if any(after.get(r, 0) < g for r, g in queue.guarantee.items()):
                return False
            if not self._exceeds(queue, alloc, victim.request):
                if any(r in queue.deserved for r in victim.request) or not self._contention(reclaimer, queue):
                    return False
            level = self.args.ancestor_reclaim_level if self.hierarchy else 0
            if level:
                mine, theirs = self._chain(reclaimer), self._chain(queue)
                for depth in range(1, level + 1):
                    if depth >= len(theirs) or theirs[depth].name == ROOT:
                        break
                    anc = theirs[depth]
                    if depth < len(mine) and mine[depth] is anc:
                        continue
                    a = allocated.setdefault(anc.name, dict(anc.h_allocated))
                    if not self._exceeds(anc, a, victim.request):
                        return False
                    levels.append(anc)
        for level_q in levels:
            add_amounts(allocated[level_q.name], victim.request, -1)
        gang[group.key] = running - 1
        return True

    def _exceeds(self, queue: QueueInfo, allocated: Resources, request: Resources) -> bool:
        """Immediate victim (no deserved on the request's dimensions) or ``allocated`` above
        ``deserved`` on a dimension of the request that the deserved names
        (``GreaterPartlyWithRelevantDimensions``)."""
        relevant = [r for r in request if request[r] > 0 and r in queue.deserved]
        if not relevant:
            return True
        return any(allocated.get(r, 0) > queue.deserved[r] for r in relevant)

    def _contention(self, reclaimer: QueueInfo, victim_queue: QueueInfo) -> bool:
        """``True`` unless contention avoidance spares a best-effort victim queue: the reclaimer and the
        victim share a non-root ancestor within ``ancestorReclaimLevel`` and the reclaimer has no
        deserved (hierarchy, level > 0)."""
        level = self.args.ancestor_reclaim_level if self.hierarchy else 0
        if not level or reclaimer.deserved:
            return True
        mine = {q.name for q in self._chain(reclaimer)[1:level + 1] if q.name != ROOT}
        theirs = {q.name for q in self._chain(victim_queue)[1:level + 1] if q.name != ROOT}
        return not (mine & theirs)

    def _reclaim(self, out: list[UnitDecision]) -> bool:
        """For each starving group (queue order, then job order), evict victims until its pending pods
        fit the cluster; commit when the group becomes ready, else undo."""
        if not self.reclaimable_alloc:
            return False
        cands = list(self.waiting_queues)
        changed = False
        for queue in self._ordered_queues(cands):
            if self.args.plugin == "proportion" and self._overused(queue):
                continue
            for group in sorted((self.groups[k] for k in list(queue.waiting)), key=self._group_order):
                if group.key not in queue.waiting:
                    continue
                if self._reclaim_for(group, queue, out):
                    changed = True
        return changed

    def _reclaim_for(self, group: GroupInfo, queue: QueueInfo, out: list[UnitDecision]) -> bool:
        pg = group.pg
        assert pg is not None
        pending = sorted((self.pods[k] for k in group.pods if self.pods[k].state == POD_PENDING),
                         key=PodInfo.order)
        running = sum(1 for k in group.pods if self.pods[k].state == POD_RUNNING)
        extra: Resources = {}
        freed: Resources = {}
        evicted: list[PodInfo] = []
        taken: set[str] = set()
        placed: list[PodInfo] = []
        allocated: dict[str, Resources] = {}
        gang: dict[str, int] = {}
        for pod in pending:
            if pod.obj.preemption_policy == "Never" or not self._preemptive(queue, extra, pod.request):
                continue
            need = dict(extra)
            add_amounts(need, freed, -1)
            if not self._node_fit(need, pod.request):  # fits the free capacity: no victim needed
                placed.append(pod)
                add_amounts(extra, pod.request)
                continue
            for victim in self._victims(queue, pod.request):
                if victim.key in taken:
                    continue
                if not self._node_fit(need, pod.request):
                    break
                if not self._reclaimable(queue, victim, allocated, gang):
                    continue
                taken.add(victim.key)
                evicted.append(victim)
                add_amounts(freed, victim.request)
                add_amounts(need, victim.request, -1)
            if self._node_fit(need, pod.request):
                continue
            placed.append(pod)
            add_amounts(extra, pod.request)
        if not placed or running + len(placed) < max(pg.min_member, 1):
            return False
        nodes: list[tuple[str, int]] | None = None
        placer = self.placer
        if placer is not None and placer.active:
            saved = [(v, placer.node_of(v.key)) for v in evicted]
            for v, _ in saved:
                placer.release(v.key)
            placed, _ = self._bind(group, placed, max(pg.min_member - running, 1))
            if not placed:
                for v, node in saved:
                    if node is not None:
                        placer.bind(v.key, v.obj.requests, node)
                return False
            nodes = per_node([placer.node_of(p.key) or "" for p in placed])
        victims_by_group: dict[str, None] = {}
        for victim in evicted:
            victim.state = POD_PENDING
            victims_by_group[victim.group] = None
            vgroup = self.groups[victim.group]
            out.append(("Evicted", victim.key, vgroup.queue, dict(victim.request), 0, group.key, RECLAIM_REASON,
                        f"reclaimed by {group.key} of queue {queue.name}", None))
        for key in victims_by_group:
            self._refresh(self.groups[key])
        for pod in placed:
            pod.state = POD_RUNNING
        self._refresh(group)
        group.reason, group.message, group.shortfalls = "", "", []
        self._admitted(group, queue, placed, None, out, nodes)
        return True

    # -- views ---------------------------------------------------------------------------------------

    def _numbers(self, q: QueueInfo) -> dict:
        h = self.hierarchy
        return {"parent": q.parent, "weight": q.spec.weight, "state": q.spec.state,
                "reclaimable": q.spec.reclaimable, "priority": q.spec.priority,
                "capability": dict(sorted(q.capability.items())), "realCapability": dict(sorted(q.real.items())),
                "guarantee": dict(sorted(q.guarantee.items())),
                "deserved": {r: int(v) for r, v in sorted(q.deserved.items())},
                "allocated": dict(sorted((q.h_allocated if h else q.allocated).items())),
                "request": dict(sorted((q.h_request if h else q.request).items())),
                "inqueue": dict(sorted((q.h_inqueue if h else q.inqueue).items())),
                "elastic": dict(sorted((q.h_elastic if h else q.elastic).items())),
                "share": str(self.queue_share(q)), "children": list(q.children)}

    def queue_rows(self) -> list[tuple[str, dict, int]]:
        """``(name, numbers as in the state's queues, PodGroups not Completed)`` per queue, by name."""
        if self.stale:
            self._derive()
        return [(name, self._numbers(self.queues[name]), self.queues[name].live) for name in sorted(self.queues)]

    def view(self) -> dict:
        """``queues`` (upstream ``queueAttr`` names; ``deserved`` rounded down to base units, ``share``
        an exact ratio; with hierarchy a parent's numbers are its subtree's), ``podGroups`` and
        ``pods`` (with ``node``, the node a pod is bound to, while the cluster has a Node)."""
        if self.stale:
            self._derive()
        queues = {name: self._numbers(self.queues[name]) for name in sorted(self.queues)}
        groups = {}
        for key in sorted(self.groups):
            g = self.groups[key]
            pg = g.pg
            groups[key] = {"queue": g.queue, "phase": g.phase if pg is not None else "Unknown",
                           "minMember": pg.min_member if pg is not None else None,
                           "minResources": dict(pg.min_resources) if pg is not None and pg.min_resources is not None
                           else None,
                           "pods": len(g.pods),
                           "running": sum(1 for k in g.pods if self.pods[k].state == POD_RUNNING),
                           "allocated": dict(sorted(g.alloc.items())), "reason": g.reason, "message": g.message,
                           "shortfalls": g.shortfalls}
        placer = self.placer
        placing = placer is not None and placer.active
        pods = {key: {"group": p.group, "state": p.state, "request": dict(sorted(p.request.items())),
                      "observed": p.observed, **({"node": placer.node_of(key)} if placing else {})}  # type: ignore[union-attr]
                for key, p in sorted(self.pods.items())}
        return {"queues": queues, "podGroups": groups, "pods": pods}

    def explain(self, key: str) -> dict | None:
        """Why PodGroup (or pod) ``key`` is where it is: phase, the last message and shortfalls, and
        per level from its queue up to the root the queue's numbers (deserved, realCapability, what
        is allocated and reserved) and what an enqueue / allocate check would find now."""
        pod = self.pods.get(key)
        group = self.groups.get(pod.group if pod is not None else key)
        if group is None:
            return None
        if self.stale:
            self._derive()
        queue = self.queues.get(group.queue)
        levels = []
        if queue is not None:
            for q in (self._chain(queue) if self.hierarchy else [queue]):
                levels.append({"queue": q.name, **self._numbers(q)})
        pending: Resources = {}
        for k in group.pods:
            if self.pods[k].state == POD_PENDING:
                add_amounts(pending, self.pods[k].request)
        now = []
        if queue is not None and pending:
            now = [_short(*b) for b in self._allocatable(queue, {}, pending)]
        return {"kind": "PodGroup", "key": group.key, "plugin": self.args.plugin, "hierarchy": self.hierarchy,
                "phase": group.phase if group.pg is not None else "Unknown", "queue": group.queue,
                "pod": key if pod is not None else None, "reason": group.reason, "message": group.message,
                "shortfalls": group.shortfalls, "pendingRequest": dict(sorted(pending.items())),
                "allocatableNow": now, "levels": levels}

    # -- snapshot ------------------------------------------------------------------------------------

    def dump(self) -> dict:
        """Arguments, capacity, queue specs, PodGroups with phase, message and what blocked them, pods
        with state, and what the next ``run`` retries."""
        a = self.args
        return {"args": [a.plugin, a.enabled_hierarchy, a.ancestor_reclaim_level], "capacity": self.capacity,
                "queues": [_enc_queue(q) for q in self.specs.values()],
                "groups": [[g.key, _enc_group(g.pg) if g.pg is not None else None, g.phase, g.reason, g.message,
                            g.shortfalls, g.blocked] for g in self.groups.values()],
                "retry": [self.retry_all, list(self.fresh), sorted(self.relaxed), self.freed],
                "pods": [[_enc_pod(p.obj), p.group, p.state, p.observed] for p in self.pods.values()]}

    def load(self, doc: dict) -> None:
        """Rebuild from ``dump`` output (numbers recomputed from the pods)."""
        plugin, hierarchy_on, level = doc["args"]
        self.args = VolcanoArgs(plugin, hierarchy_on, level)
        self.capacity = dict(doc["capacity"])
        self.specs = {}
        for raw in doc["queues"]:
            q = _dec_queue(raw)
            self.specs[q.name] = q
        self.groups = {}
        self.pods = {}
        self.used = {}
        self._rebuild_tree()
        for key, raw, phase, reason, message, shortfalls, blocked in doc["groups"]:
            g = self.groups[key] = GroupInfo(key)
            g.phase, g.reason, g.message, g.shortfalls, g.blocked = phase, reason, message, shortfalls, blocked
            if raw is not None:
                g.pg = _dec_group(raw)
                g.queue = g.pg.queue
        for raw, group, state, observed in doc["pods"]:
            pod = PodInfo(_dec_pod(raw), group)
            pod.cls = self._class_of(pod.request)
            pod.state, pod.observed = state, observed
            self.pods[pod.key] = pod
            self.groups[group].pods[pod.key] = None
        for g in self.groups.values():
            if g.pg is not None:
                self.queues_for(g)
                self._refresh(g)
        retry_all, fresh, relaxed, freed = doc["retry"]
        self.retry_all, self.fresh, self.relaxed, self.freed = retry_all, dict.fromkeys(fresh), set(relaxed), freed
        self.stale = True


def _pairs(rows: list | None) -> tuple[tuple[str, int], ...]:
    return tuple((r, v) for r, v in rows or ())


def _enc_queue(q: Queue) -> list:
    return [q.name, q.parent, q.weight, [list(x) for x in q.capability], [list(x) for x in q.guarantee],
            [list(x) for x in q.deserved], q.reclaimable, q.priority, q.state, q.creation_ms]


def _dec_queue(row: list) -> Queue:
    name, parent, weight, cap, guarantee, deserved, reclaimable, priority, state, creation = row
    return Queue(name, parent, weight, _pairs(cap), _pairs(guarantee), _pairs(deserved), reclaimable, priority,
                 state, creation)


def _enc_group(g: PodGroup) -> list:
    return [g.namespace, g.name, g.queue, g.min_member,
            None if g.min_resources is None else [list(x) for x in g.min_resources], g.priority_class_name,
            g.creation_ms]


def _dec_group(row: list) -> PodGroup:
    ns, name, queue, min_member, min_res, pcn, creation = row
    return PodGroup(ns, name, queue, min_member, None if min_res is None else _pairs(min_res), pcn, creation)


def _enc_pod(p: Pod) -> list:
    return [p.namespace, p.name, p.uid, p.creation_ms, p.priority, [list(x) for x in p.requests],
            [list(x) for x in p.labels], [list(x) for x in p.annotations], p.node_name, p.phase, p.preemption_policy] \
        + ([] if p.placement is None else [encode_request(p.placement)])


def _dec_pod(row: list) -> Pod:
    """A Pod of ``_enc_pod``; a row without placement constraints ends after the preemption policy."""
    ns, name, uid, creation, priority, requests, labels, annotations, node, phase, policy = row[:11]
    return Pod(ns, name, uid, creation, priority, _pairs(requests), tuple((k, v) for k, v in labels),
               tuple((k, v) for k, v in annotations), node, phase, policy,
               decode_request(row[11]) if len(row) > 11 else None)
