"""SQL schema of the durable store: SQLAlchemy 2 Core table *definitions* only (no engine, no I/O).

The same tables run on SQLite (embedded default) and PostgreSQL; ``migrations/`` creates them with
Alembic and a test checks that migrations and these definitions agree.  Conventions:

- Every table that holds per-cluster data has a ``cluster`` column and starts its key with it.
- ``position`` is the 0-based position of an event in its cluster's ordered event stream (the
  order the engine applied it in); it orders ``events`` and tells how far a snapshot reaches.
- Times are UTC: a timezone-aware ``DateTime`` for people and a ``*_ms`` column (epoch
  milliseconds, the engine's own clock value) for exact arithmetic and replay.
- Quantities are integers in base units: millicores for ``cpu``, bytes for ``memory`` and other
  byte-sized resources, counts otherwise (devices, pods) — the unit of each ``(resource, amount)``
  pair follows from ``resource`` and is noted in the column comment.
- Admission fair-sharing numbers are the engine's exact decimals (``EXACT_DECIMAL``) in Kueue's
  score units (cores for cpu, base units otherwise): unconstrained ``NUMERIC`` on PostgreSQL; on
  SQLite, which has no decimal type (NUMERIC affinity would turn them into doubles), their exact
  text in a ``VARCHAR`` column.  Both read back as the same ``Decimal``.
- JSON columns are ``JSON`` (``JSONB`` on PostgreSQL, so they can be indexed and compared), except
  ``events.payload`` (``EXACT_JSON``): ``JSON`` on both, PostgreSQL's ``json`` keeping the received
  text exactly — JSONB would rewrite numbers (``1e2`` as ``100``, ``-0.0`` as ``0.0``) and refuse
  ``\u0000``, and the archived event must re-decode to the canonical form its hash covered.
- Nothing a rejected record says reaches an indexed column unchecked: its id, type, reason and
  field path are stored bounded and without NUL (``replay.store.sanitize``); its exact bytes are
  in ``dead_letters.raw`` (``BYTEA`` / ``BLOB``, any bytes).
"""

from __future__ import annotations

from decimal import Decimal

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    Numeric,
    String,
    Table,
    Text,
    TypeDecorator,
)
from sqlalchemy.dialects.postgresql import JSONB

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
"""Deterministic constraint names: Alembic batch mode (SQLite) and downgrades need named constraints."""

metadata = MetaData(naming_convention=NAMING_CONVENTION)

JSONType = JSON().with_variant(JSONB(), "postgresql")
"""JSON on SQLite, JSONB on PostgreSQL."""

EXACT_JSON = JSON()
"""JSON on SQLite and PostgreSQL alike: PostgreSQL's ``json`` stores the text exactly as given
(``events.payload``, see the module docstring)."""

AutoId = BigInteger().with_variant(Integer(), "sqlite")
"""Surrogate key: BIGINT on PostgreSQL; INTEGER on SQLite, where only that is a rowid alias (autoincrement)."""

UTC_TIME = DateTime(timezone=True)

BASE_UNITS = "base units of `resource`: millicores for cpu, bytes for memory, counts otherwise"
SCORE_UNITS = "Kueue score units: cores for cpu, base units otherwise"


class DecimalText(TypeDecorator):
    """A ``Decimal`` stored as its exact text (fixed-point notation, as ``format(value, "f")``)
    and read back as a ``Decimal``: ``EXACT_DECIMAL`` on SQLite."""

    impl = String
    cache_ok = True

    def process_bind_param(self, value, dialect):  # type: ignore[no-untyped-def]
        """``value`` (a ``Decimal`` or an ``int``; ``None`` stays NULL) as its exact text."""
        return None if value is None else format(Decimal(value), "f")

    def process_result_value(self, value, dialect):  # type: ignore[no-untyped-def]
        """The stored text as a ``Decimal`` (``None`` for NULL)."""
        return None if value is None else Decimal(value)


EXACT_DECIMAL = Numeric(asdecimal=True).with_variant(DecimalText(), "sqlite")
"""An exact decimal of any size and scale: unconstrained ``NUMERIC`` on PostgreSQL, ``DecimalText``
on SQLite; ``Decimal`` in and out on both."""

FAIR_SHARING = EXACT_DECIMAL

EVENT_STATUSES = ("applied", "rejected", "duplicate")
NODE_KINDS = ("cohort", "cluster_queue")
FAIR_SHARING_KINDS = ("cohort", "cluster_queue", "local_queue")
WORKLOAD_STATUSES = ("Pending", "Admitted", "Finished")
DECISION_TYPES = ("Admitted", "Preempted", "Evicted")


