"""Closed-loop re-simulation of a what-if branch: finishes follow the branch's own admissions.

A simulated history records each job's run time on its Workload or Pod (the annotation of
``replay.sim.run_time``).  In the what-if branch of ``quotaledger whatif`` (``replay.whatif``):

1. **Dropped.**  The archived ``WorkloadFinished`` events of every workload with a run time, and
   its archived ``WorkloadEvicted`` events with reason ``Preempted`` (the simulator writes them as
   the job controller of a preempted job under ``releaseOn: Eviction``), are left out of the
   branch: they followed the recorded admissions, not the branch's.
2. **Generated.**  When the branch admits such a workload (an ``Admitted`` decision at time T),
   its ``WorkloadFinished`` is scheduled at T + run time; a workload already admitted at the fork
   finishes at its admission time + run time.  A ``Preempted`` or ``Evicted`` decision voids the
   scheduled finish (the next admission schedules a new one with the full run time: a preempted
   run is lost work, as in the simulator).  Under ``releaseOn: Eviction`` a ``Preempted``
   decision schedules the victim's ``WorkloadEvicted`` (reason ``Preempted``) at its own time.
   Generated events carry the simulator's ids (``finish/<ns>/<name>[/<n>]``,
   ``evict/<ns>/<name>/<n>``, numbered after the archived ones before the fork), so a what-if
   branch whose admissions do not change reproduces the stored history event for event.
3. **Order.**  A generated event at time T is applied after every kept archived event (and patch
   event) whose effective time is at or before T and before the first later one — the
   simulator's order, where submissions and ticks at T were scheduled before any finish at T;
   generated events at equal times keep the order they were scheduled in.
4. **Horizon.**  Generated events later than the horizon (the end of the archived history, or the
   last patch event if later) are not applied: those workloads are still running at the end.
5. **Held fixed.**  Workloads without a recorded run time (an observed history, or a job the
   trace gave no run time) keep their archived finishes at the recorded times; the report lists
   them.

The branch is a pure function of the fork state, the kept stream and the run times (no clock, no
randomness; ties broken by scheduling order).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator

import orjson

from replay.sim.run_time import run_time_of
from statemodel.cluster import ClusterState
from statemodel.decisions import ADMITTED, PREEMPTED, Decision
from statemodel.events.decode import decode_event
from statemodel.events.envelope import Event
from statemodel.workload import ADMITTED as STATUS_ADMITTED

__all__ = ["RunTimes", "Resimulation"]


class RunTimes:
    """Run times (ms) of a cluster's workloads read from their run-time annotations, and how many
    finishes and evictions each workload had before the fork (to number generated ids).

    Attributes:
        ms: workload key ``ns/name`` → run time in ms (the last annotation seen wins, as the last
            ``Applied`` of an object wins).
        finishes / evictions: workload key → archived ``WorkloadFinished`` / ``WorkloadEvicted``
            events before the fork.
    """

    def __init__(self) -> None:
        self.ms: dict[str, int] = {}
        self.finishes: dict[str, int] = {}
        self.evictions: dict[str, int] = {}

    def read_payload(self, payload: object) -> None:
        """Take the run time of a stored event envelope (JSON object) that applies a Workload or
        Pod, recursing into ``Batch`` events; count finishes and evictions."""
        if not isinstance(payload, dict):
            return
        kind = payload.get("type")
        if kind == "Applied":
            obj = payload.get("object")
            run = run_time_of(obj)
            if run is not None:
                meta = obj["metadata"]  # type: ignore[index]
                ns, name = meta.get("namespace"), meta.get("name")
                if isinstance(ns, str) and isinstance(name, str):
                    self.ms[f"{ns}/{name}"] = run
        elif kind == "Batch":
            for inner in payload.get("events") or ():
                self.read_payload(inner)
        elif kind in ("WorkloadFinished", "WorkloadEvicted") and isinstance(payload.get("workload"), str):
            counts = self.finishes if kind == "WorkloadFinished" else self.evictions
            counts[payload["workload"]] = counts.get(payload["workload"], 0) + 1

    def read_event(self, event: Event) -> None:
        """As :meth:`read_payload` for a decoded event that applies (or batches) a unit carrying
        the annotation (other events are skipped without parsing)."""
        if event.type in ("Applied", "Batch") and b"quotaledger.io/run-time" in event.canonical:
            self.read_payload(orjson.loads(event.canonical))


class Resimulation:
    """The generated finishes (and evictions) of one what-if branch (module docstring).

    Use: :meth:`keep` filters the archived tail; :meth:`start` schedules the finishes of the
    workloads admitted at the fork; before applying a stream event of effective time T, apply
    :meth:`due` (T); after each step, :meth:`on_decisions`; at the end, :meth:`due` of the horizon
    + 1.  :attr:`cut` counts workloads whose generated finish lies past the horizon.
    """

    def __init__(self, cluster: str, run_times: RunTimes, horizon_ms: int) -> None:
        self.cluster = cluster
        self.run_times = run_times
        self.horizon_ms = horizon_ms
        self._heap: list[tuple[int, int, str, str, int]] = []  # (time, seq, kind, workload, generation)
        self._seq = 0
        self._generation: dict[str, int] = {}
        self._finishes = dict(run_times.finishes)
        self._evictions = dict(run_times.evictions)
        self.generated = 0
        self.dropped = 0
        self.held_fixed: list[dict] = []
        """Archived finishes kept at their recorded time: ``{"workload", "time"}`` in stream order."""

    def resimulated(self, key: str | None) -> bool:
        """Whether ``key`` has a recorded run time (its finishes are generated)."""
        return key is not None and key in self.run_times.ms

    def keep(self, event: Event | None) -> bool:
        """Whether an archived tail item stays in the branch (rule 1); records held-fixed finishes."""
        if event is None:
            return True
        if event.type == "WorkloadFinished":
            if self.resimulated(event.workload):
                self.dropped += 1
                return False
            self.held_fixed.append({"workload": event.workload, "timeMs": event.time_ms})
        elif event.type == "WorkloadEvicted" and event.reason == "Preempted" and self.resimulated(event.workload):
            self.dropped += 1
            return False
        return True

    def _schedule(self, at_ms: int, kind: str, key: str) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (at_ms, self._seq, kind, key, self._generation.get(key, 0)))

    def start(self, state: ClusterState | None) -> None:
        """Schedule the finishes of the resimulated workloads admitted at the fork (admission time +
        run time), in workload-key order."""
        if state is None:
            return
        for key in sorted(state.workloads):
            info = state.workloads[key]
            if info.status == STATUS_ADMITTED and self.resimulated(key) and info.admitted_ms is not None:
                self._schedule(info.admitted_ms + self.run_times.ms[key], "finish", key)

    def on_decisions(self, decisions: Iterable[Decision], releases_on_decision: bool) -> None:
        """Schedule a finish per ``Admitted`` decision of a resimulated workload; void the scheduled
        one at a ``Preempted``/``Evicted`` decision, and under ``releaseOn: Eviction``
        (``releases_on_decision`` false) schedule the victim's eviction (rule 2)."""
        for d in decisions:
            key = d.workload
            if not self.resimulated(key):
                continue
            self._generation[key] = self._generation.get(key, 0) + 1
            if d.kind == ADMITTED:
                self._schedule(d.time_ms + self.run_times.ms[key], "finish", key)
            elif d.kind == PREEMPTED and not releases_on_decision:
                self._schedule(d.time_ms, "evict", key)

    def due(self, before_ms: int) -> Iterator[Event]:
        """The generated events earlier than ``before_ms`` and not past the horizon, in order (void
        finishes skipped), as decoded events of the cluster.  Lazy: an event scheduled while the
        caller applies the ones yielded (a finish of an admission they caused) is yielded too when
        it is due."""
        while self._heap and self._heap[0][0] < before_ms and self._heap[0][0] <= self.horizon_ms:
            at, _, kind, key, gen = heapq.heappop(self._heap)
            if kind == "finish":
                if gen != self._generation.get(key, 0):
                    continue
                n = self._finishes[key] = self._finishes.get(key, 0) + 1
                raw = {"id": f"finish/{key}" + (f"/{n}" if n > 1 else ""), "time": at, "cluster": self.cluster,
                       "type": "WorkloadFinished", "workload": key}
            else:
                n = self._evictions[key] = self._evictions.get(key, 0) + 1
                raw = {"id": f"evict/{key}/{n}", "time": at, "cluster": self.cluster, "type": "WorkloadEvicted",
                       "workload": key, "reason": "Preempted"}
            self.generated += 1
            yield decode_event(orjson.dumps(raw))

    @property
    def cut(self) -> list[str]:
        """Resimulated workloads whose live generated finish lies past the horizon (still running
        at the end), sorted."""
        return sorted({key for at, _, kind, key, gen in self._heap
                       if kind == "finish" and gen == self._generation.get(key, 0) and at > self.horizon_ms})
