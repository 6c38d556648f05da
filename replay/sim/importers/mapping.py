"""Generic CSV import driven by a mapping file (YAML, validated with pydantic; no code).

A mapping says which column holds what; :func:`import_csv` applies it to a CSV file and returns
the same :class:`~replay.sim.importers.jobs.ImportResult` as the dedicated importers.  The user's
documentation, with an example of every feature, is ``docs/traces.md``.  Shipped
examples: ``replay/sim/mappings/dlrm.yaml`` and ``openb.yaml`` (they give the same jobs as
``replay.sim.importers.dlrm`` / ``openb``; ``tests/unit/test_importers.py`` checks it).  The schema::

    version: 1
    name: mytrace                      # cluster name and root cohort of the generated quota tree
    delimiter: ","                     # optional
    epoch_base: "2025-01-01T00:00:00Z" # trace second 0 (required for offset and delta times)
    time: {format: offset, unit: s}    # default format of the time columns (see below)
    id: {column: job_id}
    submit: {column: submit_time, missing: error}   # or missing: preexisting
    start: {column: start_time}        # optional: observed start (scheduled) time
    end: {column: end_time}            # run time = end − start (or − submit without a start column)
    # duration: {column: run_seconds, unit: s}       # … or the run time itself (not both)
    tenant:                            # outermost first; ≥ 1 level
      - {column: group}
      - {column: user}
    flavor: {column: pool, map: {a: pool-a}}         # optional; default: any flavor
    count: {column: pods}              # optional; default {value: 1}: pods per job
    resources:
      - {column: cpus, resource: cpu, unit: cores}
      - {column: mem_gb, resource: memory, unit: GiB}
      - {column: gpus, resource: nvidia.com/gpu, unit: count, when: {column: gpus, not_in: [0]}, per: job}

Time formats: ``offset`` (number of ``unit`` since ``epoch_base``), ``epoch`` (number of
``unit`` since the Unix epoch), ``iso`` (ISO 8601 / RFC 3339 text; no offset = UTC), ``delta``
(submit only: ``unit`` since the previous row's submit, accumulated in file order from
``epoch_base``).  Units: ``ms``, ``s``, ``min``, ``h``, ``d``.  Numbers are exact decimals rounded
to the nearest ms.

Empty values: ``submit`` empty → an error, or with ``missing: preexisting`` a job that was
already running at the trace start (submitted and started then, loaded pre-admitted); ``start``
empty → it never started (its ``end`` is then when it was withdrawn); ``end``/``duration`` empty →
still running at the trace end.

A value spec (``id``, ``tenant[]``, ``flavor``, ``count``) is ``{column: C}`` or
``{value: V}``, optionally with ``map`` (value → replacement; a value missing from the map is a
bad row unless ``default`` is given) or ``hash_buckets: N`` with ``prefix`` and ``digits``
(stable CRC-32 bucket of the value, e.g. ``g07``: a synthesized grouping).

Resources: ``resource`` is the Kubernetes name; ``unit`` one of ``cores``/``millicores`` (cpu
only), ``count``, ``percent``, ``B``, ``KiB``, ``MiB``, ``GiB``, ``TiB``, ``KB``, ``MB``, ``GB``,
``TB``; ``scale`` multiplies (default 1); ``when: {column, equals | in | not_in}`` applies the
entry only to matching rows (numbers compare as numbers).  Several entries for one resource add
up.  Amounts are per pod (``per: pod``, the default), or with ``per: job`` the whole job's, divided
by ``count`` and rounded up to a base unit; fractions of a base unit round up.

Every row the mapping cannot read is reported as a :class:`~replay.sim.importers.jobs.BadRow` with
its line number (header = line 1) and skipped; nothing is dropped silently.  A skipped row never
shifts the timeline: with ``delta`` submit times its interval still counts, and a row whose delta
cannot be read stops the import (``TraceImportError`` naming the line and the reason).
"""

from __future__ import annotations

