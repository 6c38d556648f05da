"""Prometheus metrics and health endpoints of the ingest worker: an ``IngestListener``.

``IngestMetrics`` observes the worker (``streams.ingest_listener``) and keeps two groups of metrics
in its own ``prometheus_client`` registry; ``MetricsServer`` serves them with the health endpoints
(``quotaledger ingest --metrics-port``).  Nothing here is called from the engine: the worker calls
the listener at a batch applied / committed, a dead letter, a restore and a rebalance.

The worker's own metrics (``quotaledger_ingest_*``): records, decisions and dead letters committed
(counters: per second is ``rate()``), consumer lag, last committed offset and event time per
partition, batch commit latency (histogram), restores, rebalances, assigned partitions, readiness.

The engine's view, with Kueue's metric names, types and labels where the meaning is the same
(upstream ``pkg/metrics/metrics.go``, /work/shared/reference/kueue-metrics.md), each with a
``cluster`` label in front (one worker serves many clusters):

- ``kueue_pending_workloads{cluster_queue,status}``: pending workloads per ClusterQueue, ``status``
  ``active`` (in contention) or ``inadmissible`` (set aside by BestEffortFIFO until something
  changes; a StrictFIFO head that does not fit stays ``active``, as upstream requeues it);
- ``kueue_admitted_active_workloads{cluster_queue}``: workloads holding quota of the ClusterQueue;
- ``kueue_cluster_queue_resource_usage`` / ``kueue_cluster_queue_nominal_quota``
  ``{cohort,cluster_queue,flavor,resource}``: the quota model's entitlement rows (usage, nominal),
  ``cpu`` in cores and every other resource in its base unit, as upstream's ``QuantityToFloat``;
- ``kueue_admitted_workloads_total{cluster_queue,priority_class}`` and the histogram
  ``kueue_admission_wait_time_seconds{cluster_queue,priority_class}`` (buckets 1 s then 2.5·2^k s,
  upstream's ``generateExponentialBuckets(14)``): per ``Admitted`` decision, its time minus the time
  the workload (last) entered its queue, in event time; ``priority_class`` is always ``""``: the
  Workload events carry no ``priorityClassName`` (upstream reports ``""`` for a workload without one);
- ``kueue_preempted_workloads_total{preempting_cluster_queue,reason}``: per ``Preempted`` decision
  (one per victim), ``reason`` the decision's (``InClusterQueue``, ``InCohortReclamation``, ...).

After each batch, the gauges of the ClusterQueues the batch changed are set again from the state
the worker holds (queue sizes and the model's entitlement rows; no state render, no SQL): a
ClusterQueue changed when a workload the batch named (its events' and its decisions' workloads) is
queued in or holds quota of it, or its counts (pending, set aside, admitted), its spec or its cohort differ
from the last batch's — an O(1) check per ClusterQueue of the clusters the batch touched, so a
workload that left it (finished, deleted, moved) is seen too; the model's rows are read only for
the changed ones.  The counters come from the batch's decisions.  A ClusterQueue that disappears
loses its series; so do the clusters of revoked partitions (their new owner reports them).
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

from statemodel.cluster import ClusterState
from statemodel.decisions import ADMITTED, PREEMPTED, Decision
from statemodel.quota.protocol import CLUSTER_QUEUE
from streams.ingest_listener import BatchReport, IngestListener

KUEUE_WAIT_BUCKETS = (1.0, *(2.5 * 2 ** k for k in range(13)))
"""Kueue's wait-time buckets (``generateExponentialBuckets(14)``): 1 s, then 2.5 s doubling 12 times (10,240 s)."""

COMMIT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
"""Batch commit latency buckets, seconds (a 20,000-event batch commits in tenths of a second)."""

NO_PRIORITY_CLASS = ""
"""The ``priority_class`` label value: Workload events have no ``priorityClassName``."""


@dataclass(slots=True)
class _Exported:
    """What the gauges of one ClusterQueue were last set from: ``signature`` (pending, set aside and
    admitted counts, the spec object, the cohort) and its ``(cohort, flavor, resource)`` series."""

    signature: tuple
    series: set[tuple[str, str, str]]


def _quantity(resource: str, amount: int) -> float:
    """A base-unit amount as Kueue reports it: ``cpu`` (millicores here) in cores, others unchanged."""
    return amount / 1000 if resource == "cpu" else float(amount)


