"""Closed-loop simulator: replays a trace's job list through the engine under a quota config and
writes the whole history as a normal EVENTS.md NDJSON file.

The loop (as Armada's simulator, ``internal/scheduler/simulator``: one heap ordered by
``(time, sequence)``, so events at equal times keep the order they were created in, and the
trace's own row order for submissions):

1. At the trace start: the configuration (``QuotaConfig.objects``: EngineConfig, Topologies,
   flavors, cohorts, ClusterQueues, LocalQueues), then the trace's ``Topology`` objects the
   configuration lacks (a loaded quota folder), then its ``Node`` objects, then every
   *preexisting* job (running before the trace began) as a Workload carrying
   ``status.admission`` — an observed admission that holds quota as given.
2. Each job is submitted at its trace time (a Workload ``Applied`` event, one podSet ``main``
   with per-pod ``requests``, and the job's run time as the annotation ``quotaledger.io/run-time``
   when the trace gives one: ``replay.sim.run_time``, what ``quotaledger whatif`` re-simulates with).
3. When the engine admits a workload (an ``Admitted`` decision), its ``WorkloadFinished`` is
   scheduled at admission time + its recorded run time.  A job with no run time (still running
   at the trace end) never finishes by itself.  A
   job that never started in the real cluster has a deletion time instead: then it is withdrawn
   (``Deleted``) if still pending, or finished if the simulated cluster admitted it.  An
   ``Evicted``/``Preempted`` decision cancels the scheduled finish; the next admission schedules
   a new one with the full run time (a preempted run is lost work: the job restarts, as a batch
   job without checkpoints does).  With ``EngineConfig`` ``spec.preemption.releaseOn: Eviction``
   the simulator is also the job controller that stops a preempted job: a ``WorkloadEvicted``
   (reason ``Preempted``) of the victim follows at the decision's time, which releases its quota
   (docs/preemption.md "releaseOn").
4. A ``Tick`` at every multiple of ``tick_ms`` (epoch-aligned, the AFS sampling grid) up to the
   horizon, applied before other events at the same instant.
5. The horizon.  With ``until_ms``, nothing later is written: jobs whose finish lies past it are
   *cut* (``SimulationResult.cut``).  Without it, no job is submitted after the trace end, but the
   run goes on until every scheduled finish has happened (jobs that waited finish their run time
   after their admission, even past the trace end; ticks continue meanwhile): the horizon is then
   the later of the trace end and the last event.  With ``finish_at_horizon``, every job still
   running at the horizon (no run time, or a finish past ``until_ms``) gets a ``WorkloadFinished``
   at the horizon, in trace order.

Every event is written as the exact bytes the engine decoded, so replaying the file with a fresh
``Engine`` gives the same decisions and hash (``tests/unit/test_simulator.py``).  Event ids are unique
and say what they are: ``config/<Kind>/<name>``, ``node/<name>``, ``submit/<ns>/<name>``,
``finish/<ns>/<name>[/<n>]``, ``withdraw/<ns>/<name>``, ``evict/<ns>/<name>/<n>``, ``tick/<n>``; times
are epoch ms.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import orjson

from replay.sim.importers.jobs import ImportResult, Job, quantity_string, slug
from replay.sim.manifests import QuotaConfig
from replay.sim.run_time import run_time_annotation
from statemodel.driver import Driver, StepResult, gc_paused
from statemodel.engine import Engine

__all__ = ["SimulationResult", "simulate", "DEFAULT_TICK_MS"]

API = "kueue.x-k8s.io/v1beta2"
POD_QUOTA_LABEL = "quota.scheduling.koordinator.sh/name"
POD_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
VOLCANO_API = "scheduling.volcano.sh/v1beta1"
KAI_TOPOLOGY = "kai.scheduler/topology"
DEFAULT_TICK_MS = 300_000
"""Tick interval: 5 minutes, Kueue's default ``usageSamplingInterval``."""

_SUBMIT, _FINISH, _WITHDRAW, _EVICT = 0, 1, 2, 3


