"""Job accounting: one record per workload over a whole history, as Slurm's ``sacct`` keeps them —
submitted, first admitted, admissions, preemptions, evictions, finished, wait and run time.

Built from what the history holds, in order: the applied events (a Workload's first ``Applied``
is its submission, ``WorkloadAdmitted`` or an applied Workload with ``status.admission`` an
observed admission, ``WorkloadEvicted`` an observed eviction, ``WorkloadFinished`` or a
``Deleted`` Workload its end; a ``Batch``'s inner events at the Batch's time) and the engine's
decisions (``Admitted``, ``Preempted`` — the workload is the victim —, ``Evicted``).  Event times
are the engine clock the event was applied at (the running maximum of event times), so records
agree with the decisions.  Rejected and duplicate events are not part of the history.

``history_from_store`` reads a cluster's archive (two ordered scans, no replay);
``history_from_file`` replays an event source once.  Both give the same records for the same events.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

__all__ = ["JobRecord", "Accounting", "history_from_store", "history_from_file"]


@dataclass(slots=True)
class JobRecord:
    """The accounting record of one workload (times in epoch ms, ``None`` when it did not happen).

    Attributes:
        key: ``namespace/name``.
        local_queue: ``namespace/queueName`` of its latest submission.
        priority: ``spec.priority`` of its latest apply (0 when absent).
        cluster_queue: the ClusterQueue of its latest admission, ``None`` if never admitted.
        submitted_ms: its first ``Applied``.
        admitted_ms: its first admission (engine decision or observed).
        last_admitted_ms: its latest admission (run time is measured from it).
        finished_ms: when it finished or was deleted.
        admissions / preemptions / evictions: how many of each it went through.
        last_out_ms: its latest preemption or eviction.
    """

    key: str
    local_queue: str | None = None
    priority: int = 0
    cluster_queue: str | None = None
    submitted_ms: int | None = None
    admitted_ms: int | None = None
    last_admitted_ms: int | None = None
    finished_ms: int | None = None
    admissions: int = 0
    preemptions: int = 0
    evictions: int = 0
    last_out_ms: int | None = None

    def admit(self, at_ms: int, cluster_queue: str | None) -> None:
        """An admission at ``at_ms`` to ``cluster_queue`` (in any order: the earliest and the latest
        are kept)."""
        if self.admitted_ms is None or at_ms < self.admitted_ms:
            self.admitted_ms = at_ms
        if self.last_admitted_ms is None or at_ms >= self.last_admitted_ms:
            self.last_admitted_ms = at_ms
            if cluster_queue:
                self.cluster_queue = cluster_queue
        self.admissions += 1

    def leave(self, at_ms: int, preempted: bool) -> None:
        """A preemption (``preempted``) or an eviction at ``at_ms``."""
        if preempted:
            self.preemptions += 1
        else:
            self.evictions += 1
        if self.last_out_ms is None or at_ms > self.last_out_ms:
            self.last_out_ms = at_ms

    def state(self) -> str:
        """``Finished``; ``Admitted`` when its latest admission is not older than its latest
        preemption or eviction (holding quota at the end); else ``Pending``."""
        if self.finished_ms is not None:
            return "Finished"
        if self.last_admitted_ms is not None and (self.last_out_ms is None or self.last_admitted_ms >= self.last_out_ms):
            return "Admitted"
        return "Pending"

    def to_json(self, end_ms: int) -> dict:
        """The record as JSON: times in RFC 3339; ``waitMs`` from submission to the first admission
        (or to ``end_ms``, the end of the history, when never admitted: a lower bound);
        ``runMs`` from the latest admission to the finish (or to ``end_ms`` while it runs)."""
        from statemodel.timefmt import format_time

        def t(ms: int | None) -> str | None:
            return None if ms is None else format_time(ms)

        state = self.state()
        start = self.submitted_ms
        wait = None
        if start is not None:
            wait = (self.admitted_ms if self.admitted_ms is not None else end_ms) - start
        run = None
        if self.last_admitted_ms is not None and state != "Pending":
            run = (self.finished_ms if self.finished_ms is not None else end_ms) - self.last_admitted_ms
        return {
            "workload": self.key, "state": state, "clusterQueue": self.cluster_queue, "localQueue": self.local_queue,
            "priority": self.priority, "submitted": t(self.submitted_ms), "admitted": t(self.admitted_ms),
            "finished": t(self.finished_ms), "waitMs": wait, "runMs": run, "admissions": self.admissions,
            "preemptions": self.preemptions, "evictions": self.evictions,
        }


class Accounting:
    """Folds a history's applied events and decisions, in order, into ``JobRecord`` s."""

    def __init__(self) -> None:
        self.jobs: dict[str, JobRecord] = {}
        self.end_ms = 0

    def _job(self, key: str) -> JobRecord:
        job = self.jobs.get(key)
        if job is None:
            job = self.jobs[key] = JobRecord(key)
        return job

    def event(self, at_ms: int, envelope: Any) -> None:
        """One applied event (its envelope as parsed JSON) applied at engine time ``at_ms``."""
        self.end_ms = max(self.end_ms, at_ms)
        if not isinstance(envelope, dict):
            return
        kind = envelope.get("type")
        if kind == "Batch":
            for inner in envelope.get("events") or ():
                self.event(at_ms, inner)
            return
        if kind in ("WorkloadAdmitted", "WorkloadEvicted", "WorkloadFinished"):
            key = envelope.get("workload")
            if not isinstance(key, str):
                return
            job = self._job(key)
            if kind == "WorkloadAdmitted":
                admission = envelope.get("admission")
                job.admit(at_ms, admission.get("clusterQueue") if isinstance(admission, dict) else None)
            elif kind == "WorkloadEvicted":
                job.leave(at_ms, preempted=False)
            elif job.finished_ms is None:
                job.finished_ms = at_ms
            return
        obj = envelope.get("object")
        if kind not in ("Applied", "Deleted") or not isinstance(obj, dict) or obj.get("kind") != "Workload":
            return
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace', 'default')}/{meta.get('name')}"
        job = self._job(key)
        if kind == "Deleted":
            if job.finished_ms is None:
                job.finished_ms = at_ms
            return
        spec = obj.get("spec") or {}
        if job.submitted_ms is None:
            job.submitted_ms = at_ms
        if isinstance(spec.get("queueName"), str):
            job.local_queue = f"{meta.get('namespace', 'default')}/{spec['queueName']}"
        if isinstance(spec.get("priority"), int):
            job.priority = spec["priority"]
        admission = (obj.get("status") or {}).get("admission")
        if isinstance(admission, dict) and job.last_admitted_ms is None:
            job.admit(at_ms, admission.get("clusterQueue"))

    def decision(self, decision: dict) -> None:
        """One engine decision (its JSON, ``statemodel.decisions.Decision.to_json``)."""
        key = decision.get("workload")
        if not isinstance(key, str):
            return
        job = self._job(key)
        from statemodel.timefmt import parse_time

        kind = decision.get("type")
        at_ms = parse_time(decision["time"], "time")
        if kind == "Admitted":
            job.admit(at_ms, decision.get("clusterQueue"))
        elif kind in ("Preempted", "Evicted"):
            job.leave(at_ms, preempted=kind == "Preempted")


