"""``quotaledger ingest --metrics-port``: a real worker (dev broker, SQLite and PostgreSQL) scraped
while it runs; what ``/metrics`` says is checked against what the store holds, ``/readyz`` against
the assignment, and the JSON log lines against both."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter

import orjson
from prometheus_client.parser import text_string_to_metric_families

from statemodel import sql_schema as s
from streams.devbroker import DEV_SESSION_TIMEOUT_MS
from streams.topics import Topics
from tests.ingesthelpers import keyed, produce, rows
from tests.paths import ROOT

EXAMPLE = ROOT / "replay" / "examples" / "two-teams.ndjson"
BAD_KNOWN = (b"ml-east", b'{"id": "bad-1", "cluster": "ml-east", "type": ')  # not JSON; its cluster has state
BAD_UNKNOWN = (b"nowhere", b'{"id": "bad-2", "cluster": "nowhere", "type": "Nope", "v": 1}')


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError:
        return 0, ""


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def _value(samples: dict, name: str, **labels: str) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


def test_metrics_during_a_run_match_the_store(kafka_bootstrap: str, db: str) -> None:
    lines = [line for line in EXAMPLE.read_bytes().splitlines() if line.strip()]
    records = keyed(lines)
    records = records[:20] + [BAD_KNOWN] + records[20:] + [BAD_UNKNOWN]
    prefix = f"t{uuid.uuid4().hex[:10]}"
    produce(kafka_bootstrap, Topics(prefix).events, records)
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [sys.executable, "-c", "from quotaledger.cli import app; app()", "ingest", "--bootstrap", kafka_bootstrap,
         "--db", db, "--topic-prefix", prefix, "--session-timeout-ms", str(DEV_SESSION_TIMEOUT_MS),
         "--max-batch", "8", "--metrics-port", str(port), "--log-format", "json"],
        stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        ready = None
        samples: dict = {}
        while time.monotonic() < deadline and proc.poll() is None:
            status, _ = _get(base + "/readyz")
            if status == 200 and ready is None:
                ready = time.monotonic()
            status, text = _get(base + "/metrics")
            if status == 200:
                samples = _samples(text)
                if _value(samples, "quotaledger_ingest_events_total") == len(records):
                    break
            time.sleep(0.1)
        assert proc.poll() is None, proc.communicate()[1]
        assert ready is not None, "never ready"
        assert _get(base + "/healthz")[0] == 200
        assert _value(samples, "quotaledger_ingest_ready") == 1

        # the worker's own counters: what the store holds
        assert _value(samples, "quotaledger_ingest_events_total") == len(records)
        offsets = rows(db, s.ingest_offsets)
        assert sum(r["next_offset"] for r in offsets) == len(records)
        for r in offsets:
            assert _value(samples, "quotaledger_ingest_committed_offset", partition=str(r["topic_partition"])) \
                == r["next_offset"] - 1
            assert _value(samples, "quotaledger_ingest_consumer_lag", partition=str(r["topic_partition"])) == 0
        assert _value(samples, "quotaledger_ingest_dead_letters_total") == len(rows(db, s.dead_letters)) == 2
        decisions = rows(db, s.decisions)
        assert _value(samples, "quotaledger_ingest_decisions_total") == len(decisions)
        batches = _value(samples, "quotaledger_ingest_batch_commit_seconds_count")
        assert batches is not None and batches >= len(records) // 8

        # the engine's view, per ClusterQueue: what the projections say
        queues = rows(db, s.cluster_queues)
        assert queues
        for q in queues:
            cq = {"cluster": q["cluster"], "cluster_queue": q["name"]}
            pending = (_value(samples, "kueue_pending_workloads", **cq, status="active")
                       + _value(samples, "kueue_pending_workloads", **cq, status="inadmissible"))
            assert pending == q["pending_workloads"], q
            assert _value(samples, "kueue_admitted_active_workloads", **cq) == q["admitted_workloads"], q
        assert sum(q["pending_workloads"] for q in queues) > 0  # the example leaves workloads waiting
        for quota in rows(db, s.quotas, s.quotas.c.node_kind == "cluster_queue"):
            cohort = next(q["cohort"] for q in queues if q["name"] == quota["node_name"]) or ""
            labels = {"cluster": quota["cluster"], "cohort": cohort, "cluster_queue": quota["node_name"],
                      "flavor": quota["flavor"], "resource": quota["resource"]}
            scale = 1000 if quota["resource"] == "cpu" else 1
            assert _value(samples, "kueue_cluster_queue_nominal_quota", **labels) == quota["nominal"] / scale
            assert _value(samples, "kueue_cluster_queue_resource_usage", **labels) == quota["usage"] / scale
        admitted = Counter((d["cluster"], d["cluster_queue"]) for d in decisions if d["type"] == "Admitted")
        assert admitted
        for (cluster, queue), n in admitted.items():
            labels = {"cluster": cluster, "cluster_queue": queue, "priority_class": ""}
            assert _value(samples, "kueue_admitted_workloads_total", **labels) == n
            assert _value(samples, "kueue_admission_wait_time_seconds_count", **labels) == n
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err

    # the log: a JSON object per line, then the summary
    logged = [orjson.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert err.splitlines()[-1].startswith("ingest: consumed")
    assert sum(e["events"] for e in logged if e["event"] == "batch") == len(records)
    letters = [e for e in logged if e["event"] == "dead_letter"]
    assert sorted(e["offset"] for e in letters) == sorted(r["source_position"] for r in rows(db, s.dead_letters))
    assert all(e["reason"] for e in letters)
    assert any(e["event"] == "rebalance" and e["change"] == "assigned" for e in logged)
