"""Typed, frozen values for the Kubernetes-shaped objects of EVENTS.md v1.

Every quantity is an integer in base units (``cpu`` in millicores, every other
resource in bytes or counts); times are integer milliseconds since the Unix
epoch.  These classes carry no behaviour: the parsers of ``statemodel.events`` build them from
JSON and the reducer reads them.  Field names follow Kueue v1beta2
(``apis/kueue/v1beta2``), snake-cased.

Policies are ``StrEnum``s whose values are the API's own strings, so JSON, SQL and the hash chain
see exactly the text of the object; a member compares equal to its string.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

FlavorResource = tuple[str, ...]
"""A ``(flavor, resource)`` pair: the unit of all capacity arithmetic (Kueue ``FlavorResource``).
Always two strings; typed as a tuple of any length only so that mypyc keeps it as the tuple object
(it stores a ``tuple[str, str]`` unboxed, as two fields, and builds a new tuple object every time one
is used as a dict key: the shared pairs of ``flavor_resource`` would be lost in the compiled
modules, and every lookup would hash and compare a fresh tuple)."""

_FLAVOR_RESOURCES: dict[FlavorResource, FlavorResource] = {}
"""Memo of :func:`flavor_resource`: each pair seen, as the one tuple handed out for it (bounded;
cleared when full)."""
_FLAVOR_RESOURCES_MAX = 65536


def flavor_resource(flavor: str, resource: str) -> FlavorResource:
    """The pair ``(flavor, resource)``, the same tuple object for equal pairs while the bounded memo
    holds it.  The quota model keys its per-node numbers, and workloads their charges, by these
    pairs; a dict lookup with the very object the dict stores as key skips comparing the two tuples
    item by item, which otherwise dominates the cost of the quota arithmetic.  Only identity differs
    from a fresh tuple: equality, hashing and order, and so every answer, are those of the plain
    tuple (after the memo is cleared, lookups are merely slower)."""
    key = (flavor, resource)
    got = _FLAVOR_RESOURCES.get(key)
    if got is None:
        if len(_FLAVOR_RESOURCES) >= _FLAVOR_RESOURCES_MAX:
            _FLAVOR_RESOURCES.clear()
        got = _FLAVOR_RESOURCES[key] = key
    return got


class QueueingStrategy(StrEnum):
    """``ClusterQueue.spec.queueingStrategy`` (Kueue ``QueueingStrategy``)."""

    BEST_EFFORT_FIFO = "BestEffortFIFO"
    STRICT_FIFO = "StrictFIFO"


class StopPolicy(StrEnum):
    """``spec.stopPolicy`` of a ClusterQueue or LocalQueue (Kueue ``StopPolicy``)."""

    NONE = "None"
    HOLD = "Hold"
    HOLD_AND_DRAIN = "HoldAndDrain"


class PreemptionPolicy(StrEnum):
    """``spec.preemption.withinClusterQueue`` / ``reclaimWithinCohort`` (Kueue ``PreemptionPolicy``).

    ``withinClusterQueue`` takes Never, LowerPriority or LowerOrNewerEqualPriority;
    ``reclaimWithinCohort`` takes Never, LowerPriority or Any.
    """

    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"
    LOWER_OR_NEWER_EQUAL_PRIORITY = "LowerOrNewerEqualPriority"
    ANY = "Any"


class BorrowWithinCohortPolicy(StrEnum):
    """``spec.preemption.borrowWithinCohort.policy`` (Kueue ``BorrowWithinCohortPolicy``)."""

    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"


class FlavorFungibilityPolicy(StrEnum):
    """``spec.flavorFungibility.whenCanBorrow`` / ``whenCanPreempt`` (v1beta2 values)."""

    MAY_STOP_SEARCH = "MayStopSearch"
    TRY_NEXT_FLAVOR = "TryNextFlavor"


class FlavorFungibilityPreference(StrEnum):
    """``spec.flavorFungibility.preference``."""

    BORROWING_OVER_PREEMPTION = "BorrowingOverPreemption"
    PREEMPTION_OVER_BORROWING = "PreemptionOverBorrowing"


class AdmissionMode(StrEnum):
    """``spec.admissionScope.admissionMode`` of a ClusterQueue or Cohort (KEP-4136)."""

    USAGE_BASED_ADMISSION_FAIR_SHARING = "UsageBasedAdmissionFairSharing"
    NO_ADMISSION_FAIR_SHARING = "NoAdmissionFairSharing"


class TaintEffect(StrEnum):
    """Core ``v1`` ``TaintEffect``."""

    NO_SCHEDULE = "NoSchedule"
    PREFER_NO_SCHEDULE = "PreferNoSchedule"
    NO_EXECUTE = "NoExecute"


class FairSharingPreemptionStrategy(StrEnum):
    """``EngineConfig.spec.fairSharing.preemptionStrategies`` entries (Kueue ``PreemptionStrategy``)."""

    LESS_THAN_OR_EQUAL_TO_FINAL_SHARE = "LessThanOrEqualToFinalShare"
    LESS_THAN_INITIAL_SHARE = "LessThanInitialShare"


class PreemptionReleaseOn(StrEnum):
    """``EngineConfig.spec.preemption.releaseOn``: when a preempted workload's quota is freed.

    ``Decision`` (default): at the ``Preempted`` decision (a simulation has no job controller);
    ``Eviction``: as in Kueue, when the victim's ``WorkloadEvicted`` / ``WorkloadFinished`` is observed.
    """

    DECISION = "Decision"
    EVICTION = "Eviction"


@dataclass(frozen=True, slots=True)
class ResourceQuota:
    """Quota of one resource in one flavor; ``None`` limits mean "no limit" (Kueue ``ResourceQuota``)."""

    name: str
    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass(frozen=True, slots=True)
class FlavorQuotas:
    """One flavor of a resource group with its per-resource quotas, in spec order."""

    name: str
    resources: tuple[ResourceQuota, ...]


@dataclass(frozen=True, slots=True)
class ResourceGroup:
    """Kueue ``ResourceGroup``: resources that share one flavor choice; flavors in try order."""

    covered_resources: tuple[str, ...]
    flavors: tuple[FlavorQuotas, ...]


@dataclass(frozen=True, slots=True)
class ResourceFlavor:
    """Kueue ``ResourceFlavor``: ``node_labels`` as sorted ``(key, value)`` pairs; ``topology_name``
    is ``spec.topologyName`` (the ``Topology`` whose domains placement uses for pod sets assigned
    this flavor; ``None`` = none); ``node_taints`` is ``spec.nodeTaints`` (a pod set that does not
    tolerate a ``NoSchedule`` / ``NoExecute`` one cannot be assigned the flavor) and
    ``tolerations`` is ``spec.tolerations`` (added to the pods of a pod set assigned the flavor),
    both in spec order."""

    name: str
    node_labels: tuple[tuple[str, str], ...] = ()
    topology_name: str | None = None
    node_taints: tuple[Taint, ...] = ()
    tolerations: tuple[Toleration, ...] = ()


@dataclass(frozen=True, slots=True)
class Topology:
    """A ``kai.scheduler/v1alpha1`` or ``kueue.x-k8s.io/v1alpha1`` ``Topology``: ``levels`` are the
    node labels of ``spec.levels[].nodeLabel``, top level first (reference/kai.md §1)."""

    name: str
    levels: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class NodeSelectorRequirement:
    """One ``matchExpressions`` entry of a required node-affinity term: ``operator`` is ``In``,
    ``NotIn``, ``Exists`` or ``DoesNotExist``; ``values`` sorted (empty for the last two)."""

    key: str
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Toleration:
    """A pod ``Toleration``: ``operator`` ``Equal`` (default) or ``Exists``; empty ``key`` with
    ``Exists`` tolerates every taint; empty ``effect`` matches every effect."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""


