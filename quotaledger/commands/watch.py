"""``quotaledger watch``: a Kubernetes cluster as a source of events (``streams.kube``) on the
command line.  Thin: parse options, load the client configuration, run ``streams.kube.watcher``.

Exit codes: 0 after SIGTERM / SIGINT, ``--once`` or ``--exit-when-idle``; 1 when the
configuration cannot be loaded, the state file is unusable, the initial list fails or the output
fails; 2 for bad options.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from quotaledger.commands.errors import CommandError


def watch(
    cluster: str = typer.Option(..., "--cluster", help="Cluster name: the events' cluster and Kafka key."),
    out: Optional[str] = typer.Option(None, "--out", help="Append NDJSON events to this file (- = stdout)."),
    bootstrap: Optional[str] = typer.Option(
        None, "--bootstrap", help="Produce to the events topic of these Kafka brokers (default: "
                                  "$QUOTALEDGER_BOOTSTRAP when --out is not given)."),
    topic_prefix: Optional[str] = typer.Option(
        None, "--topic-prefix", help="Topic name prefix (default: $QUOTALEDGER_TOPIC_PREFIX, else quotaledger)."),
    partitions: int = typer.Option(3, "--partitions", min=1, help="Partitions of the topics when they are created."),
    state: Optional[Path] = typer.Option(
        None, "--state", help="Resume file: last resourceVersion and known objects per kind (kept across restarts)."),
    kubeconfig: Optional[str] = typer.Option(
        None, "--kubeconfig", help="Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster config)."),
    context: Optional[str] = typer.Option(None, "--context", help="Kubeconfig context (default: the current one)."),
    quota_model: str = typer.Option(
        "kueue", "--quota-model", help="Quota model of the cluster: kueue (Kueue's objects), koordinator "
                                       "(ElasticQuota, Pod) or volcano (Queue, PodGroup, Pod); Nodes always."),
    kueue_version: str = typer.Option(
        "auto", "--kueue-version", help="Kueue API version: v1beta2, v1beta1, or auto (v1beta2 where served, "
                                        "else v1beta1; per kind, kept in the state file)."),
    once: bool = typer.Option(False, "--once", help="Exit after the initial sync (one Batch of the whole cluster)."),
    exit_when_idle: Optional[float] = typer.Option(
        None, "--exit-when-idle", min=0.0, help="Exit once no watch event arrived for this many seconds."),
    watch_timeout: int = typer.Option(300, "--watch-timeout", min=1,
                                      help="Seconds before the server ends a watch (it is then reopened)."),
    page_size: int = typer.Option(500, "--page-size", min=0,
                                  help="Objects per list request; lists follow the server's continue token "
                                       "(0: the whole list in one request)."),
) -> None:
    """List and watch the cluster's quota objects (Kueue's; ElasticQuotas and Pods under koordinator;
    Volcano's Queues, PodGroups and Pods under volcano) and Nodes, and send them as events: ADDED/MODIFIED → Applied, DELETED → Deleted, a
    Workload's status → WorkloadAdmitted / WorkloadEvicted / WorkloadFinished.

    Ids are uid@resourceVersion (a re-delivered watch event is a duplicate); the initial sync and
    every 410-Gone relist go out as one Batch of the differences; with --state the watch resumes
    where it stopped.  Output: --out FILE|- (NDJSON) or --bootstrap HOST:PORT (Kafka, key = cluster).
    """
    import os
    import signal
    import threading

    from replay.sources import BOOTSTRAP_ENV
    from streams.kube.kinds import kinds_for
    from streams.kube.state import StateFileError
    from streams.kube.watcher import KubeApi, KubeApiError, Watcher, load_client
    from streams.topics import DEFAULT_PREFIX, PREFIX_ENV, Topics

    try:
        kinds = kinds_for(quota_model, kueue_version)
    except ValueError as exc:
        raise CommandError(str(exc), code=2) from None
    if out is not None and bootstrap is not None:
        raise CommandError("give either --out or --bootstrap, not both", code=2)
    bootstrap = bootstrap if out is not None or bootstrap is not None else os.environ.get(BOOTSTRAP_ENV)
    if out is None and not bootstrap:
        raise CommandError("no output: give --out FILE|- or --bootstrap HOST:PORT", code=2)
    try:
        api_client = load_client(kubeconfig, context)
    except Exception as exc:  # noqa: BLE001 - the client raises ConfigException, OSError, ValueError, ...
        raise CommandError(f"cannot load the Kubernetes configuration: {exc}") from None

    if out is not None:
        from streams.kube.sink import NdjsonSink

        try:
            sink = NdjsonSink(out)
        except OSError as exc:
            raise CommandError(f"cannot write {out}: {exc}") from None
    else:
        from streams.kube.sink import KafkaSink

        sink = KafkaSink(bootstrap, cluster, Topics(topic_prefix or os.environ.get(PREFIX_ENV) or DEFAULT_PREFIX),
                         partitions)

    def warn(line: str) -> None:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        watcher = Watcher(KubeApi(api_client, watch_timeout, page_size), kinds, cluster, sink, state, warn=warn)
        summary = watcher.run(stop, once=once, exit_when_idle=exit_when_idle)
    except (StateFileError, KubeApiError) as exc:
        raise CommandError(str(exc)) from None
    except OSError as exc:
        raise CommandError(f"cannot write the output or the state file: {exc}") from None
    finally:
        sink.close()
        api_client.close()
    warn(summary.line())
