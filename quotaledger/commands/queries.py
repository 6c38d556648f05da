"""Queries users know from the schedulers' own tools, on any moment of a history (from an event
file or a store, ``quotaledger.commands.moment``):

- ``list``: workloads in queue order with their positions in the ClusterQueue and the LocalQueue,
  as Kueue's visibility API (``pendingworkloads``) and ``kueuectl list workload`` show them;
- ``history``: one accounting record per workload over the whole history (``replay.accounting``),
  as Slurm's ``sacct`` lists jobs: submitted, admitted, finished, wait, run time, admissions,
  preemptions and evictions;
- ``share``: per ClusterQueue and LocalQueue the fair-sharing numbers that order admission, as
  Slurm's ``sshare`` / ``sprio`` show theirs: admission fair sharing's decayed usage, weight and
  score (KEP-4136), and with fair sharing on the ClusterQueue's weighted share (Kueue's
  ``status.fairSharing``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import typer

from quotaledger.commands.errors import CommandError
from quotaledger.commands.options import AT_HELP
from quotaledger.views.output import console, print_json

if TYPE_CHECKING:
    from statemodel.cluster import ClusterState

EVENTS_ARGUMENT = typer.Argument(None, help="NDJSON events file (.gz accepted) or kafka:// range; or use --db.")
DB_HELP = "Read this SQL store (nearest snapshot + archived tail) instead of EVENTS (default: $QUOTALEDGER_DB)."
STATUSES = ("pending", "admitted", "finished", "all")
_STATUS_ORDER = {"Pending": 0, "Admitted": 1, "Finished": 2}


def workload_rows(state: "ClusterState", status: str = "pending", cluster_queue: str | None = None,
                  local_queue: str | None = None, namespace: str | None = None) -> list[dict]:
    """The workloads of ``state`` that pass the filters, in queue order.

    Order: by ClusterQueue, then pending before admitted before finished; pending ones by their
    position in the ClusterQueue (Kueue's queue order: ``statemodel.state_view.queue_positions``),
    admitted ones by admission time, then the workload key.  ``waitMs``: for a pending workload
    the state's time minus its queue time, for an admitted one its admission time minus its queue
    time (milliseconds); ``None`` for a finished one.

    Raises:
        CommandError: ``status`` is not one of ``STATUSES`` (exit 2).
    """
    from statemodel.state_view import queue_positions, workload_records
    from statemodel.timefmt import format_time

    if status not in STATUSES:
        raise CommandError(f"--status must be one of {', '.join(STATUSES)}, not {status!r}", 2)
    positions, _ = queue_positions(state)
    rows: list[tuple[tuple, dict]] = []
    for key, record in workload_records(state, positions, None, []):
        if status != "all" and record.status.lower() != status:
            continue
        if cluster_queue is not None and record.cluster_queue != cluster_queue:
            continue
        if local_queue is not None and record.local_queue != local_queue:
            continue
        if namespace is not None and key.split("/", 1)[0] != namespace:
            continue
        wait = None
        if record.status == "Pending":
            wait = max(0, state.clock_ms - record.queued_ms)
        elif record.admitted_ms is not None:
            wait = record.admitted_ms - record.queued_ms
        position = record.position_in_cluster_queue
        order = (record.cluster_queue or "", _STATUS_ORDER.get(record.status, 3),
                 position if position is not None else -1, record.admitted_ms or 0, key)
        rows.append((order, {
            "workload": key, "status": record.status, "clusterQueue": record.cluster_queue,
            "positionInClusterQueue": position, "localQueue": record.local_queue,
            "positionInLocalQueue": record.position_in_local_queue, "priority": record.priority,
            "queuedAt": format_time(record.queued_ms),
            "admittedAt": format_time(record.admitted_ms) if record.admitted_ms is not None else None,
            "waitMs": wait, "reason": record.reason,
        }))
    rows.sort(key=lambda row: row[0])
    return [row[1] for row in rows]


def list_workloads(
    events: Optional[str] = EVENTS_ARGUMENT,
    db: Optional[str] = typer.Option(None, "--db", help=DB_HELP),
    at: Optional[str] = typer.Option(None, "--at", help=AT_HELP),
    cluster: Optional[str] = typer.Option(None, "--cluster", help="The cluster (default: the only one)."),
    status: str = typer.Option("pending", "--status", help="pending, admitted, finished or all."),
    cluster_queue: Optional[str] = typer.Option(None, "--cluster-queue", help="Only this ClusterQueue."),
    local_queue: Optional[str] = typer.Option(None, "--local-queue", help="Only this LocalQueue (namespace/name)."),
    namespace: Optional[str] = typer.Option(None, "--namespace", help="Only workloads of this namespace."),
    limit: int = typer.Option(0, "--limit", min=0, help="At most this many rows (0: all)."),
    as_json: bool = typer.Option(False, "--json", help="Print the rows as JSON."),
) -> None:
    """List workloads in queue order with their positions in the ClusterQueue and the LocalQueue
    (Kueue's visibility API), at any moment of a history: pending ones by default."""
    from quotaledger.commands.moment import cluster_at

    name, state = cluster_at(events, db, at, cluster)
    rows = workload_rows(state, status, cluster_queue, local_queue, namespace)
    if limit:
        rows = rows[:limit]
    if as_json:
        print_json({"cluster": name, "time": _time(state), "workloads": rows})
        return
    from quotaledger.views.queries import print_workloads

    print_workloads(console(), name, _time(state), rows)


def share_rows(state: "ClusterState") -> list[dict]:
    """One row per ClusterQueue followed by its LocalQueues, ClusterQueues by name and each one's
    LocalQueues by admission fair sharing's score (lowest first: the order KEP-4136 admits them
    in), then key.

    A row: ``kind`` (``ClusterQueue`` / ``LocalQueue``), ``name``, ``clusterQueue``, ``pending``,
    ``admitted``, ``weight`` (``fairSharing.weight`` as decimal text), and with admission fair
    sharing on ``consumed`` (decayed usage per resource, score units), ``score`` (``null`` for a
    zero weight) and ``normalizedScore`` (a LocalQueue's score over its ClusterQueue's LocalQueues'
    summed scores, 0–1, ``null`` when that sum is 0); with fair sharing on, a ClusterQueue's
    ``weightedShare`` and ``dominantResource`` (Kueue's ``status.fairSharing``).
    """
    from statemodel.state_view import cluster_view

    view = cluster_view(state, workload_keys=())
    cqs, lqs = view["clusterQueues"], view["localQueues"]
    rows: list[dict] = []
    for cq_name in sorted(cqs):
        cq = cqs[cq_name]
        spec = state.hierarchy.cluster_queues[cq_name].spec if cq_name in state.hierarchy.cluster_queues else None
        row = {"kind": "ClusterQueue", "name": cq_name, "clusterQueue": cq_name, "pending": cq.get("pending", 0),
               "admitted": cq.get("admitted", 0),
               "weight": _weight(spec.fair_weight_milli if spec is not None else 1000)}
        _afs(row, cq.get("admissionFairSharing"))
        fair = cq.get("fairSharing")
        if fair is not None:
            row["weightedShare"] = fair["weightedShare"]
            row["dominantResource"] = fair["dominantResource"]
        rows.append(row)
        members = [key for key in sorted(lqs) if lqs[key]["clusterQueue"] == cq_name]
        scores = [lqs[key].get("admissionFairSharing", {}).get("score") for key in members]
        total = sum(s for s in scores if s is not None)
        children = []
        for key in members:
            lq = lqs[key]
            child = {"kind": "LocalQueue", "name": key, "clusterQueue": cq_name, "pending": lq["pending"],
                     "admitted": lq["admitted"], "weight": _weight(state.local_queues[key].fair_weight_milli)}
            afs = lq.get("admissionFairSharing")
            _afs(child, afs)
            if afs is not None:
                score = afs["score"]
                child["normalizedScore"] = None if score is None or not total else score / total
            children.append(child)
        children.sort(key=lambda c: (c.get("score") is None, c.get("score") or 0, c["name"]))
        rows.extend(children)
    return rows


def _afs(row: dict, afs: dict | None) -> None:
    if afs is not None:
        row["consumed"] = afs["consumed"]
        row["score"] = afs["score"]


def _weight(milli: int) -> str:
    whole, frac = divmod(milli, 1000)
    return str(whole) if not frac else f"{whole}.{frac:03d}".rstrip("0")


def _time(state: "ClusterState") -> str:
    from statemodel.timefmt import format_time

    return format_time(state.clock_ms)


def share(
    events: Optional[str] = EVENTS_ARGUMENT,
    db: Optional[str] = typer.Option(None, "--db", help=DB_HELP),
    at: Optional[str] = typer.Option(None, "--at", help=AT_HELP),
    cluster: Optional[str] = typer.Option(None, "--cluster", help="The cluster (default: the only one)."),
    as_json: bool = typer.Option(False, "--json", help="Print the rows as JSON."),
) -> None:
    """Fair-sharing numbers per ClusterQueue and LocalQueue (sshare / sprio): admission fair
    sharing's decayed usage, weight and score, and the ClusterQueue's weighted share when fair
    sharing is on — the numbers that order admission at that moment."""
    from quotaledger.commands.moment import cluster_at

    name, state = cluster_at(events, db, at, cluster)
    rows = share_rows(state)
    if as_json:
        print_json({"cluster": name, "time": _time(state), "queues": rows})
        return
    from quotaledger.views.queries import print_shares

    afs = state.config.admission_fair_sharing
    weights = None if afs is None else {res: milli / 1000 for res, milli in afs.resource_weights_milli}
    print_shares(console(), name, _time(state), rows, weights)


HISTORY_STATES = ("all", "pending", "admitted", "finished", "preempted")


def history_rows(records: list[dict], since_ms: int | None, until_ms: int | None, end_ms: int,
                 state: str = "all", cluster_queue: str | None = None, namespace: str | None = None) -> list[dict]:
    """The accounting records (``JobRecord.to_json``) that pass the filters, by submission time then key.

    A record is in the window ``[since_ms, until_ms]`` when its life — from submission to its finish,
    or to ``end_ms`` when it has not finished — overlaps the window (as ``sacct -S/-E`` selects
    jobs).  ``state``: ``preempted`` keeps the records preempted at least once.

    Raises:
        CommandError: ``state`` is not one of ``HISTORY_STATES`` (exit 2).
    """
    from statemodel.timefmt import parse_time

    if state not in HISTORY_STATES:
        raise CommandError(f"--state must be one of {', '.join(HISTORY_STATES)}, not {state!r}", 2)
    out = []
    for r in records:
        if r["submitted"] is None:
            continue  # lifecycle events of a workload never submitted in this history
        start = parse_time(r["submitted"], "submitted")
        stop = parse_time(r["finished"], "finished") if r["finished"] is not None else end_ms
        if (since_ms is not None and stop < since_ms) or (until_ms is not None and start > until_ms):
            continue
        if state == "preempted" and not r["preemptions"]:
            continue
        if state not in ("all", "preempted") and r["state"].lower() != state:
            continue
        if cluster_queue is not None and r["clusterQueue"] != cluster_queue:
            continue
        if namespace is not None and r["workload"].split("/", 1)[0] != namespace:
            continue
        out.append((start, r["workload"], r))
    out.sort(key=lambda row: (row[0], row[1]))
    return [row[2] for row in out]


def history(
    events: Optional[str] = EVENTS_ARGUMENT,
    db: Optional[str] = typer.Option(None, "--db", help="Read this SQL store instead of EVENTS (default: $QUOTALEDGER_DB)."),
    cluster: Optional[str] = typer.Option(None, "--cluster", help="The cluster (default: the only one)."),
    since: Optional[str] = typer.Option(None, "--since", help="Only workloads alive at or after this moment. " + AT_HELP),
    until: Optional[str] = typer.Option(None, "--until", help="Only workloads submitted at or before this moment."),
    state: str = typer.Option("all", "--state", help="all, pending, admitted, finished or preempted (at least once)."),
    cluster_queue: Optional[str] = typer.Option(None, "--cluster-queue", help="Only this ClusterQueue (of the latest admission)."),
    namespace: Optional[str] = typer.Option(None, "--namespace", help="Only workloads of this namespace."),
    limit: int = typer.Option(0, "--limit", min=0, help="At most this many rows (0: all)."),
    as_json: bool = typer.Option(False, "--json", help="Print the records as JSON."),
) -> None:
    """Job accounting (sacct): per workload its submission, first admission, finish, wait, run time,
    admissions, preemptions and evictions over the whole history, by submission time."""
    from quotaledger.commands.errors import reading
    from quotaledger.commands.options import file_moment, history_source, store_moment
    from replay.accounting import history_from_file, history_from_store

    url = history_source(events, db)
    if url is not None:
        from quotaledger.commands.store import resolve_cluster

        name = resolve_cluster(url, cluster)
        since_ms = store_moment(since, "--since", url, name)
        until_ms = store_moment(until, "--until", url, name)
        acc = history_from_store(url, name)
    else:
        assert events is not None
        with reading(events):
            since_ms = file_moment(since, "--since", events, cluster)
            until_ms = file_moment(until, "--until", events, cluster)
            try:
                name, acc = history_from_file(events, cluster)
            except ValueError as exc:
                raise CommandError(str(exc), 2) from None
    records = [job.to_json(acc.end_ms) for job in acc.jobs.values()]
    rows = history_rows(records, since_ms, until_ms, acc.end_ms, state, cluster_queue, namespace)
    if limit:
        rows = rows[:limit]
    from statemodel.timefmt import format_time

    if as_json:
        print_json({"cluster": name, "end": format_time(acc.end_ms), "workloads": rows})
        return
    from quotaledger.views.queries import print_history

    print_history(console(), name, format_time(acc.end_ms), rows)
