"""Admission fair sharing (KEP-4136, seed 001): decayed consumed usage, entry penalty, scores.

Semantics (seed 001 "Proposal" and "Entry penalty"; reference/kueue.md §5):

* Every LocalQueue has a consumed usage per resource, sampled on the event-time grid
  ``m × usageSamplingInterval`` (epoch-aligned): at each grid instant
  ``consumed = (1 - A) × consumed + A × current`` where ``current`` is the LocalQueue's admitted
  usage just before that instant and ``A = 1 - 0.5^(elapsed / usageHalfLifeTime)``.  Events at a
  grid instant are applied after its sample.  ``usageHalfLifeTime = 0`` keeps Kueue's behaviour:
  usage is forgotten at every sample and ``A`` (hence the entry penalty) is 0.
* Entry penalty: admitting a workload in a usage-based queue adds ``A(samplingInterval) × its
  total requests`` to its LocalQueue at once.  The penalty stands in for the usage the next sample
  will fold in, so it lasts until that grid instant, and is dropped if the workload leaves before
  it (one entry per workload: never added twice).
* ``resetInactivityPeriod`` (KEP-4136; Kueue has not implemented it): a LocalQueue that held no
  admitted usage and saw no change for that long restarts from zero.
* Score: ``Σ_r weight(r) × (consumed_r + penalty_r) / lqWeight`` with CPU in cores and other
  resources in base units, as Kueue; a weight of 0 gives +∞ (always last).

Determinism: all arithmetic is ``decimal`` in the fixed context ``CONTEXT`` (34 significant
digits, round-half-even) — libmpdec is platform independent, unlike libm's ``pow``.  Values are
evaluated lazily and canonically: a LocalQueue keeps an *anchor* (a time and the value there) and
its current usage; the value at any time is the closed form over the grid instants since the
anchor, and the anchor moves only when the usage changes.  So the numbers do not depend on when
or how often they are read (for example on ``Tick`` events).
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Context, Decimal

from statemodel.objects import AdmissionFairSharingConfig, FlavorResource

CONTEXT = Context(prec=34, rounding=ROUND_HALF_EVEN)
"""The decimal context of every AFS computation (IEEE 754 decimal128 precision)."""

ZERO = Decimal(0)
ONE = Decimal(1)
HALF = Decimal("0.5")
INFINITY = Decimal("Infinity")
_MILLI = Decimal(1000)


def unit_divisor(resource: str) -> Decimal:
    """Base units per Kueue score unit: CPU is tracked in millicores and scored in cores."""
    return _MILLI if resource == "cpu" else ONE


class DecayParams:
    """The AFS configuration in usable form (``EngineConfig.spec.admissionFairSharing``).

    Attributes:
        interval_ms / half_life_ms / reset_ms: the config durations in ms.
        weights: resource → weight (default 1).
        retain: ``0.5^(interval / halfLife)``, the factor one sample keeps (0 when halfLife = 0).
        alpha: ``1 - retain`` (0 when halfLife = 0, as Kueue) — the entry-penalty factor.
    """

    __slots__ = ("interval_ms", "half_life_ms", "reset_ms", "weights", "retain", "alpha", "_powers", "_partial")

    def __init__(self, config: AdmissionFairSharingConfig) -> None:
        self.interval_ms = config.usage_sampling_interval_ms
        self.half_life_ms = config.usage_half_life_ms
        self.reset_ms = config.reset_inactivity_period_ms
        self.weights = {res: CONTEXT.divide(Decimal(milli), _MILLI) for res, milli in config.resource_weights_milli}
        self._powers: dict[int, Decimal] = {}
        self._partial: dict[int, Decimal] = {}
        if self.half_life_ms == 0:
            self.retain = ZERO
            self.alpha = ZERO
        else:
            self.retain = self.retained(self.interval_ms)
            self.alpha = CONTEXT.subtract(ONE, self.retain)

    def retained(self, elapsed_ms: int) -> Decimal:
        """``0.5^(elapsed / halfLife)``: the share of consumed usage left after ``elapsed_ms``."""
        if self.half_life_ms == 0:
            return ZERO
        cached = self._partial.get(elapsed_ms)
        if cached is None:
            exponent = CONTEXT.divide(Decimal(elapsed_ms), Decimal(self.half_life_ms))
            cached = self._partial[elapsed_ms] = CONTEXT.power(HALF, exponent)
        return cached

    def retained_after(self, samples: int) -> Decimal:
        """``retain^samples`` (memoized)."""
        cached = self._powers.get(samples)
        if cached is None:
            cached = self._powers[samples] = CONTEXT.power(self.retain, samples)
        return cached

    def weight(self, resource: str) -> Decimal:
        """``resourceWeights[resource]``, default 1."""
        return self.weights.get(resource, ONE)


def _blend(keep: Decimal, take: Decimal, old: Decimal, current: int) -> Decimal:
    """``keep × old + take × current`` in ``CONTEXT`` (``take = 1 - keep``)."""
    if not current:
        return CONTEXT.multiply(keep, old)
    return CONTEXT.add(CONTEXT.multiply(keep, old), CONTEXT.multiply(take, Decimal(current)))


class UsageLedger:
    """Consumed usage of one LocalQueue, evaluated lazily from an anchor.

    Attributes:
        anchor_ms: time of the last fold (a grid instant, the creation time or a persisted
            ``lastUpdate``); ``anchor``: consumed per resource there (base units).
        current: admitted usage per resource (base units, flavors summed) since ``active_ms``.
        active_ms: when ``current`` last changed.
        penalties: per workload key, (admission time, penalty per resource in base units).
    """

    __slots__ = ("anchor_ms", "anchor", "current", "active_ms", "penalties", "version")

    def __init__(self, now_ms: int, consumed: dict[str, Decimal] | None = None) -> None:
        self.version = 0
        self.anchor_ms = now_ms
        self.anchor: dict[str, Decimal] = consumed or {}
        self.current: dict[str, int] = {}
        self.active_ms = now_ms
        self.penalties: dict[str, tuple[int, dict[str, Decimal]]] = {}

    def _effective_anchor(self, params: DecayParams, now_ms: int) -> tuple[int, dict[str, Decimal]]:
        """The anchor after an inactivity reset that happened by ``now_ms``, if any."""
        if params.reset_ms and not any(self.current.values()):
            reset_at = self.active_ms + params.reset_ms
            if self.anchor_ms < reset_at <= now_ms:
                return reset_at, {}
        return self.anchor_ms, self.anchor

    def consumed_at(self, params: DecayParams, now_ms: int) -> tuple[dict[str, Decimal], int]:
        """Consumed usage per resource after every grid instant ``<= now_ms``, and the last fold time."""
        anchor_ms, anchor = self._effective_anchor(params, now_ms)
        interval = params.interval_ms
        first = (anchor_ms // interval + 1) * interval
        if first > now_ms:
            return anchor, anchor_ms
        last = now_ms // interval * interval
        samples = (last - first) // interval  # full intervals after the first fold
        if params.half_life_ms == 0:
            return {}, last
        keep_first = params.retained(first - anchor_ms)
        take_first = CONTEXT.subtract(ONE, keep_first)
        keep_rest = params.retained_after(samples) if samples else ONE
        take_rest = CONTEXT.subtract(ONE, keep_rest)
        current = self.current
        out: dict[str, Decimal] = {}
        for res, old in anchor.items():  # anchor keys, then new ones: a deterministic order
            amount = current.get(res, 0)
            value = _blend(keep_first, take_first, old, amount)
            out[res] = _blend(keep_rest, take_rest, value, amount) if samples else value
        for res, amount in current.items():
            if res not in out:
                value = _blend(keep_first, take_first, ZERO, amount)
                out[res] = _blend(keep_rest, take_rest, value, amount) if samples else value
        return out, last

    def set_current(self, params: DecayParams, now_ms: int, usage: dict[str, int], sign: int = 1) -> bool:
        """Admitted usage changes at ``now_ms`` by ``sign × usage``: fold with the old usage first.

        Returns whether the anchor moved (a sampling instant or reset passed since it)."""
        interval = params.interval_ms
        moved = (self.anchor_ms // interval + 1) * interval <= now_ms or bool(params.reset_ms)
        if moved:
            self.anchor, self.anchor_ms = self.consumed_at(params, now_ms)
        current = self.current
        for res, amount in usage.items():
            current[res] = current.get(res, 0) + sign * amount
        self.active_ms = now_ms
        self.version += 1
        return moved

    def rebase(self, params: DecayParams, now_ms: int) -> None:
        """Fold up to ``now_ms`` under ``params`` (before the configuration changes)."""
        self.anchor, self.anchor_ms = self.consumed_at(params, now_ms)

    def penalty_at(self, params: DecayParams, now_ms: int) -> dict[str, Decimal]:
        """Entry penalties of workloads admitted after the last grid instant ``<= now_ms``."""
        out: dict[str, Decimal] = {}
        if not self.penalties:
            return out
        interval = params.interval_ms
        for admitted_ms, amounts in self.penalties.values():
            if (admitted_ms // interval + 1) * interval > now_ms:
                for res, amount in amounts.items():
                    out[res] = CONTEXT.add(out.get(res, ZERO), amount)
        return dict(sorted(out.items()))

    def add_penalty(self, params: DecayParams, now_ms: int, workload: str, requests: dict[str, int]) -> None:
        """Charge ``A(samplingInterval) × requests`` for a workload admitted at ``now_ms``."""
        interval = params.interval_ms
        penalties = self.penalties
        while penalties:  # admission order: sampled penalties are at the front
            first = next(iter(penalties))
            if (penalties[first][0] // interval + 1) * interval > now_ms:
                break
            del penalties[first]
        penalties.pop(workload, None)
        self.version += 1
        if params.alpha:
            alpha = params.alpha
            penalties[workload] = (now_ms, {res: CONTEXT.multiply(alpha, Decimal(amount))
                                            for res, amount in requests.items()})

    def drop_penalty(self, workload: str) -> None:
        """The workload left (or its penalty was sampled): forget its penalty."""
        if self.penalties.pop(workload, None) is not None:
            self.version += 1


def score(params: DecayParams, consumed: dict[str, Decimal], penalty: dict[str, Decimal], weight_milli: int) -> Decimal:
    """Kueue ``CalculateUsage``: weighted consumed + penalty in score units, divided by the queue weight.

    ``weight_milli`` is the fairSharing weight × 1000; 0 gives +∞.
    """
    if weight_milli <= 0:
        return INFINITY
    total = ZERO
    for res in sorted(set(consumed) | set(penalty)):
        amount = CONTEXT.add(consumed.get(res, ZERO), penalty.get(res, ZERO))
        total = CONTEXT.add(total, CONTEXT.multiply(params.weight(res), CONTEXT.divide(amount, unit_divisor(res))))
    return CONTEXT.divide(CONTEXT.multiply(total, _MILLI), Decimal(weight_milli))


def flatten(charge: dict[FlavorResource, int]) -> dict[str, int]:
    """Quota per ``(flavor, resource)`` → per resource (AFS sums flavors, as Kueue)."""
    out: dict[str, int] = {}
    for (_, res), amount in charge.items():
        out[res] = out.get(res, 0) + amount
    return out


class FairSharingLedgers:
    """The AFS state of one cluster: configuration and one ``UsageLedger`` per LocalQueue.

    ``params`` is ``None`` while ``EngineConfig.spec.admissionFairSharing`` is absent (AFS off, as
    Kueue's ``afs.Enabled``); ledgers seeded from a persisted status are kept for when it is on.
    """

    __slots__ = ("params", "ledgers", "_touched", "_scores")

    def __init__(self) -> None:
        self.params: DecayParams | None = None
        self.ledgers: dict[str, UsageLedger] = {}
        self._touched: dict[str, None] = {}
        self._scores: dict[str, tuple[int, int, int, Decimal]] = {}

    def configure(self, config: AdmissionFairSharingConfig | None, now_ms: int,
                  admitted: list[tuple[str, dict[str, int]]]) -> None:
        """Apply a new configuration at ``now_ms``; ``admitted`` lists ``(LocalQueue, usage)`` of every
        admitted workload (used when AFS turns on)."""
        old = self.params
        self._scores.clear()
        self._touched.update(dict.fromkeys(self.ledgers))
        if old is not None:
            for ledger in self.ledgers.values():
                ledger.rebase(old, now_ms)
        self.params = DecayParams(config) if config is not None else None
        if old is None and self.params is not None:
            for ledger in self.ledgers.values():
                ledger.current = {}
                ledger.rebase(self.params, now_ms)
            for lq_key, usage in admitted:
                self.ledger(lq_key, now_ms).set_current(self.params, now_ms, usage)

    def ledger(self, lq_key: str, now_ms: int) -> UsageLedger:
        """The ledger of ``lq_key``, created empty at ``now_ms`` if new."""
        ledger = self.ledgers.get(lq_key)
        if ledger is None:
            ledger = self.ledgers[lq_key] = UsageLedger(now_ms)
            self._touched[lq_key] = None
        return ledger

    def seed(self, lq_key: str, consumed: tuple[tuple[str, int], ...], last_update_ms: int) -> None:
        """Start a new LocalQueue from Kueue's persisted ``admissionFairSharingStatus``."""
        if lq_key not in self.ledgers:
            self.ledgers[lq_key] = UsageLedger(last_update_ms, {res: Decimal(amount) for res, amount in consumed})
            self._touched[lq_key] = None

    def charged(self, lq_key: str, workload: str, usage: dict[str, int], now_ms: int, penalize: bool) -> None:
        """A workload of ``lq_key`` now holds ``usage``; ``penalize`` adds its entry penalty."""
        if self.params is None:
            return
        ledger = self.ledger(lq_key, now_ms)
        if ledger.set_current(self.params, now_ms, usage):
            self._touched[lq_key] = None
        if penalize:
            ledger.add_penalty(self.params, now_ms, workload, usage)

    def released(self, lq_key: str, workload: str, usage: dict[str, int], now_ms: int) -> None:
        """A workload of ``lq_key`` gave back ``usage``; a penalty not yet sampled is dropped."""
        if self.params is None:
            return
        ledger = self.ledger(lq_key, now_ms)
        if ledger.set_current(self.params, now_ms, usage, -1):
            self._touched[lq_key] = None
        ledger.drop_penalty(workload)

    def take_changes(self) -> bytes:
        """Canonical bytes of every ledger whose anchor — the decayed value — moved since the last
        call, so the hash chain covers the decayed values themselves (admitted usage and penalties
        follow from the decisions, which it covers already); ``b""`` when none moved."""
        if not self._touched:
            return b""
        parts = []
        for key in self._touched:
            ledger = self.ledgers.get(key)
            if ledger is None:
                continue
            anchor = ",".join(f"{res}={value}" for res, value in sorted(ledger.anchor.items()))
            parts.append(f"{key}|{ledger.anchor_ms}|{anchor}")
        self._touched.clear()
        return "\n".join(parts).encode()

    def totals(self, lq_keys: list[str], now_ms: int) -> tuple[dict[str, Decimal], dict[str, Decimal], int]:
        """Summed consumed and penalty (base units) of ``lq_keys`` at ``now_ms``, and the last fold time."""
        params = self.params
        assert params is not None
        consumed: dict[str, Decimal] = {}
        penalty: dict[str, Decimal] = {}
        last = now_ms // params.interval_ms * params.interval_ms
        for key in lq_keys:
            ledger = self.ledgers.get(key)
            if ledger is None:
                continue
            values, _ = ledger.consumed_at(params, now_ms)
            for res, amount in values.items():
                consumed[res] = CONTEXT.add(consumed.get(res, ZERO), amount)
            for res, amount in ledger.penalty_at(params, now_ms).items():
                penalty[res] = CONTEXT.add(penalty.get(res, ZERO), amount)
        return dict(sorted(consumed.items())), dict(sorted(penalty.items())), last

    def score(self, lq_keys: list[str], weight_milli: int, now_ms: int) -> Decimal:
        """Score of a LocalQueue (one key) or of a ClusterQueue / Cohort (its LocalQueues)."""
        assert self.params is not None
        consumed, penalty, _ = self.totals(lq_keys, now_ms)
        return score(self.params, consumed, penalty, weight_milli)

    def local_queue_score(self, lq_key: str, weight_milli: int, now_ms: int) -> Decimal:
        """``score([lq_key], ...)``, memoized until the ledger changes or time moves on."""
        ledger = self.ledgers.get(lq_key)
        version = ledger.version if ledger is not None else -1
        cached = self._scores.get(lq_key)
        if cached is not None and cached[0] == now_ms and cached[1] == version and cached[2] == weight_milli:
            return cached[3]
        value = self.score([lq_key], weight_milli, now_ms)
        self._scores[lq_key] = (now_ms, version, weight_milli, value)
        return value
