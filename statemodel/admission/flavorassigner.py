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
flavor tried).  A flavor has three outcomes, as in Kueue: **fit**; **preempt** — the model answers
``FitIfPreempting`` and the caller's preemption *oracle* (Kueue ``SimulatePreemption``, run only
when the ClusterQueue has a preemption policy) finds victims for every resource short (mode
``PREEMPT`` when one victim is in the ClusterQueue itself, ``RECLAIM`` when all are elsewhere,
with the borrowing height after those preemptions); **no fit** — otherwise (``WaitingForQuota``,
or the model's ``NoFit`` reason).  Fungibility (Kueue ``shouldTryNextFlavor``): the search goes on
after a flavor that does not fit, after a preempt flavor when ``whenCanPreempt: TryNextFlavor``, and
after a flavor that borrows when ``whenCanBorrow: TryNextFlavor``; otherwise it stops there.  The
best flavor seen wins (Kueue ``isPreferred``): with ``preference: BorrowingOverPreemption`` (the
default) the better mode (fit > reclaim > preempt), then the lower borrowing height; with
``PreemptionOverBorrowing`` the lower borrowing height, then the better mode; the earliest flavor on
ties.  Before its quota is asked, a flavor with ``spec.nodeTaints`` is checked against the podSet's
tolerations plus the flavor's own ``spec.tolerations`` (Kueue ``checkFlavorForPodSets``): a
``NoSchedule`` / ``NoExecute`` taint not tolerated makes the flavor not fit (``NoMatchingFlavor``,
``untolerated taint {key value effect <nil>} in flavor X``) and the search goes on.  The podSets
of a Kueue podSet group (``topologyRequest.podSetGroupName``) are assigned together, at the place
of the first: their requests summed, one flavor per resource for both (Kueue ``assignFlavors``),
each charged its own usage; a failure is reported for each of them.  Node-affinity
checks against flavor labels are not done.  A missing ResourceFlavor makes the whole ClusterQueue
inactive before assignment is tried (Kueue).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from statemodel.hierarchy import ClusterQueueEntry
from statemodel.limits import MAX_MESSAGE_STATUSES
from statemodel.objects import (
    FlavorFungibilityPolicy, FlavorFungibilityPreference, FlavorResource, PodSetPlacement, ResourceFlavor, Taint,
    Toleration, flavor_resource,
)
from statemodel.preemption.classical import FIT, NO_CANDIDATES, NO_FIT
from statemodel.quantity import format_quantity
from statemodel.quota.protocol import Fit, FitIfPreempting, QuotaModel, Shortfall
from statemodel.reasons import EXCEEDS_MAX_QUOTA, NO_MATCHING_FLAVOR, SEVERITY, WAITING_FOR_QUOTA
from statemodel.taints import taint_text, untolerated
from statemodel.workload import PodSetAssignment, WorkloadInfo


_REASON_BY_SEVERITY = {sev: reason for reason, sev in SEVERITY.items()}
_WAITING = SEVERITY[WAITING_FOR_QUOTA]
_TRY_NEXT_FLAVOR: Final = FlavorFungibilityPolicy.TRY_NEXT_FLAVOR
_PREEMPTION_OVER_BORROWING: Final = FlavorFungibilityPreference.PREEMPTION_OVER_BORROWING

Oracle = Callable[[FlavorResource, int], tuple[int, int]]
"""The preemption oracle of one head: ``(flavor-resource, amount needed including earlier podSets)``
→ ``(mode, borrowing height after the preemptions)`` with the modes of
``statemodel.preemption.classical`` (``NO_FIT`` when the ClusterQueue may not preempt for it); the
height of a mode at or below ``NO_CANDIDATES`` is not read."""


class PodSetStatus:
    """One reason a flavor (or no flavor) failed for a podSet: the model's ``shortfall`` and the
    podSet's own ``request`` of that resource (the rest of ``shortfall.needed`` was taken by earlier
    podSets).  A resource no resource group covers has reason ``NoMatchingFlavor`` and flavor ``""``;
    a flavor whose node ``taint`` the podSet does not tolerate has reason ``NoMatchingFlavor``, the
    flavor, the first resource of the group requested and ``available`` 0."""

    __slots__ = ("shortfall", "request", "taint")

    def __init__(self, shortfall: Shortfall, request: int, taint: Taint | None = None) -> None:
        self.shortfall = shortfall
        self.request = request
        self.taint = taint

    def __str__(self) -> str:
        sf = self.shortfall
        r = sf.resource
        if self.taint is not None:
            return f"untolerated taint {taint_text(self.taint)} in flavor {sf.flavor}"
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
        (integers in base units, as ``PodSetStatus`` and ``Shortfall`` define them), and for an
        untolerated flavor taint ``taint`` (``key``, ``value``, ``effect``).  PodSets in order, each
        podSet's statuses in the order the message lists them (sorted by their text)."""
        rows: list[dict] = []
        for ps, statuses in self.failures:
            for st in statuses if len(statuses) < 2 else sorted(statuses, key=str):
                sf = st.shortfall
                row = {"podSet": ps, "reason": str(sf.reason), "flavor": sf.flavor, "resource": sf.resource,
                       "node": sf.node, "needed": sf.needed, "available": sf.available, "request": st.request}
                if st.taint is not None:
                    row["taint"] = {"key": st.taint.key, "value": st.taint.value, "effect": str(st.taint.effect)}
                rows.append(row)
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
        preempting: every podSet got a flavor, and some only fit once victims are preempted (then
            ``fits`` is ``False`` and ``preempt_frs`` lists the flavor-resources of those flavors).
        borrowing: max borrowing height over the chosen flavors (0 = within nominal; for a preempt
            flavor, the height after the oracle's preemptions).
        pod_sets: the assignment per podSet (when ``fits`` or ``preempting``).
        usage: total quota to charge per ``(flavor, resource)``.
        preempt_frs: Kueue ``flavorResourcesNeedPreemption``, sorted.
        reason / message: Kueue ``QuotaReserved=False`` reason and message (when not ``fits``; the
            message is a ``NoFitMessage``, rendered by ``str``; when ``preempting`` it names what the
            preempt flavors are short of).
        wake: for every flavor that could fit once enough quota is released, the ``WaitingForQuota``
            shortfalls it has, largest deficit first (empty ⇒ only a configuration change can help).
    """

    __slots__ = ("fits", "preempting", "borrowing", "pod_sets", "usage", "preempt_frs", "reason", "message",
                 "wake")

    def __init__(self) -> None:
        self.fits = True
        self.preempting = False
        self.borrowing = 0
        self.pod_sets: list[PodSetAssignment] = []
        self.usage: dict[FlavorResource, int] = {}
        self.preempt_frs: list[FlavorResource] = []
        self.reason: str | None = None
        self.message: str | NoFitMessage = ""
        self.wake: list[list[Shortfall]] = []


def _deficit(sf: Shortfall) -> int:
    return sf.available - sf.needed


def _preferred(mode: int, borrow: int, best_mode: int, best_borrow: int, preemption_first: bool) -> bool:
    """Kueue ``isPreferred`` between two viable flavors (the earlier one wins ties)."""
    if preemption_first:
        if borrow != best_borrow:
            return borrow < best_borrow
        return mode > best_mode
    if mode != best_mode:
        return mode > best_mode
    return borrow < best_borrow


def _grouped(totals: list[tuple[str, int, tuple[tuple[str, int], ...]]], constraints: tuple[PodSetPlacement, ...]
             ) -> tuple[list[tuple[str, int, tuple[tuple[str, int], ...]]],
                        dict[str, list[tuple[str, int, tuple[tuple[str, int], ...]]]]]:
    """Kueue's podSet groups in flavor assignment: the podSets sharing a ``podSetGroupName`` are
    one unit at the place of the first, named after it, with their counts and totals summed (they
    get one flavor per resource, Kueue ``assignFlavors``).  Returns the units and, per unit that is
    a group, its members ``(name, count, totals)`` in order."""
    group_of = {c.pod_set: c.pod_set_group_name for c in constraints if c.pod_set_group_name is not None}
    units: list[tuple[str, int, tuple[tuple[str, int], ...]]] = []
    members: dict[str, list[tuple[str, int, tuple[tuple[str, int], ...]]]] = {}
    first: dict[str, str] = {}
    for entry in totals:
        group = group_of.get(entry[0])
        if group is None:
            units.append(entry)
        elif group not in first:
            first[group] = entry[0]
            members[entry[0]] = [entry]
            units.append(entry)
        else:
            members[first[group]].append(entry)
    for i, (name, _, _) in enumerate(units):
        group_members = members.get(name)
        if group_members is not None:
            summed: dict[str, int] = {}
            for _, _, member_totals in group_members:
                for r, a in member_totals:
                    summed[r] = summed.get(r, 0) + a
            units[i] = (name, sum(m[1] for m in group_members), tuple(sorted(summed.items())))
    return units, members


def assign_flavors(model: QuotaModel, cq: ClusterQueueEntry, info: WorkloadInfo,
                   flavors: dict[str, ResourceFlavor], oracle: Oracle | None = None) -> Assignment:
    """Assign flavors to every podSet of ``info`` in ClusterQueue ``cq`` against current usage;
    ``flavors``: the cluster's ResourceFlavors by name (their node taints and tolerations).

    Asks ``model.fit`` once per flavor tried, and ``oracle`` (when given: the ClusterQueue has a
    preemption policy) once per resource short in a flavor the model answers ``FitIfPreempting``
    for.  Pure apart from the oracle's undone what-ifs; O(podSets × flavors × the model's cost of a
    fit), plus the oracle's searches.
    """
    spec = cq.spec
    assert spec is not None, "flavors are only assigned in active ClusterQueues"
    leaf = cq.name
    rg_by_resource = cq.rg_by_resource
    fungibility = spec.flavor_fungibility
    try_next_on_borrow = fungibility.when_can_borrow == _TRY_NEXT_FLAVOR
    try_next_on_preempt = fungibility.when_can_preempt == _TRY_NEXT_FLAVOR
    preemption_first = fungibility.preference == _PREEMPTION_OVER_BORROWING
    result = Assignment()
    assumed = result.usage
    failures: list[tuple[str, list[PodSetStatus]]] = []
    preempt_statuses: list[tuple[str, list[PodSetStatus]]] = []
    preempt_frs: list[FlavorResource] = []
    omitted = 0
    worst = 0
    placement = info.obj.placement
    tolerations: dict[str, tuple[Toleration, ...]] | None = None  # by podSet, read when a flavor has taints
    units = info.totals
    groups: dict[str, list[tuple[str, int, tuple[tuple[str, int], ...]]]] = {}
    if placement is not None and any(c.pod_set_group_name is not None for c in placement.pod_sets):
        units, groups = _grouped(info.totals, placement.pod_sets)
    for ps_name, count, totals in units:
        members = groups.get(ps_name)
        names = [ps_name] if members is None else [m[0] for m in members]
        requests = list(totals)
        if cq.covers_pods:
            requests.append(("pods", count))
            requests.sort()
        chosen: dict[str, str] = {}
        handled: set[str] = set()
        ps_usage: dict[str, int] = {}
        ps_statuses: list[PodSetStatus] = []
        ps_preempt: list[PodSetStatus] = []
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
            best: tuple[int, int, str, list[PodSetStatus]] | None = None  # mode, borrow, flavor, statuses
            group_severity = None
            for flavor in group.flavors:
                fname = flavor.name
                rf = flavors.get(fname)
                if rf is not None and rf.node_taints:
                    if tolerations is None:
                        tolerations = {c.pod_set: c.tolerations for c in placement.pod_sets} if placement is not None else {}
                    taint = None
                    for name in names:
                        taint = untolerated(rf.node_taints, tolerations.get(name, ()) + rf.tolerations)
                        if taint is not None:
                            break
                    if taint is not None:
                        if len(ps_statuses) < MAX_MESSAGE_STATUSES:
                            res0, amount0 = group_requests[0]
                            ps_statuses.append(PodSetStatus(
                                Shortfall(NO_MATCHING_FLAVOR, fname, res0, leaf, amount0, 0), amount0, taint))
                        else:
                            omitted += 1
                        flavor_sev = SEVERITY[NO_MATCHING_FLAVOR]
                        group_severity = flavor_sev if group_severity is None else min(group_severity, flavor_sev)
                        continue
                request: list[tuple[FlavorResource, int]] = []
                for r, a in group_requests:
                    fr = flavor_resource(fname, r)
                    request.append((fr, assumed.get(fr, 0) + a))
                fit = model.fit(leaf, request)
                flavor_statuses: list[PodSetStatus] = []
                if isinstance(fit, Fit):
                    mode = FIT
                    borrow = fit.borrowing
                else:
                    amounts = dict(group_requests)
                    for sf in fit.shortfalls:
                        flavor_statuses.append(PodSetStatus(sf, amounts[sf.resource]))
                    mode = NO_FIT
                    borrow = 0
                    if oracle is not None and isinstance(fit, FitIfPreempting):
                        mode = FIT
                        borrow = fit.borrowing
                        for sf in fit.shortfalls:
                            sf_mode, sf_borrow = oracle(flavor_resource(sf.flavor, sf.resource), sf.needed)
                            if sf_mode < mode:
                                mode = sf_mode
                            if sf_borrow > borrow:
                                borrow = sf_borrow
                    if mode <= NO_CANDIDATES:
                        for st in flavor_statuses:
                            if len(ps_statuses) < MAX_MESSAGE_STATUSES:
                                ps_statuses.append(st)
                            else:
                                omitted += 1
                        flavor_sev = 0
                        shorts: list[Shortfall] = []
                        for sf in fit.shortfalls:
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
                if mode != FIT:  # a flavor it may preempt in: released quota may make this one fit
                    shorts = [st.shortfall for st in flavor_statuses]
                    shorts.sort(key=_deficit)  # largest deficit first
                    result.wake.append(shorts)
                if best is None or _preferred(mode, borrow, best[0], best[1], preemption_first):
                    best = (mode, borrow, fname, flavor_statuses)
                if mode != FIT and try_next_on_preempt:
                    continue
                if borrow > 0 and try_next_on_borrow:
                    continue
                break
            if best is None:
                ps_severity = max(ps_severity, group_severity or SEVERITY[NO_MATCHING_FLAVOR])
                continue
            mode, borrow, fname, flavor_statuses = best
            if borrow > result.borrowing:
                result.borrowing = borrow
            for r, a in group_requests:
                chosen[r] = fname
                ps_usage[r] = a
                fr = flavor_resource(fname, r)
                assumed[fr] = assumed.get(fr, 0) + a
                if mode != FIT:
                    preempt_frs.append(fr)
            if mode != FIT:
                ps_preempt.extend(flavor_statuses)
        if ps_severity:
            result.fits = False
            worst = max(worst, ps_severity)
            failures.extend((name, ps_statuses) for name in names)
        else:
            if members is None:
                result.pod_sets.append(PodSetAssignment(ps_name, count, chosen, ps_usage))
            else:
                for name, member_count, member_totals in members:
                    usage = {r: a for r, a in member_totals if r in chosen}
                    if "pods" in chosen:
                        usage["pods"] = member_count
                    result.pod_sets.append(PodSetAssignment(name, member_count, {r: chosen[r] for r in usage}, usage))
            if ps_preempt:
                preempt_statuses.extend((name, ps_preempt) for name in names)
    if not result.fits:
        if worst > _WAITING:
            result.wake = []  # some podSet can never fit: only a configuration change can help
        result.reason = _REASON_BY_SEVERITY[worst]
        result.message = NoFitMessage(failures, omitted)
        result.pod_sets = []
    elif preempt_frs:
        result.fits = False
        result.preempting = True
        result.preempt_frs = sorted(set(preempt_frs))
        result.reason = WAITING_FOR_QUOTA
        result.message = NoFitMessage(preempt_statuses)
    return result
