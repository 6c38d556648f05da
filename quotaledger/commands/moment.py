"""The engine of one cluster at one moment, from an event file or a store — what the read-only
queries (``list``, ``share``) look at.

The rules are those of every command: the source is ``EVENTS`` or ``--db`` (``$QUOTALEDGER_DB``
when neither is given), the moment any form of ``replay.timespec`` (default: the end of the
history), the cluster ``--cluster`` or the only one there is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from quotaledger.commands.errors import CommandError, reading
from quotaledger.commands.options import file_moment, history_source, store_moment

if TYPE_CHECKING:
    from statemodel.cluster import ClusterState


def cluster_at(events: str | None, db: str | None, at: str | None, cluster: str | None) -> tuple[str, "ClusterState"]:
    """``(cluster name, its state)`` at ``at`` from ``events`` or the store ``db``.

    Raises:
        CommandError: no source (exit 2), several clusters and no ``cluster`` (exit 2), an unknown
            cluster (exit 1), an unreadable file (exit 1).
        replay.timespec.TimeSpecError: a bad ``at`` (exit 2).
        replay.store.db.SinkError: the store cannot be read (exit 1).
    """
    url = history_source(events, db)
    if url is not None:
        from quotaledger.commands.store import resolve_cluster
        from replay.store.restore import engine_at

        name = resolve_cluster(url, cluster)
        engine, _, _ = engine_at(url, name, at_ms=store_moment(at, "--at", url, name))
    else:
        from quotaledger.commands.store import only_cluster
        from replay.runner import run_file

        with reading(events):
            until = file_moment(at, "--at", events, cluster)
            engine, _ = run_file(events, until_ms=until)
        name = only_cluster(engine, cluster)
    state = engine.clusters.get(name)
    if state is None:
        raise CommandError(f"no cluster {name}")
    return name, state
