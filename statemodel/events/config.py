"""Parsers of the ``quotaledger.io`` API group: EngineConfig.

``EngineConfig`` carries the engine-wide settings of one cluster: the Kueue Configuration fields
the engine implements (``admissionFairSharing``, ``fairSharing``; durations in ms, weights in exact
thousandths), ``spec.quotaModel``, the quota model the cluster runs,
``spec.preemption.releaseOn``, when a victim's quota is freed, ``spec.placement``, the placement
stage (``enable``, ``nodeOrder``), ``spec.koordinator``, the
Koordinator ``ElasticQuotaArgs`` that change semantics, and ``spec.volcano``, the Volcano quota
plugin and its arguments (docs/events.md "Additions").  Pure.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any, Callable

from statemodel.events.fields import choice, fail, int_in, members, opt_bool, opt_list, opt_obj, qmap, shown
from statemodel.events.names import qualified_name_problem
from statemodel.objects import (
    AdmissionFairSharingConfig,
    GROUP_MAX_DEFAULT,
    ElasticQuotaArgs,
    EngineConfig,
    FairSharingPreemptionStrategy,
    KubeObject,
    PlacementConfig,
    PreemptionReleaseOn,
    VolcanoArgs,
)
from statemodel.quantity import MAX_AMOUNT
from statemodel.quota import registry
from statemodel.timefmt import parse_duration

API_VERSION = "quotaledger.io/v1alpha1"
"""The group's only version."""

_FINAL = FairSharingPreemptionStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE
_INITIAL = FairSharingPreemptionStrategy.LESS_THAN_INITIAL_SHARE
_STRATEGIES = members(_FINAL, _INITIAL)
_ALLOWED_STRATEGY_LISTS = ((_FINAL,), (_INITIAL,), (_FINAL, _INITIAL))
_DEFAULT_STRATEGIES = (_FINAL, _INITIAL)
_RELEASE_ON = members(PreemptionReleaseOn.DECISION, PreemptionReleaseOn.EVICTION)

def _milli_number(v: Any, path: str) -> int:
    """A JSON number ≥ 0 as exact thousandths (``0.5`` → 500)."""
    if type(v) is int:
        m = v * 1000
    elif type(v) is float:
        try:
            d = Decimal(repr(v)).scaleb(3)
        except InvalidOperation:  # pragma: no cover - repr of a float is always a valid Decimal
            fail(path, "must be a number")
        if not d.is_finite():
            fail(path, "must be a finite number")
        if d != d.to_integral_value():
            fail(path, f"must be a multiple of 0.001, got {v!r}")
        m = int(d)
    else:
        fail(path, "must be a number")
    if m < 0:
        fail(path, f"must not be negative, got {v!r}")
    if m > MAX_AMOUNT:
        fail(path, "too large")
    return m


def _quota_model(spec: dict, p: str) -> str:
    """``spec.quotaModel``: the name of a model registered in ``statemodel.quota.registry``
    (default ``kueue``); every model the event contract names (``kueue``, ``koordinator``,
    ``volcano``) is registered.
    """
    known = registry.names()
    return choice(spec, "quotaModel", p, {name: name for name in known}, registry.DEFAULT)


def _koordinator_args(spec: dict, p: str) -> ElasticQuotaArgs | None:
    """``spec.koordinator``: ``ElasticQuotaArgs`` field names, upstream defaults (reference §12)."""
    k = opt_obj(spec, "koordinator", p)
    if k is None:
        return None
    kp = f"{p}.koordinator"
    known = ("delayEvictTime", "monitorAllQuotas", "enableCheckParentQuota", "enableRuntimeQuota",
             "enableMinQuotaScale", "disableDefaultQuotaPreemption", "defaultQuotaGroupMax",
             "systemQuotaGroupMax", "revokePodInterval", "featureGates")
    for key in k:
        if key not in known:
            fail(f"{kp}.{key}", f"unknown field: must be one of {', '.join(known)}")
    delay = k.get("delayEvictTime")
    delay_ms = 120_000 if delay is None else parse_duration(delay, f"{kp}.delayEvictTime")
    interval = k.get("revokePodInterval")
    interval_ms = 1000 if interval is None else parse_duration(interval, f"{kp}.revokePodInterval")
    if interval_ms <= 0:
        fail(f"{kp}.revokePodInterval", "must be greater than 0")

    def group_max(key: str) -> tuple[tuple[str, int], ...]:
        raw = k.get(key)
        return GROUP_MAX_DEFAULT if raw is None else tuple(sorted(qmap(raw, f"{kp}.{key}").items()))

    gates = opt_obj(k, "featureGates", kp) or {}
    for gate in gates:
        if gate != "ElasticQuotaGuaranteeUsage":
            fail(f"{kp}.featureGates.{gate}", "unknown feature gate: must be ElasticQuotaGuaranteeUsage")
    return ElasticQuotaArgs(
        delay_ms, opt_bool(k, "monitorAllQuotas", kp, False), opt_bool(k, "enableCheckParentQuota", kp, False),
        opt_bool(k, "enableRuntimeQuota", kp, True), opt_bool(k, "enableMinQuotaScale", kp, True),
        opt_bool(k, "disableDefaultQuotaPreemption", kp, True), group_max("defaultQuotaGroupMax"),
        group_max("systemQuotaGroupMax"), opt_bool(gates, "ElasticQuotaGuaranteeUsage", f"{kp}.featureGates", False),
        interval_ms)


VOLCANO_PLUGINS = {"proportion": "proportion", "capacity": "capacity"}
"""``spec.volcano.plugin`` values: the quota plugin of the scheduler's tier."""