from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path
from typing import Literal, TypeVar, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from replay.sim.importers.csvrows import iter_rows
from replay.sim.importers.jobs import (
    BadRow, ImportResult, Job, TraceImportError, bad_row_summary, decimal_of, hash_bucket, slug, to_ms, to_units,
)

__all__ = ["Mapping", "MappingError", "load_mapping", "import_csv", "parse_iso_ms", "value_text", "condition_holds",
           "is_empty", "resource_amount", "RESOURCE_UNITS", "ValueSpec", "ResourceColumn", "Condition"]

TIME_UNITS_MS = {"ms": 1, "s": 1000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}
RESOURCE_UNITS: dict[str, int] = {
    "cores": 1000, "millicores": 1, "count": 1, "percent": 1, "B": 1,
    "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
    "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
}
Scalar = Union[str, int, float]


class MappingError(ValueError):
    """The mapping file cannot be read or does not validate (message lists every problem)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ValueSpec(_Model):
    """Where a text value comes from: a ``column`` or a constant ``value``, optionally mapped or bucketed."""

    column: str | None = None
    value: str | None = None
    map: dict[str, str] | None = None
    default: str | None = None
    hash_buckets: int | None = Field(default=None, ge=1)
    prefix: str = ""
    digits: int = Field(default=0, ge=0, le=6)

    @model_validator(mode="after")
    def _one_source(self) -> "ValueSpec":
        if (self.column is None) == (self.value is None):
            raise ValueError("give exactly one of column or value")
        if self.map is not None and self.hash_buckets is not None:
            raise ValueError("give map or hash_buckets, not both")
        return self


class TimeFormat(_Model):
    """Default format and unit of the time columns."""

    format: Literal["offset", "epoch", "iso", "delta"] = "offset"
    unit: Literal["ms", "s", "min", "h", "d"] = "s"


class TimeColumn(_Model):
    """A time column; ``format``/``unit`` default to the mapping's ``time``."""

    column: str
    format: Literal["offset", "epoch", "iso", "delta"] | None = None
    unit: Literal["ms", "s", "min", "h", "d"] | None = None


class SubmitColumn(TimeColumn):
    """The submit time column; ``missing: preexisting`` reads an empty value as "running before the trace"."""

    missing: Literal["error", "preexisting"] = "error"


class DurationColumn(_Model):
    """A run-time column (a duration, not a point in time)."""

    column: str
    unit: Literal["ms", "s", "min", "h", "d"] = "s"


