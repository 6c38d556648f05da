"""Flavor assignment: choose a ResourceFlavor for every podSet resource (Kueue ``flavorassigner``).

Semantics (reference/kueue.md §2): podSets in order; for each requested resource, the resource
group covering it; all resources of one group get the same flavor for a podSet; flavors are tried
in spec order.  A flavor **fits** when, for every requested resource, the podSet request plus
what earlier podSets of the same workload took in that flavor is within ``available``; it is
**ExceedsMaxQuota** when above ``potentialAvailable``; otherwise **WaitingForQuota** with
"n more needed".  Fungibility: a fitting flavor that needs borrowing is kept as a candidate and
the search continues when ``whenCanBorrow: TryNextFlavor``; otherwise the search stops there.
Among candidates the lowest borrowing height wins (earliest flavor on ties).

Preemption is not simulated yet, so ``whenCanPreempt`` has no effect and a flavor that would need
preemption counts as not fitting.  Node-affinity checks against flavor labels are not done.  A
missing ResourceFlavor makes the whole ClusterQueue inactive before assignment is tried (Kueue).
"""

from __future__ import annotations

from statemodel.hierarchy import ClusterQueueEntry
from statemodel.objects import FlavorResource
from statemodel.quantity import format_quantity
from statemodel.reasons import EXCEEDS_MAX_QUOTA, NO_MATCHING_FLAVOR, SEVERITY, WAITING_FOR_QUOTA
from statemodel.quota.kueue import available, borrowing_height, potential_available
from statemodel.workload import PodSetAssignment, WorkloadInfo


_REASON_BY_SEVERITY = {sev: reason for reason, sev in SEVERITY.items()}


def _status_text(status: tuple) -> str:
    kind = status[0]
    if kind == "unavailable":
        return f"resource {status[1]} unavailable in ClusterQueue"
    if kind == "max":
        _, r, flavor, before, request, cap = status
        return (f"insufficient quota for {r} in flavor {flavor}, previously considered podsets requests "
                f"({format_quantity(r, before)}) + current podset request ({format_quantity(r, request)}) "
                f"> maximum capacity ({format_quantity(r, cap)})")
    _, r, flavor, missing = status
    return f"insufficient unused quota for {r} in flavor {flavor}, {format_quantity(r, missing)} more needed"


class NoFitMessage:
    """Kueue's ``couldn't assign flavors to pod set <ps>: <reasons sorted, joined ", ">`` (pod sets
    joined by ``"; "``), kept as data and rendered only when someone reads it: a workload that waits
    is re-evaluated far more often than its message is looked at."""

    __slots__ = ("failures", "_text")

    def __init__(self, failures: list[tuple[str, list[tuple]]]) -> None:
        self.failures = failures
        self._text: str | None = None

    def __str__(self) -> str:
        if self._text is None:
            self._text = "; ".join(
                f"couldn't assign flavors to pod set {ps}: {', '.join(sorted(_status_text(st) for st in statuses))}"
                for ps, statuses in self.failures)
        return self._text


class Assignment:
    """Result of assigning flavors to a whole workload.

    Attributes:
        fits: every podSet got a flavor that fits now.
        borrowing: max borrowing height over the chosen flavors (0 = within nominal).
        pod_sets: the assignment per podSet (when ``fits``).
        usage: total quota to charge per ``(flavor, resource)``.
        reason / message: Kueue ``QuotaReserved=False`` reason and message (when not ``fits``; the
            message is a ``NoFitMessage``, rendered by ``str``).
        wake: for every flavor that could fit once enough quota is released, the resources it is short
            of as ``((flavor, resource), needed, available)``, largest deficit first (empty ⇒ only a
            configuration change can help).
    """

    __slots__ = ("fits", "borrowing", "pod_sets", "usage", "reason", "message", "wake")

    def __init__(self) -> None:
        self.fits = True
        self.borrowing = 0
        self.pod_sets: list[PodSetAssignment] = []
        self.usage: dict[FlavorResource, int] = {}
        self.reason: str | None = None
        self.message: str | NoFitMessage = ""
        self.wake: list[list[tuple[FlavorResource, int, int]]] = []


