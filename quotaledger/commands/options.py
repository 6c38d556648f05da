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

SNAPSHOT_EVERY_TIME_HELP = "Also snapshot a cluster whenever its event time crosses a multiple of this duration (30m, 1h, 1d)."
AT_HELP = ("The state as of this moment: an RFC 3339 time, a date (2025-01-26), a duration after the start "
           "of the history (7d) or before its end (-2h).")

TRACE_OPTION = typer.Option(
    None, "--trace", help="dlrm (default), openb, gangs (generated gang jobs on the Lingjun topology), or the path "
                          "of a trace CSV (with --mapping).")
NODES_OPTION = typer.Option(
    None, "--nodes", help="Run on this node inventory: openb (1,523 nodes), lingjun (847 hosts, 3-tier topology), "
                          "or a node list CSV (with --node-mapping; docs/traces.md).")
NODE_MAPPING_OPTION = typer.Option(
    None, "--node-mapping", help="Node mapping YAML saying how to read the --nodes CSV (docs/traces.md).")
PLACEMENT_OPTION = typer.Option(
    False, "--placement", help="Turn the engine's placement stage on (EngineConfig spec.placement.enable): "
                               "workloads are placed on the nodes as gangs.")
MAPPING_OPTION = typer.Option(
    None, "--mapping", help="Mapping YAML saying how to read the --trace CSV (format and examples: docs/traces.md).")
QUOTA_OPTION = typer.Option(
    None, "--quota", help="Folder of Kueue manifests to use instead of the generated quota tree.")
QUOTA_SCALE_OPTION = typer.Option(
    "1", "--quota-scale", help="Multiply every quota of the generated tree by this number (1 = the sizing rule of "
                               "docs/demo.md; 0.9 tightens, 1.5 loosens); not with --quota.")
UNTIL_OPTION = typer.Option(
    None, "--until", help="Stop here: a duration after the trace start (7d, 36h, seconds), before its end (-1d), "
                          "a date or an RFC 3339 time.")


def db_url(option: str | None) -> str:
    """The database URL: ``--db``, else ``$QUOTALEDGER_DB``, else ``sqlite:///quotaledger.db``."""
    return option or os.environ.get("QUOTALEDGER_DB") or DEFAULT_DB


def history_source(events: str | None, db: str | None) -> str | None:
    """Which history a read-only command reads: the store URL (``--db``, else ``$QUOTALEDGER_DB`` when
    no ``EVENTS`` is given), or ``None`` for the ``EVENTS`` source.

    Raises:
        CommandError: both ``EVENTS`` and ``--db`` (exit 2), or neither and no ``$QUOTALEDGER_DB`` (exit 2).
    """
    if events is not None and db is not None:
        raise CommandError("give an EVENTS file or --db, not both", 2)
    url = db or (os.environ.get("QUOTALEDGER_DB") if events is None else None)
    if url is None and events is None:
        raise CommandError("give an EVENTS file or --db", 2)
    return url


def store_moment(value: str | None, name: str, url: str, cluster: str) -> int | None:
    """A moment option (``replay.timespec``) of a stored history, in epoch ms (``None`` when not
    given): relative forms count from ``cluster``'s first / last archived event, and a moment
    outside the history is warned about on stderr (the state there is the empty one, or the end).

    Raises:
        replay.timespec.TimeSpecError: not a moment (exit 2).
        replay.store.db.SinkError: the store holds no events of ``cluster``.
    """
    import sys

    from replay.store.db import create_db_engine
    from replay.store.restore import history_bounds
    from replay.timespec import parse_moment
    from statemodel.timefmt import format_time

    if value is None:
        return None
    db = create_db_engine(url, read_only=True)
    try:
        with db.connect() as conn:
            first, last = history_bounds(conn, cluster)
    finally:
        db.dispose()
    at = parse_moment(value, name, (first, last))
    if at < first:
        sys.stderr.write(f"warning: {name} {format_time(at)} is before the first event of cluster {cluster} "
                         f"({format_time(first)}): the state before any event\n")
    elif at > last:
        sys.stderr.write(f"warning: {name} {format_time(at)} is after the last event of cluster {cluster} "
                         f"({format_time(last)}): the state at the end of the history\n")
    return at


def file_moment(value: str | None, name: str, source: str, cluster: str | None = None) -> int | None:
    """A moment option (``replay.timespec``) of an event source, in epoch ms (``None`` when not
    given): relative forms count from the source's first / last valid event time (of ``cluster``
    when given), read in an extra pass only when a relative form is used.

    Raises:
        replay.timespec.TimeSpecError: not a moment, or relative on standard input (exit 2).
    """
    from replay.runner import event_time_bounds
    from replay.timespec import TimeSpecError, parse_moment

    if value is None:
        return None

    def bounds() -> tuple[int, int]:
        try:
            return event_time_bounds(source, cluster)
        except ValueError as exc:
            raise TimeSpecError(name, str(exc)) from None

    return parse_moment(value, name, bounds)


def snapshot_interval_ms(text: str | None) -> int | None:
    """``--snapshot-every-time`` in milliseconds (``None`` when not given), a duration of
    ``replay.timespec``; raises ``CommandError`` (exit 2) naming the option when it is not a
    positive duration."""
    from replay.timespec import parse_span

    if text is None:
        return None
    every_ms = parse_span(text, "--snapshot-every-time")
    if every_ms < 1:
        raise CommandError("--snapshot-every-time must be positive", 2)
    return every_ms
MODEL_OPTION = typer.Option(
    "kueue", "--model", help="Quota model: kueue, koordinator (the Kueue quota tree translated to ElasticQuotas: "
                             "min = nominal, max = nominal + borrowingLimit; jobs run as Pods), or volcano (translated "
                             "to Volcano queues, capacity plugin with hierarchy: deserved = nominal, capability = "
                             "nominal + borrowingLimit; jobs run as PodGroups).")
