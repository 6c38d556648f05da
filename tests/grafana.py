"""The Grafana dashboard, Prometheus configuration and alert rules of ``deploy/`` as the tests read
them, with what the tests need to check them against the code: the series the ingest worker's
exporter registers (``streams.ingest_metrics.IngestMetrics``), the metric names and labels a PromQL
expression uses, and Grafana's interpolation of a SQL panel (template variables, then the macros of
its PostgreSQL data source) so the panel's query can run against a real store.

Grafana's behaviour reproduced here (upstream ``pkg/tsdb/grafana-postgresql-datasource/macros.go``
and the SQL data sources' variable formatting): a multi-value or include-all variable becomes its
values as quoted SQL strings joined by ``,``; ``$__from`` / ``$__to`` are the range's epoch
milliseconds; the macros ``$__timeFilter(col)``, ``$__timeFrom()``, ``$__timeTo()`` use RFC 3339
UTC texts, ``$__timeGroup(col, 'I')`` is ``floor(extract(epoch from col)/S)*S``,
``$__unixEpochGroup(col, 'I')`` is ``floor((col)/S)*S`` (S the interval in seconds), the ``Alias``
forms add ``AS "time"``; any other macro is an error, as in Grafana.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.metrics import MetricWrapperBase

from streams.ingest_metrics import IngestMetrics
from tests.paths import ROOT

DEPLOY = ROOT / "deploy"
DASHBOARD_PATH = DEPLOY / "grafana" / "dashboards" / "quotaledger.json"
DATASOURCES_PATH = DEPLOY / "grafana" / "provisioning" / "datasources" / "quotaledger.yml"
PROVIDERS_PATH = DEPLOY / "grafana" / "provisioning" / "dashboards" / "quotaledger.yml"
PROMETHEUS_PATH = DEPLOY / "prometheus" / "prometheus.yml"
ALERTS_PATH = DEPLOY / "prometheus" / "alerts.yml"
READER_SQL_PATH = DEPLOY / "postgres" / "grafana-reader.sql"

PROMETHEUS_SERIES = {"up": frozenset({"job", "instance"})}
"""Series Prometheus makes itself for every target (not the exporter's)."""
TARGET_LABELS = frozenset({"job", "instance"})
"""Labels Prometheus attaches to every scraped series."""
GRAFANA_GLOBALS = frozenset({"__rate_interval", "__interval", "__interval_ms", "__range", "__range_s",
                             "__range_ms", "__from", "__to", "__dashboard", "__org", "__user"})
"""Grafana's global variables (``$__name``) a query may use without defining them."""

_SUFFIXES = {"counter": ("_total", "_created"), "gauge": ("",), "histogram": ("_bucket", "_count", "_sum", "_created"),
             "summary": ("", "_count", "_sum", "_created")}
"""Sample names of a metric family by type (the Prometheus / OpenMetrics exposition format)."""


def dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD_PATH.read_text())


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def exported_series() -> dict[str, frozenset[str]]:
    """Sample name → label names, of every metric ``IngestMetrics`` registers (histograms' ``_bucket``
    with ``le``).  Read from the metric objects, so a metric nobody has observed yet is there too."""
    out: dict[str, frozenset[str]] = {}
    for value in vars(IngestMetrics()).values():
        if isinstance(value, MetricWrapperBase):
            labels = frozenset(value._labelnames)  # prometheus_client keeps them on the parent metric only
            for suffix in _SUFFIXES[value._type]:
                out[value._name + suffix] = labels | ({"le"} if suffix == "_bucket" else frozenset())
    return out


_TOKEN = re.compile(r"""
    (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
  | (?P<range>\[[^\]]*\])
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<ident>[a-zA-Z_:][a-zA-Z0-9_:]*)
  | (?P<op>=~|!~|!=|==|>=|<=|[-+*/%^(){},=<>])
  | (?P<space>\s+)
""", re.X)
_KEYWORDS = frozenset({"and", "or", "unless", "bool", "offset", "group_left", "group_right"})
_LABEL_LISTS = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right"})
_AGGREGATIONS = frozenset({"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
                           "bottomk", "topk", "quantile", "limitk", "limit_ratio"})
