"""Importer for Alibaba ``cluster-trace-gpu-v2025`` (``disaggregated_DLRM_trace.csv``).

Source semantics: ``../shared/data/traces/alibaba-gpu-v2025-dlrm/README.md`` and the upstream
README.  One row is one serving instance of an app (156 apps) in a role (``CN`` CPU node, ``HN``
GPU node); times are seconds from the trace start, floats with binary noise
(``475.00000000000006``).

Mapping (one row → one :class:`~replay.sim.importers.jobs.Job`, one podSet, count 1):

* time base: trace second 0 is :data:`EPOCH_BASE_MS` (2025-01-01T00:00:00Z; the trace does not
  publish its real start).  Seconds are rounded to the nearest millisecond.
* submit = ``creation_time``; observed start = ``scheduled_time`` (observed wait = scheduled −
  creation); run time = ``deletion_time − scheduled_time``.
* no ``creation_time``: the instance existed before the trace → ``preexisting``, submitted and
  started at the trace start, run time = ``deletion_time`` (from the trace start).
* no ``deletion_time``: still running at the trace end → ``run_ms = None``.
* tenant path ``(role, app group, app)``, e.g. ``("cn", "g07", "app_37")``: role cohort →
  ClusterQueue per app group → the app's LocalQueue.  The trace has no team field above the
  app, so app groups are **synthesized**: :data:`GROUPS` stable hash buckets of ``app_name``
  (CRC-32 mod 16, ``g00`` … ``g15``).
* flavor = the role in lower case (``cn`` / ``hn``): the two node pools.
* per-pod requests (``*_request`` columns; limits are equal and ignored): ``cpu`` vCPUs →
  millicores; ``memory`` GiB → bytes (×2³⁰; ``937.5`` GiB is exact); ``nvidia.com/gpu`` count;
  ``ephemeral-storage`` = ``disk_request`` GiB → bytes; ``alibaba.com/rdma`` = ``rdma_request``,
  percent of one RDMA NIC (0–100, a density constraint upstream, summed like any quota here).
  Fractions of a base unit round up.  ``max_instance_per_node`` is a placement rule and is not
  modelled (the engine does quota, not placement).

Rows that cannot be read (a bad number, times out of order, a duplicate id) are returned as
:class:`~replay.sim.importers.jobs.BadRow` with their line number and skipped.
"""

from __future__ import annotations

from pathlib import Path

from replay.sim.importers.csvrows import read_jobs
from replay.sim.importers.jobs import ImportResult, Job, decimal_of, hash_bucket, slug, to_ms, to_units

NAME = "dlrm"
FILE = "disaggregated_DLRM_trace.csv"
EPOCH_BASE_MS = 1_735_689_600_000
"""Trace second 0 = 2025-01-01T00:00:00Z (a documented choice; the trace publishes offsets only)."""
GROUPS = 16
"""Number of synthesized app groups (ClusterQueues) per role."""
GIB = 1 << 30

COLUMNS = ("instance_sn", "role", "app_name", "cpu_request", "gpu_request", "rdma_request", "memory_request",
           "disk_request", "creation_time", "scheduled_time", "deletion_time")

# (column, resource, base units per trace unit)
RESOURCES = (
    ("cpu_request", "cpu", 1000),
    ("memory_request", "memory", GIB),
    ("gpu_request", "nvidia.com/gpu", 1),
    ("disk_request", "ephemeral-storage", GIB),
    ("rdma_request", "alibaba.com/rdma", 1),
)


def app_group(app: str) -> str:
    """The synthesized app group of ``app``: ``g`` + two digits, CRC-32 bucket of the name."""
    return f"g{hash_bucket(app, GROUPS):02d}"