def _one_of(column: str, values: tuple[str, ...], name: str) -> CheckConstraint:
    quoted = ", ".join(f"'{v}'" for v in values)
    return CheckConstraint(f"{column} IN ({quoted})", name=name)


# --------------------------------------------------------------------------- history (append-only)

events = Table(
    "events",
    metadata,
    Column("cluster", String, primary_key=True, comment="cluster of the event (envelope `cluster`, default 'default')"),
    Column("position", BigInteger, primary_key=True, autoincrement=False,
           comment="0-based position in the cluster's ordered event stream"),
    Column("source_position", BigInteger, nullable=True,
           comment="where the event came from: Kafka offset or NDJSON line number"),
    Column("event_id", String, nullable=True, comment="envelope `id`; NULL when a rejected event had none"),
    Column("event_time", UTC_TIME, nullable=True, comment="envelope `time` (UTC)"),
    Column("event_time_ms", BigInteger, nullable=True, comment="envelope `time`, epoch milliseconds"),
    Column("type", String, nullable=True, comment="envelope `type` (Applied, Deleted, WorkloadAdmitted, ...)"),
    Column("payload", EXACT_JSON, nullable=True, comment="the whole event envelope as received (exact text)"),
    Column("status", String, nullable=False, comment="applied | rejected | duplicate"),
    Column("reason", Text, nullable=True, comment="why a rejected event was rejected"),
    Column("field_path", String, nullable=True, comment="JSON path of the offending field of a rejected event"),
    _one_of("status", EVENT_STATUSES, "status"),
    comment="Append-only archive of every event the engine saw, applied, rejected or duplicate.",
)
"""Append-only archive of every event the engine saw: applied, rejected (with reason and field path)
or duplicate (a repeated id, counted and never applied twice).  Replaying the ``applied`` rows of a
cluster in ``position`` order reproduces its state and hash chain exactly."""
Index(None, events.c.cluster, events.c.event_id)
Index(None, events.c.cluster, events.c.event_time_ms)

decisions = Table(
    "decisions",
    metadata,
    Column("cluster", String, primary_key=True),
    Column("seq", BigInteger, primary_key=True, autoincrement=False, comment="gap-free per cluster, from 1"),
    Column("cause_event_id", String, nullable=False, comment="id of the event that caused the decision"),
    Column("cause_position", BigInteger, nullable=True, comment="events.position of the cause event"),
    Column("decision_time", UTC_TIME, nullable=False, comment="decision `time` (UTC)"),
    Column("decision_time_ms", BigInteger, nullable=False, comment="decision `time`, epoch milliseconds"),
    Column("type", String, nullable=False, comment="Admitted | Preempted | Evicted"),
    Column("workload", String, nullable=False, comment="workload key namespace/name"),
    Column("cluster_queue", String, nullable=True),
    Column("payload", JSONType, nullable=False, comment="the decision JSON exactly as the engine emitted it"),
    _one_of("type", DECISION_TYPES, "type"),
    comment="Append-only log of engine decisions; unique (cluster, seq).",
)
"""Append-only log of the engine's decisions (``Admitted``, ``Preempted``, ``Evicted``), one row per
decision, keyed by the gap-free per-cluster ``seq``; ``payload`` is the decision JSON of
``statemodel.decisions.Decision.to_json`` (pod-set assignments, borrowing, preemptor, reason, message)."""
Index(None, decisions.c.cluster, decisions.c.workload)
Index(None, decisions.c.cluster, decisions.c.decision_time_ms)
Index(None, decisions.c.cluster, decisions.c.cluster_queue, decisions.c.decision_time_ms)

