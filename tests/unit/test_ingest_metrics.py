"""The ingest worker's listeners (streams/ingest_metrics.py, streams/ingest_log.py) fed by hand:
a small Kueue cluster driven through the engine, the metrics read back from the registry.

Expected values are worked out from the events: ClusterQueue ``team-a`` has 4 cpu (nominal) in
flavor ``default``; ``w1`` asks 3 cpu at 10:00:00 and is admitted at once (wait 0 s); ``w2`` asks
2 cpu at 10:00:10 and does not fit (3 + 2 > 4): BestEffortFIFO sets it aside (``inadmissible``);
``w1`` finishes at 10:01:40 and ``w2`` is admitted then (wait 90 s).
"""

from __future__ import annotations

import io
import logging
import urllib.error
import urllib.request

import orjson
import pytest

from statemodel.driver import Driver
from statemodel.engine import Engine
from streams.codec import decode_record
from streams.ingest_listener import BatchReport, DeadLetter, Listeners, PartitionProgress
from streams.ingest_log import DEAD_LETTER_LINES, IngestLog, configure
from streams.ingest_metrics import IngestMetrics, MetricsServer

KUEUE = "kueue.x-k8s.io/v1beta2"


def _event(i: int, time: str, **body: object) -> bytes:
    return orjson.dumps({"id": f"e-{i}", "time": f"2026-03-02T{time}Z", "cluster": "c1", "v": 1, **body})


def _applied(i: int, time: str, kind: str, meta: dict, spec: dict) -> bytes:
    return _event(i, time, type="Applied", object={"apiVersion": KUEUE, "kind": kind, "metadata": meta, "spec": spec})


def _workload(i: int, time: str, name: str, cpu: str) -> bytes:
    return _applied(i, time, "Workload", {"namespace": "ns", "name": name},
                    {"queueName": "lq", "priority": 0,
                     "podSets": [{"name": "main", "count": 1, "requests": {"cpu": cpu}}]})


FIRST = [
    _applied(1, "10:00:00", "ResourceFlavor", {"name": "default"}, {}),
    _applied(2, "10:00:00", "ClusterQueue", {"name": "team-a"},
             {"cohortName": "org", "queueingStrategy": "BestEffortFIFO",
              "resourceGroups": [{"coveredResources": ["cpu"],
                                  "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": "4"}]}]}]}),
    _applied(3, "10:00:00", "LocalQueue", {"namespace": "ns", "name": "lq"}, {"clusterQueue": "team-a"}),
    _workload(4, "10:00:00", "w1", "3"),
    _workload(5, "10:00:10", "w2", "2"),
]
SECOND = [_event(6, "10:01:40", type="WorkloadFinished", workload="ns/w1")]


def _batch(driver: Driver, lines: list[bytes], first_offset: int) -> tuple[list, dict[str, set[str]]]:
    """Apply ``lines``; their decisions and the workload keys they named (as the worker hands them on)."""
    decisions, keys = [], set()
    for offset, line in enumerate(lines, first_offset):
        step = driver.step(offset, decode_record(line, 1 << 20), line)
        decisions += step.decisions
        keys |= step.workload_keys()
    return decisions, {"c1": keys}


