"""Volcano's queue arithmetic (reference/volcano.md §0-3): capability, ``realCapability``,
proportion's weighted water-filling of ``deserved``, and the capacity plugin's hierarchical
``deserved`` / ``guarantee`` / ``realCapability`` computed top-down.

Representation: resources are ``dict[str, int]`` in base units; a capability or realCapability
dict leaves out the dimensions that are **infinite** (upstream ``MaxFloat64``); proportion's
``deserved`` is exact (``dict[str, Fraction]``), so no float rounding decides anything.  Upstream
compares float64 values with a 0.1 tolerance (``minResource``): with integer base units and exact
fractions the comparisons here are exact, which differs only when a deserved share lies within 0.1
of a millicore / byte / milli-unit above an allocation (documented in docs/volcano.md).  Pure.
"""

from __future__ import annotations

from fractions import Fraction

Resources = dict[str, int]
Exact = dict[str, Fraction]
_ZERO = Fraction(0)
_CPU_MEMORY = ("cpu", "memory")


def effective_capability(capability: Resources) -> Resources:
    """``spec.capability`` with ``cpu`` / ``memory`` ``<= 0`` left out (infinite, as upstream's
    ``MaxFloat64``); other missing dimensions are infinite too."""
    return {r: v for r, v in capability.items() if v > 0 or r not in _CPU_MEMORY}


def real_capability(capability: Resources, total: Resources, total_guarantee: Resources,
                    guarantee: Resources) -> Resources:
    """Flat ``realCapability = min(capability, ExceededPart(total, Σ guarantee) + guarantee)``
    (proportion and the capacity plugin's flat mode, reference §1.2).

    ``capability`` is effective (missing = infinite); dimensions of neither the cluster total nor
    the guarantee get ``0 + guarantee``; the result leaves out infinite dimensions."""
    out: Resources = {}
    for r in sorted(set(total) | set(guarantee)):
        bound = max(0, total.get(r, 0) - total_guarantee.get(r, 0)) + guarantee.get(r, 0)
        cap = capability.get(r)
        out[r] = bound if cap is None or bound < cap else cap
    for r, cap in capability.items():
        if r not in out:
            out[r] = cap
    return out


def within(used: Resources, request: Resources, limit: Resources) -> list[str]:
    """The dimensions of ``request`` (amount > 0) where ``used + request <= limit`` fails (missing
    ``limit`` = infinite; upstream ``LessEqualWithDimension``, no tolerance); sorted."""
    out = []
    for r in sorted(request):
        amount = request[r]
        if amount > 0:
            cap = limit.get(r)
            if cap is not None and used.get(r, 0) + amount > cap:
                out.append(r)
    return out


def water_fill(total: Resources, queues: list[tuple[str, int, Resources, Resources, Resources]]) -> dict[str, Exact]:
    """Proportion's ``deserved`` (reference §1.3), exactly.

    ``queues``: ``(name, weight, realCapability, request, guarantee)`` of the queues in the session
    (those with a PodGroup), in name order.  Each round every queue not yet met gets
    ``remaining * weight / Σ weights`` more, capped by its realCapability and its request (dimensions
    its request does not name: 0) and raised to its guarantee; a queue is met when its request is
    within its deserved or its deserved did not grow; what the caps cut off is shared again, until
    nothing remains or nothing changed.  Returns ``{name: {resource: Fraction}}``."""
    dims = sorted(set(total).union(*(set(q[3]) | set(q[4]) for q in queues)) if queues else set(total))
    remaining: Exact = {r: Fraction(total.get(r, 0)) for r in dims}
    deserved: dict[str, Exact] = {q[0]: {r: _ZERO for r in dims} for q in queues}
    met: set[str] = set()
    while True:
        weights = sum(q[1] for q in queues if q[0] not in met)
        if weights == 0:
            break
        increased = {r: _ZERO for r in dims}
        decreased = {r: _ZERO for r in dims}
        for name, weight, real, request, guarantee in queues:
            if name in met:
                continue
            old = deserved[name]
            new: Exact = {}
            for r in dims:
                v = old[r] + remaining[r] * weight / weights
                cap = real.get(r)
                if cap is not None and v > cap:
                    v = Fraction(cap)
                req = request.get(r, 0)
                if v > req:
                    v = Fraction(req)
                g = guarantee.get(r, 0)
                if v < g:
                    v = Fraction(g)
                new[r] = v
                if v > old[r]:
                    increased[r] += v - old[r]
                else:
                    decreased[r] += old[r] - v
            deserved[name] = new
            if all(request.get(r, 0) <= new[r] for r in dims) or new == old:
                met.add(name)
        left = {r: max(_ZERO, remaining[r] + decreased[r] - increased[r]) for r in dims}
        if not any(left.values()) or left == remaining:
            break
        remaining = left
    return deserved