"""Aggregation operators: ``sum by (x) (…)`` puts the label list between the name and its ``(``."""


@dataclass
class PromQL:
    """What one PromQL expression uses: ``metrics`` (selector names), ``labels`` (in matchers and in
    ``by`` / ``without`` / ``on`` / ``ignoring`` / ``group_*`` lists) and ``matchers`` (label → the
    values it is compared with)."""

    metrics: set[str] = field(default_factory=set)
    labels: set[str] = field(default_factory=set)
    matchers: dict[str, list[str]] = field(default_factory=dict)


def parse_promql(expr: str) -> PromQL:
    """The metric names and labels ``expr`` uses (``PromQL``).

    A small tokenizer, not a full parser: an identifier followed by ``(`` is a function or an
    aggregation (so is an aggregation operator anywhere), one followed by ``{`` or standing alone a
    metric name (unless a keyword).  Grafana's
    ``$variables`` may stand only inside strings and ``[...]`` ranges.

    Raises:
        ValueError: a character no PromQL token starts with (a ``$variable`` outside a string or range).
    """
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if m is None:
            raise ValueError(f"unexpected {expr[pos:pos + 20]!r} at {pos} in {expr!r}")
        if m.lastgroup != "space":
            tokens.append((m.lastgroup, m.group()))  # type: ignore[arg-type]
        pos = m.end()
    out = PromQL()
    i = 0
    while i < len(tokens):
        kind, text = tokens[i]
        following = tokens[i + 1][1] if i + 1 < len(tokens) else ""
        if kind == "ident" and text in _LABEL_LISTS and following == "(":
            i += 2
            while tokens[i][1] != ")":
                if tokens[i][0] == "ident":
                    out.labels.add(tokens[i][1])
                i += 1
        elif kind == "ident" and (following == "(" or text in _KEYWORDS or text in _AGGREGATIONS):
            pass
        elif kind == "ident" or text == "{":
            if kind == "ident":
                out.metrics.add(text)
            if following == "{" or text == "{":
                i += 1 if text == "{" else 2
                while tokens[i][1] != "}":
                    if tokens[i][0] == "ident":
                        label, value = tokens[i][1], tokens[i + 2][1]
                        out.labels.add(label)
                        out.matchers.setdefault(label, []).append(value[1:-1])
                        i += 3
                    else:
                        i += 1
        i += 1
    return out


def promql_problems(expr: str, series: Mapping[str, frozenset[str]], jobs: set[str]) -> list[str]:
    """Why ``expr`` does not fit the exporter: metric names it does not register (nor Prometheus'
    own ``up``), labels none of the expression's metrics has (nor ``job`` / ``instance``), and
    ``job`` matchers naming no scrape job of ``jobs``.  Empty when it fits."""
    used = parse_promql(expr)
    known = {**series, **PROMETHEUS_SERIES}
    problems = [f"{expr}: no metric {name!r}" for name in sorted(used.metrics - set(known))]
    if not used.metrics:
        problems.append(f"{expr}: no metric")
    allowed = set(TARGET_LABELS).union(*(known[m] for m in used.metrics if m in known))
    problems += [f"{expr}: no label {label!r} on {sorted(used.metrics)}" for label in sorted(used.labels - allowed)]
    problems += [f"{expr}: no scrape job {job!r}" for job in used.matchers.get("job", []) if job not in jobs]
    return problems


def scrape_jobs() -> dict[str, dict[str, Any]]:
    """``job_name`` → its scrape config, of deploy/prometheus/prometheus.yml."""
    return {job["job_name"]: job for job in load_yaml(PROMETHEUS_PATH)["scrape_configs"]}


