"""``quotaledger watch --bootstrap`` end to end: a Kubernetes API (kmock, tests/kubehelpers.py) →
the watcher → the events topic of the dev broker → ``ingest`` → the SQL store.

The store must hold exactly the events the watcher produced (by id, in order, all applied) and the
state those objects mean: the workloads served, with the statuses their Kueue conditions say.
"""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import orjson

from statemodel import sql_schema as s
from streams.devbroker import DEV_SESSION_TIMEOUT_MS
from streams.ingest import run_ingest
from streams.kube.kinds import kinds_for
from streams.kube.sink import KafkaSink
from streams.kube.watcher import KubeApi, Watcher, load_client
from streams.topics import Topics
from tests.ingesthelpers import read_topic, rows
from tests.kubehelpers import FakeApi

KINDS = kinds_for("kueue")
BY = {spec.kind: spec for spec in KINDS if spec.group in ("", "kueue.x-k8s.io")}
CLUSTER = "kmock-kafka"


def test_watch_to_kafka_to_ingest_into_sql(kafka_bootstrap: str, db: str, tmp_path: Path) -> None:
    topics = Topics(f"w{uuid.uuid4().hex[:10]}")
    cq = {"metadata": {"name": "team-a"}, "spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
        {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "4"}]}]}]}}

    def wl(name: str) -> dict:
        return {"metadata": {"name": name, "namespace": "ml"},
                "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 2, "requests": {"cpu": "1"}}]}}

    with FakeApi([BY["ResourceFlavor"], BY["ClusterQueue"], BY["LocalQueue"], BY["Workload"]]) as api:
        api.create(BY["ResourceFlavor"], {"metadata": {"name": "default"}, "spec": {}})
        api.create(BY["ClusterQueue"], cq)
        api.create(BY["LocalQueue"], {"metadata": {"name": "lq", "namespace": "ml"}, "spec": {"clusterQueue": "team-a"}})
        api.create(BY["Workload"], wl("a"))
        sink = KafkaSink(kafka_bootstrap, CLUSTER, topics, partitions=1)
        watcher = Watcher(KubeApi(load_client(str(api.kubeconfig(tmp_path / "kc")), None), watch_timeout=30),
                          KINDS, CLUSTER, sink, tmp_path / "state.json", state_every=0)
        stop = threading.Event()
        thread = threading.Thread(target=watcher.run, args=(stop,), daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while sink.lines < 1:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        api.wait_watching([BY["Workload"]])
        api.create(BY["Workload"], wl("b"))
        api.patch(BY["Workload"], {"name": "a", "namespace": "ml"}, {"status": {"conditions": [
            {"type": "Finished", "status": "True", "reason": "JobFinished", "lastTransitionTime": "2030-01-01T00:00:00Z"}]}})
        while sink.lines < 3:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        stop.set()
        thread.join(10)
        sink.close()

    produced = read_topic(kafka_bootstrap, topics.events, 3)
    assert [r.key for r in produced] == [CLUSTER.encode()] * 3
    values = [orjson.loads(r.value) for r in produced]
    assert [v["type"] for v in values] == ["Batch", "Applied", "WorkloadFinished"]

    stats = run_ingest(kafka_bootstrap, db, topics=topics, session_timeout_ms=DEV_SESSION_TIMEOUT_MS,
                       handle_signals=False, exit_when_idle=1.0)
    assert (stats.consumed, stats.applied, stats.rejected) == (3, 3, 0)
    events = rows(db, s.events)
    assert [(e["event_id"], e["status"]) for e in events] == [(v["id"], "applied") for v in values]
    # a (2 cpu) was admitted by the engine at the sync and finished; b (2 cpu) was admitted too
    workloads = {w["key"]: w["status"] for w in rows(db, s.workloads)}
    assert workloads == {"ml/a": "Finished", "ml/b": "Admitted"}