@dataclass(frozen=True, slots=True)
class PodSetPlacement:
    """What placement reads of one podSet (its name is ``pod_set``): the pod template's
    ``nodeSelector`` (sorted pairs), its required node affinity (``nodeSelectorTerms``: a node
    matches if it matches any term, a term if it matches all its requirements; ``()`` = no
    affinity), ``tolerations``, Kueue's ``topologyRequest`` (``required`` / ``preferred`` level
    label, ``unconstrained``, ``pod_set_group_name``, and ``slice_required`` / ``slice_size``:
    ``podSetSliceRequiredTopology`` / ``podSetSliceSize``), and ``sub_group``: the KAI sub-group
    its pods select (the pod template's ``kai.scheduler/subgroup-name`` label).  ``None`` fields
    are absent."""

    pod_set: str
    node_selector: tuple[tuple[str, str], ...] = ()
    affinity: tuple[tuple[NodeSelectorRequirement, ...], ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    required: str | None = None
    preferred: str | None = None
    unconstrained: bool = False
    pod_set_group_name: str | None = None
    slice_required: str | None = None
    slice_size: int | None = None
    sub_group: str | None = None


@dataclass(frozen=True, slots=True)
class SubGroup:
    """One KAI PodGroup ``spec.subGroups[]`` entry (``pkg/apis/scheduling/v2alpha2``
    ``SubGroup``): ``name``, ``min_member``, ``parent`` (``None`` = under the root) and its
    ``topologyConstraint`` (``topology`` name, ``required`` / ``preferred`` level labels; ``None``
    = absent; a level without a topology name uses the Workload's ``kai.scheduler/topology``)."""

    name: str
    min_member: int = 0
    parent: str | None = None
    topology: str | None = None
    required: str | None = None
    preferred: str | None = None


@dataclass(frozen=True, slots=True)
class PlacementRequest:
    """A Workload's placement constraints: KAI's ``kai.scheduler/topology``,
    ``kai.scheduler/topology-required-placement`` and ``kai.scheduler/topology-preferred-placement``
    annotations (the constraint of the whole gang, reference/kai.md §1), one ``PodSetPlacement``
    per podSet that carries any constraint, and KAI's sub-groups (the ``kai.scheduler/subgroups``
    annotation, in its order)."""

    topology: str | None = None
    required: str | None = None
    preferred: str | None = None
    pod_sets: tuple[PodSetPlacement, ...] = ()
    sub_groups: tuple[SubGroup, ...] = ()


@dataclass(frozen=True, slots=True)
class Cohort:
    """Kueue ``Cohort`` (KEP-79): an inner node of the quota tree.

    ``fair_weight_milli`` is ``spec.fairSharing.weight`` × 1000 (default 1000).  ``admission_mode`` is
    ``spec.admissionScope.admissionMode`` — KEP-4136's cohort-level admission scope (an addition to
    EVENTS.md v1; Kueue has not implemented it).
    """

    name: str
    parent: str | None = None
    resource_groups: tuple[ResourceGroup, ...] = ()
    fair_weight_milli: int = 1000
    admission_mode: AdmissionMode | None = None


@dataclass(frozen=True, slots=True)
class Preemption:
    """``ClusterQueue.spec.preemption`` with Kueue's defaults."""

    within_cluster_queue: PreemptionPolicy = PreemptionPolicy.NEVER
    reclaim_within_cohort: PreemptionPolicy = PreemptionPolicy.NEVER
    borrow_within_cohort_policy: BorrowWithinCohortPolicy = BorrowWithinCohortPolicy.NEVER
    borrow_within_cohort_max_priority_threshold: int | None = None


@dataclass(frozen=True, slots=True)
class FlavorFungibility:
    """``ClusterQueue.spec.flavorFungibility`` (v1beta2 values; v1beta1 ``Borrow``/``Preempt`` map to ``MayStopSearch``)."""

    when_can_borrow: FlavorFungibilityPolicy = FlavorFungibilityPolicy.MAY_STOP_SEARCH
    when_can_preempt: FlavorFungibilityPolicy = FlavorFungibilityPolicy.TRY_NEXT_FLAVOR
    preference: FlavorFungibilityPreference | None = None


@dataclass(frozen=True, slots=True)
class ClusterQueue:
    """Kueue ``ClusterQueue``: a leaf of the quota tree that admits workloads."""

    name: str
    cohort: str | None = None
    resource_groups: tuple[ResourceGroup, ...] = ()
    queueing_strategy: QueueingStrategy = QueueingStrategy.BEST_EFFORT_FIFO
    preemption: Preemption = Preemption()
    flavor_fungibility: FlavorFungibility = FlavorFungibility()
    fair_weight_milli: int = 1000
    admission_mode: AdmissionMode | None = None
    stop_policy: StopPolicy = StopPolicy.NONE


@dataclass(frozen=True, slots=True)
class AdmissionFairSharingStatus:
    """Persisted ``LocalQueue.status.fairSharing.admissionFairSharingStatus``: consumed per resource in base units."""

    consumed_resources: tuple[tuple[str, int], ...]
    last_update_ms: int


@dataclass(frozen=True, slots=True)
class LocalQueue:
    """Kueue ``LocalQueue``: a namespaced entry point that feeds one ClusterQueue."""

    namespace: str
    name: str
    cluster_queue: str
    fair_weight_milli: int = 1000
    stop_policy: StopPolicy = StopPolicy.NONE
    afs_status: AdmissionFairSharingStatus | None = None

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class PodSet:
    """One podSet: ``requests`` is the effective per-pod request, sorted ``(resource, amount)`` in base units."""

    name: str
    count: int
    requests: tuple[tuple[str, int], ...]
    min_count: int | None = None


@dataclass(frozen=True, slots=True)
class PodSetAssignment:
    """One entry of Kueue ``status.admission.podSetAssignments``; ``resource_usage`` is the podSet total.
    ``nodes``: the pods per node named by its ``topologyAssignment`` (sorted ``(node, count)``; only
    when the assignment's last level is ``kubernetes.io/hostname``)."""

    name: str
    flavors: tuple[tuple[str, str], ...]
    resource_usage: tuple[tuple[str, int], ...]
    count: int
    nodes: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class Admission:
    """Kueue ``status.admission``: where and with which flavors a workload holds quota."""

    cluster_queue: str
    pod_set_assignments: tuple[PodSetAssignment, ...]


@dataclass(frozen=True, slots=True)
class Workload:
    """Kueue ``Workload``.  ``uid`` defaults to the key; ``creation_ms`` to the event time."""

    namespace: str
    name: str
    uid: str
    creation_ms: int
    queue_name: str
    priority: int
    pod_sets: tuple[PodSet, ...]
    admission: Admission | None = None
    placement: PlacementRequest | None = None

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class Taint:
    """A core ``Node`` taint."""

    key: str
    value: str
    effect: TaintEffect


@dataclass(frozen=True, slots=True)
class Node:
    """Core ``v1`` ``Node``: labels and allocatable (base units) sorted by name."""

    name: str
    labels: tuple[tuple[str, str], ...] = ()
    allocatable: tuple[tuple[str, int], ...] = ()
    unschedulable: bool = False
    taints: tuple[Taint, ...] = ()


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """``quotaledger.io/v1alpha1`` ``EngineConfig``: Kueue Configuration fields, durations in ms.

    ``admission_fair_sharing`` is ``None`` when the section is absent (AFS off, as Kueue's ``afs.Enabled``).
    ``quota_model`` is ``spec.quotaModel`` (default ``kueue``), the name of the cluster's quota model
    in ``statemodel.quota.registry``.  ``preemption_release_on`` is ``spec.preemption.releaseOn``
    (default ``Decision``); ``koordinator`` is ``spec.koordinator`` (the ``koordinator`` model's plugin
    arguments, ``None`` = upstream defaults); ``volcano`` is ``spec.volcano`` (the ``volcano`` model's
    plugin and its arguments, ``None`` = ``proportion``).  New fields go last, so a snapshot written before a field
    existed (fewer positional values) restores with its default.
    """

    admission_fair_sharing: "AdmissionFairSharingConfig | None" = None
    fair_sharing_enable: bool = False
    preemption_strategies: tuple[FairSharingPreemptionStrategy, ...] = ()
    quota_model: str = "kueue"
    preemption_release_on: PreemptionReleaseOn = PreemptionReleaseOn.DECISION
    koordinator: "ElasticQuotaArgs | None" = None
    volcano: "VolcanoArgs | None" = None
    placement: "PlacementConfig | None" = None


@dataclass(frozen=True, slots=True)
class PlacementConfig:
    """``EngineConfig.spec.placement``: ``enable`` turns the placement stage on for the ``kueue``
    model (``None``, not given: off); the pod-scheduling models (``koordinator``, ``volcano``) place
    whenever the cluster has a Node unless it is ``False`` (docs/placement.md); ``node_order`` is
    ``binpack`` (default, as KAI's default placement strategy) or ``spread``."""

    enable: bool | None = None
    node_order: str = "binpack"


@dataclass(frozen=True, slots=True)
class AdmissionFairSharingConfig:
    """Kueue ``AdmissionFairSharing`` config; ``resource_weights_milli`` = weight × 1000 per resource.

    ``reset_inactivity_period_ms`` is KEP-4136's ``resetInactivityPeriod`` (0 = never reset), an
    addition to EVENTS.md v1.
    """

    usage_half_life_ms: int = 0
    usage_sampling_interval_ms: int = 300_000
    resource_weights_milli: tuple[tuple[str, int], ...] = ()
    reset_inactivity_period_ms: int = 0


GROUP_MAX_DEFAULT = (("cpu", (2**63 - 1) // 5), ("memory", (2**63 - 1) // 5))
"""Upstream ``DefaultQuotaGroupMax`` / ``SystemQuotaGroupMax``: ``MaxInt64/5`` of cpu and memory
(here in base units: millicores and bytes)."""


@dataclass(frozen=True, slots=True)
class ElasticQuotaArgs:
    """Koordinator ``ElasticQuotaArgs`` that change semantics (``spec.koordinator`` of an
    ``EngineConfig``), with the upstream defaults (reference/koordinator.md §12); durations in ms,
    group maxima as sorted ``(resource, amount)`` pairs in base units.

    ``guarantee_usage`` is the feature gate ``ElasticQuotaGuaranteeUsage`` (default off).
    ``revoke_pod_interval_ms``: the overuse monitor's period (``revokePodInterval``, default 1 s),
    on event time (docs/koordinator.md, "Recycling").
    """

    delay_evict_time_ms: int = 120_000
    monitor_all_quotas: bool = False
    enable_check_parent_quota: bool = False
    enable_runtime_quota: bool = True
    enable_min_quota_scale: bool = True
    disable_default_quota_preemption: bool = True
    default_quota_group_max: tuple[tuple[str, int], ...] = GROUP_MAX_DEFAULT
    system_quota_group_max: tuple[tuple[str, int], ...] = GROUP_MAX_DEFAULT
    guarantee_usage: bool = False
    revoke_pod_interval_ms: int = 1000


@dataclass(frozen=True, slots=True)
class ElasticQuota:
    """Koordinator ``scheduling.sigs.k8s.io/v1alpha1`` ``ElasticQuota`` with its
    ``quota.scheduling.koordinator.sh/*`` labels and annotations (reference/koordinator.md §1).

    ``min`` / ``max`` / ``shared_weight``: sorted ``(resource, amount)`` pairs in base units;
    ``shared_weight`` is ``None`` when the annotation is missing or all zero (the model then uses
    ``max``).  ``parent``: the parent quota's name (``koordinator-root-quota`` when unset).
    ``namespaces``: the ``namespaces`` annotation (sorted).  ``allow_force_update`` skips the
    min-sum checks of the webhook.
    """

    name: str
    namespace: str
    min: tuple[tuple[str, int], ...]
    max: tuple[tuple[str, int], ...]
    parent: str
    is_parent: bool
    allow_lent_resource: bool
    shared_weight: tuple[tuple[str, int], ...] | None
    namespaces: tuple[str, ...] = ()
    allow_force_update: bool = False


@dataclass(frozen=True, slots=True)
class Pod:
    """Core ``v1`` ``Pod``, read as a unit of admission: one podSet of count 1 (model neutral).

    ``requests``: the effective per-pod request (Kubernetes ``PodRequests``: init containers,
    sidecars, overhead), sorted ``(resource, amount)`` in base units; a resource a container names
    with 0 is kept (upstream's ``ResourceList`` keeps the key, which quota masking reads).  ``priority``:
    ``spec.priority`` (default 0).  ``creation_ms``: ``metadata.creationTimestamp`` (default: event
    time).  ``node_name``: ``spec.nodeName`` (``None`` = not bound).  ``phase``: ``status.phase``
    (default ``Pending``).  ``preemption_policy``: ``spec.preemptionPolicy``
    (``PreemptLowerPriority`` or ``Never``).  ``labels`` / ``annotations``: sorted pairs.
    ``placement``: what the pod-scheduling models' placement reads (``None`` = nothing): one
    ``PodSetPlacement`` named ``main`` with the pod's ``spec.nodeSelector``, required node
    affinity and ``spec.tolerations``, and KAI's topology annotations as the gang's constraint.
    """

    namespace: str
    name: str
    uid: str
    creation_ms: int
    priority: int
    requests: tuple[tuple[str, int], ...]
    labels: tuple[tuple[str, str], ...] = ()
    annotations: tuple[tuple[str, str], ...] = ()
    node_name: str | None = None
    phase: str = "Pending"
    preemption_policy: str = "PreemptLowerPriority"
    placement: PlacementRequest | None = None

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class VolcanoArgs:
    """The ``volcano`` model's scheduler configuration (``spec.volcano`` of an ``EngineConfig``):
    the quota plugin of the tier (``proportion``, upstream's default, or ``capacity``) and the
    ``capacity`` plugin's arguments that change semantics (reference/volcano.md §2-3):
    ``enabled_hierarchy`` (the tier's ``enabledHierarchy``) and ``ancestor_reclaim_level``
    (``ancestorReclaimLevel``, default 0)."""

    plugin: str = "proportion"
    enabled_hierarchy: bool = False
    ancestor_reclaim_level: int = 0


@dataclass(frozen=True, slots=True)
class Queue:
    """Volcano ``scheduling.volcano.sh/v1beta1`` ``Queue`` (reference/volcano.md, fields used).

    ``parent``: ``spec.parent`` (``root`` when empty, as the queue controller patches it).
    ``weight``: ``spec.weight`` (default 1).  ``capability`` / ``guarantee`` (``spec.guarantee.resource``)
    / ``deserved``: sorted ``(resource, amount)`` pairs in base units.  ``reclaimable``:
    ``spec.reclaimable`` (default true).  ``priority``: ``spec.priority`` (default 0).  ``state``:
    ``status.state`` (``Open`` default, ``Closed``, ``Closing``, ``Unknown``).  ``creation_ms``:
    ``metadata.creationTimestamp`` (default: event time), the session's tie-break.
    """

    name: str
    parent: str
    weight: int
    capability: tuple[tuple[str, int], ...]
    guarantee: tuple[tuple[str, int], ...]
    deserved: tuple[tuple[str, int], ...]
    reclaimable: bool
    priority: int
    state: str
    creation_ms: int


@dataclass(frozen=True, slots=True)
class PodGroup:
    """Volcano ``scheduling.volcano.sh/v1beta1`` ``PodGroup``: the gang that is admitted.

    ``queue``: ``spec.queue`` (default ``default``).  ``min_member``: ``spec.minMember`` (default 1).
    ``min_resources``: ``spec.minResources`` as sorted pairs in base units, ``None`` when absent
    (upstream then permits enqueueing without a quota check).  ``priority_class_name``:
    ``spec.priorityClassName`` (kept; the group's priority is its pods' ``spec.priority``, which the
    admission controller resolves from the same class).
    """

    namespace: str
    name: str
    queue: str
    min_member: int
    min_resources: tuple[tuple[str, int], ...] | None
    priority_class_name: str
    creation_ms: int

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"


KubeObject = (ResourceFlavor | Cohort | ClusterQueue | LocalQueue | Workload | Node | EngineConfig | ElasticQuota
              | Pod | Queue | PodGroup | Topology)


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """What a ``Deleted`` event names: ``kind`` is the Kubernetes kind, ``namespace`` may be empty."""

    kind: str
    namespace: str
    name: str
