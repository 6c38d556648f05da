"""What-if analysis: fork a cluster's archived history, add patch events, replay, compare.

``whatif(url, patch, cluster=None, from_ms=None)`` only reads the SQL store (SELECTs):

1. **Fork.**  The engine of the cluster just before ``from_ms`` — every archived event before the
   first one whose time is at or after ``from_ms`` — is rebuilt from the nearest snapshot at or
   before that position plus the archived events in between (``replay.store.restore.restore``).
   Without ``from_ms`` the fork is the start of the history (an empty engine).
2. **Patch.**  The patch is an NDJSON file of EVENTS.md v1 events (a changed ClusterQueue or
   Cohort, extra or deleted Workloads, an ``EngineConfig``, finishes, ...).  An event without
   ``cluster`` belongs to the forked cluster; one naming another cluster, one that fails
   validation, or one earlier than ``from_ms`` is an error (every bad line is listed).  Ids are
   prefixed with ``whatif:`` (inner ``Batch`` ids too) so they can never collide with archived ids.
3. **Merge rule.**  The archived tail keeps its order.  Patch events, sorted by time (file order
   on ties), are inserted before the first archived event whose *effective time* — the engine
   clock it is applied at, the running maximum of archived event times — is at or after theirs:
   at equal times the patch event goes first.  Patch events later than every archived event come
   last.  Archived events that were rejected when they arrived stay in place and stay rejected.
4. **Two branches** start from the same fork state: *base* replays the archived tail alone (so it
   reproduces the stored decisions), *what-if* the merged stream — closed loop: the finishes of
   workloads with a recorded run time (the simulator's annotation, ``replay.sim.run_time``) are
   re-simulated from the branch's own admissions, the others held fixed (``replay.resimulate``).
   Both read run times from every archived event up to the end and from the patch.
5. **Report** (``WhatIfReport``), everything about the tail after the fork:

   - decisions that changed, per workload: the n-th decision of a type (``Admitted``,
     ``Preempted``, ``Evicted``) in one branch is matched with the n-th of the same type in the
     other; ``added`` / ``removed`` when only one branch has it, ``changed`` when the time, the
     ClusterQueue, the flavors (admissions) or the reason (preemptions, evictions) differ;
   - wait times per ClusterQueue and per LocalQueue: for every ``Admitted`` decision, its time
     minus the time the workload (last) entered its queue; for every workload still pending at the
     horizon, the horizon minus that time (counted in ``pending``: a lower bound).  Percentiles
     are nearest-rank on integer milliseconds (p = the value at rank ``ceil(p/100 × n)``);
   - utilization per ClusterQueue × flavor × resource: ``∫ usage dt / ∫ nominalQuota dt`` over the
     window from the fork (or the first tail event) to the horizon (the later of the two
     branches' final clocks), with both integrals exact integers (base units × ms) and one
     division at the end; ``meanUsage`` / ``meanNominal`` are the integrals over the window
     length (integer floor).  Each ClusterQueue's rows are read again only after an event that
     may change them (its workloads' lifecycle, its decisions, its own object; every ClusterQueue
     after any other quota or configuration object), so the cost per event is O(ClusterQueues it
     touches × flavor-resources);
   - preemptions: ``Preempted`` decisions of each branch, in total and per ClusterQueue of the
     victim (docs/preemption.md: raising a ClusterQueue's quota makes preemptions disappear,
     lowering it adds some);
   - per branch, the workloads that waited in the window, ``submitted = admitted + pending +
     neverAdmitted`` (``Branch.counts``), with the ones not admitted listed;
   - ``closedLoop``: re-simulated or observed, how many archived finishes were replaced by how
     many generated ones, the workloads still running at the end, the finishes held fixed.

The horizon of both branches is the end of the archived history, or the last patch event if later.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
import sqlalchemy as sa

from replay.ndjson import iter_lines
from replay.resimulate import Resimulation, RunTimes
from replay.store.restore import archived_events, end_position, restore, stored_cluster
from replay.reports.tables import percentile
from replay.store.db import SinkError, create_db_engine, redacted
from statemodel import sql_schema as s
from statemodel.cluster import ClusterState
from statemodel.decisions import ADMITTED, PREEMPTED, Decision
from statemodel.driver import Driver, gc_paused
from statemodel.engine import Engine
from statemodel.errors import EventError
from statemodel.events.envelope import Event
from statemodel.events.decode import decode_event
from statemodel.events.oversized import OversizedRecord
from statemodel.objects import ClusterQueue, Pod, Workload
from statemodel.snapshot import dump as dump_snapshot
from statemodel.snapshot import load as load_snapshot
from statemodel.quota.protocol import CLUSTER_QUEUE
from statemodel.timefmt import format_time
from statemodel.workload import PENDING

PATCH_ID_PREFIX = "whatif:"
"""Prefix given to every patch event id (and inner ``Batch`` id)."""

PERCENTILES = (50, 95)

PROGRESS_EVERY = 2000
"""Events between two progress calls."""


class WhatIfError(ValueError):
    """The patch cannot be used (bad lines listed in the message), or the fork point is unusable."""


# --------------------------------------------------------------------------- patch


def _prefixed(raw: dict) -> dict:
    out = dict(raw)
    if isinstance(out.get("id"), str):
        out["id"] = PATCH_ID_PREFIX + out["id"]
    if out.get("type") == "Batch" and isinstance(out.get("events"), list):
        out["events"] = [_prefixed(inner) if isinstance(inner, dict) else inner for inner in out["events"]]
    return out


def read_patch(path: str, cluster: str, from_ms: int | None) -> list[Event]:
    """The patch events of ``path`` for ``cluster``, ids prefixed, sorted by time (file order on ties).

    Raises:
        WhatIfError: one line per bad event — not JSON, not an object, another cluster, invalid
            (field path and problem from the validator), or earlier than ``from_ms``.
        OSError: the file cannot be read.
    """
    events: list[tuple[int, int, Event]] = []
    problems: list[str] = []
    for line_no, line in iter_lines(path):
        if isinstance(line, OversizedRecord):  # not read whole: the decoder says why it is rejected
            try:
                decode_event(line)
            except EventError as err:
                problems.append(f"line {line_no}: {err.problem}")
            continue
        try:
            raw = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            problems.append(f"line {line_no}: not JSON: {exc}")
            continue
        if not isinstance(raw, dict):
            problems.append(f"line {line_no}: not a JSON object")
            continue
        raw.setdefault("cluster", cluster)
        if raw["cluster"] != cluster:
            problems.append(f"line {line_no}: cluster: {raw['cluster']!r}, but the what-if forks cluster {cluster!r}")
            continue
        try:
            event = decode_event(orjson.dumps(_prefixed(raw)))
        except EventError as err:
            where = f"{err.path}: {err.problem}" if err.path else err.problem
            problems.append(f"line {line_no} (id {raw.get('id', '-')}): {where}")
            continue
        if from_ms is not None and event.time_ms < from_ms:
            problems.append(f"line {line_no} (id {raw.get('id')}): time: {format_time(event.time_ms)} is before "
                            f"the fork point {format_time(from_ms)}")
            continue
        events.append((event.time_ms, line_no, event))
    if problems:
        raise WhatIfError(f"bad patch {path}:\n  " + "\n  ".join(problems))
    return [event for _, _, event in sorted(events, key=lambda item: (item[0], item[1]))]


def merge(tail: list[tuple[Event | None, EventError | None, str | None]], patch: list[Event], clock_ms: int
          ) -> list[tuple[Event | None, EventError | None, str | None]]:
    """The what-if stream: ``patch`` (sorted by time) merged into the archived ``tail`` by the rule
    of the module docstring; ``clock_ms`` is the engine clock at the fork."""
    out: list[tuple[Event | None, EventError | None, str | None]] = []
    i = 0
    for item in tail:
        event = item[0]
        if event is not None:
            clock_ms = max(clock_ms, event.time_ms)
            while i < len(patch) and patch[i].time_ms <= clock_ms:
                out.append((patch[i], None, patch[i].id))
                i += 1
        out.append(item)
    out.extend((event, None, event.id) for event in patch[i:])
    return out


# --------------------------------------------------------------------------- one branch


@dataclass
class Wait:
    """One wait: ``wait_ms`` from entering the queue to admission (or to the horizon when ``pending``)."""

    workload: str
    cluster_queue: str
    local_queue: str
    wait_ms: int
    pending: bool


class Branch:
    """Replays one stream from the fork state and records what the report needs."""

    def __init__(self, engine: Engine, cluster: str, window_start_ms: int | None) -> None:
        self.driver = Driver(engine)
        self.engine = engine
        self.cluster = cluster
        self.decisions: list[Decision] = []
        self.waits: list[Wait] = []
        self.last_ms = window_start_ms
        self.window_start_ms = window_start_ms
        self.usage: dict[tuple[str, str, str], list[int]] = {}
        """(ClusterQueue, flavor, resource) -> [∫usage dt, ∫nominal dt] in base units × ms."""
        self._rows: dict[str, tuple[int, list[tuple[str, str, int, int]]]] = {}
        """ClusterQueue -> (since ms, its ``(flavor, resource, usage, nominal)`` rows since then): the
        open interval of the integrals, closed when an event may have changed the rows."""
        self.population: dict[str, tuple[str, str, int]] = {}
        """Workloads that waited in the window (pending at the fork, entering a queue after it, or
        sent back to it by a preemption or eviction): key -> (ClusterQueue, LocalQueue, queued time ms)."""
        self.admitted: set[str] = set()
        """Workloads admitted in the window (an ``Admitted`` decision, or an observed admission)."""

    def _state(self) -> ClusterState | None:
        return self.engine.clusters.get(self.cluster)

    def _advance(self, until_ms: int) -> bool:
        """Move the integrals' clock to ``until_ms``; the first call opens the window there (with
        every ClusterQueue's rows as they stand).  Returns whether the clock moved."""
        if self.last_ms is None:
            self.last_ms = self.window_start_ms = until_ms
            self._refresh(None)
            return False
        if until_ms <= self.last_ms:
            return False
        self.last_ms = until_ms
        return True

    def _refresh(self, names: set[str] | None) -> None:
        """Close the open interval of ClusterQueues ``names`` (every one when ``None``) at the
        integrals' clock and open a new one with their rows as they stand now.  Exact: a
        ClusterQueue's usage and nominal quota are constant between two events that may change them
        (``_touched``), so each interval adds ``value × its length``."""
        now = self.last_ms
        if now is None:
            return
        state = self._state()
        current = set(state.hierarchy.cluster_queues) if state is not None else set()
        for name in sorted(current | set(self._rows) if names is None else names):
            since, rows = self._rows.pop(name, (now, []))
            dt = now - since
            if dt > 0:
                for flavor, resource, usage, nominal in rows:
                    acc = self.usage.setdefault((name, flavor, resource), [0, 0])
                    acc[0] += usage * dt
                    acc[1] += nominal * dt
            if state is not None and name in current:
                self._rows[name] = (now, [(r.flavor, r.resource, r.usage, r.nominal)
                                          for r in state.model.entitlements(CLUSTER_QUEUE, name)])

    def _touched(self, event: Event) -> tuple[bool, list[str], set[str]]:
        """What an event may change of the ClusterQueues' usage or nominal quota, besides its
        decisions: ``(every ClusterQueue, the workload keys it names, the ClusterQueues it names)``.
        A workload's lifecycle charges or releases only its own ClusterQueue; a ClusterQueue object
        changes its own nominal quota; any other quota or configuration object may change any row."""
        if event.type == "Batch":
            every, keys, names = False, [], set()
            for inner in event.events:
                e, k, n = self._touched(inner)
                every, keys, names = every or e, keys + k, names | n
            return every, keys, names
        if event.type == "Tick":
            return False, [], set()
        if event.type in ("WorkloadAdmitted", "WorkloadEvicted", "WorkloadFinished"):
            return False, [event.workload] if event.workload else [], set()
        obj, ref = event.obj, event.ref
        if isinstance(obj, (Workload, Pod)) or (ref is not None and ref.kind in ("Workload", "Pod")):
            return False, [f"{obj.namespace}/{obj.name}" if obj is not None else f"{ref.namespace}/{ref.name}"], set()
        if isinstance(obj, ClusterQueue) or (ref is not None and ref.kind == "ClusterQueue"):
            return False, [], {obj.name if obj is not None else ref.name}
        return True, [], set()

    def feed(self, position: int, event: Event | None, error: EventError | None) -> list[Decision]:
        """Step the ``position``-th item of the branch's stream (an event, or the error of an event
        rejected when it arrived) through the driver, integrating usage up to its time first;
        returns the decisions it caused."""
        if event is None:
            self.driver.step(position, error, cluster=self.cluster)  # type: ignore[arg-type]
            return []
        state = self._state()
        clock = state.clock_ms if state is not None else event.time_ms
        self._advance(max(clock, event.time_ms))
        units = self._units(event)
        every, keys, names = self._touched(event)
        names |= self._queues_of(keys)
        decisions = self.driver.step(position, event).decisions
        self._track(units)
        if every:
            self._refresh(None)
        else:
            names |= self._queues_of(keys)
            names.update(d.cluster_queue for d in decisions if d.cluster_queue)
            names |= self._queues_of([d.workload for d in decisions])
            if names:
                self._refresh(names)
        if not decisions:
            return []
        self.decisions.extend(decisions)
        workloads = self.engine.clusters[self.cluster].workloads
        for d in decisions:
            info = workloads.get(d.workload)
            if d.kind != ADMITTED:  # preempted or evicted: back in its queue, it waits in the window again
                if info is not None and d.workload not in self.population:
                    self.population[d.workload] = (info.cluster_queue or "-", info.local_queue, d.time_ms)
                continue
            self.admitted.add(d.workload)
            if info is None:
                continue
            self.waits.append(Wait(d.workload, d.cluster_queue or "-", info.local_queue,
                                   max(0, d.time_ms - info.queued_ms), False))
        return list(decisions)

    def _queues_of(self, keys: list[str]) -> set[str]:
        """The ClusterQueues the workloads ``keys`` are queued in or admitted to, as they stand."""
        state = self._state()
        if state is None:
            return set()
        out = set()
        for key in keys:
            info = state.workloads.get(key)
            if info is not None and info.cluster_queue:
                out.add(info.cluster_queue)
        return out

    def _units(self, event: Event) -> list[tuple[str, bool]]:
        """The workload keys an event adds or admits as observed (inner events of a ``Batch`` too),
        each with whether the cluster already holds it (before the event is applied)."""
        if event.type == "Batch":
            return [unit for inner in event.events for unit in self._units(inner)]
        key = None
        if event.type == "Applied" and isinstance(event.obj, (Workload, Pod)):
            key = f"{event.obj.namespace}/{event.obj.name}"
        elif event.type == "WorkloadAdmitted":
            key = event.workload
        if key is None:
            return []
        state = self._state()
        return [(key, state is not None and key in state.workloads)]

    def _track(self, units: list[tuple[str, bool]]) -> None:
        """After an event: a new workload has entered a queue (the population); one that is no
        longer pending has been admitted (an observed admission, or admitted at its arrival)."""
        state = self._state()
        if state is None:
            return
        for key, known in units:
            info = state.workloads.get(key)
            if info is None:
                continue
            if not known and key not in self.population:
                self.population[key] = (info.cluster_queue or "-", info.local_queue, info.queued_ms)
            if key in self.population and info.status != PENDING:
                self.admitted.add(key)

    def start(self) -> None:
        """Take the workloads pending at the fork into the population (they wait in the window), and
        open the integrals at the fork when it has a time."""
        self._refresh(None)
        state = self._state()
        if state is None:
            return
        for key in sorted(state.workloads):
            info = state.workloads[key]
            if info.status == PENDING:
                self.population[key] = (info.cluster_queue or "-", info.local_queue, info.queued_ms)

    def finish(self, horizon_ms: int) -> None:
        """Integrate up to ``horizon_ms`` and count the workloads still pending there."""
        self._advance(horizon_ms)
        self._refresh(None)
        state = self._state()
        if state is None:
            return
        for key in sorted(state.workloads):
            info = state.workloads[key]
            if info.status == PENDING:
                self.waits.append(Wait(key, info.cluster_queue or "-", info.local_queue,
                                       max(0, horizon_ms - info.queued_ms), True))

    def counts(self) -> dict:
        """The window's workloads split three ways, ``submitted = admitted + pending + neverAdmitted``:
        ``admitted`` at least once in the window; ``pending``: never admitted and still waiting at
        the horizon; ``neverAdmitted``: never admitted and gone before the horizon (deleted or
        finished while waiting).  ``notAdmitted`` lists the last two kinds: ``{workload,
        clusterQueue, localQueue, queuedAt, state}`` by workload key."""
        state = self._state()
        workloads = state.workloads if state is not None else {}
        keys = set(self.population) | self.admitted
        admitted = pending = gone = 0
        listed = []
        for key in sorted(keys):
            if key in self.admitted:
                admitted += 1
                continue
            info = workloads.get(key)
            waiting = info is not None and info.status == PENDING
            if waiting:
                pending += 1
            else:
                gone += 1
            cq, lq, queued = self.population[key]
            if info is not None:
                cq, lq = info.cluster_queue or cq, info.local_queue
            listed.append({"workload": key, "clusterQueue": cq, "localQueue": lq, "queuedAt": format_time(queued),
                           "state": "pending" if waiting else "withdrawn"})
        return {"submitted": len(keys), "admitted": admitted, "pending": pending, "neverAdmitted": gone,
                "notAdmitted": listed}

    @property
    def clock_ms(self) -> int:
        state = self._state()
        return state.clock_ms if state is not None else 0


