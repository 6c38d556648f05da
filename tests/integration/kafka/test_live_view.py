"""The faust live view (``quotaledger live``) fed by a real broker: the windowed counts per
ClusterQueue, the dead letters per cluster and the rolling waits it serves, worked out from the
records produced."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import orjson
from aiokafka import AIOKafkaProducer

from streams.devbroker import free_port
from streams.topics import Topics
from tests.scenario.builder import Scenario

PREFIX = "livetest"


def _history() -> Scenario:
    """ClusterQueue q (2 cpu) in cluster lab: w1 and w2 (1 cpu each) are admitted on arrival at 1 s and
    2 s; w3 (applied at 11 s) waits until w1 finishes at 31 s (a 20 s wait); p (1 cpu) admits w4 at 3 s."""
    s = Scenario("lab")
    s.flavor("default", at=0)
    s.cq("q", quotas={"cpu": "2"}, at=0)
    s.cq("p", quotas={"cpu": "1"}, at=0)
    s.lq("ns/q", "q", at=0)
    s.lq("ns/p", "p", at=0)
    s.submit("ns/w1", "q", cpu="1", at=1)
    s.submit("ns/w2", "q", cpu="1", at=2)
    s.submit("ns/w4", "p", cpu="1", at=3)
    s.submit("ns/w3", "q", cpu="1", at=11)
    s.finish("ns/w1", at=31)
    s.run()
    return s


async def _produce(bootstrap: str, s: Scenario) -> None:
    topics = Topics(PREFIX)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for event in s.events:
            await producer.send_and_wait(topics.events, orjson.dumps(event), key=b"lab")
        for decision in s.decisions:
            await producer.send_and_wait(topics.decisions, orjson.dumps(decision), key=b"lab")
        for garbage in (b"{not json", b"[]"):
            await producer.send_and_wait(topics.dlq, garbage, key=b"lab")
    finally:
        await producer.stop()


def test_the_live_view_serves_windowed_counts_and_waits(kafka_bootstrap: str, tmp_path: Path) -> None:
    s = _history()
    assert [(d["type"], d["workload"]) for d in s.decisions] == [
        ("Admitted", "ns/w1"), ("Admitted", "ns/w2"), ("Admitted", "ns/w4"), ("Admitted", "ns/w3")]
    port = free_port()
    log = (tmp_path / "live.log").open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "quotaledger.cli", "live", "--bootstrap", kafka_bootstrap,
                             "--topic-prefix", PREFIX, "--web-port", str(port), "--app-id", f"live-{port}"],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        asyncio.run(_produce(kafka_bootstrap, s))
        counts, deadline = None, time.monotonic() + 150  # a consumer group's first join takes ~30 s on the dev broker
        while time.monotonic() < deadline:
            assert proc.poll() is None, (tmp_path / "live.log").read_text()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/counts.json", timeout=5) as response:
                    counts = orjson.loads(response.read())
            except OSError:
                counts = None
            if counts and counts["decisionsSeen"] == 4 and sum(
                    n for per in counts["deadLetters"].values() for n in per.values()) == 2:
                break
            time.sleep(1)
        assert counts is not None, (tmp_path / "live.log").read_text()
        admitted = {key: sum(per.values()) for key, per in counts["admissions"].items()}
        assert admitted == {"lab/q": 3, "lab/p": 1}
        assert counts["preemptions"] == {}
        assert {key: sum(per.values()) for key, per in counts["deadLetters"].items()} == {"lab": 2}
        # waits: w1 0 s, w2 0 s, w3 20 s (applied at 11 s, admitted at 31 s) in q; w4 0 s in p
        assert counts["waitsMs"] == {"lab/p": {"count": 1, "p50": 0, "p95": 0, "p99": 0},
                                     "lab/q": {"count": 3, "p50": 0, "p95": 20_000, "p99": 20_000}}
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as response:
            assert b"quotaledger live" in response.read()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            assert f"live_{port}_consumer_commit_latency".encode() in response.read()  # faust's sensor, named after the app
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