class Condition(_Model):
    """``when`` of a resource entry: compare one column with ``equals``, ``in`` or ``not_in``."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    column: str
    equals: Scalar | None = None
    in_: list[Scalar] | None = Field(default=None, alias="in")
    not_in: list[Scalar] | None = None

    @model_validator(mode="after")
    def _one_test(self) -> "Condition":
        if sum(x is not None for x in (self.equals, self.in_, self.not_in)) != 1:
            raise ValueError("give exactly one of equals, in, not_in")
        return self


class ResourceColumn(_Model):
    """One resource column: Kubernetes ``resource`` name, the column's ``unit``, optional ``scale``,
    ``when`` and ``per`` (``pod``: the column is the per-pod amount; ``job``: the whole job's,
    divided by the pod count)."""

    column: str
    resource: str = Field(min_length=1)
    unit: str
    scale: Decimal = Decimal(1)
    when: Condition | None = None
    per: Literal["pod", "job"] = "pod"

    @model_validator(mode="after")
    def _unit(self) -> "ResourceColumn":
        if self.unit not in RESOURCE_UNITS:
            raise ValueError(f"unit {self.unit!r}: must be one of {', '.join(RESOURCE_UNITS)}")
        if (self.resource == "cpu") != (self.unit in ("cores", "millicores")):
            raise ValueError("cpu takes unit cores or millicores, and only cpu does")
        if self.scale < 0:
            raise ValueError("scale must not be negative")
        return self


class Mapping(_Model):
    """A validated mapping file (see the module docstring for the meaning of every field)."""

    version: Literal[1] = 1
    name: str = Field(min_length=1)
    delimiter: str = Field(default=",", min_length=1, max_length=1)
    epoch_base: str | None = None
    time: TimeFormat = TimeFormat()
    id: ValueSpec
    submit: SubmitColumn
    start: TimeColumn | None = None
    end: TimeColumn | None = None
    duration: DurationColumn | None = None
    tenant: list[ValueSpec] = Field(min_length=1)
    flavor: ValueSpec | None = None
    count: ValueSpec = ValueSpec(value="1")
    resources: list[ResourceColumn] = Field(min_length=1)

    @model_validator(mode="after")
    def _times(self) -> "Mapping":
        if self.end is not None and self.duration is not None:
            raise ValueError("give end or duration, not both")
        fmt = {c: (c.format or self.time.format) for c in (self.submit, self.start, self.end) if c is not None}
        for col, f in fmt.items():
            if f == "delta" and col is not self.submit:
                raise ValueError(f"{col.column}: format delta is only for the submit column")
        if any(f in ("offset", "delta") for f in fmt.values()) and self.epoch_base is None:
            raise ValueError("epoch_base is required for offset and delta times")
        if self.epoch_base is not None:
            parse_iso_ms(self.epoch_base)
        return self

    def columns(self) -> tuple[str, ...]:
        """Every column the mapping reads (all must be in the CSV header)."""
        cols: list[str] = []
        for spec in (self.id, *self.tenant, self.flavor, self.count):
            if spec is not None and spec.column is not None:
                cols.append(spec.column)
        for tc in (self.submit, self.start, self.end, self.duration):
            if tc is not None:
                cols.append(tc.column)
        for rc in self.resources:
            cols.append(rc.column)
            if rc.when is not None:
                cols.append(rc.when.column)
        return tuple(dict.fromkeys(cols))


def parse_iso_ms(text: str) -> int:
    """ISO 8601 / RFC 3339 text → ms since the epoch (no offset = UTC; ``Z`` accepted).

    Raises:
        ValueError: not a date-time.
    """
    s = text.strip()
    if s.endswith(("Z", "z")):
        s = s[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(s)
    except ValueError:
        raise ValueError(f"not an ISO 8601 time: {text!r}") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    delta = dt - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


Model = TypeVar("Model", bound=BaseModel)


def load_yaml_model(path: str | Path, model: type[Model], what: str = "mapping") -> Model:
    """Read the YAML file ``path`` and validate it as ``model`` (``what`` names it in messages).

    Raises:
        MappingError: unreadable file, not YAML, or invalid (every pydantic error, with its field path).
    """
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise MappingError(f"cannot read {what} {path}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise MappingError(f"{what} {path} is not valid YAML: {exc}") from exc
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(top)'}: {e['msg']}" for e in exc.errors())
        raise MappingError(f"{what} {path} is invalid: {problems}") from exc


def load_mapping(path: str | Path) -> Mapping:
    """Read and validate a mapping YAML file.

    Raises:
        MappingError: unreadable file, not YAML, or invalid (every pydantic error, with its field path).
    """
    return load_yaml_model(path, Mapping)


# --------------------------------------------------------------------------- applying a mapping


def is_empty(raw: str) -> bool:
    """An empty CSV value: ``""`` or ``nan`` (any case)."""
    return raw == "" or raw.lower() == "nan"


def resource_amount(column: str | None, raw: str, unit: str, scale: Decimal) -> int:
    """The resource value ``raw`` (a decimal in ``unit``, one of :data:`RESOURCE_UNITS`) times
    ``scale``, in base units.

    Raises:
        ValueError: ``raw`` is empty or not a number; the message starts with ``column``.
    """
    if is_empty(raw):
        raise ValueError(f"{column}: empty")
    try:
        return to_units(decimal_of(raw), RESOURCE_UNITS[unit] * scale)
    except ValueError as exc:
        raise ValueError(f"{column}: {exc}") from None


def value_text(spec: ValueSpec, row: dict[str, str], what: str) -> str:
    """The text a value spec gives for ``row`` (its constant or column, mapped or bucketed).

    Raises:
        ValueError: empty, or a value missing from ``map`` without ``default``; names the column
            (``what`` for a constant).
    """
    raw = spec.value if spec.value is not None else row[spec.column].strip()  # type: ignore[index]
    if raw == "":
        raise ValueError(f"{spec.column or what}: empty")
    if spec.map is not None:
        if raw in spec.map:
            return spec.map[raw]
        if spec.default is not None:
            return spec.default
        raise ValueError(f"{spec.column or what}: value {raw!r} is not in the map")
    if spec.hash_buckets is not None:
        return f"{spec.prefix}{hash_bucket(raw, spec.hash_buckets):0{spec.digits}d}"
    return raw


def _same(a: str, b: Scalar) -> bool:
    try:
        return decimal_of(a) == decimal_of(str(b))
    except ValueError:
        return a == str(b)


def condition_holds(cond: Condition | None, row: dict[str, str]) -> bool:
    """Whether ``row`` passes a ``when`` condition (no condition: always; numbers compare as numbers)."""
    if cond is None:
        return True
    v = row[cond.column].strip()
    if cond.equals is not None:
        return _same(v, cond.equals)
    if cond.in_ is not None:
        return any(_same(v, x) for x in cond.in_)
    return not any(_same(v, x) for x in cond.not_in or ())


class _Clock:
    """Reads time columns into ms since the epoch."""

    def __init__(self, m: Mapping) -> None:
        self.m = m
        self.base = parse_iso_ms(m.epoch_base) if m.epoch_base is not None else None
        self.previous: int | None = None  # last accumulated submit (delta)

    def read(self, col: TimeColumn, row: dict[str, str]) -> int | None:
        raw = row[col.column].strip()
        if is_empty(raw):
            return None
        fmt = col.format or self.m.time.format
        unit = TIME_UNITS_MS[col.unit or self.m.time.unit]
        try:
            if fmt == "iso":
                return parse_iso_ms(raw)
            value = decimal_of(raw)
        except ValueError as exc:
            raise ValueError(f"{col.column}: {exc}") from None
        if fmt == "epoch":
            return to_ms(value, unit)
        if value < 0:
            raise ValueError(f"{col.column}: must not be negative, got {raw!r}")
        if fmt == "offset":
            return self.base + to_ms(value, unit)  # type: ignore[operator]
        start = self.previous if self.previous is not None else self.base
        return start + to_ms(value, unit)  # type: ignore[operator]


def _read(m: Mapping, clock: _Clock, line: int, row: dict[str, str], trace_start: int | None,
          submit: int | None) -> Job:
    """The job of one row; ``submit`` is its submit time, already read by the caller (``None``: empty).

    Raises:
        ValueError: the row cannot be read (the message names the column and the problem).
    """
    job_id = value_text(m.id, row, "id")
    tenant = tuple(value_text(spec, row, f"tenant[{i}]") for i, spec in enumerate(m.tenant))
    flavor = slug(value_text(m.flavor, row, "flavor")) if m.flavor is not None else None
    count_text = value_text(m.count, row, "count")
    try:
        count = decimal_of(count_text)
    except ValueError as exc:
        raise ValueError(f"{m.count.column or 'count'}: {exc}") from None
    if count < 1 or count != count.to_integral_value():
        raise ValueError(f"{m.count.column or 'count'}: must be a whole number ≥ 1, got {count_text!r}")
    pods = int(count)
    totals: dict[str, int] = {}
    for rc in m.resources:
        if not condition_holds(rc.when, row):
            continue
        amount = resource_amount(rc.column, row[rc.column].strip(), rc.unit, rc.scale)
        if rc.per == "job":
            amount = -(-amount // pods)  # the job's total over its pods, rounded up to a base unit
        totals[rc.resource] = totals.get(rc.resource, 0) + amount
    requests = tuple(sorted((r, a) for r, a in totals.items() if a))

    preexisting = submit is None
    if preexisting:
        if m.submit.missing != "preexisting":
            raise ValueError(f"{m.submit.column}: empty")
        if trace_start is None:
            raise ValueError(f"{m.submit.column}: empty, and the trace start is unknown (set epoch_base)")
        submit = trace_start
    start = clock.read(m.start, row) if m.start is not None else None
    if preexisting:
        if start is not None:
            raise ValueError(f"{m.start.column}: set but {m.submit.column} is empty")  # type: ignore[union-attr]
        start = trace_start
    elif start is not None and start < submit:
        raise ValueError(f"{m.start.column}: earlier than {m.submit.column}")  # type: ignore[union-attr]
    never_started = m.start is not None and start is None
    run: int | None = None
    delete_ms: int | None = None
    if m.end is not None:
        end = clock.read(m.end, row)
        if never_started:
            delete_ms = end
            if end is not None and end < submit:
                raise ValueError(f"{m.end.column}: earlier than {m.submit.column}")
        elif end is not None:
            began = start if start is not None else submit
            if end < began:
                raise ValueError(f"{m.end.column}: earlier than {m.start.column if m.start else m.submit.column}")
            run = end - began
    elif m.duration is not None and not never_started:
        raw = row[m.duration.column].strip()
        if not is_empty(raw):
            try:
                value = decimal_of(raw)
            except ValueError as exc:
                raise ValueError(f"{m.duration.column}: {exc}") from None
            if value < 0:
                raise ValueError(f"{m.duration.column}: must not be negative, got {raw!r}")
            run = to_ms(value, TIME_UNITS_MS[m.duration.unit])
    return Job(job_id, submit, run, tenant, pods, requests, flavor, start, preexisting, delete_ms, line)


def import_csv(path: str | Path, mapping: Mapping | str | Path) -> ImportResult:
    """Import a CSV trace with a mapping (a :class:`Mapping` or the path of its YAML file).

    Returns:
        an :class:`ImportResult` named after the mapping: jobs in file order, bad rows (line
        number and reason; a row with a duplicate id is one), the trace span (start =
        ``epoch_base`` when given, else the earliest submit; end = the last time any job
        mentions), no nodes.

    Raises:
        MappingError: the mapping file is invalid.
        TraceImportError: unreadable CSV, a mapped column missing from its header, a ``delta`` submit
            time that cannot be read (every later submission would shift), or no readable row (the
            reasons summarized per column, ``bad_row_summary``).
    """
    m = mapping if isinstance(mapping, Mapping) else load_mapping(mapping)
    from replay.sim.importers.dlrm import trace_end

    clock = _Clock(m)
    trace_start = clock.base
    delta = (m.submit.format or m.time.format) == "delta"
    jobs: list[Job] = []
    bad: list[BadRow] = []
    seen: dict[str, int] = {}
    for line, row in iter_rows(path, m.columns(), m.delimiter):
        try:
            submit = clock.read(m.submit, row)
        except ValueError as exc:
            if delta:
                raise TraceImportError(f"{path} line {line}: {exc}: submit times are deltas, so every later "
                                       "submission depends on this row; fix the row (nothing was imported)") from None
            bad.append(BadRow(line, str(exc)))
            continue
        if delta:
            if submit is None and m.submit.missing != "preexisting":
                raise TraceImportError(f"{path} line {line}: {m.submit.column}: empty: submit times are deltas, so "
                                       "every later submission depends on this row; fix the row (nothing was imported)")
            if submit is not None:
                clock.previous = submit  # a row skipped below still moves the timeline on
        try:
            job = _read(m, clock, line, row, trace_start, submit)
            key = slug(job.id)
        except ValueError as exc:
            bad.append(BadRow(line, str(exc)))
            continue
        if key in seen:
            bad.append(BadRow(line, f"{m.id.column or 'id'}: duplicate id {job.id!r} (first on line {seen[key]})"))
            continue
        seen[key] = line
        jobs.append(job)
    if not jobs:
        raise TraceImportError(f"{path}: no readable row: {bad_row_summary(bad)}")
    start = trace_start if trace_start is not None else min(j.submit_ms for j in jobs)
    return ImportResult(slug(m.name), jobs, bad, start, max(start, trace_end(jobs)))
