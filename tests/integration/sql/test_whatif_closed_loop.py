"""Closed-loop `quotaledger whatif` on a simulated history: the what-if branch re-simulates finishes
from the recorded run times (replay.resimulate), on SQLite and PostgreSQL.

The trace (times in seconds after T0, one ClusterQueue ``cq`` with 4 cpu, no ticks):
a (2 cpu, runs 10 s) and b (2 cpu, runs 10 s) submitted at 1, c (2 cpu, runs 5 s) at 2.
Base: a and b fit at 1 and finish at 11; c waits 2 → 11, finishes at 16 — the archive ends at 16.
Every expected number below is worked out by hand from these rules.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from quotaledger.cli import app
from replay.sim.importers.jobs import ImportResult, Job
from replay.sim.manifests import QuotaConfig
from replay.sim.simulator import simulate
from replay.sql_sink import replay_to_db
from replay.whatif import whatif
from statemodel.timefmt import format_time

API = "kueue.x-k8s.io/v1beta2"
T0 = 1_700_000_000_000
S = 1000


def _cq(cpu: str) -> dict:
    return {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": {"resourceGroups": [
        {"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": cpu}]}]}]}}


def _simulated_store(db: str, tmp_path: Path, jobs: list[Job] | None = None) -> None:
    config = QuotaConfig([
        {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "f"}}, _cq("4"),
        {"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": "cq", "namespace": "t"},
         "spec": {"clusterQueue": "cq"}}], root="r")
    jobs = jobs or [Job("a", T0 + 1 * S, 10 * S, ("cq", "t"), 1, (("cpu", 2000),)),
                    Job("b", T0 + 1 * S, 10 * S, ("cq", "t"), 1, (("cpu", 2000),)),
                    Job("c", T0 + 2 * S, 5 * S, ("cq", "t"), 1, (("cpu", 2000),))]
    path = tmp_path / "sim.ndjson"
    simulate(ImportResult("lab", jobs, [], T0, T0 + 16 * S), config, path, tick_ms=0)
    replay_to_db(str(path), db, batch_size=4, snapshot_every=3)


def _patch(tmp_path: Path, cpu: str, at_s: float) -> str:
    path = tmp_path / "patch.ndjson"
    path.write_bytes(orjson.dumps({"id": "shrink", "time": T0 + int(at_s * S), "type": "Applied",
                                   "object": _cq(cpu)}) + b"\n")
    return str(path)


def _admissions(report: dict, side: str) -> dict[str, str]:
    return {c["workload"]: c[side]["time"] for c in report["decisionChanges"]
            if c["type"] == "Admitted" and c[side] is not None}


def test_a_smaller_quota_lengthens_waits_and_the_counts_add_up(db: str, tmp_path: Path) -> None:
    _simulated_store(db, tmp_path)
    report = whatif(db, _patch(tmp_path, "2", 0.5)).to_json()
    # what-if with 2 cpu from 0.5: a fits at 1 and finishes at 1 + 10 = 11 (re-simulated, as in the
    # base); b waits 1 → 11 (a's finish), runs until 21, past the end of the history (16): still
    # running there; c waits from 2 to the end (16), never admitted.
    assert _admissions(report, "whatif") == {"t/b": format_time(T0 + 11 * S)}
    assert _admissions(report, "base") == {"t/b": format_time(T0 + 1 * S), "t/c": format_time(T0 + 11 * S)}
    (cq,) = report["waitTimes"]["clusterQueues"]
    # base waits: a 0, b 0, c 9 s; what-if: a 0, b 10 s, c 14 s (pending: 16 − 2, a lower bound)
    assert cq["base"] == {"count": 3, "pending": 0, "p50Ms": 0, "p95Ms": 9 * S, "maxMs": 9 * S}
    assert cq["whatif"] == {"count": 3, "pending": 1, "p50Ms": 10 * S, "p95Ms": 14 * S, "maxMs": 14 * S}
    base, other = report["branches"]["base"]["workloads"], report["branches"]["whatif"]["workloads"]
    assert (base["submitted"], base["admitted"], base["pending"], base["neverAdmitted"]) == (3, 3, 0, 0)
    assert (other["submitted"], other["admitted"], other["pending"], other["neverAdmitted"]) == (3, 2, 1, 0)
    assert other["submitted"] == other["admitted"] + other["pending"] + other["neverAdmitted"]
    assert other["notAdmitted"] == [{"workload": "t/c", "clusterQueue": "cq", "localQueue": "t/cq",
                                     "queuedAt": format_time(T0 + 2 * S), "state": "pending"}]
    loop = report["closedLoop"]
    # the three archived finishes are dropped; a's finish at 11 is generated, b's (21) lies past the end
    assert loop["mode"] == "resimulated" and loop["runTimes"] == 3
    assert (loop["droppedArchivedEvents"], loop["generatedEvents"], loop["runningAtEnd"]) == (3, 1, ["t/b"])
    assert loop["heldFixed"] == []


def test_an_unchanged_quota_reproduces_the_stored_history(db: str, tmp_path: Path) -> None:
    _simulated_store(db, tmp_path)
    report = whatif(db, _patch(tmp_path, "4", 0.5)).to_json()
    # the re-simulated finishes fall where the archived ones were: nothing changes
    assert report["decisionChanges"] == []
    (cq,) = report["waitTimes"]["clusterQueues"]
    assert cq["base"] == cq["whatif"]
    assert report["closedLoop"]["generatedEvents"] == 3 and report["closedLoop"]["runningAtEnd"] == []


def test_a_larger_quota_finishes_earlier_and_admits_the_waiting_job_at_once(db: str, tmp_path: Path) -> None:
    _simulated_store(db, tmp_path)
    report = whatif(db, _patch(tmp_path, "6", 0.5)).to_json()
    # 6 cpu: c fits at its submission (2); it finishes at 2 + 5 = 7, not at the recorded 16
    assert _admissions(report, "whatif") == {"t/c": format_time(T0 + 2 * S)}
    (cq,) = report["waitTimes"]["clusterQueues"]
    assert cq["whatif"]["maxMs"] == 0 and cq["delta"]["maxMs"] == -9 * S
    # the branch's last event is the finish of a and b at 11; the window still ends with the history
    assert report["branches"]["whatif"]["end"] == format_time(T0 + 11 * S)
    assert report["window"]["end"] == format_time(T0 + 16 * S)


def test_an_observed_history_holds_its_finishes_fixed(db: str, tmp_path: Path) -> None:
    # the same trace, but b has no run time: the trace only says it was deleted at 12 s
    jobs = [Job("a", T0 + 1 * S, 10 * S, ("cq", "t"), 1, (("cpu", 2000),)),
            Job("b", T0 + 1 * S, None, ("cq", "t"), 1, (("cpu", 2000),), delete_ms=T0 + 12 * S),
            Job("c", T0 + 2 * S, 5 * S, ("cq", "t"), 1, (("cpu", 2000),))]
    _simulated_store(db, tmp_path, jobs)
    report = whatif(db, _patch(tmp_path, "4", 0.5)).to_json()
    # base: a, b at 1; c waits until 11 (a's end) and finishes at 16; b is deleted at 12 while
    # running, written as a finish at 12 — b has no run time: that finish is held fixed
    loop = report["closedLoop"]
    assert loop["mode"] == "resimulated" and loop["runTimes"] == 2
    assert loop["heldFixed"] == [{"workload": "t/b", "time": format_time(T0 + 12 * S)}]
    assert report["decisionChanges"] == []


def test_cli_whatif_changed_only_plot_and_counts(db: str, tmp_path: Path) -> None:
    _simulated_store(db, tmp_path)
    plot = tmp_path / "waits.png"
    result = CliRunner().invoke(app, ["whatif", "--db", db, "--patch", _patch(tmp_path, "2", 0.5), "--changed-only",
                                      "--plot", str(plot)])
    assert result.exit_code == 0, result.output
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    out = result.stdout
    assert "re-simulated" in out or "finish their run time" in out
    assert "not admitted in the what-if branch (1" in out and "t/c" in out
    as_json = CliRunner().invoke(app, ["whatif", "--db", db, "--patch", _patch(tmp_path, "4", 0.5), "--changed-only",
                                       "--json"])
    assert as_json.exit_code == 0, as_json.output
    report = orjson.loads(as_json.stdout)
    # nothing differs: --changed-only leaves no wait or utilization row
    assert report["waitTimes"] == {"clusterQueues": [], "localQueues": []} and report["utilization"] == []


def test_cli_whatif_plot_to_an_unknown_format_is_a_usage_error(db: str, tmp_path: Path) -> None:
    _simulated_store(db, tmp_path)
    result = CliRunner().invoke(app, ["whatif", "--db", db, "--patch", _patch(tmp_path, "2", 0.5),
                                      "--plot", str(tmp_path / "waits.nope")])
    assert result.exit_code == 2 and "--plot" in result.output


def test_progress_reaches_every_step_and_draws_a_bar_on_a_terminal(db: str, tmp_path: Path) -> None:
    import io

    from rich.console import Console

    from quotaledger.views.progress import step_progress

    _simulated_store(db, tmp_path)
    calls: list[tuple[int, int]] = []
    whatif(db, _patch(tmp_path, "2", 0.5), progress=lambda done, total: calls.append((done, total)))
    # 9 archived events in the base branch, 6 kept (3 finishes dropped) and 1 patch event in the other
    assert calls[-1] == (16, 16)
    screen = io.StringIO()
    with step_progress("what-if", Console(file=screen, force_terminal=True, width=100)) as bar:
        assert bar is not None
        whatif(db, _patch(tmp_path, "2", 0.5), progress=bar)
    assert "what-if" in screen.getvalue() and "100%" in screen.getvalue()
    with step_progress("what-if", Console(file=io.StringIO(), force_terminal=False)) as bar:
        assert bar is None


def _preempting_store(db: str, tmp_path: Path, release_on: str | None) -> None:
    """ClusterQueue cq (4 cpu, withinClusterQueue LowerPriority): low (4 cpu, priority 0, runs 10 s)
    at 1; high (4 cpu, priority 10, runs 3 s) at 3 preempts it; high finishes at 6, low is admitted
    again at 6 and runs its whole 10 s: finishes at 16, the end of the history."""
    cq = _cq("4")
    cq["spec"]["preemption"] = {"withinClusterQueue": "LowerPriority"}
    objects = [{"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "f"}}, cq,
               {"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": "cq", "namespace": "t"},
                "spec": {"clusterQueue": "cq"}}]
    if release_on is not None:
        objects.insert(0, {"apiVersion": "quotaledger.io/v1alpha1", "kind": "EngineConfig", "metadata": {"name": "c"},
                           "spec": {"preemption": {"releaseOn": release_on}}})
    jobs = [Job("low", T0 + 1 * S, 10 * S, ("cq", "t"), 1, (("cpu", 4000),), priority=0),
            Job("high", T0 + 3 * S, 3 * S, ("cq", "t"), 1, (("cpu", 4000),), priority=10)]
    path = tmp_path / "sim.ndjson"
    simulate(ImportResult("lab", jobs, [], T0, T0 + 16 * S), QuotaConfig(objects, root="r"), path, tick_ms=0)
    replay_to_db(str(path), db)


def _cq_patch(tmp_path: Path, preemption: str) -> str:
    cq = _cq("4")
    cq["spec"]["preemption"] = {"withinClusterQueue": preemption}
    path = tmp_path / f"patch-{preemption}.ndjson"
    path.write_bytes(orjson.dumps({"id": "p", "time": T0 + 500, "type": "Applied", "object": cq}) + b"\n")
    return str(path)


@pytest.mark.parametrize("release_on", [None, "Eviction"])
def test_preemption_is_re_simulated_too(db: str, tmp_path: Path, release_on: str | None) -> None:
    _preempting_store(db, tmp_path, release_on)
    # unchanged: the preempted run, the restart with the full run time (and under releaseOn:
    # Eviction the generated eviction evict/t/low/1) fall where they were
    same = whatif(db, _cq_patch(tmp_path, "LowerPriority")).to_json()
    assert same["decisionChanges"] == []
    assert same["closedLoop"]["droppedArchivedEvents"] == same["closedLoop"]["generatedEvents"] == \
        (3 if release_on else 2)
    # no preemption: low runs 1 → 11 undisturbed; high waits 3 → 11 and runs until 14
    report = whatif(db, _cq_patch(tmp_path, "Never")).to_json()
    assert report["preemptions"]["base"] == 1 and report["preemptions"]["whatif"] == 0
    assert _admissions(report, "whatif") == {"t/high": format_time(T0 + 11 * S)}
    (cq,) = report["waitTimes"]["clusterQueues"]
    # base waits: low 0, high 0, low again 3 s (preempted at 3, back at 6); what-if: low 0, high 8 s
    assert (cq["base"]["count"], cq["base"]["maxMs"]) == (3, 3 * S)
    assert (cq["whatif"]["count"], cq["whatif"]["maxMs"], cq["whatif"]["pending"]) == (2, 8 * S, 0)
    assert report["branches"]["whatif"]["end"] == format_time(T0 + 14 * S)


def test_an_observed_history_without_run_times_says_every_finish_is_held_fixed(db: str, tmp_path: Path) -> None:
    from tests.integration.sql.test_whatif import _one_team, _store, _team_a_quota
    from tests.scenario.builder import rfc3339

    _store(db, tmp_path, _one_team())
    patch = tmp_path / "p.ndjson"
    patch.write_bytes(orjson.dumps(dict(_team_a_quota("6", 50), id="more-cpu")) + b"\n")
    report = whatif(db, str(patch)).to_json()
    # no Workload carries a run time: nothing is re-simulated, w1's and w2's recorded finishes stay
    assert report["closedLoop"] == {"mode": "observed", "runTimes": 0, "droppedArchivedEvents": 0,
                                    "generatedEvents": 0, "runningAtEnd": [],
                                    "heldFixed": [{"workload": "ns/w1", "time": rfc3339(100)},
                                                  {"workload": "ns/w2", "time": rfc3339(200)}]}
    result = CliRunner().invoke(app, ["whatif", "--db", db, "--patch", str(patch)])
    assert result.exit_code == 0, result.output
    assert "observed history (no recorded run times): finishes are held fixed" in result.stdout
    assert "2 finishes held fixed (no run time): ns/w1 at" in result.stdout
