"""``quotaledger live``: the faust-streaming live view of a running installation
(``streams.live``).  Thin: parse options, start the app."""

from __future__ import annotations

import typer

from replay.sources import BOOTSTRAP_ENV
from streams.topics import DEFAULT_PREFIX, PREFIX_ENV


def live(
    bootstrap: str = typer.Option(..., "--bootstrap", envvar=BOOTSTRAP_ENV,
                                  help="Kafka bootstrap servers HOST:PORT[,HOST:PORT]."),
    topic_prefix: str = typer.Option(DEFAULT_PREFIX, "--topic-prefix", envvar=PREFIX_ENV,
                                     help="Topic names are PREFIX.events, PREFIX.decisions, PREFIX.events.dlq."),
    web_host: str = typer.Option("127.0.0.1", "--web-host", help="Address of the web server (0.0.0.0: every interface)."),
    web_port: int = typer.Option(6066, "--web-port", min=1, max=65535, help="Port of the web server."),
    window: int = typer.Option(60, "--window", min=1, help="Length of a counting window, seconds."),
    expires: int = typer.Option(3600, "--expires", min=1, help="How long a window is kept, seconds."),
    partitions: int = typer.Option(3, "--partitions", min=1,
                                   help="Partitions of the topics if they have to be created (as ingest creates them)."),
    app_id: str = typer.Option("quotaledger-live", "--app-id",
                               help="faust application id: its consumer group and changelog topic prefix."),
) -> None:
    """Serve live counts of a running installation — admissions and preemptions per ClusterQueue, dead
    letters per cluster per window, rolling wait percentiles — as a page (/), JSON (/counts.json) and
    Prometheus metrics (/metrics), from the decisions, events and dead-letter topics (faust-streaming).
    Runs until Ctrl-C or SIGTERM."""
    from streams.live import LiveView, topic_partitions
    from streams.topics import Topics

    topics = Topics(topic_prefix)
    view = LiveView(bootstrap, topics, topic_partitions(bootstrap, topics, partitions), web_host=web_host,
                    web_port=web_port, window_s=window, expires_s=expires, app_id=app_id)
    typer.echo(f"live view of {topic_prefix}.* on http://{web_host}:{web_port}/ (counts.json, metrics)", err=True)
    view.run()
