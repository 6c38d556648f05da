"""A Kueue quota configuration translated into a Volcano queue tree (the ``volcano`` quota model,
docs/volcano.md "Simulator"), for ``quotaledger simulate --model volcano`` and
``quotaledger demo --model volcano``.

* The ``capacity`` plugin with ``enabledHierarchy: true`` runs the tree (``EngineConfig``
  ``spec.volcano``): Kueue's cohort tree has explicit quotas, which is what the capacity plugin's
  ``deserved`` is; ``proportion`` is flat and would ignore the tree.
* Each ClusterQueue becomes a leaf ``Queue`` of the same name: ``deserved`` = its nominal quota summed
  over flavors per resource, ``capability`` = nominal + ``borrowingLimit`` (no limit: the nominal
  quota of the whole configuration), ``weight`` = its nominal cpu in cores (1 without cpu; at most
  65535): the weights follow demand as the generated nominal quota does.  Volcano has no flavors;
  ``lendingLimit`` has no counterpart (every queue's idle deserved is used by others and reclaimed).
* Each Cohort becomes a parent ``Queue``: ``deserved`` = its own nominal plus its children's
  deserved (the webhook's Σ children's deserved ≤ parent's holds), ``capability`` = its own nominal
  plus its children's capability, capped at the whole configuration's nominal; ``weight`` as a leaf.
  Root cohorts sit under Volcano's ``root``.
* The root shares the cluster's Nodes; a trace without nodes gets a Node carrying the Kueue
  configuration's whole nominal quota.  A job is a ``PodGroup`` (``minMember`` 1, ``minResources``
  its total) with one Pod asking for the total (``replay.sim.simulator``).
"""

from __future__ import annotations

from replay.sim.importers.jobs import quantity_string
from replay.sim.quota_bounds import kueue_bounds
from replay.sim.manifests import QuotaConfig

VC_API = "scheduling.volcano.sh/v1beta1"
ENGINE_CONFIG = {"apiVersion": "quotaledger.io/v1alpha1", "kind": "EngineConfig", "metadata": {"name": "config"},
                 "spec": {"quotaModel": "volcano", "volcano": {"plugin": "capacity", "enabledHierarchy": True}}}
MAX_WEIGHT = 65535


def _weight(deserved: dict[str, int]) -> int:
    return max(1, min(MAX_WEIGHT, deserved.get("cpu", 0) // 1000))


def to_volcano_queues(config: QuotaConfig, capacity_node: bool = False) -> QuotaConfig:
    """The Volcano queue configuration of a Kueue ``config`` (module docstring); the same ``root``.
    With ``capacity_node`` (a trace without nodes), a ``v1`` Node ``kueue-nominal-capacity`` carries
    the configuration's whole nominal quota.

    Raises:
        ValueError: a Cohort and a ClusterQueue share a name, or one is called ``root`` (Volcano's
            root queue).
    """
    order, parent_of, cohorts, bounds, whole = kueue_bounds(config)
    if "root" in parent_of:
        raise ValueError("a Cohort or ClusterQueue is called 'root': that is Volcano's root queue")
    objects: list[dict] = [ENGINE_CONFIG]
    for name in order:
        low, high = bounds[name]
        parent = parent_of[name]
        spec = {"parent": parent if parent is not None and parent in cohorts else "root", "weight": _weight(low),
                "deserved": {r: quantity_string(r, v) for r, v in sorted(low.items())},
                "capability": {r: quantity_string(r, v) for r, v in sorted(high.items())}}
        objects.append({"apiVersion": VC_API, "kind": "Queue", "metadata": {"name": name}, "spec": spec})
    if capacity_node:
        objects.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "kueue-nominal-capacity"},
                        "status": {"allocatable": {r: quantity_string(r, v) for r, v in sorted(whole.items())}}})
    notes = [*config.notes, f"translated to {len(order)} Volcano queues (volcano model, capacity plugin with "
             f"hierarchy): deserved = nominal, capability = nominal + borrowingLimit (docs/volcano.md)"]
    return QuotaConfig(objects, config.root, notes)