# --------------------------------------------------------------------------- comparison


def wait_stats(waits: list[Wait]) -> dict:
    """``{count, pending, p50Ms, p95Ms, maxMs}`` of some waits (``None`` values when there are none)."""
    values = sorted(w.wait_ms for w in waits)
    out: dict[str, Any] = {"count": len(values), "pending": sum(1 for w in waits if w.pending)}
    for p in PERCENTILES:
        out[f"p{p}Ms"] = percentile(values, p)
    out["maxMs"] = percentile(values, 100)
    return out


def _wait_table(base: list[Wait], whatif: list[Wait], key: str) -> list[dict]:
    groups: dict[str, tuple[list[Wait], list[Wait]]] = {}
    for side, waits in ((0, base), (1, whatif)):
        for w in waits:
            groups.setdefault(getattr(w, key), ([], []))[side].append(w)
    rows = []
    for name in sorted(groups):
        b, w = wait_stats(groups[name][0]), wait_stats(groups[name][1])
        delta = {k: (w[k] - b[k]) if w[k] is not None and b[k] is not None else None
                 for k in ("p50Ms", "p95Ms", "maxMs")}
        rows.append({"name": name, "base": b, "whatif": w, "delta": delta})
    return rows


def _decision_view(d: Decision) -> dict:
    out: dict[str, Any] = {"seq": d.seq, "time": format_time(d.time_ms), "clusterQueue": d.cluster_queue}
    if d.kind == ADMITTED:
        out["flavors"] = [dict(sorted(ps.flavors.items())) for ps in d.pod_sets or []]
        out["borrowing"] = d.borrowing
    else:
        out["reason"] = d.reason
    return out


