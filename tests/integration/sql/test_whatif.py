"""`quotaledger whatif`: fork a stored history, merge patch events, compare — on SQLite and PostgreSQL.

Every expected number below is worked out by hand from the scenario (times in seconds after the
scenario start, cpu in millicores).
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from quotaledger.cli import app
from replay.sql_sink import replay_to_db
from replay.reports.tables import percentile
from replay.whatif import WhatIfError, merge, whatif
from statemodel import sql_schema as s
from statemodel.events.decode import parse_event
from tests.scenario.builder import USAGE_BASED, Scenario, rfc3339

S = 1000  # ms per second


def _store(db: str, tmp_path: Path, scenario: Scenario, snapshot_every: int = 2) -> None:
    path = tmp_path / "history.ndjson"
    path.write_bytes(scenario.events_ndjson())
    replay_to_db(str(path), db, batch_size=3, snapshot_every=snapshot_every)


def _patch(tmp_path: Path, *events: dict) -> str:
    path = tmp_path / "patch.ndjson"
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    return str(path)


def _one_team() -> Scenario:
    """team-a: 4 cpu, no cohort.  w1 (4 cpu) runs 10..100; w2 (2 cpu) waits from 20 until w1 ends,
    then runs until 200."""
    s_ = Scenario("lab")
    s_.flavor("default", at=0)
    s_.cq("team-a", quotas={"cpu": "4"}, at=1)
    s_.lq("ns/a", "team-a", at=2)
    s_.submit("ns/w1", "a", cpu="4", at=10)
    s_.submit("ns/w2", "a", cpu="2", at=20)
    s_.finish("ns/w1", at=100)
    s_.finish("ns/w2", at=200)
    return s_


def _team_a_quota(cpu: str, at: float) -> dict:
    """A patch event: ClusterQueue team-a with ``cpu`` nominal quota (no cluster: the forked one)."""
    q = Scenario("unused")
    q.cq("team-a", quotas={"cpu": cpu}, at=at)
    event = q.events[-1]
    del event["cluster"]
    return event


def _by_name(rows: list[dict], name: str) -> dict:
    return next(r for r in rows if r.get("name", r.get("clusterQueue")) == name)


def test_more_nominal_quota_admits_a_waiting_workload_earlier(db: str, tmp_path: Path) -> None:
    _store(db, tmp_path, _one_team())
    patch = _patch(tmp_path, dict(_team_a_quota("6", 50), id="more-cpu"))
    report = whatif(db, patch, from_ms=None).to_json()  # the only cluster, from the start

    # base: w2 admitted at 100 (when w1 ends); what-if: team-a has 6 cpu from 50, so 4 + 2 fit at 50
    (change,) = report["decisionChanges"]
    assert change["workload"] == "ns/w2" and change["type"] == "Admitted" and change["change"] == "changed"
    assert change["base"]["time"] == rfc3339(100) and change["whatif"]["time"] == rfc3339(50)
    assert change["deltaMs"] == -50 * S
    waits = _by_name(report["waitTimes"]["clusterQueues"], "team-a")
    # w1 waited 0 s in both; w2 80 s (20 → 100) vs 30 s (20 → 50); nearest rank p50 of 2 values = the 1st
    assert waits["base"] == {"count": 2, "pending": 0, "p50Ms": 0, "p95Ms": 80 * S, "maxMs": 80 * S}
    assert waits["whatif"] == {"count": 2, "pending": 0, "p50Ms": 0, "p95Ms": 30 * S, "maxMs": 30 * S}
    assert waits["delta"] == {"p50Ms": 0, "p95Ms": -50 * S, "maxMs": -50 * S}
    assert _by_name(report["waitTimes"]["localQueues"], "ns/a")["whatif"]["maxMs"] == 30 * S
    # window 0 .. 200 s.  base: nominal 4000m over 1..200 = 796e6; usage 4000m × 90 s + 2000m × 100 s = 560e6
    # what-if: nominal 4000m × 49 s + 6000m × 150 s = 1096e6; usage 4000m × 90 s + 2000m × 150 s = 660e6
    (util,) = report["utilization"]
    assert (util["clusterQueue"], util["flavor"], util["resource"]) == ("team-a", "default", "cpu")
    assert util["base"] == {"meanUsage": 2800, "meanNominal": 3980, "utilization": round(560 / 796, 6)}
    assert util["whatif"] == {"meanUsage": 3300, "meanNominal": 5480, "utilization": round(660 / 1096, 6)}
    assert report["window"] == {"start": rfc3339(0), "end": rfc3339(200), "ms": 200 * S}
    assert report["patchEvents"] == 1 and report["archivedEvents"] == 7 and report["fork"]["position"] == 0


def test_fork_point_restores_from_a_snapshot_and_the_database_is_untouched(db: str, tmp_path: Path) -> None:
    _store(db, tmp_path, _one_team())
    before = _dump_tables(db)
    patch = _patch(tmp_path, dict(_team_a_quota("6", 50), id="more-cpu"))
    report = whatif(db, patch, cluster="lab", from_ms=_ms(30)).to_json()
    # events at 0, 1, 2, 10, 20 precede the fork; snapshots every 2 events: the one after 4 is used
    assert report["fork"] == {"from": rfc3339(30), "position": 5, "snapshotPosition": 4}
    assert report["archivedEvents"] == 2
    # only w2's admission lies after the fork: 100 → 50
    (change,) = report["decisionChanges"]
    assert change["workload"] == "ns/w2" and change["deltaMs"] == -50 * S
    waits = _by_name(report["waitTimes"]["clusterQueues"], "team-a")
    assert waits["base"]["count"] == 1 and waits["base"]["maxMs"] == 80 * S and waits["whatif"]["maxMs"] == 30 * S
    # window 30 .. 200 s.  base: usage 4000m × 70 s + 2000m × 100 s = 480e6 over nominal 4000m × 170 s = 680e6;
    # what-if: usage 4000m × 70 s + 2000m × 150 s = 580e6 over 4000m × 20 s + 6000m × 150 s = 980e6
    (util,) = report["utilization"]
    assert util["base"]["utilization"] == round(480 / 680, 6) and util["whatif"]["utilization"] == round(580 / 980, 6)
    assert _dump_tables(db) == before  # what-if reads only


def test_an_extra_workload_at_the_same_time_goes_first_and_delays_another(db: str, tmp_path: Path) -> None:
    sc = Scenario("lab")
    sc.flavor("default", at=0)
    sc.cq("team-a", quotas={"cpu": "4"}, at=1)
    sc.lq("ns/a", "team-a", at=2)
    sc.submit("ns/w1", "a", cpu="4", at=10)
    sc.finish("ns/w1", at=100)
    sc.submit("ns/w2", "a", cpu="4", at=120)
    sc.finish("ns/w2", at=300)
    _store(db, tmp_path, sc)
    extra = Scenario("lab")
    extra.submit("ns/x", "a", cpu="4", at=120)  # same time as w2's arrival: the patch event goes first
    extra.finish("ns/x", at=200)
    patch = _patch(tmp_path, *extra.events)  # ids e-00001 / e-00002 collide with archived ids: prefixed
    report = whatif(db, patch).to_json()
    changes = {(c["workload"], c["change"]): c for c in report["decisionChanges"]}
    assert set(changes) == {("ns/x", "added"), ("ns/w2", "changed")}
    assert changes[("ns/x", "added")]["whatif"]["time"] == rfc3339(120)
    w2 = changes[("ns/w2", "changed")]
    assert w2["base"]["time"] == rfc3339(120) and w2["whatif"]["time"] == rfc3339(200) and w2["deltaMs"] == 80 * S
    waits = _by_name(report["waitTimes"]["clusterQueues"], "team-a")
    # base: w1 0 s, w2 0 s; what-if: w1 0 s, x 0 s, w2 80 s (120 → 200)
    assert waits["base"] == {"count": 2, "pending": 0, "p50Ms": 0, "p95Ms": 0, "maxMs": 0}
    assert waits["whatif"] == {"count": 3, "pending": 0, "p50Ms": 0, "p95Ms": 80 * S, "maxMs": 80 * S}
    # window 0 .. 300 s: base usage 4000m × (90 + 180) s = 1080e6; what-if 4000m × (90 + 80 + 100) s = 1080e6
    (util,) = report["utilization"]
    assert util["base"]["meanUsage"] == 3600 and util["whatif"]["meanUsage"] == 3600


def test_usage_integrals_follow_preemption_requeue_and_readmission(db: str, tmp_path: Path) -> None:
    """The integrals change only at events that touch a ClusterQueue: here a preemption moves usage
    from team-b to team-a at 20 s and back at 100 s, while team-b's own object is re-applied."""
    sc = Scenario("lab")
    sc.flavor("default", at=0)
    sc.cohort("org", at=0)
    sc.cq("team-a", cohort="org", quotas={"cpu": "4"}, preemption={"reclaimWithinCohort": "Any"}, at=1)
    sc.cq("team-b", cohort="org", quotas={"cpu": "2"}, at=1)
    sc.lq("ns/a", "team-a", at=2)
    sc.lq("ns/b", "team-b", at=2)
    sc.submit("ns/b1", "b", cpu="4", at=10)  # borrows 2 cpu of team-a's unused quota
    sc.submit("ns/a1", "a", cpu="4", at=20)  # reclaims: b1 preempted, a1 admitted, b1 back in its queue
    sc.finish("ns/a1", at=100)  # b1 admitted again
    sc.finish("ns/b1", at=200)
    _store(db, tmp_path, sc)
    same_b = Scenario("unused")
    same_b.cq("team-b", cohort="org", quotas={"cpu": "2"}, at=150)
    event = same_b.events[-1]
    del event["cluster"]
    report = whatif(db, _patch(tmp_path, dict(event, id="same-b"))).to_json()
    assert report["preemptions"]["base"] == 1 and report["decisionChanges"] == []
    util = {u["clusterQueue"]: u for u in report["utilization"]}
    # window 0 .. 200 s.  team-a: 4000m × 80 s = 320e6; team-b: 4000m × (10 + 100) s = 440e6
    assert util["team-a"]["base"]["meanUsage"] == 320_000_000 // (200 * S)
    assert util["team-b"]["base"]["meanUsage"] == 440_000_000 // (200 * S)
    # nominal from 1 s: team-a 4000m × 199 s, team-b 2000m × 199 s (the re-applied object changes nothing)
    assert util["team-a"]["base"]["utilization"] == round(320 / 796, 6)
    assert util["team-b"]["base"]["utilization"] == round(440 / 398, 6)
    assert util["team-b"]["whatif"] == util["team-b"]["base"] and util["team-a"]["whatif"] == util["team-a"]["base"]


