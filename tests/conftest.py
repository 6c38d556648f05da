"""Test-session guard: the engine's hot modules may be compiled in place by mypyc (setup.py).

A compiled module shadows its ``.py`` source, so after editing ``statemodel/`` the tests would
silently run the old code.  Refuse to run instead, with the fix in the message.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def pytest_sessionstart(session: pytest.Session) -> None:
    stale = []
    for compiled in sorted((ROOT / "statemodel").rglob("*.so")):
        source = compiled.with_name(compiled.name.split(".", 1)[0] + ".py")
        if source.exists() and source.stat().st_mtime > compiled.stat().st_mtime:
            stale.append(str(source.relative_to(ROOT)))
    if stale:
        raise pytest.UsageError(
            f"{', '.join(stale)} changed after it was compiled; rebuild with "
            "`.venv/bin/pip install -q -e .` (or delete statemodel/**/*.so to run the pure-Python code)")


# --------------------------------------------------------------------------- SQL databases (SQLite and PostgreSQL)

from collections.abc import Iterator  # noqa: E402
from contextlib import ExitStack  # noqa: E402


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A fresh database on the local PostgreSQL for this test run, dropped afterwards (see tests/sqlhelpers.py)."""
    import sqlalchemy as sa

    from tests.sqlhelpers import PG_ADMIN_URL, fresh_database, in_ci

    with ExitStack() as stack:
        try:
            url = stack.enter_context(fresh_database())
        except sa.exc.OperationalError as exc:
            reason = f"PostgreSQL not reachable at {PG_ADMIN_URL}: {str(exc).splitlines()[0]}"
            if in_ci():
                pytest.fail(f"{reason} (CI=true: PostgreSQL tests must not be skipped)", pytrace=False)
            pytest.skip(reason)
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """URL of an empty database (schema at ``base``) of each kind."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'quotaledger.db'}"
        return
    from alembic import command

    from tests.sqlhelpers import alembic_config

    url = request.getfixturevalue("postgres_url")
    command.downgrade(alembic_config(url), "base")  # the run's database is shared by the tests: start empty
    yield url


# --------------------------------------------------------------------------- Kafka broker


@pytest.fixture(scope="session")
def kafka_bootstrap() -> Iterator[str]:
    """``host:port`` of a Kafka broker for this test run (see tests/kafkahelpers.py for which one)."""
    from tests.kafkahelpers import session_broker

    with session_broker() as bootstrap:
        yield bootstrap