@dataclass
class SimulationResult:
    """Counters of one simulation.

    Attributes:
        events: lines written (every event, configuration included).
        config_events / nodes: configuration objects and Node objects applied at the start.
        submitted: Workloads submitted at their trace time; preadmitted: preexisting jobs loaded
            as observed admissions.
        admitted: ``Admitted`` decisions; finished: ``WorkloadFinished`` events; withdrawn:
            never-started jobs deleted while still pending; ticks: ``Tick`` events.
        evicted: ``Evicted`` + ``Preempted`` decisions; preempted: ``Preempted`` decisions alone;
            evictions: ``WorkloadEvicted`` events the simulator wrote for preempted jobs
            (``releaseOn: Eviction``); decisions: all decisions.
        pending_at_end / running_at_end: workloads still pending / admitted at the horizon.
        cut: jobs with a run time still running at the horizon (their finish lies past
            ``until_ms``), counted before ``finish_at_horizon`` finishes them.
        unroutable: jobs whose LocalQueue the configuration does not define (they stay pending).
        hash: the engine's state hash after the last event.
        seconds: wall time (reporting only).
        start_ms / until_ms: simulated span (``until_ms``: the horizon, module docstring step 5).
        admitted_at: workload key (``ns/name``) → first simulated admission time, ms.
        job_of: workload key → the job.
    """

    events: int = 0
    config_events: int = 0
    nodes: int = 0
    submitted: int = 0
    preadmitted: int = 0
    admitted: int = 0
    finished: int = 0
    withdrawn: int = 0
    ticks: int = 0
    evicted: int = 0
    preempted: int = 0
    evictions: int = 0
    decisions: int = 0
    pending_at_end: int = 0
    running_at_end: int = 0
    unroutable: int = 0
    cut: int = 0
    hash: str = ""
    seconds: float = 0.0
    start_ms: int = 0
    until_ms: int = 0
    admitted_at: dict[str, int] = field(default_factory=dict, repr=False)
    job_of: dict[str, Job] = field(default_factory=dict, repr=False)

    def summary(self) -> str:
        """One line of counts and the hash."""
        return (f"{self.events} events ({self.config_events} config, {self.nodes} nodes, {self.preadmitted} preadmitted, "
                f"{self.submitted} submitted, {self.finished} finished, {self.withdrawn} withdrawn, {self.ticks} ticks); "
                f"{self.admitted} admitted, {self.evicted} evicted ({self.preempted} preempted); at the end {self.running_at_end} running, "
                f"{self.pending_at_end} pending" + (f" ({self.cut} cut by the horizon before their run time ended)"
                                                   if self.cut else "") + f"; hash {self.hash}")


def workload_object(job: Job, namespace: str, queue: str, admission: dict | None = None) -> dict:
    """The Kueue ``Workload`` of a job: one podSet ``main`` with ``count`` pods and per-pod ``requests``
    (quantity strings), ``spec.priority`` when the job has one, the run-time annotation when the
    trace gives a run time (``replay.sim.run_time``); with ``admission``, ``status.admission`` (an
    observed admission).  A job's topology request (``Job.topology``) is written Kueue's way, as the
    podSet's ``topologyRequest`` (``{"required": <level label>}`` or ``{"preferred": …}``), or KAI's,
    as the annotations ``kai.scheduler/topology`` (the Topology's name) and
    ``kai.scheduler/topology-required-placement`` / ``-preferred-placement`` (the level label)."""
    meta: dict = {"name": slug(job.id), "namespace": namespace}
    annotations = run_time_annotation(job.run_ms) if job.run_ms is not None else {}
    pod_set: dict = {"name": "main", "count": job.count, "requests": {r: quantity_string(r, a) for r, a in job.requests}}
    topo = job.topology
    if topo is not None and topo.style == "kai":
        annotations = {**annotations, KAI_TOPOLOGY: topo.topology, f"{KAI_TOPOLOGY}-{topo.mode}-placement": topo.level}
    elif topo is not None:
        pod_set["topologyRequest"] = {topo.mode: topo.level}
    if annotations:
        meta["annotations"] = annotations
    obj = {"apiVersion": API, "kind": "Workload", "metadata": meta, "spec": {"queueName": queue, "podSets": [pod_set]}}
    if job.priority is not None:
        obj["spec"]["priority"] = job.priority
    if admission is not None:
        obj["status"] = {"admission": admission}
    return obj


