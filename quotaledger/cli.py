"""``quotaledger`` command line (Typer + Rich).  Thin: it parses arguments, calls
``replay.runner.run_file`` and renders what the engine returns.

Public contract (issue 2, "Public CLI contract"):

- ``quotaledger replay EVENTS --decisions-out D --state-out S``: decisions as NDJSON
  (one object per line), final state as JSON (indent 2, the engine's key order);
  ``-`` means stdin / stdout.  Rejected events are reported on stderr as
  ``rejected line N (id X): path: problem`` and counted; the exit code is 0.
- ``quotaledger state EVENTS --json``: the same final state JSON on stdout.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any, Optional

import orjson
import typer
from rich import box
from rich.console import Console
from rich.table import Table

from quotaledger.display import qty

app = typer.Typer(
    name="quotaledger",
    help="Event-sourced engine for Kueue-style hierarchical quota: replay events, inspect state.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

# --------------------------------------------------------------------------- helpers


@contextmanager
def _binary_out(target: str | None) -> Iterator[IO[bytes] | None]:
    """Open ``target`` for binary writing: ``None`` → no output, ``"-"`` → stdout."""
    if target is None:
        yield None
    elif target == "-":
        sys.stdout.flush()
        out = sys.stdout.buffer
        try:
            yield out
        finally:
            out.flush()
    else:
        with open(target, "wb") as f:
            yield f


def _format_reject(line_no: int, err: Any, unit: str = "line") -> str:
    """``rejected line N (id X): path: problem`` (``id -`` when the id could not be read; ``offset N``
    for a Kafka source)."""
    where = f"{err.path}: {err.problem}" if err.path else err.problem
    event_id = err.event_id if err.event_id is not None else "-"
    return f"rejected {unit} {line_no} (id {event_id}): {where}"


def _reject_printer(source: str) -> Any:
    """The ``on_reject`` callback for ``source``: prints ``_format_reject`` lines on stderr."""
    from replay.sources import position_name

    unit = position_name(source)
    return lambda line_no, err: sys.stderr.write(_format_reject(line_no, err, unit) + "\n")


def _run(source: str, on_decision: Any = None, watch: Any = None) -> tuple[Any, Any]:
    """Run a replay, turning an unreadable source into exit code 1 with a message."""
    from replay.runner import run_file  # imported lazily: keeps `--help` fast

    try:
        return run_file(source, on_decision=on_decision, on_reject=_reject_printer(source), watch=watch)
    except (OSError, EOFError) as exc:
        sys.stderr.write(f"error: cannot read {source}: {exc}\n")
        raise typer.Exit(1) from exc


SNAPSHOT_EVERY_TIME_HELP = "Also snapshot a cluster whenever its event time crosses a multiple of this Go duration (1h, 30m)."


def snapshot_interval_ms(text: str | None) -> int | None:
    """``--snapshot-every-time`` in milliseconds (``None`` when not given); exits 1 with a message
    naming the option when it is not a positive Go duration."""
    from statemodel.errors import EventError
    from statemodel.timefmt import parse_duration

    if text is None:
        return None
    try:
        every_ms = parse_duration(text, "--snapshot-every-time")
    except EventError as exc:
        sys.stderr.write(f"error: {exc}\n")
        raise typer.Exit(1) from None
    if every_ms < 1:
        sys.stderr.write("error: --snapshot-every-time must be positive\n")
        raise typer.Exit(1)
    return every_ms


def _run_db(source: str, url: str, batch_size: int, snapshot_every: int, snapshot_every_ms: int | None,
            replace: bool, on_decision: Any, watch: Any = None) -> tuple[Any, Any]:
    """``_run`` with the SQL sink; a ``SinkError`` becomes exit code 1 with its message."""
    from replay.store.db import SinkError
    from replay.sql_sink import replay_to_db

    try:
        return replay_to_db(source, url, batch_size=batch_size, snapshot_every=snapshot_every,
                            snapshot_every_ms=snapshot_every_ms, replace=replace,
                            on_decision=on_decision, on_reject=_reject_printer(source), watch=watch)
    except SinkError as exc:
        sys.stderr.write(f"error: {exc}\n")
        raise typer.Exit(1) from None
    except (OSError, EOFError) as exc:
        sys.stderr.write(f"error: cannot read {source}: {exc}\n")
        raise typer.Exit(1) from exc


def _dump_state(state: dict) -> bytes:
    """State JSON: indent 2, the engine's key order, trailing newline."""
    return orjson.dumps(state, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)


