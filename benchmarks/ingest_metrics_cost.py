"""What metrics and logs cost the ingest worker, without broker or database: the numbers behind
docs/benchmarks.md "Metrics and logs on".

Reads an event file (``--events``, default the DLRM simulation of ``kafka_ingest.py``) and, best of
``--passes`` (CPU time, ``time.process_time``):

- **apply**: decode and apply every record through ``statemodel.driver.Driver`` in batches of
  ``--max-batch``, gathering each batch's decisions and the workloads its steps named — what the
  worker hands its listeners (the worker's own cost per event is several times this: archive rows,
  projections, the hand-off to the committer, ``ingest_profile.py``);
- **listeners**: after each batch, ``batch_applied`` and ``batch_committed`` of the two listeners of
  ``quotaledger ingest --metrics-port N --log-format json`` (``streams.ingest_metrics.IngestMetrics``
  and ``streams.ingest_log.IngestLog`` writing JSON lines to memory), with the engines as the batch
  left them — the per-event cost of metrics and logs;
- **rendering**: one ``/metrics`` exposition of the registry after the last batch (series written,
  ms), and a scrape that finds nothing changed since the last rendering (ms of this process's CPU;
  the scraping client is another process, as Prometheus is).

A rendering happens at most once per scrape, and only after a batch changed something: at a scrape
interval of S seconds it costs at most rendering ms / S of a core, whatever the event rate.

    .venv/bin/python benchmarks/ingest_metrics_cost.py
    .venv/bin/python benchmarks/ingest_metrics_cost.py --events benchmarks/out/kueue-scale-1000.ndjson
"""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
import time
from collections.abc import Collection

from kafka_setup import add_common_arguments, event_file

from statemodel.decisions import Decision
from statemodel.driver import Driver
from statemodel.engine import Engine
from statemodel.limits import MAX_EVENT_BYTES
from streams.codec import decode_record
from streams.ingest import DEFAULT_MAX_BATCH
from streams.ingest_listener import BatchReport, PartitionProgress
from streams.ingest_log import IngestLog, configure
from streams.ingest_metrics import IngestMetrics, MetricsServer

CLIENT = """
import sys, urllib.request
for _ in range(int(sys.argv[2])):
    with urllib.request.urlopen(sys.argv[1], timeout=5) as response:
        response.read()
"""
"""The scraping client, run as a process of its own."""


def one_pass(lines: list[bytes], max_batch: int) -> tuple[float, float, IngestMetrics]:
    """CPU seconds of applying ``lines`` and of the listeners' calls after each batch; the metrics."""
    driver = Driver(Engine())
    metrics = IngestMetrics()
    log = IngestLog(configure("json", io.StringIO()))
    applying = listening = 0.0
    for start in range(0, len(lines), max_batch):
        began = time.process_time()
        decisions: list[Decision] = []
        named: dict[str, set[str]] = {}
        for offset, line in enumerate(lines[start:start + max_batch], start):
            step = driver.step(offset, decode_record(line, MAX_EVENT_BYTES), line)
            decisions += step.decisions
            if step.cluster is not None:
                named.setdefault(step.cluster, set()).update(step.workload_keys())
        clusters = driver.engine.clusters
        states = {c: clusters[c] for c in sorted(named) if c in clusters}
        workloads: dict[str, Collection[str]] = dict(named)
        end = min(start + max_batch, len(lines))
        report = BatchReport(end - start, len(decisions), 0, {0: PartitionProgress(end, len(lines) - end, None)},
                             commit_seconds=0.05)
        applied = time.process_time()
        for listener in (log, metrics):
            listener.batch_applied(report, states, decisions, workloads)
            listener.batch_committed(report)
        listening += time.process_time() - applied
        applying += applied - began
    return applying, listening, metrics


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_arguments(parser)
    parser.add_argument("--max-batch", type=int, default=DEFAULT_MAX_BATCH, help="records per batch (the worker's)")
    parser.add_argument("--passes", type=int, default=3, help="best of this many passes (default 3)")
    parser.add_argument("--scrapes", type=int, default=50, help="scrapes timed for the unchanged case")
    args = parser.parse_args()
    path = event_file(args)
    lines = [line for line in path.read_bytes().splitlines() if line.strip()]
    print(f"events: {path} ({len(lines):,} records, batches of {args.max_batch:,})")

    best: tuple[float, float, IngestMetrics] | None = None
    for _ in range(args.passes):
        result = one_pass(lines, args.max_batch)
        if best is None or result[0] + result[1] < best[0] + best[1]:
            best = result
    assert best is not None
    applying, listening, metrics = best

    renders = []
    for _ in range(args.passes * 5):
        metrics.changes += 1  # as a listener call would: the next exposition renders again
        began = time.process_time()
        body = metrics.exposition()
        renders.append(time.process_time() - began)
    series = sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))
    server = MetricsServer(metrics, "127.0.0.1", 0)
    server.start()
    try:
        began = time.process_time()
        subprocess.run([sys.executable, "-c", CLIENT, f"http://127.0.0.1:{server.port}/metrics", str(args.scrapes)],
                       check=True)
        cached = (time.process_time() - began) / args.scrapes
    finally:
        server.close()

    n = len(lines)
    render_ms = min(renders) * 1000
    print(f"apply (decode + engine, decisions and named workloads gathered): {applying * 1e6 / n:.1f} µs/event")
    print(f"listeners (metrics + JSON log) after each batch: {listening * 1e6 / n:.2f} µs/event, "
          f"{listening / applying:.1%} of apply")
    print(f"/metrics rendering: {render_ms:.1f} ms for {series:,} series ({len(body):,} bytes); "
          f"a scrape with nothing changed: {cached * 1000:.2f} ms")
    for every in (15.0, 1.0):
        print(f"  scraped every {every:g} s: at most {render_ms / 1000 / every:.2%} of a core")


if __name__ == "__main__":
    main()