def pod_object(job: Job, namespace: str, quota: str, bound: bool = False) -> dict:
    """The ``v1`` Pod of a job under the ``koordinator`` model: labelled with its quota, requesting
    the job's total (``count`` pods × per-pod requests: the job is one unit, as a gang); ``bound``
    (a job already running when the trace starts): ``spec.nodeName`` ``observed``, an observed
    binding charged as given.  The run-time annotation as on a Workload (``workload_object``)."""
    spec: dict = {"containers": [{"name": "main", "resources": {"requests": {
        r: quantity_string(r, a) for r, a in sorted(job.total().items())}}}]}
    if bound:
        spec["nodeName"] = "observed"
    meta: dict = {"name": slug(job.id), "namespace": namespace, "labels": {POD_QUOTA_LABEL: quota}}
    if job.run_ms is not None:
        meta["annotations"] = run_time_annotation(job.run_ms)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def pod_group_objects(job: Job, namespace: str, queue: str, bound: bool = False) -> list[dict]:
    """The Volcano ``PodGroup`` of a job under the ``volcano`` model (``minMember`` 1, ``minResources``
    the job's total, in queue ``queue``) and its one ``v1`` Pod asking for that total (the job is one
    unit, as under ``koordinator``), both named like the job; ``bound``: the pod is bound to node
    ``observed`` (a job already running when the trace starts)."""
    total = {r: quantity_string(r, a) for r, a in sorted(job.total().items())}
    name = slug(job.id)
    spec: dict = {"containers": [{"name": "main", "resources": {"requests": total}}]}
    if job.priority is not None:
        spec["priority"] = job.priority
    if bound:
        spec["nodeName"] = "observed"
    return [{"apiVersion": VOLCANO_API, "kind": "PodGroup", "metadata": {"name": name, "namespace": namespace},
             "spec": {"queue": queue, "minMember": 1, "minResources": total}},
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace,
                                                             "annotations": {POD_GROUP_ANNOTATION: name}},
             "spec": spec}]


def _submission(model: str, job: Job, namespace: str, queue: str, key: str, at: int, cluster: str,
                bound: bool = False, admission: dict | None = None) -> dict:
    """The event submitting a job under ``model``: a Workload, a Pod, or a PodGroup and its Pod in one
    ``Batch``."""
    head = {"id": f"submit/{key}", "time": at, "cluster": cluster}
    if model == "volcano":
        group, pod = pod_group_objects(job, namespace, queue, bound)
        return {**head, "type": "Batch", "events": [{"id": f"submit/{key}/group", "type": "Applied", "object": group},
                                                    {"id": f"submit/{key}/pod", "type": "Applied", "object": pod}]}
    unit = pod_object(job, namespace, queue, bound) if model == "koordinator" else \
        workload_object(job, namespace, queue, admission)
    return {**head, "type": "Applied", "object": unit}


def _withdrawal(model: str, key: str, at: int, cluster: str) -> dict:
    """The event deleting a pending job's unit under ``model``."""
    ns, name = key.split("/", 1)
    meta = {"name": name, "namespace": ns}
    head = {"id": f"withdraw/{key}", "time": at, "cluster": cluster}
    if model == "volcano":
        return {**head, "type": "Batch", "events": [
            {"id": f"withdraw/{key}/pod", "type": "Deleted", "object": {"apiVersion": "v1", "kind": "Pod",
                                                                          "metadata": meta}},
            {"id": f"withdraw/{key}/group", "type": "Deleted", "object": {"apiVersion": VOLCANO_API,
                                                                            "kind": "PodGroup", "metadata": meta}}]}
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta} if model == "koordinator" else \
        {"apiVersion": API, "kind": "Workload", "metadata": meta}
    return {**head, "type": "Deleted", "object": obj}