def _cluster_queue_tables(state: dict) -> list[Table]:
    """One Rich table per cluster: ClusterQueue, cohort, active, pending, admitted, then one line
    per (flavor, resource) with usage and nominal quota (display units)."""
    tables = []
    for cluster, cstate in state.get("clusters", {}).items():
        table = Table(title=f"cluster {cluster}", title_justify="left", box=box.SIMPLE_HEAD)
        for header in ("ClusterQueue", "cohort", "active"):
            table.add_column(header)
        for header in ("pending", "admitted"):
            table.add_column(header, justify="right")
        table.add_column("flavor")
        table.add_column("resource")
        table.add_column("usage", justify="right")
        table.add_column("nominal", justify="right")
        for name, cq in cstate.get("clusterQueues", {}).items():
            rows = [
                (flavor, res, qty(res, q.get("usage")), qty(res, q.get("nominal")))
                for flavor, resources in cq.get("resources", {}).items()
                for res, q in resources.items()
            ] or [("-", "-", "-", "-")]
            table.add_row(
                name,
                cq.get("cohort") or "-",
                "yes" if cq.get("active") else "no",
                str(cq.get("pending", 0)),
                str(cq.get("admitted", 0)),
                *("\n".join(col) for col in zip(*rows)),
            )
        tables.append(table)
    return tables


def _console() -> Console:
    """Rich console on stdout; piped output is not squeezed into 80 columns."""
    console = Console()
    return console if console.is_terminal else Console(width=160)


# --------------------------------------------------------------------------- commands


@app.command()
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
    import os

    url = db or os.environ.get("QUOTALEDGER_DB") or None
    every_ms = snapshot_interval_ms(snapshot_every_time)
    with _binary_out(decisions_out) as out:
        on_decision = None
        if out is not None:
            write = out.write
            dumps = orjson.dumps
            opt = orjson.OPT_APPEND_NEWLINE
            on_decision = lambda d: write(dumps(d.to_json(), option=opt))  # noqa: E731
        from quotaledger.progress import replay_progress

        with replay_progress(events) as watch:
            if url is None:
                engine, result = _run(events, on_decision=on_decision, watch=watch)
            else:
                engine, result = _run_db(events, url, batch_size, snapshot_every, every_ms, replace, on_decision,
                                         watch)
    state = engine.state()
    with _binary_out(state_out) as out:
        if out is not None:
            out.write(_dump_state(state))
    sys.stderr.write(
        f"applied {result.applied}, rejected {result.rejected}, duplicates {result.duplicates}, "
        f"decisions {result.decisions}, {result.events_per_second:.0f} events/s "
        f"({result.lines} lines in {result.seconds:.3f}s)\n"
    )


@app.command()
def state(
    events: Optional[str] = typer.Argument(
        None, help="NDJSON events file (.gz accepted), - for stdin, or a kafka:// range."),
    as_json: bool = typer.Option(False, "--json", help="Print the state JSON instead of tables."),
    db: Optional[str] = typer.Option(None, "--db", help="Read the state from this SQL store instead of a file."),
    at: Optional[str] = typer.Option(None, "--at", help="The state as of this time (RFC 3339)."),
    seq: Optional[int] = typer.Option(None, "--seq", help="With --db: the state right after decision SEQ."),
    cluster: Optional[str] = typer.Option(
        None, "--cluster", help="With --db: the cluster (default: the only one in the database)."),
) -> None:
    """Print the state after EVENTS, or — with --db — at any past moment of a stored history
    (nearest snapshot at or before it plus the archived tail)."""
    import os

    from statemodel.errors import EventError
    from statemodel.timefmt import parse_time

    try:
        until = parse_time(at, "--at") if at is not None else None
    except EventError as exc:
        sys.stderr.write(f"error: {exc}\n")
        raise typer.Exit(2) from exc
    url = db or (os.environ.get("QUOTALEDGER_DB") if events is None else None)
    if url is not None:
        from quotaledger.cli_sql import resolve_cluster
        from replay.store.restore import engine_at
        from replay.store.db import SinkError

        cluster = resolve_cluster(url, cluster)
        try:
            engine, end, start = engine_at(url, cluster, at_ms=until, seq=seq)
        except SinkError as exc:
            sys.stderr.write(f"error: {exc}\n")
            raise typer.Exit(1) from exc
        sys.stderr.write(f"cluster {cluster}: {end} events (snapshot at {start} + {end - start} archived)\n")
    elif events is None:
        sys.stderr.write("error: give an EVENTS file or --db\n")
        raise typer.Exit(2)
    elif seq is not None:
        sys.stderr.write("error: --seq needs --db\n")
        raise typer.Exit(2)
    else:
        from replay.runner import run_file

        try:
            engine, _ = run_file(events, on_reject=_reject_printer(events), until_ms=until)
        except (OSError, EOFError) as exc:
            sys.stderr.write(f"error: cannot read {events}: {exc}\n")
            raise typer.Exit(1) from exc
    st = engine.state()
    if as_json:
        sys.stdout.flush()
        sys.stdout.buffer.write(_dump_state(st))
        sys.stdout.buffer.flush()
        return
    console = _console()
    if url is not None:
        from quotaledger.state_tree import print_state_tree

        print_state_tree(console, st)
        return
    for table in _cluster_queue_tables(st):
        console.print(table)
    console.print(f"engine {st.get('engineVersion')}  time {st.get('time')}  hash {st.get('hash')}")


