"""``explain`` of a Volcano PodGroup and the ``state`` tree view of Volcano queues, worked by hand:
capacity plugin with hierarchy, p (capability 4) over x and y; x's group reserves 3 at x and p, y's
group (min 2) stays Pending: 3 + 2 > 4 at p."""

from __future__ import annotations

from rich.console import Console

from quotaledger.views.explain import print_explanation
from quotaledger.views.state_tree import print_state_tree
from statemodel.explain import explain
from tests.scenario.volcano.vbuilder import VolcanoScenario


def _tree() -> VolcanoScenario:
    s = VolcanoScenario(capacity={"cpu": 10}, plugin="capacity", enabledHierarchy=True)
    s.queue("p", capability={"cpu": 4}, deserved={"cpu": 4})
    s.queue("x", parent="p", deserved={"cpu": 2})
    s.queue("y", parent="p", deserved={"cpu": 2})
    with s.batch():
        s.group("ns/gx", queue="x", min_member=3, min_resources={"cpu": 3})
        s.group("ns/gy", queue="y", min_member=2, min_resources={"cpu": 2})
        s.pod("ns/gy-0", "gy", cpu=1)
    s.run()
    return s


def test_explain_a_pending_group_level_by_level() -> None:
    s = _tree()
    out = explain(s.engine.clusters["default"], "ns/gy-0")  # a pod's key explains its group
    assert (out["kind"], out["key"], out["phase"], out["queue"], out["pod"]) == (
        "PodGroup", "ns/gy", "Pending", "y", "ns/gy-0")
    assert out["reason"] == "NotEnqueueable" and out["message"].startswith("queue resource quota insufficient")
    assert out["shortfalls"] == [{"queue": "p", "resource": "cpu", "needed": 2000, "available": 1000}]
    assert [level["queue"] for level in out["levels"]] == ["y", "p", "root"]
    y, p, root = out["levels"]
    # y inherits p's capability 4; realCapability min(4, 4 - 0 + 0) = 4; p's inqueue is x's 3
    assert (y["capability"], y["realCapability"], y["deserved"]) == ({"cpu": 4000}, {"cpu": 4000}, {"cpu": 2000})
    assert (p["inqueue"], p["realCapability"], root["realCapability"]) == ({"cpu": 3000}, {"cpu": 4000}, {})
    console = Console(record=True, width=180)
    print_explanation(console, out)
    text = console.export_text()
    assert "ns/gy (asked for pod ns/gy-0)  Pending  queue y  plugin capacity with hierarchy" in text
    assert "NotEnqueueable" in text and "∞" in text


def test_state_tree_draws_the_queues() -> None:
    s = _tree()
    console = Console(record=True, width=180)
    print_state_tree(console, s.engine.state())
    lines = console.export_text().splitlines()
    row = next(line for line in lines if "└─ y" in line)
    assert row.split()[-6:] == ["0", "0", "1", "Open", "1", "Pending"]  # allocated, inqueue, request
    assert any("├─ x" in line and "1 Inqueue" in line for line in lines)
