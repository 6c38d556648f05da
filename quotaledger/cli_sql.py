"""SQL-store commands of the CLI (issue 4): ``whatif``, and the ``--db`` paths of ``explain`` and
``state`` that ``quotaledger.cli`` hands over to.  Thin: parse, call ``replay``, render."""

from __future__ import annotations

import sys
from typing import Optional

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from quotaledger.display import qty


def _fail(message: str, code: int) -> typer.Exit:
    sys.stderr.write(f"error: {message}\n")
    return typer.Exit(code)


def _time_option(value: str | None, name: str) -> int | None:
    from statemodel.errors import EventError
    from statemodel.timefmt import parse_time

    try:
        return parse_time(value, name) if value is not None else None
    except EventError as exc:
        raise _fail(str(exc), 2) from None


# --------------------------------------------------------------------------- explain --db


def resolve_cluster(url: str, cluster: str | None) -> str:
    """``--cluster``, or the only cluster the store holds; exits 1 with a message when it cannot tell."""
    import sqlalchemy as sa

    from replay.store.restore import stored_cluster
    from replay.store.db import SinkError, create_db_engine

    if cluster is not None:
        return cluster
    db = create_db_engine(url)
    try:
        with db.connect() as conn:
            return stored_cluster(conn, None)
    except SinkError as exc:
        raise _fail(str(exc), 1) from None
    except sa.exc.SQLAlchemyError as exc:
        raise _fail(f"cannot read the database: {str(exc).splitlines()[0]}", 1) from None
    finally:
        db.dispose()


def explain_from_db(workload: str, url: str, cluster: str | None, at_ms: int | None) -> dict:
    """``statemodel.explain.explain`` of ``workload`` at ``at_ms`` (``None`` = the end of the archive),
    from the nearest snapshot plus the archived tail; exits 1 with a message when it cannot."""
    from replay.store.restore import engine_at
    from replay.store.db import SinkError
    from statemodel.explain import UnknownWorkload, explain

    import sqlalchemy as sa

    cluster = resolve_cluster(url, cluster)
    try:
        engine, end, _ = engine_at(url, cluster, at_ms=at_ms)
    except SinkError as exc:
        raise _fail(str(exc), 1) from None
    except sa.exc.SQLAlchemyError as exc:
        raise _fail(f"cannot read the database: {str(exc).splitlines()[0]}", 1) from None
    state = engine.clusters.get(cluster)
    try:
        if state is None:
            raise UnknownWorkload(workload)
        out = explain(state, workload)
    except UnknownWorkload:
        raise _fail(f"no workload {workload} in cluster {cluster}", 1) from None
    if out["status"] == "Admitted":
        out["admittedBy"] = _admitting_decision(url, cluster, workload, end)
    return out


def _admitting_decision(url: str, cluster: str, workload: str, end: int) -> dict | None:
    """The stored ``Admitted`` decision of ``workload`` in force at position ``end`` (its seq, cause,
    time, flavors, borrowing) and the explanation levels right after it — the numbers that let it
    in, its own charge included — or ``None`` for an observed admission (no engine decision)."""
    import sqlalchemy as sa

    from replay.store.restore import restore
    from replay.store.db import SinkError, create_db_engine
    from statemodel import sql_schema as s
    from statemodel.explain import explain

    d = s.decisions.c
    db = create_db_engine(url)
    try:
        with db.connect() as conn:
            row = conn.execute(sa.select(d.seq, d.cause_event_id, d.cause_position, d.payload).where(
                d.cluster == cluster, d.workload == workload, d.type == "Admitted", d.cause_position < end,
            ).order_by(d.seq.desc()).limit(1)).first()
            if row is None:
                return None
            then, _ = restore(conn, cluster, row.cause_position + 1)  # right after the admitting event
    except SinkError as exc:
        raise _fail(str(exc), 1) from None
    finally:
        db.dispose()
    payload = row.payload
    return {"seq": row.seq, "cause": row.cause_event_id, "time": payload.get("time"),
            "borrowing": payload.get("borrowing"), "podSetAssignments": payload.get("podSetAssignments"),
            "levels": explain(then.clusters[cluster], workload)["levels"]}


# --------------------------------------------------------------------------- whatif


def _ms(value: int | None) -> str:
    """Milliseconds as seconds for a table cell (``-`` for none)."""
    return "-" if value is None else f"{value / 1000:g}s"


def _delta(value: int | None) -> str:
    return "-" if value is None else f"{value / 1000:+g}s"


def _mean(resource: str, value: int) -> str:
    """A time-weighted mean for display: exact when ``qty`` can say it exactly, else rounded (cores, GiB)."""
    text = qty(resource, value)
    if resource == "cpu" and text.endswith("m") and value >= 1000:
        return f"{value / 1000:.1f}"
    if ("memory" in resource or "storage" in resource) and text.isdigit() and value >= 1 << 30:
        return f"{value / (1 << 30):.1f}Gi"
    return text


