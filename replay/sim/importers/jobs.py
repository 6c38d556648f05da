"""The job list every trace importer produces and the simulator consumes.

A :class:`Job` is one trace row turned into one Kueue ``Workload`` with one podSet: when it was
submitted, how long it ran once started, which tenant owns it and what each pod requests.  All
times are integer **milliseconds since the Unix epoch** (UTC) and all requests are integers in the
engine's base units (EVENTS.md "Quantities": ``cpu`` in millicores, memory and storage in bytes,
devices in counts), so the simulator never sees floats or trace-specific units.

Also here: the small, exact helpers the importers share (decimal numbers → ms or base units,
Kubernetes-safe names, stable hash buckets, quantity strings) and :class:`BadRow`, the record of a
row an importer could not read (reported with its line number, never silently dropped).
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, ROUND_HALF_EVEN, Decimal, InvalidOperation

__all__ = [
    "BadRow", "Job", "TopologyRequest", "ImportResult", "TraceImportError", "bad_row_summary",
    "decimal_of", "to_ms", "to_units", "slug", "hash_bucket", "quantity_string",
]


class TraceImportError(ValueError):
    """A trace cannot be imported at all (missing file, missing column, empty trace)."""


@dataclass(frozen=True, slots=True)
class BadRow:
    """A row an importer skipped: ``line`` is the 1-based physical line of the CSV file (the
    header is line 1), ``message`` says which column and what is wrong."""

    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


def bad_row_summary(bad: list[BadRow], kinds: int = 5) -> str:
    """Why rows were skipped, for an error that must give the reasons: the count, then per column
    named at the start of the messages (most rows first, then by name; at most ``kinds``) how many
    rows and the first of them, e.g. ``"3 rows skipped: cpus: 2 rows (first line 2: cpus: not a
    number: 'x'); submit: 1 row (first line 4: submit: empty)"``."""
    if not bad:
        return "the file has no data row"
    groups: dict[str, list[BadRow]] = {}
    for row in bad:
        groups.setdefault(row.message.split(":", 1)[0], []).append(row)
    order = sorted(groups, key=lambda k: (-len(groups[k]), k))
    parts = [f"{k}: {len(groups[k])} row{'s' if len(groups[k]) > 1 else ''} (first {groups[k][0]})" for k in order[:kinds]]
    more = f"; {len(order) - kinds} more kinds of problem" if len(order) > kinds else ""
    return f"{len(bad)} row{'s' if len(bad) > 1 else ''} skipped: " + "; ".join(parts) + more


@dataclass(frozen=True, slots=True)
class TopologyRequest:
    """A job's topology constraint: all its pods in one domain of a topology level.

    Attributes:
        mode: ``required`` (the pods must share one domain of ``level``) or ``preferred`` (the
            scheduler tries ``level`` and falls back to wider domains), Kueue's
            ``PodSetTopologyRequest`` fields of those names and KAI's
            ``topology-required-placement`` / ``topology-preferred-placement``.
        level: the node label of the level (a ``Topology``'s ``spec.levels[].nodeLabel``).
        topology: the ``Topology`` name (KAI's ``kai.scheduler/topology``; Kueue finds it from the
            ResourceFlavor's ``spec.topologyName`` instead).
        style: which API writes it on the Workload: ``kueue`` (``podSets[].topologyRequest``) or
            ``kai`` (the ``kai.scheduler/topology*`` annotations).
    """

    mode: str
    level: str
    topology: str
    style: str = "kueue"


@dataclass(frozen=True, slots=True)
class Job:
    """One workload of a trace.

    Attributes:
        id: the trace's own id (``instance_sn``, pod ``name``, or the mapping's id column).
        submit_ms: submission (creation) time, ms since the epoch.  For a job that already ran
            before the trace started (``preexisting``) this is the trace start.
        run_ms: how long it holds its quota once started (ms), or ``None`` when the trace does not
            say: still running at the trace end, or never started (then see ``delete_ms``).
        tenant: the tenant path, outermost first: ``tenant[:-2]`` are cohort levels under the
            root cohort, ``tenant[-2]`` names the ClusterQueue (tenant group), ``tenant[-1]`` the
            tenant (the LocalQueue's namespace).  A one-element path is a tenant with a
            ClusterQueue of its own.  See ``replay.sim.quota_tree``.
        count: pods in the podSet (≥ 1).
        requests: per-pod requests as sorted ``(resource, amount)`` pairs in base units; zero
            amounts are left out.
        flavor: the ResourceFlavor (node pool) the job must run on, or ``None`` when any flavor of
            its ClusterQueue will do.
        observed_start_ms: when the real cluster started it (``scheduled_time``), ms since the
            epoch; the trace start for a preexisting job; ``None`` when it never started.
        preexisting: it was already running when the trace began (no creation time): the
            simulator loads it as an observed admission at the trace start.
        delete_ms: for a job with ``run_ms is None``: when the trace deleted it (withdrawn if still
            pending then, finished if running); ``None`` = never deleted within the trace.
        line: source line of the row (1-based, header = 1), for messages.
        priority: the Workload's ``spec.priority`` (Kueue: the priority class value), or ``None``
            to leave it out (priority 0); what preemption compares (docs/preemption.md).
        topology: the podSet's topology constraint (a gang placed in one domain), or ``None``.
    """

    id: str
    submit_ms: int
    run_ms: int | None
    tenant: tuple[str, ...]
    count: int
    requests: tuple[tuple[str, int], ...]
    flavor: str | None = None
    observed_start_ms: int | None = None
    preexisting: bool = False
    delete_ms: int | None = None
    line: int = field(default=0, compare=False)
    priority: int | None = None
    topology: TopologyRequest | None = None

    @property
    def observed_wait_ms(self) -> int | None:
        """``scheduled − creation`` in ms where the trace has both, else ``None``."""
        if self.preexisting or self.observed_start_ms is None:
            return None
        return self.observed_start_ms - self.submit_ms

    def total(self) -> dict[str, int]:
        """Requests of the whole podSet (``count ×`` per-pod), base units."""
        return {res: amount * self.count for res, amount in self.requests}


