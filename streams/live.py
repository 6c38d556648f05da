"""The live view: a faust-streaming app beside the ingest worker, off its hot path.

It reads three topics (``streams.topics``) — the decisions and dead letters as faust streams, the
events with a plain consumer task of the app (``LiveView._read_events``) — and keeps, in faust tables:

- ``admissions`` and ``preemptions``: ``Admitted`` / ``Preempted`` decisions per ClusterQueue
  (``cluster/clusterQueue``; a preemption counts for the victim's ClusterQueue) per tumbling
  window of ``window_s`` seconds;
- ``dead_letters``: records of the dead-letter topic per cluster (the record key) per window;
- ``waits``: per ClusterQueue the waits of its last ``WAIT_SAMPLES`` admissions, in milliseconds:
  the ``Admitted`` decision's time minus the time the Workload was applied (read from the events
  topic, which is consumed beside the decisions: whichever of the two records arrives second
  completes the sample; at most ``MAX_UNMATCHED`` of either wait for the other);
  ``/counts.json`` gives their nearest-rank p50 / p95 / p99.

Windows are wall-clock windows of the records' Kafka timestamps (when the worker produced the
decision): the view shows what the cluster does now, minute by minute.  Records are counted in
batches (``BATCH``), a batch in the window of its last record.  The windowed tables keep
``expires_s`` of history.  Everything else about the engine — decisions, state, history — stays
in the SQL store; this view only counts what flows past.

Its web server (faust's, on ``web_host:web_port``) serves ``/`` (a small page that refreshes every
2 s), ``/counts.json`` and, through faust's Prometheus sensor, ``/metrics``.  The three topics must
have the same partition count (the ingest worker and ``produce`` create them so): faust co-partitions
a table with its source topics.
"""

from __future__ import annotations

import asyncio
import operator
from datetime import timedelta
from typing import Any

import faust
import orjson

from streams.topics import Topics

WAIT_SAMPLES = 500
"""Admissions per ClusterQueue whose waits the rolling percentiles are taken over."""

BATCH = 2000
BATCH_SECONDS = 0.5
"""Records are taken from a stream in batches of at most ``BATCH`` (or what ``BATCH_SECONDS`` brings):
a table is then written once per key per batch, not once per record — each write is a changelog
record, which costs more than reading the record itself."""

MAX_UNMATCHED = 100_000
"""Submissions without their admission yet (and admissions without their submission) kept at most;
the oldest are forgotten first."""


