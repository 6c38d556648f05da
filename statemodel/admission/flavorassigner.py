"""Flavor assignment: choose a ResourceFlavor for every podSet resource (Kueue ``flavorassigner``).

Semantics (reference/kueue.md §2): podSets in order; for each requested resource, the resource
group covering it; all resources of one group get the same flavor for a podSet; flavors are tried
in spec order.  A flavor **fits** when, for every requested resource, the podSet request plus
what earlier podSets of the same workload took in that flavor is within ``available``; it is
**ExceedsMaxQuota** when above ``potentialAvailable``; otherwise **WaitingForQuota** with
"n more needed".  Fungibility: a fitting flavor that needs borrowing is kept as a candidate and
the search continues when ``whenCanBorrow: TryNextFlavor``; otherwise the search stops there.
Among candidates the lowest borrowing height wins (earliest flavor on ties).

The fit of one flavor is asked of the cluster's quota model (``QuotaModel.fit``, one call per
flavor tried).  Preemption is not simulated yet, so ``whenCanPreempt`` has no effect and a flavor
that would need preemption (``FitIfPreempting``) counts as not fitting (``WaitingForQuota``).  Node-affinity checks against flavor labels are not done.  A
missing ResourceFlavor makes the whole ClusterQueue inactive before assignment is tried (Kueue).
"""

from __future__ import annotations

from typing import Final

from statemodel.hierarchy import ClusterQueueEntry
from statemodel.limits import MAX_MESSAGE_STATUSES
from statemodel.objects import FlavorFungibilityPolicy, FlavorResource
from statemodel.quantity import format_quantity
from statemodel.quota.protocol import Fit, FitIfPreempting, QuotaModel, Shortfall
from statemodel.reasons import EXCEEDS_MAX_QUOTA, NO_MATCHING_FLAVOR, SEVERITY, WAITING_FOR_QUOTA
from statemodel.workload import PodSetAssignment, WorkloadInfo


_REASON_BY_SEVERITY = {sev: reason for reason, sev in SEVERITY.items()}
_WAITING = SEVERITY[WAITING_FOR_QUOTA]
_TRY_NEXT_FLAVOR: Final = FlavorFungibilityPolicy.TRY_NEXT_FLAVOR


class PodSetStatus:
    """One reason a flavor (or no flavor) failed for a podSet: the model's ``shortfall`` and the
    podSet's own ``request`` of that resource (the rest of ``shortfall.needed`` was taken by earlier
    podSets).  A resource no resource group covers has reason ``NoMatchingFlavor`` and flavor ``""``."""

    __slots__ = ("shortfall", "request")

    def __init__(self, shortfall: Shortfall, request: int) -> None:
        self.shortfall = shortfall
        self.request = request

    def __str__(self) -> str:
        sf = self.shortfall
        r = sf.resource
        if sf.reason == NO_MATCHING_FLAVOR:
            return f"resource {r} unavailable in ClusterQueue"
        if sf.reason == EXCEEDS_MAX_QUOTA:
            return (f"insufficient quota for {r} in flavor {sf.flavor}, previously considered podsets requests "
                    f"({format_quantity(r, sf.needed - self.request)}) + current podset request "
                    f"({format_quantity(r, self.request)}) > maximum capacity ({format_quantity(r, sf.available)})")
        return (f"insufficient unused quota for {r} in flavor {sf.flavor}, "
                f"{format_quantity(r, sf.needed - sf.available)} more needed")


class NoFitMessage:
    """Kueue's ``couldn't assign flavors to pod set <ps>: <reasons sorted, joined ", ">`` (pod sets
    joined by ``"; "``), kept as data (``failures``: per podSet, its statuses) and rendered only when
    someone reads it: a workload that waits is re-evaluated far more often than its message is read.

    A podSet keeps at most ``MAX_MESSAGE_STATUSES`` statuses, the first ones found (flavors in spec
    order); ``omitted`` counts the others over all podSets, and the text then ends with
    ``"; <n> more reasons not shown"`` (a departure from Kueue, which lists every one: a valid
    ClusterQueue can make a single message megabytes long)."""

    __slots__ = ("failures", "omitted", "_text")

    def __init__(self, failures: list[tuple[str, list[PodSetStatus]]], omitted: int = 0) -> None:
        self.failures = failures
        self.omitted = omitted
        self._text: str | None = None

    def shortfalls(self) -> list[dict]:
        """The failures as JSON-ready rows, one per status: ``podSet``, ``reason``, ``flavor``,
        ``resource``, ``node`` (the level whose limit binds), ``needed``, ``available``, ``request``
        (integers in base units, as ``PodSetStatus`` and ``Shortfall`` define them).  PodSets in
        order, each podSet's statuses in the order the message lists them (sorted by their text)."""
        rows: list[dict] = []
        for ps, statuses in self.failures:
            for st in statuses if len(statuses) < 2 else sorted(statuses, key=str):
                sf = st.shortfall
                rows.append({"podSet": ps, "reason": str(sf.reason), "flavor": sf.flavor, "resource": sf.resource,
                             "node": sf.node, "needed": sf.needed, "available": sf.available,
                             "request": st.request})
        return rows

    def __str__(self) -> str:
        if self._text is None:
            self._text = "; ".join(
                f"couldn't assign flavors to pod set {ps}: {', '.join(sorted(str(st) for st in statuses))}"
                for ps, statuses in self.failures)
            if self.omitted:
                self._text += f"; {self.omitted} more reasons not shown"
        return self._text