def _differs(a: Decision, b: Decision) -> bool:
    return (a.time_ms != b.time_ms or a.cluster_queue != b.cluster_queue
            or _decision_view(a).get("flavors") != _decision_view(b).get("flavors") or a.reason != b.reason)


def decision_changes(base: list[Decision], whatif: list[Decision]) -> list[dict]:
    """Per workload and decision type, the n-th decisions matched (module docstring); only differences,
    ordered by workload, type, n."""
    grouped: dict[tuple[str, str], tuple[list[Decision], list[Decision]]] = {}
    for side, decisions in ((0, base), (1, whatif)):
        for d in decisions:
            grouped.setdefault((d.workload, d.kind), ([], []))[side].append(d)
    out = []
    for (workload, kind) in sorted(grouped):
        b, w = grouped[(workload, kind)]
        for n in range(max(len(b), len(w))):
            one, two = (b[n] if n < len(b) else None), (w[n] if n < len(w) else None)
            if one is not None and two is not None and not _differs(one, two):
                continue
            change = "added" if one is None else "removed" if two is None else "changed"
            row: dict[str, Any] = {"workload": workload, "type": kind, "n": n + 1, "change": change,
                                   "base": _decision_view(one) if one else None,
                                   "whatif": _decision_view(two) if two else None,
                                   "deltaMs": two.time_ms - one.time_ms if one and two else None}
            out.append(row)
    return out


