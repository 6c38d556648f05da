"""The simulator under the ``volcano`` model (``replay.sim.volcano_quota``, ``--model volcano``): a
Kueue configuration translated to a Volcano queue tree worked by hand, and a closed-loop story run
with PodGroups; the written file replays to the same decisions and hash."""

from __future__ import annotations

from pathlib import Path

from replay.sim.importers.jobs import ImportResult, Job
from replay.sim.manifests import load_manifests, write_manifests
from replay.sim.volcano_quota import to_volcano_queues
from tests.unit.test_koordinator_sim import _kueue
from tests.unit.test_simulator import T0, _assert_replayable, _run


def test_translation_deserved_is_nominal_and_capability_adds_the_borrowing_limit(tmp_path: Path) -> None:
    # a: deserved 4, capability 4 + 2; b: deserved 6, no limit -> the whole nominal 10; org: deserved
    # 4 + 6, capability 6 + 10 = 16 capped at 10; weights = nominal cores
    config = to_volcano_queues(_kueue(), capacity_node=True)
    assert config.model == "volcano"
    kinds = [(o["kind"], o["metadata"]["name"]) for o in config.objects]
    assert kinds == [("EngineConfig", "config"), ("Queue", "org"), ("Queue", "a"), ("Queue", "b"),
                     ("Node", "kueue-nominal-capacity")]
    assert config.objects[0]["spec"] == {"quotaModel": "volcano",
                                         "volcano": {"plugin": "capacity", "enabledHierarchy": True}}
    queues = {o["metadata"]["name"]: o["spec"] for o in config.objects if o["kind"] == "Queue"}
    assert queues == {
        "org": {"parent": "root", "weight": 10, "deserved": {"cpu": "10"}, "capability": {"cpu": "10"}},
        "a": {"parent": "org", "weight": 4, "deserved": {"cpu": "4"}, "capability": {"cpu": "6"}},
        "b": {"parent": "org", "weight": 6, "deserved": {"cpu": "6"}, "capability": {"cpu": "10"}}}
    write_manifests(config, tmp_path / "q")
    assert load_manifests(tmp_path / "q", "org").objects == config.objects


def test_closed_loop_with_pod_groups(tmp_path: Path) -> None:
    # 10 cpu, capacity plugin with hierarchy: realCapability org min(10, inf) = 10, a min(6, 10) = 6,
    # b 10.  x (a, 5) at 0: enqueued (a 5 <= 6, org 5 <= 10) and bound.  y (b, 6) at 1: b has room but
    # org holds 5 + 6 > 10: y stays Pending (enqueue accounting at the ancestor; nothing to reclaim for a
    # Pending group).  z (a, 1) at 2: a 5 + 1 <= 6, org 6 <= 10: bound into the 5 free.  x finishes at
    # 10: org holds 0 (z finished at 3) + 6 <= 10: y is enqueued and bound.
    jobs = [Job("x", T0, 10_000, ("a", "t"), 1, (("cpu", 5000),)),
            Job("y", T0 + 1000, 20_000, ("b", "u"), 1, (("cpu", 6000),)),
            Job("z", T0 + 2000, 1000, ("a", "t"), 1, (("cpu", 1000),))]
    trace = ImportResult("sim", jobs, [], T0, T0 + 60_000)
    path = tmp_path / "e.ndjson"
    result, decisions, events = _run(trace, to_volcano_queues(_kueue(), capacity_node=True), path, tick_ms=0)
    assert [(d["type"], d["workload"], d["clusterQueue"], d["time"]) for d in decisions] == [
        ("Admitted", "t/x", "a", "2023-11-14T22:13:20Z"), ("Admitted", "t/z", "a", "2023-11-14T22:13:22Z"),
        ("Admitted", "u/y", "b", "2023-11-14T22:13:30Z")]
    submit = next(e for e in events if e["id"] == "submit/t/x")
    assert submit["type"] == "Batch"
    assert [e["object"]["kind"] for e in submit["events"]] == ["PodGroup", "Pod"]
    assert submit["events"][0]["object"]["spec"] == {"queue": "a", "minMember": 1, "minResources": {"cpu": "5"}}
    _assert_replayable(path, result, decisions)


