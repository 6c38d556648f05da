"""The kinds ``quotaledger watch`` lists and watches: one ``KindSpec`` per kind, in initial-sync order.

The order is the order of the initial sync (one ``Batch``): quota configuration first (flavors,
cohorts, queues, nodes, topologies, the other models' quota objects), then the admitted units
(Workloads, PodGroups, Pods), so a unit's queue is known when the unit is applied.  Adding a kind
is one entry; ``models`` says which quota models need it (empty = every model): a cluster runs
one quota model, and another model's quota objects would be rejected (docs/events.md).  The kinds and
their API groups are those of docs/events.md ("Object kinds in v1" and "Additions for the other
quota models and placement").
"""

from __future__ import annotations

from dataclasses import dataclass

KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_VERSIONS = ("v1beta2", "v1beta1")
"""Kueue API versions the engine reads (docs/events.md: v1beta1 with its own field names), newest first."""

AUTO = "auto"
"""``--kueue-version auto``: the first of ``KUEUE_VERSIONS`` the API server serves, per kind."""

QUOTA_MODELS = ("kueue", "koordinator", "volcano")
"""``EngineConfig`` ``spec.quotaModel`` values of docs/events.md."""


@dataclass(frozen=True, slots=True)
class KindSpec:
    """One watched kind.

    Attributes:
        group: API group (``""`` for the core group).
        version: API version; for Kueue kinds the ``--kueue-version`` replaces it.
        plural: the resource name in the URL (``clusterqueues``).
        kind: the object kind (``ClusterQueue``).
        namespaced: whether objects live in namespaces (listed across all namespaces).
        models: quota models that need this kind; empty = every model.
        fallbacks: other versions to try, in order, when ``version`` is not served.
    """

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    models: tuple[str, ...] = ()
    fallbacks: tuple[str, ...] = ()

    def at(self, version: str) -> KindSpec:
        """This kind at API ``version`` (no fallbacks)."""
        return KindSpec(self.group, version, self.plural, self.kind, self.namespaced, self.models)

    @property
    def api_version(self) -> str:
        """``group/version``, or ``version`` for the core group (the objects' ``apiVersion``)."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def path(self) -> str:
        """The cluster-wide collection URL path: ``/api/v1/nodes``, ``/apis/G/V/plural``."""
        if self.group:
            return f"/apis/{self.group}/{self.version}/{self.plural}"
        return f"/api/{self.version}/{self.plural}"

    @property
    def name(self) -> str:
        """A stable label for logs, ids and the state file: ``plural.group`` (``nodes`` for core)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


KINDS: tuple[KindSpec, ...] = (
    KindSpec(KUEUE_GROUP, "v1beta2", "resourceflavors", "ResourceFlavor", False, ("kueue",)),
    KindSpec(KUEUE_GROUP, "v1beta2", "cohorts", "Cohort", False, ("kueue",)),
    KindSpec(KUEUE_GROUP, "v1beta2", "clusterqueues", "ClusterQueue", False, ("kueue",)),
    KindSpec(KUEUE_GROUP, "v1beta2", "localqueues", "LocalQueue", True, ("kueue",)),
    KindSpec("", "v1", "nodes", "Node", False),
    KindSpec(KUEUE_GROUP, "v1alpha1", "topologies", "Topology", False),
    KindSpec("kai.scheduler", "v1alpha1", "topologies", "Topology", False),
    KindSpec("scheduling.sigs.k8s.io", "v1alpha1", "elasticquotas", "ElasticQuota", True, ("koordinator",)),
    KindSpec("scheduling.volcano.sh", "v1beta1", "queues", "Queue", False, ("volcano",)),
    KindSpec("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup", True, ("volcano",)),
    KindSpec(KUEUE_GROUP, "v1beta2", "workloads", "Workload", True, ("kueue",)),
    KindSpec("", "v1", "pods", "Pod", True, ("koordinator", "volcano")),
)


def kinds_for(model: str, kueue_version: str = AUTO) -> list[KindSpec]:
    """The kinds to watch for a cluster running quota model ``model``, in initial-sync order.

    Kueue's ``Topology`` keeps its own ``v1alpha1``; the other Kueue kinds take ``kueue_version``,
    or with ``auto`` ``v1beta2`` falling back to ``v1beta1`` where the server does not serve it.

    Raises:
        ValueError: ``model`` is not one of ``QUOTA_MODELS`` or ``kueue_version`` not one of
            ``KUEUE_VERSIONS`` or ``auto`` (the message names the accepted values).
    """
    if model not in QUOTA_MODELS:
        raise ValueError(f"quota model {model!r}: must be one of {', '.join(QUOTA_MODELS)}")
    if kueue_version != AUTO and kueue_version not in KUEUE_VERSIONS:
        raise ValueError(f"Kueue API version {kueue_version!r}: must be {AUTO} or one of {', '.join(KUEUE_VERSIONS)}")
    chosen = []
    for spec in KINDS:
        if spec.models and model not in spec.models:
            continue
        if spec.group == KUEUE_GROUP and spec.kind != "Topology":
            if kueue_version == AUTO:
                spec = KindSpec(spec.group, KUEUE_VERSIONS[0], spec.plural, spec.kind, spec.namespaced, spec.models,
                                KUEUE_VERSIONS[1:])
            else:
                spec = spec.at(kueue_version)
        chosen.append(spec)
    return chosen
