"""``quotaledger replay`` and ``quotaledger state``: run an event source through the engine, write
the decisions and the final state; the state at a past moment of a stored history.

Output contract:

- ``replay EVENTS --decisions-out D --state-out S``: decisions as NDJSON (one object per line),
  final state as JSON (indent 2, the engine's key order); ``-`` means stdin / stdout.  Rejected
  events are reported on stderr as ``rejected line N (id X): path: problem`` and counted; the exit
  code is 0.
- ``state EVENTS --json``: the same final state JSON on stdout.
"""

from __future__ import annotations

import os
import sys
from typing import Optional

import orjson
import typer

from quotaledger.commands.errors import CommandError, reading
from quotaledger.commands.options import (
    AT_HELP, SNAPSHOT_EVERY_TIME_HELP, file_moment, history_source, snapshot_interval_ms, store_moment)
from quotaledger.views.output import binary_out, console, dump_json, print_json, reject_printer


def replay(
    events: str = typer.Argument(
        ..., help="NDJSON events file (.gz accepted), - for stdin, or kafka://HOST:PORT/TOPIC?from=..&to=.."),
    decisions_out: Optional[str] = typer.Option(
        None, "--decisions-out", help="Write decisions as NDJSON here (- for stdout)."
    ),
    state_out: Optional[str] = typer.Option(
        None, "--state-out", help="Write the final state JSON here (- for stdout)."
    ),
    db: Optional[str] = typer.Option(
        None, "--db",
        help="Also archive events, decisions, projections and a final snapshot in this SQL store "
             "(SQLAlchemy URL; default: $QUOTALEDGER_DB, else no database). The schema is upgraded first.",
    ),
    batch_size: int = typer.Option(
        5000, "--batch-size", min=1, help="With --db: input events per database transaction."),
    snapshot_every: int = typer.Option(
        50_000, "--snapshot-every", min=1, help="With --db: events of a cluster between restorable snapshots."),
    snapshot_every_time: Optional[str] = typer.Option(
        None, "--snapshot-every-time", help="With --db: " + SNAPSHOT_EVERY_TIME_HELP),
    replace: bool = typer.Option(
        False, "--replace", help="With --db: delete the rows of clusters already in the database first."),
) -> None:
    """Replay EVENTS through the engine; write decisions and the final state.

    Rejected events are reported on stderr and counted, never fatal (exit 0).
    A one-line summary goes to stderr at the end; on a terminal a progress bar (events/s, ETA) runs
    while replaying a file.  With --db (or $QUOTALEDGER_DB) everything is
    also written to the SQL store; a cluster already stored is refused unless --replace.
    """
    from quotaledger.views.progress import replay_progress

    url = db or os.environ.get("QUOTALEDGER_DB") or None
    every_ms = snapshot_interval_ms(snapshot_every_time)
    with binary_out(decisions_out) as out:
        on_decision = None
        if out is not None:
            write = out.write
            dumps = orjson.dumps
            opt = orjson.OPT_APPEND_NEWLINE
            on_decision = lambda d: write(dumps(d.to_json(), option=opt))  # noqa: E731
        with replay_progress(events) as watch, reading(events):
            if url is None:
                from replay.runner import run_file  # imported lazily: keeps `--help` fast

                engine, result = run_file(events, on_decision=on_decision, on_reject=reject_printer(events),
                                          watch=watch)
            else:
                from replay.sql_sink import replay_to_db

                engine, result = replay_to_db(events, url, batch_size=batch_size, snapshot_every=snapshot_every,
                                              snapshot_every_ms=every_ms, replace=replace, on_decision=on_decision,
                                              on_reject=reject_printer(events), watch=watch)
    with binary_out(state_out) as out:
        if out is not None:  # the state JSON is rendered only when asked for
            out.write(dump_json(engine.state()))
    sys.stderr.write(
        f"applied {result.applied}, rejected {result.rejected}, duplicates {result.duplicates}, "
        f"decisions {result.decisions}, {result.events_per_second:.0f} events/s "
        f"({result.lines} lines in {result.seconds:.3f}s)\n"
    )


def state(
    events: Optional[str] = typer.Argument(
        None, help="NDJSON events file (.gz accepted), - for stdin, or a kafka:// range."),
    as_json: bool = typer.Option(False, "--json", help="Print the state JSON instead of the tree."),
    db: Optional[str] = typer.Option(None, "--db", help="Read the state from this SQL store instead of a file."),
    at: Optional[str] = typer.Option(None, "--at", help=AT_HELP),
    seq: Optional[int] = typer.Option(None, "--seq", help="With --db: the state right after decision SEQ "
                                                           "(not with --at)."),
    cluster: Optional[str] = typer.Option(
        None, "--cluster", help="The cluster (with --db default: the only one in the database; with EVENTS: all)."),
    cohort: Optional[str] = typer.Option(None, "--cohort", help="Draw only this Cohort's subtree."),
    queue: Optional[str] = typer.Option(
        None, "--queue", help="Draw only this ClusterQueue, its LocalQueues and the Cohorts above it."),
    depth: Optional[int] = typer.Option(
        None, "--depth", min=0, help="Draw this many levels below the top (0: the top only)."),
    pending_only: bool = typer.Option(False, "--pending-only", help="Draw only the nodes with pending workloads."),
) -> None:
    """Print the state after EVENTS, or — with --db — at any past moment of a stored history
    (nearest snapshot at or before it plus the archived tail), as the cohort tree of each cluster
    (filters: --cohort, --queue, --depth, --pending-only) or as JSON."""
    if at is not None and seq is not None:
        raise CommandError("give --at or --seq, not both", 2)
    url = history_source(events, db)
    if url is not None:
        from quotaledger.commands.store import resolve_cluster
        from replay.store.restore import engine_at

        cluster = resolve_cluster(url, cluster)
        until = store_moment(at, "--at", url, cluster)
        engine, end, start = engine_at(url, cluster, at_ms=until, seq=seq)
        sys.stderr.write(f"cluster {cluster}: {end} events (snapshot at {start} + {end - start} archived)\n")
    elif seq is not None:
        raise CommandError("--seq needs --db", 2)
    else:
        from replay.runner import run_file

        with reading(events):
            until = file_moment(at, "--at", events)
            engine, _ = run_file(events, on_reject=reject_printer(events), until_ms=until)
    st = engine.state()
    if url is None and cluster is not None:
        if cluster not in st["clusters"]:
            raise CommandError(f"no cluster {cluster} in {events}")
        st["clusters"] = {cluster: st["clusters"][cluster]}
    if as_json:
        if any(v is not None for v in (cohort, queue, depth)) or pending_only:
            raise CommandError("--cohort, --queue, --depth and --pending-only draw the tree: not with --json", 2)
        print_json(st)
        return
    from quotaledger.views.state_tree import TreeFilter, print_state_tree

    print_state_tree(console(), st, TreeFilter(cohort, queue, depth, pending_only))