@dataclass(slots=True)
class ImportResult:
    """What an importer returns.

    Attributes:
        name: the trace name; also the cluster name and the root cohort name of the generated tree.
        jobs: the jobs in the trace's own row order (the simulator keeps this order for equal times).
        bad_rows: rows that were skipped, with line numbers.
        trace_start_ms / trace_end_ms: the time span the trace covers (ms since the epoch).
        nodes: ``v1`` ``Node`` objects (Kubernetes-shaped dicts) when the trace has a node list.
        flavors: ResourceFlavor objects implied by the trace (for example one per GPU model).
        capacity: per flavor, the summed node allocatable in base units (empty without nodes).
        topologies: ``Topology`` objects (``kueue.x-k8s.io/v1alpha1``) over the nodes' labels.
    """

    name: str
    jobs: list[Job]
    bad_rows: list[BadRow]
    trace_start_ms: int
    trace_end_ms: int
    nodes: list[dict] = field(default_factory=list)
    flavors: list[dict] = field(default_factory=list)
    capacity: dict[str, dict[str, int]] = field(default_factory=dict)
    topologies: list[dict] = field(default_factory=list)


# --------------------------------------------------------------------------- exact helpers

_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def decimal_of(text: str) -> Decimal:
    """The exact decimal value of a CSV number (``"475.00000000000006"``, ``"120.0"``, ``"1e3"``).

    Raises:
        ValueError: empty, not a plain finite number (``nan``, ``inf``, ``12abc``).
    """
    s = text.strip()
    if not _NUMBER.match(s):
        raise ValueError(f"not a number: {text!r}")
    try:
        return Decimal(s)
    except InvalidOperation:  # pragma: no cover - the regex admits only valid literals
        raise ValueError(f"not a number: {text!r}") from None


def to_ms(value: Decimal, unit_ms: int) -> int:
    """``value`` time units of ``unit_ms`` ms each, rounded to the nearest ms (half-even).

    The traces store seconds as floats (``475.00000000000006``); rounding to the millisecond
    removes the binary noise and is exact for every value they hold.
    """
    return int((value * unit_ms).to_integral_value(rounding=ROUND_HALF_EVEN))


def to_units(value: Decimal, scale: int | Decimal) -> int:
    """``value × scale`` as an integer amount in base units, rounded **up** when fractional (as
    Kubernetes rounds a quantity up to its smallest unit: ``0.5m`` cpu is ``1m``).

    Raises:
        ValueError: the value is negative.
    """
    if value < 0:
        raise ValueError(f"must not be negative, got {value}")
    return int((value * scale).to_integral_value(rounding=ROUND_CEILING))


_SLUG_BAD = re.compile(r"[^a-z0-9-]+")


def slug(text: str) -> str:
    """A Kubernetes-safe object name (RFC 1123 label characters): lower case, every run of other
    characters becomes ``-``, no leading/trailing ``-`` (``"app_0"`` → ``"app-0"``).

    Raises:
        ValueError: nothing usable is left.
    """
    s = _SLUG_BAD.sub("-", text.lower()).strip("-")
    if not s:
        raise ValueError(f"cannot make an object name of {text!r}")
    return s


def hash_bucket(value: str, buckets: int) -> int:
    """A stable bucket ``0 … buckets-1`` for ``value``: CRC-32 of its UTF-8 bytes modulo
    ``buckets`` (the same on every machine and Python run, unlike ``hash()``)."""
    return zlib.crc32(value.encode()) % buckets


_BINARY = ((1 << 40, "Ti"), (1 << 30, "Gi"), (1 << 20, "Mi"), (1 << 10, "Ki"))
_BYTE_RESOURCES = ("memory", "ephemeral-storage", "storage")


def quantity_string(resource: str, amount: int) -> str:
    """A readable Kubernetes quantity for ``amount`` base units of ``resource``: cpu as cores or
    ``…m``; byte resources with the largest exact binary suffix (``"320Gi"``); others plain.
    ``statemodel.quantity.parse_quantity`` reads it back to exactly ``amount``."""
    if resource == "cpu":
        return str(amount // 1000) if amount % 1000 == 0 else f"{amount}m"
    if resource in _BYTE_RESOURCES or resource.endswith("memory"):
        for factor, suffix in _BINARY:
            if amount and amount % factor == 0:
                return f"{amount // factor}{suffix}"
    return str(amount)
