"""The ``workloads`` projection table: one row per workload, from the state's ``WorkloadRecord``s
(the same records the state JSON's ``workloads`` renders).  Rows are ``WORKLOAD_COLUMNS`` tuples:
a history holds far more workloads than queues, and tuples are what the archive's fast inserts take."""

from __future__ import annotations

import orjson
import sqlalchemy as sa

from replay.store.projections.base import Projection, ProjectionSource
from statemodel import sql_schema as s
from statemodel.state_view import WorkloadRecord, workload_records
from statemodel.workload import ADMITTED, PENDING

WORKLOAD_COLUMNS = ("cluster", "key", "status", "cluster_queue", "local_queue", "priority", "reason", "message",
                    "shortfalls", "position_in_cluster_queue", "position_in_local_queue", "queued_at_ms",
                    "admitted_at_ms", "borrowing", "admission", "wait_ms")
"""The columns of the ``workloads`` projection tuples (``queued_at`` / ``admitted_at`` follow from the ``_ms``)."""

STATUS = WORKLOAD_COLUMNS.index("status")
"""Index of ``status`` in a ``workloads`` row."""

_JSON_NULL = "null"


def workload_row(cluster: str, key: str, record: WorkloadRecord, now_ms: int) -> tuple:
    """The ``workloads`` projection row (``WORKLOAD_COLUMNS``) of one ``WorkloadRecord``: reason
    and message of pending workloads only; the assignments and the shortfalls as JSON text (JSON
    ``null`` when not admitted / when there are no shortfalls, as a Core insert of ``None`` stores
    it); ``wait_ms`` = admitted - queued (admitted) or ``now_ms`` - queued (pending)."""
    status, queued, admitted = record.status, record.queued_ms, record.admitted_ms
    if status == ADMITTED and admitted is not None:
        wait: int | None = admitted - queued
    elif status == PENDING:
        wait = now_ms - queued
    else:
        wait = None
    assignments, shortfalls = record.assignments, record.shortfalls
    return (cluster, key, status, record.cluster_queue, record.local_queue, record.priority, record.reason,
            record.message if status == PENDING else None,
            orjson.dumps(shortfalls).decode() if shortfalls else _JSON_NULL,
            record.position_in_cluster_queue, record.position_in_local_queue, queued, admitted, record.borrowing,
            _JSON_NULL if assignments is None else orjson.dumps(assignments).decode(), wait)


def build(source: ProjectionSource) -> dict[sa.Table, list]:
    """Rows of every workload, or of ``source.only`` and every pending workload, sorted by key."""
    state = source.state
    records = workload_records(state, source.positions, source.only, source.pending)
    cluster, now_ms = source.cluster, state.clock_ms
    return {s.workloads: [workload_row(cluster, key, record, now_ms) for key, record in records]}


PROJECTION = Projection((s.workloads,), build, {s.workloads: WORKLOAD_COLUMNS})
