"""Preemptions: one row per ``Preempted`` decision — victim and preemptor with their ClusterQueues,
time, reason and message — so "who preempted whom, when, why" is a plain query.

Filled by the archive with each ``Preempted`` decision from now on; the upgrade copies the
``Preempted`` decisions already stored (``preemptor_cluster_queue`` is NULL for a decision written
before the engine carried ``preemptorClusterQueue``).  The downgrade drops the table (the decisions
keep everything it held).

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-26 11:45:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0006'
down_revision: str | Sequence[str] | None = '0005'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql')


def upgrade() -> None:
    table = op.create_table('preemptions',
    sa.Column('cluster', sa.String(), nullable=False),
    sa.Column('seq', sa.BigInteger(), autoincrement=False, nullable=False, comment='decisions.seq of the Preempted decision'),
    sa.Column('cause_position', sa.BigInteger(), nullable=True, comment='events.position of the cause event'),
    sa.Column('preempted_at', sa.DateTime(timezone=True), nullable=False, comment='decision `time` (UTC)'),
    sa.Column('preempted_at_ms', sa.BigInteger(), nullable=False, comment='decision `time`, epoch milliseconds'),
    sa.Column('victim', sa.String(), nullable=False, comment='the preempted workload, namespace/name'),
    sa.Column('victim_cluster_queue', sa.String(), nullable=True, comment='the ClusterQueue the victim held quota in'),
    sa.Column('preemptor', sa.String(), nullable=False, comment='the workload it was preempted for, namespace/name'),
    sa.Column('preemptor_cluster_queue', sa.String(), nullable=True, comment='the ClusterQueue the preemptor is queued in'),
    sa.Column('reason', sa.String(), nullable=False, comment='InClusterQueue | InCohortReclamation | InCohortReclaimWhileBorrowing | InCohortFairSharing'),
    sa.Column('message', sa.Text(), nullable=True, comment='the decision message, with the numbers that made it necessary'),
    sa.PrimaryKeyConstraint('cluster', 'seq', name=op.f('pk_preemptions')),
    comment='Append-only: one row per Preempted decision (who preempted whom, when, why).'
    )
    with op.batch_alter_table('preemptions', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_preemptions_cluster_victim'), ['cluster', 'victim'], unique=False)
        batch_op.create_index(batch_op.f('ix_preemptions_cluster_preemptor'), ['cluster', 'preemptor'], unique=False)
        batch_op.create_index(batch_op.f('ix_preemptions_cluster_preempted_at_ms'), ['cluster', 'preempted_at_ms'],
                              unique=False)
    decisions = sa.table('decisions', sa.column('cluster', sa.String()), sa.column('seq', sa.BigInteger()),
                         sa.column('cause_position', sa.BigInteger()),
                         sa.column('decision_time', sa.DateTime(timezone=True)),
                         sa.column('decision_time_ms', sa.BigInteger()), sa.column('type', sa.String()),
                         sa.column('workload', sa.String()), sa.column('cluster_queue', sa.String()),
                         sa.column('payload', _JSON))
    d = decisions.c
    rows = op.get_bind().execute(sa.select(d.cluster, d.seq, d.cause_position, d.decision_time, d.decision_time_ms,
                                           d.workload, d.cluster_queue, d.payload)
                                 .where(d.type == 'Preempted').order_by(d.cluster, d.seq))
    op.bulk_insert(table, [
        {'cluster': r.cluster, 'seq': r.seq, 'cause_position': r.cause_position, 'preempted_at': r.decision_time,
         'preempted_at_ms': r.decision_time_ms, 'victim': r.workload, 'victim_cluster_queue': r.cluster_queue,
         'preemptor': r.payload.get('preemptor') or '', 'preemptor_cluster_queue': r.payload.get('preemptorClusterQueue'),
         'reason': r.payload.get('reason') or '', 'message': r.payload.get('message')} for r in rows])


def downgrade() -> None:
    with op.batch_alter_table('preemptions', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_preemptions_cluster_preempted_at_ms'))
        batch_op.drop_index(batch_op.f('ix_preemptions_cluster_preemptor'))
        batch_op.drop_index(batch_op.f('ix_preemptions_cluster_victim'))
    op.drop_table('preemptions')
