"""The numbers of a Kueue quota configuration that another quota model's translation starts from:
per ClusterQueue and Cohort a *low* (guaranteed) and a *high* (most it may use) per resource, summed
over flavors (``replay.sim.koordinator_quota``, ``replay.sim.volcano_quota``; the "Simulator"
sections of docs/koordinator.md and docs/volcano.md).

* a ClusterQueue: low = its ``nominalQuota``, high = nominal + ``borrowingLimit`` (no limit: the
  nominal quota of the whole configuration, the most there is to borrow);
* a Cohort: low = its own nominal plus its children's lows, high = its own nominal plus its
  children's highs, capped at the whole configuration's nominal (and never below its low).
"""

from __future__ import annotations

from replay.sim.manifests import QuotaConfig
from statemodel.quantity import parse_quantity

Bounds = dict[str, tuple[dict[str, int], dict[str, int]]]


def _quota(spec: dict) -> tuple[dict[str, int], dict[str, int | None]]:
    """Nominal and borrowing limit per resource of ``spec.resourceGroups``, summed over flavors
    (``None`` borrowing: unlimited for some flavor)."""
    nominal: dict[str, int] = {}
    borrow: dict[str, int | None] = {}
    for group in spec.get("resourceGroups") or ():
        for flavor in group.get("flavors") or ():
            for r in flavor.get("resources") or ():
                name = r["name"]
                nominal[name] = nominal.get(name, 0) + parse_quantity(name, r.get("nominalQuota", 0), "nominalQuota")
                limit = r.get("borrowingLimit")
                previous = borrow.get(name, 0)
                borrow[name] = None if limit is None or previous is None else \
                    previous + parse_quantity(name, limit, "borrowingLimit")
    return nominal, borrow


def _add(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    out = dict(a)
    for r, v in b.items():
        out[r] = out.get(r, 0) + v
    return out


def kueue_bounds(config: QuotaConfig) -> tuple[list[str], dict[str, str | None], set[str], Bounds, dict[str, int]]:
    """``(names parents first, parent of each name (None at the top), the Cohort names, (low, high)
    per name, the whole nominal)`` of a Kueue ``config`` (module docstring).

    Raises:
        ValueError: a Cohort and a ClusterQueue share a name (the other models have one namespace).
    """
    cohorts = {o["metadata"]["name"]: o for o in config.objects if o.get("kind") == "Cohort"}
    cqs = {o["metadata"]["name"]: o for o in config.objects if o.get("kind") == "ClusterQueue"}
    clash = sorted(set(cohorts) & set(cqs))
    if clash:
        raise ValueError(f"Cohort and ClusterQueue share the name {clash[0]!r}: queue names must differ")
    own = {name: _quota(o.get("spec") or {}) for name, o in {**cohorts, **cqs}.items()}
    whole: dict[str, int] = {}
    for nominal, _ in own.values():
        whole = _add(whole, nominal)
    parent_of: dict[str, str | None] = {}
    for name, o in cohorts.items():
        parent_of[name] = (o.get("spec") or {}).get("parentName")
    for name, o in cqs.items():
        parent_of[name] = (o.get("spec") or {}).get("cohortName")
    children: dict[str, list[str]] = {}
    for name in sorted(parent_of):
        parent = parent_of[name]
        if parent is not None:
            children.setdefault(parent, []).append(name)
    bounds: Bounds = {}

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

    order: list[str] = []

    def walk(name: str) -> None:
        order.append(name)
        for child in children.get(name, []):
            walk(child)

    for name in sorted(parent_of):
        if parent_of[name] is None or parent_of[name] not in cohorts:
            walk(name)
    for name in order:
        settle(name)
    return order, parent_of, set(cohorts), bounds, whole
