"""Tests of statemodel.quantity: Kubernetes quantities as exact integers (EVENTS.md "Quantities").

Expected values are worked out by hand from the Kubernetes suffix table (Ki = 2**10, M = 10**6, m = 10**-3, ...)
and the Kueue unit rule (cpu in millicores, everything else in base units).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from statemodel.errors import EventError
from statemodel.quantity import MAX_AMOUNT, format_quantity, parse_quantity, parse_weight_milli

CPU_VALID = [
    ("500m", 500),
    ("2", 2000),
    (2, 2000),
    ("1.5", 1500),
    (1.5, 1500),
    ("0.1", 100),
    ("0.001", 1),
    ("1m", 1),
    ("+1", 1000),
    (".5", 500),
    ("5.", 5000),
    ("1e3", 1_000_000),  # 1000 cores
    ("1e-3", 1),
    ("1E2", 100_000),
    ("2k", 2_000_000),
    ("1000u", 1),
    ("1000000n", 1),
    ("0", 0),
    (0, 0),
    ("-0", 0),
    ("0.0005e1", 5),  # 0.005 cores
    ("0e2147483647", 0),
]

OTHER_VALID = [
    ("memory", "4Gi", 4 * 1024**3),
    ("memory", "4294967296", 4294967296),
    ("memory", "1M", 1_000_000),
    ("memory", "100Ki", 102_400),
    ("memory", "0.5Gi", 512 * 1024**2),
    ("memory", "1.5Ki", 1536),
    ("memory", "1e3", 1000),
    ("memory", "1E3", 1000),
    ("memory", "1E", 10**18),  # "E" alone is the exa suffix, not an exponent
    ("memory", "1Ei", 2**60),
    ("memory", "7Ei", 7 * 2**60),
    ("memory", "9223372036854775807", 2**63 - 1),
    ("memory", "1000m", 1),
    ("nvidia.com/gpu", "1", 1),
    ("nvidia.com/gpu", 4, 4),
    ("pods", "110", 110),
    ("memory", 1e3, 1000),  # JSON 1e3 decodes to float 1000.0
]

INVALID = [
    ("cpu", "0.0005", "fractional"),
    ("cpu", "1n", "fractional"),
    ("memory", "1.5", "fractional"),
    ("memory", "0.1Ki", "fractional"),  # 102.4 bytes
    ("memory", "1500m", "fractional"),
    ("memory", "1e-3", "fractional"),
    ("memory", "1e-2147483647", "fractional"),
    ("memory", "8Ei", "too large"),
    ("memory", "9223372036854775808", "too large"),
    ("memory", "1e2147483647", "too large"),
    ("cpu", "9223372036854776", "too large"),  # 9223372036854776000 m > 2**63-1
    ("cpu", 2**62, "too large"),
    ("memory", "1e99999999999", "invalid quantity"),  # exponent beyond int32
    ("memory", "12x", "invalid quantity '12x'"),
    ("memory", "", "invalid quantity"),
    ("memory", "Gi", "invalid quantity"),
    ("memory", "1 Gi", "invalid quantity"),
    ("memory", " 1", "invalid quantity"),
    ("memory", "1e", "invalid quantity"),
    ("memory", "1e1.5", "invalid quantity"),
    ("memory", "1KI", "invalid quantity"),
    ("memory", "1ki", "invalid quantity"),
    ("memory", ".", "invalid quantity"),
    ("memory", "1..2", "invalid quantity"),
    ("memory", "٣", "invalid quantity"),  # Arabic-Indic digit three
    ("memory", "-1", "negative"),
    ("cpu", "-500m", "negative"),
    ("cpu", -1, "negative"),
    ("cpu", -0.5, "negative"),
    ("cpu", True, "must be a quantity"),
    ("cpu", None, "must be a quantity"),
    ("cpu", [1], "must be a quantity"),
    ("cpu", float("nan"), "invalid quantity"),
    ("cpu", float("inf"), "invalid quantity"),
]


@pytest.mark.parametrize("value,expected", CPU_VALID)
def test_cpu_millicores(value, expected):
    assert parse_quantity("cpu", value, "p") == expected


@pytest.mark.parametrize("resource,value,expected", OTHER_VALID)
def test_other_resources_base_units(resource, value, expected):
    assert parse_quantity(resource, value, "p") == expected


@pytest.mark.parametrize("resource,value,problem", INVALID)
def test_invalid(resource, value, problem):
    with pytest.raises(EventError) as ei:
        parse_quantity(resource, value, "object.spec.x")
    assert ei.value.path == "object.spec.x"
    assert problem in ei.value.problem


def test_error_is_repeatable_through_cache():
    for _ in range(3):
        with pytest.raises(EventError, match="fractional"):
            parse_quantity("memory", "1.5", "a")


@pytest.mark.parametrize(
    "resource,amount,text",
    [
        ("cpu", 16000, "16"),
        ("cpu", 500, "500m"),
        ("cpu", 1500, "1500m"),
        ("cpu", 0, "0"),
        ("memory", 4294967296, "4294967296"),
        ("nvidia.com/gpu", 4, "4"),
    ],
)
def test_format_quantity(resource, amount, text):
    assert format_quantity(resource, amount) == text


@given(st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]), st.integers(0, MAX_AMOUNT))
def test_format_parse_round_trip(resource, amount):
    assert parse_quantity(resource, format_quantity(resource, amount), "p") == amount


@given(st.integers(0, 2**40), st.sampled_from([("Ki", 2**10), ("Mi", 2**20), ("k", 10**3), ("M", 10**6), ("", 1)]))
def test_suffix_scaling(n, suffix):
    text, factor = suffix
    expected = n * factor
    if expected > MAX_AMOUNT:
        with pytest.raises(EventError, match="too large"):
            parse_quantity("memory", f"{n}{text}", "p")
    else:
        assert parse_quantity("memory", f"{n}{text}", "p") == expected


@given(st.integers(0, 10**6), st.integers(0, 999))
def test_decimal_cores_are_millicores(whole, milli):
    assert parse_quantity("cpu", f"{whole}.{milli:03d}", "p") == whole * 1000 + milli


@pytest.mark.parametrize(
    "value,expected",
    [("2", 2000), ("0.5", 500), (1, 1000), ("250m", 250), ("0", 0), (0, 0), (0.25, 250), ("1e1", 10000)],
)
def test_weight_milli(value, expected):
    assert parse_weight_milli(value, "w") == expected


@pytest.mark.parametrize(
    "value,problem",
    [("0.0005", "fractional"), ("-1", "negative"), (-2, "negative"), (True, "must be a weight"), ("x", "invalid")],
)
def test_weight_milli_invalid(value, problem):
    with pytest.raises(EventError) as ei:
        parse_weight_milli(value, "object.spec.fairSharing.weight")
    assert ei.value.path == "object.spec.fairSharing.weight"
    assert problem in ei.value.problem
