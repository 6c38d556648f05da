"""A Kueue quota configuration translated into Koordinator ElasticQuotas (the ``koordinator`` quota
model, docs/koordinator.md "Simulator"), for ``quotaledger simulate --model koordinator`` and
``quotaledger demo --model koordinator``.

* Each ClusterQueue becomes a leaf ``ElasticQuota`` of the same name: ``min`` = its nominal quota
  summed over flavors per resource, ``max`` = nominal + ``borrowingLimit`` (no limit: the nominal
  quota of the whole configuration, the most there is to borrow).  Koordinator has no flavors.
* Each Cohort becomes a parent ``ElasticQuota`` (``is-parent``) of the same name: ``min`` = its own
  nominal quota (if any) plus its children's mins, so the webhook rule Σ children's min ≤ parent's
  min holds; ``max`` = the sum of its children's max plus its own nominal, capped at the whole
  configuration's nominal.  Root cohorts sit under ``koordinator-root-quota``.
* The generated tree (``replay.sim.quota_tree``: nominal from typical demand, borrowing up to the
  peak) therefore gives min from typical demand and max from the peak.
* Koordinator's root shares the cluster's capacity (its Nodes); for a trace without nodes a Node
  carrying the Kueue configuration's whole nominal quota is added, so both models see the same total.
* An ``EngineConfig`` with ``quotaModel: koordinator`` comes first; LocalQueues and ResourceFlavors
  are dropped: a job's pod is labelled with its ClusterQueue's quota name and lives in the
  LocalQueue's namespace (``replay.sim.manifests.queue_names``).
"""

from __future__ import annotations

from replay.sim.importers.jobs import quantity_string
from replay.sim.manifests import QuotaConfig
from replay.sim.quota_bounds import kueue_bounds

EQ_API = "scheduling.sigs.k8s.io/v1alpha1"
LABELS = "quota.scheduling.koordinator.sh/"
ENGINE_CONFIG = {"apiVersion": "quotaledger.io/v1alpha1", "kind": "EngineConfig", "metadata": {"name": "config"},
                 "spec": {"quotaModel": "koordinator"}}


def to_elastic_quotas(config: QuotaConfig, capacity_node: bool = False) -> QuotaConfig:
    """The ElasticQuota configuration of a Kueue ``config`` (module docstring); the same ``root``.
    With ``capacity_node`` (a trace without nodes), a ``v1`` Node ``kueue-nominal-capacity`` whose
    allocatable is the configuration's whole nominal quota gives the root its total, the capacity
    the Kueue tree had.  min and max are ``replay.sim.quota_bounds``'s low and high.

    Raises:
        ValueError: a Cohort and a ClusterQueue share a name (ElasticQuota names are one namespace).
    """
    order, parent_of, cohorts, bounds, whole = kueue_bounds(config)
    objects: list[dict] = [ENGINE_CONFIG]
    for name in order:
        low, high = bounds[name]
        labels = {LABELS + "is-parent": "true"} if name in cohorts else {}
        parent = parent_of[name]
        if parent is not None and parent in cohorts:
            labels[LABELS + "parent"] = parent
        objects.append({"apiVersion": EQ_API, "kind": "ElasticQuota",
                        "metadata": {"name": name, "namespace": "koordinator-quotas", "labels": labels},
                        "spec": {"min": {r: quantity_string(r, v) for r, v in sorted(low.items())},
                                 "max": {r: quantity_string(r, v) for r, v in sorted(high.items())}}})
    if capacity_node:
        objects.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "kueue-nominal-capacity"},
                        "status": {"allocatable": {r: quantity_string(r, v) for r, v in sorted(whole.items())}}})
    notes = [*config.notes, f"translated to {len(order)} ElasticQuotas (koordinator model): min = nominal, "
             f"max = nominal + borrowingLimit (docs/koordinator.md)"]
    return QuotaConfig(objects, config.root, notes)