def _ratio(num: int, den: int) -> float | None:
    return None if den == 0 else round(num / den, 6)


def utilization(base: Branch, whatif: Branch, window_ms: int) -> list[dict]:
    """Per ClusterQueue × flavor × resource: time-weighted usage over nominal quota in both branches."""
    rows = []
    for key in sorted(set(base.usage) | set(whatif.usage)):
        sides = {}
        for label, branch in (("base", base), ("whatif", whatif)):
            used, nominal = branch.usage.get(key, [0, 0])
            sides[label] = {"meanUsage": used // window_ms if window_ms else 0,
                            "meanNominal": nominal // window_ms if window_ms else 0,
                            "utilization": _ratio(used, nominal)}
        b, w = sides["base"]["utilization"], sides["whatif"]["utilization"]
        rows.append({"clusterQueue": key[0], "flavor": key[1], "resource": key[2], **sides,
                     "delta": round(w - b, 6) if b is not None and w is not None else None})
    return rows


def preemption_counts(base: list[Decision], whatif: list[Decision]) -> dict:
    """``Preempted`` decisions of both branches: ``{base, whatif, delta, clusterQueues: [{name, base,
    whatif, delta}]}``, per ClusterQueue of the victim (sorted by name; ``-`` when it had none)."""
    per: dict[str, list[int]] = {}
    for side, decisions in ((0, base), (1, whatif)):
        for d in decisions:
            if d.kind == PREEMPTED:
                per.setdefault(d.cluster_queue or "-", [0, 0])[side] += 1
    total_b = sum(b for b, _ in per.values())
    total_w = sum(w for _, w in per.values())
    return {"base": total_b, "whatif": total_w, "delta": total_w - total_b,
            "clusterQueues": [{"name": name, "base": per[name][0], "whatif": per[name][1],
                               "delta": per[name][1] - per[name][0]} for name in sorted(per)]}


