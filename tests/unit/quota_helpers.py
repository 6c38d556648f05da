"""Object builders shared by the unit tables of the hierarchy, the quota models, flavor assignment
and the cycle.  Quantities in base units (millicores for cpu)."""

from __future__ import annotations

from statemodel.objects import (
    ClusterQueue, Cohort, FlavorFungibility, FlavorQuotas, PodSet, ResourceGroup, ResourceQuota, Workload,
)
from statemodel.workload import WorkloadInfo


def group(flavors: dict[str, dict[str, tuple[int, int | None, int | None] | int]]) -> ResourceGroup:
    """One resource group: ``{flavor: {resource: nominal | (nominal, borrowingLimit, lendingLimit)}}``."""
    out = []
    for flavor, resources in flavors.items():
        quotas = []
        for res, spec in resources.items():
            nominal, bl, ll = spec if isinstance(spec, tuple) else (spec, None, None)
            quotas.append(ResourceQuota(res, nominal, bl, ll))
        out.append(FlavorQuotas(flavor, tuple(quotas)))
    return ResourceGroup(tuple(next(iter(flavors.values()))), tuple(out))


def cq(name: str, cohort: str | None = None, borrow: str = "MayStopSearch", **flavors: dict) -> ClusterQueue:
    """A ClusterQueue with one resource group of ``flavors`` (keyword per flavor, in try order)."""
    groups = (group(flavors),) if flavors else ()
    return ClusterQueue(name, cohort, groups, flavor_fungibility=FlavorFungibility(when_can_borrow=borrow))


def cohort(name: str, parent: str | None = None, **flavors: dict) -> Cohort:
    """A Cohort with one resource group of ``flavors``."""
    return Cohort(name, parent, (group(flavors),) if flavors else ())


def workload(name: str, *pod_sets: tuple[str, int, dict[str, int]], priority: int = 0, created: int = 0) -> WorkloadInfo:
    """A pending ``WorkloadInfo`` in ``ns/q`` with podSets ``(name, count, per-pod requests)``."""
    sets = tuple(PodSet(ps, count, tuple(sorted(req.items()))) for ps, count, req in pod_sets)
    return WorkloadInfo(Workload("ns", name, f"uid-{name}", created, "q", priority, sets), 0)