preemptions = Table(
    "preemptions",
    metadata,
    Column("cluster", String, primary_key=True),
    Column("seq", BigInteger, primary_key=True, autoincrement=False, comment="decisions.seq of the Preempted decision"),
    Column("cause_position", BigInteger, nullable=True, comment="events.position of the cause event"),
    Column("preempted_at", UTC_TIME, nullable=False, comment="decision `time` (UTC)"),
    Column("preempted_at_ms", BigInteger, nullable=False, comment="decision `time`, epoch milliseconds"),
    Column("victim", String, nullable=False, comment="the preempted workload, namespace/name"),
    Column("victim_cluster_queue", String, nullable=True, comment="the ClusterQueue the victim held quota in"),
    Column("preemptor", String, nullable=False, comment="the workload it was preempted for, namespace/name"),
    Column("preemptor_cluster_queue", String, nullable=True, comment="the ClusterQueue the preemptor is queued in"),
    Column("reason", String, nullable=False,
           comment="InClusterQueue | InCohortReclamation | InCohortReclaimWhileBorrowing | InCohortFairSharing"),
    Column("message", Text, nullable=True, comment="the decision message, with the numbers that made it necessary"),
    comment="Append-only: one row per Preempted decision (who preempted whom, when, why).",
)
"""Append-only: one row per ``Preempted`` decision, written with it (``replay.store.archive``), so
"who preempted whom, when, why" is a plain query (docs/sql.md "Preemptions").  ``seq`` is the
decision's ``decisions.seq``; the other columns are the decision's own fields."""
Index(None, preemptions.c.cluster, preemptions.c.victim)
Index(None, preemptions.c.cluster, preemptions.c.preemptor)
Index(None, preemptions.c.cluster, preemptions.c.preempted_at_ms)

snapshots = Table(
    "snapshots",
    metadata,
    Column("id", AutoId, primary_key=True, autoincrement=True),
    Column("cluster", String, nullable=False),
    Column("position", BigInteger, nullable=False,
           comment="number of the cluster's events the state includes (events.position < this)"),
    Column("event_time", UTC_TIME, nullable=False, comment="engine clock of the cluster at the snapshot (UTC)"),
    Column("event_time_ms", BigInteger, nullable=False, comment="engine clock, epoch milliseconds"),
    Column("decision_seq", BigInteger, nullable=False, comment="last decision seq included (0 = none)"),
    Column("engine_version", String, nullable=False),
    Column("state_hash", String, nullable=False, comment="hex hash chain value after `position` events"),
    Column("state_encoding", String, nullable=False, comment="how `state` is encoded and compressed"),
    Column("state", LargeBinary, nullable=False, comment="compressed canonical state"),
    Column("created_position", BigInteger, nullable=True,
           comment="source position (Kafka offset or NDJSON line) consumed when the snapshot was written"),
    comment="Periodic full snapshots of one cluster's engine state.",
)
"""Periodic full snapshots of one cluster's state: the compressed canonical state, its hash and
the engine version that produced it.  State at any past moment = the nearest snapshot at or before
it (by ``position`` or ``event_time_ms``) + replay of the archived events after it."""
Index(None, snapshots.c.cluster, snapshots.c.position)
Index(None, snapshots.c.cluster, snapshots.c.event_time_ms)

# --------------------------------------------------------------------------- projections of the current state

WEIGHTED_SHARE_COMMENT = ("fair sharing: Kueue status.fairSharing.weightedShare, ceil(dominant resource share "
                          "/ weight), 9223372036854775807 for a zero-weight borrower; NULL when fair sharing is off")

cohorts = Table(
    "cohorts",
    metadata,
    Column("cluster", String, primary_key=True),
    Column("name", String, primary_key=True),
    Column("parent", String, nullable=True),
    Column("explicit", Boolean, nullable=False, comment="defined by a Cohort object (not only referenced)"),
    Column("active", Boolean, nullable=False, comment="false when the cohort is on a cycle"),
    Column("weighted_share", BigInteger, nullable=True, comment=WEIGHTED_SHARE_COMMENT),
    comment="Projection: cohorts of the current state.",
)
"""Projection of the current state: one row per cohort (state JSON ``cohorts``); quotas in ``quotas``."""
Index(None, cohorts.c.cluster, cohorts.c.parent)

cluster_queues = Table(
    "cluster_queues",
    metadata,
    Column("cluster", String, primary_key=True),
    Column("name", String, primary_key=True),
    Column("cohort", String, nullable=True),
    Column("active", Boolean, nullable=False),
    Column("pending_workloads", BigInteger, nullable=False, comment="count"),
    Column("admitted_workloads", BigInteger, nullable=False, comment="count"),
    Column("weighted_share", BigInteger, nullable=True, comment=WEIGHTED_SHARE_COMMENT),
    comment="Projection: ClusterQueues of the current state.",
)
"""Projection of the current state: one row per ClusterQueue (state JSON ``clusterQueues``)."""
Index(None, cluster_queues.c.cluster, cluster_queues.c.cohort)