def panels(board: Mapping[str, Any] | None = None) -> Iterator[dict[str, Any]]:
    """Every panel of the dashboard, the panels inside (collapsed) rows included."""
    for panel in (board if board is not None else dashboard())["panels"]:
        yield panel
        yield from panel.get("panels", [])


def sql_targets(board: Mapping[str, Any] | None = None) -> list[tuple[str, str]]:
    """``(panel title, rawSql)`` of every SQL target of the dashboard."""
    return [(p["title"], t["rawSql"]) for p in panels(board) for t in p.get("targets", []) if "rawSql" in t]


# --------------------------------------------------------------------------- Grafana's interpolation

_MACRO = re.compile(r"\$([_a-zA-Z0-9]+)\(([^)]*)\)")
_VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+))(?![\w(])")
"""``$name`` or ``${name}``, not a macro call ``$__name(``."""
_INTERVAL = re.compile(r"^(\d+)(s|m|h|d|w)$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def _rfc3339(t: datetime) -> str:
    return t.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def _seconds(interval: str) -> int:
    m = _INTERVAL.match(interval.strip().strip("'"))
    if m is None:
        raise ValueError(f"cannot parse the interval {interval!r}")
    return int(m.group(1)) * _UNIT_SECONDS[m.group(2)]


def _macro(name: str, args: Sequence[str], start: datetime, end: datetime) -> str:
    if name == "__time":
        return f'{args[0]} AS "time"'
    if name == "__timeEpoch":
        return f'extract(epoch from {args[0]}) as "time"'
    if name == "__timeFilter":
        return f"{args[0]} BETWEEN '{_rfc3339(start)}' AND '{_rfc3339(end)}'"
    if name == "__timeFrom":
        return f"'{_rfc3339(start)}'"
    if name == "__timeTo":
        return f"'{_rfc3339(end)}'"
    if name in ("__timeGroup", "__timeGroupAlias"):
        s = _seconds(args[1])
        return f"floor(extract(epoch from {args[0]})/{s})*{s}" + (' AS "time"' if name.endswith("Alias") else "")
    if name == "__unixEpochFilter":
        return f"{args[0]} >= {int(start.timestamp())} AND {args[0]} <= {int(end.timestamp())}"
    if name in ("__unixEpochGroup", "__unixEpochGroupAlias"):
        s = _seconds(args[1])
        return f"floor(({args[0]})/{s})*{s}" + (' AS "time"' if name.endswith("Alias") else "")
    raise ValueError(f"unknown macro {name!r}")


def _quoted(values: Sequence[str]) -> str:
    return ",".join("'" + v.replace("'", "''") + "'" for v in values)


def interpolate_sql(sql: str, variables: Mapping[str, Sequence[str]], start: datetime, end: datetime) -> str:
    """``sql`` as Grafana sends it to PostgreSQL (module docstring): the dashboard's variables
    (``variables``: name → selected values, all multi-value), ``$__from`` / ``$__to``, then the macros.

    Raises:
        ValueError: a variable that is neither given nor a Grafana global, or an unknown macro.
    """
    globals_ = {"__from": str(int(start.timestamp() * 1000)), "__to": str(int(end.timestamp() * 1000))}

    def variable(m: re.Match) -> str:
        name = m.group(1) or m.group(2)
        if name in globals_:
            return globals_[name]
        if name in variables:
            return _quoted(variables[name])
        raise ValueError(f"undefined variable ${name}")

    sql = _VARIABLE.sub(variable, sql)
    return _MACRO.sub(lambda m: _macro(m.group(1), [a.strip() for a in m.group(2).split(",")], start, end), sql)


def variables_used(text: str) -> set[str]:
    """Names of the ``$name`` / ``${name}`` template variables in ``text`` (macro calls excluded)."""
    return {m.group(1) or m.group(2) for m in _VARIABLE.finditer(text)}