TRACE_OPTION = typer.Option("dlrm", "--trace", help="dlrm, openb, or the path of a trace CSV (with --mapping).")
MAPPING_OPTION = typer.Option(None, "--mapping", help="Mapping YAML for a generic CSV trace.")
QUOTA_OPTION = typer.Option(
    None, "--quota", help="Folder of Kueue manifests to use instead of the generated quota tree.")
UNTIL_OPTION = typer.Option(
    None, "--until", help="Stop here: seconds or a duration (7d, 36h) after the trace start, or an RFC 3339 time.")


@app.command()
def demo(
    trace: str = TRACE_OPTION,
    mapping: Optional[str] = MAPPING_OPTION,
    quota: Optional[str] = QUOTA_OPTION,
    db: Optional[str] = typer.Option(
        None, "--db", help="SQLAlchemy URL of the store (default: a SQLite file in the output folder)."),
    out: Optional[str] = typer.Option(None, "--out", help="Output folder (default: out/demo-<trace>)."),
    until: Optional[str] = UNTIL_OPTION,
) -> None:
    """The main job on a real trace: import it, build the quota tree (written as editable manifests),
    simulate it closed-loop, archive the history in SQL, and report per ClusterQueue and Cohort
    (tables, PNG plots, index.html) — all in one output folder, named at the end."""
    from quotaledger.demo_view import demo_progress, print_demo
    from replay.demo import DemoError, run_demo

    err = Console(stderr=True)
    if not err.is_terminal:
        err = Console(stderr=True, width=200)

    try:
        with demo_progress(err) as progress:
            result = run_demo(trace, mapping=mapping, quota=quota, db=db, out=out, until=until, progress=progress,
                              on_note=lambda text: err.print(text, markup=False, highlight=False))
    except DemoError as exc:
        err.print(f"error: {exc}", markup=False, highlight=False)
        raise typer.Exit(1) from None
    except OSError as exc:
        err.print(f"error: cannot write the demo output: {exc}", markup=False, highlight=False)
        raise typer.Exit(1) from None
    print_demo(_console(), result)