local_queues = Table(
    "local_queues",
    metadata,
    Column("cluster", String, primary_key=True),
    Column("key", String, primary_key=True, comment="namespace/name"),
    Column("cluster_queue", String, nullable=False),
    Column("pending_workloads", BigInteger, nullable=False, comment="count"),
    Column("admitted_workloads", BigInteger, nullable=False, comment="count"),
    comment="Projection: LocalQueues of the current state.",
)
"""Projection of the current state: one row per LocalQueue (state JSON ``localQueues``)."""
Index(None, local_queues.c.cluster, local_queues.c.cluster_queue)

quotas = Table(
    "quotas",
    metadata,
    Column("cluster", String, primary_key=True),
    Column("node_kind", String, primary_key=True, comment="cohort | cluster_queue"),
    Column("node_name", String, primary_key=True),
    Column("flavor", String, primary_key=True),
    Column("resource", String, primary_key=True),
    Column("nominal", BigInteger, nullable=False, comment=BASE_UNITS),
    Column("borrowing_limit", BigInteger, nullable=True, comment=f"{BASE_UNITS}; NULL = unlimited"),
    Column("lending_limit", BigInteger, nullable=True, comment=f"{BASE_UNITS}; NULL = unlimited"),
    Column("subtree_quota", BigInteger, nullable=True, comment=f"{BASE_UNITS}; cohorts only"),
    Column("usage", BigInteger, nullable=False, comment=BASE_UNITS),
    Column("available", BigInteger, nullable=True, comment=f"{BASE_UNITS}; clamped at 0; ClusterQueues only"),
    Column("potential_available", BigInteger, nullable=True,
           comment=f"{BASE_UNITS}; ignoring usage; ClusterQueues only"),
    _one_of("node_kind", NODE_KINDS, "node_kind"),
    comment="Projection: quota per node x flavor x resource, amounts in base units.",
)
"""Projection of the current state: quota arithmetic per tree node (cohort or ClusterQueue) ×
flavor × resource — the ``resources`` maps of the state JSON — amounts in base units of ``resource``."""
Index(None, quotas.c.cluster, quotas.c.resource, quotas.c.flavor)

workloads = Table(
    "workloads",
    metadata,
    Column("cluster", String, primary_key=True),
    Column("key", String, primary_key=True, comment="namespace/name"),
    Column("status", String, nullable=False, comment="Pending | Admitted | Finished"),
    Column("cluster_queue", String, nullable=True),
    Column("local_queue", String, nullable=True, comment="namespace/name"),
    Column("priority", BigInteger, nullable=False),
    Column("reason", String, nullable=True, comment="Kueue pending reason (pending workloads)"),
    Column("message", Text, nullable=True, comment="Kueue pending message (pending workloads)"),
    Column("shortfalls", JSONType, nullable=True,
           comment="pending workloads that do not fit: what they are short of, a JSON array of {podSet, reason, "
                   "flavor, resource, node, needed, available, request} (base units); JSON null otherwise"),
    Column("position_in_cluster_queue", BigInteger, nullable=True, comment="0-based; pending only"),
    Column("position_in_local_queue", BigInteger, nullable=True, comment="0-based; pending only"),
    Column("queued_at", UTC_TIME, nullable=True),
    Column("queued_at_ms", BigInteger, nullable=True, comment="epoch milliseconds"),
    Column("admitted_at", UTC_TIME, nullable=True),
    Column("admitted_at_ms", BigInteger, nullable=True, comment="epoch milliseconds"),
    Column("borrowing", BigInteger, nullable=True,
           comment="admitted only: borrowing height, 0 = within nominal quota, n = borrows n cohort levels up"),
    Column("admission", JSONType, nullable=True, comment="podSetAssignments JSON of an admitted workload"),
    Column("wait_ms", BigInteger, nullable=True,
           comment="admitted: admitted_at - queued_at; pending: state time - queued_at; milliseconds"),
    _one_of("status", WORKLOAD_STATUSES, "status"),
    comment="Projection: workloads of the current state.",
)
"""Projection of the current state: one row per workload (state JSON ``workloads``) with status,
Kueue reason and message, what it is short of, queue positions, admission and wait time."""
Index(None, workloads.c.cluster, workloads.c.cluster_queue, workloads.c.status)
Index(None, workloads.c.cluster, workloads.c.local_queue, workloads.c.status)
Index(None, workloads.c.cluster, workloads.c.status)

