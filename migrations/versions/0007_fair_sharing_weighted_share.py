"""Fair sharing: ``cohorts.weighted_share`` and ``cluster_queues.weighted_share`` (Kueue's
``status.fairSharing.weightedShare``: ``ceil(dominant resource share / weight)``, 9223372036854775807
for a zero-weight borrower), NULL when the cluster does not run fair sharing.

The rows already there get NULL (the projection is rewritten whole by the next replay or ingest of
the cluster).  The downgrade drops both columns.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-26 11:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0007'
down_revision: str | Sequence[str] | None = '0006'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_COMMENT = ('fair sharing: Kueue status.fairSharing.weightedShare, ceil(dominant resource share / weight), '
            '9223372036854775807 for a zero-weight borrower; NULL when fair sharing is off')


def upgrade() -> None:
    for table in ('cohorts', 'cluster_queues'):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column('weighted_share', sa.BigInteger(), nullable=True, comment=_COMMENT))


def downgrade() -> None:
    for table in ('cohorts', 'cluster_queues'):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_column('weighted_share')
