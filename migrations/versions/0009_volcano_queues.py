"""The ``volcano_queues`` projection: the queues of clusters running the ``volcano`` model (weight,
state, reclaimable, capability, realCapability, guarantee, deserved, allocated, request, inqueue,
elastic as JSON maps in base units, the exact share, the PodGroups).  A new table: existing rows
elsewhere are untouched; the downgrade drops it.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26 15:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0009'
down_revision: str | Sequence[str] | None = '0008'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql')
_UNITS = ('resource -> amount in base units of `resource`: millicores for cpu, bytes for memory, counts otherwise; '
          'infinite resources left out')


def upgrade() -> None:
    op.create_table(
        'volcano_queues',
        sa.Column('cluster', sa.String(), nullable=False),
        sa.Column('name', sa.String(), nullable=False),
        sa.Column('parent', sa.String(), nullable=True, comment='parent queue; NULL for root'),
        sa.Column('weight', sa.BigInteger(), nullable=False),
        sa.Column('state', sa.String(), nullable=False, comment='Open, Closed, Closing or Unknown'),
        sa.Column('reclaimable', sa.Boolean(), nullable=False),
        sa.Column('capability', _JSON, nullable=False, comment=_UNITS),
        sa.Column('real_capability', _JSON, nullable=False,
                  comment='resource -> amount; infinite resources left out'),
        sa.Column('guarantee', _JSON, nullable=False, comment='resource -> amount'),
        sa.Column('deserved', _JSON, nullable=False, comment='resource -> amount (exact value rounded down)'),
        sa.Column('allocated', _JSON, nullable=False,
                  comment='resource -> amount (bound pods; a parent: its subtree)'),
        sa.Column('request', _JSON, nullable=False, comment='resource -> amount (bound and pending pods)'),
        sa.Column('inqueue', _JSON, nullable=False,
                  comment='resource -> amount reserved by Inqueue/Running groups'),
        sa.Column('elastic', _JSON, nullable=False, comment='resource -> amount allocated beyond minResources'),
        sa.Column('share', sa.String(), nullable=False, comment="exact ratio allocated / deserved, e.g. '2/3'"),
        sa.Column('pod_groups', sa.BigInteger(), nullable=False,
                  comment='PodGroups of the queue that are not Completed'),
        sa.PrimaryKeyConstraint('cluster', 'name', name=op.f('pk_volcano_queues')),
        comment='Projection: Volcano queues (the volcano quota model).',
    )


def downgrade() -> None:
    op.drop_table('volcano_queues')
