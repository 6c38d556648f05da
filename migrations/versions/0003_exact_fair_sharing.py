"""Exact fair-sharing numbers: ``fair_sharing.consumed``, ``penalty`` and ``score`` hold the
engine's decimals exactly (``statemodel.sql_schema.EXACT_DECIMAL``).

PostgreSQL: ``NUMERIC(40, 12)`` becomes unconstrained ``NUMERIC`` (no rounding to 12 places).
SQLite: the NUMERIC-affinity column, which stored doubles, becomes a ``VARCHAR`` holding the exact
decimal text; the values already there are kept as the text of what was stored (the projection is
rewritten whole by the next replay or ingest of the cluster).  The downgrade restores
``NUMERIC(40, 12)`` (values rounded to 12 places; doubles on SQLite).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-26 08:40:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0003'
down_revision: str | Sequence[str] | None = '0002'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_UNITS = 'Kueue score units: cores for cpu, base units otherwise'
_COLUMNS = (
    ('consumed', False, f'decayed consumed usage; {_UNITS}'),
    ('penalty', False, f'entry penalty; {_UNITS}'),
    ('score', True, 'admission fair-sharing score of the node (same on each resource row); NULL = +infinity'),
)


def _retype(old: sa.types.TypeEngine, new: sa.types.TypeEngine) -> None:
    with op.batch_alter_table('fair_sharing', schema=None) as batch_op:
        for name, nullable, comment in _COLUMNS:
            batch_op.alter_column(name, existing_type=old, type_=new, existing_nullable=nullable,
                                  existing_comment=comment)


def _exact() -> sa.types.TypeEngine:
    return sa.String() if op.get_bind().dialect.name == 'sqlite' else sa.Numeric()


def upgrade() -> None:
    _retype(sa.Numeric(precision=40, scale=12), _exact())


def downgrade() -> None:
    _retype(_exact(), sa.Numeric(precision=40, scale=12))
