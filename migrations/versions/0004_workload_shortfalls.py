"""What pending workloads are short of: ``workloads.shortfalls``, a JSON array of ``{podSet,
reason, flavor, resource, node, needed, available, request}`` (base units) for a pending workload
that does not fit, JSON ``null`` otherwise.

The rows already there get JSON ``null`` (their numbers were never stored; the projection is
rewritten whole by the next replay or ingest of the cluster).  The downgrade drops the column.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-26 09:50:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0004'
down_revision: str | Sequence[str] | None = '0003'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql')
_COMMENT = ('pending workloads that do not fit: what they are short of, a JSON array of {podSet, reason, '
            'flavor, resource, node, needed, available, request} (base units); JSON null otherwise')


def upgrade() -> None:
    with op.batch_alter_table('workloads', schema=None) as batch_op:
        batch_op.add_column(sa.Column('shortfalls', _JSON, nullable=True, comment=_COMMENT))
    workloads = sa.table('workloads', sa.column('shortfalls', _JSON))
    op.execute(workloads.update().values(shortfalls=sa.JSON.NULL))


def downgrade() -> None:
    with op.batch_alter_table('workloads', schema=None) as batch_op:
        batch_op.drop_column('shortfalls')