def capacity_deserved(deserved: Resources, real: Resources, guarantee: Resources) -> Resources:
    """The capacity plugin's flat ``deserved``: ``spec.deserved`` capped by realCapability, raised
    to the guarantee (reference §2)."""
    out = {r: (v if real.get(r) is None or v <= real[r] else real[r]) for r, v in deserved.items()}
    for r, g in guarantee.items():
        if out.get(r, 0) < g:
            out[r] = g
    return out


def hierarchical(children: dict[str, list[str]], capability: dict[str, Resources],
                 guarantee: dict[str, Resources], deserved: dict[str, Resources], root: str
                 ) -> tuple[dict[str, Resources], dict[str, Resources], dict[str, Resources], dict[str, Resources]]:
    """The capacity plugin's hierarchical numbers, top-down from ``root`` (reference §3.3-3.4).

    ``children``: sorted child names per queue; ``capability`` (effective, missing = infinite),
    ``guarantee``, ``deserved``: the specs per queue.  Each child inherits the capability
    dimensions it leaves infinite from its parent; ``deserved = max(deserved, guarantee)``;
    ``realCapability = min(capability, ExceededPart(parent.realCapability, Σ siblings' guarantee)
    + guarantee)``; the root's realCapability is its capability (infinite when empty: the cluster
    total does not bound it), its guarantee and deserved the sums of its children's.

    Returns ``(capability, realCapability, guarantee, deserved)`` per queue reached from ``root``."""
    cap_out: dict[str, Resources] = {root: dict(capability.get(root, {}))}
    real_out: dict[str, Resources] = {root: dict(capability.get(root, {}))}
    g_out: dict[str, Resources] = {}
    d_out: dict[str, Resources] = {}
    stack = [root]
    while stack:
        parent = stack.pop()
        kids = children.get(parent, [])
        sum_g: Resources = {}
        for kid in kids:
            for r, v in guarantee.get(kid, {}).items():
                sum_g[r] = sum_g.get(r, 0) + v
        p_cap, p_real = cap_out[parent], real_out[parent]
        for kid in kids:
            cap = dict(p_cap)
            cap.update(capability.get(kid, {}))
            g = dict(guarantee.get(kid, {}))
            real: Resources = {}
            for r in sorted(set(p_real) | set(cap)):
                pr = p_real.get(r)
                bound = None if pr is None else max(0, pr - sum_g.get(r, 0)) + g.get(r, 0)
                c = cap.get(r)
                if bound is None:
                    if c is not None:
                        real[r] = c
                else:
                    real[r] = bound if c is None or bound < c else c
            d = dict(deserved.get(kid, {}))
            for r, v in g.items():
                if d.get(r, 0) < v:
                    d[r] = v
            cap_out[kid], real_out[kid], g_out[kid], d_out[kid] = cap, real, g, d
            stack.append(kid)
    root_g: Resources = {}
    root_d: Resources = {}
    for kid in children.get(root, []):
        for r, v in g_out[kid].items():
            root_g[r] = root_g.get(r, 0) + v
        for r, v in d_out[kid].items():
            root_d[r] = root_d.get(r, 0) + v
    g_out[root], d_out[root] = root_g, root_d
    return cap_out, real_out, g_out, d_out
