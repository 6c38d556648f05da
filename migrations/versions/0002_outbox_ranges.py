"""Outbox of decision ranges: one row per cluster and ingest batch instead of a copy of every decision.

The payloads are the ``decisions`` rows themselves, so the worker no longer writes each decision
twice nor marks each one published.  Unpublished rows of the old outbox become ranges (one per run
of consecutive seqs of a cluster), so nothing waiting to be relayed is lost; a downgrade turns
unpublished ranges back into per-decision rows from ``decisions``.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23 22:10:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0002'
down_revision: str | Sequence[str] | None = '0001'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_RUNS = """
    SELECT cluster, MIN(seq) AS first_seq, MAX(seq) AS last_seq FROM (
        SELECT cluster, seq, seq - ROW_NUMBER() OVER (PARTITION BY cluster ORDER BY seq) AS run
        FROM outbox WHERE NOT published) AS numbered
    GROUP BY cluster, run ORDER BY cluster, first_seq
"""


def _create_ranges_table() -> sa.Table:
    table = op.create_table('outbox',
    sa.Column('cluster', sa.String(), nullable=False),
    sa.Column('first_seq', sa.BigInteger(), autoincrement=False, nullable=False, comment='first decision seq of the range'),
    sa.Column('last_seq', sa.BigInteger(), nullable=False, comment='last decision seq of the range (inclusive)'),
    sa.Column('published', sa.Boolean(), nullable=False),
    sa.PrimaryKeyConstraint('cluster', 'first_seq', name=op.f('pk_outbox')),
    comment='Transactional outbox: ranges of decisions to publish to Kafka (payloads in decisions).'
    )
    with op.batch_alter_table('outbox', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_outbox_published_cluster_first_seq'), ['published', 'cluster', 'first_seq'], unique=False)
    return table


def _create_per_decision_table() -> sa.Table:
    table = op.create_table('outbox',
    sa.Column('cluster', sa.String(), nullable=False),
    sa.Column('seq', sa.BigInteger(), autoincrement=False, nullable=False, comment='decision seq'),
    sa.Column('payload', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False, comment='message to publish (decision JSON)'),
    sa.Column('published', sa.Boolean(), nullable=False),
    sa.PrimaryKeyConstraint('cluster', 'seq', name=op.f('pk_outbox')),
    comment='Transactional outbox of decisions to publish to Kafka.'
    )
    with op.batch_alter_table('outbox', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_outbox_published_cluster_seq'), ['published', 'cluster', 'seq'], unique=False)
    return table


def upgrade() -> None:
    waiting = [dict(r._mapping) for r in op.get_bind().execute(sa.text(_RUNS))]
    with op.batch_alter_table('outbox', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_outbox_published_cluster_seq'))
    op.drop_table('outbox')
    op.bulk_insert(_create_ranges_table(), [{**r, "published": False} for r in waiting])


def downgrade() -> None:
    payload = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql')
    waiting = [dict(r._mapping) for r in op.get_bind().execute(sa.text(
        "SELECT d.cluster, d.seq, d.payload FROM decisions AS d JOIN outbox AS r ON d.cluster = r.cluster "
        "AND d.seq BETWEEN r.first_seq AND r.last_seq WHERE NOT r.published ORDER BY d.cluster, d.seq"
    ).columns(payload=payload))]
    with op.batch_alter_table('outbox', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_outbox_published_cluster_first_seq'))
    op.drop_table('outbox')
    op.bulk_insert(_create_per_decision_table(), [{**r, "published": False} for r in waiting])
