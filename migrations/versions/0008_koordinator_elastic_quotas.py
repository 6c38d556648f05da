"""The ``elastic_quotas`` projection: the quota groups of clusters running the ``koordinator`` model
(min, max, autoScaleMin, sharedWeight, request, childRequest, used, nonPreemptibleUsed, runtime as
JSON maps in base units).  A new table: existing rows elsewhere are untouched; the downgrade drops it.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26 12:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0008'
down_revision: str | Sequence[str] | None = '0007'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql')
_UNITS = 'resource -> amount in base units of `resource`: millicores for cpu, bytes for memory, counts otherwise'


def upgrade() -> None:
    op.create_table(
        'elastic_quotas',
        sa.Column('cluster', sa.String(), nullable=False),
        sa.Column('name', sa.String(), nullable=False),
        sa.Column('parent', sa.String(), nullable=True,
                  comment='parent quota; NULL for the root and the system/default groups'),
        sa.Column('is_parent', sa.Boolean(), nullable=False),
        sa.Column('allow_lent_resource', sa.Boolean(), nullable=False),
        sa.Column('min', _JSON, nullable=False, comment=_UNITS),
        sa.Column('max', _JSON, nullable=False, comment=_UNITS),
        sa.Column('auto_scale_min', _JSON, nullable=False, comment='min after min scaling, resource -> amount'),
        sa.Column('shared_weight', _JSON, nullable=False, comment='resource -> weight'),
        sa.Column('request', _JSON, nullable=False, comment='resource -> amount (pending and running pods)'),
        sa.Column('child_request', _JSON, nullable=False, comment='resource -> amount'),
        sa.Column('used', _JSON, nullable=False, comment='resource -> amount (running pods)'),
        sa.Column('non_preemptible_used', _JSON, nullable=False, comment='resource -> amount'),
        sa.Column('runtime', _JSON, nullable=False, comment='resource -> amount the group may use now'),
        sa.Column('pods', sa.BigInteger(), nullable=False, comment='pending and running pods of the group (count)'),
        sa.PrimaryKeyConstraint('cluster', 'name', name=op.f('pk_elastic_quotas')),
        comment='Projection: Koordinator ElasticQuota groups (the koordinator quota model).',
    )


def downgrade() -> None:
    op.drop_table('elastic_quotas')
