"""Throughput of the live view (``quotaledger live``, faust-streaming) against the rate the engine
decides at, in one run on the same history.

1. takes ``--events FILE`` or simulates ``--trace`` (default: the closed-loop DLRM simulation) and
   produces it to fresh topics; replays the file through the engine (``replay.runner.run_file``,
   engine only: the fastest the ingest worker could ever decide) and produces its decisions to the
   decisions topic as the worker would;
2. starts ``quotaledger live`` on those topics and polls ``/counts.json`` until it has read every
   event and decision, timing from the first record it reports to the last (start-up and the
   consumer group's join excluded);
3. prints the live view's records/s and decisions/s next to the engine's events/s and decisions/s,
   both per wall-clock second and per CPU second of the view's process (``/proc``: on a shared
   machine the wall clock measures the other jobs as much as the view).  The view keeps up when it
   reads decisions (and the events beside them) at least as fast as the engine produces them.

    .venv/bin/python benchmarks/live_view.py                       # dev broker, DLRM simulation
    .venv/bin/python benchmarks/live_view.py --bootstrap localhost:9092 --events FILE
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
import urllib.request

import orjson
from kafka_setup import add_common_arguments, broker, event_file, produce, quotaledger_exe

from replay.runner import run_file
from streams.devbroker import free_port


async def produce_decisions(bootstrap: str, topic: str, decisions: list[dict]) -> None:
    """The decisions as the worker publishes them: JSON value, key = cluster."""
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=20, max_batch_size=1 << 20)
    await producer.start()
    try:
        for d in decisions:
            await producer.send(topic, orjson.dumps(d), key=str(d.get("cluster", "default")).encode())
        await producer.flush()
    finally:
        await producer.stop()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far (Linux ``/proc``)."""
    import os

    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_arguments(parser)
    parser.add_argument("--timeout", type=float, default=900, help="seconds to wait for the view (default 900)")
    args = parser.parse_args()
    path = event_file(args)
    decisions: list[dict] = []
    started = time.perf_counter()
    cpu_before = time.process_time()
    _, result = run_file(str(path), on_decision=lambda d: decisions.append(d.to_json()))
    engine_s = time.perf_counter() - started
    engine_cpu = time.process_time() - cpu_before
    print(f"engine only: {result.lines:,} events, {len(decisions):,} decisions in {engine_s:.2f} s "
          f"({result.lines / engine_s:,.0f} events/s, {len(decisions) / engine_s:,.0f} decisions/s; "
          f"per CPU second: {len(decisions) / engine_cpu:,.0f} decisions)")
    with broker(args.bootstrap) as bootstrap:
        topics, events = produce(path, bootstrap, args.partitions)
        asyncio.run(produce_decisions(bootstrap, topics.decisions, decisions))
        port = free_port()
        proc = subprocess.Popen([quotaledger_exe(), "live", "--bootstrap", bootstrap, "--topic-prefix", topics.prefix,
                                 "--web-port", str(port), "--app-id", f"{topics.prefix}-live"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            first = last = None
            cpu_first = cpu_last = 0.0
            seen = (0, 0)
            deadline = time.monotonic() + args.timeout
            while time.monotonic() < deadline and seen != (events, len(decisions)):
                if proc.poll() is not None:
                    raise SystemExit(f"quotaledger live exited: {proc.stderr.read().decode()[-2000:]}")
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/counts.json", timeout=10) as response:
                        counts = orjson.loads(response.read())
                except OSError:
                    time.sleep(0.5)
                    continue
                now = time.perf_counter()
                seen = (counts["eventsSeen"], counts["decisionsSeen"])
                if first is None and any(seen):
                    first, cpu_first = now, cpu_seconds(proc.pid)
                last, cpu_last = now, cpu_seconds(proc.pid)
                time.sleep(0.25)
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    if first is None or last is None or seen != (events, len(decisions)):
        raise SystemExit(f"the view read {seen} of {(events, len(decisions))} (events, decisions) in time")
    live_s = max(last - first, 1e-9)
    live_cpu = max(cpu_last - cpu_first, 1e-9)
    print(f"live view: {events:,} events + {len(decisions):,} decisions in {live_s:.2f} s "
          f"({(events + len(decisions)) / live_s:,.0f} records/s, {len(decisions) / live_s:,.0f} decisions/s) "
          f"— {len(decisions) / live_s / (len(decisions) / engine_s):.2f} × the engine's decision rate")
    print(f"  per CPU second: {(events + len(decisions)) / live_cpu:,.0f} records, {len(decisions) / live_cpu:,.0f} "
          f"decisions ({live_cpu:.2f} CPU s) — {len(decisions) / live_cpu / (len(decisions) / engine_cpu):.2f} × the "
          f"engine's decisions per CPU second")


if __name__ == "__main__":
    sys.exit(main())
