"""Koordinator's runtime arithmetic for one dimension of one parent's children: per-dimension
water-filling over shared weights (``runtime_quota_calculator.go``) and min scaling
(``scale_minquota_when_over_root_res.go``); reference/koordinator.md §2 and §4, seed 002
"Calculate RuntimeQuota".

Everything is integer arithmetic on base units, so results are exact and identical on any machine.
Children are given sorted by quota name: the largest-remainder (Hamilton) rounding breaks equal
remainders by quota name ascending, as upstream does.
"""

from __future__ import annotations

from typing import NamedTuple


class Share(NamedTuple):
    """One child in one dimension, as its parent's calculator sees it (upstream ``quotaNode``).

    Attributes:
        name: the quota name (the last tie-break).
        request: the child's limited request, ``min(request, max)``.
        min: the child's ``autoScaleMin`` (its min, or the scaled-down min).
        guarantee: the child's ``guaranteed`` (0 unless ``ElasticQuotaGuaranteeUsage``).
        weight: the child's shared weight.
        allow_lent: whether it lends its unused min (``allow-lent-resource``).
    """

    name: str
    request: int
    min: int
    guarantee: int
    weight: int
    allow_lent: bool


def hamilton(total: int, weights: list[int], names: list[str]) -> list[int]:
    """Split ``total`` over ``weights`` by the largest-remainder method (upstream
    ``computeHamiltonDeltas``): ``floor(w·total/W)`` each, then the leftover units one each to the
    largest remainders ``w·total mod W`` (ties: name ascending).  Zero weights get nothing; the
    parts sum to ``total`` whenever some weight is positive.  ``total`` ≥ 0."""
    positive = [i for i, w in enumerate(weights) if w > 0]
    deltas = [0] * len(weights)
    big_w = sum(weights[i] for i in positive)
    if big_w <= 0 or total <= 0:
        return deltas
    rems = []
    given = 0
    for i in positive:
        base, rem = divmod(weights[i] * total, big_w)
        deltas[i] = base
        given += base
        rems.append((-rem, names[i], i))
    rems.sort()
    for _, _, i in rems[:total - given]:
        deltas[i] += 1
    return deltas


def redistribute(total: int, shares: list[Share]) -> list[int]:
    """The runtime of each child of one parent in one dimension (upstream ``redistribution`` and
    ``iterationForRedistribution``; reference §2).

    Each child first gets ``m = max(min, guarantee)`` when it asks for more than ``m`` (a borrower),
    its request when it asks for less and lends, else ``m``.  What is left of ``total`` is shared
    among the borrowers by weight with Hamilton rounding; a borrower that reaches its request
    returns the surplus, which is shared again among the still hungry ones, until nothing is left
    or nobody is hungry.  Unrequested capacity stays unassigned; when the floors exceed ``total``
    nothing is shared (runtime may then exceed ``total``: min scaling exists to prevent that).

    Args:
        total: what the parent shares in this dimension (base units; may be ≤ 0).
        shares: the children, sorted by name.

    Returns:
        Runtimes in the order of ``shares``.
    """
    runtime = [0] * len(shares)
    hungry: list[int] = []
    pool = total
    wanted = 0
    all_weighted = True
    for i, s in enumerate(shares):
        floor = s.min if s.min > s.guarantee else s.guarantee
        if s.request > floor:
            runtime[i] = floor
            hungry.append(i)
            wanted += s.request - floor
            all_weighted = all_weighted and s.weight > 0
        elif s.allow_lent:
            runtime[i] = s.request
        else:
            runtime[i] = floor
        pool -= runtime[i]
    if all_weighted and wanted <= pool:  # every borrower is served in full (the rounds would end so)
        for i in hungry:
            runtime[i] = shares[i].request
        return runtime
    while pool > 0 and hungry:
        weights = [shares[i].weight for i in hungry]
        deltas = hamilton(pool, weights, [shares[i].name for i in hungry])
        if not any(deltas):
            break
        pool = 0
        still = []
        for i, delta in zip(hungry, deltas):
            got = runtime[i] + delta
            want = shares[i].request
            if got < want:
                runtime[i] = got
                still.append(i)
            else:
                pool += got - want
                runtime[i] = want
        hungry = still
    return runtime


def scaled_mins(total: int, mins: list[int]) -> list[int]:
    """Children's mins in one dimension after min scaling (upstream ``getScaledMinQuota`` with every
    child scaling, as the plugin configures it): unchanged while ``total ≥ Σ mins``; otherwise
    ``floor(total · min_i / Σ mins)``, and 0 when ``total ≤ 0``.  Upstream computes the product in
    float64 and truncates; the exact floor is used here (docs/koordinator.md, departures)."""
    whole = sum(mins)
    if total >= whole:
        return list(mins)
    if total <= 0:
        return [0] * len(mins)
    return [total * m // whole for m in mins]