def test_an_engine_config_patch_turns_on_admission_fair_sharing(db: str, tmp_path: Path) -> None:
    sc = Scenario("lab")
    sc.flavor("default", at=0)
    sc.cq("team", quotas={"cpu": "4"}, admission_mode=USAGE_BASED, at=1)
    sc.lq("ns/a", "team", at=2)
    sc.lq("ns/b", "team", at=3)
    sc.submit("ns/a1", "a", cpu="4", at=10)
    sc.submit("ns/a2", "a", cpu="4", at=20)
    sc.submit("ns/b1", "b", cpu="4", at=30)
    sc.finish("ns/a1", at=100)
    sc.finish("ns/a2", at=200)
    sc.finish("ns/b1", at=300)
    _store(db, tmp_path, sc)
    cfg = Scenario("lab")
    cfg.engine_config(halfLife="1h", interval="1s", at=5)
    report = whatif(db, _patch(tmp_path, *cfg.events)).to_json()
    # base (no EngineConfig: plain FIFO): a2 (older) at 100, b1 at 200 when a2 ends.
    # what-if: at 100 ns/a has consumed usage (a1 ran 4 cpu since 10), ns/b none: b1 goes first; a2 is
    # still pending when its finish arrives at 200 and leaves without ever being admitted
    changes = {(c["workload"], c["change"]): c for c in report["decisionChanges"]}
    assert set(changes) == {("ns/a2", "removed"), ("ns/b1", "changed")}
    assert changes[("ns/a2", "removed")]["base"]["time"] == rfc3339(100)
    assert changes[("ns/b1", "changed")]["deltaMs"] == -100 * S
    lq = {r["name"]: r for r in report["waitTimes"]["localQueues"]}
    assert lq["ns/b"]["base"]["maxMs"] == 170 * S and lq["ns/b"]["whatif"]["maxMs"] == 70 * S
    assert lq["ns/a"]["base"]["count"] == 2 and lq["ns/a"]["whatif"]["count"] == 1


