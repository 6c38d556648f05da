"""Shared SQL test helpers: the PostgreSQL test server URL and Alembic configs (fixtures in conftest.py).

PostgreSQL is the one at ``$QUOTALEDGER_TEST_PG`` (default ``postgresql+psycopg://postgres@127.0.0.1:5432/postgres``,
trust auth); a fresh, uniquely named database is created for the test run and dropped after it.
When PostgreSQL cannot be reached the PostgreSQL cases are SKIPPED with the reason — except under
``CI=true``, where they FAIL: SQL tests must not silently skip in CI.
"""

from __future__ import annotations

import os

import migrations

PG_ADMIN_URL = os.environ.get("QUOTALEDGER_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def alembic_config(url: str):
    """An Alembic config for ``url`` that leaves pytest's logging alone."""
    cfg = migrations.config(url)
    cfg.attributes["skip_logging_config"] = True
    return cfg
