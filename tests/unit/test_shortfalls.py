"""What a pending workload is short of, as data: the state JSON's ``shortfalls``, ``explain`` (data and
the CLI table), and the snapshot round trip — numbers worked out by hand.

The story: Cohort ``org`` with ClusterQueues ``team`` (4 cpu nominal, borrowingLimit 0: it can never
take more than its 4) and ``other`` (4 cpu); ``small`` (2 cpu, no cohort).  ``team/w1`` (3 cpu) is
admitted; ``team/w2`` (2 cpu) then waits: ``team`` has 4 - 3 = 1 cpu free, so it needs 2 and 1 is
available (short by 1, ``WaitingForQuota``).  ``team/big`` (5 cpu) can never fit in ``team`` (at most
4: ``ExceedsMaxQuota``, needed 5, available 4).  ``small/two`` has podSets ``a`` (1 cpu) and ``b``
(2 pods × 1 cpu): ``a`` fits, ``b`` needs 1 + 2 = 3 of the 2 ``small`` could ever give (request 2).
"""

from __future__ import annotations

import zlib

import orjson
from typer.testing import CliRunner

from quotaledger.cli import app
from statemodel.explain import explain
from statemodel.snapshot import dump, load
from tests.scenario.builder import Scenario


def _story() -> Scenario:
    s = Scenario()
    s.flavor("default")
    s.cohort("org")
    s.cq("team", cohort="org", quotas={"cpu": ("4", "0", None)})
    s.cq("other", cohort="org", quotas={"cpu": "4"})
    s.cq("small", quotas={"cpu": "2"})
    s.lq("team/q", "team")
    s.lq("small/q", "small")
    s.submit("team/w1", "q", cpu="3", at=10)
    s.submit("team/w2", "q", cpu="2", at=20)
    s.submit("team/big", "q", cpu="5", at=30)
    s.submit("small/two", "q", pod_sets=[{"name": "a", "count": 1, "requests": {"cpu": "1"}},
                                         {"name": "b", "count": 2, "requests": {"cpu": "1"}}], at=40)
    s.run()
    return s


def _short(pod_set: str, reason: str, node: str, needed: int, available: int, request: int) -> dict:
    return {"podSet": pod_set, "reason": reason, "flavor": "default", "resource": "cpu", "node": node,
            "needed": needed, "available": available, "request": request}


W2 = [_short("main", "WaitingForQuota", "team", 2000, 1000, 2000)]
BIG = [_short("main", "ExceedsMaxQuota", "team", 5000, 4000, 5000)]
TWO = [_short("b", "ExceedsMaxQuota", "small", 3000, 2000, 2000)]


def test_state_json_lists_what_each_pending_workload_is_short_of():
    s = _story()
    workloads = s.state()["workloads"]
    assert workloads["team/w1"]["status"] == "Admitted" and workloads["team/w1"]["shortfalls"] == []
    assert workloads["team/w2"]["reason"] == "WaitingForQuota"
    assert workloads["team/w2"]["shortfalls"] == W2
    assert workloads["team/big"]["reason"] == "ExceedsMaxQuota"
    assert workloads["team/big"]["shortfalls"] == BIG
    assert workloads["small/two"]["shortfalls"] == TWO
    # the message says the same in words: 2 - 1 = 1 more needed; 1 (podSet a) + 2 (b) > 2
    assert workloads["team/w2"]["message"].endswith("insufficient unused quota for cpu in flavor default, 1 more needed")
    assert workloads["small/two"]["message"] == (
        "couldn't assign flavors to pod set b: insufficient quota for cpu in flavor default, previously considered "
        "podsets requests (1) + current podset request (2) > maximum capacity (2)")


def test_shortfalls_go_once_the_workload_fits():
    s = _story()
    s.finish("team/w1", at=60)  # team: 4 cpu free, w2 (2) fits
    s.run()
    w2 = s.workload("team/w2")
    assert (w2["status"], w2["shortfalls"]) == ("Admitted", [])


def test_shortfalls_without_a_resource_group_name_no_flavor():
    s = Scenario()
    s.flavor("default")
    s.cq("team", quotas={"cpu": "4"})
    s.lq("team/q", "team")
    s.submit("team/gpu", "q", cpu="1", gpu="1")
    s.run()
    assert s.workload("team/gpu")["shortfalls"] == [
        {"podSet": "main", "reason": "NoMatchingFlavor", "flavor": "", "resource": "nvidia.com/gpu", "node": "team",
         "needed": 1, "available": 0, "request": 1}]


def test_explain_carries_the_shortfalls():
    s = _story()
    cluster = s.engine.clusters["default"]
    assert explain(cluster, "team/w2")["shortfalls"] == W2
    assert explain(cluster, "small/two")["shortfalls"] == TWO
    assert explain(cluster, "team/w1")["shortfalls"] == []


def test_snapshot_keeps_the_shortfalls():
    s = _story()
    restored = load(dump(s.engine))
    assert orjson.dumps(restored.state()) == orjson.dumps(s.engine.state())
    assert restored.state()["clusters"]["default"]["workloads"]["team/w2"]["shortfalls"] == W2


def test_workloads_component_version_1_restores_without_shortfalls_until_re_evaluated():
    s = _story()
    doc = orjson.loads(zlib.decompress(dump(s.engine)))
    part = doc["clusters"][0]["components"]["workloads"]
    part["version"] = 1  # as version 1 wrote it: the message text only
    for row, info in zip(part["workloads"], s.engine.clusters["default"].workloads.values(), strict=True):
        del row["failures"]
        row["message"] = str(info.message)
    restored = load(zlib.compress(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)))
    before = s.state()["workloads"]
    after = restored.state()["clusters"]["default"]["workloads"]
    assert {key: w["shortfalls"] for key, w in after.items()} == {key: [] for key in before}
    assert {key: w["message"] for key, w in after.items()} == {key: w["message"] for key, w in before.items()}
    s.continue_on(restored, len(s.events))
    s.cq("team", cohort="org", quotas={"cpu": ("4", "0", None)}, at=50)  # re-applied: its workloads are tried again
    s.run()
    assert s.workload("team/w2")["shortfalls"] == W2
    assert s.workload("team/big")["shortfalls"] == BIG


def test_cli_explain_renders_the_shortfalls(tmp_path):
    s = _story()
    path = tmp_path / "events.ndjson"
    path.write_bytes(s.events_ndjson())
    runner = CliRunner()
    table = runner.invoke(app, ["explain", "small/two", str(path)], env={"COLUMNS": "200"})
    assert table.exit_code == 0, table.output
    rows = [line.split() for line in table.stdout.splitlines()]
    # podSet, flavor, resource, level, reason, needed, available, short by (cpu in cores)
    assert ["b", "default", "cpu", "small", "ExceedsMaxQuota", "3", "2", "1"] in rows
    w2 = runner.invoke(app, ["explain", "team/w2", str(path)], env={"COLUMNS": "200"})
    assert ["main", "default", "cpu", "team", "WaitingForQuota", "2", "1", "1"] in [
        line.split() for line in w2.stdout.splitlines()]
    admitted = runner.invoke(app, ["explain", "team/w1", str(path)], env={"COLUMNS": "200"})
    assert admitted.exit_code == 0 and "short by" not in admitted.stdout
    data = runner.invoke(app, ["explain", "team/w2", str(path), "--json"])
    assert orjson.loads(data.stdout)["shortfalls"] == W2
