"""``quotaledger`` command line (Typer + Rich): builds the app from ``quotaledger.commands`` and runs
every command through the one exit mapping (``quotaledger.commands.errors``).  Heavy modules are
imported inside the commands, so ``--help`` stays fast."""

from __future__ import annotations

import typer

from quotaledger.commands import demo, ingest, kafka, live, queries, replay, store, version, watch
from quotaledger.commands.errors import guarded

app = typer.Typer(
    name="quotaledger",
    help="Event-sourced engine for hierarchical quota (Kueue, Koordinator, Volcano): replay, explain, audit, what-if.",
    add_completion=True,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

db_app = typer.Typer(
    name="db",
    help="Create, upgrade or downgrade the SQL store's schema (Alembic migrations).",
    no_args_is_help=True,
)
db_app.command("upgrade")(guarded(store.db_upgrade))
db_app.command("downgrade")(guarded(store.db_downgrade))

app.command()(guarded(replay.replay))
app.command()(guarded(replay.state))
app.command()(guarded(demo.demo))
app.command()(guarded(demo.simulate))
app.command()(guarded(store.explain))
app.command("list")(guarded(queries.list_workloads))
app.command()(guarded(queries.share))
app.command()(guarded(queries.history))
app.command()(guarded(version.version))
app.command()(guarded(store.verify, failure_code=2))  # exit 1 means a divergence
app.add_typer(db_app, name="db")
app.command()(guarded(store.whatif))
app.command("dev-broker")(guarded(kafka.dev_broker))
app.command()(guarded(ingest.ingest))
app.command()(guarded(kafka.produce))
app.command()(guarded(live.live))
app.command()(guarded(watch.watch))

if __name__ == "__main__":
    app()
