"""Alembic environment of the SQL store (``quotaledger db upgrade`` / ``downgrade``).

A package only so that it ships with the distribution; Alembic runs ``env.py`` and the files in
``versions/`` itself.  ``config()`` is the one way to get an Alembic ``Config`` for a database URL.
"""

from __future__ import annotations

from pathlib import Path

DIRECTORY = Path(__file__).resolve().parent
"""This folder: Alembic's ``script_location``."""

INI = DIRECTORY / "alembic.ini"


def config(url: str, connection: object | None = None):  # -> alembic.config.Config
    """An Alembic ``Config`` for ``url`` that works from a checkout and from an installed package.

    ``connection`` (an open SQLAlchemy ``Connection``) makes ``env.py`` run on it instead of
    creating its own engine (tests use this).
    """
    from alembic.config import Config

    cfg = Config(str(INI))
    cfg.set_main_option("script_location", str(DIRECTORY))
    # ConfigParser interpolation: a literal % in a URL (escaped password) must be doubled.
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg
