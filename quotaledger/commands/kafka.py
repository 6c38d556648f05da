"""Kafka commands of the ``quotaledger`` CLI: ``produce`` and ``dev-broker``.  Thin: parse options,
call ``streams.producer`` / ``streams.devbroker``."""

from __future__ import annotations

import os
import sys
from typing import Optional

import typer
from rich.console import Console

from quotaledger.commands.errors import CommandError, reading
from replay.sources import BOOTSTRAP_ENV
from streams.topics import DEFAULT_PREFIX, PREFIX_ENV


def produce(
    events: str = typer.Argument(..., help="NDJSON events file (.gz accepted), or - for stdin."),
    bootstrap: str = typer.Option(..., "--bootstrap", envvar=BOOTSTRAP_ENV,
                                  help="Kafka bootstrap servers HOST:PORT[,HOST:PORT]."),
    topic_prefix: str = typer.Option(DEFAULT_PREFIX, "--topic-prefix", envvar=PREFIX_ENV,
                                     help="Topic names are PREFIX.events, PREFIX.decisions, PREFIX.events.dlq."),
    partitions: int = typer.Option(3, "--partitions", min=1,
                                   help="Partitions of the topics when they are created (existing ones are kept)."),
    replication_factor: int = typer.Option(1, "--replication-factor", min=1,
                                           help="Replication factor of the topics when they are created."),
    max_message_bytes: int = typer.Option(1 << 20, "--max-message-bytes", min=1024,
                                          help="Lines longer than this are reported and not produced."),
) -> None:
    """Produce EVENTS to the events topic: one record per line, bytes unchanged, key = the event's
    cluster ("default" when it cannot be read), so each cluster keeps its order in one partition.

    Creates the three topics when missing.  Malformed lines are produced as they are (the ingest
    worker dead-letters them).  Exit code 1 when the broker fails or a line was too large to send.
    """
    from replay.ndjson import lines_of, open_source
    from streams.producer import produce
    from streams.topics import Topics

    err = Console(stderr=True)
    options = dict(topics=Topics(topic_prefix), partitions=partitions, replication_factor=replication_factor,
                   max_message_bytes=max_message_bytes)
    with reading(events):
        if err.is_terminal:
            from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn

            total = None
            if events != "-" and not events.endswith(".gz"):
                total = os.path.getsize(events)
            with Progress(TextColumn("producing"), BarColumn(), DownloadColumn(),
                          TextColumn("{task.fields[records]:,} records"), TimeElapsedColumn(),
                          console=err, transient=True) as bar, open_source(events) as stream:
                task = bar.add_task("produce", total=total, records=0)
                result = produce(lines_of(stream), bootstrap, **options,
                                 on_progress=lambda n, read: bar.update(task, completed=read, records=n))
        else:
            with open_source(events) as stream:
                result = produce(lines_of(stream), bootstrap, **options)
    for line_no in result.oversized[:20]:
        sys.stderr.write(f"not produced: line {line_no} is longer than --max-message-bytes {max_message_bytes}\n")
    typer.echo(result.summary())
    if result.oversized:
        raise typer.Exit(1)


def dev_broker(
    port: Optional[int] = typer.Option(None, "--port", help="Loopback port to listen on (default: a free one)."),
) -> None:
    """Run the embedded development Kafka broker (Tansu, in-memory) until Ctrl-C or SIGTERM.

    For development and tests only: nothing survives a restart.  Use docker-compose.yml for a real
    Apache Kafka.
    """
    import signal
    import threading

    from streams.devbroker import DevBroker

    broker = DevBroker(port=port)
    broker.start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    typer.echo(f"dev broker (tansu) ready: --bootstrap {broker.bootstrap}  (log {broker.log_path}); Ctrl-C stops it")
    try:
        while not stop.wait(0.5):
            if not broker.alive:
                raise CommandError(f"the dev broker died; log {broker.log_path}")
    except KeyboardInterrupt:
        pass
    finally:
        broker.stop()
    typer.echo("dev broker stopped")
