"""Options several commands share, and how their values are read (the store URL, snapshot
intervals, trace inputs)."""

from __future__ import annotations

import os

import typer

from quotaledger.commands.errors import CommandError

DEFAULT_DB = "sqlite:///quotaledger.db"
"""The embedded default store; ``QUOTALEDGER_DB`` overrides it, ``--db`` overrides both."""

DB_OPTION = typer.Option(
    None, "--db",
    help="SQLAlchemy URL, e.g. sqlite:///quotaledger.db or postgresql+psycopg://user@host/db "
         "(default: $QUOTALEDGER_DB, else sqlite:///quotaledger.db).",
)

SNAPSHOT_EVERY_TIME_HELP = "Also snapshot a cluster whenever its event time crosses a multiple of this Go duration (1h, 30m)."

TRACE_OPTION = typer.Option("dlrm", "--trace", help="dlrm, openb, or the path of a trace CSV (with --mapping).")
MAPPING_OPTION = typer.Option(None, "--mapping", help="Mapping YAML for a generic CSV trace.")
QUOTA_OPTION = typer.Option(
    None, "--quota", help="Folder of Kueue manifests to use instead of the generated quota tree.")
UNTIL_OPTION = typer.Option(
    None, "--until", help="Stop here: seconds or a duration (7d, 36h) after the trace start, or an RFC 3339 time.")


def db_url(option: str | None) -> str:
    """The database URL: ``--db``, else ``$QUOTALEDGER_DB``, else ``sqlite:///quotaledger.db``."""
    return option or os.environ.get("QUOTALEDGER_DB") or DEFAULT_DB


def time_option(value: str | None, name: str) -> int | None:
    """An RFC 3339 time option in epoch milliseconds (``None`` when not given); raises
    ``statemodel.errors.EventError`` naming the option when it is not a time (exit 2)."""
    from statemodel.timefmt import parse_time

    return parse_time(value, name) if value is not None else None


def snapshot_interval_ms(text: str | None) -> int | None:
    """``--snapshot-every-time`` in milliseconds (``None`` when not given); raises ``CommandError``
    (exit 1) naming the option when it is not a positive Go duration."""
    from statemodel.errors import EventError
    from statemodel.timefmt import parse_duration

    if text is None:
        return None
    try:
        every_ms = parse_duration(text, "--snapshot-every-time")
    except EventError as exc:
        raise CommandError(str(exc)) from None
    if every_ms < 1:
        raise CommandError("--snapshot-every-time must be positive")
    return every_ms
MODEL_OPTION = typer.Option(
    "kueue", "--model", help="Quota model: kueue, koordinator (the Kueue quota tree translated to ElasticQuotas: "
                             "min = nominal, max = nominal + borrowingLimit; jobs run as Pods), or volcano (translated "
                             "to Volcano queues, capacity plugin with hierarchy: deserved = nominal, capability = "
                             "nominal + borrowingLimit; jobs run as PodGroups).")
