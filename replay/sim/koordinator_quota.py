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
from statemodel.quantity import parse_quantity

EQ_API = "scheduling.sigs.k8s.io/v1alpha1"
LABELS = "quota.scheduling.koordinator.sh/"
ENGINE_CONFIG = {"apiVersion": "quotaledger.io/v1alpha1", "kind": "EngineConfig", "metadata": {"name": "config"},
                 "spec": {"quotaModel": "koordinator"}}


def _quota(spec: dict) -> tuple[dict[str, int], dict[str, int | None]]:
    """Nominal and borrowing limit per resource of a Kueue ``spec.resourceGroups``, summed over
    flavors (``None`` borrowing: unlimited for some flavor)."""
    nominal: dict[str, int] = {}
    borrow: dict[str, int | None] = {}
    for group in spec.get("resourceGroups") or ():
        for flavor in group.get("flavors") or ():
            for r in flavor.get("resources") or ():
                name = r["name"]
                nominal[name] = nominal.get(name, 0) + parse_quantity(name, r.get("nominalQuota", 0), "nominalQuota")
                limit = r.get("borrowingLimit")
                previous = borrow.get(name, 0)
                if limit is None or previous is None:
                    borrow[name] = None
                else:
                    borrow[name] = previous + parse_quantity(name, limit, "borrowingLimit")
    return nominal, borrow


def _add(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    out = dict(a)
    for r, v in b.items():
        out[r] = out.get(r, 0) + v
    return out


def to_elastic_quotas(config: QuotaConfig, capacity_node: bool = False) -> QuotaConfig:
    """The ElasticQuota configuration of a Kueue ``config`` (module docstring); the same ``root``.
    With ``capacity_node`` (a trace without nodes), a ``v1`` Node ``kueue-nominal-capacity`` whose
    allocatable is the configuration's whole nominal quota gives the root its total, the capacity
    the Kueue tree had.

    Raises:
        ValueError: a Cohort and a ClusterQueue share a name (ElasticQuota names are one namespace).
    """
    cohorts = {o["metadata"]["name"]: o for o in config.objects if o.get("kind") == "Cohort"}
    cqs = {o["metadata"]["name"]: o for o in config.objects if o.get("kind") == "ClusterQueue"}
    clash = sorted(set(cohorts) & set(cqs))
    if clash:
        raise ValueError(f"Cohort and ClusterQueue share the name {clash[0]!r}: ElasticQuota names must differ")
    own = {name: _quota(o.get("spec") or {}) for name, o in {**cohorts, **cqs}.items()}
    whole: dict[str, int] = {}
    for nominal, _ in own.values():
        whole = _add(whole, nominal)
    parent_of = {name: (o.get("spec") or {}).get(key) for name, o, key in
                 [(n, o, "parentName") for n, o in cohorts.items()] + [(n, o, "cohortName") for n, o in cqs.items()]}
    children: dict[str, list[str]] = {}
    for name in sorted(parent_of):
        parent = parent_of[name]
        if parent is not None:
            children.setdefault(parent, []).append(name)
    bounds: dict[str, tuple[dict[str, int], dict[str, int]]] = {}

    def settle(name: str) -> tuple[dict[str, int], dict[str, int]]:
        if name in bounds:
            return bounds[name]
        nominal, borrow = own.get(name, ({}, {}))
        if name in cqs:
            low = dict(nominal)
            high = {r: (whole.get(r, v) if borrow.get(r, 0) is None else v + (borrow.get(r) or 0))
                    for r, v in nominal.items()}
        else:
            low, high = dict(nominal), dict(nominal)
            for child in children.get(name, []):
                child_low, child_high = settle(child)
                low, high = _add(low, child_low), _add(high, child_high)
            high = {r: min(v, max(whole.get(r, v), low.get(r, 0))) for r, v in high.items()}
        bounds[name] = (low, high)
        return low, high

    objects: list[dict] = [ENGINE_CONFIG]
    order: list[str] = []

    def walk(name: str) -> None:
        order.append(name)
        for child in children.get(name, []):
            walk(child)

    for name in sorted(parent_of):
        if parent_of[name] is None or parent_of[name] not in cohorts:
            walk(name)
    for name in order:
        low, high = settle(name)
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