def _value(metrics: IngestMetrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def test_engine_view_follows_the_batches() -> None:
    metrics = IngestMetrics()
    driver = Driver(Engine())
    cq = {"cluster": "c1", "cluster_queue": "team-a"}
    res = {**cq, "cohort": "org", "flavor": "default", "resource": "cpu"}
    wait = {**cq, "priority_class": ""}

    decisions, named = _batch(driver, FIRST, 0)
    metrics.batch_applied(BatchReport(5, len(decisions), 0, {0: PartitionProgress(5, 7, 0)}),
                          {"c1": driver.engine.clusters["c1"]}, decisions, named)
    assert _value(metrics, "kueue_pending_workloads", **cq, status="active") == 0
    assert _value(metrics, "kueue_pending_workloads", **cq, status="inadmissible") == 1
    assert _value(metrics, "kueue_admitted_active_workloads", **cq) == 1
    assert _value(metrics, "kueue_cluster_queue_nominal_quota", **res) == 4.0
    assert _value(metrics, "kueue_cluster_queue_resource_usage", **res) == 3.0
    assert _value(metrics, "kueue_admitted_workloads_total", **wait) == 1
    assert _value(metrics, "kueue_admission_wait_time_seconds_count", **wait) == 1
    assert _value(metrics, "kueue_admission_wait_time_seconds_sum", **wait) == 0.0
    assert _value(metrics, "quotaledger_ingest_consumer_lag", partition="0") == 7

    decisions, named = _batch(driver, SECOND, 5)
    metrics.batch_applied(BatchReport(1, len(decisions), 0, {0: PartitionProgress(6, 0, 0)}),
                          {"c1": driver.engine.clusters["c1"]}, decisions, named)
    assert _value(metrics, "kueue_pending_workloads", **cq, status="inadmissible") == 0
    assert _value(metrics, "kueue_pending_workloads", **cq, status="active") == 0
    assert _value(metrics, "kueue_admitted_active_workloads", **cq) == 1
    assert _value(metrics, "kueue_cluster_queue_resource_usage", **res) == 2.0
    assert _value(metrics, "kueue_admitted_workloads_total", **wait) == 2
    assert _value(metrics, "kueue_admission_wait_time_seconds_sum", **wait) == 90.0
    assert _value(metrics, "kueue_admission_wait_time_seconds_bucket", **wait, le="80.0") == 1
    assert _value(metrics, "kueue_admission_wait_time_seconds_bucket", **wait, le="160.0") == 2
    assert _value(metrics, "quotaledger_ingest_consumer_lag", partition="0") == 0

    # the partition goes to another worker: its clusters' gauges go with it, the counters stay
    metrics.partitions_revoked([0], ["c1"])
    assert _value(metrics, "kueue_pending_workloads", **cq, status="active") is None
    assert _value(metrics, "kueue_cluster_queue_resource_usage", **res) is None
    assert _value(metrics, "quotaledger_ingest_consumer_lag", partition="0") is None
    assert _value(metrics, "kueue_admitted_workloads_total", **wait) == 2


def test_a_deleted_cluster_queue_loses_its_series() -> None:
    metrics = IngestMetrics()
    driver = Driver(Engine())
    lines = FIRST[:3]
    _, named = _batch(driver, lines, 0)
    metrics.batch_applied(BatchReport(3, 0, 0), {"c1": driver.engine.clusters["c1"]}, [], named)
    cq = {"cluster": "c1", "cluster_queue": "team-a"}
    assert _value(metrics, "kueue_admitted_active_workloads", **cq) == 0
    deleted = _event(9, "10:00:01", type="Deleted",
                     object={"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": "team-a"}})
    _, named = _batch(driver, [deleted], 3)
    metrics.batch_applied(BatchReport(1, 0, 0), {"c1": driver.engine.clusters["c1"]}, [], named)
    assert _value(metrics, "kueue_admitted_active_workloads", **cq) is None
    assert _value(metrics, "kueue_cluster_queue_nominal_quota", **cq, cohort="org", flavor="default",
                  resource="cpu") is None


def test_a_workload_gone_from_the_state_still_updates_its_cluster_queue() -> None:
    """A deleted workload is no longer in the state, so its ClusterQueue is not found from its key:
    the changed pending count gives it away."""
    metrics = IngestMetrics()
    driver = Driver(Engine())
    decisions, named = _batch(driver, FIRST, 0)
    state = driver.engine.clusters["c1"]
    metrics.batch_applied(BatchReport(5, len(decisions), 0), {"c1": state}, decisions, named)
    cq = {"cluster": "c1", "cluster_queue": "team-a"}
    assert _value(metrics, "kueue_pending_workloads", **cq, status="inadmissible") == 1
    deleted = _event(7, "10:00:20", type="Deleted",
                     object={"apiVersion": KUEUE, "kind": "Workload", "metadata": {"namespace": "ns", "name": "w2"}})
    decisions, named = _batch(driver, [deleted], 5)
    assert decisions == [] and "ns/w2" not in state.workloads
    metrics.batch_applied(BatchReport(1, 0, 0), {"c1": state}, decisions, named)
    assert _value(metrics, "kueue_pending_workloads", **cq, status="inadmissible") == 0
    assert _value(metrics, "kueue_cluster_queue_resource_usage", **cq, cohort="org", flavor="default",
                  resource="cpu") == 3.0


def test_committed_batches_count_and_progress() -> None:
    metrics = IngestMetrics()
    metrics.batch_committed(BatchReport(10, 4, 2, {1: PartitionProgress(10, 0, 1_772_445_600_000)},
                                        apply_seconds=0.02, commit_seconds=0.03))
    metrics.batch_committed(BatchReport(5, 1, 0, {1: PartitionProgress(15, 0, None)}, commit_seconds=0.2))
    assert _value(metrics, "quotaledger_ingest_events_total") == 15
    assert _value(metrics, "quotaledger_ingest_decisions_total") == 5
    assert _value(metrics, "quotaledger_ingest_dead_letters_total") == 2
    assert _value(metrics, "quotaledger_ingest_committed_offset", partition="1") == 14
    # a batch without a valid event keeps the event time of the last one
    assert _value(metrics, "quotaledger_ingest_committed_event_time_seconds", partition="1") == 1_772_445_600
    assert _value(metrics, "quotaledger_ingest_batch_commit_seconds_count") == 2
    assert _value(metrics, "quotaledger_ingest_batch_commit_seconds_bucket", le="0.05") == 1
    metrics.restored("c1", 1, 100, 0.5)
    assert _value(metrics, "quotaledger_ingest_restores_total") == 1


