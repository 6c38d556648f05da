"""Kubernetes resource quantities as exact integers (EVENTS.md "Quantities").

Grammar and suffixes follow ``k8s.io/apimachinery/pkg/api/resource`` ``ParseQuantity``::

    <quantity> ::= <sign><number><suffix>
    <number>   ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
    <suffix>   ::= "" | n | u | m | k | M | G | T | P | E        (decimal SI)
                 | Ki | Mi | Gi | Ti | Pi | Ei                  (binary SI)
                 | e<signed int> | E<signed int>                (decimal exponent)

Units follow Kueue ``resources.AmountFromQuantity`` (``pkg/resources/amount.go``):
``cpu`` is counted in millicores (``MilliValue``), every other resource in base
units (``Value``: bytes, devices).  Unlike Kubernetes, which rounds up, a value
that is not a whole number of units is an error (EVENTS.md: "A fractional value
of a resource that must be whole is an error"), and a value above ``2**63-1``
is an error instead of Kueue's ``Unlimited`` sentinel.

Pure: no I/O, exact integer arithmetic only (never ``float``).
"""

from __future__ import annotations

from functools import lru_cache

from statemodel.decimal_scan import DIGITS, scan_decimal
from statemodel.errors import EventError
from statemodel.limits import MAX_QUANTITY_CHARS

MAX_AMOUNT = 2**63 - 1
"""Largest accepted amount in base units (int64, as Kueue ``resources.Amount``)."""

