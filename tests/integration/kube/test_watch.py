"""``quotaledger watch`` against a real HTTP Kubernetes API: kmock's emulator on a loopback port
(tests/kubehelpers.py), reached through the official client and a kubeconfig file.

Each test serves objects, runs the watcher (in-process, or the CLI as a subprocess), and checks the
lines written against what the served changes mean (docs/events.md "The Kubernetes source"), and
the engine's state after replaying them against the objects served.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from replay.runner import run_file
from statemodel.state_view import render_state
from statemodel.timefmt import parse_time
from streams.kube.kinds import kinds_for
from streams.kube.sink import NdjsonSink
from streams.kube.watcher import KubeApi, Watcher, load_client
from tests.kubehelpers import FakeApi
from tests.paths import ROOT

KINDS = kinds_for("kueue")
BY = {spec.kind: spec for spec in KINDS if spec.group in ("", "kueue.x-k8s.io")}
RF, CQ, LQ, WL, NODE = BY["ResourceFlavor"], BY["ClusterQueue"], BY["LocalQueue"], BY["Workload"], BY["Node"]
SERVED = [RF, CQ, LQ, WL, NODE]
CLUSTER = "kmock-a"

ADMISSION = {"clusterQueue": "team-a", "podSetAssignments": [
    {"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "3"}, "count": 3}]}


def _cq(nominal: str) -> dict:
    return {"metadata": {"name": "team-a"}, "spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
        {"name": "default", "resources": [{"name": "cpu", "nominalQuota": nominal}]}]}]}}


def _wl(name: str, cpu: str = "1", count: int = 3) -> dict:
    return {"metadata": {"name": name, "namespace": "ml", "creationTimestamp": "2026-03-01T10:00:00Z"},
            "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": count, "requests": {"cpu": cpu}}]}}


def _serve_config(api: FakeApi) -> None:
    api.create(RF, {"metadata": {"name": "default"}, "spec": {}})
    api.create(CQ, _cq("4"))
    api.create(LQ, {"metadata": {"name": "lq", "namespace": "ml"}, "spec": {"clusterQueue": "team-a"}})


def _lines(path: Path) -> list[dict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()] if path.exists() else []


def _wait(cond: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


class Running:
    """A watcher run in a thread (``with Running(api, tmp_path) as run``); stopped on exit."""

    def __init__(self, api: FakeApi, tmp_path: Path, state: bool = True, served: list | None = None) -> None:
        self.served = served if served is not None else SERVED
        self.out = tmp_path / "events.ndjson"
        self.state = tmp_path / "state.json" if state else None
        self.warnings: list[str] = []
        client = load_client(str(api.kubeconfig(tmp_path / "kubeconfig")), "test")
        self.sink = NdjsonSink(str(self.out))
        self.watcher = Watcher(KubeApi(client, watch_timeout=30), KINDS, CLUSTER, self.sink, self.state,
                               warn=self.warnings.append, state_every=0)
        self.api = api
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.watcher.run, args=(self.stop,), daemon=True)

    def __enter__(self) -> Running:
        self.thread.start()
        self.api.wait_watching(self.served)
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(10)
        self.sink.close()

    def wait_lines(self, n: int) -> list[dict]:
        _wait(lambda: len(_lines(self.out)) >= n)
        time.sleep(0.2)  # nothing more should come
        return _lines(self.out)


def test_objects_created_updated_and_deleted(tmp_path: Path) -> None:
    with FakeApi(SERVED) as api:
        _serve_config(api)
        with Running(api, tmp_path) as run:
            (sync,) = run.wait_lines(1)
            assert sync["type"] == "Batch" and sync["cluster"] == CLUSTER
            assert [(e["type"], e["object"]["kind"], e["id"]) for e in sync["events"]] == [
                ("Applied", "ResourceFlavor", "uid-1@1:applied"), ("Applied", "ClusterQueue", "uid-2@2:applied"),
                ("Applied", "LocalQueue", "uid-3@3:applied")]
            # three kinds, three watches: each change is awaited before the next, so the lines'
            # order is the changes' order (across watches, arrival order is not defined)
            api.patch(CQ, {"name": "team-a"}, _cq("6"))
            run.wait_lines(2)
            api.create(NODE, {"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "8"}}})
            run.wait_lines(3)
            api.delete(LQ, {"name": "lq", "namespace": "ml"})
            lines = run.wait_lines(4)
    assert [(e["type"], e["id"]) for e in lines[1:]] == [
        ("Applied", "uid-2@4:applied"), ("Applied", "uid-4@5:applied"), ("Deleted", "uid-3@3:deleted")]
    assert lines[1]["object"]["spec"] == _cq("6")["spec"]
    assert lines[3]["object"] == {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                                  "metadata": {"name": "lq", "namespace": "ml", "uid": "uid-3"}}
    times = [parse_time(e["time"], "") for e in lines]  # as numbers: "…31Z" sorts after "…31.001Z" as text
    assert times == sorted(times)
    # every kind the server does not serve (Cohort, the Topologies) was skipped with one line
    skipped = [w for w in run.warnings if w.startswith("warning: skipping")]
    assert len(skipped) == 3 and any("Cohort" in w for w in skipped)


def test_workload_admitted_then_finished_replays_to_the_quota_it_held(tmp_path: Path) -> None:
    with FakeApi(SERVED) as api:
        _serve_config(api)
        with Running(api, tmp_path) as run:
            run.wait_lines(1)
            api.create(WL, _wl("train"))
            run.wait_lines(2)
            api.patch(WL, {"name": "train", "namespace": "ml"}, {"status": {
                "admission": ADMISSION,
                "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                                "lastTransitionTime": "2030-01-01T00:01:00Z"}]}})
            lines = run.wait_lines(3)
            engine, _ = run_file(str(run.out))
            view = render_state(engine)["clusters"][CLUSTER]
            assert view["workloads"]["ml/train"]["status"] == "Admitted"
            assert view["clusterQueues"]["team-a"]["admitted"] == 1
            assert view["clusterQueues"]["team-a"]["resources"]["default"]["cpu"]["usage"] == 3_000
            api.patch(WL, {"name": "train", "namespace": "ml"}, {"status": {"conditions": [
                {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                 "lastTransitionTime": "2030-01-01T00:01:00Z"},
                {"type": "Finished", "status": "True", "reason": "JobFinished",
                 "lastTransitionTime": "2030-01-01T00:30:00Z"}]}})
            lines = run.wait_lines(4)
    assert [(e["type"], e["id"]) for e in lines[1:]] == [
        ("Applied", "uid-4@4:applied"), ("WorkloadAdmitted", "uid-4@5:admitted"), ("WorkloadFinished", "uid-4@6:finished")]
    assert lines[2]["admission"] == ADMISSION and lines[2]["workload"] == "ml/train"
    assert (lines[2]["time"], lines[3]["time"]) == ("2030-01-01T00:01:00Z", "2030-01-01T00:30:00Z")
    engine, result = run_file(str(run.out))
    assert (result.applied, result.rejected) == (4, 0)
    view = render_state(engine)["clusters"][CLUSTER]
    assert view["workloads"]["ml/train"]["status"] == "Finished"
    assert view["clusterQueues"]["team-a"]["admitted"] == 0
    assert view["clusterQueues"]["team-a"]["resources"]["default"]["cpu"]["usage"] == 0


def test_restart_resumes_from_the_saved_resource_version_without_duplicates(tmp_path: Path) -> None:
    with FakeApi(SERVED) as api:
        _serve_config(api)
        with Running(api, tmp_path) as run:
            run.wait_lines(1)
            api.create(NODE, {"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "8"}}})
            run.wait_lines(2)
        saved = orjson.loads((tmp_path / "state.json").read_bytes())
        assert saved["kinds"]["nodes"]["resourceVersion"] == "4"
        api.patch(CQ, {"name": "team-a"}, _cq("5"))  # while the watcher is down
        with Running(api, tmp_path) as run:
            lines = run.wait_lines(3)
        # the second run listed nothing (every kind had a resourceVersion) and watched from it
        assert api.watch_requests(NODE)[-1]["resourceVersion"] == "4"
        assert api.watch_requests(CQ)[-1]["resourceVersion"] == "2"
    assert [(e["type"], e["id"]) for e in lines[1:]] == [("Applied", "uid-4@4:applied"), ("Applied", "uid-2@5:applied")]
    ids = [e["id"] for e in lines]
    assert len(ids) == len(set(ids))


def test_410_gone_relists_and_sends_the_differences_as_one_batch(tmp_path: Path) -> None:
    with FakeApi(SERVED) as api:
        _serve_config(api)
        api.create(NODE, {"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "8"}}})
        api.create(NODE, {"metadata": {"name": "n2"}, "status": {"allocatable": {"cpu": "8"}}})
        with Running(api, tmp_path) as run:
            run.wait_lines(1)
        # while the watcher is down: n2 is deleted, n3 created, n1 changed, and the history compacted
        api.delete(NODE, {"name": "n2"})
        api.create(NODE, {"metadata": {"name": "n3"}, "status": {"allocatable": {"cpu": "2"}}})
        api.patch(NODE, {"name": "n1"}, {"spec": {"unschedulable": True}})
        saved_rv = orjson.loads((tmp_path / "state.json").read_bytes())["kinds"]["nodes"]["resourceVersion"]
        assert saved_rv == "5"
        api.expire(NODE, saved_rv)
        with Running(api, tmp_path) as run:
            lines = run.wait_lines(2)
            assert any("410" in w and "relisting" in w for w in run.warnings)
    relist = lines[1]
    assert relist["type"] == "Batch" and relist["id"].startswith("relist:nodes:")
    assert [(e["type"], e["id"]) for e in relist["events"]] == [
        ("Applied", "uid-4@7:applied"), ("Deleted", "uid-5@5:deleted"), ("Applied", "uid-6@6:applied")]
    assert len(lines) == 2  # the watch after the relist re-delivers nothing
    engine, result = run_file(str(tmp_path / "events.ndjson"))
    nodes = render_state(engine)["clusters"][CLUSTER]["nodes"]
    assert sorted(nodes) == ["n1", "n3"] and nodes["n1"]["unschedulable"] is True


def test_ndjson_replays_to_a_state_equal_to_the_objects_served(tmp_path: Path) -> None:
    with FakeApi(SERVED) as api:
        _serve_config(api)
        api.create(NODE, {"metadata": {"name": "n1", "labels": {"zone": "a"}}, "status": {"allocatable": {"cpu": "8"}}})
        api.create(WL, _wl("big", cpu="2", count=3))  # 6 cpu: cannot fit nominal 4
        api.create(WL, _wl("small"))
        with Running(api, tmp_path) as run:
            run.wait_lines(1)
            api.patch(CQ, {"name": "team-a"}, _cq("10"))
            api.create(WL, _wl("late"))
            api.delete(WL, {"name": "small", "namespace": "ml"})
            run.wait_lines(4)
        served = {(obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"]): obj
                  for obj in (api.emulator.objects[key].raw for key in api.emulator.objects
                              if not api.emulator.objects[key].deleted)}
    engine, result = run_file(str(tmp_path / "events.ndjson"))
    assert result.rejected == 0
    view = render_state(engine)["clusters"][CLUSTER]
    assert sorted(view["workloads"]) == sorted(f"{ns}/{name}" for kind, ns, name in served if kind == "Workload")
    assert sorted(view["clusterQueues"]) == ["team-a"]
    cq_spec = served[("ClusterQueue", None, "team-a")]["spec"]
    nominal = cq_spec["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"]
    cpu = view["clusterQueues"]["team-a"]["resources"]["default"]["cpu"]
    assert cpu["nominal"] == int(nominal) * 1000 == 10_000
    # nominal 4: small (3) admitted, big (6) waits; nominal 10: big too (9); late (3) waits until small
    # is deleted, then fits: big + late = 9 cpu
    assert {k: w["status"] for k, w in view["workloads"].items()} == {"ml/big": "Admitted", "ml/late": "Admitted"}
    assert cpu["usage"] == 9_000
    assert sorted(view["localQueues"]) == ["ml/lq"]
    assert view["nodes"]["n1"]["allocatable"] == {"cpu": 8000} and view["nodes"]["n1"]["labels"] == {"zone": "a"}


def test_cli_once_writes_the_initial_sync_and_exits(tmp_path: Path) -> None:
    with FakeApi(SERVED) as api:
        _serve_config(api)
        kubeconfig = api.kubeconfig(tmp_path / "kubeconfig")
        out = tmp_path / "out.ndjson"
        done = subprocess.run([sys.executable, "-m", "quotaledger.cli", "watch", "--cluster", CLUSTER,
                               "--kubeconfig", str(kubeconfig), "--context", "test", "--out", str(out),
                               "--state", str(tmp_path / "s.json"), "--once"],
                              cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    (sync,) = _lines(out)
    assert len(sync["events"]) == 3
    assert "watch: 1 events written (1 batches, 0 relists)" in done.stderr
    assert done.stderr.count("warning: skipping") == 3


def test_cli_rejects_a_missing_output_an_unknown_model_and_a_missing_kubeconfig(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from quotaledger.cli import app

    def run(*args: str):
        return CliRunner().invoke(app, ["watch", "--cluster", "c", *args],
                                  env={"QUOTALEDGER_BOOTSTRAP": None, "KUBERNETES_SERVICE_HOST": None})
    no_out = run()
    assert no_out.exit_code == 2 and "no output" in no_out.output
    bad = run("--out", "-", "--quota-model", "slurm")
    assert bad.exit_code == 2 and "quota model 'slurm'" in bad.output
    no_config = run("--out", "-", "--kubeconfig", str(tmp_path / "missing"))
    assert no_config.exit_code == 1 and "cannot load the Kubernetes configuration" in no_config.output


class _FailingSink:
    """Accepts the initial sync, fails the flush of the next lines written (a full disk, a broker that
    went away: those lines are lost), and accepts every flush after that."""

    def __init__(self) -> None:
        self.written = 0
        self.flushed_bursts = 0

    def write(self, line: bytes) -> None:
        self.written += 1

    def flush(self) -> None:
        if self.written:
            self.written = 0
            self.flushed_bursts += 1
            if self.flushed_bursts == 2:
                raise OSError("disk full")

    def close(self) -> None:
        pass


def test_a_failed_flush_stops_the_watch_and_the_state_keeps_the_last_delivered_point(tmp_path: Path) -> None:
    with FakeApi(SERVED) as api:
        _serve_config(api)
        state = tmp_path / "state.json"
        watcher = Watcher(KubeApi(load_client(str(api.kubeconfig(tmp_path / "kc")), None), watch_timeout=30), KINDS,
                          CLUSTER, _FailingSink(), state, state_every=0)
        failure: list[BaseException] = []

        def run() -> None:
            try:
                watcher.run(threading.Event())
            except OSError as exc:
                failure.append(exc)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        api.wait_watching(SERVED)
        api.patch(CQ, {"name": "team-a"}, _cq("9"))
        thread.join(15)
    assert [str(e) for e in failure] == ["disk full"]
    saved = orjson.loads(state.read_bytes())
    assert saved["kinds"]["clusterqueues.kueue.x-k8s.io"]["objects"]["team-a"]["metadata"]["resourceVersion"] == "2"


def test_kueue_version_auto_reads_v1beta1_where_v1beta2_is_not_served(tmp_path: Path) -> None:
    old = [CQ.at("v1beta1"), WL.at("v1beta1")]
    with FakeApi(old) as api:
        api.create(old[0], {"metadata": {"name": "team-a"}, "spec": {"cohort": "org"}})
        with Running(api, tmp_path, served=old) as run:
            (sync,) = run.wait_lines(1)
            api.create(old[1], _wl("train"))
            lines = run.wait_lines(2)
        assert api.watch_requests(old[0]) and api.watch_requests(old[1])
    assert sync["events"][0]["object"]["apiVersion"] == "kueue.x-k8s.io/v1beta1"
    assert lines[1]["object"]["apiVersion"] == "kueue.x-k8s.io/v1beta1"
    saved = orjson.loads((tmp_path / "state.json").read_bytes())
    assert saved["kinds"]["clusterqueues.kueue.x-k8s.io"]["version"] == "v1beta1"
    assert not any("ClusterQueue" in w for w in run.warnings)  # found at v1beta1: not skipped
    engine, result = run_file(str(run.out))
    assert result.rejected == 0
    assert render_state(engine)["clusters"][CLUSTER]["clusterQueues"]["team-a"]["cohort"] == "org"


def _node(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "9"},
            "status": {"allocatable": {"cpu": "8"}}}


def _serve_pages(api: FakeApi, pages: dict[str | None, object]) -> None:
    """List requests of Nodes answered per ``continue`` token: token (``None``: the first page) →
    a NodeList body, or an HTTP status."""
    import kmock

    assert api.emulator is not None
    resource = kmock.resource(NODE.group, NODE.version, NODE.plural)
    for token, answer in pages.items():
        def asks(request: kmock.Request, token: str | None = token) -> bool:
            return request.params.get("watch") != "true" and request.params.get("continue") == token

        reaction = api.emulator[kmock.action.LIST, resource, asks]
        if isinstance(answer, int):
            reaction << answer << {"apiVersion": "v1", "kind": "Status", "status": "Failure", "code": answer,
                                   "reason": "Expired", "message": "The provided continue parameter is too old"}
        else:
            reaction << answer


def _list_requests(api: FakeApi) -> list[dict[str, str]]:
    import kmock

    assert api.emulator is not None
    resource = kmock.resource(NODE.group, NODE.version, NODE.plural)
    return [dict(r.params) for r in api.emulator[kmock.action.LIST, resource]]


def test_a_list_is_read_in_pages_following_the_continue_token(tmp_path: Path) -> None:
    """As client-go's pager: ``limit`` on every request, ``continue`` from the previous page, the
    list's resourceVersion from the first page (every page comes from that snapshot)."""
    with FakeApi(SERVED) as api:
        _serve_pages(api, {
            None: {"apiVersion": "v1", "kind": "NodeList", "metadata": {"resourceVersion": "40", "continue": "p2"},
                   "items": [_node("n1"), _node("n2")]},
            "p2": {"apiVersion": "v1", "kind": "NodeList", "metadata": {"resourceVersion": "40", "continue": "p3"},
                   "items": [_node("n3"), _node("n4")]},
            "p3": {"apiVersion": "v1", "kind": "NodeList", "metadata": {"resourceVersion": "40"},
                   "items": [_node("n5")]},
        })
        client = load_client(str(api.kubeconfig(tmp_path / "kubeconfig")), "test")
        items, rv = KubeApi(client, page_size=2).list(NODE)
        client.close()
        requests = _list_requests(api)
    assert [i["metadata"]["name"] for i in items] == ["n1", "n2", "n3", "n4", "n5"] and rv == "40"
    assert [(r.get("limit"), r.get("continue")) for r in requests] == [("2", None), ("2", "p2"), ("2", "p3")]


def test_an_expired_continue_token_restarts_the_list_and_gives_up_after_three_tries(tmp_path: Path) -> None:
    """The API server answers 410 for a continue token whose snapshot was compacted away; the
    list starts over from the first page, three times at most, then reports Gone."""
    from streams.kube.watcher import LIST_RESTARTS, Gone

    with FakeApi(SERVED) as api:
        _serve_pages(api, {
            None: {"apiVersion": "v1", "kind": "NodeList", "metadata": {"resourceVersion": "40", "continue": "old"},
                   "items": [_node("n1")]},
            "old": 410,
        })
        client = load_client(str(api.kubeconfig(tmp_path / "kubeconfig")), "test")
        try:
            KubeApi(client, page_size=1).list(NODE)
            raised = None
        except Gone as exc:
            raised = exc
        client.close()
        requests = _list_requests(api)
    assert raised is not None and "expired 3 times" in str(raised)
    assert [r.get("continue") for r in requests] == [None, "old"] * LIST_RESTARTS