def test_the_demo_report_has_a_row_per_volcano_queue(tmp_path: Path) -> None:
    from fractions import Fraction

    from replay.reports.page import columns, table_rows
    from replay.reports.summary import priority_classes
    from replay.reports.tables import VOLCANO, build_report
    from replay.sql_sink import replay_to_db

    # the story of test_closed_loop_with_pod_groups: x (a, 5 cpu) 0-10 s, z (a, 1 cpu) 2-3 s, y (b, 6 cpu)
    # submitted at 1, Pending (org would hold 5 + 6 > 10) until x finishes at 10, runs to 30
    jobs = [Job("x", T0, 10_000, ("a", "t"), 1, (("cpu", 5000),)),
            Job("y", T0 + 1000, 20_000, ("b", "u"), 1, (("cpu", 6000),)),
            Job("z", T0 + 2000, 1000, ("a", "t"), 1, (("cpu", 1000),))]
    path = tmp_path / "e.ndjson"
    _run(ImportResult("sim", jobs, [], T0, T0 + 60_000), to_volcano_queues(_kueue(), capacity_node=True), path,
         tick_ms=0)
    url = f"sqlite:///{tmp_path / 'e.db'}"
    replay_to_db(str(path), url)
    report = build_report(url, "sim", start_ms=T0, end_ms=T0 + 60_000)
    assert report.model == VOLCANO
    # Volcano's own root and default queues are not rows; org is the parent of a and b
    assert [(n.kind, n.name, n.depth) for n in report.nodes] == [
        ("ParentQueue", "org", 0), ("LeafQueue", "a", 1), ("LeafQueue", "b", 1)]
    org, a, b = report.node("org"), report.node("a"), report.node("b")
    assert (a.admitted, b.admitted, org.admitted) == (2, 1, 3)
    assert (a.waits_ms, b.waits_ms, org.waits_ms) == ([0, 0], [9000], [0, 0, 9000])
    # deserved plays the nominal quota (a parent's covers its children's), capability the ceiling
    assert (a.nominal["cpu"], b.nominal["cpu"], org.nominal["cpu"]) == (4000, 6000, 10000)
    assert (a.maximum["cpu"], b.maximum["cpu"], org.maximum["cpu"]) == (6000, 10000, 10000)
    # allocated cpu x ms: a 5 x 10 s + 1 x 1 s; b 6 x 20 s; utilization = that / (deserved x 60 s)
    assert (a.usage_ms["cpu"], b.usage_ms["cpu"]) == (51_000_000, 120_000_000)
    assert a.utilization("cpu") == Fraction(51_000_000, 4000 * 60_000)
    assert (a.borrowing_ms, b.borrowing_ms) == (10_000, 0)  # a holds 5 or 6 cpu > its 4 deserved during 0-10 s
    # y waits 1-10 s with b's deserved unused and org's 10 cpu not all allocated: stuck on enqueue accounting
    assert (b.pending_ms, b.pending_room_ms, b.pending_idle_ms) == (9000, 9000, 9000)
    assert org.pending_idle_ms is None
    rows = {row[0].strip(): row for row in table_rows(report)}
    header = list(columns(report))
    assert rows["a"][header.index("deserved/capability")] == "4/6 cpu"
    assert rows["b"][header.index("wait p50/p95/max")] == "9s/9s/9s"
    assert rows["org"][header.index("allocated end")] == "0"
    (only,) = priority_classes(report)
    assert (only.priority_class, only.finished, only.jct_ms) == ("(none)", 3, [1000, 10_000, 29_000])
    from replay.reports.summary import longest_waits

    # y, explained as of its submission: Volcano's enqueue check finds org short (6 cpu asked, 5 left)
    (wait,) = longest_waits(url, report)
    assert (wait.workload, wait.cluster_queue, wait.wait_ms, wait.reason) == ("u/y", "b", 9000, "NotEnqueueable")
    assert [(b["kind"], b["name"], b["resource"], b["needed"], b["available"]) for b in wait.binding] == [
        ("Queue", "org", "cpu", 6000, 5000)]
    assert wait.command.endswith("--at 2023-11-14T22:13:21Z")
    # the command it gives runs (explain --db on a PodGroup, whose explanation has a phase, not a status)
    from typer.testing import CliRunner

    from quotaledger.cli import app

    result = CliRunner().invoke(app, wait.command.split()[1:] + ["--json"])
    assert result.exit_code == 0, result.output
    assert '"reason": "NotEnqueueable"' in result.stdout