def history_from_store(url: str, cluster: str) -> Accounting:
    """The accounting of ``cluster``'s archived history in the store at ``url``.

    Raises:
        replay.store.db.SinkError: the store cannot be read.
    """
    import sqlalchemy as sa

    from replay.store.db import create_db_engine
    from statemodel import sql_schema as s

    acc = Accounting()
    e, d = s.events.c, s.decisions.c
    db = create_db_engine(url, read_only=True)
    try:
        with db.connect() as conn:
            clock = None
            rows = conn.execute(sa.select(e.event_time_ms, e.payload).where(
                e.cluster == cluster, e.status == "applied").order_by(e.position))
            for time_ms, payload in rows:
                clock = time_ms if clock is None or time_ms > clock else clock
                acc.event(clock, payload)  # the JSON column gives the parsed envelope
            for (payload,) in conn.execute(sa.select(d.payload).where(d.cluster == cluster).order_by(d.seq)):
                acc.decision(payload)
    finally:
        db.dispose()
    return acc


def history_from_file(source: str, cluster: str | None) -> tuple[str, Accounting]:
    """``(cluster, accounting)`` of the events of ``source`` (a file or a ``kafka://`` range) for
    ``cluster`` — the only cluster of the source when ``None``.

    Raises:
        ValueError: ``cluster`` is ``None`` and the source holds several clusters (or none); the
            message names them.
        OSError / ``SourceError``: the source cannot be read.
    """
    from replay.runner import run_file

    per_cluster: dict[str, Accounting] = {}

    def step(result: Any) -> None:
        if result.event is None or result.duplicate or result.cluster is None or result.record is None:
            return
        acc = per_cluster.setdefault(result.cluster, Accounting())
        acc.event(result.clock_ms, orjson.loads(result.record))
        for decision in result.decisions:
            acc.decision(decision.to_json())

    run_file(source, on_step=step)
    if cluster is None:
        if len(per_cluster) != 1:
            names = ", ".join(sorted(per_cluster)) or "none"
            raise ValueError(f"give --cluster: the events hold {len(per_cluster)} clusters ({names})")
        cluster = next(iter(per_cluster))
    return cluster, per_cluster.get(cluster, Accounting())