def simulate(trace: ImportResult, quota: QuotaConfig, out: str | Path | BinaryIO, *,
             until_ms: int | None = None, tick_ms: int = DEFAULT_TICK_MS, finish_at_horizon: bool = False,
             progress: Callable[[int], None] | None = None, engine: Engine | None = None,
             on_decision: Callable[[object], None] | None = None,
             on_step: Callable[[StepResult], None] | None = None) -> SimulationResult:
    """Run the closed loop (module docstring) and write the event file.

    Args:
        trace: the imported trace (jobs in trace order, span, nodes).
        quota: the quota configuration (generated or loaded).
        out: path of the NDJSON file to write, or a binary stream.
        until_ms: horizon, epoch ms; nothing later is written (default: run until every
            scheduled finish has happened, module docstring step 5).
        tick_ms: Tick interval in ms (``0`` = no ticks).
        finish_at_horizon: finish the jobs still running at the horizon there.
        progress: called now and then with the current simulated time (ms).
        engine: the engine to drive (default: a fresh one).
        on_decision: called with every ``statemodel.decisions.Decision``, in order.
        on_step: called with the ``statemodel.driver.StepResult`` of every event written, in order
            (its ``position`` is the event's 1-based line in the output).

    Returns:
        the :class:`SimulationResult`.

    Raises:
        statemodel.errors.EventError: the configuration or a job gives an invalid event (a bug
            or an invalid user manifest; the message names the field).
        OSError: the output cannot be written.
    """
    driver = Driver(engine)
    engine = driver.engine
    model = quota.model
    pods = model != "kueue"
    res = SimulationResult(start_ms=trace.trace_start_ms)
    horizon = trace.trace_end_ms if until_ms is None else until_ms  # no submission after it
    last = [trace.trace_start_ms]  # time of the last event written
    cluster = trace.name
    stream: BinaryIO
    close = False
    if isinstance(out, (str, Path)):
        stream = open(out, "wb")
        close = True
    else:
        stream = out
    write = stream.write
    dumps = orjson.dumps
    feed = driver.feed

    def emit(event: dict) -> tuple:
        line = dumps(event)
        write(line + b"\n")
        last[0] = event["time"]
        res.events += 1
        step = feed(res.events, line)
        if step.rejection is not None:
            raise step.rejection
        if on_step is not None:
            on_step(step)
        decisions = step.decisions
        if decisions:
            res.decisions += len(decisions)
            if on_decision is not None:
                for d in decisions:
                    on_decision(d)
        return decisions

    heap: list[tuple[int, int, int, int, int]] = []  # (time, seq, kind, job index, generation)
    seq = 0
    keys: list[str] = []
    queues: list[tuple[str, str]] = []
    index_of: dict[str, int] = {}
    state: dict[str, str] = {}        # key → "pending" | "admitted" | "done"
    generation: dict[str, int] = {}
    finishes: dict[str, int] = {}
    evictions: dict[str, int] = {}

    def schedule(at: int, kind: int, i: int, gen: int = 0) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(heap, (at, seq, kind, i, gen))

    def on_decisions(decisions: tuple, now: int) -> None:
        for d in decisions:
            key = d.workload
            i = index_of.get(key)
            if i is None:
                continue
            if d.kind == "Admitted":
                res.admitted += 1
                state[key] = "admitted"
                res.admitted_at.setdefault(key, now)
                gen = generation[key] = generation.get(key, 0) + 1
                job = trace.jobs[i]
                if job.run_ms is not None:
                    schedule(now + job.run_ms, _FINISH, i, gen)
            else:  # Evicted / Preempted: back to the queue, the scheduled finish is void
                res.evicted += 1
                state[key] = "pending"
                generation[key] = generation.get(key, 0) + 1
                if d.kind == "Preempted":
                    res.preempted += 1
                    if not engine.clusters[cluster].releases_on_decision():
                        schedule(now, _EVICT, i, generation[key])  # the job stops: its eviction is observed

    started = time.perf_counter()
    with gc_paused():
        try:
            t0 = trace.trace_start_ms
            for obj in quota.objects:
                meta = obj.get("metadata") or {}
                name = f"{meta['namespace']}/{meta['name']}" if obj.get("kind") == "LocalQueue" else meta.get("name")
                emit({"id": f"config/{obj.get('kind')}/{name}", "time": t0, "cluster": cluster, "type": "Applied", "object": obj})
                res.config_events += 1
            configured = {o["metadata"]["name"] for o in quota.objects if o.get("kind") == "Topology"}
            for topo in trace.topologies:  # a loaded quota folder may lack the inventory's Topology
                if topo["metadata"]["name"] not in configured:
                    emit({"id": f"config/Topology/{topo['metadata']['name']}", "time": t0, "cluster": cluster,
                          "type": "Applied", "object": topo})
                    res.config_events += 1
            for node in trace.nodes:
                emit({"id": f"node/{node['metadata']['name']}", "time": t0, "cluster": cluster, "type": "Applied", "object": node})
                res.nodes += 1
            for i, job in enumerate(trace.jobs):
                ns, lq = quota.local_queue(job)
                key = f"{ns}/{slug(job.id)}"
                keys.append(key)
                queues.append((ns, lq))
                index_of[key] = i
                res.job_of[key] = job
                if not quota.has_local_queue((ns, lq)):
                    res.unroutable += 1
            for i, job in enumerate(trace.jobs):
                if job.preexisting and job.submit_ms <= horizon:
                    admission = quota.admission(job)
                    if not (pods and quota.has_local_queue(queues[i])) and admission is None:
                        schedule(job.submit_ms, _SUBMIT, i)  # cannot be pre-admitted under this config
                        continue
                    key = keys[i]
                    emit(_submission(model, job, *queues[i], key, job.submit_ms, cluster, True, admission))
                    res.preadmitted += 1
                    state[key] = "admitted"
                    res.admitted_at[key] = job.submit_ms
                    generation[key] = 1
                    if job.run_ms is not None:
                        schedule(job.submit_ms + job.run_ms, _FINISH, i, 1)
                elif job.submit_ms <= horizon:
                    schedule(job.submit_ms, _SUBMIT, i)
            next_tick = (t0 // tick_ms + 1) * tick_ms if tick_ms > 0 else None
            n_ticks = 0
            counter = 0
            while True:
                at = heap[0][0] if heap else None
                # ticks: up to the next event, and without one up to the horizon
                bounds = [b for b in (at, until_ms) if b is not None]
                if next_tick is not None and next_tick <= (min(bounds) if bounds else horizon):
                    n_ticks += 1
                    on_decisions(emit({"id": f"tick/{n_ticks}", "time": next_tick, "cluster": cluster, "type": "Tick"}), next_tick)
                    res.ticks += 1
                    next_tick += tick_ms
                    continue
                if at is None or (until_ms is not None and at > until_ms):
                    break
                at, _, kind, i, gen = heapq.heappop(heap)
                key = keys[i]
                job = trace.jobs[i]
                if kind == _SUBMIT:
                    state[key] = "pending"
                    decisions = emit(_submission(model, job, *queues[i], key, at, cluster))
                    res.submitted += 1
                    if job.run_ms is None and job.delete_ms is not None:
                        schedule(max(job.delete_ms, at), _WITHDRAW, i)
                    on_decisions(decisions, at)
                elif kind == _FINISH:
                    if generation.get(key) != gen or state.get(key) != "admitted":
                        continue
                    n = finishes[key] = finishes.get(key, 0) + 1
                    state[key] = "done"
                    decisions = emit({"id": f"finish/{key}" + (f"/{n}" if n > 1 else ""), "time": at, "cluster": cluster,
                                      "type": "WorkloadFinished", "workload": key})
                    res.finished += 1
                    on_decisions(decisions, at)
                elif kind == _EVICT:
                    n = evictions[key] = evictions.get(key, 0) + 1
                    decisions = emit({"id": f"evict/{key}/{n}", "time": at, "cluster": cluster,
                                      "type": "WorkloadEvicted", "workload": key, "reason": "Preempted"})
                    res.evictions += 1
                    on_decisions(decisions, at)
                else:  # withdraw: deleted in the trace; finished if running, removed if pending
                    if state.get(key) == "admitted":
                        state[key] = "done"
                        decisions = emit({"id": f"finish/{key}", "time": at, "cluster": cluster,
                                          "type": "WorkloadFinished", "workload": key})
                        res.finished += 1
                    elif state.get(key) == "pending":
                        state[key] = "done"
                        decisions = emit(_withdrawal(model, key, at, cluster))
                        res.withdrawn += 1
                    else:
                        continue
                    on_decisions(decisions, at)
                counter += 1
                if progress is not None and counter % 2000 == 0:
                    progress(at)
            end = until_ms if until_ms is not None else max(horizon, last[0])
            running = [i for i, key in enumerate(keys) if state.get(key) == "admitted"]
            res.cut = sum(1 for i in running if trace.jobs[i].run_ms is not None)
            if finish_at_horizon:
                for i in running:
                    key = keys[i]
                    n = finishes[key] = finishes.get(key, 0) + 1
                    state[key] = "done"
                    on_decisions(emit({"id": f"finish/{key}" + (f"/{n}" if n > 1 else ""), "time": end,
                                       "cluster": cluster, "type": "WorkloadFinished", "workload": key}), end)
                    res.finished += 1
        finally:
            if close:
                stream.close()
    res.seconds = time.perf_counter() - started
    res.pending_at_end = sum(1 for s in state.values() if s == "pending")
    res.running_at_end = sum(1 for s in state.values() if s == "admitted")
    res.hash = engine.hash
    res.until_ms = end
    if progress is not None:
        progress(end)
    return res