fair_sharing = Table(
    "fair_sharing",
    metadata,
    Column("cluster", String, primary_key=True),
    Column("kind", String, primary_key=True, comment="cohort | cluster_queue | local_queue"),
    Column("name", String, primary_key=True, comment="cohort / ClusterQueue name or LocalQueue namespace/name"),
    Column("resource", String, primary_key=True),
    Column("consumed", FAIR_SHARING, nullable=False, comment=f"decayed consumed usage; {SCORE_UNITS}"),
    Column("penalty", FAIR_SHARING, nullable=False, comment=f"entry penalty; {SCORE_UNITS}"),
    Column("score", FAIR_SHARING, nullable=True,
           comment="admission fair-sharing score of the node (same on each resource row); NULL = +infinity"),
    Column("last_update", UTC_TIME, nullable=True),
    Column("last_update_ms", BigInteger, nullable=True, comment="epoch milliseconds"),
    _one_of("kind", FAIR_SHARING_KINDS, "kind"),
    comment="Projection: admission fair-sharing usage per node x resource.",
)
"""Projection of the current state: admission fair-sharing (KEP-4136) usage per LocalQueue,
ClusterQueue (sum of its LocalQueues) and cohort × resource (state JSON ``admissionFairSharing``)."""

nodes = Table(
    "nodes",
    metadata,
    Column("cluster", String, primary_key=True),
    Column("name", String, primary_key=True),
    Column("labels", JSONType, nullable=False, comment="label map"),
    Column("allocatable", JSONType, nullable=False, comment=f"resource -> amount in {BASE_UNITS}"),
    Column("unschedulable", Boolean, nullable=False),
    Column("taints", JSONType, nullable=False, comment="list of {key, value, effect}"),
    Column("allocated", JSONType, nullable=False, server_default="{}",
           comment=f"resource -> amount in {BASE_UNITS} held by placed pods"),
    comment="Projection: v1 Nodes known to the engine.",
)
"""Projection of the current state: the core ``v1`` Nodes the engine knows, with what placed pods hold."""

placements = Table(
    "placements",
    metadata,
    Column("cluster", String, primary_key=True),
    Column("workload", String, primary_key=True, comment="namespace/name"),
    Column("pod_set", String, primary_key=True),
    Column("node", String, primary_key=True),
    Column("pods", BigInteger, nullable=False),
    Column("allocated", JSONType, nullable=False, comment=f"resource -> amount in {BASE_UNITS} on that node"),
    comment="Projection: pods of admitted workloads per node (the placement stage).",
)
"""Projection of the current state: where each placed workload's pods are, per pod set and node."""

elastic_quotas = Table(
    "elastic_quotas",
    metadata,
    Column("cluster", String, primary_key=True),
    Column("name", String, primary_key=True),
    Column("parent", String, nullable=True, comment="parent quota; NULL for the root and the system/default groups"),
    Column("is_parent", Boolean, nullable=False),
    Column("allow_lent_resource", Boolean, nullable=False),
    Column("min", JSONType, nullable=False, comment=f"resource -> amount in {BASE_UNITS}"),
    Column("max", JSONType, nullable=False, comment=f"resource -> amount in {BASE_UNITS}"),
    Column("auto_scale_min", JSONType, nullable=False, comment="min after min scaling, resource -> amount"),
    Column("shared_weight", JSONType, nullable=False, comment="resource -> weight"),
    Column("request", JSONType, nullable=False, comment="resource -> amount (pending and running pods)"),
    Column("child_request", JSONType, nullable=False, comment="resource -> amount"),
    Column("used", JSONType, nullable=False, comment="resource -> amount (running pods)"),
    Column("non_preemptible_used", JSONType, nullable=False, comment="resource -> amount"),
    Column("runtime", JSONType, nullable=False, comment="resource -> amount the group may use now"),
    Column("pods", BigInteger, nullable=False, comment="pending and running pods of the group (count)"),
    comment="Projection: Koordinator ElasticQuota groups (the koordinator quota model).",
)
"""Projection of the current state: the quota groups of a cluster running the ``koordinator`` model
(state JSON ``elasticQuotas``), upstream ``QuotaCalculateInfo`` numbers as JSON maps in base units."""