def test_the_exposition_is_rendered_again_only_after_a_listener_call() -> None:
    metrics = IngestMetrics()
    first = metrics.exposition()
    assert metrics.exposition() is first  # a second scrape before any change: the same rendering
    metrics.batch_committed(BatchReport(3, 1, 0, {0: PartitionProgress(3, 0, None)}, commit_seconds=0.01))
    second = metrics.exposition()
    assert second is not first
    assert b"quotaledger_ingest_events_total 3.0" in second and b"quotaledger_ingest_events_total 0.0" in first
    assert metrics.exposition() is second
    metrics.partitions_assigned([0])
    assert b"quotaledger_ingest_assigned_partitions 1.0" in metrics.exposition()


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_server_readiness_follows_assignment_and_check() -> None:
    metrics = IngestMetrics()
    server = MetricsServer(metrics, "127.0.0.1", 0)
    server.start()
    base = f"http://127.0.0.1:{server.port}"
    try:
        assert _get(base + "/healthz")[0] == 200
        assert _get(base + "/readyz")[0] == 503
        metrics.partitions_assigned([0, 1])
        assert _get(base + "/readyz")[0] == 503  # assigned, log under the offsets not checked yet
        metrics.partitions_checked([0, 1])
        assert _get(base + "/readyz")[0] == 200
        status, text = _get(base + "/metrics")
        assert status == 200
        assert "quotaledger_ingest_assigned_partitions 2.0" in text
        assert "quotaledger_ingest_ready 1.0" in text
        metrics.partitions_revoked([1], [])
        assert _get(base + "/readyz")[0] == 503
        assert _get(base + "/nothing")[0] == 404
    finally:
        server.close()


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_log_lines(fmt: str) -> None:
    out = io.StringIO()
    log = IngestLog(configure(fmt, out))
    listeners = Listeners([log, IngestMetrics()])
    listeners.partitions_assigned([0])
    listeners.dead_letter(DeadLetter(0, 17, "value is not valid JSON", ""))
    listeners.restored("c1", 0, 1200, 0.25)
    listeners.batch_committed(BatchReport(20, 3, 1, {0: PartitionProgress(21, 5, None)},
                                          apply_seconds=0.01, commit_seconds=0.002))
    lines = out.getvalue().splitlines()
    assert len(lines) == 4
    if fmt == "json":
        parsed = [orjson.loads(line) for line in lines]
        assert [p["event"] for p in parsed] == ["rebalance", "dead_letter", "restore", "batch"]
        assert parsed[0]["partitions"] == [0] and parsed[0]["change"] == "assigned"
        assert (parsed[1]["offset"], parsed[1]["reason"], parsed[1]["level"]) == (17, "value is not valid JSON", "warning")
        assert (parsed[2]["cluster"], parsed[2]["events"], parsed[2]["ms"]) == ("c1", 1200, 250.0)
        batch = parsed[3]
        assert (batch["events"], batch["decisions"], batch["dead_letters"], batch["lag"], batch["ms"]) == (20, 3, 1, 5, 12.0)
        assert batch["offsets"] == {"0": 21}
    else:
        assert lines[1] == 'WARNING quotaledger.ingest: dead letter partition=0 offset=17 reason="value is not valid JSON" field_path=""'
        assert lines[3] == ("INFO quotaledger.ingest: batch committed events=20 decisions=3 dead_letters=1 lag=5 "
                            "ms=12.0 offsets=0:21")
    logging.getLogger("quotaledger.ingest").handlers.clear()


def test_progress_line_replaces_batch_lines_on_a_terminal() -> None:
    out, terminal = io.StringIO(), io.StringIO()
    log = IngestLog(configure("text", out), progress=terminal)
    log.batch_applied(BatchReport(20, 3, 0, apply_seconds=0.01), {}, [], {})
    log.batch_committed(BatchReport(20, 3, 0, {0: PartitionProgress(20, 0, None)}, apply_seconds=0.01))
    log.dead_letter(DeadLetter(0, 20, "bad", "type"))
    log.close()
    assert out.getvalue().count("\n") == 1  # only the dead letter
    assert terminal.getvalue().startswith("\ringest: 20 events, 3 decisions, ")
    assert terminal.getvalue().endswith("\r")  # cleared before the dead letter's line; nothing left to end
    logging.getLogger("quotaledger.ingest").handlers.clear()


def test_a_flood_of_dead_letters_is_logged_as_the_first_ones_and_a_count() -> None:
    out = io.StringIO()
    log = IngestLog(configure("json", out))
    for offset in range(DEAD_LETTER_LINES + 25):
        log.dead_letter(DeadLetter(0, offset, "unknown type", "type"))
    log.batch_applied(BatchReport(DEAD_LETTER_LINES + 25, 0, DEAD_LETTER_LINES + 25), {}, [], {})
    log.dead_letter(DeadLetter(0, 99, "unknown type", "type"))  # the next batch logs its own again
    parsed = [orjson.loads(line) for line in out.getvalue().splitlines()]
    assert [p["offset"] for p in parsed if p["event"] == "dead_letter"] == [*range(DEAD_LETTER_LINES), 99]
    assert [p["count"] for p in parsed if p["event"] == "dead_letters_not_shown"] == [25]
    logging.getLogger("quotaledger.ingest").handlers.clear()
