"""Database plumbing shared by the SQL sink and ``verify``: engines, schema upgrade, row helpers.

JSON columns are written with orjson; an archived event's ``payload`` is the received JSON text
itself (``RawJSON``), so it is neither parsed nor re-serialized on the way in.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any

import orjson
import sqlalchemy as sa

from replay.store.sanitize import key_text, payload_text
from statemodel.errors import EventError
from statemodel.events.envelope import Event
from statemodel.events.decode import decode_event
from statemodel.events.oversized import OversizedRecord
from statemodel.timefmt import parse_time
from statemodel.limits import MAX_EVENT_BYTES

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


class SinkError(Exception):
    """A SQL replay or verify cannot proceed (schema, conflicting rows, database error); the message says why."""


class RawJSON(str):
    """JSON text to store verbatim in a JSON column (already known to be valid JSON)."""

    __slots__ = ()


def _dumps(value: Any) -> str:
    if type(value) is RawJSON:
        return value
    return orjson.dumps(value).decode()


def create_db_engine(url: str, *, read_only: bool = False) -> sa.Engine:
    """A SQLAlchemy engine for ``url`` whose JSON columns use orjson (and pass ``RawJSON`` through).

    ``read_only``: the caller only reads (``state``, ``explain``, ``verify``, ``whatif``), so a SQLite
    file that does not exist is an error instead of a new empty database left behind.

    Raises:
        SinkError: the URL cannot be parsed or its driver is missing; with ``read_only``, the SQLite
            file does not exist.
    """
    try:
        parsed = sa.engine.make_url(url)
        engine = sa.create_engine(parsed, json_serializer=_dumps, json_deserializer=orjson.loads,
                                  poolclass=sa.pool.NullPool)
    except (sa.exc.ArgumentError, ImportError) as exc:
        raise SinkError(f"bad database URL {redacted(url)}: {exc}") from None
    if read_only and parsed.get_backend_name() == "sqlite":
        path = parsed.database or ""
        in_memory = path in ("", ":memory:") or path.startswith("file:") or parsed.query.get("mode") == "memory"
        if not in_memory and not os.path.exists(path):
            raise SinkError(f"no store at {redacted(url)}: the file {path} does not exist "
                            "(write one with `quotaledger replay --db` or `quotaledger demo`)")
    return engine


@contextmanager
def reading(url: str) -> Iterator[sa.Connection]:
    """A connection for reading the store at ``url`` (the reports' one way in): read-only (a
    SQLite file that does not exist is an error, not a new empty store), the schema required, the
    engine disposed afterwards.

    Raises:
        SinkError: the URL or file as ``create_db_engine`` says; the store has no quotaledger schema;
            any database error while the block reads (``cannot read URL: …``, first line).
    """
    db = create_db_engine(url, read_only=True)
    try:
        with db.connect() as conn:
            if not sa.inspect(conn).has_table("events"):
                raise SinkError(f"{redacted(url)} has no quotaledger schema")
            yield conn
    except sa.exc.SQLAlchemyError as exc:
        raise SinkError(f"cannot read {redacted(url)}: {str(exc).splitlines()[0]}") from None
    finally:
        db.dispose()


def redacted(url: str) -> str:
    """``url`` with its password shown as ``***``: the one form in which any command, view or report
    (console, ``index.html``, error messages) shows a database URL.  A URL SQLAlchemy cannot parse
    still has whatever sits between ``user:`` and ``@`` hidden."""
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - display only
        return re.sub(r"(//[^/@:]*:)[^@/]*@", r"\1***@", url)


_SCHEMA_LOCK = 0x71_6C_73_63_68_65_6D_61
"""PostgreSQL advisory lock key ("qlschema") held while the schema is migrated."""


def migrate_schema(url: str, command_name: str = "upgrade", revision: str = "head", *, quiet: bool = True) -> None:
    """Alembic ``upgrade`` / ``downgrade`` of ``url`` to ``revision``, one process at a time: on
    PostgreSQL under a session advisory lock, on SQLite inside a transaction that takes the write
    lock first, so processes started together (several ingest workers, each running ``db upgrade``)
    take turns — the first creates the tables, the others find them current.  ``quiet``: leave
    the logging configuration alone (no alembic progress lines).

    A SQLite database is then switched to write-ahead logging (kept in the file): every path reads
    the store while its writer holds a transaction open (the SQL sink's writer thread, the ingest
    worker's committer), and in SQLite's rollback journal a transaction whose pages spill to the
    file (large dead letters, a ``--replace`` of a big cluster) locks readers out until it commits,
    past the driver's 5 s busy timeout or, for the ingest worker, for good: its committer commits
    only when the worker sends the batch's end.

    Raises:
        alembic.util.exc.CommandError: unknown revision (e.g. a schema newer than this version).
        sqlalchemy.exc.SQLAlchemyError: the database is unreachable or a migration failed.
    """
    from alembic import command

    import migrations

    cfg = migrations.config(url)
    cfg.attributes["skip_logging_config"] = quiet
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            if conn.dialect.name == "postgresql":
                conn.execute(sa.text("SELECT pg_advisory_lock(:key)"), {"key": _SCHEMA_LOCK})
                conn.commit()  # the session lock outlives this transaction; closing the connection frees it
            elif conn.dialect.name == "sqlite":  # take the write lock before alembic reads the version
                conn.connection.driver_connection.isolation_level = None  # type: ignore[union-attr]
                conn.exec_driver_sql("BEGIN IMMEDIATE")
            cfg.attributes["connection"] = conn
            getattr(command, command_name)(cfg, revision)
            conn.commit()  # alembic leaves a transaction it did not begin to its caller
            if conn.dialect.name == "sqlite":
                conn.exec_driver_sql("PRAGMA journal_mode=WAL")  # kept in the file; see the docstring
    finally:
        engine.dispose()


def upgrade_schema(url: str) -> None:
    """``alembic upgrade head`` on ``url`` (a no-op when the schema is current; ``migrate_schema``).

    Raises:
        SinkError: the database is unreachable, or its schema is at a revision this version of
            quotaledger does not know (newer than it), or the upgrade failed.
    """
    from alembic.util.exc import CommandError

    try:
        migrate_schema(url)
    except (CommandError, sa.exc.SQLAlchemyError) as exc:
        raise SinkError(f"cannot bring the schema of {redacted(url)} to the current revision "
                        f"(alembic upgrade head): {str(exc).splitlines()[0]}") from None


def ms_to_datetime(ms: int | None) -> datetime | None:
    """Epoch milliseconds → timezone-aware UTC datetime (exact, any year the engine accepts)."""
    return None if ms is None else EPOCH + timedelta(milliseconds=ms)


def time_ms(text: str | None) -> int | None:
    """An RFC 3339 time of the state JSON → epoch milliseconds (``None`` stays ``None``)."""
    return None if text is None else parse_time(text, "time")


def salvage(line: bytes, default_cluster: str | None = "default") -> tuple[str | None, RawJSON | None, int | None,
                                                                           str | None]:
    """What can be read from a line that failed validation: ``(cluster, payload, time_ms, type)``.

    ``cluster`` is the envelope's when it is a non-empty string, else ``default_cluster`` (the
    decoder's default ``"default"`` for files; the worker passes the Kafka record key): only the
    name the record claims, unchecked — the record joins that cluster's stream only when the cluster
    has state (``replay.store.archive.ArchiveBatch.add_rejected``).  ``payload`` is the line's JSON
    text when it is a JSON object (``replay.store.sanitize.payload_text``), else ``None``; ``type``
    the envelope's, bounded (``replay.store.sanitize.key_text``).

    A line longer than ``statemodel.limits.MAX_EVENT_BYTES`` (or the part a reader kept of one,
    ``statemodel.events.oversized.OversizedRecord``) is not read at all, as the decoder
    rejected it unread (as the ingest worker treats a record over ``--max-record-bytes``): parsing
    a 30 MB line of a million objects to learn its cluster took half a gigabyte.
    """
    if len(line) > MAX_EVENT_BYTES or isinstance(line, OversizedRecord):
        return default_cluster, None, None, None
    try:
        raw = orjson.loads(line)
    except orjson.JSONDecodeError:
        return default_cluster, None, None, None
    if not isinstance(raw, dict):
        return default_cluster, None, None, None
    cluster = raw.get("cluster")
    if not isinstance(cluster, str) or not cluster:
        cluster = default_cluster
    try:
        when = parse_time(raw.get("time"), "time")
    except EventError:
        when = None
    etype = raw.get("type")
    payload = payload_text(line.strip().decode())
    return (cluster, None if payload is None else RawJSON(payload), when,
            key_text(etype) if isinstance(etype, str) else None)


def archived_event(payload: object, reason: str | None, event_id: str | None) -> tuple[Event | None, EventError | None]:
    """Re-decode an event stored in ``events``: ``(event, None)``, or ``(None, error)`` for one that was
    rejected when it arrived (``payload`` is the stored JSON object, ``None`` when it was not one)."""
    if payload is None:
        return None, EventError("", reason or "not a JSON object", event_id)
    try:
        return decode_event(orjson.dumps(payload)), None
    except EventError as err:
        return None, err.detached()