def pending_shortfalls(message: object) -> list[dict]:
    """``NoFitMessage.shortfalls`` of a pending workload's message; ``[]`` for any other message
    (plain text: the workload waits for something other than quota, or was restored from a snapshot
    that kept only the text)."""
    return message.shortfalls() if isinstance(message, NoFitMessage) else []


class Assignment:
    """Result of assigning flavors to a whole workload.

    Attributes:
        fits: every podSet got a flavor that fits now.
        borrowing: max borrowing height over the chosen flavors (0 = within nominal).
        pod_sets: the assignment per podSet (when ``fits``).
        usage: total quota to charge per ``(flavor, resource)``.
        reason / message: Kueue ``QuotaReserved=False`` reason and message (when not ``fits``; the
            message is a ``NoFitMessage``, rendered by ``str``).
        wake: for every flavor that could fit once enough quota is released, the ``WaitingForQuota``
            shortfalls it has, largest deficit first (empty ⇒ only a configuration change can help).
    """

    __slots__ = ("fits", "borrowing", "pod_sets", "usage", "reason", "message", "wake")

    def __init__(self) -> None:
        self.fits = True
        self.borrowing = 0
        self.pod_sets: list[PodSetAssignment] = []
        self.usage: dict[FlavorResource, int] = {}
        self.reason: str | None = None
        self.message: str | NoFitMessage = ""
        self.wake: list[list[Shortfall]] = []


def _deficit(sf: Shortfall) -> int:
    return sf.available - sf.needed


def assign_flavors(model: QuotaModel, cq: ClusterQueueEntry, info: WorkloadInfo) -> Assignment:
    """Assign flavors to every podSet of ``info`` in ClusterQueue ``cq`` against current usage.

    Asks ``model.fit`` once per flavor tried.  Pure (the model is only read);
    O(podSets × flavors × the model's cost of a fit).
    """
    spec = cq.spec
    assert spec is not None, "flavors are only assigned in active ClusterQueues"
    leaf = cq.name
    rg_by_resource = cq.rg_by_resource
    try_next_on_borrow = spec.flavor_fungibility.when_can_borrow == _TRY_NEXT_FLAVOR
    result = Assignment()
    assumed = result.usage
    failures: list[tuple[str, list[PodSetStatus]]] = []
    omitted = 0
    worst = 0
    for ps_name, count, totals in info.totals:
        requests = list(totals)
        if cq.covers_pods:
            requests.append(("pods", count))
            requests.sort()
        chosen: dict[str, str] = {}
        handled: set[str] = set()
        ps_usage: dict[str, int] = {}
        ps_statuses: list[PodSetStatus] = []
        ps_severity = 0
        for res, amount in requests:
            if res in handled:
                continue
            group = rg_by_resource.get(res)
            if group is None:
                if amount:
                    if len(ps_statuses) < MAX_MESSAGE_STATUSES:
                        ps_statuses.append(PodSetStatus(Shortfall(NO_MATCHING_FLAVOR, "", res, leaf, amount, 0), amount))
                    else:
                        omitted += 1
                    ps_severity = max(ps_severity, SEVERITY[NO_MATCHING_FLAVOR])
                continue
            covered = group.covered_resources
            group_requests: list[tuple[str, int]] = []
            for r, a in requests:
                if r in covered:
                    group_requests.append((r, a))
                    handled.add(r)
            best: tuple[int, int, str] | None = None
            group_severity = None
            for index, flavor in enumerate(group.flavors):
                fname = flavor.name
                request = [((fname, r), assumed.get((fname, r), 0) + a) for r, a in group_requests]
                fit = model.fit(leaf, request)
                if isinstance(fit, Fit):
                    borrow = fit.borrowing
                else:
                    flavor_sev = 0
                    shorts: list[Shortfall] = []
                    amounts = dict(group_requests)
                    for sf in fit.shortfalls:
                        if len(ps_statuses) < MAX_MESSAGE_STATUSES:
                            ps_statuses.append(PodSetStatus(sf, amounts[sf.resource]))
                        else:
                            omitted += 1
                        sev = _WAITING if isinstance(fit, FitIfPreempting) else SEVERITY[sf.reason]
                        if sev > flavor_sev:
                            flavor_sev = sev
                        if sev == _WAITING:
                            shorts.append(sf)
                    group_severity = flavor_sev if group_severity is None else min(group_severity, flavor_sev)
                    if flavor_sev == _WAITING and shorts:
                        shorts.sort(key=_deficit)  # largest deficit first
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
        if worst > _WAITING:
            result.wake = []  # some podSet can never fit: only a configuration change can help
        result.reason = _REASON_BY_SEVERITY[worst]
        result.message = NoFitMessage(failures, omitted)
        result.pod_sets = []
    return result