@app.command()
def simulate(
    out: str = typer.Option(..., "--out", help="Write the simulated event history (NDJSON) here."),
    trace: str = TRACE_OPTION,
    mapping: Optional[str] = MAPPING_OPTION,
    quota: Optional[str] = QUOTA_OPTION,
    quota_out: Optional[str] = typer.Option(
        None, "--quota-out", help="Write the quota configuration used (as Kueue manifests) to this folder."),
    until: Optional[str] = UNTIL_OPTION,
    tick: str = typer.Option("5m", "--tick", help="Tick interval (duration; 0 = no ticks)."),
    finish_at_horizon: bool = typer.Option(
        False, "--finish-at-horizon", help="Finish jobs still running at the end at the horizon."),
) -> None:
    """Import a trace, build its quota configuration, run the closed-loop simulation, write EVENTS.

    The output is a normal event file: `quotaledger replay OUT` gives the same decisions and hash.
    Rows the importer cannot read are reported on stderr with their line numbers and skipped.
    """
    from replay.demo import DemoError, input_notes, load_inputs
    from replay.sim.manifests import write_manifests
    from replay.sim.simulator import simulate as run_simulation
    from replay.sim.traces import parse_until

    err = Console(stderr=True)
    if not err.is_terminal:
        err = Console(stderr=True, width=200)
    try:
        imported, config, until_ms = load_inputs(trace, mapping, quota, until)
        tick_ms = parse_until(tick, 0) if tick.strip() not in ("0", "") else 0
    except (DemoError, ValueError) as exc:
        err.print(f"error: {exc}", markup=False, highlight=False)
        raise typer.Exit(1) from exc
    for line in input_notes(imported, config):
        err.print(line, markup=False, highlight=False)
    if quota_out:
        header = "\n".join([f"quotaledger quota configuration for trace {imported.name}", *config.notes])
        written = write_manifests(config, quota_out, header)
        err.print(f"wrote {len(written)} manifest files to {quota_out}", markup=False, highlight=False)
    start = imported.trace_start_ms
    horizon = until_ms if until_ms is not None else imported.trace_end_ms
    try:
        if err.is_terminal:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            with Progress(TextColumn("simulating {task.description}"), BarColumn(),
                          TextColumn("{task.percentage:>3.0f}% of trace time"), TimeElapsedColumn(),
                          console=err, transient=True) as bar:
                task = bar.add_task(imported.name, total=max(1, horizon - start))
                result = run_simulation(imported, config, out, until_ms=until_ms, tick_ms=tick_ms,
                                        finish_at_horizon=finish_at_horizon,
                                        progress=lambda t: bar.update(task, completed=max(0, t - start)))
        else:
            result = run_simulation(imported, config, out, until_ms=until_ms, tick_ms=tick_ms,
                                    finish_at_horizon=finish_at_horizon)
    except OSError as exc:
        err.print(f"error: cannot write {out}: {exc}", markup=False, highlight=False)
        raise typer.Exit(1) from exc
    if result.unroutable:
        err.print(f"warning: {result.unroutable} jobs have no LocalQueue in the quota configuration "
                  "(they stay pending)", markup=False, highlight=False)
    typer.echo(f"wrote {out}: {result.summary()}")
    typer.echo(f"simulated in {result.seconds:.2f}s ({result.events / max(result.seconds, 1e-9):,.0f} events/s)")


@app.command()
def explain(
    workload: str = typer.Argument(..., help="the workload, ns/name"),
    events: Optional[str] = typer.Argument(None, help="NDJSON event file (plain or .gz), or - for stdin"),
    at: Optional[str] = typer.Option(None, "--at", help="explain the state as of this time (RFC 3339)"),
    cluster: Optional[str] = typer.Option(
        None, "--cluster", help="the cluster the workload belongs to (default: 'default'; with --db: the only one)"),
    as_json: bool = typer.Option(False, "--json", help="print the explanation as JSON"),
    db: Optional[str] = typer.Option(
        None, "--db", help="read the history from this SQL store (nearest snapshot + archived tail) instead of EVENTS"),
) -> None:
    """Why a workload is admitted or waiting: reason, position, request, and the quota numbers at
    every level of its cohort tree (available, limits, usage); for an admitted workload, when and
    how it was admitted."""
    from replay.runner import run_file
    from statemodel.errors import EventError
    from statemodel.explain import UnknownWorkload, explain as explain_workload
    from statemodel.timefmt import parse_time

    try:
        until = parse_time(at, "--at") if at is not None else None
    except EventError as exc:
        sys.stderr.write(f"error: {exc}\n")
        raise typer.Exit(2) from exc
    if events is None and db is None:
        sys.stderr.write("error: give an EVENTS file or --db\n")
        raise typer.Exit(2)
    if events is None:
        from quotaledger.cli_sql import explain_from_db

        out = explain_from_db(workload, db, cluster, until)
    else:
        cluster = cluster or "default"
        try:
            engine, _ = run_file(events, until_ms=until)
        except (OSError, EOFError) as exc:
            sys.stderr.write(f"error: cannot read {events}: {exc}\n")
            raise typer.Exit(1) from exc
        state = engine.clusters.get(cluster)
        try:
            if state is None:
                raise UnknownWorkload(workload)
            out = explain_workload(state, workload)
        except UnknownWorkload as exc:
            sys.stderr.write(f"error: no workload {workload} in cluster {cluster}\n")
            raise typer.Exit(1) from exc
    if as_json:
        sys.stdout.buffer.write(orjson.dumps(out, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE))
        return
    from quotaledger.explain_view import print_explanation

    print_explanation(_console(), out)