def test_merge_rule_keeps_archived_order_and_puts_patch_first_on_ties() -> None:
    def tick(event_id: str, seconds: float) -> dict:
        return {"id": event_id, "time": rfc3339(seconds), "cluster": "c", "type": "Tick"}

    archived = [tick("a1", 10), tick("a2", 5), tick("a3", 20)]  # a2 is late: applied at clock 10
    tail = [(parse_event(e), None, e["id"]) for e in archived]
    patch = [parse_event(tick(i, t)) for i, t in (("p7", 7), ("p10", 10), ("p25", 25))]
    order = [item[2] for item in merge(tail, patch, 0)]
    assert order == ["p7", "p10", "a1", "a2", "a3", "p25"]


def test_bad_patch_lists_every_bad_line(db: str, tmp_path: Path) -> None:
    _store(db, tmp_path, _one_team())
    good = dict(_team_a_quota("6", 50), id="ok")
    path = tmp_path / "bad.ndjson"
    path.write_bytes(b"\n".join([
        orjson.dumps(good), b"{not json", orjson.dumps(dict(good, cluster="elsewhere")),
        orjson.dumps(dict(good, id="early", time=rfc3339(1))), orjson.dumps({"id": "x", "type": "Nope", "time": 0}),
    ]) + b"\n")
    with pytest.raises(WhatIfError) as info:
        whatif(db, str(path), from_ms=_ms(30))
    text = str(info.value)
    assert "line 2: not JSON" in text and "line 3: cluster: 'elsewhere'" in text
    assert "line 4 (id early): time:" in text and "line 5 (id x): type:" in text
    assert "  line 1 " not in text and "  line 1:" not in text  # the good line is not listed
    out = CliRunner().invoke(app, ["whatif", "--db", db, "--patch", str(path)])
    assert out.exit_code == 2 and "line 2: not JSON" in out.output