class IngestMetrics(IngestListener):
    """The Prometheus listener (module docstring); ``registry`` holds every metric.

    Args:
        registry: where the metrics are registered (a fresh one by default, so several workers of
            one process, as in the tests, do not collide).  ``exposition`` renders it again only
            after a listener call, so it must hold nothing else that changes.
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = r = registry if registry is not None else CollectorRegistry()
        self.ready = False
        """assigned partitions checked and consumed (``/readyz``)"""
        self.changes = 0
        """listener calls that changed a metric so far (counted at the end of each)"""
        self._rendered: tuple[int, bytes] | None = None
        self._render_lock = threading.Lock()
        self.events = Counter("quotaledger_ingest_events", "Records of the events topic committed (valid, "
                              "duplicate and rejected).", registry=r)
        self.decisions_total = Counter("quotaledger_ingest_decisions", "Decisions committed.", registry=r)
        self.dead_letters = Counter("quotaledger_ingest_dead_letters", "Records sent to the dead-letter topic "
                                    "and table (committed).", registry=r)
        self.batches = Histogram("quotaledger_ingest_batch_commit_seconds", "Seconds from a batch handed to the "
                                 "committer to its transaction committed.", buckets=COMMIT_BUCKETS, registry=r)
        self.lag = Gauge("quotaledger_ingest_consumer_lag", "Records of the partition not yet consumed "
                         "(high watermark - next offset), after the last batch.", ["partition"], registry=r)
        self.offset = Gauge("quotaledger_ingest_committed_offset", "Offset of the partition's last committed "
                            "record.", ["partition"], registry=r)
        self.event_time = Gauge("quotaledger_ingest_committed_event_time_seconds", "Event time (Unix seconds) "
                                "of the partition's last committed valid event.", ["partition"], registry=r)
        self.restores = Counter("quotaledger_ingest_restores", "Cluster engines rebuilt from the store "
                                "(snapshot + archived tail).", registry=r)
        self.restore_seconds = Counter("quotaledger_ingest_restore_seconds", "Seconds spent rebuilding cluster "
                                       "engines from the store.", registry=r)
        self.rebalances = Counter("quotaledger_ingest_rebalances", "Partition assignments and revocations.",
                                  ["change"], registry=r)
        self.assigned = Gauge("quotaledger_ingest_assigned_partitions", "Partitions of the events topic "
                              "assigned to this worker.", registry=r)
        self.ready_gauge = Gauge("quotaledger_ingest_ready", "1 once the assigned partitions are checked and "
                                 "consumed, else 0.", registry=r)
        cq = ["cluster", "cluster_queue"]
        res = ["cluster", "cohort", "cluster_queue", "flavor", "resource"]
        self.pending = Gauge("kueue_pending_workloads", "Pending workloads per ClusterQueue and status "
                             "(active, inadmissible).", [*cq, "status"], registry=r)
        self.admitted_active = Gauge("kueue_admitted_active_workloads", "Admitted workloads holding quota of "
                                     "the ClusterQueue.", cq, registry=r)
        self.usage = Gauge("kueue_cluster_queue_resource_usage", "Quota the ClusterQueue's admitted workloads "
                           "use (cpu in cores, other resources in base units).", res, registry=r)
        self.nominal = Gauge("kueue_cluster_queue_nominal_quota", "The ClusterQueue's nominal quota (cpu in "
                             "cores, other resources in base units).", res, registry=r)
        self.admitted_total = Counter("kueue_admitted_workloads", "Admitted workloads per ClusterQueue.",
                                      [*cq, "priority_class"], registry=r)
        self.wait = Histogram("kueue_admission_wait_time_seconds", "Event-time seconds from a workload "
                              "entering its queue to its admission.", [*cq, "priority_class"],
                              buckets=KUEUE_WAIT_BUCKETS, registry=r)
        self.preempted = Counter("kueue_preempted_workloads", "Workloads preempted, per preempting "
                                 "ClusterQueue and reason.", ["cluster", "preempting_cluster_queue", "reason"],
                                 registry=r)
        self._assigned: set[int] = set()
        self._exported: dict[str, dict[str, _Exported]] = {}
        """cluster -> ClusterQueue -> what its gauges were last set from"""
        self.ready_gauge.set(0)

    # -- the worker ---------------------------------------------------------------------------

    def partitions_assigned(self, partitions: Sequence[int]) -> None:
        self._assigned.update(partitions)
        self.assigned.set(len(self._assigned))
        self.rebalances.labels("assigned").inc()
        self._set_ready(False)
        self.changes += 1

    def partitions_revoked(self, partitions: Sequence[int], clusters: Sequence[str]) -> None:
        self._assigned.difference_update(partitions)
        self.assigned.set(len(self._assigned))
        self.rebalances.labels("revoked").inc()
        self._set_ready(False)
        for p in partitions:
            for gauge in (self.lag, self.offset, self.event_time):
                try:
                    gauge.remove(str(p))
                except KeyError:
                    pass
        for cluster in clusters:
            for name, exported in self._exported.pop(cluster, {}).items():
                self._drop_cluster_queue(cluster, name, exported.series)
        self.changes += 1

    def partitions_checked(self, partitions: Sequence[int]) -> None:
        self._set_ready(True)
        self.changes += 1

    def restored(self, cluster: str, partition: int, position: int, seconds: float) -> None:
        self.restores.inc()
        self.restore_seconds.inc(seconds)
        self.changes += 1

    def batch_applied(self, report: BatchReport, states: Mapping[str, ClusterState],
                      decisions: Sequence[Decision], workloads: Mapping[str, Collection[str]]) -> None:
        for p, progress in report.partitions.items():
            self.lag.labels(str(p)).set(progress.lag)
        for cluster, state in states.items():
            # the workloads the batch named include every decision's: their ClusterQueues changed
            # (``map`` does the look-ups in C: tens of thousands of workloads a batch)
            queues = {queue for info in map(state.workloads.get, workloads.get(cluster, ()))
                      if info is not None and (queue := info.cluster_queue) is not None}
            self._cluster_queues(cluster, state, queues)
        # gathered per label set first: a ``labels()`` look-up costs several times an ``observe()``
        admitted: dict[tuple[str, str], list[int]] = {}
        preempted: dict[tuple[str, str, str], int] = {}
        for d in decisions:
            kind = d.kind
            if kind == ADMITTED:
                cluster = d.cluster
                waits = admitted.get((cluster, d.cluster_queue or ""))
                if waits is None:
                    waits = admitted[(cluster, d.cluster_queue or "")] = []
                state = states.get(cluster)
                info = state.workloads.get(d.workload) if state is not None else None
                at = d.time_ms
                # -1: not observed, the workload re-entered its queue later in the batch
                waits.append(at - info.queued_ms if info is not None and info.queued_ms <= at else -1)
            elif kind == PREEMPTED:
                key = (d.cluster, d.preemptor_cluster_queue or "", d.reason or "")
                preempted[key] = preempted.get(key, 0) + 1
        for (cluster, queue), waits in admitted.items():
            self.admitted_total.labels(cluster, queue, NO_PRIORITY_CLASS).inc(len(waits))
            histogram = self.wait.labels(cluster, queue, NO_PRIORITY_CLASS)
            for wait_ms in waits:
                if wait_ms >= 0:
                    histogram.observe(wait_ms / 1000)
        for labels, n in preempted.items():
            self.preempted.labels(*labels).inc(n)
        self.changes += 1

    def batch_committed(self, report: BatchReport) -> None:
        self.events.inc(report.records)
        self.decisions_total.inc(report.decisions)
        self.dead_letters.inc(report.dead_letters)
        self.batches.observe(report.commit_seconds)
        for p, progress in report.partitions.items():
            self.offset.labels(str(p)).set(progress.next_offset - 1)
            if progress.event_time_ms is not None:
                self.event_time.labels(str(p)).set(progress.event_time_ms / 1000)
        self.changes += 1

    def exposition(self) -> bytes:
        """The registry in Prometheus' text format.  Rendered again only when a listener call changed
        a metric since the last rendering (a rendering costs about 10 ms for a thousand series: scrapes
        between two batches — several Prometheus servers, a scrape interval shorter than a batch —
        share one).  ``changes`` is read before rendering and counted at the end of each call, so a
        rendering that overlapped a call is done again at the next scrape."""
        with self._render_lock:
            changes = self.changes
            if self._rendered is None or self._rendered[0] != changes:
                self._rendered = (changes, generate_latest(self.registry))
            return self._rendered[1]

    # -- the engine's view --------------------------------------------------------------------

    def _cluster_queues(self, cluster: str, state: ClusterState, named: set[str]) -> None:
        """Set the gauges of the ClusterQueues of ``cluster`` that changed (module docstring) from its
        state; drop the series of the ClusterQueues (and flavor × resource pairs) that are gone."""
        hierarchy, model, queues, admitted = state.hierarchy, state.model, state.queues, state.admitted
        before = self._exported.get(cluster, {})
        now: dict[str, _Exported] = {}
        for name, entry in hierarchy.cluster_queues.items():
            queue = queues.get(name)
            members = len(queue.members) if queue is not None else 0
            parked = len(queue.parked) if queue is not None else 0
            holding = len(admitted.get(name, ()))
            cohort = entry.cohort_name or ""
            signature = (members, parked, holding, entry.spec, cohort)
            old = before.get(name)
            if old is not None and name not in named and old.signature == signature:
                now[name] = old
                continue
            self.pending.labels(cluster, name, "active").set(members - parked)
            self.pending.labels(cluster, name, "inadmissible").set(parked)
            self.admitted_active.labels(cluster, name).set(holding)
            series = set()
            for row in model.entitlements(CLUSTER_QUEUE, name):
                self.usage.labels(cluster, cohort, name, row.flavor, row.resource).set(
                    _quantity(row.resource, row.usage))
                self.nominal.labels(cluster, cohort, name, row.flavor, row.resource).set(
                    _quantity(row.resource, row.nominal))
                series.add((cohort, row.flavor, row.resource))
            for gone in (old.series - series) if old is not None else ():
                for gauge in (self.usage, self.nominal):
                    gauge.remove(cluster, gone[0], name, gone[1], gone[2])
            now[name] = _Exported(signature, series)
        for name in set(before) - set(now):
            self._drop_cluster_queue(cluster, name, before[name].series)
        self._exported[cluster] = now

    def _drop_cluster_queue(self, cluster: str, name: str, series: set[tuple[str, str, str]]) -> None:
        """Remove the gauges of one ClusterQueue (deleted, or its cluster went to another worker)."""
        for status in ("active", "inadmissible"):
            self.pending.remove(cluster, name, status)
        self.admitted_active.remove(cluster, name)
        for cohort, flavor, resource in series:
            for gauge in (self.usage, self.nominal):
                gauge.remove(cluster, cohort, name, flavor, resource)

    def _set_ready(self, ready: bool) -> None:
        self.ready = ready
        self.ready_gauge.set(1 if ready else 0)


class MetricsServer:
    """An HTTP server in a daemon thread: ``/metrics`` (``metrics.exposition()``, Prometheus text format),
    ``/healthz`` (200 while the process serves) and ``/readyz`` (200 once ``metrics.ready``, else 503).

    Args:
        metrics: the listener whose registry and readiness are served.
        host / port: where to listen (port 0: any free port, see ``port``).

    Raises:
        OSError: the address cannot be bound.
    """

    def __init__(self, metrics: IngestMetrics, host: str, port: int) -> None:
        handler = type("Handler", (_Handler,), {"metrics": metrics})
        self.server = ThreadingHTTPServer((host, port), handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, name="metrics-http", daemon=True)

    def start(self) -> None:
        """Serve in the background."""
        self.thread.start()

    def close(self) -> None:
        """Stop serving and release the port."""
        self.server.shutdown()
        self.server.server_close()


class _Handler(BaseHTTPRequestHandler):
    metrics: IngestMetrics

    def do_GET(self) -> None:  # noqa: N802 - the http.server name
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            self._reply(HTTPStatus.OK, self.metrics.exposition(), CONTENT_TYPE_LATEST)
        elif path == "/healthz":
            self._reply(HTTPStatus.OK, b"ok\n")
        elif path == "/readyz":
            if self.metrics.ready:
                self._reply(HTTPStatus.OK, b"ready\n")
            else:
                self._reply(HTTPStatus.SERVICE_UNAVAILABLE, b"not ready: partitions not assigned and checked yet\n")
        else:
            self._reply(HTTPStatus.NOT_FOUND, b"not found: /metrics, /healthz, /readyz\n")

    def _reply(self, status: HTTPStatus, body: bytes, content_type: str = "text/plain; charset=utf-8") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the http.server signature
        """No access log (scrapes every few seconds would drown the worker's own lines)."""
