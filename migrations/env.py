"""Alembic environment: migrates the tables of ``statemodel.sql_schema`` (batch mode on SQLite).

The URL comes from, in order: an open connection passed in ``config.attributes["connection"]``,
``alembic -x db=URL``, and the config's ``sqlalchemy.url`` (``quotaledger db`` sets it from
``--db`` / ``QUOTALEDGER_DB`` / the default ``sqlite:///quotaledger.db``).
"""

from __future__ import annotations

import os
from logging.config import fileConfig

from alembic import context
from sqlalchemy import create_engine, pool

from statemodel.sql_schema import metadata

config = context.config
if config.config_file_name is not None and not config.attributes.get("skip_logging_config"):
    fileConfig(config.config_file_name, disable_existing_loggers=False)

target_metadata = metadata


def _url() -> str:
    x_args = context.get_x_argument(as_dictionary=True)
    if "db" in x_args:
        return x_args["db"]
    if config.cmd_opts is not None and os.environ.get("QUOTALEDGER_DB"):
        return os.environ["QUOTALEDGER_DB"]  # plain `alembic` command line
    return config.get_main_option("sqlalchemy.url") or "sqlite:///quotaledger.db"


def _configure(**kwargs) -> None:
    context.configure(
        target_metadata=target_metadata,
        compare_type=True,
        compare_server_default=True,
        **kwargs,
    )


def run_migrations_offline() -> None:
    """``--sql``: emit the DDL instead of running it."""
    url = _url()
    _configure(url=url, literal_binds=True, render_as_batch=url.startswith("sqlite"))
    with context.begin_transaction():
        context.run_migrations()


def _run(connection) -> None:
    _configure(connection=connection, render_as_batch=connection.dialect.name == "sqlite")
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = create_engine(_url(), poolclass=pool.NullPool)
    try:
        with engine.connect() as connection:
            _run(connection)
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