@app.command()
def version() -> None:
    """Print the distribution version and the engine version."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    from statemodel.engine import ENGINE_VERSION

    try:
        dist = dist_version("quotaledger")
    except PackageNotFoundError:
        dist = "unknown"
    typer.echo(f"quotaledger {dist} (engine {ENGINE_VERSION})")


@app.command()
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
    sides (event, expected vs recorded decision or hash) and exits 1.
    """
    from replay.store.db import SinkError
    from replay.verify import verify as run_verify

    try:
        result = run_verify(db_url(db), source)
    except SinkError as exc:
        sys.stderr.write(f"error: {exc}\n")
        raise typer.Exit(2) from None
    except (OSError, EOFError) as exc:
        sys.stderr.write(f"error: cannot read {source}: {exc}\n")
        raise typer.Exit(2) from exc
    typer.echo(result.summary())
    if not result.ok:
        raise typer.Exit(1)


# --------------------------------------------------------------------------- db


DEFAULT_DB = "sqlite:///quotaledger.db"
"""The embedded default store; ``QUOTALEDGER_DB`` overrides it, ``--db`` overrides both."""

db_app = typer.Typer(
    name="db",
    help="Create, upgrade or downgrade the SQL store's schema (Alembic migrations).",
    no_args_is_help=True,
)
app.add_typer(db_app, name="db")

DB_OPTION = typer.Option(
    None, "--db",
    help="SQLAlchemy URL, e.g. sqlite:///quotaledger.db or postgresql+psycopg://user@host/db "
         "(default: $QUOTALEDGER_DB, else sqlite:///quotaledger.db).",
)


def db_url(option: str | None) -> str:
    """The database URL: ``--db``, else ``$QUOTALEDGER_DB``, else ``sqlite:///quotaledger.db``."""
    import os

    return option or os.environ.get("QUOTALEDGER_DB") or DEFAULT_DB


def _alembic(command_name: str, url: str, revision: str) -> None:
    from alembic.util.exc import CommandError
    from sqlalchemy.exc import SQLAlchemyError

    from replay.store.db import migrate_schema

    try:
        migrate_schema(url, command_name, revision, quiet=False)
    except (CommandError, SQLAlchemyError) as exc:
        typer.echo(f"quotaledger db {command_name}: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"{command_name} to {revision}: done ({_redacted(url)})", err=True)


def _redacted(url: str) -> str:
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - only for display
        return url


@db_app.command("upgrade")
def db_upgrade(
    revision: str = typer.Argument("head", help="Target revision (default: head)."),
    db: Optional[str] = DB_OPTION,
) -> None:
    """Upgrade the database schema to REVISION (default: the newest, ``head``)."""
    _alembic("upgrade", db_url(db), revision)


@db_app.command("downgrade")
def db_downgrade(
    revision: str = typer.Argument("base", help="Target revision (default: base = drop everything)."),
    db: Optional[str] = DB_OPTION,
) -> None:
    """Downgrade the database schema to REVISION (default: ``base``, which drops every table)."""
    _alembic("downgrade", db_url(db), revision)


from quotaledger.cli_sql import register as register_sql  # noqa: E402

register_sql(app)


# --------------------------------------------------------------------------- Kafka


@app.command("dev-broker")
def dev_broker(
    port: Optional[int] = typer.Option(None, "--port", help="Loopback port to listen on (default: a free one)."),
) -> None:
    """Run the embedded development Kafka broker (Tansu, in-memory) until Ctrl-C or SIGTERM.

    For development and tests only: nothing survives a restart.  Use docker-compose.yml for a real
    Apache Kafka.
    """
    import signal
    import threading

    from streams.devbroker import DevBroker, DevBrokerError

    broker = DevBroker(port=port)
    try:
        broker.start()
    except DevBrokerError as exc:
        sys.stderr.write(f"error: {exc}\n")
        raise typer.Exit(1) from None
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    typer.echo(f"dev broker (tansu) ready: --bootstrap {broker.bootstrap}  (log {broker.log_path}); Ctrl-C stops it")
    try:
        while not stop.wait(0.5):
            if not broker.alive:
                sys.stderr.write(f"error: the dev broker died; log {broker.log_path}\n")
                raise typer.Exit(1)
    except KeyboardInterrupt:
        pass
    finally:
        broker.stop()
    typer.echo("dev broker stopped")


from quotaledger import cli_ingest  # noqa: E402

cli_ingest.register(app)

from quotaledger import cli_kafka  # noqa: E402

cli_kafka.register(app)

if __name__ == "__main__":
    app()