volcano_queues = Table(
    "volcano_queues",
    metadata,
    Column("cluster", String, primary_key=True),
    Column("name", String, primary_key=True),
    Column("parent", String, nullable=True, comment="parent queue; NULL for root"),
    Column("weight", BigInteger, nullable=False),
    Column("state", String, nullable=False, comment="Open, Closed, Closing or Unknown"),
    Column("reclaimable", Boolean, nullable=False),
    Column("capability", JSONType, nullable=False,
           comment=f"resource -> amount in {BASE_UNITS}; infinite resources left out"),
    Column("real_capability", JSONType, nullable=False, comment="resource -> amount; infinite resources left out"),
    Column("guarantee", JSONType, nullable=False, comment="resource -> amount"),
    Column("deserved", JSONType, nullable=False, comment="resource -> amount (exact value rounded down)"),
    Column("allocated", JSONType, nullable=False, comment="resource -> amount (bound pods; a parent: its subtree)"),
    Column("request", JSONType, nullable=False, comment="resource -> amount (bound and pending pods)"),
    Column("inqueue", JSONType, nullable=False, comment="resource -> amount reserved by Inqueue/Running groups"),
    Column("elastic", JSONType, nullable=False, comment="resource -> amount allocated beyond minResources"),
    Column("share", String, nullable=False, comment="exact ratio allocated / deserved, e.g. '2/3'"),
    Column("pod_groups", BigInteger, nullable=False, comment="PodGroups of the queue that are not Completed"),
    comment="Projection: Volcano queues (the volcano quota model).",
)
"""Projection of the current state: the queues of a cluster running the ``volcano`` model (state JSON
``queues``), upstream ``queueAttr`` numbers as JSON maps in base units."""

# --------------------------------------------------------------------------- ingest bookkeeping

dead_letters = Table(
    "dead_letters",
    metadata,
    Column("id", AutoId, primary_key=True, autoincrement=True),
    Column("cluster", String, nullable=True,
           comment="cluster whose event stream the record joined; NULL when it names none that has state"),
    Column("source", String, nullable=True, comment="Kafka topic/partition or file the record came from"),
    Column("source_position", BigInteger, nullable=True, comment="Kafka offset or NDJSON line number"),
    Column("raw", LargeBinary, nullable=False, comment="the record's bytes as received"),
    Column("reason", Text, nullable=False),
    Column("field_path", String, nullable=True, comment="JSON path of the offending field, if known"),
    Column("received_position", BigInteger, nullable=True,
           comment="events.position the cluster's stream had reached when the record arrived"),
    comment="Every record that failed validation, with its exact bytes.",
)
"""Every record that failed validation (not JSON, no envelope, a bad field...): kept verbatim with the
reason, so nothing consumed is ever lost.  ``cluster`` and ``received_position`` are set when the
record also joined a cluster's ``events`` stream as ``rejected`` (it names a cluster that has state)."""
Index(None, dead_letters.c.cluster, dead_letters.c.received_position)

ingest_offsets = Table(
    "ingest_offsets",
    metadata,
    Column("consumer_group", String, primary_key=True),
    Column("topic", String, primary_key=True),
    Column("topic_partition", Integer, primary_key=True, autoincrement=False),
    Column("next_offset", BigInteger, nullable=False, comment="next Kafka offset to consume"),
    Column("last_event_id", String, nullable=True,
           comment="id of the last record consumed (bounded, without NUL), for people"),
    Column("last_record_digest", String, nullable=True,
           comment="SHA-256 (hex) of the last record's value, 'tombstone' for none; the broker-reset check"),
    comment="Consumed source positions, written in the same transaction as the batch they cover.",
)
"""Where each consumer group stands per topic partition; committed in the same transaction as the
projections and decisions of the batch, so a restart resumes exactly once."""

outbox = Table(
    "outbox",
    metadata,
    Column("cluster", String, primary_key=True),
    Column("first_seq", BigInteger, primary_key=True, autoincrement=False,
           comment="first decision seq of the range"),
    Column("last_seq", BigInteger, nullable=False, comment="last decision seq of the range (inclusive)"),
    Column("published", Boolean, nullable=False),
    comment="Transactional outbox: ranges of decisions to publish to Kafka (payloads in decisions).",
)
"""Transactional outbox: per cluster and ingest batch, the range of decision seqs written in that
batch's transaction; the relay publishes those ``decisions`` rows after the commit and sets
``published``."""
Index(None, outbox.c.published, outbox.c.cluster, outbox.c.first_seq)

__all__ = [
    "metadata", "events", "decisions", "snapshots", "cohorts", "cluster_queues", "local_queues",
    "quotas", "workloads", "fair_sharing", "nodes", "elastic_quotas", "volcano_queues", "dead_letters",
    "ingest_offsets", "outbox",
]