def test_cli_table_and_json(db: str, tmp_path: Path) -> None:
    _store(db, tmp_path, _one_team())
    patch = _patch(tmp_path, dict(_team_a_quota("6", 50), id="more-cpu"))
    out = CliRunner().invoke(app, ["whatif", "--db", db, "--patch", patch, "--cluster", "lab", "--json"])
    assert out.exit_code == 0, out.output
    assert orjson.loads(out.output)["decisionChanges"][0]["deltaMs"] == -50 * S
    out = CliRunner().invoke(app, ["whatif", "--db", db, "--patch", patch, "--from", rfc3339(30)])
    assert out.exit_code == 0, out.output
    assert "ns/w2" in out.output and "-50s" in out.output and "70.6%" in out.output and "59.2%" in out.output
    out = CliRunner().invoke(app, ["whatif", "--db", db, "--patch", patch, "--cluster", "nope"])
    assert out.exit_code == 1 and "no events of cluster 'nope'" in out.output


def test_nearest_rank_percentile() -> None:
    values = list(range(1, 21))  # 1..20
    assert percentile(values, 50) == 10 and percentile(values, 95) == 19 and percentile([7], 95) == 7


def _ms(seconds: float) -> int:
    return parse_event({"id": "t", "type": "Tick", "time": rfc3339(seconds)}).time_ms


def _dump_tables(db: str) -> dict:
    eng = sa.create_engine(db, poolclass=sa.pool.NullPool)
    try:
        with eng.connect() as conn:
            return {t.name: sorted(map(repr, conn.execute(sa.select(t)).all()))
                    for t in (s.events, s.decisions, s.snapshots, s.workloads, s.quotas)}
    finally:
        eng.dispose()
