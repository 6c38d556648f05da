"""The simulator under the ``koordinator`` model (``replay.sim.koordinator_quota``, ``--model
koordinator``): a Kueue configuration translated to ElasticQuotas worked by hand, and the same
closed-loop story as ``test_simulator.py`` run with Pods; the written file replays to the same
decisions and hash."""

from __future__ import annotations

from pathlib import Path

from replay.sim.importers.jobs import ImportResult, Job
from replay.sim.koordinator_quota import to_elastic_quotas
from replay.sim.manifests import QuotaConfig, load_manifests, write_manifests
from tests.unit.test_simulator import API, T0, _assert_replayable, _run

P = "quota.scheduling.koordinator.sh/"


def _cq(name: str, cohort: str, nominal: str, borrowing: str | None = None) -> dict:
    res = {"name": "cpu", "nominalQuota": nominal}
    if borrowing is not None:
        res["borrowingLimit"] = borrowing
    return {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": {"cohortName": cohort, "resourceGroups": [
                {"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [res]}]}]}}


def _kueue() -> QuotaConfig:
    """Cohort ``org`` over ClusterQueues ``a`` (nominal 4, borrowingLimit 2) and ``b`` (nominal 6, no
    limit), LocalQueues ``t/a`` and ``u/b``."""
    return QuotaConfig([
        {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "f"}},
        {"apiVersion": API, "kind": "Cohort", "metadata": {"name": "org"}, "spec": {}},
        _cq("a", "org", "4", "2"), _cq("b", "org", "6"),
        {"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": "a", "namespace": "t"},
         "spec": {"clusterQueue": "a"}},
        {"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": "b", "namespace": "u"},
         "spec": {"clusterQueue": "b"}},
    ], root="org")


def test_translation_min_is_nominal_and_max_adds_the_borrowing_limit(tmp_path: Path) -> None:
    # a: min 4, max 4 + 2; b: min 6, no limit -> the whole nominal 10; org: min 4 + 6, max 6 + 10 = 16
    # capped at the whole nominal 10; the capacity Node carries the whole nominal 10
    config = to_elastic_quotas(_kueue(), capacity_node=True)
    assert config.model == "koordinator"
    kinds = [(o["kind"], o["metadata"]["name"]) for o in config.objects]
    assert kinds == [("EngineConfig", "config"), ("ElasticQuota", "org"), ("ElasticQuota", "a"),
                     ("ElasticQuota", "b"), ("Node", "kueue-nominal-capacity")]
    quotas = {o["metadata"]["name"]: o for o in config.objects if o["kind"] == "ElasticQuota"}
    assert {n: (q["spec"]["min"], q["spec"]["max"]) for n, q in quotas.items()} == {
        "org": ({"cpu": "10"}, {"cpu": "10"}), "a": ({"cpu": "4"}, {"cpu": "6"}), "b": ({"cpu": "6"}, {"cpu": "10"})}
    assert quotas["org"]["metadata"]["labels"] == {P + "is-parent": "true"}
    assert quotas["a"]["metadata"]["labels"] == {P + "parent": "org"}
    assert config.objects[-1]["status"]["allocatable"] == {"cpu": "10"}
    write_manifests(config, tmp_path / "q")
    assert load_manifests(tmp_path / "q", "org").objects == config.objects  # editable, read back the same


def test_closed_loop_with_pods(tmp_path: Path) -> None:
    # a (min 4, max 6) and b (min 6, max 10) on 10 cpu.  x (a, 5 cpu) at 0: a asks 5 > min 4 (a
    # borrower: 4, then 1 of the 6 left), b asks nothing and lends: a's runtime 5, x runs 0..10.
    # y (b, 6) at 1: b asks 6 = its min (a lender of nothing: runtime 6); a keeps its min 4 and the
    # pool is empty: a's runtime 4 (x runs on above it: no recycling by default); y fits its quota, but
    # the capacity Node (10 cpu) holds x's 5: y waits for the node.  z (a, 1) at 2 waits (used 5 + 1 > 4).
    # x finishes at 10: y goes on the node (6 of 10), and a asks 1 <= min (runtime 1): z fits, on the node.
    jobs = [Job("x", T0, 10_000, ("a", "t"), 1, (("cpu", 5000),)),
            Job("y", T0 + 1000, 20_000, ("b", "u"), 1, (("cpu", 6000),)),
            Job("z", T0 + 2000, 1000, ("a", "t"), 1, (("cpu", 1000),))]
    trace = ImportResult("sim", jobs, [], T0, T0 + 30_000)
    path = tmp_path / "e.ndjson"
    result, decisions, events = _run(trace, to_elastic_quotas(_kueue(), capacity_node=True), path, tick_ms=0)
    assert [(d["type"], d["workload"], d["clusterQueue"], d["time"]) for d in decisions] == [
        ("Admitted", "t/x", "a", "2023-11-14T22:13:20Z"), ("Admitted", "u/y", "b", "2023-11-14T22:13:30Z"),
        ("Admitted", "t/z", "a", "2023-11-14T22:13:30Z")]
    submit = next(e for e in events if e["id"] == "submit/t/x")
    assert submit["object"] == {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "x", "namespace": "t", "labels": {P + "name": "a"},
        "annotations": {"quotaledger.io/run-time": "10s"}}, "spec": {"containers": [
            {"name": "main", "resources": {"requests": {"cpu": "5"}}}]}}
    assert (result.submitted, result.admitted, result.finished, result.unroutable) == (3, 3, 3, 0)
    _assert_replayable(path, result, decisions)


def test_jobs_running_at_the_start_are_observed_bindings(tmp_path: Path) -> None:
    # e (a, 5 cpu) runs when the trace starts: a Pod bound to node "observed", charged as given (a's
    # runtime 5: it fitted); f (a, 2 cpu) at 1 s waits (5 + 2 > max 6) until e ends at 5 s
    jobs = [Job("e", T0, 5000, ("a", "t"), 1, (("cpu", 5000),), observed_start_ms=T0, preexisting=True),
            Job("f", T0 + 1000, 1000, ("a", "t"), 1, (("cpu", 2000),))]
    trace = ImportResult("sim", jobs, [], T0, T0 + 10_000)
    path = tmp_path / "e.ndjson"
    result, decisions, events = _run(trace, to_elastic_quotas(_kueue(), capacity_node=True), path, tick_ms=0)
    bound = next(e for e in events if e["id"] == "submit/t/e")
    assert bound["object"]["spec"]["nodeName"] == "observed"
    assert [(d["workload"], d["cause"]) for d in decisions] == [("t/f", "finish/t/e")]
    assert (result.preadmitted, result.admitted_at["t/e"] - T0, result.admitted_at["t/f"] - T0) == (1, 0, 5000)
    _assert_replayable(path, result, decisions)
