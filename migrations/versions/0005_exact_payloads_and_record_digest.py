"""Exact event payloads, bounded rejected records, the broker-reset check by record digest.

- ``events.payload`` becomes PostgreSQL ``json`` (was ``jsonb``), which keeps the received text
  exactly: ``jsonb`` rewrote numbers (``1e2`` as ``100``, ``-0.0`` as ``0.0``), so an archived event
  no longer re-decoded to the canonical form its hash covered.  Rows written before keep the text
  ``jsonb`` gave them.  SQLite stores JSON as text already: nothing changes there.
- ``ingest_offsets.last_record_digest``: SHA-256 (hex) of the last consumed record's value; the
  broker-reset check compares it with the record under the stored offset (rows written before have
  NULL and are checked by id, as then).
- Comments of ``dead_letters`` say what it now holds.

The downgrade turns ``payload`` back into ``jsonb`` (a payload with ``\\u0000`` cannot be) and drops
the digest.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-28 10:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0005'
down_revision: str | Sequence[str] | None = '0004'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_PAYLOAD_BEFORE = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql')
_PAYLOAD_COMMENT = ('the whole event envelope as received (exact text)', 'the whole event envelope as received')
_DEAD_TABLE_COMMENT = ('Every record that failed validation, with its exact bytes.',
                       'Records that could not be decoded into an event at all.')
_DEAD_CLUSTER_COMMENT = ('cluster whose event stream the record joined; NULL when it names none that has state',
                         'NULL when the record was too broken to tell')
_LAST_ID_COMMENT = ('id of the last record consumed (bounded, without NUL), for people', 'id of the last event consumed')


def _postgresql_comments(which: int) -> None:
    """Set the comments of the upgraded (0) or the earlier (1) schema (SQLite keeps no comments)."""
    op.alter_column('events', 'payload', existing_type=_PAYLOAD_BEFORE if which else sa.JSON(),
                    existing_nullable=True, comment=_PAYLOAD_COMMENT[which],
                    existing_comment=_PAYLOAD_COMMENT[1 - which])
    op.alter_column('dead_letters', 'cluster', existing_type=sa.String(), existing_nullable=True,
                    comment=_DEAD_CLUSTER_COMMENT[which], existing_comment=_DEAD_CLUSTER_COMMENT[1 - which])
    op.create_table_comment('dead_letters', _DEAD_TABLE_COMMENT[which], existing_comment=_DEAD_TABLE_COMMENT[1 - which])
    op.alter_column('ingest_offsets', 'last_event_id', existing_type=sa.String(), existing_nullable=True,
                    comment=_LAST_ID_COMMENT[which], existing_comment=_LAST_ID_COMMENT[1 - which])


def upgrade() -> None:
    if op.get_context().dialect.name == 'postgresql':
        op.execute('ALTER TABLE events ALTER COLUMN payload TYPE json USING payload::text::json')
        _postgresql_comments(0)
    with op.batch_alter_table('ingest_offsets', schema=None) as batch_op:
        batch_op.add_column(sa.Column('last_record_digest', sa.String(), nullable=True,
                                      comment="SHA-256 (hex) of the last record's value, 'tombstone' for none; "
                                              "the broker-reset check"))


def downgrade() -> None:
    with op.batch_alter_table('ingest_offsets', schema=None) as batch_op:
        batch_op.drop_column('last_record_digest')
    if op.get_context().dialect.name == 'postgresql':
        _postgresql_comments(1)
        op.execute('ALTER TABLE events ALTER COLUMN payload TYPE jsonb USING payload::jsonb')
