"""The state of one cluster (an independent resource pool) and how each event changes it.

``ClusterState.apply`` is the reducer for one cluster: it updates objects, quota charges and
queues for one event, then runs admission cycles to a fixpoint (``statemodel.admission.cycle``).
Everything is deterministic: dicts iterate in insertion order, sets are only iterated sorted,
time comes from events.

Lifecycle semantics (reference/kueue.md §6, EVENTS.md "Types"):

* ``WorkloadAdmitted`` and a Workload applied with ``status.admission`` are **observed**
  admissions: quota is charged exactly as given, even over quota; ``observed`` records whether
  the engine agreed (it had admitted the workload to the same ClusterQueue with the same flavors,
  or the assignment fitted when observed).
* ``WorkloadEvicted``: quota is released and the workload goes back to its queue
  (``PendingEvaluation`` with the eviction reason as message).
* Preemption (``statemodel.preemption``): a ``Preempted`` decision per victim.  With
  ``EngineConfig.spec.preemption.releaseOn: Decision`` (default) the victim's quota is released at
  the decision and it goes back to its queue at once; with ``Eviction`` it keeps its quota
  (*evicting*) until its ``WorkloadEvicted`` / ``WorkloadFinished`` is observed.  Either way it
  keeps its queue order (Kueue's default: creation time) and records ``preempted_by`` / the reason;
  releasing a victim's quota wakes its preemptor.
* ``WorkloadFinished``: quota is released and the workload leaves its queue (status ``Finished``).
* ``stopPolicy``: ``Hold`` stops new admissions (pending reason ``Suspended``); ``HoldAndDrain``
  also evicts what is admitted (``Evicted`` decisions with ``ClusterQueueStopped`` /
  ``LocalQueueStopped``).  Since there is no job controller here, an engine eviction releases
  quota at once.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Final

from statemodel.decisions import ADMITTED as DECISION_ADMITTED
from statemodel.decisions import EVICTED, PREEMPTED, Decision, DecisionType
from statemodel.errors import EventError
from statemodel.events.envelope import Event
from statemodel.queues.afs import FairSharingLedgers, flatten
from statemodel.admission.flavorassigner import Assignment
from statemodel.hierarchy import ClusterQueueEntry, Hierarchy
from statemodel.objects import (
    Admission, AdmissionMode, ClusterQueue, Cohort, EngineConfig, FairSharingPreemptionStrategy, LocalQueue, Node,
    PreemptionReleaseOn, ResourceFlavor, StopPolicy, Topology, Workload,
)
from statemodel.placement.nodes import NodeLedger
from statemodel.placement.nodesets import BINPACK, PlacementFailure
from statemodel.placement.pods import PodPlacement
from statemodel.placement.stage import PlacementStage
from statemodel.preemption import fair_sharing
from statemodel.preemption.candidate_index import CandidateIndex
from statemodel.preemption.classical import Target, find_targets
from statemodel.preemption.context import PreemptionContext
from statemodel.preemption.preemptor import preemption_message
from statemodel.queues.cluster_queue import ClusterQueueQueue
from statemodel.reasons import (
    CLUSTER_QUEUE_STOPPED, LOCAL_QUEUE_STOPPED, MISCONFIGURED, NODE_FAILURES, NODE_FAILURES_MESSAGE, PENDING,
    PENDING_EVALUATION, SUSPENDED, TOPOLOGY_PLACEMENT_FAILED,
)
from statemodel.quota import registry
from statemodel.quota.protocol import QuotaModel, UnitDecision, UnitModel
from statemodel.admission.cycle import ScopeGate, WakeIndex, run_cycles
from statemodel.workload import ADMITTED, FINISHED, PendingCondition, PodSetAssignment, WorkloadInfo, WorkloadStatus

# Policy values the hot paths compare against, as module constants (mypyc loads a ``Final`` global
# directly, where ``StopPolicy.NONE`` would be an attribute lookup on the enum class every time).
NOT_STOPPED: Final = StopPolicy.NONE
HOLD_AND_DRAIN: Final = StopPolicy.HOLD_AND_DRAIN
USAGE_BASED: Final = AdmissionMode.USAGE_BASED_ADMISSION_FAIR_SHARING
RELEASE_ON_DECISION: Final = PreemptionReleaseOn.DECISION
DEFAULT_STRATEGIES: Final = (FairSharingPreemptionStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,
                             FairSharingPreemptionStrategy.LESS_THAN_INITIAL_SHARE)
_LIFECYCLE: Final = ("WorkloadAdmitted", "WorkloadEvicted", "WorkloadFinished")


class ClusterState:
    """Objects, quota tree, queues and workloads of one cluster, plus its clock and decision counter.

    Attributes:
        name: cluster name.  clock_ms: engine time, ``max`` of event times seen (never rewinds).
        seq: last decision sequence number (gap-free from 1).
        model: the quota model (``EngineConfig.spec.quotaModel``, default ``kueue``), the only holder
            of quota numbers; the admission cycle reaches it only through ``QuotaModel``.
        hierarchy: Cohorts and ClusterQueues (edges, implicit cohorts, cycles).
        flavors / local_queues: applied objects by name (LocalQueues by ``ns/name``).
        nodes: the ``v1`` Nodes, the cluster's capacity over the schedulable ones, what placed pods hold
            on each node and the ``Topology`` domains.
        placement: the placement stage's waiters (docs/placement.md).
        pod_nodes: the pods of a unit model (Koordinator, Volcano) on nodes, while the cluster has a
            Node (``statemodel.placement.pods``).
        config: the last ``EngineConfig``.
        workloads: every workload by ``ns/name`` (finished ones stay for audit until deleted).
        queues: pending queue per ClusterQueue name.  ready: names of queues whose head may be tried.
        by_local_queue: not-finished workloads per LocalQueue key.
        admitted: admitted workloads per ClusterQueue name.
        afs: admission-fair-sharing configuration and consumed usage per LocalQueue.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.clock_ms = 0
        self.seq = 0
        self.model = registry.create(registry.DEFAULT)
        self.hierarchy = Hierarchy(self.model)
        self.units: UnitModel | None = None
        self.flavors: dict[str, ResourceFlavor] = {}
        self.local_queues: dict[str, LocalQueue] = {}
        self.nodes = NodeLedger()
        self.placement = PlacementStage()
        self.pod_nodes = PodPlacement(self.nodes)
        self.config = EngineConfig()
        self.workloads: dict[str, WorkloadInfo] = {}
        self.queues: dict[str, ClusterQueueQueue] = {}
        self.ready: set[str] = set()
        self.waiting: set[str] = set()
        self.by_local_queue: dict[str, dict[str, WorkloadInfo]] = {}
        self.admitted: dict[str, dict[str, WorkloadInfo]] = {}
        self.candidate_index = CandidateIndex()
        self.kept_heaps = fair_sharing.KeptHeaps()  # fair-sharing searches' starting heaps, per Cohort
        self.wake_index = WakeIndex()
        self.afs = FairSharingLedgers()
        self.scope_gate = ScopeGate()
        self._heads_woken: set[str] = set()
        self.preempted_in_step: list[str] = []  # victims released on their decision in this step
        self._scope_cache: dict[str, tuple[int, str | None]] = {}
        self._scopes_present: tuple[int, bool] = (-1, False)
        self._lqs_by_cq: tuple[int, dict[str, list[str]]] = (-1, {})
        self.decisions: list[Decision] = []
        self._cause = ""
        self._config_generation = 0
        self._inactive_cache: dict[str, tuple[int, PendingCondition | None]] = {}

    # -- entry point -------------------------------------------------------------------------

    def apply(self, event: Event) -> list[Decision]:
        """Apply one event (a ``Batch`` as one step) and run admission to a fixpoint.

        Returns the decisions it caused, in order.  Never raises for well-formed events: references
        to unknown objects are no-ops (a finish of an unknown workload) or pending reasons.
        """
        self.decisions = []
        self._cause = event.id
        self._heads_woken.clear()
        self._end_step()
        self._sampling_instants_until(event.time_ms)
        if event.type == "Batch":
            for inner in event.events:
                self._apply_one(inner)
        else:
            self._apply_one(event)
        run_cycles(self)
        if self.units is not None:
            self._unit_decisions(self.units.run(self.clock_ms))
        self._end_step()
        return self.decisions

    def _end_step(self) -> None:
        """The workloads preempted in the step may be victims again (``preempt``): those admitted again
        meanwhile go back among their ClusterQueue's candidates (``CandidateIndex.ordered``)."""
        for key in self.preempted_in_step:
            info = self.workloads.get(key)
            if info is not None:
                info.preempted_in_step = False
                if info.status == ADMITTED and info.cluster_queue is not None:
                    self.candidate_index.touch(info.cluster_queue)
        self.preempted_in_step.clear()

    # -- models that admit their own units (statemodel.quota.protocol.UnitModel) ----------------

    def attach_units(self, model: QuotaModel) -> None:
        """Hand ``model`` the unit side of the cluster when it admits its own units (Koordinator's
        pods), else clear it."""
        units: UnitModel | None = model if getattr(model, "admits_units", False) else None  # type: ignore[assignment]
        self.units = units
        if units is not None:
            units.configure(self.config)
            units.set_capacity(self.nodes.totals())
            units.set_placer(self.pod_nodes)

    def validate(self, event: Event) -> None:
        """Reject (``EventError``) an event the unit model's webhooks refuse, before it changes
        anything; a cluster that would switch to a unit model on this event validates against a
        fresh one.  Only objects are checked: lifecycle events and Workloads (never a quota object
        nor a unit model's) return at once, so the Kueue path pays nothing."""
        kind = event.type
        if kind != "Batch" and (kind != "Applied" or isinstance(event.obj, Workload)) and kind != "Deleted":
            return
        changes: list[object] = []
        for e in (event.events if event.type == "Batch" else (event,)):
            if e.type == "Applied" and e.obj is not None:
                changes.append(e.obj)
            elif e.type == "Deleted" and e.ref is not None:
                changes.append(e.ref)
        if not changes:
            return
        self._check_model_kinds(changes)
        units: UnitModel | None = self.units
        if units is None:
            owner = self._owner_model(changes)
            if owner is None:
                return
            fresh = registry.create(owner)
            units = fresh if getattr(fresh, "admits_units", False) else None  # type: ignore[assignment]
            if units is None:
                return
        units.validate(changes)

    def _check_model_kinds(self, changes: list[object]) -> None:
        """Reject another model's quota object (docs/events.md "A cluster runs one quota model"): a
        cluster on the default model without Kueue quota objects takes the model of the first quota
        object instead; an object of the running model's kinds commits the cluster to it.

        Raises:
            EventError: ``object.kind``, naming the object's model and the cluster's.
        """
        model = self.model.name
        kinds = registry.MODEL_OF_KIND
        if model != registry.DEFAULT and model not in kinds.values():
            return
        committed = model != registry.DEFAULT or bool(self.hierarchy.cluster_queues or self.hierarchy.cohorts)
        for obj in changes:
            if isinstance(obj, EngineConfig):
                model, committed = obj.quota_model, obj.quota_model != registry.DEFAULT or committed
                continue
            kind = type(obj).__name__
            owner = kinds.get(kind)
            if owner is None or owner == model:
                committed = committed or owner is not None
                continue
            if not committed and model == registry.DEFAULT:
                model, committed = owner, True
                continue
            raise EventError("object.kind", f"{kind} is a quota object of the {owner} quota model; cluster "
                                            f"{self.name} runs the {model} quota model")

    def _owner_model(self, objs: list[object]) -> str | None:
        """The model a cluster still on the default model (with no Kueue quota objects) switches to
        for the first of ``objs`` that is another model's quota object."""
        if self.model.name != registry.DEFAULT or self.hierarchy.cluster_queues or self.hierarchy.cohorts:
            return None
        for obj in objs:
            owner = registry.MODEL_OF_KIND.get(type(obj).__name__)
            if owner is not None and owner != registry.DEFAULT:
                return owner
        return None

    def _unit_object(self, obj: object) -> bool:
        """Route an object to the unit model (switching to it first when ``_owner_model`` says so)."""
        if self.units is None:
            owner = self._owner_model([obj])
            if owner is None:
                return False
            self.use_model(registry.create(owner))
        units = self.units
        return units is not None and units.apply_object(obj)

    def _unit_decisions(self, decisions: list[UnitDecision]) -> None:
        """Record a unit model's decisions; an ``Admitted`` one whose pods were placed carries their
        nodes (one podSet ``main`` of as many pods)."""
        for kind, key, quota, usage, borrowing, preemptor, reason, message, nodes in decisions:
            self.seq += 1
            decision_type = DecisionType(kind)
            pod_sets: list[PodSetAssignment] | None = None
            if decision_type == DECISION_ADMITTED:
                pod_sets = [PodSetAssignment("main", 1, {}, usage) if nodes is None else
                            PodSetAssignment("main", sum(n for _, n in nodes), {}, usage, None, nodes)]
            self.decisions.append(Decision(self.seq, self._cause, self.clock_ms, self.name, decision_type, key, quota,
                                           pod_sets, borrowing, preemptor, reason, message))

    def _apply_one(self, event: Event) -> None:
        if event.time_ms > self.clock_ms:
            self.clock_ms = event.time_ms
        kind = event.type
        if kind == "Applied":
            obj = event.obj
            if isinstance(obj, Workload):
                self._apply_workload(obj)
            elif not self._unit_object(obj):
                self._apply_config(obj)
        elif self.units is not None and kind in _LIFECYCLE and (event.workload or "") not in self.workloads:
            self.units.lifecycle(kind, event.workload or "", event.reason)
        elif kind == "WorkloadFinished":
            self._finish(event.workload)
        elif kind == "WorkloadAdmitted":
            info = self.workloads.get(event.workload or "")
            if info is not None and info.status != FINISHED and event.admission is not None:
                self._observe_admission(info, event.admission)
        elif kind == "WorkloadEvicted":
            info = self.workloads.get(event.workload or "")
            if info is not None and info.status == ADMITTED:
                self._release(info)
                self._requeue_after_eviction(info, f"Evicted: {event.reason or 'Evicted'}")
        elif kind == "Deleted":
            self._delete(event.ref)

    # -- configuration -----------------------------------------------------------------------

    def _apply_config(self, obj) -> None:
        if isinstance(obj, ClusterQueue):
            is_new = obj.name not in self.hierarchy.cluster_queues
            self.hierarchy.apply_cluster_queue(obj)
            if is_new:  # observed admissions may have named it before it existed (Kueue's cache adds them)
                for info in self.admitted.get(obj.name, {}).values():
                    self.model.charge(obj.name, info.charge)
            self._queue(obj.name).strategy = obj.queueing_strategy
            self._refresh_order(obj.name)
            if obj.stop_policy == HOLD_AND_DRAIN:
                self._drain(list(self.admitted.get(obj.name, {}).values()), CLUSTER_QUEUE_STOPPED,
                            "The ClusterQueue is stopped")
        elif isinstance(obj, Cohort):
            self.hierarchy.apply_cohort(obj)
        elif isinstance(obj, LocalQueue):
            self.local_queues[obj.key] = obj
            if obj.afs_status is not None:
                self.afs.seed(obj.key, obj.afs_status.consumed_resources, obj.afs_status.last_update_ms)
            if self.afs.params is not None:
                self.afs.ledger(obj.key, self.clock_ms)
            members = list(self.by_local_queue.get(obj.key, {}).values())
            if obj.stop_policy == HOLD_AND_DRAIN:
                self._drain([m for m in members if m.status == ADMITTED], LOCAL_QUEUE_STOPPED,
                            "The LocalQueue is stopped")
            self._reroute(obj.key)
        elif isinstance(obj, ResourceFlavor):
            self.flavors[obj.name] = obj
        elif isinstance(obj, Node):
            old = self.nodes.get(obj.name)
            self.nodes.apply(obj)
            if obj.unschedulable and old is not None and not old.unschedulable:
                self._evict_from_node(obj.name)
            if self.units is not None:
                self.units.set_capacity(self.nodes.totals())
                self.units.nodes_changed()
        elif isinstance(obj, Topology):
            self.nodes.apply_topology(obj)
            if self.units is not None:
                self.units.nodes_changed()
        elif isinstance(obj, EngineConfig):
            self._set_engine_config(obj)
        self._configuration_changed()

    def _delete(self, ref) -> None:
        """Delete the object ``ref`` names.  Deleting what does not exist changes nothing at all: no
        configuration change, so no waiting workload is woken and no pending message is rewritten."""
        kind, name = ref.kind, ref.name
        if self.units is not None and self.units.delete_object(kind, f"{ref.namespace}/{name}" if ref.namespace
                                                                else name):
            return
        if kind == "Workload":
            info = self.workloads.pop(f"{ref.namespace}/{name}", None)
            if info is not None:
                self._leave(info)
            return
        if kind == "ClusterQueue":
            if not self.hierarchy.delete_cluster_queue(name):
                return
            if name in self.queues:
                self._refresh_order(name)
        elif kind == "Cohort":
            if not self.hierarchy.delete_cohort(name):
                return
        elif kind == "LocalQueue":
            key = f"{ref.namespace}/{name}"
            if self.local_queues.pop(key, None) is None:
                return
            self._reroute(key)
        elif kind == "ResourceFlavor":
            if self.flavors.pop(name, None) is None:
                return
        elif kind == "Node":
            if name not in self.nodes:
                return
            self._evict_from_node(name)
            self.nodes.delete(name)
            if self.units is not None:
                self.units.set_capacity(self.nodes.totals())
                self.units.nodes_changed()
        elif kind == "Topology":
            if not self.nodes.delete_topology(name):
                return
            if self.units is not None:
                self.units.nodes_changed()
        elif kind == "EngineConfig":
            if self.config == EngineConfig():
                return
            self._set_engine_config(EngineConfig())
        self._configuration_changed()

    def _set_engine_config(self, config: EngineConfig) -> None:
        self.config = config
        if self.configure_pod_nodes() and self.units is not None:
            self.units.nodes_changed()
        if config.quota_model != self.model.name:
            self.use_model(registry.create(config.quota_model))
        elif self.units is not None:
            self.units.configure(config)
        admitted = [(info.local_queue, flatten(info.charge))
                    for per_cq in self.admitted.values() for info in per_cq.values()]
        self.afs.configure(config.admission_fair_sharing, self.clock_ms, admitted)
        if self.afs.params is not None:
            for key in self.local_queues:
                self.afs.ledger(key, self.clock_ms)
        for name in self.queues:
            self._refresh_order(name)

    def _refresh_order(self, cq_name: str) -> None:
        """Order the queue of ``cq_name`` by LocalQueue usage iff AFS is on and the queue is usage based."""
        entry = self.hierarchy.cluster_queues.get(cq_name)
        usage_based = (self.afs.params is not None and entry is not None and entry.spec is not None
                       and entry.spec.admission_mode == USAGE_BASED)
        self._queue(cq_name).set_by_usage(usage_based)

    def _configuration_changed(self) -> None:
        """Quota, tree or queue settings changed: every set-aside workload gets another chance."""
        self._config_generation += 1
        self.candidate_index.tree_changed()
        self.kept_heaps.clear()
        self.scope_gate.clear(self.ready)
        self.wake_index.clear()
        self.placement.waiting.clear()
        for name in self.waiting:
            self.queues[name].wake_all()
        self.ready.update(self.waiting)
        self.waiting.clear()

    def use_model(self, model: QuotaModel) -> None:
        """Run ``model`` from now on: it receives the tree, every admitted charge and pending demand.
        (The caller marks the configuration changed, which wakes every waiter.)"""
        self.model = model
        self.hierarchy.attach(model)
        self.attach_units(model)
        for cq_name, per_cq in self.admitted.items():
            if cq_name in self.hierarchy.cluster_queues:
                for info in per_cq.values():
                    model.charge(cq_name, info.charge)
        if model.tracks_demand:
            for cq_name, queue in self.queues.items():
                for info in queue.members.values():
                    model.demand(cq_name, info.totals, 1)

    def inactive_reason(self, cq_name: str) -> PendingCondition | None:
        """Why ClusterQueue ``cq_name`` cannot admit now, or ``None``.

        Missing ⇒ ``Misconfigured`` "ClusterQueue X doesn't exist" (Kueue's workload controller
        wording for a LocalQueue pointing at a missing ClusterQueue); stopped, in a cohort cycle or naming
        a missing ResourceFlavor ⇒ ``Suspended`` "ClusterQueue X is inactive" (Kueue ``nominate``).
        """
        cached = self._inactive_cache.get(cq_name)
        if cached is not None and cached[0] == self._config_generation:
            return cached[1]
        entry = self.hierarchy.cluster_queues.get(cq_name)
        result = None
        if entry is None or entry.spec is None:
            result = PendingCondition(MISCONFIGURED, f"ClusterQueue {cq_name} doesn't exist")
        elif (entry.spec.stop_policy != NOT_STOPPED or self.hierarchy.has_cycle(entry.cohort_name)
              or any(f.name not in self.flavors for g in entry.spec.resource_groups for f in g.flavors)):
            result = PendingCondition(SUSPENDED, f"ClusterQueue {cq_name} is inactive")
        self._inactive_cache[cq_name] = (self._config_generation, result)
        return result

    # -- queues ----------------------------------------------------------------------------------

    def _queue(self, name: str) -> ClusterQueueQueue:
        queue = self.queues.get(name)
        if queue is None:
            queue = self.queues[name] = ClusterQueueQueue(name)
        return queue

    def _enqueue(self, info: WorkloadInfo) -> None:
        """Put a pending workload in the queue of its LocalQueue's ClusterQueue, or explain why not."""
        lq = self.local_queues.get(info.local_queue)
        if lq is None:
            info.cluster_queue = None
            info.reason, info.message = MISCONFIGURED, f"LocalQueue {info.obj.queue_name} doesn't exist"
            return
        info.cluster_queue = lq.cluster_queue
        if lq.stop_policy != NOT_STOPPED:
            info.reason, info.message = SUSPENDED, f"LocalQueue {info.obj.queue_name} is inactive"
            return
        if info.reason is None:
            info.reason, info.message = PENDING, f"waiting in ClusterQueue {lq.cluster_queue}"
        queue = self._queue(lq.cluster_queue)
        if self.model.tracks_demand and info.key not in queue.members:
            self.model.demand(queue.name, info.totals, 1)
        queue.push(info)
        self.ready.add(lq.cluster_queue)

    def _dequeue(self, info: WorkloadInfo) -> None:
        if info.cluster_queue is not None:
            queue = self.queues.get(info.cluster_queue)
            if queue is not None:
                self._leave_queue(queue, info)

    def _leave_queue(self, queue: ClusterQueueQueue, info: WorkloadInfo) -> None:
        """Take ``info`` out of ``queue``, reporting the demand that leaves to the quota model; a head
        that blocked the queue leaving lets the next one be tried."""
        if self.model.tracks_demand and info.key in queue.members:
            self.model.demand(queue.name, info.totals, -1)
        if queue.blocked is info:
            self.ready.add(queue.name)
        queue.remove(info)
        if self.placement.waiting:
            self.placement.forget(info.key)

    def _reroute(self, lq_key: str) -> None:
        """Re-place the pending workloads of a LocalQueue after it changed."""
        for info in list(self.by_local_queue.get(lq_key, {}).values()):
            if info.status != ADMITTED:
                self._dequeue(info)
                info.reason = None
                self._enqueue(info)

    def set_aside_all(self, queue: ClusterQueueQueue, reason: PendingCondition) -> None:
        """An inactive ClusterQueue: every pending workload gets its reason and waits for a config change."""
        self.waiting.add(queue.name)
        for info in queue.ordered(self.local_queue_score):
            info.reason, info.message = reason.reason, reason.message
            queue.set_aside(info)
            if queue.blocked is not None:
                break

    # -- workloads -------------------------------------------------------------------------------

    def _apply_workload(self, obj: Workload) -> None:
        info = self.workloads.get(obj.key)
        if info is None or info.status == FINISHED:
            info = self.workloads[obj.key] = WorkloadInfo(obj, self.clock_ms)
        else:
            self._track(info, False)
            if info.status != ADMITTED:
                self._dequeue(info)
            elif info.cluster_queue is not None:
                self.candidate_index.touch(info.cluster_queue)  # its priority may change
            info.set_object(obj)
        self._track(info, True)
        if obj.admission is not None:
            self._observe_admission(info, obj.admission)
        elif info.status != ADMITTED:
            self._enqueue(info)

    def _track(self, info: WorkloadInfo, present: bool) -> None:
        """Keep the per-LocalQueue index of not-finished workloads."""
        if present:
            self.by_local_queue.setdefault(info.local_queue, {})[info.key] = info
        else:
            members = self.by_local_queue.get(info.local_queue)
            if members is not None:
                members.pop(info.key, None)

    def _charge(self, info: WorkloadInfo, cq_name: str, charge: dict) -> None:
        entry = self.hierarchy.cluster_queues.get(cq_name)
        info.cluster_queue = cq_name
        info.charge = charge
        info.status = ADMITTED
        info.admitted_ms = self.clock_ms
        info.reason, info.message = None, ""
        info.preempted_by = info.preemption_reason = None  # Kueue resets Preempted on a new reservation
        self.admitted.setdefault(cq_name, {})[info.key] = info
        self.candidate_index.touch(cq_name)
        self.afs.charged(info.local_queue, info.key, flatten(charge), self.clock_ms,
                         penalize=self._penalized(cq_name))
        if entry is not None:
            self.model.charge(cq_name, charge)

    def _release(self, info: WorkloadInfo) -> None:
        """Give back the quota (and nodes) an admitted workload holds; wake whoever that may help (a
        victim's preemptor first, then who waits for nodes)."""
        if info.nodes:
            self.wake(self.placement.release(self.nodes, info))
        cq_name = info.cluster_queue
        charge = info.charge
        info.charge = {}
        info.assignment = None
        if info.preempted_by is not None:
            preemptor = self.workloads.get(info.preempted_by)
            if preemptor is not None and preemptor.status != ADMITTED:
                self.wake([preemptor])
        if cq_name is None:
            return
        self.afs.released(info.local_queue, info.key, flatten(charge), self.clock_ms)
        self.admitted.get(cq_name, {}).pop(info.key, None)
        self.candidate_index.touch(cq_name)
        entry = self.hierarchy.cluster_queues.get(cq_name)
        if entry is None:
            return
        model = self.model
        model.release(cq_name, charge)
        self.wake(self.wake_index.release(model, cq_name, charge))
        if entry.spec is None:
            self.hierarchy.collect_cluster_queue(cq_name)

    def wake(self, infos: list[WorkloadInfo]) -> None:
        """Return woken workloads to contention.  In a queue ordered by AFS with several LocalQueues
        the first set-aside workload of every LocalQueue returns too, so the queue's own order —
        LocalQueue usage first — picks who uses the quota, as after Kueue's requeue of every
        inadmissible workload (workloads behind a LocalQueue's first one come back through their own
        wake-up conditions).  That happens once per queue per event: a LocalQueue head that did not
        fit then waits for the next release like everyone else."""
        for info in infos:
            queue = self.queues.get(info.cluster_queue) if info.cluster_queue else None
            if queue is None:
                continue
            woke = queue.wake(info)
            if queue.usage_ordered() and queue.name not in self._heads_woken:
                self._heads_woken.add(queue.name)
                woke = queue.wake_local_queue_heads() or woke
            if woke:
                self.ready.add(queue.name)

    def configure_pod_nodes(self) -> bool:
        """Give the unit models' pod placement the configuration's node order and whether it is on
        (``spec.placement.enable`` not ``false``); whether being on changed."""
        placement = self.config.placement
        pods = self.pod_nodes
        pods.node_order = placement.node_order if placement is not None else BINPACK
        enabled = placement is None or placement.enable is not False
        changed = enabled != pods.enabled
        pods.enabled = enabled
        return changed

    def placing(self) -> bool:
        """Whether admissions of this cluster go through the placement stage
        (``EngineConfig.spec.placement.enable`` on the ``kueue`` model)."""
        placement = self.config.placement
        return placement is not None and placement.enable is True and self.units is None

    def place(self, info: WorkloadInfo, assignment: Assignment) -> list[PodSetAssignment] | None:
        """Place a head whose quota fits (``statemodel.placement.stage``): its podSet assignments with
        nodes, or ``None`` with ``info`` pending ``TopologyPlacementFailed`` and the
        ``PlacementFailure`` as its message."""
        placement = self.config.placement
        order = placement.node_order if placement is not None else BINPACK
        result = self.placement.place(self.nodes, order, info, assignment.pod_sets, self.flavors)
        if isinstance(result, PlacementFailure):
            info.reason, info.message = TOPOLOGY_PLACEMENT_FAILED, result
            return None
        return result

    def admit(self, info: WorkloadInfo, entry: ClusterQueueEntry, queue: ClusterQueueQueue,
              assignment: Assignment, pod_sets: list[PodSetAssignment] | None = None) -> None:
        """Admit a head with its flavor assignment (``pod_sets``: the same with nodes, when placed):
        charge quota and emit ``Admitted``."""
        self._leave_queue(queue, info)
        placed = assignment.pod_sets if pod_sets is None else pod_sets
        info.assignment = placed
        info.borrowing = assignment.borrowing
        info.observed = None
        self._charge(info, entry.name, assignment.usage)
        self._decide(DECISION_ADMITTED, info.key, entry.name, pod_sets=placed, borrowing=assignment.borrowing)

    def _evict_from_node(self, name: str) -> None:
        """Node ``name`` is gone or cordoned: every admitted workload with pods there is evicted
        (``Evicted``, Kueue's ``NodeFailures`` reason and message) and goes back to its queue; so does
        every pod of a unit model bound there (``UnitModel.node_lost``)."""
        message = NODE_FAILURES_MESSAGE.format(nodes=name)
        if self.units is not None:
            pods = self.pod_nodes.pods_on(name)
            if pods:
                self._unit_decisions(self.units.node_lost(pods, message))
        for key in self.nodes.holders(name):
            info = self.workloads.get(key)
            if info is None or info.status != ADMITTED:
                continue
            cq_name = info.cluster_queue
            self._release(info)
            self._decide(EVICTED, key, cq_name, reason=NODE_FAILURES, message=message)
            self._requeue_after_eviction(info, f"Evicted: {message}")

    def _observe_admission(self, info: WorkloadInfo, admission: Admission) -> None:
        """Charge an admission observed in a real cluster exactly as given; record whether we agree."""
        placing = self.placing()
        pod_sets = [PodSetAssignment(p.name, p.count, dict(p.flavors), dict(p.resource_usage), None,
                                     list(p.nodes) if placing and p.nodes else None)
                    for p in admission.pod_set_assignments]
        charge: dict = {}
        for ps in pod_sets:
            for res, amount in ps.usage.items():
                fr = (ps.flavors.get(res, ""), res)
                charge[fr] = charge.get(fr, 0) + amount
        if info.status == ADMITTED:
            if info.observed is None:  # the engine had admitted it: same queue and flavors?
                agrees = info.cluster_queue == admission.cluster_queue and info.charge == charge
            else:  # a repeated observation keeps the verdict of the first one
                agrees = info.observed
            self._release(info)
        else:
            self._dequeue(info)
            entry = self.hierarchy.cluster_queues.get(admission.cluster_queue)
            agrees = (entry is not None and self.inactive_reason(admission.cluster_queue) is None
                      and self.model.fits(admission.cluster_queue, charge))
        info.assignment = pod_sets
        info.borrowing = 0
        self._charge(info, admission.cluster_queue, charge)
        info.observed = agrees
        if placing:
            self.placement.charge(self.nodes, info, [(p.name, p.nodes) for p in admission.pod_set_assignments
                                                     if p.nodes])

    def _requeue_after_eviction(self, info: WorkloadInfo, message: str) -> None:
        """Back to its queue after an eviction: ``PendingEvaluation`` with ``message``; its queue order
        (creation time) is kept."""
        info.status = WorkloadStatus.PENDING
        info.observed = None
        info.admitted_ms = None
        info.victims = []
        info.queued_ms = self.clock_ms
        info.reason, info.message = PENDING_EVALUATION, message
        self._enqueue(info)

    def _drain(self, infos: list[WorkloadInfo], reason: str, message: str) -> None:
        """Evict admitted workloads of a stopped queue (``HoldAndDrain``), in admission-key order."""
        for info in sorted(infos, key=lambda i: i.key):
            cq_name = info.cluster_queue
            self._release(info)
            self._decide(EVICTED, info.key, cq_name, reason=reason, message=message)
            self._requeue_after_eviction(info, f"Evicted: {reason}")

    # -- preemption --------------------------------------------------------------------------

    def releases_on_decision(self) -> bool:
        """Whether a victim's quota is freed at its ``Preempted`` decision (``releaseOn: Decision``)."""
        return self.config.preemption_release_on == RELEASE_ON_DECISION

    def preemption_search(self, ctx: PreemptionContext) -> list[Target]:
        """The victim search this cluster runs: fair-sharing preemption (Kueue ``fairPreemptions``,
        ``statemodel.preemption.fair_sharing``) when fair sharing is on, else classical preemption
        (Kueue ``classicalPreemptions``).  With admission fair sharing on, candidates of a usage-based
        ClusterQueue are ordered by their LocalQueue's usage (``candidates.by_local_queue_usage``)."""
        ctx.index = self.candidate_index
        if self.afs.params is not None:
            ctx.local_queue_usage = self.local_queue_fs_usage
        config = self.config
        if config.fair_sharing_enable:
            return fair_sharing.find_targets(ctx, config.preemption_strategies or DEFAULT_STRATEGIES,
                                             self.hierarchy.fair_weight, self.kept_heaps)
        return find_targets(ctx)

    def local_queue_fs_usage(self, info: WorkloadInfo) -> Decimal | None:
        """Kueue ``LocalQueueFSUsage`` of an admitted workload: its LocalQueue's AFS score when its
        ClusterQueue is usage based (``spec.admissionScope``), else ``None``."""
        entry = self.hierarchy.cluster_queues.get(info.cluster_queue or "")
        if entry is None or entry.spec is None or entry.spec.admission_mode != USAGE_BASED:
            return None
        return self.local_queue_score(info.local_queue)

    def preempt(self, preemptor: WorkloadInfo, preemptor_cq: str, targets: list[Target], numbers: str) -> None:
        """Issue the preemptions of ``preemptor`` (queued in ``preemptor_cq``): a ``Preempted`` decision
        per victim not already evicting (a victim awaiting its eviction is never preempted twice),
        in the search's order; with ``releaseOn: Decision`` each victim's quota is released and it
        goes back to its queue at once — and is no victim again in the same step
        (``WorkloadInfo.preempted_in_step``), which bounds a step's preemptions by its workloads: a
        ring of workloads each able to preempt the next (shares level) would otherwise preempt in a
        circle forever within one step, where Kueue's evictions and requeues take time.
        ``numbers``: what made the preemption necessary (``preemptor.shortage``), appended to each
        message."""
        release_now = self.releases_on_decision()
        preemptor.victims = [t.info.key for t in targets]
        for t in targets:
            victim = t.info
            if victim.evicting:
                continue
            message = preemption_message(self.model, preemptor, preemptor_cq, t, numbers)
            victim.preempted_by = preemptor.key
            victim.preemption_reason = t.reason
            self.candidate_index.touch(t.cluster_queue)  # evicting now
            self._decide(PREEMPTED, victim.key, t.cluster_queue, preemptor=preemptor.key, reason=t.reason,
                         message=message, preemptor_cluster_queue=preemptor_cq)
            if release_now:
                self._release(victim)
                self._requeue_after_eviction(victim, message)
                victim.preempted_in_step = True
                self.preempted_in_step.append(victim.key)

    def _finish(self, key: str | None) -> None:
        info = self.workloads.get(key) if key is not None else None
        if info is None or info.status == FINISHED:
            return
        self._leave(info)
        info.status = FINISHED
        info.reason, info.message = None, ""

    def _leave(self, info: WorkloadInfo) -> None:
        """The workload is gone (finished or deleted): release quota or leave its queue."""
        if info.status == ADMITTED:
            self._release(info)
        else:
            self._dequeue(info)
        self._track(info, False)

    # -- admission fair sharing --------------------------------------------------------------

    def local_queue_score(self, lq_key: str) -> Decimal:
        """AFS score of a LocalQueue now (its weight applies; a missing LocalQueue weighs 1)."""
        lq = self.local_queues.get(lq_key)
        return self.afs.local_queue_score(lq_key, lq.fair_weight_milli if lq is not None else 1000, self.clock_ms)

    def local_queues_of(self, cq_name: str) -> list[str]:
        """Keys of the LocalQueues feeding ``cq_name``, sorted (cached per configuration)."""
        generation, by_cq = self._lqs_by_cq
        if generation != self._config_generation:
            by_cq = {}
            for key in sorted(self.local_queues):
                by_cq.setdefault(self.local_queues[key].cluster_queue, []).append(key)
            self._lqs_by_cq = (self._config_generation, by_cq)
        return by_cq.get(cq_name, [])

    def cluster_queue_score(self, cq_name: str) -> Decimal:
        """AFS score of a ClusterQueue: its LocalQueues' consumed usage, with its own weight."""
        entry = self.hierarchy.cluster_queues.get(cq_name)
        weight = entry.spec.fair_weight_milli if entry is not None and entry.spec is not None else 1000
        return self.afs.score(self.local_queues_of(cq_name), weight, self.clock_ms)

    def admission_scope(self, cq_name: str) -> str | None:
        """The topmost Cohort above ``cq_name`` with an admissionScope, if that scope is usage based
        (KEP-4136: with two scopes on the path the higher one is used, even when it turns fair
        sharing off), else ``None``; only while AFS is configured."""
        if self.afs.params is None:
            return None
        cached = self._scope_cache.get(cq_name)
        if cached is not None and cached[0] == self._config_generation:
            return cached[1]
        scope = None
        entry = self.hierarchy.cluster_queues.get(cq_name)
        name = entry.cohort_name if entry is not None else None
        seen: set[str] = set()
        while name is not None and name not in seen:
            seen.add(name)
            cohort = self.hierarchy.cohorts.get(name)
            if cohort is None:
                break
            if cohort.spec is not None and cohort.spec.admission_mode is not None:
                scope = name if cohort.spec.admission_mode == USAGE_BASED else None
            name = cohort.parent_name
        self._scope_cache[cq_name] = (self._config_generation, scope)
        return scope

    def has_admission_scopes(self) -> bool:
        """Whether AFS is on and some Cohort declares an admissionScope (cached per configuration)."""
        if self.afs.params is None:
            return False
        generation, present = self._scopes_present
        if generation != self._config_generation:
            present = any(c.spec is not None and c.spec.admission_mode is not None
                          for c in self.hierarchy.cohorts.values())
            self._scopes_present = (self._config_generation, present)
        return present

    def _penalized(self, cq_name: str) -> bool:
        """Whether admissions in ``cq_name`` carry the entry penalty (usage-based queue or scope)."""
        if self.afs.params is None:
            return False
        entry = self.hierarchy.cluster_queues.get(cq_name)
        return ((entry is not None and entry.spec is not None and entry.spec.admission_mode == USAGE_BASED)
                or (self.has_admission_scopes() and self.admission_scope(cq_name) is not None))

    def _sampling_instants_until(self, time_ms: int) -> None:
        """Run admission at every sampling instant before ``time_ms`` while a StrictFIFO queue ordered
        by AFS is blocked: the order can change at an instant (usage is sampled, penalties end), and
        Kueue would retry the new head then — not whenever the next event happens to arrive, so
        ``Tick`` events change nothing.  Decisions made there carry the instant's time.
        (BestEffortFIFO heads that did not fit wait for released quota, which only events bring.)"""
        params = self.afs.params
        if params is None or not self.waiting:
            return
        instant = (self.clock_ms // params.interval_ms + 1) * params.interval_ms
        while instant <= time_ms:
            blocked = [name for name in sorted(self.waiting)
                       if self.queues[name].by_usage and self.queues[name].blocked is not None]
            if not blocked:
                return
            self.clock_ms = instant
            for name in blocked:
                self.queues[name].blocked = None
            self.ready.update(blocked)
            run_cycles(self)
            instant += params.interval_ms

    def _decide(self, kind: DecisionType, workload: str, cluster_queue: str | None,
                pod_sets: list[PodSetAssignment] | None = None, borrowing: int = 0,
                reason: str | None = None, message: str | None = None, preemptor: str | None = None,
                preemptor_cluster_queue: str | None = None) -> None:
        """Record a decision of the current event, numbered next in this cluster, at the current clock."""
        self.seq += 1
        self.decisions.append(Decision(self.seq, self._cause, self.clock_ms, self.name, kind, workload, cluster_queue,
                                       pod_sets, borrowing, preemptor, reason, message, preemptor_cluster_queue))