def assign_flavors(cq: ClusterQueueEntry, info: WorkloadInfo, max_capacity: dict) -> Assignment:
    """Assign flavors to every podSet of ``info`` in ClusterQueue ``cq`` against current usage.

    ``max_capacity`` memoizes ``potentialAvailable`` per ``(ClusterQueue, flavor, resource)``; it
    depends only on configuration, and the caller clears it when the configuration changes.
    Pure; O(podSets × resources × flavors × depth).
    """
    spec = cq.spec
    assert spec is not None, "flavors are only assigned in active ClusterQueues"
    node = cq.node
    rg_by_resource = cq.rg_by_resource
    try_next_on_borrow = spec.flavor_fungibility.when_can_borrow == "TryNextFlavor"
    result = Assignment()
    assumed = result.usage
    failures: list[tuple[str, list[tuple]]] = []
    worst = 0
    for ps_name, count, totals in info.totals:
        requests = list(totals)
        if cq.covers_pods:
            requests.append(("pods", count))
            requests.sort()
        chosen: dict[str, str] = {}
        handled: set[str] = set()
        ps_usage: dict[str, int] = {}
        ps_statuses: list[tuple] = []
        ps_severity = 0
        for res, amount in requests:
            if res in handled:
                continue
            group = rg_by_resource.get(res)
            if group is None:
                if amount:
                    ps_statuses.append(("unavailable", res))
                    ps_severity = max(ps_severity, SEVERITY[NO_MATCHING_FLAVOR])
                continue
            covered = group.covered_resources
            group_requests = []
            for r, a in requests:
                if r in covered:
                    group_requests.append((r, a))
                    handled.add(r)
            best: tuple[int, int, str] | None = None
            group_severity = None
            for index, flavor in enumerate(group.flavors):
                fname = flavor.name
                borrow = 0
                flavor_sev = 0
                shorts: list[tuple[FlavorResource, int, int]] = []
                for r, a in group_requests:
                    fr = (fname, r)
                    before = assumed.get(fr, 0)
                    val = before + a
                    cap = max_capacity.get((node.name, fr))
                    if cap is None:
                        cap = max_capacity[(node.name, fr)] = potential_available(node, fr)
                    if val > cap:
                        ps_statuses.append(("max", r, fname, before, a, cap))
                        flavor_sev = max(flavor_sev, SEVERITY[EXCEEDS_MAX_QUOTA])
                        continue
                    free = available(node, fr)
                    if free < 0:
                        free = 0
                    if val > free:
                        ps_statuses.append(("unused", r, fname, val - free))
                        flavor_sev = max(flavor_sev, SEVERITY[WAITING_FOR_QUOTA])
                        shorts.append((fr, val, free))
                        continue
                    height = borrowing_height(node, fr, val)
                    if height > borrow:
                        borrow = height
                if flavor_sev:
                    group_severity = flavor_sev if group_severity is None else min(group_severity, flavor_sev)
                    if flavor_sev == SEVERITY[WAITING_FOR_QUOTA] and shorts:
                        shorts.sort(key=lambda x: x[2] - x[1])  # largest deficit first
                        result.wake.append(shorts)
                    continue
                if best is None or borrow < best[0]:
                    best = (borrow, index, fname)
                if borrow == 0 or not try_next_on_borrow:
                    break
            if best is None:
                ps_severity = max(ps_severity, group_severity or SEVERITY[NO_MATCHING_FLAVOR])
                continue
            borrow, _, fname = best
            if borrow > result.borrowing:
                result.borrowing = borrow
            for r, a in group_requests:
                chosen[r] = fname
                ps_usage[r] = a
                fr = (fname, r)
                assumed[fr] = assumed.get(fr, 0) + a
        if ps_severity:
            result.fits = False
            worst = max(worst, ps_severity)
            failures.append((ps_name, ps_statuses))
        else:
            result.pod_sets.append(PodSetAssignment(ps_name, count, chosen, ps_usage))
    if not result.fits:
        if worst > SEVERITY[WAITING_FOR_QUOTA]:
            result.wake = []  # some podSet can never fit: only a configuration change can help
        result.reason = _REASON_BY_SEVERITY[worst]
        result.message = NoFitMessage(failures)
        result.pod_sets = []
    return result


def fits_now(cq: ClusterQueueEntry, usage: dict[FlavorResource, int]) -> bool:
    """Whether ``usage`` still fits in ``cq`` against current usage (Kueue ``fits`` re-check)."""
    node = cq.node
    for fr, amount in usage.items():
        if amount > available(node, fr):
            return False
    return True