_DECIMAL_SUFFIX = {"": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIX = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_INT32_MAX = 2**31 - 1


def _split(s: str) -> tuple[int, int, int] | str:
    """Split a quantity string into ``(mantissa, exp10, exp2)`` with value ``mantissa * 10**exp10 * 2**exp2``.

    Returns a problem string when the syntax is invalid or the value negative.
    """
    n = len(s)
    i = 0
    negative = False
    if n and s[0] in "+-":
        negative = s[0] == "-"
        i = 1
    int_part, frac_part, i = scan_decimal(s, i)
    if not int_part and not frac_part:
        return f"invalid quantity {s!r}"
    suffix = s[i:]
    exp10 = -len(frac_part)
    exp2 = 0
    if suffix in _DECIMAL_SUFFIX:
        exp10 += _DECIMAL_SUFFIX[suffix]
    elif suffix in _BINARY_SUFFIX:
        exp2 = _BINARY_SUFFIX[suffix]
    elif len(suffix) > 1 and suffix[0] in "eE":
        e = suffix[1:]
        digits = e[1:] if e[0] in "+-" else e
        if not digits or not all(c in DIGITS for c in digits):
            return f"invalid quantity {s!r}"
        ev = int(e)
        if abs(ev) > _INT32_MAX:  # Go parses the exponent as int32
            return f"invalid quantity {s!r}"
        exp10 += ev
    else:
        return f"invalid quantity {s!r}"
    digits = (int_part + frac_part).lstrip("0")
    if not digits:
        return 0, 0, 0
    if negative:
        return f"must not be negative, got {s!r}"
    stripped = digits.rstrip("0")
    exp10 += len(digits) - len(stripped)
    return int(stripped), exp10, exp2


def _to_units(s: str, exp_shift: int) -> int | str:
    """Exact value of quantity ``s`` times ``10**exp_shift`` as an int, or a problem string."""
    parts = _split(s)
    if isinstance(parts, str):
        return parts
    mantissa, exp10, exp2 = parts
    if mantissa == 0:
        return 0
    exp10 += exp_shift
    # mantissa >= 1 and has no factor 10; bound exponents before building any big power.
    if exp10 > 19:  # >= 10**20 > 2**63
        return f"too large: {s!r} exceeds {MAX_AMOUNT} base units"
    num = mantissa << exp2
    if exp10 >= 0:
        value = num * 10**exp10
    else:
        k = -exp10
        # Divisibility by 10**k needs 5**k | mantissa, impossible once 5**k > 2**(2k) >= mantissa.
        if 2 * k >= mantissa.bit_length() + 1 or num % 10**k:
            return f"fractional value {s!r} not allowed: must be a whole number of base units"
        value = num // 10**k
    if value > MAX_AMOUNT:
        return f"too large: {s!r} exceeds {MAX_AMOUNT} base units"
    return value


@lru_cache(maxsize=4096)
def _parse_str_cached(milli: bool, s: str) -> int | str:
    return _to_units(s, 3 if milli else 0)


def _parse(milli: bool, value: object, path: str, what: str) -> int:
    if type(value) is str:
        if len(value) > MAX_QUANTITY_CHARS:
            raise EventError(path, f"{what} too long: {len(value)} characters, at most {MAX_QUANTITY_CHARS}")
        if value.isdigit() and value.isascii():  # fast path: plain integer
            r: int | str = int(value) * 1000 if milli else int(value)
            if r > MAX_AMOUNT:  # type: ignore[operator]
                r = f"too large: {value!r} exceeds {MAX_AMOUNT} base units"
        else:
            r = _parse_str_cached(milli, value)
    elif type(value) is int:
        if value < 0:
            raise EventError(path, f"must not be negative, got {value}")
        r = value * 1000 if milli else value
        if r > MAX_AMOUNT:
            r = f"too large: {value} exceeds {MAX_AMOUNT} base units"
    elif type(value) is float:
        # A JSON number with a fraction or exponent: accepted exactly where the same digits as a string would be.
        text = repr(value)
        if text in ("nan", "inf", "-inf"):
            raise EventError(path, f"invalid {what} {text}")
        r = _parse_str_cached(milli, text)
    else:
        raise EventError(path, f"must be a {what} (string or integer)")
    if type(r) is str:
        raise EventError(path, r)
    return r  # type: ignore[return-value]


def parse_quantity(resource: str, value: object, path: str) -> int:
    """Parse a Kubernetes quantity for ``resource`` into integer base units.

    Args:
        resource: resource name; ``"cpu"`` is returned in millicores, anything else in base units.
        value: a quantity string (``"500m"``, ``"2"``, ``"4Gi"``, ``"1.5"``, ``"1e3"``), a JSON integer
            (cores, bytes, counts), or a JSON float (accepted exactly as its decimal text would be).
            ``bool`` is rejected.
        path: field path used in errors.

    Returns:
        ``cpu``: millicores (``"2"`` → 2000, ``"500m"`` → 500); others: base units (``"4Gi"`` → 4294967296).

    Raises:
        EventError(path, problem): a string longer than ``MAX_QUANTITY_CHARS`` (``statemodel.limits``), bad
        syntax, negative, not a whole number of base units
        (e.g. cpu ``"0.0005"``, memory ``"1.5"``), or above ``2**63-1``.

    Semantics: ``k8s.io/apimachinery`` ``resource.ParseQuantity`` grammar; Kueue ``AmountFromQuantity`` units;
    EVENTS.md forbids fractional base units.
    """
    return _parse(resource == "cpu", value, path, "quantity")


def format_quantity(resource: str, amount: int) -> str:
    """Canonical Kubernetes quantity string for an amount in base units.

    ``cpu`` (millicores): ``"16"`` for whole cores, else ``"500m"``.  Any other resource: the plain
    integer (``4294967296``).  Inverse of :func:`parse_quantity` for non-negative amounts.
    """
    if resource == "cpu" and amount % 1000:
        return f"{amount}m"
    if resource == "cpu":
        return str(amount // 1000)
    return str(amount)


def parse_weight_milli(value: object, path: str) -> int:
    """Parse a Kueue ``fairSharing.weight`` quantity into integer thousandths.

    ``"2"`` → 2000, ``"0.5"`` → 500, ``1`` → 1000, ``"250m"`` → 250.  The weight must be ≥ 0 and a whole
    number of thousandths (``"0.0005"`` is an error).

    Raises:
        EventError(path, problem): longer than ``MAX_QUANTITY_CHARS``, bad syntax, negative, finer than 0.001, too large, or not a string/number.

    Semantics: Kueue ``FairSharing.Weight`` is a ``resource.Quantity`` (``apis/kueue/v1beta2``); Kueue uses its
    float value, here it is kept exact in milli-units.
    """
    return _parse(True, value, path, "weight")


def add_amounts(into: dict[str, int], amounts: dict[str, int], sign: int = 1) -> None:
    """``into += sign × amounts`` per resource (base units), in place, dropping resources that reach
    0 — so a tally counted up and down equals one rebuilt from scratch: node and topology-domain
    free and allocated amounts, Koordinator groups' ``used``, Volcano queues' sums."""
    for res, amount in amounts.items():
        left = into.get(res, 0) + sign * amount
        if left:
            into[res] = left
        else:
            into.pop(res, None)