@dataclass
class WhatIfReport:
    """Everything ``quotaledger whatif`` prints; ``to_json()`` is the ``--json`` output."""

    cluster: str
    fork: dict
    patch_events: int
    archived_events: int
    window: dict
    branches: dict
    decision_changes: list[dict] = field(default_factory=list)
    wait_cluster_queues: list[dict] = field(default_factory=list)
    wait_local_queues: list[dict] = field(default_factory=list)
    utilization: list[dict] = field(default_factory=list)
    preemptions: dict = field(default_factory=dict)
    closed_loop: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"cluster": self.cluster, "fork": self.fork, "patchEvents": self.patch_events,
                "archivedEvents": self.archived_events, "window": self.window, "branches": self.branches,
                "decisionChanges": self.decision_changes,
                "waitTimes": {"clusterQueues": self.wait_cluster_queues, "localQueues": self.wait_local_queues},
                "utilization": self.utilization, "preemptions": self.preemptions, "closedLoop": self.closed_loop}


def changed_only(report: dict) -> dict:
    """``report`` (``WhatIfReport.to_json()``) keeping only the rows that differ between the branches:
    wait-time rows whose count, pending count or any statistic differs, utilization rows whose
    utilization or means differ, preemption rows with a non-zero delta (``--changed-only``)."""
    out = dict(report)
    out["waitTimes"] = {k: [r for r in rows if r["base"] != r["whatif"]] for k, rows in report["waitTimes"].items()}
    out["utilization"] = [r for r in report["utilization"] if r["base"] != r["whatif"]]
    pre = dict(report["preemptions"])
    pre["clusterQueues"] = [r for r in pre.get("clusterQueues", []) if r["delta"]]
    out["preemptions"] = pre
    return out


