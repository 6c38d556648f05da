"""Shared SQL test helpers: the PostgreSQL test server URL and Alembic configs (fixtures in conftest.py).

PostgreSQL is the one at ``$QUOTALEDGER_TEST_PG`` (default ``postgresql+psycopg://postgres@127.0.0.1:5432/postgres``,
trust auth); a fresh, uniquely named database is created for the test run and dropped after it.
When PostgreSQL cannot be reached the PostgreSQL cases are SKIPPED with the reason — except under
``CI=true``, where they FAIL: SQL tests must not silently skip in CI.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa

import migrations

PG_ADMIN_URL = os.environ.get("QUOTALEDGER_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def alembic_config(url: str):
    """An Alembic config for ``url`` that leaves pytest's logging alone."""
    cfg = migrations.config(url)
    cfg.attributes["skip_logging_config"] = True
    return cfg


@contextmanager
def fresh_database(prefix: str = "quotaledger_test") -> Iterator[str]:
    """Create a uniquely named database on the test PostgreSQL, yield its URL, drop it afterwards.

    Raises:
        sqlalchemy.exc.OperationalError: PostgreSQL cannot be reached.
    """
    admin = sa.create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool,
                             connect_args={"connect_timeout": 3})
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        try:
            yield sa.engine.make_url(PG_ADMIN_URL).set(database=name).render_as_string(hide_password=False)
        finally:
            with admin.connect() as conn:
                conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()
