"""Initial schema: every table of statemodel.sql_schema (history, snapshots, projections, ingest).

Revision ID: 0001
Revises: (none)
Create Date: 2026-11-22 08:59:07.106012
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0001'
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('cluster_queues',
    sa.Column('cluster', sa.String(), nullable=False),
    sa.Column('name', sa.String(), nullable=False),
    sa.Column('cohort', sa.String(), nullable=True),
    sa.Column('active', sa.Boolean(), nullable=False),
    sa.Column('pending_workloads', sa.BigInteger(), nullable=False, comment='count'),
    sa.Column('admitted_workloads', sa.BigInteger(), nullable=False, comment='count'),
    sa.PrimaryKeyConstraint('cluster', 'name', name=op.f('pk_cluster_queues')),
    comment='Projection: ClusterQueues of the current state.'
    )
    with op.batch_alter_table('cluster_queues', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_cluster_queues_cluster_cohort'), ['cluster', 'cohort'], unique=False)

    op.create_table('cohorts',
    sa.Column('cluster', sa.String(), nullable=False),
    sa.Column('name', sa.String(), nullable=False),
    sa.Column('parent', sa.String(), nullable=True),
    sa.Column('explicit', sa.Boolean(), nullable=False, comment='defined by a Cohort object (not only referenced)'),
    sa.Column('active', sa.Boolean(), nullable=False, comment='false when the cohort is on a cycle'),
    sa.PrimaryKeyConstraint('cluster', 'name', name=op.f('pk_cohorts')),
    comment='Projection: cohorts of the current state.'
    )
    with op.batch_alter_table('cohorts', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_cohorts_cluster_parent'), ['cluster', 'parent'], unique=False)

    op.create_table('dead_letters',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('cluster', sa.String(), nullable=True, comment='NULL when the record was too broken to tell'),
    sa.Column('source', sa.String(), nullable=True, comment='Kafka topic/partition or file the record came from'),
    sa.Column('source_position', sa.BigInteger(), nullable=True, comment='Kafka offset or NDJSON line number'),
    sa.Column('raw', sa.LargeBinary(), nullable=False, comment="the record's bytes as received"),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('field_path', sa.String(), nullable=True, comment='JSON path of the offending field, if known'),
    sa.Column('received_position', sa.BigInteger(), nullable=True, comment="events.position the cluster's stream had reached when the record arrived"),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_dead_letters')),
    comment='Records that could not be decoded into an event at all.'
    )
    with op.batch_alter_table('dead_letters', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_dead_letters_cluster_received_position'), ['cluster', 'received_position'], unique=False)

    op.create_table('decisions',
    sa.Column('cluster', sa.String(), nullable=False),
    sa.Column('seq', sa.BigInteger(), autoincrement=False, nullable=False, comment='gap-free per cluster, from 1'),
    sa.Column('cause_event_id', sa.String(), nullable=False, comment='id of the event that caused the decision'),
    sa.Column('cause_position', sa.BigInteger(), nullable=True, comment='events.position of the cause event'),
    sa.Column('decision_time', sa.DateTime(timezone=True), nullable=False, comment='decision `time` (UTC)'),
    sa.Column('decision_time_ms', sa.BigInteger(), nullable=False, comment='decision `time`, epoch milliseconds'),
    sa.Column('type', sa.String(), nullable=False, comment='Admitted | Preempted | Evicted'),
    sa.Column('workload', sa.String(), nullable=False, comment='workload key namespace/name'),
    sa.Column('cluster_queue', sa.String(), nullable=True),
    sa.Column('payload', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False, comment='the decision JSON exactly as the engine emitted it'),
    sa.CheckConstraint("type IN ('Admitted', 'Preempted', 'Evicted')", name=op.f('ck_decisions_type')),
    sa.PrimaryKeyConstraint('cluster', 'seq', name=op.f('pk_decisions')),
    comment='Append-only log of engine decisions; unique (cluster, seq).'
    )
    with op.batch_alter_table('decisions', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_decisions_cluster_cluster_queue_decision_time_ms'), ['cluster', 'cluster_queue', 'decision_time_ms'], unique=False)
        batch_op.create_index(batch_op.f('ix_decisions_cluster_decision_time_ms'), ['cluster', 'decision_time_ms'], unique=False)
        batch_op.create_index(batch_op.f('ix_decisions_cluster_workload'), ['cluster', 'workload'], unique=False)

    op.create_table('events',
    sa.Column('cluster', sa.String(), nullable=False, comment="cluster of the event (envelope `cluster`, default 'default')"),
    sa.Column('position', sa.BigInteger(), autoincrement=False, nullable=False, comment="0-based position in the cluster's ordered event stream"),
    sa.Column('source_position', sa.BigInteger(), nullable=True, comment='where the event came from: Kafka offset or NDJSON line number'),
    sa.Column('event_id', sa.String(), nullable=True, comment='envelope `id`; NULL when a rejected event had none'),
    sa.Column('event_time', sa.DateTime(timezone=True), nullable=True, comment='envelope `time` (UTC)'),
    sa.Column('event_time_ms', sa.BigInteger(), nullable=True, comment='envelope `time`, epoch milliseconds'),
    sa.Column('type', sa.String(), nullable=True, comment='envelope `type` (Applied, Deleted, WorkloadAdmitted, ...)'),
    sa.Column('payload', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True, comment='the whole event envelope as received'),
    sa.Column('status', sa.String(), nullable=False, comment='applied | rejected | duplicate'),
    sa.Column('reason', sa.Text(), nullable=True, comment='why a rejected event was rejected'),
    sa.Column('field_path', sa.String(), nullable=True, comment='JSON path of the offending field of a rejected event'),
    sa.CheckConstraint("status IN ('applied', 'rejected', 'duplicate')", name=op.f('ck_events_status')),
    sa.PrimaryKeyConstraint('cluster', 'position', name=op.f('pk_events')),
    comment='Append-only archive of every event the engine saw, applied, rejected or duplicate.'
    )
    with op.batch_alter_table('events', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_events_cluster_event_id'), ['cluster', 'event_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_events_cluster_event_time_ms'), ['cluster', 'event_time_ms'], unique=False)

    op.create_table('fair_sharing',
    sa.Column('cluster', sa.String(), nullable=False),
    sa.Column('kind', sa.String(), nullable=False, comment='cohort | cluster_queue | local_queue'),
    sa.Column('name', sa.String(), nullable=False, comment='cohort / ClusterQueue name or LocalQueue namespace/name'),
    sa.Column('resource', sa.String(), nullable=False),
    sa.Column('consumed', sa.Numeric(precision=40, scale=12), nullable=False, comment='decayed consumed usage; Kueue score units: cores for cpu, base units otherwise'),
    sa.Column('penalty', sa.Numeric(precision=40, scale=12), nullable=False, comment='entry penalty; Kueue score units: cores for cpu, base units otherwise'),
    sa.Column('score', sa.Numeric(precision=40, scale=12), nullable=True, comment='admission fair-sharing score of the node (same on each resource row); NULL = +infinity'),
    sa.Column('last_update', sa.DateTime(timezone=True), nullable=True),
    sa.Column('last_update_ms', sa.BigInteger(), nullable=True, comment='epoch milliseconds'),
    sa.CheckConstraint("kind IN ('cohort', 'cluster_queue', 'local_queue')", name=op.f('ck_fair_sharing_kind')),
    sa.PrimaryKeyConstraint('cluster', 'kind', 'name', 'resource', name=op.f('pk_fair_sharing')),
    comment='Projection: admission fair-sharing usage per node x resource.'
    )
    op.create_table('ingest_offsets',
    sa.Column('consumer_group', sa.String(), nullable=False),
    sa.Column('topic', sa.String(), nullable=False),
    sa.Column('topic_partition', sa.Integer(), autoincrement=False, nullable=False),
    sa.Column('next_offset', sa.BigInteger(), nullable=False, comment='next Kafka offset to consume'),
    sa.Column('last_event_id', sa.String(), nullable=True, comment='id of the last event consumed'),
    sa.PrimaryKeyConstraint('consumer_group', 'topic', 'topic_partition', name=op.f('pk_ingest_offsets')),
    comment='Consumed source positions, written in the same transaction as the batch they cover.'
    )
    op.create_table('local_queues',
    sa.Column('cluster', sa.String(), nullable=False),
    sa.Column('key', sa.String(), nullable=False, comment='namespace/name'),
    sa.Column('cluster_queue', sa.String(), nullable=False),
    sa.Column('pending_workloads', sa.BigInteger(), nullable=False, comment='count'),
    sa.Column('admitted_workloads', sa.BigInteger(), nullable=False, comment='count'),
    sa.PrimaryKeyConstraint('cluster', 'key', name=op.f('pk_local_queues')),
    comment='Projection: LocalQueues of the current state.'
    )
    with op.batch_alter_table('local_queues', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_local_queues_cluster_cluster_queue'), ['cluster', 'cluster_queue'], unique=False)

    op.create_table('nodes',
    sa.Column('cluster', sa.String(), nullable=False),
    sa.Column('name', sa.String(), nullable=False),
    sa.Column('labels', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False, comment='label map'),
    sa.Column('allocatable', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False, comment='resource -> amount in base units of `resource`: millicores for cpu, bytes for memory, counts otherwise'),
    sa.Column('unschedulable', sa.Boolean(), nullable=False),
    sa.Column('taints', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False, comment='list of {key, value, effect}'),
    sa.PrimaryKeyConstraint('cluster', 'name', name=op.f('pk_nodes')),
    comment='Projection: v1 Nodes known to the engine.'
    )
    op.create_table('outbox',
    sa.Column('cluster', sa.String(), nullable=False),
    sa.Column('seq', sa.BigInteger(), autoincrement=False, nullable=False, comment='decision seq'),
    sa.Column('payload', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False, comment='message to publish (decision JSON)'),
    sa.Column('published', sa.Boolean(), nullable=False),
    sa.PrimaryKeyConstraint('cluster', 'seq', name=op.f('pk_outbox')),
    comment='Transactional outbox of decisions to publish to Kafka.'
    )
    with op.batch_alter_table('outbox', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_outbox_published_cluster_seq'), ['published', 'cluster', 'seq'], unique=False)

    op.create_table('quotas',
    sa.Column('cluster', sa.String(), nullable=False),
    sa.Column('node_kind', sa.String(), nullable=False, comment='cohort | cluster_queue'),
    sa.Column('node_name', sa.String(), nullable=False),
    sa.Column('flavor', sa.String(), nullable=False),
    sa.Column('resource', sa.String(), nullable=False),
    sa.Column('nominal', sa.BigInteger(), nullable=False, comment='base units of `resource`: millicores for cpu, bytes for memory, counts otherwise'),
    sa.Column('borrowing_limit', sa.BigInteger(), nullable=True, comment='base units of `resource`: millicores for cpu, bytes for memory, counts otherwise; NULL = unlimited'),
    sa.Column('lending_limit', sa.BigInteger(), nullable=True, comment='base units of `resource`: millicores for cpu, bytes for memory, counts otherwise; NULL = unlimited'),
    sa.Column('subtree_quota', sa.BigInteger(), nullable=True, comment='base units of `resource`: millicores for cpu, bytes for memory, counts otherwise; cohorts only'),
    sa.Column('usage', sa.BigInteger(), nullable=False, comment='base units of `resource`: millicores for cpu, bytes for memory, counts otherwise'),
    sa.Column('available', sa.BigInteger(), nullable=True, comment='base units of `resource`: millicores for cpu, bytes for memory, counts otherwise; clamped at 0; ClusterQueues only'),
    sa.Column('potential_available', sa.BigInteger(), nullable=True, comment='base units of `resource`: millicores for cpu, bytes for memory, counts otherwise; ignoring usage; ClusterQueues only'),
    sa.CheckConstraint("node_kind IN ('cohort', 'cluster_queue')", name=op.f('ck_quotas_node_kind')),
    sa.PrimaryKeyConstraint('cluster', 'node_kind', 'node_name', 'flavor', 'resource', name=op.f('pk_quotas')),
    comment='Projection: quota per node x flavor x resource, amounts in base units.'
    )
    with op.batch_alter_table('quotas', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_quotas_cluster_resource_flavor'), ['cluster', 'resource', 'flavor'], unique=False)

    op.create_table('snapshots',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('cluster', sa.String(), nullable=False),
    sa.Column('position', sa.BigInteger(), nullable=False, comment="number of the cluster's events the state includes (events.position < this)"),
    sa.Column('event_time', sa.DateTime(timezone=True), nullable=False, comment='engine clock of the cluster at the snapshot (UTC)'),
    sa.Column('event_time_ms', sa.BigInteger(), nullable=False, comment='engine clock, epoch milliseconds'),
    sa.Column('decision_seq', sa.BigInteger(), nullable=False, comment='last decision seq included (0 = none)'),
    sa.Column('engine_version', sa.String(), nullable=False),
    sa.Column('state_hash', sa.String(), nullable=False, comment='hex hash chain value after `position` events'),
    sa.Column('state_encoding', sa.String(), nullable=False, comment='how `state` is encoded and compressed'),
    sa.Column('state', sa.LargeBinary(), nullable=False, comment='compressed canonical state'),
    sa.Column('created_position', sa.BigInteger(), nullable=True, comment='source position (Kafka offset or NDJSON line) consumed when the snapshot was written'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_snapshots')),
    comment="Periodic full snapshots of one cluster's engine state."
    )
    with op.batch_alter_table('snapshots', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_snapshots_cluster_event_time_ms'), ['cluster', 'event_time_ms'], unique=False)
        batch_op.create_index(batch_op.f('ix_snapshots_cluster_position'), ['cluster', 'position'], unique=False)

    op.create_table('workloads',
    sa.Column('cluster', sa.String(), nullable=False),
    sa.Column('key', sa.String(), nullable=False, comment='namespace/name'),
    sa.Column('status', sa.String(), nullable=False, comment='Pending | Admitted | Finished'),
    sa.Column('cluster_queue', sa.String(), nullable=True),
    sa.Column('local_queue', sa.String(), nullable=True, comment='namespace/name'),
    sa.Column('priority', sa.BigInteger(), nullable=False),
    sa.Column('reason', sa.String(), nullable=True, comment='Kueue pending reason (pending workloads)'),
    sa.Column('message', sa.Text(), nullable=True, comment='Kueue pending message (pending workloads)'),
    sa.Column('position_in_cluster_queue', sa.BigInteger(), nullable=True, comment='0-based; pending only'),
    sa.Column('position_in_local_queue', sa.BigInteger(), nullable=True, comment='0-based; pending only'),
    sa.Column('queued_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('queued_at_ms', sa.BigInteger(), nullable=True, comment='epoch milliseconds'),
    sa.Column('admitted_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('admitted_at_ms', sa.BigInteger(), nullable=True, comment='epoch milliseconds'),
    sa.Column('borrowing', sa.BigInteger(), nullable=True, comment='admitted only: borrowing height, 0 = within nominal quota, n = borrows n cohort levels up'),
    sa.Column('admission', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True, comment='podSetAssignments JSON of an admitted workload'),
    sa.Column('wait_ms', sa.BigInteger(), nullable=True, comment='admitted: admitted_at - queued_at; pending: state time - queued_at; milliseconds'),
    sa.CheckConstraint("status IN ('Pending', 'Admitted', 'Finished')", name=op.f('ck_workloads_status')),
    sa.PrimaryKeyConstraint('cluster', 'key', name=op.f('pk_workloads')),
    comment='Projection: workloads of the current state.'
    )
    with op.batch_alter_table('workloads', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_workloads_cluster_cluster_queue_status'), ['cluster', 'cluster_queue', 'status'], unique=False)
        batch_op.create_index(batch_op.f('ix_workloads_cluster_local_queue_status'), ['cluster', 'local_queue', 'status'], unique=False)
        batch_op.create_index(batch_op.f('ix_workloads_cluster_status'), ['cluster', 'status'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('workloads', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_workloads_cluster_status'))
        batch_op.drop_index(batch_op.f('ix_workloads_cluster_local_queue_status'))
        batch_op.drop_index(batch_op.f('ix_workloads_cluster_cluster_queue_status'))

    op.drop_table('workloads')
    with op.batch_alter_table('snapshots', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_snapshots_cluster_position'))
        batch_op.drop_index(batch_op.f('ix_snapshots_cluster_event_time_ms'))

    op.drop_table('snapshots')
    with op.batch_alter_table('quotas', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_quotas_cluster_resource_flavor'))

    op.drop_table('quotas')
    with op.batch_alter_table('outbox', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_outbox_published_cluster_seq'))

    op.drop_table('outbox')
    op.drop_table('nodes')
    with op.batch_alter_table('local_queues', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_local_queues_cluster_cluster_queue'))

    op.drop_table('local_queues')
    op.drop_table('ingest_offsets')
    op.drop_table('fair_sharing')
    with op.batch_alter_table('events', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_events_cluster_event_time_ms'))
        batch_op.drop_index(batch_op.f('ix_events_cluster_event_id'))

    op.drop_table('events')
    with op.batch_alter_table('decisions', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_decisions_cluster_workload'))
        batch_op.drop_index(batch_op.f('ix_decisions_cluster_decision_time_ms'))
        batch_op.drop_index(batch_op.f('ix_decisions_cluster_cluster_queue_decision_time_ms'))

    op.drop_table('decisions')
    with op.batch_alter_table('dead_letters', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_dead_letters_cluster_received_position'))

    op.drop_table('dead_letters')
    with op.batch_alter_table('cohorts', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_cohorts_cluster_parent'))

    op.drop_table('cohorts')
    with op.batch_alter_table('cluster_queues', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_cluster_queues_cluster_cohort'))

    op.drop_table('cluster_queues')