def percentile(values: list[int], p: int) -> int | None:
    """Nearest-rank percentile ``p`` (0 < p ≤ 100) of ``values``: the value at rank ``ceil(p/100 × n)``
    of the sorted values; ``None`` when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = -(-p * len(ordered) // 100)
    return ordered[max(rank, 1) - 1]


def _time_ms(text: Any) -> int | None:
    from statemodel.errors import EventError
    from statemodel.timefmt import parse_time

    try:
        return parse_time(text, "time")
    except EventError:
        return None


class LiveView:
    """The faust app and its tables (module docstring).

    Args:
        bootstrap: ``host:port`` of the Kafka cluster.
        topics: the installation's topic names.
        partitions: the partition count of the topics (their tables' changelogs get the same).
        web_host / web_port: where faust's web server listens.
        window_s: the length of a counting window, seconds.
        expires_s: how long a window is kept, seconds.
        app_id: the faust application id (its consumer group and changelog topic prefix).
    """

    def __init__(self, bootstrap: str, topics: Topics, partitions: int, *, web_host: str = "127.0.0.1",
                 web_port: int = 6066, window_s: int = 60, expires_s: int = 3600,
                 app_id: str = "quotaledger-live") -> None:
        self.window_s = window_s
        self.app = app = faust.App(
            app_id, broker=f"kafka://{bootstrap}", store="memory://", web_host=web_host, web_port=web_port,
            web_in_thread=False, topic_partitions=partitions, topic_replication_factor=1,
            consumer_auto_offset_reset="earliest", autodiscover=False, broker_max_poll_records=5000)
        from faust.sensors.prometheus import setup_prometheus_sensors

        setup_prometheus_sensors(app)
        raw = {"value_serializer": "raw", "key_serializer": "raw"}
        self.decisions_topic = app.topic(topics.decisions, **raw)
        self.bootstrap, self.events_topic = bootstrap, topics.events
        self.dlq_topic = app.topic(topics.dlq, **raw)
        expires = timedelta(seconds=expires_s)
        # tables written once per batch, outside any one record's iteration: their changelog partition
        # comes from the key (use_partitioner), a window from the batch's last record (apply(event=…))
        table = {"partitions": partitions, "use_partitioner": True}
        self.admissions = app.Table("admissions", default=int, **table).tumbling(window_s, expires=expires)
        self.preemptions = app.Table("preemptions", default=int, **table).tumbling(window_s, expires=expires)
        self.dead_letters = app.Table("dead-letters", default=int, **table).tumbling(window_s, expires=expires)
        self.waits = app.Table("waits", default=list, **table)
        self.queued: dict[str, int] = {}
        """``cluster/workload`` → when its Workload was (last) applied, epoch ms, until its admission
        (plain memory: only the waits derived from it are served)."""
        self.admitted: dict[str, tuple[str, int]] = {}
        """``cluster/workload`` → ``(ClusterQueue key, admission time)`` of an admission whose
        submission has not been read yet."""
        self.decisions_seen = 0
        self.events_seen = 0

        app.agent(self.decisions_topic, name="decisions")(self._on_decisions)
        app.task(self._read_events)
        app.agent(self.dlq_topic, name="dead-letters")(self._on_dead_letters)

        @app.page("/counts.json")
        async def counts_page(web: Any, request: Any) -> Any:
            return web.json(self.counts())

        @app.page("/")
        async def index_page(web: Any, request: Any) -> Any:
            return web.html(INDEX_HTML)

    async def _on_decisions(self, stream: Any) -> None:
        async for events in stream.take_events(BATCH, within=BATCH_SECONDS):
            self.decisions_seen += len(events)
            admitted: dict[str, int] = {}
            preempted: dict[str, int] = {}
            samples: dict[str, list[int]] = {}
            for event in events:
                try:
                    d = orjson.loads(event.value)
                except orjson.JSONDecodeError:
                    continue
                if not isinstance(d, dict):
                    continue
                key = f"{d.get('cluster', 'default')}/{d.get('clusterQueue') or '-'}"
                if d.get("type") == "Admitted":
                    admitted[key] = admitted.get(key, 0) + 1
                    workload = f"{d.get('cluster', 'default')}/{d.get('workload')}"
                    at = _time_ms(d.get("time"))
                    queued = self.queued.pop(workload, None)
                    if at is None:
                        continue
                    if queued is not None:
                        samples.setdefault(key, []).append(at - queued)
                    else:
                        _bounded_put(self.admitted, workload, (key, at))
                elif d.get("type") == "Preempted":
                    preempted[key] = preempted.get(key, 0) + 1
            for key, n in admitted.items():
                self.admissions[key].apply(operator.add, n, events[-1])
            for key, n in preempted.items():
                self.preemptions[key].apply(operator.add, n, events[-1])
            self._sample(samples)

    def _sample(self, samples: dict[str, list[int]]) -> None:
        """Append new waits (ms) per ClusterQueue key, keeping the last ``WAIT_SAMPLES``."""
        for key, waits in samples.items():
            self.waits[key] = (list(self.waits[key]) + waits)[-WAIT_SAMPLES:]

    async def _read_events(self) -> None:
        """Read the events topic from its start with a plain consumer (no group, no commits): only the
        Workloads' submission times are needed from it, and faust's per-record stream machinery
        (about 60 µs a record, measured) would not keep up with a topic three times the decisions'
        size.  Records without a Workload in them are not parsed."""
        from aiokafka import AIOKafkaConsumer

        consumer = AIOKafkaConsumer(self.events_topic, bootstrap_servers=self.bootstrap, group_id=None,
                                    enable_auto_commit=False, auto_offset_reset="earliest",
                                    max_partition_fetch_bytes=8 << 20, fetch_max_bytes=64 << 20)
        await consumer.start()
        try:
            while True:
                batch = await consumer.getmany(timeout_ms=500, max_records=BATCH)
                samples: dict[str, list[int]] = {}
                for records in batch.values():
                    self.events_seen += len(records)
                    for record in records:
                        if record.value is None or b'"Workload"' not in record.value:
                            continue
                        try:
                            e = orjson.loads(record.value)
                        except orjson.JSONDecodeError:
                            continue
                        if isinstance(e, dict):
                            self._note_submissions(e, _time_ms(e.get("time")), samples)
                self._sample(samples)
        finally:
            await consumer.stop()

    def _note_submissions(self, e: dict, at: int | None, samples: dict[str, list[int]]) -> None:
        """Remember when each Workload of an event (a ``Batch``'s inner events at its time) was applied,
        or — when its admission was read first — add its wait to ``samples``."""
        if at is None:
            return
        if e.get("type") == "Batch":
            for inner in e.get("events") or ():
                if isinstance(inner, dict):
                    self._note_submissions(dict(inner, cluster=e.get("cluster")), at, samples)
            return
        obj = e.get("object")
        if e.get("type") == "Applied" and isinstance(obj, dict) and obj.get("kind") == "Workload":
            meta = obj.get("metadata") or {}
            workload = f"{e.get('cluster', 'default')}/{meta.get('namespace', 'default')}/{meta.get('name')}"
            admitted = self.admitted.pop(workload, None)
            if admitted is not None:
                samples.setdefault(admitted[0], []).append(admitted[1] - at)
            else:
                _bounded_put(self.queued, workload, at)

    async def _on_dead_letters(self, stream: Any) -> None:
        async for events in stream.take_events(BATCH, within=BATCH_SECONDS):
            per_cluster: dict[str, int] = {}
            for event in events:
                key = event.key.decode("utf-8", "replace") if isinstance(event.key, bytes) else "-"
                per_cluster[key] = per_cluster.get(key, 0) + 1
            for key, n in per_cluster.items():
                self.dead_letters[key].apply(operator.add, n, events[-1])

    def counts(self) -> dict:
        """What ``/counts.json`` serves: the records read of each topic so far, per table its windows (start time in epoch seconds → count) per
        key, newest window first, and the rolling wait percentiles per ClusterQueue (ms)."""
        def windows(table: Any) -> dict[str, dict[str, int]]:
            out: dict[str, dict[str, int]] = {}
            for (key, (start, _end)), value in sorted(table.table.data.items(), key=lambda kv: (kv[0][0], -kv[0][1][0])):
                out.setdefault(key, {})[str(int(start))] = value
            return out

        waits = {key: {"count": len(samples), "p50": percentile(samples, 50), "p95": percentile(samples, 95),
                       "p99": percentile(samples, 99)}
                 for key, samples in sorted(self.waits.items())}
        return {"windowSeconds": self.window_s, "decisionsSeen": self.decisions_seen, "eventsSeen": self.events_seen,
                "admissions": windows(self.admissions), "preemptions": windows(self.preemptions),
                "deadLetters": windows(self.dead_letters), "waitsMs": waits}

    def run(self) -> None:
        """Run the app until SIGINT / SIGTERM (faust's worker, in this thread)."""
        worker = faust.Worker(self.app, loglevel="warning", quiet=True)
        worker.execute_from_commandline()


def _bounded_put(mapping: dict, key: str, value: Any) -> None:
    """``mapping[key] = value``, forgetting the oldest entry beyond ``MAX_UNMATCHED``."""
    mapping.pop(key, None)
    mapping[key] = value
    if len(mapping) > MAX_UNMATCHED:
        del mapping[next(iter(mapping))]


def topic_partitions(bootstrap: str, topics: Topics, partitions: int) -> int:
    """The partition count of the three topics, creating them (with ``partitions``) where missing.

    Raises:
        streams.admin.TopicAdminError: the broker cannot be reached, or the three topics do not have
            the same partition count (faust could not co-partition the tables with them).
    """
    from streams.admin import TopicAdminError, ensure_topics

    counts = asyncio.run(ensure_topics(bootstrap, topics, partitions))
    if len(set(counts.values())) != 1:
        raise TopicAdminError(f"the live view needs the topics to have one partition count, found {counts}")
    return next(iter(counts.values()))


INDEX_HTML = """<!doctype html>
<html><head><meta charset="utf-8"><title>quotaledger live</title>
<style>body{font:14px system-ui,sans-serif;margin:1.5em}table{border-collapse:collapse;margin:0 0 1.5em}
td,th{border-bottom:1px solid #ddd;padding:2px 10px;text-align:right}th:first-child,td:first-child{text-align:left}</style>
</head><body><h1>quotaledger live</h1><p id="meta"></p><div id="tables"></div>
<script>
function table(title, rows, head) {
  let h = "<h2>" + title + "</h2><table><tr>" + head.map(c => "<th>" + c + "</th>").join("") + "</tr>";
  for (const r of rows) h += "<tr>" + r.map(c => "<td>" + (c === null ? "-" : c) + "</td>").join("") + "</tr>";
  return h + "</table>";
}
function windows(data) {
  const starts = [...new Set(Object.values(data).flatMap(w => Object.keys(w)))].sort().reverse().slice(0, 10);
  const head = ["key"].concat(starts.map(s => new Date(s * 1000).toISOString().slice(11, 16)));
  return [Object.keys(data).sort().map(k => [k].concat(starts.map(s => data[k][s] || 0))), head];
}
async function refresh() {
  const c = await (await fetch("counts.json")).json();
  document.getElementById("meta").textContent =
    "windows of " + c.windowSeconds + " s (UTC); decisions seen: " + c.decisionsSeen;
  let h = "";
  for (const [title, key] of [["Admissions", "admissions"], ["Preemptions", "preemptions"], ["Dead letters", "deadLetters"]]) {
    const [rows, head] = windows(c[key]);
    h += table(title + " per window", rows, head);
  }
  h += table("Waits of the last admissions (s)", Object.entries(c.waitsMs).map(([k, w]) =>
    [k, w.count, w.p50 / 1000, w.p95 / 1000, w.p99 / 1000]), ["ClusterQueue", "admissions", "p50", "p95", "p99"]);
  document.getElementById("tables").innerHTML = h;
}
refresh(); setInterval(refresh, 2000);
</script></body></html>
"""