# --------------------------------------------------------------------------- entry point


Progress = Callable[[int, int], None]
"""``progress(done, total)``: archived and patch events stepped so far of both branches."""


def whatif(url: str, patch_path: str, cluster: str | None = None, from_ms: int | None = None,
           progress: Progress | None = None) -> WhatIfReport:
    """Fork ``cluster``'s archived history at ``from_ms`` (epoch ms; ``None`` = the start), merge in the
    patch events of ``patch_path``, replay both branches and compare them (module docstring); the
    what-if branch re-simulates the finishes of workloads with a recorded run time
    (``replay.resimulate``).  ``progress`` is called now and then (``Progress``).

    Raises:
        SinkError: the database cannot be read, or holds no such cluster (or several, and none named).
        WhatIfError: a bad patch (every bad line listed).
        OSError: the patch cannot be read.
    """
    db = create_db_engine(url, read_only=True)
    run_times = RunTimes()
    try:
        with db.connect() as conn:
            cluster = stored_cluster(conn, cluster)
            # refuses a cluster with no archived events
            end = end_position(conn, cluster, None if from_ms is None else from_ms - 1, None)
            fork = 0 if from_ms is None else end
            engine, snapshot_position = restore(conn, cluster, fork)
            e = s.events.c
            for (payload,) in conn.execution_options(yield_per=2000).execute(sa.select(e.payload).where(
                    e.cluster == cluster, e.position < fork, e.status == "applied",
                    e.type.in_(("Applied", "Batch", "WorkloadFinished", "WorkloadEvicted"))).order_by(e.position)):
                run_times.read_payload(payload)
            tail = list(archived_events(conn, cluster, fork))
    except sa.exc.SQLAlchemyError as exc:
        raise SinkError(f"cannot read {redacted(url)}: {str(exc).splitlines()[0]}") from None
    finally:
        db.dispose()
    patch = read_patch(patch_path, cluster, from_ms)
    for item in tail:
        if item[0] is not None:
            run_times.read_event(item[0])
    for event in patch:
        run_times.read_event(event)
    blob = dump_snapshot(engine, [cluster]) if cluster in engine.clusters else None
    fork_clock = engine.clusters[cluster].clock_ms if cluster in engine.clusters else 0

    def branch() -> Branch:
        return Branch(load_snapshot(blob) if blob is not None else Engine(), cluster, from_ms)

    archive_end = max([fork_clock] + [item[0].time_ms for item in tail if item[0] is not None])
    horizon = max([archive_end, from_ms or 0] + [event.time_ms for event in patch])
    resim = Resimulation(cluster, run_times, horizon)
    kept = [item for item in tail if resim.keep(item[0])]
    total = len(tail) + len(kept) + len(patch)
    done = 0
    base, other = branch(), branch()
    base.start()
    other.start()
    resim.start(other._state())
    with gc_paused():  # the replays allocate much and free by reference counting (statemodel.driver)
        for position, (event, error, _) in enumerate(tail, fork):
            base.feed(position, event, error)
            done += 1
            if progress is not None and done % PROGRESS_EVERY == 0:
                progress(done, total)
        position = fork

        def step(event: Event | None, error: EventError | None) -> None:
            nonlocal position
            decisions = other.feed(position, event, error)
            position += 1
            state = other._state()
            if decisions and state is not None:
                resim.on_decisions(decisions, state.releases_on_decision())

        for event, error, _ in merge(kept, patch, fork_clock):
            if event is not None:
                for generated in resim.due(max(other.clock_ms, event.time_ms)):
                    step(generated, None)
            step(event, error)
            done += 1
            if progress is not None and done % PROGRESS_EVERY == 0:
                progress(done, total)
        for generated in resim.due(horizon + 1):
            step(generated, None)
    if progress is not None:
        progress(total, total)
    horizon = max(base.clock_ms, other.clock_ms, horizon)
    base.finish(horizon)
    other.finish(horizon)
    start = min(s_ for s_ in (base.window_start_ms, other.window_start_ms, horizon) if s_ is not None)
    window_ms = horizon - start
    branches = {}
    for label, b in (("base", base), ("whatif", other)):
        chain = b.engine.chains.get(cluster)
        branches[label] = {"decisions": len(b.decisions), "hash": chain.hex() if chain else None,
                           "end": format_time(b.clock_ms), "workloads": b.counts()}
    closed_loop = {
        "mode": "resimulated" if run_times.ms else "observed",
        "runTimes": len(run_times.ms),
        "droppedArchivedEvents": resim.dropped,
        "generatedEvents": resim.generated,
        "runningAtEnd": resim.cut,
        "heldFixed": [{"workload": h["workload"], "time": format_time(h["timeMs"])} for h in resim.held_fixed],
    }
    return WhatIfReport(
        cluster=cluster,
        fork={"from": format_time(from_ms) if from_ms is not None else None, "position": fork,
              "snapshotPosition": snapshot_position},
        patch_events=len(patch), archived_events=len(tail),
        window={"start": format_time(start), "end": format_time(horizon), "ms": window_ms},
        branches=branches,
        decision_changes=decision_changes(base.decisions, other.decisions),
        wait_cluster_queues=_wait_table(base.waits, other.waits, "cluster_queue"),
        wait_local_queues=_wait_table(base.waits, other.waits, "local_queue"),
        utilization=utilization(base, other, window_ms),
        preemptions=preemption_counts(base.decisions, other.decisions),
        closed_loop=closed_loop,
    )
