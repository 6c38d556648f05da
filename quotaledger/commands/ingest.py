"""``quotaledger ingest``: the Kafka ingest worker (``streams.ingest``) on the command line.

Exit codes: 0 after SIGTERM / SIGINT or ``--exit-when-idle``; 2 on a broker reset (the log under
the stored offsets is not the one that was applied); 1 on any other failure.  The log lines
(``streams.ingest_log``; ``--log-format text|json``) and then the one-line summary go to stderr, so
the command is easy to drive as a subprocess (soak and crash tests).  ``--metrics-port`` serves
``streams.ingest_metrics`` (Prometheus ``/metrics``, ``/healthz``, ``/readyz``) while it runs.
"""

from __future__ import annotations

import os
import sys
from typing import Optional

import typer

from quotaledger.commands.errors import CommandError
from quotaledger.commands.options import SNAPSHOT_EVERY_TIME_HELP, db_url, snapshot_interval_ms
from statemodel.limits import MAX_EVENT_BYTES


def ingest(
    bootstrap: Optional[str] = typer.Option(
        None, "--bootstrap", help="Kafka bootstrap servers host:port (default: $QUOTALEDGER_BOOTSTRAP)."),
    db: Optional[str] = typer.Option(
        None, "--db", help="SQLAlchemy URL of the store (default: $QUOTALEDGER_DB, else sqlite:///quotaledger.db)."),
    topic_prefix: Optional[str] = typer.Option(
        None, "--topic-prefix", help="Topic name prefix (default: $QUOTALEDGER_TOPIC_PREFIX, else quotaledger)."),
    group: str = typer.Option("quotaledger-ingest", "--group", help="Consumer group; progress is stored per group."),
    max_batch: int = typer.Option(20_000, "--max-batch", min=1,  # streams.ingest.DEFAULT_MAX_BATCH (not imported: slow)
                                  help="Most records per batch and SQL transaction."),
    max_batch_bytes: int = typer.Option(
        32 * 1024 * 1024, "--max-batch-bytes", min=1,  # streams.ingest.DEFAULT_MAX_BATCH_BYTES
        help="Most bytes of record keys and values per batch (a larger single record is a batch of its own)."),
    snapshot_every: int = typer.Option(
        50_000, "--snapshot-every", min=1, help="Events of a cluster between restorable snapshots."),
    snapshot_every_time: Optional[str] = typer.Option(None, "--snapshot-every-time", help=SNAPSHOT_EVERY_TIME_HELP),
    exit_when_idle: Optional[float] = typer.Option(
        None, "--exit-when-idle", min=0.0,
        help="Exit once every assigned partition is drained and nothing arrived for this many seconds."),
    publish: bool = typer.Option(True, "--publish/--no-publish", help="Relay decisions to the decisions topic."),
    session_timeout_ms: int = typer.Option(
        10_000, "--session-timeout-ms", min=100,
        help="Consumer-group session timeout (the dev broker holds a join for half of it; 2000 suits it)."),
    max_record_bytes: int = typer.Option(
        MAX_EVENT_BYTES, "--max-record-bytes", min=1,  # streams.codec.DEFAULT_MAX_RECORD_BYTES
        help="Larger record values are dead-lettered unread (default: the 4 MiB event limit)."),
    metrics_port: Optional[int] = typer.Option(
        None, "--metrics-port", min=0, max=65535,
        help="Serve Prometheus /metrics, /healthz and /readyz on this port (off by default)."),
    metrics_host: str = typer.Option("127.0.0.1", "--metrics-host", help="Address the metrics server binds."),
    log_format: str = typer.Option("text", "--log-format", help="Log lines as text or json (on stderr)."),
) -> None:
    """Consume the events topic into the SQL store, exactly once, and publish decisions.

    Each batch is applied and committed in ONE transaction with the consumed offsets; bad records
    go to the dead-letter topic and table; a restart resumes from the offsets stored in SQL.
    """
    from replay.sources import BOOTSTRAP_ENV
    from streams.ingest import run_ingest
    from streams.topics import DEFAULT_PREFIX, PREFIX_ENV, Topics

    from streams.ingest_listener import IngestListener, Listeners
    from streams.ingest_log import LOG_FORMATS, IngestLog, configure

    if log_format not in LOG_FORMATS:
        raise CommandError(f"--log-format must be one of {', '.join(LOG_FORMATS)}, not {log_format!r}")
    bootstrap = bootstrap or os.environ.get(BOOTSTRAP_ENV)
    if not bootstrap:
        raise CommandError("no Kafka broker: give --bootstrap HOST:PORT or set $QUOTALEDGER_BOOTSTRAP")
    every_ms = snapshot_interval_ms(snapshot_every_time)
    prefix = topic_prefix or os.environ.get(PREFIX_ENV) or DEFAULT_PREFIX
    log = IngestLog(configure(log_format),
                    progress=sys.stderr if log_format == "text" and sys.stderr.isatty() else None)
    listeners: list[IngestListener] = [log]
    server = None
    if metrics_port is not None:
        from streams.ingest_metrics import IngestMetrics, MetricsServer

        metrics = IngestMetrics()
        try:
            server = MetricsServer(metrics, metrics_host, metrics_port)
        except OSError as exc:
            raise CommandError(f"cannot serve metrics on {metrics_host}:{metrics_port}: {exc.strerror or exc}"
                               ) from None
        server.start()
        listeners.append(metrics)
    try:
        stats = run_ingest(bootstrap, db_url(db), topics=Topics(prefix), group=group, max_batch=max_batch,
                           max_batch_bytes=max_batch_bytes,
                           exit_when_idle=exit_when_idle, snapshot_every=snapshot_every,
                           snapshot_every_ms=every_ms, publish=publish, session_timeout_ms=session_timeout_ms,
                           max_record_bytes=max_record_bytes, listener=Listeners(listeners))
    finally:
        log.close()
        if server is not None:
            server.close()
    sys.stderr.write(f"ingest: {stats.summary()}\n")