def print_whatif(console: Console, report: dict) -> None:
    """Rich rendering of ``WhatIfReport.to_json()``: changed decisions, wait times, utilization."""
    from replay.reports.page import percent

    fork = report["fork"]
    console.print(f"[bold]what-if[/bold] cluster {report['cluster']}: fork at "
                  f"{fork['from'] or 'the start'} (position {fork['position']}, snapshot at {fork['snapshotPosition']}), "
                  f"{report['patchEvents']} patch events merged into {report['archivedEvents']} archived events; "
                  f"window {report['window']['start']} .. {report['window']['end']}")
    changes = Table(title=f"decisions that changed ({len(report['decisionChanges'])})", title_justify="left",
                    box=box.SIMPLE_HEAD)
    for header in ("workload", "decision", "change", "base", "what-if", "Δ time"):
        changes.add_column(header, justify="right" if header == "Δ time" else "left")

    def side(view: dict | None) -> str:
        if view is None:
            return "-"
        extra = (", ".join(f"{r}→{f}" for ps in view["flavors"] for r, f in ps.items())
                 if "flavors" in view else view.get("reason") or "")
        return f"{view['time']} {view['clusterQueue'] or '-'} {extra}".rstrip()

    for row in report["decisionChanges"]:
        changes.add_row(row["workload"], f"{row['type']} #{row['n']}", row["change"], side(row["base"]),
                        side(row["whatif"]), _delta(row["deltaMs"]))
    console.print(changes)
    for title, rows in (("ClusterQueue", report["waitTimes"]["clusterQueues"]),
                        ("LocalQueue", report["waitTimes"]["localQueues"])):
        table = Table(title=f"wait times per {title} (base → what-if; pending = still waiting at the end)",
                      title_justify="left", box=box.SIMPLE_HEAD)
        table.add_column(title)
        for header in ("waits", "pending", "p50", "p95", "max", "Δ p50", "Δ p95", "Δ max"):
            table.add_column(header, justify="right")
        for row in rows:
            b, w, d = row["base"], row["whatif"], row["delta"]
            table.add_row(row["name"], f"{b['count']} → {w['count']}", f"{b['pending']} → {w['pending']}",
                          *(f"{_ms(b[k])} → {_ms(w[k])}" for k in ("p50Ms", "p95Ms", "maxMs")),
                          *(_delta(d[k]) for k in ("p50Ms", "p95Ms", "maxMs")))
        console.print(table)
    table = Table(title="utilization: time-weighted usage / nominal quota", title_justify="left", box=box.SIMPLE_HEAD)
    for header in ("ClusterQueue", "flavor", "resource"):
        table.add_column(header)
    for header in ("mean usage", "mean nominal", "base", "what-if", "Δ"):
        table.add_column(header, justify="right")
    for row in report["utilization"]:
        res, b, w = row["resource"], row["base"], row["whatif"]
        delta = "-" if row["delta"] is None else f"{row['delta'] * 100:+.1f} pts"
        table.add_row(row["clusterQueue"], row["flavor"], res,
                      f"{_mean(res, b['meanUsage'])} → {_mean(res, w['meanUsage'])}",
                      f"{_mean(res, b['meanNominal'])} → {_mean(res, w['meanNominal'])}",
                      percent(b["utilization"]), percent(w["utilization"]), delta)
    console.print(table)
    for label, branch in report["branches"].items():
        console.print(f"{label}: {branch['decisions']} decisions after the fork, ends {branch['end']}, "
                      f"hash {branch['hash']}")


def register(app: typer.Typer) -> None:
    """Add ``whatif`` to ``app``."""
    from quotaledger.cli import DB_OPTION  # cli.py calls this after defining it

    @app.command()
    def whatif(
        patch: str = typer.Option(..., "--patch", help="NDJSON file of patch events (EVENTS.md v1)."),
        db: Optional[str] = DB_OPTION,
        from_time: Optional[str] = typer.Option(
            None, "--from", help="Fork the history here (RFC 3339); default: the start."),
        cluster: Optional[str] = typer.Option(
            None, "--cluster", help="The cluster to fork (default: the only one in the database)."),
        as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    ) -> None:
        """What if: fork a stored history, merge in PATCH events, replay, and report which decisions
        changed and the wait-time and utilization deltas per ClusterQueue and LocalQueue.

        Reads the database only (nothing is written).  Patch ids are prefixed with `whatif:`; at equal
        times a patch event goes before the archived ones.
        """
        from quotaledger.cli import _console, _dump_state, db_url
        from replay.store.db import SinkError
        from replay.whatif import WhatIfError, whatif as run_whatif

        from_ms = _time_option(from_time, "--from")
        try:
            report = run_whatif(db_url(db), patch, cluster=cluster, from_ms=from_ms).to_json()
        except WhatIfError as exc:
            raise _fail(str(exc), 2) from None
        except SinkError as exc:
            raise _fail(str(exc), 1) from None
        except (OSError, EOFError) as exc:
            raise _fail(f"cannot read {patch}: {exc}", 1) from None
        if as_json:
            sys.stdout.flush()
            sys.stdout.buffer.write(_dump_state(report))
            sys.stdout.buffer.flush()
            return
        print_whatif(_console(), report)