def _volcano_args(spec: dict, p: str) -> VolcanoArgs | None:
    """``spec.volcano``: the quota plugin (``proportion`` default, or ``capacity``) and the
    ``capacity`` plugin's ``enabledHierarchy`` / ``ancestorReclaimLevel`` (reference/volcano.md §2-3)."""
    v = opt_obj(spec, "volcano", p)
    if v is None:
        return None
    vp = f"{p}.volcano"
    known = ("plugin", "enabledHierarchy", "ancestorReclaimLevel")
    for key in v:
        if key not in known:
            fail(f"{vp}.{key}", f"unknown field: must be one of {', '.join(known)}")
    plugin = choice(v, "plugin", vp, VOLCANO_PLUGINS, "proportion")
    hierarchy = opt_bool(v, "enabledHierarchy", vp, False)
    raw_level = v.get("ancestorReclaimLevel")
    level = 0 if raw_level is None else int_in(raw_level, f"{vp}.ancestorReclaimLevel", 0, 64)
    if plugin == "proportion" and (hierarchy or level):
        fail(f"{vp}.plugin", "enabledHierarchy and ancestorReclaimLevel are arguments of the capacity plugin "
                             "(proportion is flat upstream)")
    if level and not hierarchy:
        fail(f"{vp}.ancestorReclaimLevel", "needs enabledHierarchy: true")
    return VolcanoArgs(plugin, hierarchy, level)


NODE_ORDERS = {"binpack": "binpack", "spread": "spread"}
"""``spec.placement.nodeOrder`` values (docs/placement.md)."""


def _placement(spec: dict, p: str) -> PlacementConfig | None:
    """``spec.placement``: ``enable`` (``None`` when not given) and ``nodeOrder`` (``binpack`` default, or
    ``spread``); ``None`` when absent."""
    pl = opt_obj(spec, "placement", p)
    if pl is None:
        return None
    pp = f"{p}.placement"
    for key in pl:
        if key not in ("enable", "nodeOrder"):
            fail(f"{pp}.{key}", "unknown field: must be one of enable, nodeOrder")
    enable = None if pl.get("enable") is None else opt_bool(pl, "enable", pp, False)
    return PlacementConfig(enable, choice(pl, "nodeOrder", pp, NODE_ORDERS, "binpack"))


def _parse_engine_config(o: dict, name: str, time_ms: int) -> EngineConfig:
    """Kueue Configuration fields (admission fair sharing, fair sharing), the cluster's quota model and
    when a preempted workload's quota is freed (``spec.preemption.releaseOn``)."""
    p = "object.spec"
    spec = opt_obj(o, "spec", "object") or {}
    afs = None
    a = opt_obj(spec, "admissionFairSharing", p)
    if a is not None:
        ap = f"{p}.admissionFairSharing"
        hl = a.get("usageHalfLifeTime")
        half_life = 0 if hl is None else parse_duration(hl, f"{ap}.usageHalfLifeTime")
        si = a.get("usageSamplingInterval")
        interval = 300_000 if si is None else parse_duration(si, f"{ap}.usageSamplingInterval")
        if interval <= 0:
            fail(f"{ap}.usageSamplingInterval", "must be greater than 0")
        weights_raw = opt_obj(a, "resourceWeights", ap) or {}
        weights = []
        for res, w in weights_raw.items():
            if not res:
                fail(f"{ap}.resourceWeights", "resource name must not be empty")
            problem = qualified_name_problem(res)
            if problem is not None:
                fail(f"{ap}.resourceWeights[{res[:253]}]", f"resource name {problem}")
            weights.append((res, _milli_number(w, f"{ap}.resourceWeights[{res}]")))
        rp = a.get("resetInactivityPeriod")
        reset = 0 if rp is None else parse_duration(rp, f"{ap}.resetInactivityPeriod")
        afs = AdmissionFairSharingConfig(half_life, interval, tuple(sorted(weights)), reset)
    enable = False
    strategies: tuple[FairSharingPreemptionStrategy, ...] = _DEFAULT_STRATEGIES
    fs = opt_obj(spec, "fairSharing", p)
    if fs is not None:
        fp = f"{p}.fairSharing"
        enable = opt_bool(fs, "enable", fp, False)
        raw = opt_list(fs, "preemptionStrategies", fp)
        if raw:
            for i, s in enumerate(raw):
                if not isinstance(s, str) or s not in _STRATEGIES:
                    fail(
                        f"{fp}.preemptionStrategies[{i}]",
                        f"unsupported value {shown(s)}: must be one of {', '.join(_STRATEGIES)}"
                        if isinstance(s, str)
                        else "must be a string",
                    )
            strategies = tuple(_STRATEGIES[s] for s in raw)
            if strategies not in _ALLOWED_STRATEGY_LISTS:
                fail(
                    f"{fp}.preemptionStrategies",
                    "must be [LessThanOrEqualToFinalShare], [LessThanInitialShare] or "
                    "[LessThanOrEqualToFinalShare, LessThanInitialShare]",
                )
    release_on = PreemptionReleaseOn.DECISION
    pr = opt_obj(spec, "preemption", p)
    if pr is not None:
        release_on = choice(pr, "releaseOn", f"{p}.preemption", _RELEASE_ON, PreemptionReleaseOn.DECISION)
    return EngineConfig(afs, enable, strategies, _quota_model(spec, p), release_on, _koordinator_args(spec, p),
                        _volcano_args(spec, p), _placement(spec, p))


KINDS: dict[str, dict[str, tuple[Callable[[dict, str, int], KubeObject], bool]]] = {
    API_VERSION: {"EngineConfig": (_parse_engine_config, False)},
}
"""apiVersion → kind → ``(parser, namespaced)``."""
