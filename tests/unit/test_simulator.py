"""Closed-loop simulator (replay.sim.simulator): hand-checked event sequences, and the written file is
itself replayable (same decisions, same hash)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from quotaledger.cli import app
from replay.sim.importers.dlrm import import_dlrm
from replay.sim.importers.jobs import ImportResult, Job
from replay.sim.importers.mapping import import_csv
from replay.sim.importers.openb import import_openb
from replay.sim.manifests import QuotaConfig
from replay.sim.quota_tree import generate_quota
from replay.runner import run_file
from replay.sim.simulator import simulate
from tests.paths import DATA, MAPPINGS

API = "kueue.x-k8s.io/v1beta2"
T0 = 1_700_000_000_000  # a multiple of 10 s: the tick grid is epoch aligned


def _config(cpu: str = "4") -> QuotaConfig:
    """One flavor, one ClusterQueue ``cq`` with ``cpu`` cores, one LocalQueue ``t/cq``."""
    return QuotaConfig([
        {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "f"}},
        {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": {"resourceGroups": [
            {"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": cpu}]}]}]}},
        {"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": "cq", "namespace": "t"}, "spec": {"clusterQueue": "cq"}},
    ], root="r")


def _job(name: str, submit_s: float, run_s: float | None, cpu_milli: int, **kw) -> Job:
    return Job(name, T0 + int(submit_s * 1000), None if run_s is None else int(run_s * 1000), ("cq", "t"), 1,
               (("cpu", cpu_milli),), **kw)


def _run(trace: ImportResult, config: QuotaConfig, path: Path, **kw):
    decisions: list[dict] = []
    result = simulate(trace, config, path, on_decision=lambda d: decisions.append(d.to_json()), **kw)
    events = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    return result, decisions, events


def _assert_replayable(path: Path, result, decisions: list[dict]) -> None:
    replayed: list[dict] = []
    engine, rr = run_file(str(path), on_decision=lambda d: replayed.append(d.to_json()))
    assert rr.rejected == 0 and rr.duplicates == 0
    assert replayed == decisions
    assert engine.hash == result.hash


def test_jobs_wait_for_quota_and_finish_after_their_run_time(tmp_path: Path) -> None:
    jobs = [_job("a", 0, 10, 4000), _job("b", 1, 5, 4000), _job("c", 2, 1, 2000), _job("d", 2, 1, 2000),
            _job("w", 2.5, None, 4000, delete_ms=T0 + 3000)]
    trace = ImportResult("sim", jobs, [], T0, T0 + 20_000)
    path = tmp_path / "e.ndjson"
    result, decisions, events = _run(trace, _config(), path, tick_ms=10_000)
    # a holds all 4 cpu for 10 s; b (4 cpu) waits for it, then holds 5 s; c and d (same submit time,
    # trace order c, d) fit together once b is gone, at 15 s; w never started in the trace: it is
    # still pending at its deletion (3 s) and is withdrawn.  Ticks at 10 s and 20 s, before other
    # events at the same instant.
    assert [(e["id"], e["time"] - T0) for e in events] == [
        ("config/ResourceFlavor/f", 0), ("config/ClusterQueue/cq", 0), ("config/LocalQueue/t/cq", 0),
        ("submit/t/a", 0), ("submit/t/b", 1000), ("submit/t/c", 2000), ("submit/t/d", 2000), ("submit/t/w", 2500),
        ("withdraw/t/w", 3000), ("tick/1", 10_000), ("finish/t/a", 10_000), ("finish/t/b", 15_000),
        ("finish/t/c", 16_000), ("finish/t/d", 16_000), ("tick/2", 20_000)]
    assert [(d["workload"], d["cause"]) for d in decisions] == [
        ("t/a", "submit/t/a"), ("t/b", "finish/t/a"), ("t/c", "finish/t/b"), ("t/d", "finish/t/b")]
    # a runs 10 s in the trace: its Workload records it (the run-time annotation whatif re-simulates with)
    assert events[3]["object"] == {"apiVersion": API, "kind": "Workload", "metadata": {
                                       "name": "a", "namespace": "t", "annotations": {"quotaledger.io/run-time": "10s"}},
                                   "spec": {"queueName": "cq", "podSets": [{"name": "main", "count": 1,
                                                                            "requests": {"cpu": "4"}}]}}
    assert events[8] == {"id": "withdraw/t/w", "time": T0 + 3000, "cluster": "sim", "type": "Deleted",
                         "object": {"apiVersion": API, "kind": "Workload", "metadata": {"name": "w", "namespace": "t"}}}
    assert {k: v - T0 for k, v in result.admitted_at.items()} == {"t/a": 0, "t/b": 10_000, "t/c": 15_000, "t/d": 15_000}
    assert (result.events, result.submitted, result.admitted, result.finished, result.withdrawn, result.ticks) == \
           (15, 5, 4, 4, 1, 2)
    assert (result.pending_at_end, result.running_at_end, result.unroutable) == (0, 0, 0)
    _assert_replayable(path, result, decisions)


def test_preexisting_jobs_are_observed_admissions_and_the_horizon_stops_the_run(tmp_path: Path) -> None:
    jobs = [_job("e", 0, 5, 2000, observed_start_ms=T0, preexisting=True),     # deleted at 5 s
            _job("f", 0, None, 1000, observed_start_ms=T0, preexisting=True),  # never deleted
            _job("g", 1, None, 1000, delete_ms=T0 + 8000),                     # never started in the trace
            _job("h", 1, None, 1000)]                                          # still running at the end
    trace = ImportResult("sim", jobs, [], T0, T0 + 10_000)
    path = tmp_path / "e.ndjson"
    result, decisions, events = _run(trace, _config(), path, tick_ms=0, until_ms=T0 + 7000, finish_at_horizon=True)
    # e + f hold 3 of 4 cpu from the start; g takes the last one at 1 s; h waits for e's end (5 s).
    # At the horizon (7 s) f, g and h are running (g's deletion at 8 s is past it): finish_at_horizon
    # finishes all three there, in trace order.  None has a run time: nothing is cut.
    assert [(e["id"], e["time"] - T0) for e in events] == [
        ("config/ResourceFlavor/f", 0), ("config/ClusterQueue/cq", 0), ("config/LocalQueue/t/cq", 0),
        ("submit/t/e", 0), ("submit/t/f", 0), ("submit/t/g", 1000), ("submit/t/h", 1000),
        ("finish/t/e", 5000), ("finish/t/f", 7000), ("finish/t/g", 7000), ("finish/t/h", 7000)]
    assert events[3]["object"]["status"] == {"admission": {"clusterQueue": "cq", "podSetAssignments": [
        {"name": "main", "count": 1, "flavors": {"cpu": "f"}, "resourceUsage": {"cpu": "2"}}]}}
    assert [(d["workload"], d["cause"]) for d in decisions] == [("t/g", "submit/t/g"), ("t/h", "finish/t/e")]
    assert (result.preadmitted, result.submitted, result.admitted, result.finished) == (2, 2, 2, 4)
    assert (result.running_at_end, result.pending_at_end, result.cut, result.until_ms) == (0, 0, 0, T0 + 7000)
    _assert_replayable(path, result, decisions)


def test_jobs_that_waited_finish_after_their_run_time_past_the_trace_end(tmp_path: Path) -> None:
    # 4 cpu; a (4 cpu, 8 s) from 0; b (4 cpu, 6 s) at 1 waits for a; the trace ends at 10 s.
    jobs = [_job("a", 0, 8, 4000), _job("b", 1, 6, 4000)]
    trace = ImportResult("sim", jobs, [], T0, T0 + 10_000)
    path = tmp_path / "e.ndjson"
    result, decisions, events = _run(trace, _config(), path, tick_ms=5000)
    # b is admitted at 8 (a's end) and runs until 14, past the trace end: the run goes on to 14,
    # with the ticks on the 5 s grid up to it (5, 10) and none after the last event.
    assert [(e["id"], e["time"] - T0) for e in events[3:]] == [
        ("submit/t/a", 0), ("submit/t/b", 1000), ("tick/1", 5000), ("finish/t/a", 8000), ("tick/2", 10_000),
        ("finish/t/b", 14_000)]
    assert (result.finished, result.running_at_end, result.cut, result.until_ms) == (2, 0, 0, T0 + 14_000)
    _assert_replayable(path, result, decisions)


def test_until_cuts_running_jobs_and_counts_them(tmp_path: Path) -> None:
    jobs = [_job("a", 0, 8, 4000), _job("b", 1, 6, 4000)]
    trace = ImportResult("sim", jobs, [], T0, T0 + 10_000)
    result, _, events = _run(trace, _config(), tmp_path / "cut.ndjson", tick_ms=0, until_ms=T0 + 10_000)
    # b (admitted at 8) would finish at 14: cut at the 10 s horizon
    assert events[-1]["id"] == "finish/t/a"
    assert (result.running_at_end, result.cut, result.until_ms) == (1, 1, T0 + 10_000)
    assert "1 cut by the horizon" in result.summary()
    result, _, events = _run(trace, _config(), tmp_path / "fin.ndjson", tick_ms=0, until_ms=T0 + 10_000,
                             finish_at_horizon=True)
    # --finish-at-horizon: b finishes at the horizon instead (still counted as cut: its run was not over)
    assert (events[-1]["id"], events[-1]["time"]) == ("finish/t/b", T0 + 10_000)
    assert (result.running_at_end, result.cut, result.finished) == (0, 1, 2)


def test_jobs_without_a_local_queue_are_counted_as_unroutable(tmp_path: Path) -> None:
    job = Job("x", T0, 1000, ("other", "t"), 1, (("cpu", 1000),))
    result = simulate(ImportResult("sim", [job], [], T0, T0 + 5000), _config(), tmp_path / "e.ndjson", tick_ms=0)
    assert (result.unroutable, result.admitted, result.pending_at_end) == (1, 0, 1)


@pytest.mark.parametrize("load", [
    lambda: import_dlrm(DATA / "dlrm_excerpt.csv"),
    lambda: import_openb(DATA / "openb_pods_excerpt.csv", DATA / "openb_nodes_excerpt.csv"),
])
def test_simulated_excerpts_replay_to_the_same_decisions_and_hash(tmp_path: Path, load) -> None:
    trace = load()
    path = tmp_path / "e.ndjson"
    result, decisions, events = _run(trace, generate_quota(trace), path)
    assert len({e["id"] for e in events}) == len(events)  # ids unique
    times = [e["time"] for e in events]
    assert times == sorted(times)  # written in time order
    first_workload = next(i for i, e in enumerate(events) if e["id"].startswith("submit/"))
    assert all(not e["id"].startswith(("submit/", "finish/", "tick/")) for e in events[:first_workload])
    assert result.admitted + result.preadmitted == len(result.admitted_at)
    _assert_replayable(path, result, decisions)


def test_dlrm_excerpt_simulation_counts(tmp_path: Path) -> None:
    trace = import_dlrm(DATA / "dlrm_excerpt.csv")
    result = simulate(trace, generate_quota(trace), tmp_path / "e.ndjson")
    # 4 preexisting rows (2 never deleted, 2 deleted at 85 s and 17,623 s); 4 submitted, all admitted
    # under the generated quota; finished: the 2 deleted preexisting + instance_7281 + instance_7284;
    # running at the end: instance_0, instance_1, instance_7280, instance_7503.
    # Ticks: every 5 min over 91,730 s -> floor(91,730 / 300) = 305.
    assert (result.preadmitted, result.submitted, result.admitted, result.finished) == (4, 4, 4, 4)
    assert (result.running_at_end, result.pending_at_end, result.ticks) == (4, 0, 305)


def test_mapping_and_dedicated_importer_write_the_same_event_file(tmp_path: Path) -> None:
    dedicated = import_dlrm(DATA / "dlrm_excerpt.csv")
    generic = import_csv(DATA / "dlrm_excerpt.csv", MAPPINGS / "dlrm.yaml")
    a = simulate(dedicated, generate_quota(dedicated), tmp_path / "a.ndjson")
    b = simulate(generic, generate_quota(generic), tmp_path / "b.ndjson")
    assert (tmp_path / "a.ndjson").read_bytes() == (tmp_path / "b.ndjson").read_bytes()
    assert a.hash == b.hash
    # openb: the mapping has no node list, so only the Workload events can agree
    dedicated = import_openb(DATA / "openb_pods_excerpt.csv", DATA / "openb_nodes_excerpt.csv")
    generic = import_csv(DATA / "openb_pods_excerpt.csv", MAPPINGS / "openb.yaml")
    simulate(dedicated, generate_quota(dedicated), tmp_path / "c.ndjson", tick_ms=0)
    simulate(generic, generate_quota(generic), tmp_path / "d.ndjson", tick_ms=0)

    def submits(p: Path) -> list[dict]:
        return [e for e in map(orjson.loads, p.read_bytes().splitlines()) if e["id"].startswith("submit/")]

    assert submits(tmp_path / "c.ndjson") == submits(tmp_path / "d.ndjson")


def test_cli_simulate_writes_a_replayable_file_and_the_manifests(tmp_path: Path) -> None:
    out = tmp_path / "events.ndjson"
    runner = CliRunner()
    res = runner.invoke(app, ["simulate", "--trace", str(DATA / "dlrm_excerpt.csv"), "--mapping",
                              str(MAPPINGS / "dlrm.yaml"), "--out", str(out), "--quota-out", str(tmp_path / "q")])
    assert res.exit_code == 0, res.output
    digest = res.stdout.split("hash ")[1].split()[0]
    engine, _ = run_file(str(out))
    assert engine.hash == digest
    assert sorted(p.name for p in (tmp_path / "q").iterdir())[0] == "00-engine-config.yaml"
    # the written manifests as --quota give the very same history
    again = tmp_path / "again.ndjson"
    res = runner.invoke(app, ["simulate", "--trace", str(DATA / "dlrm_excerpt.csv"), "--mapping",
                              str(MAPPINGS / "dlrm.yaml"), "--quota", str(tmp_path / "q"), "--out", str(again)])
    assert res.exit_code == 0, res.output
    assert again.read_bytes() == out.read_bytes()
    res = runner.invoke(app, ["simulate", "--trace", str(DATA / "dlrm_excerpt.csv"), "--mapping",
                              str(MAPPINGS / "dlrm.yaml"), "--until", "10m", "--out", str(again)])
    assert res.exit_code == 0, res.output
    assert max(orjson.loads(line)["time"] for line in again.read_bytes().splitlines()) <= 1_735_689_600_000 + 600_000
    res = runner.invoke(app, ["simulate", "--trace", str(DATA / "openb_nodes_excerpt.csv"), "--out", str(again)])
    assert res.exit_code == 1
    assert "give --mapping" in res.output


def _preemption_config(release_on: str | None) -> QuotaConfig:
    """``_config`` with ``withinClusterQueue: LowerPriority`` and, optionally, an EngineConfig
    with ``spec.preemption.releaseOn``."""
    objects = _config().objects
    objects[1]["spec"]["preemption"] = {"withinClusterQueue": "LowerPriority"}
    if release_on is not None:
        objects.insert(0, {"apiVersion": "quotaledger.io/v1alpha1", "kind": "EngineConfig", "metadata": {"name": "c"},
                           "spec": {"preemption": {"releaseOn": release_on}}})
    return QuotaConfig(objects, root="r")


@pytest.mark.parametrize("release_on", [None, "Eviction"])
def test_a_preempted_job_loses_its_run_and_restarts_in_full(tmp_path: Path, release_on: str | None) -> None:
    # low (4 cpu, priority 0) starts at 0 s for 10 s; high (4 cpu, priority 10) arrives at 2 s for 3 s
    # and preempts it (withinClusterQueue LowerPriority).  low's finish at 10 s is void; it is
    # admitted again when high finishes (5 s) and runs its whole 10 s: finished at 15 s.
    jobs = [_job("low", 0, 10, 4000, priority=0), _job("high", 2, 3, 4000, priority=10)]
    trace = ImportResult("sim", jobs, [], T0, T0 + 20_000)
    path = tmp_path / "e.ndjson"
    result, decisions, events = _run(trace, _preemption_config(release_on), path, tick_ms=0)
    workload_events = [(e["id"], e["time"] - T0) for e in events if not e["id"].startswith("config/")]
    if release_on is None:
        # releaseOn Decision: the victim's quota is freed at the decision, high is admitted in the same step
        assert workload_events == [("submit/t/low", 0), ("submit/t/high", 2000), ("finish/t/high", 5000),
                                   ("finish/t/low", 15_000)]
        assert [(d["type"], d["workload"], d["cause"]) for d in decisions] == [
            ("Admitted", "t/low", "submit/t/low"), ("Preempted", "t/low", "submit/t/high"),
            ("Admitted", "t/high", "submit/t/high"), ("Admitted", "t/low", "finish/t/high")]
    else:
        # releaseOn Eviction: the simulator stops the victim (WorkloadEvicted at the decision time),
        # and that observed eviction admits high
        assert workload_events == [("submit/t/low", 0), ("submit/t/high", 2000), ("evict/t/low/1", 2000),
                                   ("finish/t/high", 5000), ("finish/t/low", 15_000)]
        assert [(d["type"], d["workload"], d["cause"]) for d in decisions] == [
            ("Admitted", "t/low", "submit/t/low"), ("Preempted", "t/low", "submit/t/high"),
            ("Admitted", "t/high", "evict/t/low/1"), ("Admitted", "t/low", "finish/t/high")]
        assert result.evictions == 1
    assert decisions[1]["preemptor"] == "t/high" and decisions[1]["preemptorClusterQueue"] == "cq"
    assert next(e for e in events if e["id"] == "submit/t/high")["object"]["spec"]["priority"] == 10
    assert (result.admitted, result.preempted, result.finished, result.running_at_end) == (3, 1, 2, 0)
    _assert_replayable(path, result, decisions)
