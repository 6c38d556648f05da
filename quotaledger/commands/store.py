"""Commands on the SQL store: ``db upgrade`` / ``db downgrade`` (Alembic migrations), ``verify``,
``explain`` (from an event file or from the store) and ``whatif``.  Thin: parse, call ``replay``,
render with ``quotaledger.views``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import typer

from quotaledger.commands.errors import CommandError, reading, writing
from quotaledger.commands.options import AT_HELP, DB_OPTION, db_url, file_moment, history_source, store_moment
from quotaledger.views.output import console, print_json

if TYPE_CHECKING:
    from statemodel.engine import Engine

# --------------------------------------------------------------------------- db


def _migrate(command_name: str, url: str, revision: str) -> None:
    from replay.store.db import migrate_schema, redacted

    migrate_schema(url, command_name, revision, quiet=False)
    typer.echo(f"{command_name} to {revision}: done ({redacted(url)})", err=True)


def db_upgrade(
    revision: str = typer.Argument("head", help="Target revision (default: head)."),
    db: Optional[str] = DB_OPTION,
) -> None:
    """Upgrade the database schema to REVISION (default: the newest, ``head``)."""
    _migrate("upgrade", db_url(db), revision)


def db_downgrade(
    revision: str = typer.Argument(
        ..., help="Target revision, e.g. 0004 or -1; `base` drops every table and its rows."),
    db: Optional[str] = DB_OPTION,
    yes: bool = typer.Option(False, "--yes", help="Do not ask for confirmation (for scripts)."),
) -> None:
    """Downgrade the database schema to REVISION, dropping the tables and columns of the later
    revisions with their rows.  Asks for confirmation unless ``--yes`` is given; without a terminal
    to ask on, ``--yes`` is required (exit 2)."""
    import sys

    from replay.store.db import redacted

    url = db_url(db)
    question = f"Downgrade {redacted(url)} to {revision}? The rows of every later revision's tables are lost"
    if not yes:
        if not sys.stdin.isatty():
            raise CommandError("db downgrade drops tables and their rows: give --yes to confirm", 2)
        if not typer.confirm(question, default=False, err=True):
            raise CommandError("db downgrade: not confirmed, nothing changed", 2)
    _migrate("downgrade", url, revision)


# --------------------------------------------------------------------------- verify


def verify(
    source: Optional[str] = typer.Argument(
        None, help="Recompute from this NDJSON file (.gz accepted, - for stdin) or kafka:// range instead of the "
                   "archived events."),
    db: Optional[str] = typer.Option(
        None, "--db", help="SQLAlchemy URL (default: $QUOTALEDGER_DB, else sqlite:///quotaledger.db)."),
) -> None:
    """Recompute decisions and hash chains from the archived events (or SOURCE) and compare them with
    the stored decisions and snapshot hashes.

    Prints `OK: N events, M decisions, hash H` and exits 0, or prints the first divergence with both
    sides (event, expected vs recorded decision or hash) and exits 1.  Any other failure exits 2.
    """
    from replay.store.db import redacted
    from replay.verify import verify as run_verify

    url = db_url(db)
    with reading(source if source is not None else redacted(url)):
        result = run_verify(url, source)
    typer.echo(result.summary())
    if not result.ok:
        raise typer.Exit(1)


# --------------------------------------------------------------------------- explain


def explain(
    workload: str = typer.Argument(..., help="the workload, ns/name"),
    events: Optional[str] = typer.Argument(None, help="NDJSON event file (plain or .gz), or - for stdin"),
    at: Optional[str] = typer.Option(None, "--at", help=AT_HELP),
    cluster: Optional[str] = typer.Option(
        None, "--cluster", help="the cluster the workload belongs to (default: the only one in EVENTS or the store)"),
    as_json: bool = typer.Option(False, "--json", help="print the explanation as JSON"),
    db: Optional[str] = typer.Option(
        None, "--db", help="read the history from this SQL store (nearest snapshot + archived tail) instead of EVENTS"),
    holders: int = typer.Option(
        0, "--holders", min=0, help="list the N largest holders of the quota at each binding level (0: none)"),
) -> None:
    """Why a workload is admitted or waiting: reason, position, request, and the quota numbers at
    every level of its cohort tree (available, limits, usage); for an admitted workload, when and
    how it was admitted; who preempted it, when and why, and what a preemptor waits for."""
    url = history_source(events, db)
    if url is not None:
        cluster = resolve_cluster(url, cluster)
        out = explain_from_db(workload, url, cluster, store_moment(at, "--at", url, cluster), holders)
    else:
        from replay.runner import run_file

        history: list[dict] = []

        def keep(d) -> None:  # the Preempted decisions naming the workload, for preemption.history
            if d.kind == "Preempted" and workload in (d.workload, d.preemptor):
                history.append(d.to_json())

        with reading(events):
            until = file_moment(at, "--at", events, cluster)
            engine, _ = run_file(events, until_ms=until, on_decision=keep)
        name = only_cluster(engine, cluster)
        out = _explain(engine, name, workload, [h for h in history if h.get("cluster", "default") == name], holders)
    if as_json:
        print_json(out)
        return
    from quotaledger.views.explain import print_explanation

    print_explanation(console(), out)


def _explain(engine: Engine, cluster: str, workload: str, decisions: list[dict] | None = None,
             holders: int = 0) -> dict:
    """``statemodel.explain.explain`` of ``workload`` in ``cluster`` of ``engine`` (``decisions``: the
    cluster's decisions naming it, for ``preemption.history``), with — when ``holders`` > 0 — the
    ``holders`` largest holders of each binding level's quota (``statemodel.explain.holders``);
    ``CommandError`` when the cluster or the workload is unknown."""
    from statemodel.explain import UnknownWorkload, explain as explain_workload, holders as holders_of

    state = engine.clusters.get(cluster)
    try:
        if state is None:
            raise UnknownWorkload(workload)
        out = explain_workload(state, workload, decisions or ())
    except UnknownWorkload:
        raise CommandError(f"no workload {workload} in cluster {cluster}") from None
    if holders > 0:
        out["holders"] = [
            {"flavor": b["flavor"], "resource": b["resource"], "kind": b["kind"], "name": b["name"],
             "workloads": holders_of(state, b["kind"], b["name"], b["flavor"], b["resource"], holders)}
            for b in out.get("binding", [])]
    return out


def resolve_cluster(url: str, cluster: str | None) -> str:
    """``--cluster``, or the only cluster the store holds (``SinkError`` when it holds none or several)."""
    from replay.store.db import create_db_engine
    from replay.store.restore import stored_cluster

    if cluster is not None:
        return cluster
    db = create_db_engine(url, read_only=True)
    try:
        with db.connect() as conn:
            return stored_cluster(conn, None)
    finally:
        db.dispose()


def only_cluster(engine: Engine, cluster: str | None) -> str:
    """``--cluster``, or the only cluster the replayed events created — the rule the store uses
    (``resolve_cluster``); raises ``CommandError`` (exit 2) listing them when there are several."""
    if cluster is not None:
        return cluster
    names = sorted(engine.clusters)
    if len(names) != 1:
        listed = ", ".join(names) if names else "none"
        raise CommandError(f"give --cluster: the events hold {len(names)} clusters ({listed})", 2)
    return names[0]


def explain_from_db(workload: str, url: str, cluster: str | None, at_ms: int | None, holders: int = 0) -> dict:
    """``statemodel.explain.explain`` of ``workload`` at ``at_ms`` (``None`` = the end of the archive),
    from the nearest snapshot plus the archived tail, with ``admittedBy`` for an admitted workload,
    ``admittedLater`` for a pending one (``_admitted_later``) and ``holders`` as ``_explain``."""
    from replay.store.restore import engine_at

    cluster = resolve_cluster(url, cluster)
    engine, end, _ = engine_at(url, cluster, at_ms=at_ms)
    out = _explain(engine, cluster, workload, _preemption_decisions(url, cluster, workload, end), holders)
    status = out.get("status")  # a Volcano PodGroup's explanation has a phase instead
    if status == "Admitted":
        out["admittedBy"] = _admitting_decision(url, cluster, workload, end)
    elif status == "Pending" and "queuedAt" in out:  # a Workload (a model's own unit has no queue time)
        from statemodel.timefmt import parse_time

        out["admittedLater"] = _admitted_later(url, cluster, workload, end, parse_time(out["queuedAt"], "queuedAt"))
    return out


def _admitted_later(url: str, cluster: str, workload: str, end: int, queued_ms: int) -> dict | None:
    """The first stored ``Admitted`` decision of ``workload`` caused by an event at or after position
    ``end`` — when the wait being explained ended — as ``{"seq", "cause", "time", "waitedMs"}``
    (``waitedMs`` from ``queued_ms``, its queue time, to that decision), or ``None`` when it is
    never admitted in the stored history."""
    from statemodel.timefmt import format_time

    import sqlalchemy as sa

    from replay.store.db import create_db_engine
    from statemodel import sql_schema as s

    d = s.decisions.c
    db = create_db_engine(url, read_only=True)
    try:
        with db.connect() as conn:
            row = conn.execute(sa.select(d.seq, d.cause_event_id, d.decision_time_ms).where(
                d.cluster == cluster, d.workload == workload, d.type == "Admitted", d.cause_position >= end,
            ).order_by(d.seq).limit(1)).first()
    finally:
        db.dispose()
    if row is None:
        return None
    return {"seq": row.seq, "cause": row.cause_event_id, "time": format_time(row.decision_time_ms),
            "waitedMs": row.decision_time_ms - queued_ms}


def _preemption_decisions(url: str, cluster: str, workload: str, end: int) -> list[dict]:
    """The stored ``Preempted`` decisions caused by the first ``end`` events that name ``workload``
    as victim or preemptor, in order (their JSON payloads)."""
    import sqlalchemy as sa

    from replay.store.db import create_db_engine
    from statemodel import sql_schema as s

    p = s.preemptions.c
    d = s.decisions.c
    db = create_db_engine(url, read_only=True)
    try:
        with db.connect() as conn:
            rows = conn.execute(sa.select(d.payload).join(s.preemptions, sa.and_(
                p.cluster == d.cluster, p.seq == d.seq)).where(
                d.cluster == cluster, d.cause_position < end,
                sa.or_(p.victim == workload, p.preemptor == workload)).order_by(d.seq)).scalars().all()
    finally:
        db.dispose()
    return list(rows)


def _admitting_decision(url: str, cluster: str, workload: str, end: int) -> dict | None:
    """The stored ``Admitted`` decision of ``workload`` in force at position ``end`` (its seq, cause,
    time, flavors, borrowing) and the explanation levels right after it — the numbers that let it
    in, its own charge included — or ``None`` for an observed admission (no engine decision)."""
    import sqlalchemy as sa

    from replay.store.db import create_db_engine
    from replay.store.restore import restore
    from statemodel import sql_schema as s
    from statemodel.explain import explain

    d = s.decisions.c
    db = create_db_engine(url, read_only=True)
    try:
        with db.connect() as conn:
            row = conn.execute(sa.select(d.seq, d.cause_event_id, d.cause_position, d.payload).where(
                d.cluster == cluster, d.workload == workload, d.type == "Admitted", d.cause_position < end,
            ).order_by(d.seq.desc()).limit(1)).first()
            if row is None:
                return None
            then, _ = restore(conn, cluster, row.cause_position + 1)  # right after the admitting event
    finally:
        db.dispose()
    payload = row.payload
    return {"seq": row.seq, "cause": row.cause_event_id, "time": payload.get("time"),
            "borrowing": payload.get("borrowing"), "podSetAssignments": payload.get("podSetAssignments"),
            "levels": explain(then.clusters[cluster], workload)["levels"]}


# --------------------------------------------------------------------------- whatif


def whatif(
    patch: str = typer.Option(..., "--patch", help="NDJSON file of patch events (docs/events.md)."),
    db: Optional[str] = DB_OPTION,
    from_time: Optional[str] = typer.Option(
        None, "--from", help="Fork the history here: an RFC 3339 time, a date, a duration after the start (7d) "
                             "or before the end (-2h); default: the start."),
    cluster: Optional[str] = typer.Option(
        None, "--cluster", help="The cluster to fork (default: the only one in the database)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    changed_only: bool = typer.Option(
        False, "--changed-only", help="Show only the queues and rows whose numbers differ between the branches."),
    plot: Optional[str] = typer.Option(
        None, "--plot", help="Write a plot of the waits per ClusterQueue, base vs what-if, to this file "
                             "(.png, .svg or .pdf)."),
) -> None:
    """What if: fork a stored history, merge in PATCH events, replay, and report which decisions
    changed, how many workloads were admitted, still pending or never admitted, and the wait-time
    and utilization deltas per ClusterQueue and LocalQueue.

    On a simulated history (jobs carry their run time) the what-if branch re-simulates: each job
    finishes its run time after its admission in that branch.  Finishes of workloads without a run
    time are held fixed at their recorded times (listed in the report).  Reads the database only;
    patch ids are prefixed with `whatif:`; at equal times a patch event goes before the archived ones.
    """
    from quotaledger.views.progress import step_progress
    from replay.whatif import changed_only as keep_changed
    from replay.whatif import whatif as run_whatif

    url = db_url(db)
    from_ms = None
    if from_time is not None:
        cluster = resolve_cluster(url, cluster)
        from_ms = store_moment(from_time, "--from", url, cluster)
    with reading(patch), step_progress("what-if") as progress:
        report = run_whatif(url, patch, cluster=cluster, from_ms=from_ms, progress=progress).to_json()
    if changed_only:
        report = keep_changed(report)
    if plot is not None:
        from replay.whatif_plot import plot_waits

        with writing(plot):
            try:
                plot_waits(report, plot)
            except ValueError as exc:
                raise CommandError(f"--plot: {exc}", 2) from None
    if as_json:
        print_json(report)
        return
    from quotaledger.views.whatif import print_whatif

    print_whatif(console(), report)
    if plot is not None:
        typer.echo(f"wrote {plot}", err=True)
