"""Placement: ``nodes.allocated`` (what placed pods hold on each node, JSON map in base units; ``{}``
for existing rows, which no placement had charged) and the ``placements`` table (pods of admitted
workloads per pod set and node).  The downgrade drops both.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-26 17:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0010'
down_revision: str | Sequence[str] | None = '0009'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql')
_UNITS = 'resource -> amount in base units of `resource`: millicores for cpu, bytes for memory, counts otherwise'


def upgrade() -> None:
    with op.batch_alter_table('nodes') as batch:
        batch.add_column(sa.Column('allocated', _JSON, nullable=False, server_default='{}',
                                   comment=f'{_UNITS} held by placed pods'))
    op.create_table(
        'placements',
        sa.Column('cluster', sa.String(), nullable=False),
        sa.Column('workload', sa.String(), nullable=False, comment='namespace/name'),
        sa.Column('pod_set', sa.String(), nullable=False),
        sa.Column('node', sa.String(), nullable=False),
        sa.Column('pods', sa.BigInteger(), nullable=False),
        sa.Column('allocated', _JSON, nullable=False, comment=f'{_UNITS} on that node'),
        sa.PrimaryKeyConstraint('cluster', 'workload', 'pod_set', 'node', name=op.f('pk_placements')),
        comment='Projection: pods of admitted workloads per node (the placement stage).',
    )


def downgrade() -> None:
    op.drop_table('placements')
    with op.batch_alter_table('nodes') as batch:
        batch.drop_column('allocated')