def _time(row: dict[str, str], column: str) -> int | None:
    raw = row[column].strip()
    if raw == "" or raw.lower() == "nan":
        return None
    try:
        value = decimal_of(raw)
    except ValueError as exc:
        raise ValueError(f"{column}: {exc}") from None
    if value < 0:
        raise ValueError(f"{column}: must not be negative, got {raw!r}")
    return EPOCH_BASE_MS + to_ms(value, 1000)


def read_row(line: int, row: dict[str, str]) -> Job:
    """One CSV row → one job.

    Raises:
        ValueError: with a message naming the column, when a value cannot be read or times are
            out of order (``scheduled < creation``, ``deletion < start``, scheduled without creation).
    """
    job_id = row["instance_sn"].strip()
    role = row["role"].strip()
    app = row["app_name"].strip()
    for column, value in (("instance_sn", job_id), ("role", role), ("app_name", app)):
        if not value:
            raise ValueError(f"{column}: empty")
    requests = []
    for column, resource, scale in RESOURCES:
        raw = row[column].strip()
        try:
            amount = to_units(decimal_of(raw), scale)
        except ValueError as exc:
            raise ValueError(f"{column}: {exc}") from None
        if amount:
            requests.append((resource, amount))
    created = _time(row, "creation_time")
    scheduled = _time(row, "scheduled_time")
    deleted = _time(row, "deletion_time")
    preexisting = created is None
    if preexisting:
        if scheduled is not None:
            raise ValueError("scheduled_time: set but creation_time is empty")
        submit = start = EPOCH_BASE_MS
    else:
        submit, start = created, scheduled
        if start is not None and start < submit:
            raise ValueError("scheduled_time: earlier than creation_time")
    delete_ms = None
    if start is None:  # never started: withdrawn (or finished) at its deletion
        run = None
        delete_ms = deleted
    elif deleted is None:
        run = None
    else:
        if deleted < start:
            raise ValueError("deletion_time: earlier than scheduled_time")
        run = deleted - start
    flavor = slug(role)
    return Job(job_id, submit, run, (flavor, app_group(app), app), 1, tuple(sorted(requests)), flavor,
               start, preexisting, delete_ms, line)


def flavor_objects(names: list[str]) -> list[dict]:
    """``ResourceFlavor`` manifests for the role pools, node label ``quotaledger.io/pool``."""
    return [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": n},
             "spec": {"nodeLabels": {"quotaledger.io/pool": n}}} for n in sorted(names)]


def trace_end(jobs: list[Job]) -> int:
    """The last time the jobs mention (submit, start, end, deletion), ms; used as the trace end."""
    end = 0
    for j in jobs:
        end = max(end, j.submit_ms)
        if j.observed_start_ms is not None:
            end = max(end, j.observed_start_ms + (j.run_ms or 0))
        if j.delete_ms is not None:
            end = max(end, j.delete_ms)
    return end


def import_dlrm(path: str | Path) -> ImportResult:
    """Read the DLRM trace CSV, plain or gzipped (``.gz``), or a directory holding
    ``disaggregated_DLRM_trace.csv`` (or, failing that, ``disaggregated_DLRM_trace.csv.gz``).

    Returns:
        an :class:`ImportResult` named ``dlrm``: jobs in file order, bad rows, trace span
        (start = :data:`EPOCH_BASE_MS`, end = the last time any row mentions), the ``cn``/``hn``
        ResourceFlavors; no nodes (the trace has none).

    Raises:
        TraceImportError: unreadable file, missing column, or no readable row at all.
    """
    path = Path(path)
    if path.is_dir():
        path = path / FILE if (path / FILE).exists() or not (path / f"{FILE}.gz").exists() else path / f"{FILE}.gz"
    jobs, bad = read_jobs(path, COLUMNS, read_row, "instance_sn")
    flavors = sorted({j.flavor for j in jobs if j.flavor})
    return ImportResult(NAME, jobs, bad, EPOCH_BASE_MS, max(EPOCH_BASE_MS, trace_end(jobs)),
                        flavors=flavor_objects(flavors))
