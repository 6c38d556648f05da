"""Typed, frozen values for the Kubernetes-shaped objects of EVENTS.md v1.

Every quantity is an integer in base units (``cpu`` in millicores, every other
resource in bytes or counts); times are integer milliseconds since the Unix
epoch.  These classes carry no behaviour: ``statemodel.events.decode`` builds them from
JSON and the reducer reads them.  Field names follow Kueue v1beta2
(``apis/kueue/v1beta2``), snake-cased.
"""

from __future__ import annotations

from dataclasses import dataclass

FlavorResource = tuple[str, str]
"""A ``(flavor, resource)`` pair: the unit of all capacity arithmetic (Kueue ``FlavorResource``)."""


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
    """Kueue ``ResourceFlavor``: ``node_labels`` as sorted ``(key, value)`` pairs."""

    name: str
    node_labels: tuple[tuple[str, str], ...] = ()


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
    admission_mode: str | None = None


@dataclass(frozen=True, slots=True)
class Preemption:
    """``ClusterQueue.spec.preemption`` with Kueue's defaults."""

    within_cluster_queue: str = "Never"
    reclaim_within_cohort: str = "Never"
    borrow_within_cohort_policy: str = "Never"
    borrow_within_cohort_max_priority_threshold: int | None = None


@dataclass(frozen=True, slots=True)
class FlavorFungibility:
    """``ClusterQueue.spec.flavorFungibility`` (v1beta2 values; v1beta1 ``Borrow``/``Preempt`` map to ``MayStopSearch``)."""

    when_can_borrow: str = "MayStopSearch"
    when_can_preempt: str = "TryNextFlavor"
    preference: str | None = None


@dataclass(frozen=True, slots=True)
class ClusterQueue:
    """Kueue ``ClusterQueue``: a leaf of the quota tree that admits workloads."""

    name: str
    cohort: str | None = None
    resource_groups: tuple[ResourceGroup, ...] = ()
    queueing_strategy: str = "BestEffortFIFO"
    preemption: Preemption = Preemption()
    flavor_fungibility: FlavorFungibility = FlavorFungibility()
    fair_weight_milli: int = 1000
    admission_mode: str | None = None
    stop_policy: str = "None"


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
    stop_policy: str = "None"
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
    """One entry of Kueue ``status.admission.podSetAssignments``; ``resource_usage`` is the podSet total."""

    name: str
    flavors: tuple[tuple[str, str], ...]
    resource_usage: tuple[tuple[str, int], ...]
    count: int


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

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class Taint:
    """A core ``Node`` taint."""

    key: str
    value: str
    effect: str


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
    ``quota_model``: ``spec.quotaModel``, the name of the cluster's quota model (``statemodel.quota.registry``).
    """

    admission_fair_sharing: "AdmissionFairSharingConfig | None" = None
    fair_sharing_enable: bool = False
    preemption_strategies: tuple[str, ...] = ()
    quota_model: str = "kueue"


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


KubeObject = ResourceFlavor | Cohort | ClusterQueue | LocalQueue | Workload | Node | EngineConfig


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """What a ``Deleted`` event names: ``kind`` is the Kubernetes kind, ``namespace`` may be empty."""

    kind: str
    namespace: str
    name: str
